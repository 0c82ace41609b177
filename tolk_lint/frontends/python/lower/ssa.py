"""The two fixes this front end needs of `ir.Builder`: a PHI placed in an
unsealed block is that block's definition (`SsaBuilder`), and the Values
held in ``attrs["index"]`` follow the PHIs `Builder.finish` drops
(`fix_index_attrs`).

Imports: `tolk_lint.ir` only.
"""

from __future__ import annotations

from tolk_lint.ir.builder import Builder
from tolk_lint.ir.nodes import Block, Instr, Kernel, Value
from tolk_lint.ir.opcodes import Opcode as O


class SsaBuilder(Builder):
    """`ir.Builder` with one fix: a PHI placed in an unsealed block is
    recorded as that block's definition (Braun et al.'s ``writeVariable``),
    so a second path reaching the same unsealed loop header reuses it instead
    of placing a duplicate PHI for the same variable."""

    def _phi(self, var: str, block: Block) -> Instr:
        ins = super()._phi(var, block)
        self._defs[block][var] = ins.result
        return ins


def fix_index_attrs(k: Kernel) -> None:
    """`Builder.finish` drops trivial PHIs and rewrites instruction operands,
    but not the Values held in ``attrs["index"]``: map those to what the
    dropped PHIs stood for (the same fixpoint as the builder's)."""
    live = {ins for ins in k.instrs()}

    def dropped(v: Value) -> bool:
        d = v.defn
        return d is not None and d.op is O.PHI and d not in live

    users = [ins for ins in live if isinstance(ins.attrs.get("index"), tuple)]
    todo = [x for ins in users for x in ins.attrs["index"] if isinstance(x, Value) and dropped(x)]
    if not todo:
        return
    phis: set[Value] = set()
    while todo:
        v = todo.pop()
        if v in phis:
            continue
        phis.add(v)
        todo.extend(a for a in v.defn.args if dropped(a))
    replace: dict[Value, Value] = {}

    def find(v: Value) -> Value:
        while v in replace:
            v = replace[v]
        return v

    changed = True
    while changed:
        changed = False
        for v in phis:
            if v in replace:
                continue
            ops = {find(a) for a in v.defn.args} - {v}
            if len(ops) == 1:
                replace[v] = ops.pop()
                changed = True
    for ins in users:
        ins.attrs["index"] = tuple(find(x) if isinstance(x, Value) else x for x in ins.attrs["index"])
