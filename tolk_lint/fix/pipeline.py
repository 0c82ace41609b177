"""TL302's fix: pipelining a loop's tile copies with cp.async, in the
kernel's own language.

`pipeline_fix(ctx, copies)` takes the `TileCopy`s of one loop (from
`tolk_lint.analysis.stage.copies`) and returns a `Fix` (unsafe: it doubles
the staged shared arrays, which changes occupancy) or a `NotFixable` whose
reason TL302 shows in a note. PTX kernels go to `tolk_lint.fix.ptx_pipeline`,
Python kernels to `tolk_lint.fix.numba_pipeline` (when it is installed).
Either way the fix is offered only when the rewritten text passes the
static proof (`tolk_lint.fix.proof`), which ``ctx.relint`` runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tolk_lint.fix.outcome import FIX_TITLE, NotFixable

if TYPE_CHECKING:
    from tolk_lint.diagnostics import Fix
    from tolk_lint.registry import RuleContext

__all__ = ["FIX_TITLE", "NotFixable", "pipeline_fix"]


def pipeline_fix(ctx: RuleContext, copies: list) -> Fix | NotFixable:
    language = ctx.kernel.language
    if language == "ptx":
        from tolk_lint.fix.ptx_pipeline import pipeline_fix as ptx_fix

        return ptx_fix(ctx, copies)
    if language == "python":
        try:
            from tolk_lint.fix.numba_pipeline import pipeline_fix as numba_fix  # type: ignore[import-not-found]
        except ImportError:
            return NotFixable("the Numba rewrite is not available")
        return numba_fix(ctx, copies)
    return NotFixable(f"there is no rewrite for {language} kernels")
