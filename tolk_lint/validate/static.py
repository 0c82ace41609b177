"""Stage (a) of `tolk-lint validate`: the static proof on the fixed text.

The fixed file is linted again with the rules that judge a rewrite
(`tolk_lint.fix.proof`: TL1xx, TL2xx and TL302, no noqa or configuration
hiding any) and passes when its kernel shows no error of the uniformity or
memory families, was analysed completely, and no longer gets TL302 for the
arrays the original staged synchronously. TL204's model is symbolic in the
trip k (slot k mod 2), so "no TL204" is a proof for every trip. The
original is linted the same way, for the arrays to look for and the TL002s
it already had.
"""

from __future__ import annotations

from tolk_lint.config import Settings
from tolk_lint.engine import relint_text
from tolk_lint.fix.proof import PROOF_SELECT, problems
from tolk_lint.validate.result import FAIL, PASS, StageResult


def run_static(original: str, fixed: str, path: str, kernel: str, settings: Settings, fixed_path: str = ""
               ) -> StageResult:  # fmt: skip
    before = relint_text(original, path, settings, PROOF_SELECT)
    after = relint_text(fixed, fixed_path or path, settings, PROOF_SELECT)
    staged = {d.data.get("buffer") for d in before if d.code == "TL302" and d.kernel == kernel}
    unsupported = sum(1 for d in before if d.code == "TL002" and d.kernel in (kernel, None))
    found = problems(after, kernel, {s for s in staged if s}, unsupported)
    mine = [d for d in after if d.kernel == kernel]
    figures = {
        "tl302_before": sum(1 for d in before if d.code == "TL302" and d.kernel == kernel),
        "tl302_after": sum(1 for d in mine if d.code == "TL302"),
        "errors_after": sum(1 for d in mine if d.severity.value == "error"),
        "cp_async_lines": _cp_async_lines(fixed, kernel),
    }
    if found:
        return StageResult("static", FAIL, found[0], figures, found)
    if not staged:
        return StageResult("static", PASS, f"`{kernel}` lints clean (the original had no TL302 to remove)", figures)
    return StageResult("static", PASS, f"no TL1xx/TL2xx error; TL204 proved for every trip; TL302 gone for "
                       f"{', '.join(sorted(s for s in staged if s))}", figures)  # fmt: skip


def _cp_async_lines(text: str, kernel: str) -> int:
    """cp.async instructions in the text (of a PTX file; 0 for Python)."""
    return sum(1 for line in text.splitlines() if line.strip().startswith(("cp.async.ca", "cp.async.cg")))
