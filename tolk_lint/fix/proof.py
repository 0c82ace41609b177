"""The static proof of a pipeline rewrite: what the fixed text must lint to.

A rewrite is offered (TL302's fix) and validated (`tolk-lint validate`,
stage a) only when the fixed kernel, linted again with the rules that judge
it, shows

- no error of the uniformity and memory families (TL1xx, TL2xx): the
  barriers and waits are reached by every thread, no shared access races,
  and TL204, whose group-queue model is symbolic in the trip k (slot k mod
  2), proves every read waits for its copy and every copy waits for the
  readers of its slot -- on every trip, not on a few unrolled ones;
- no TL001/TL004/TL005 (the kernel was analysed completely) and no new
  TL002 (nothing the rewrite added is outside the IR);
- no TL302 left for the arrays it staged.

`problems(diagnostics, kernel, staged, unsupported_before)` lists what
fails, in words; an empty list is the proof.
"""

from __future__ import annotations

from tolk_lint.diagnostics import Diagnostic, Severity

# the rules a rewrite is judged by
PROOF_SELECT = ("TL1", "TL2", "TL302")


def problems(diags: list[Diagnostic], kernel: str, staged: set[str], unsupported_before: int = 0) -> list[str]:
    out: list[str] = []
    mine = [d for d in diags if d.kernel in (kernel, None)]
    unsupported = 0
    for d in mine:
        code = d.code
        if code in ("TL001", "TL004", "TL005"):
            out.append(f"{code} at line {d.span.line}: {d.message}")
        elif code == "TL002":
            unsupported += 1
        elif code.startswith(("TL1", "TL2")) and d.severity is Severity.ERROR:
            out.append(f"{code} at line {d.span.line}: {d.message}")
        elif code == "TL302" and (not staged or d.data.get("buffer") in staged):
            out.append(f"TL302 still reports `{d.data.get('buffer')}` at line {d.span.line}")
    if unsupported > unsupported_before:
        out.append(f"{unsupported - unsupported_before} construct(s) the analyses do not understand (TL002)")
    return out
