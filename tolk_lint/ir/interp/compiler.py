"""A kernel compiled to closures, block by block.

Every instruction after a block's PHIs becomes the closure its opcode's
handler builds (`_HANDLERS`; the ``ops_*`` modules); the PHIs become moves
on each incoming edge; each block knows the natural loops around it (the
dynamic-instance keys of `RunResult.instances`). An opcode without a
handler (CALL, OPAQUE, the matrix-move ops) compiles to a
closure that raises `NotSupported` when a thread reaches it. The closures
are cached beside the kernel."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from tolk_lint.ir.cfg import cfg_of
from tolk_lint.ir.interp.closures import _unsupported
from tolk_lint.ir.interp.ops_arith import (
    _h_addr,
    _h_arith,
    _h_cmp,
    _h_const,
    _h_param,
    _h_select,
    _h_special,
    _h_undef,
)
from tolk_lint.ir.interp.ops_control import (
    _h_barrier,
    _h_branch,
    _h_collective,
    _h_exit,
    _h_jump,
    _h_phi,
)
from tolk_lint.ir.interp.ops_convert import _h_cvt, _h_extract, _h_pack, _h_pure
from tolk_lint.ir.interp.ops_memory import (
    _h_atomic,
    _h_commit,
    _h_cp_async,
    _h_load,
    _h_nop,
    _h_store,
    _h_wait,
)
from tolk_lint.ir.interp.ops_tensor import _h_tensor
from tolk_lint.ir.interp.results import InterpError
from tolk_lint.ir.interp.values import _coercer
from tolk_lint.ir.nodes import Instr, Kernel
from tolk_lint.ir.opcodes import Opcode

O = Opcode


_HANDLERS: dict[Opcode, Callable] = {
    O.CONST: _h_const,
    O.PARAM: _h_param,
    O.SPECIAL: _h_special,
    O.ADDR: _h_addr,
    O.UNDEF: _h_undef,
    O.CMP: _h_cmp,
    O.SELECT: _h_select,
    O.CVT: _h_cvt,
    O.PURE: _h_pure,
    O.PACK: _h_pack,
    O.EXTRACT: _h_extract,
    O.LOAD: _h_load,
    O.STORE: _h_store,
    O.ATOMIC: _h_atomic,
    O.CP_ASYNC: _h_cp_async,
    O.CP_ASYNC_COMMIT: _h_commit,
    O.CP_ASYNC_WAIT: _h_wait,
    O.FENCE: _h_nop,
    O.BARRIER: _h_barrier,
    O.WARP_SYNC: _h_collective,
    O.SHUFFLE: _h_collective,
    O.VOTE: _h_collective,
    O.MATCH: _h_collective,
    O.REDUX: _h_collective,
    O.ACTIVEMASK: _h_collective,
    O.WMMA_LOAD: _h_tensor,
    O.WMMA_STORE: _h_tensor,
    O.MMA: _h_tensor,
    O.PHI: _h_phi,
    O.BRANCH: _h_branch,
    O.JUMP: _h_jump,
    O.RET: _h_exit,
    O.EXIT: _h_exit,
}
for _op in (
    O.ADD, O.SUB, O.MUL, O.MAD, O.DIV, O.REM, O.NEG, O.ABS, O.MIN, O.MAX,
    O.AND, O.OR, O.XOR, O.NOT, O.SHL, O.SHR,
):  # fmt: skip
    _HANDLERS[_op] = _h_arith


def _compile_instr(ins: Instr, kernel: Kernel, cblocks: dict, numeric: bool) -> Callable:
    op = ins.op
    handler = _HANDLERS.get(op)
    if handler is None:
        return _unsupported(ins, f"{op.value} is not executed by the interpreter")
    return handler(ins, kernel, cblocks, numeric)


class _CBlock:
    __slots__ = ("block", "has_phis", "header_of", "inside", "instrs", "items", "loops", "moves", "size")

    def __init__(self, block):
        self.block = block
        self.items: list[Callable] = []
        self.instrs: list[Instr] = []
        self.moves: dict[Any, tuple] = {}
        self.has_phis = False
        self.size = 0
        self.loops: tuple = ()  # the natural loops holding the block, outermost first
        self.header_of = None  # the loop this block heads
        self.inside: frozenset = frozenset()  # its predecessors inside that loop (back edges)


def _compile(kernel: Kernel) -> dict:
    numeric = kernel.language == "python"
    cblocks = {b: _CBlock(b) for b in kernel.blocks}
    for b in kernel.blocks:
        cb = cblocks[b]
        phis = list(b.phis())
        cb.has_phis = bool(phis)
        for i, pred in enumerate(b.preds):
            res, srcs, convs = [], [], []
            for phi in phis:
                if i >= len(phi.args):
                    raise InterpError(f"PHI {phi.result.name} in {b.name} has no operand for {pred.name}")
                a = phi.args[i]
                res.append(phi.result)
                srcs.append(a)
                convs.append(_coercer(a.type, phi.result.type, numeric))
            cb.moves[cblocks[pred]] = (tuple(res), tuple(srcs), tuple(convs))
        for ins in b.instrs[len(phis) :]:
            cb.items.append(_compile_instr(ins, kernel, cblocks, numeric))
            cb.instrs.append(ins)
        cb.size = len(b.instrs)
        if not b.instrs or not b.instrs[-1].is_terminator:
            ins_name = b.name

            def fall_off(th, name=ins_name):
                raise InterpError(f"block {name} has no terminator")

            cb.items.append(fall_off)
            cb.instrs.append(None)
    try:
        loops = cfg_of(kernel).loops
    except Exception:  # noqa: BLE001 - instance keys are a convenience; run without them
        loops = []
    for lp in loops:
        h = cblocks.get(lp.header)
        if h is not None:
            h.header_of = lp
            h.inside = frozenset(cblocks[p] for p in lp.header.preds if p in lp.blocks and p in cblocks)
    interned: dict[tuple, tuple] = {(): ()}
    for b, cb in cblocks.items():
        holding = [lp for lp in loops if b in lp.blocks]
        holding.sort(key=lambda lp: -len(lp.blocks))
        key = tuple(holding)
        cb.loops = interned.setdefault(key, key)  # one object per loop nest: compared by identity
    return {"blocks": cblocks, "entry": cblocks[kernel.blocks[0]]}


_CODE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _compiled(kernel: Kernel) -> dict:
    """The kernel's closures, cached beside it (not in ``kernel._cache``, so
    a kernel stays picklable) and rebuilt when its blocks change."""
    sig = tuple((id(b), len(b.instrs)) for b in kernel.blocks)
    hit = _CODE.get(kernel)
    if hit is not None and hit[0] == sig:
        return hit[1]
    code = _compile(kernel)
    _CODE[kernel] = (sig, code)
    return code
