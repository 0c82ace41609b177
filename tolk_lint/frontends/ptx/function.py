"""One function's lowering, assembled: `FunctionLowering` and its dispatch.

`FunctionLowering` is the `LoweringCore` with every instruction family
mixed in (declarations, parameters, arithmetic, memory, control, warp
collectives, tensor cores, and the OPAQUE fallback). `lower` runs the
three steps:

1. **Flatten** (`flatten`): the body and its ``{ }`` scopes -> statements
   tagged with their scope and ``.loc`` origin; declarations recorded.
2. **Split** (`cfg`): basic blocks and edges, all of them before any
   instruction is lowered.
3. **Fill** (here): blocks in layout order with the SSA `Builder`, each
   sealed once its predecessors are filled; each statement goes to the
   handler of its opcode's family (`_HANDLERS`), OPAQUE when there is none
   or when the handler cannot interpret the operands.

What it may import: every family module, `cfg`, `scope`, `vocabulary`,
`tolk_lint.budget` and `tolk_lint.ir`. Only `lower` imports it.
"""

from __future__ import annotations

from typing import Any

from tolk_lint import budget
from tolk_lint.ir.nodes import Kernel, Origin, Param

from .arith import ARITH, PURE_FAMILIES, PURE_NO_RESULT, ArithmeticLowering
from .cfg import Segment, split_into_segments
from .control import ControlLowering
from .flatten import DeclarationLowering
from .memory import MemoryLowering
from .opaque import OPAQUE_FAMILIES
from .scope import Scope
from .tensor_cores import TensorCoreLowering
from .vocabulary import OPINFO_CACHE, Unmodelled, opinfo
from .warp import WarpLowering


class FunctionLowering(
    DeclarationLowering, ArithmeticLowering, MemoryLowering, ControlLowering, WarpLowering, TensorCoreLowering
):
    """Lowers one ``.entry`` or ``.func`` with a body to a `Kernel`."""

    def lower(self) -> Kernel:
        fd = self.fd
        self.all_params: dict[str, Param] = {}
        for pd in fd.params:
            self.param_decls[pd.name] = pd
            kind = "pointer" if ".ptr" in pd.attrs else "scalar"
            p = Param(pd.name, pd.dtype or "b8", kind=kind, space=pd.space)
            self.all_params[pd.name] = p
            self.k.params.append(p)
            if ".reg" in pd.attrs:
                self.top.regs[pd.name] = (pd.name, pd.dtype or "b32")
            else:
                self.params[pd.name] = p
        for r in fd.rets:
            self.k.returns.append(Param(r.name, r.dtype or "b8"))
            if ".reg" in r.attrs:
                self.top.regs[r.name] = (r.name, r.dtype or "b32")
            else:
                self.ret_decls[r.name] = r
        items = self.flatten(fd.body or [])
        self._count_defs(items)
        segs = split_into_segments(items, self.path, self.k.span)
        self.fill(segs)
        k = self.b.finish()
        self.refine_params()
        return k

    def fill(self, segs: list[Segment]) -> None:
        b = self.b
        for s in segs:
            s.block = b.block(s.name, s.span)
        for s in segs:
            uniq: list[Segment] = []
            for t in s.succ_segs:
                if t is not None and all(t is not u for u in uniq):
                    uniq.append(t)
                    b.add_edge(s.block, t.block)
                    t.npreds += 1
            s.succ_segs = uniq
        entry = segs[0]
        b.position(entry.block)
        self.blk = entry.block
        self.emit_params()
        for s in segs:
            if s.npreds == 0:
                b.seal(s.block)
        for s in segs:
            budget.check("lowering `%s` (line %d)", self.k.name, s.span.line if s.span else 0)
            blk = s.block
            b.position(blk)
            self.blk = blk
            self.cur_seg = s
            for st, scope, origin, unguarded in s.stmts:
                self.lower_stmt(st, scope, origin, s)
            self.lower_term(s)
            s.filled = True
            # seal each successor once its last predecessor is filled (before its
            # own turn for forward edges; after, for loop headers)
            for t in s.succ_segs:
                t.npreds -= 1
                if t.npreds == 0:
                    b.seal(t.block)

    def lower_stmt(self, st: tuple, scope: Scope, origin: Origin | None, seg: Segment) -> None:
        self.set_stmt(st, scope, origin)
        op = st[2]
        oi = OPINFO_CACHE.get(op) or opinfo(op)
        ops = st[3]
        h = _HANDLERS.get(oi.fam)
        self._seg = seg
        self._stmt = st
        if h is None:
            h = FunctionLowering.h_opaque_family
        try:
            h(self, oi, ops)
        except Unmodelled as e:
            self.opaque(oi, ops, str(e))


F = FunctionLowering
_HANDLERS: dict[str, Any] = {name: F.h_arith for name in ARITH}
_HANDLERS.update({name: F.h_pure for name in PURE_FAMILIES if "." not in name})
_HANDLERS.update({name: F.h_pure for name in PURE_NO_RESULT})
_HANDLERS.update(
    {
        "setp": F.h_setp,
        "set": F.h_set,
        "selp": F.h_selp,
        "slct": F.h_slct,
        "cvt": F.h_cvt,
        "cvta": F.h_cvta,
        "mov": F.h_mov,
        "ld": F.h_ld,
        "ldu": F.h_ld,
        "st": F.h_st,
        "atom": F.h_atom,
        "red": F.h_atom,
        "cp": F.h_cp,
        "membar": F.h_fence,
        "fence": F.h_fence,
        "bar": F.h_bar,
        "barrier": F.h_bar,
        "shfl": F.h_shfl,
        "vote": F.h_vote,
        "match": F.h_match,
        "redux": F.h_redux,
        "activemask": F.h_activemask,
        "mma": F.h_mma,
        "wmma": F.h_wmma,
        "ldmatrix": F.h_ldmatrix,
        "stmatrix": F.h_stmatrix,
        "movmatrix": F.h_movmatrix,
        "tex": F.h_tex,
        "tld4": F.h_tex,
        "suld": F.h_tex,
        "sust": F.h_sust,
        "sured": F.h_sust,
        "call": F.h_call,
        "mbarrier": F.h_mbarrier,
        "wgmma": F.h_wgmma,
    }
)
for _fam in OPAQUE_FAMILIES:
    if "." not in _fam:
        _HANDLERS[_fam] = F.h_opaque_family
