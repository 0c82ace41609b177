"""The fallback for what the lowering does not model: OPAQUE, and TL002.

An instruction whose family has no handler, or whose handler raised
`Unmodelled`, becomes one OPAQUE instruction that reads every source
register and writes fresh values to its destination registers (so data and
uniformity still flow through it), and is reported once per opcode per
kernel as TL002 ("not modelled; analyses treat it conservatively").

What it may import: `core`, `vocabulary`, `tolk_lint.diagnostics` and
`tolk_lint.ir`.
"""

from __future__ import annotations

from typing import Any

from tolk_lint.diagnostics import Diagnostic, Severity
from tolk_lint.ir.nodes import Value
from tolk_lint.ir.opcodes import Opcode

from .core import LoweringCore
from .vocabulary import SINK, OpInfo, Unmodelled

O = Opcode

OPAQUE_FAMILIES = frozenset(
    """tensormap setmaxnreg elect griddepcontrol multimem tcgen05 clusterlaunchcontrol
    st.async red.async brx""".split()
)
# families whose first operand (when a register) is read, not written
_OPAQUE_NO_DEST = frozenset("st sust sured red bar barrier brx bra call ret exit nanosleep pmevent".split())


class OpaqueLowering(LoweringCore):
    """OPAQUE instructions and their TL002 reports."""

    def h_opaque_family(self, oi: OpInfo, ops: list) -> None:
        self.opaque(oi, ops)

    def opaque(self, oi: OpInfo, ops: list, reason: str | None = None) -> None:
        """An instruction not modelled: read its source registers, write fresh
        values to its destination registers."""
        self.report(oi.text, None)
        dest_ops: list[tuple] = []
        srcs = ops
        if ops and ops[0][0] in ("r", "v", "d") and oi.fam not in _OPAQUE_NO_DEST:
            first = ops[0]
            if first[0] == "r" and first[1] != SINK:
                rr = self.resolve(first[1])
                if rr[0] == "reg":
                    dest_ops = [first]
                    srcs = ops[1:]
            elif first[0] == "r":
                srcs = ops[1:]
            elif first[0] == "v":
                dest_ops = [x for x in first[1] if x[0] == "r"]
                srcs = ops[1:]
            elif first[0] == "d":
                dest_ops = [("r", first[1]), ("r", first[2])]
                srcs = ops[1:]
        args: list[Value] = []
        if oi.fam == "wgmma" and ops and ops[0][0] == "v":
            srcs = list(ops)  # the accumulators are read and written
        for o in srcs:
            self._collect_reads(o, args)
        types = []
        for d in dest_ops:
            types.append(self.reg_type(d, oi.t or "b32") if d[1] != SINK else (oi.t or "b32"))
        attrs: dict[str, Any] = {"text": self.text}
        if reason:
            attrs["reason"] = reason
        names = [self.dname(d) for d in dest_ops]
        ins = self.emit(O.OPAQUE, args, types, attrs, names)
        for d, v in zip(dest_ops, ins.results):
            try:
                self.write(d, v)
            except Unmodelled:
                pass

    def _collect_reads(self, o: tuple, out: list[Value]) -> None:
        tag = o[0]
        try:
            if tag == "r":
                if o[1] == SINK:
                    return
                r = self.resolve(o[1])
                if r[0] in ("reg", "spec", "buf", "sym", "fn", "par"):
                    out.append(self.val(o, None))
            elif tag == "!":
                out.append(self.val(o, "pred"))
            elif tag in ("v", "g"):
                for x in o[1]:
                    self._collect_reads(x, out)
            elif tag == "m":
                if o[1][0] == "r":
                    self._collect_reads(o[1], out)
                for x in o[3]:
                    self._collect_reads(x, out)
            elif tag == "d":
                self._collect_reads(("r", o[1]), out)
                self._collect_reads(("r", o[2]), out)
        except Unmodelled:
            pass

    def report(self, opcode: str, reason: str | None = None) -> None:
        if opcode in self.reported:
            return
        self.reported.add(opcode)
        msg = f"`{opcode}` is not modelled; analyses treat it conservatively"
        if reason:
            msg += f" ({reason})"
        self.mod.diagnostics.append(
            Diagnostic(
                code="TL002",
                severity=Severity.WARNING,
                message=msg,
                span=self.span,  # type: ignore[arg-type]
                kernel=self.k.name,
                origin=self.origin,
                name="unsupported-construct",
            )
        )
