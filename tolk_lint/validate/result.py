"""What one stage of `tolk-lint validate` found, and the command's exit status.

Stages, cheapest first: ``static`` (the fixed kernel re-lints clean, its
pipeline hazards proved for every trip), ``assembler`` (ptxas on both),
``interpreter`` (both on the reference interpreter, bit for bit),
``simulator`` (Numba kernels under the CUDA simulator), ``gpu`` (both on
a GPU, bit for bit, and timed).

A stage passes, fails, or is unavailable (the GPU stage without a GPU, the
simulator without numba-cuda): an unavailable stage is never a pass. Exit
status: 0 every stage run passed, 1 one failed, 2 usage error (a bad spec,
a missing file), 3 nothing failed but an asked-for stage was unavailable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PASS, FAIL, UNAVAILABLE, SKIPPED = "pass", "fail", "unavailable", "skipped"


@dataclass
class StageResult:
    stage: str  # static | assembler | interpreter | simulator | gpu
    verdict: str  # pass | fail | unavailable | skipped
    summary: str  # one line: why, or what was measured
    figures: dict[str, Any] = field(default_factory=dict)  # numbers, side by side (registers, ms, ...)
    details: list[str] = field(default_factory=list)  # more lines: the diagnostics, the differing outputs

    def to_json(self) -> dict[str, Any]:
        return {"stage": self.stage, "verdict": self.verdict, "summary": self.summary,
                "figures": self.figures, "details": self.details}  # fmt: skip


def exit_status(results: list[StageResult]) -> int:
    if any(r.verdict == FAIL for r in results):
        return 1
    if any(r.verdict == UNAVAILABLE for r in results):
        return 3
    return 0
