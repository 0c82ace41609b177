"""The operands of a kernel's tensor cores and sums of products (TL301):
`operands` gives each one an `OperandVerdict` (its tile, depth, and why not
where it cannot be staged); `admits` says whether all of them are staged;
`group_by_line` folds the unrolled copies of one source line."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tolk_lint import budget
from tolk_lint.analysis.stage.box import Box, Leaf, box_of
from tolk_lint.analysis.stage.index import IndexEval, launch_block
from tolk_lint.analysis.stage.polynomials import Unstageable, p_add, p_atom, p_subst, p_tf
from tolk_lint.analysis.stage.source import source_line
from tolk_lint.analysis.stage.stages import SIDE_BY_SIDE, budget_bytes, depth, depth_reason, limited_by_budget
from tolk_lint.analysis.stage.tiles import K_UNROLL, CoreShape, core_threads, tile
from tolk_lint.analysis.stage.trace import (
    dtype_bytes,
    factor_leaf,
    factor_name,
    leaf_of,
    mma_desc,
    mma_dtype,
    mma_operands,
    pointer_param,
    space_of,
    sum_loop,
    sums_of_products,
    through_pointer_argument,
    trace_leaves,
)
from tolk_lint.ir.nodes import Instr, Kernel
from tolk_lint.ir.opcodes import Opcode
from tolk_lint.target import Target, parse_target

if TYPE_CHECKING:
    from tolk_lint.config import Settings
    from tolk_lint.ir.cfg import Loop

O = Opcode


@dataclass
class OperandVerdict:
    """One operand of a tensor core or a sum of products, and its staging."""

    kernel: str
    op: Instr  # the mma / wmma.mma, or the sum's add
    op_desc: str
    operand: str  # "a", "b" (tensor cores) or the factor's text
    loads: list[Instr]
    loop: Loop | None
    dtype: str = ""
    elem_bytes: int = 0
    box: Box | None = None
    tile_bytes: int = 0
    depth: int = 0
    depth_why: str = ""
    depths: dict[str, int] = field(default_factory=dict)
    used: int = 0
    budget: int = 0
    shared_bytes: int = 0  # what the staged tiles of the core take at ``depth``, with ``used``
    stageable: bool = False
    reason: str | None = None
    gated: bool = False
    core: CoreShape | None = None
    proposed: tuple[list[tuple[int, int, str]], bool] | None = None
    k_unrolled_shape: tuple[int, ...] | None = None  # Python: the tile with K unrolled to 32
    optin_depth: int = 0
    budget_limited: bool = False  # the budget, not the target, holds the depth below 2
    tiles: list[int] = field(default_factory=list)  # the staged tiles of the core
    buffer: str | None = None  # a PTX factor's pointer parameter (`pointer_param`)

    def data(self, copies: int = 1) -> dict[str, Any]:
        """The facts a TL301/TL303 diagnostic carries."""
        box = self.box
        return {
            "depth": self.depth,
            "tile_bytes": self.tile_bytes,
            "tile_shape": list(box.shape) if box else [],
            "dtype": self.dtype,
            "operand": self.operand,
            "rereads": box.rereads if box else 0,
            "box": [d.to_json() for d in box.dims] if box else [],
            "depths": dict(self.depths),
            "stage_bytes": sum(self.tiles),
            "shared_bytes": self.shared_bytes,
            "budget": self.budget,
            "optin_depth": self.optin_depth,
            "copies": copies,
            **({"buffer": self.buffer} if self.buffer else {}),
        }

    @property
    def load(self) -> Instr | None:
        return self.loads[0] if self.loads else None

    @property
    def line(self) -> int | None:
        return source_line(self.load or self.op)

    @property
    def op_line(self) -> int | None:
        return source_line(self.op)

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "op": self.op_desc,
            "op_line": self.op_line,
            "operand": self.operand,
            "line": self.line,
            "box": [d.to_json() for d in self.box.dims] if self.box else [],
            "tile_shape": list(self.box.shape) if self.box else [],
            "dtype": self.dtype,
            "tile_bytes": self.tile_bytes,
            "rereads": self.box.rereads if self.box else 0,
            "injective": self.box.injective if self.box else None,
            "dense": self.box.dense if self.box else None,
            "proof": self.box.proof if self.box else None,
            "depth": self.depth,
            "depths": dict(self.depths),
            "shared_bytes": self.shared_bytes,
            "budget": self.budget,
            "stageable": self.stageable,
            "reason": self.reason,
            "gated": self.gated,
            "proposed_splits": [list(s) for s in self.proposed[0]] if self.proposed else None,
            "k_unrolled_shape": list(self.k_unrolled_shape) if self.k_unrolled_shape else None,
        }


def _holds_shared(kernel: Kernel) -> bool:
    return any(b.space == "shared" for b in kernel.buffers.values())


def _reduces_across_threads(kernel: Kernel) -> Instr | None:
    for ins in kernel.instrs():
        if ins.op in (O.SHUFFLE, O.REDUX):
            return ins
        if ins.op is O.ATOMIC and ins.attrs.get("space") == "shared":
            return ins
        if ins.op is O.BARRIER and ins.attrs.get("kind") == "red":
            return ins
    return None


def operands(kernel: Kernel, target: Target, settings: Settings | None = None) -> list[OperandVerdict]:
    """Every operand of each tensor core (and, in Python kernels, of each sum
    of products) of ``kernel``, each with its tile, depth and verdict."""
    from tolk_lint.config import DEFAULT_SETTINGS

    settings = settings or DEFAULT_SETTINGS
    block, _ = launch_block(kernel)
    ev = IndexEval(kernel, block)
    found: list[tuple[Instr, str, str, Loop | None, Callable[[list[Instr]], list[tuple[Instr, int | None]]]]] = []
    for ins, which, regs in mma_operands(kernel):
        lp = sum_loop(kernel, ins)

        def trace(gates, regs=regs, lp=lp):
            leaves: list[tuple[Instr, int | None]] = []
            for r in regs:
                for lf in trace_leaves(r, lp, gates):
                    if lf not in leaves:
                        leaves.append(lf)
            return leaves

        found.append((ins, mma_desc(ins), which, lp, trace))
    if not kernel.host:
        for ins, lp, factors in sums_of_products(kernel):
            for f in factors:

                def trace(gates, f=f):
                    return [(factor_leaf(f, gates), None)]

                found.append((ins, "sum of products", "", lp, trace))

    shared = sum(b.bytes or 0 for b in kernel.buffers.values() if b.space == "shared")
    reducer = _reduces_across_threads(kernel)
    verdicts: list[OperandVerdict] = []
    for ins, desc, which, lp, trace in found:
        budget.check("the staging analysis (the operands of `%s`)", ins.text or ins.op.value)
        v = OperandVerdict(kernel.name, ins, desc, which, [], lp, used=shared)
        v.core = CoreShape.parse(str(ins.attrs.get("shape") or "")) if ins.op is O.MMA else None
        try:
            gates: list[Instr] = []
            pairs = trace(gates)
            v.loads = [i for i, _ in pairs]
            if not v.operand:
                v.operand = factor_name(v.loads[0]) if v.loads else "?"
                if kernel.language != "python" and v.loads:  # a PTX load: named by the pointer it reads
                    v.buffer = pointer_param(v.loads[0], kernel)
                    v.operand = f"{v.buffer}[...]" if v.buffer else v.operand
            v.gated = bool(gates)
            _operand_box(v, pairs, ev, settings)
        except Unstageable as e:
            v.reason = str(e)
        if v.reason is None:
            if target.is_host or not target.has_shared:
                v.reason = f"{target.name} has no shared memory"
            elif _holds_shared(kernel):
                v.reason = "the kernel already holds shared memory (its tiles are left alone)"
            elif reducer is not None:
                v.reason = f"the kernel reduces across threads (`{reducer.text or reducer.op.value}`)"
        verdicts.append(v)
    _assign_depths(verdicts, target, settings)
    return verdicts


def _operand_box(v: OperandVerdict, pairs, ev: IndexEval, settings: Settings) -> None:
    if v.loop is None:
        raise Unstageable("the core is not in a loop: there is no trip to stage a tile for")
    for ld, _ in pairs:
        space = space_of(ld)
        if space == "generic" and ld.op is O.LOAD and through_pointer_argument(ld):
            space = "global"
        if ld.op is O.LDMATRIX or space == "shared":
            raise Unstageable("the operand is read from shared memory already")
        if space != "global":
            raise Unstageable(f"the operand is read from {space} memory, not global")
        if ld.block not in v.loop.blocks:
            raise Unstageable("the operand is loaded before the loop, not at every trip")
    leaves = [leaf_of(ev, ld, lane) for ld, lane in pairs]
    warp_level = all(lf.instr.op is O.WMMA_LOAD for lf in leaves)
    v.elem_bytes = leaves[0].elem_bytes
    v.dtype = (
        mma_dtype(v.op, v.operand, leaves)
        if v.op.op is O.MMA
        else str(leaves[0].instr.attrs.get("dtype") or leaves[0].instr.results[0].type)
    )
    # strides in elements of the operand's type (a b32 load of f16x2 reads two)
    dt = min(dtype_bytes(v.dtype), v.elem_bytes) if v.dtype else v.elem_bytes
    unit = 1 if any(not ld.args for ld, _ in pairs) else dt
    box = box_of(leaves, ev, warp_level, unit, settings.solver_rlimit)
    v.box = box
    v.tile_bytes = box.elements * v.elem_bytes
    ratio = v.elem_bytes // dt if dt else 1
    if ratio > 1 and box.axes and box.axes[-1] == () and len(box.shape) == len(box.axes):
        box.shape = box.shape[:-1] + (box.shape[-1] * ratio,)
    if not box.injective:
        raise Unstageable(f"not injective: {box.witness or 'two reads fall on one element'}")
    if not box.dense:
        raise Unstageable(
            "not a box: the threads' and lanes' offsets do not add up independently "
            "(a thread term mixes with another)"
        )
    if v.op.op is not O.MMA and v.loop is not None:
        v.k_unrolled_shape = _unrolled_shape(leaves, ev, v.loop, warp_level, unit, settings)


def _unrolled_shape(leaves, ev: IndexEval, lp: Loop, warp_level, unit, settings) -> tuple[int, ...] | None:
    """The tile when the sum's loop is unrolled to 32 trips a trip."""
    key = f"trip:{lp.header.name}"
    if key not in ev.atoms:
        return None
    lane = p_add(p_atom(key), p_tf(("v", "unroll")))
    out = []
    for lf in leaves:
        out.append(Leaf(lf.instr, p_subst(lf.address, key, lane), {**lf.lanes, "unroll": K_UNROLL}, lf.lane_offset,
                        lf.elem_bytes, lf.result))  # fmt: skip
    try:
        return box_of(out, ev, warp_level, unit, settings.solver_rlimit).shape
    except Unstageable:
        return None


