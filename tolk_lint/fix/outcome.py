"""What a pipeline rewrite gives back when it gives no fix, and the fix's
title: shared by `tolk_lint.fix.pipeline` and the rewrites it dispatches to
(which import this module, never `pipeline`, so that the dispatch can
import them)."""

from __future__ import annotations

from dataclasses import dataclass

FIX_TITLE = "Pipeline this loop with cp.async"


@dataclass(frozen=True)
class NotFixable:
    """Why a loop gets no fix, in words (shown as a TL302 note)."""

    reason: str
