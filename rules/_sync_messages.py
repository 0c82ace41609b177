"""Messages shared by the three placement rules (TL101, TL102, TL103): what
the op is, where the varying value comes from (the chain of reasons as related
locations), and the witness Z3 found."""

from __future__ import annotations

from tolk_lint.analysis.uniform import Placement, describe  # noqa: F401 (re-exported)
from tolk_lint.analysis.uniformity_info import Reason  # noqa: F401 (re-exported)
from tolk_lint.diagnostics import Diagnostic, Related
from tolk_lint.ir.nodes import Instr, Span
from tolk_lint.ir.opcodes import Opcode
from tolk_lint.registry import Rule, RuleContext


def op_text(ins: Instr) -> str:
    if ins.op is Opcode.CALL:
        return f"call to `{ins.attrs.get('callee')}`, which holds a barrier,"
    text = (ins.text or ins.op.value).strip().rstrip(";")
    if len(text) > 60:
        text = text[:57] + "..."
    return f"`{text}`"


def where(ins: Instr | None) -> str:
    if ins is None or ins.span is None:
        return "?"
    if ins.origin is not None:
        o = ins.origin.outermost()
        return f"line {o.line}"
    return f"line {ins.span.line}"


def report_span(ins: Instr, ctx: RuleContext) -> tuple[Span, list[Related]]:
    """Where to point: a Python op inlined from a device function is reported
    at the call in the kernel, with the function's line as a note."""
    related: list[Related] = []
    if ctx.kernel.language == "python" and ins.origin is not None and ins.origin.inlined_at is not None:
        outer = ins.origin.outermost()
        span = Span(ins.span.path if ins.span else outer.path, outer.line, max(1, outer.column))
        related.append(Related(f"{op_text(ins)} is inside the called device function here", ins.span, None))
        return span, related
    if ins.origin is not None and ins.origin.inlined_at is not None:
        inner = ins.origin
        related.append(Related(f"{op_text(ins)} is inside a function inlined here", None, inner.__class__(
            inner.path, inner.line, inner.column)))  # fmt: skip
    return ins.span, related


def chain(reasons: list[Reason]) -> list[Related]:
    """The reason chain as notes: `i` is computed from `tid.x`, ..."""
    out = []
    for r in reasons:
        ins = r.instr
        if ins is None:
            out.append(Related(r.message))
            continue
        if r.source is not None and ins.results:
            msg = f"{describe(ins.results[0])} is {r.message}" if r.message.startswith(
                ("computed", "loaded", "merged", "read", "carried")) else f"{describe(ins.results[0])}: {r.message}"
        else:
            msg = r.message
        out.append(Related(msg, ins.span, ins.origin))
    return out


def solver_note(p: Placement) -> str:
    if p.proof is None:
        return ""
    if p.proof.verdict == "varying" and p.proof.witness:
        return f"; for example {p.proof.witness.get('description')}"
    if p.proof.verdict == "unknown":
        return f"; {p.proof.detail}, so it stays varying"
    return ""


def diagnostic(rule: Rule, ctx: RuleContext, p: Placement, message: str) -> Diagnostic:
    span, related = report_span(p.op, ctx)
    related += chain(p.reasons)
    witness = p.proof.witness if (p.proof is not None and p.proof.verdict == "varying") else None
    data = {"level": p.level}
    if p.proof is not None:
        data["solver"] = p.proof.verdict
    d = rule.diagnostic(span, message + solver_note(p), kernel=ctx.kernel, related=related, witness=witness,
                        data=data, origin=p.op.origin)  # fmt: skip
    return d
