"""What the solver gives up on is reported as a warning that says so: not
known to be clean, and not a finding shown either (TL201, TL202)."""

from __future__ import annotations

from dataclasses import replace

from tolk_lint.config import DEFAULT_SETTINGS
from tolk_lint.diagnostics import Severity
from tolk_lint.engine import lint_text

GAVE_UP = '''\
from numba import cuda, float32


@cuda.jit
def stage_rows(x, out, d):
    s = cuda.shared.array(256, float32)
    i = cuda.threadIdx.x
    s[i // d * d + i % d] = x[i]
    cuda.syncthreads()
    out[i] = s[(i + 1) % 256]
    out[i] += s[2 * i + 300]
'''


def test_what_the_solver_gives_up_on_is_a_warning_that_says_so():
    # `i // d * d + i % d` is `i`: two threads never store one word, but with a
    # resource limit of 1 the solver cannot prove it, nor find two threads that
    # meet. Not known to be clean, not a race found: a warning that says so.
    # So is the read `s[2 * i + 300]` then (with the solver's usual limit it is
    # shown out of bounds, thread 0 reading index 300: an error).
    settings = replace(DEFAULT_SETTINGS, solver_rlimit=1)
    found = lint_text(GAVE_UP, "gave_up.py", settings).diagnostics
    [race] = [d for d in found if d.code == "TL201"]
    assert race.severity is Severity.WARNING and race.data["solver"] == "unknown"
    assert race.message.startswith("possible shared-memory race") and "the solver gave up" in race.message
    [read] = [d for d in found if d.code == "TL202" and d.span.line == 11]
    assert read.severity is Severity.WARNING and "gave up" in read.message
