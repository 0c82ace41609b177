"""Messages shared by the three placement rules (TL101, TL102, TL103): what
the op is, where the varying value comes from (the chain of reasons as related
locations), and the witness Z3 found."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tolk_lint.diagnostics import Diagnostic, Related, where  # noqa: F401 (`where` re-exported)
from tolk_lint.ir.nodes import Instr, Origin, Span
from tolk_lint.ir.opcodes import Opcode
from tolk_lint.registry import Rule, RuleContext

if TYPE_CHECKING:  # the analyses are imported when a rule runs: listing the rules stays cheap
    from tolk_lint.analysis.placements import Placement
    from tolk_lint.analysis.uniformity_info import Reason


def describe(value) -> str:
    """How a message names ``value`` (`tolk_lint.analysis.uniform.describe`)."""
    from tolk_lint.analysis.uniform import describe as name_of

    return name_of(value)


def op_text(ins: Instr) -> str:
    if ins.op is Opcode.CALL:
        return f"call to `{ins.attrs.get('callee')}`, which holds a barrier,"
    text = (ins.text or ins.op.value).strip().rstrip(";")
    if len(text) > 60:
        text = text[:57] + "..."
    return f"`{text}`"


def report_span(ins: Instr, ctx: RuleContext, level: str = "workgroup"
                ) -> tuple[Span, Origin | None, list[Related], list[Origin]]:  # fmt: skip
    """Where to point, the origin to report, the notes that say where else
    the op is, and the op's own frames when it is reported at a call.

    A barrier (``level`` workgroup) in a called function is reported once,
    at the call in the kernel (acceptance convention 1): the Python call of
    an inlined device function, the ``call`` of an inlined ``.func``
    (``attrs["call_site"]``), and for CUDA C the outermost ``.loc`` frame;
    the origin returned is that frame alone, and the op's own frames are
    returned last (a noqa there silences it too). A warp collective or
    tensor-core op is reported where it is: its line in the device function
    (for CUDA C, the innermost frame in the user's own code, past the
    toolkit's headers); `Rule.diagnostic` adds the calls as notes."""
    related: list[Related] = []
    site = ins.attrs.get("call_site")
    origin = ins.origin
    if level == "workgroup":
        outer = _frame(origin.outermost()) if origin is not None else None
        inside = origin.chain()[:-1] if origin is not None else []
        if ctx.kernel.language == "python" and origin is not None and origin.inlined_at is not None:
            span = Span(ins.span.path if ins.span else outer.path, outer.line, max(1, outer.column))
            related.append(Related(f"{op_text(ins)} is inside the called device function here", ins.span, None))
            return span, outer, related, inside
        if site is not None:
            callee, call_span, _call_origin = site
            related.append(Related(f"{op_text(ins)} is inside `{callee}`, called here", ins.span, _frame(origin)))
            return call_span or ins.span, outer, related, inside
        if origin is not None and origin.inlined_at is not None:
            related.append(Related(f"{op_text(ins)} is inside a function inlined here", None, _frame(origin)))
            return ins.span, outer, related, inside
        return ins.span, origin, related, []
    if site is not None and origin is None:  # hand-written PTX: no .loc to say where it was called
        related.append(Related(f"inside `{site[0]}`, called here", site[1], None))
    return ins.span, origin, related, []


def _frame(o: Origin | None) -> Origin | None:
    """One frame of an origin chain, without the calls around it."""
    return None if o is None else Origin(o.path, o.line, o.column)


def chain(reasons: list[Reason]) -> list[Related]:
    """The reason chain as notes: `i` is computed from `tid.x`, ...

    It never loops: a step between two values of one name (`%r17` computed
    from `%r17`: PTX reuses a register across a loop's trips, and Numba
    names a load and its address by the same source text `a[i]`) says
    nothing and is left out, and so is a note the chain already holds."""
    out = []
    said: set[str] = set()
    for r in reasons:
        ins = r.instr
        if ins is None:
            msg = r.message
        elif r.source is not None and ins.results:
            subject = describe(ins.results[0])
            if subject == describe(r.source):
                continue
            msg = f"{subject} is {r.message}" if r.message.startswith(
                ("computed", "loaded", "merged", "read", "carried")) else f"{subject}: {r.message}"
        else:
            msg = r.message
        if msg in said:
            continue
        said.add(msg)
        out.append(Related(msg, ins.span, ins.origin) if ins is not None else Related(msg))
    return out


def solver_note(p: Placement) -> str:
    if p.proof is None:
        return ""
    if p.proof.verdict == "varying" and p.proof.witness:
        return f"; for example {p.proof.witness.get('description')}"
    if p.proof.verdict == "unknown":
        return f"; {p.proof.detail}, so it stays varying"
    return ""


def launch_note(p: Placement, kernel) -> str:
    """The flat block a warp-level verdict assumes when no launch gives the
    shape and the kernel reads only tid.x (`smt.Encoder.flat_assumed`):
    which lanes share a warp depends on it."""
    if p.level == "workgroup" or kernel.launch.block is not None or not kernel.tid_dims() <= {"x"}:
        return ""
    return f" (assuming {kernel.launch.assumed(kernel.tid_dims())}; pass --block to give the exact shape)"


def diagnostic(rule: Rule, ctx: RuleContext, p: Placement, message: str) -> Diagnostic:
    span, origin, related, inside = report_span(p.op, ctx, p.level)
    related += chain(p.reasons)
    witness = p.proof.witness if (p.proof is not None and p.proof.verdict == "varying") else None
    data: dict = {"level": p.level}
    if inside:  # reported at the call: the op's own lines, where a noqa also silences it
        data["inside"] = [{"path": o.path, "line": o.line} for o in inside]
    if p.proof is not None:
        data["solver"] = p.proof.verdict
    d = rule.diagnostic(span, message + solver_note(p) + launch_note(p, ctx.kernel), kernel=ctx.kernel, related=related, witness=witness,
                        data=data, origin=origin)  # fmt: skip
    return d