def _assign_depths(verdicts: list[OperandVerdict], target: Target, settings: Settings) -> None:
    optin = settings.shared_budget == "optin"
    by_op: dict[Instr, list[OperandVerdict]] = {}
    for v in verdicts:
        by_op.setdefault(v.op, []).append(v)
    for vs in by_op.values():
        ok = [v for v in vs if v.reason is None]
        tiles = [v.tile_bytes for v in ok]
        for v in vs:
            v.budget = budget_bytes(target, optin)
            for name in SIDE_BY_SIDE:
                t = parse_target(name)
                v.depths[name] = depth(t, tiles, v.used, settings.stage, optin) if ok and v.reason is None else 0
            if v.reason is not None:
                continue
            v.tiles = tiles
            v.depth, v.depth_why = depth_reason(target, tiles, v.used, settings.stage, optin)
            v.optin_depth = depth(target, tiles, v.used, settings.stage, True)
            v.shared_bytes = v.depth * sum(tiles) + v.used
            v.budget_limited = limited_by_budget(target, tiles, v.used, settings.stage, optin)
            if v.depth == 0:
                v.reason = v.depth_why
            else:
                v.stageable = True
                if v.core is not None:
                    v.proposed = tile(
                        target, v.core, core_threads=core_threads(target), workgroups=None, sizes=(0, 0, 0),
                        stages=v.depth,
                    )  # fmt: skip


def admits(kernel: Kernel, target: Target, settings: Settings | None = None) -> bool:
    """Whether `operands` stages every operand of each tensor core (and sum
    of products) of ``kernel`` on ``target``, tiles permitting."""
    vs = operands(kernel, target, settings)
    return bool(vs) and all(v.stageable for v in vs)


def group_by_line(verdicts: list[OperandVerdict]) -> list[tuple[OperandVerdict, int]]:
    """One verdict per (operand, load line): unrolled copies of a source line
    collapse, stageable ones first. Returns (verdict, copies)."""
    groups: dict[tuple, list[OperandVerdict]] = {}
    for v in verdicts:
        groups.setdefault((v.operand, v.line, v.op_line), []).append(v)
    out = []
    for vs in groups.values():
        best = min(vs, key=lambda v: (not v.stageable, -v.depth))
        out.append((best, len(vs)))
    return sorted(out, key=lambda x: (x[0].line or 0, x[0].operand))
