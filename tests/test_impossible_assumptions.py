"""A `tolk: assume` that no values satisfy is refused with a TL002 at its
line, not taken (`choose.refuse_impossible`): assumed, it would make every
solver question UNSAT and the kernel look clean."""

from __future__ import annotations

from tolk_lint import lint_text
from tolk_lint.config import Settings

KERNEL = """
from numba import cuda


@cuda.jit
def k(x, n):
    # tolk: assume ASSUME
    if cuda.threadIdx.x < n:
        cuda.syncthreads()
"""
BLOCK = Settings(block=(64, 1, 1))


def _codes(assume: str) -> list[tuple[str, int]]:
    return sorted((d.code, d.span.line) for d in lint_text(KERNEL.replace("ASSUME", assume), "k.py", BLOCK).diagnostics)


def test_an_impossible_assumption_is_refused_and_the_finding_stays():
    assert _codes("n < 0 and n > 0") == [("TL002", 7), ("TL101", 9)]
    (bad,) = [d for d in lint_text(KERNEL.replace("ASSUME", "n != n"), "k.py", BLOCK).diagnostics if d.code == "TL002"]
    assert "`tolk: assume n != n` is not modelled: no values of the parameters satisfy it" in bad.message


def test_a_possible_assumption_is_taken():
    assert _codes("n >= 64") == []
    assert _codes("n >= 63") == [("TL101", 9)]
