"""Fuzzing as a test: 800 mutated kernels (`tests/fuzzer.py`, fixed seed;
``TOLK_FUZZ_CASES`` asks for more)
linted in this process, each under a quarter-second budget; none may raise,
report an internal error (TL004) or run past its budget. And every input
the fuzzer ever found a bug with (`tests/fuzz_regressions/`) stays fixed.

`bench/fuzz.py` runs the same cases for as long as you like, in parallel.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import fuzzer
import pytest

from tolk_lint.config import DEFAULT_SETTINGS
from tolk_lint.engine import load_tool
from tolk_lint.testing import parse_expectations

SEED = 20261201
CASES = int(os.environ.get("TOLK_FUZZ_CASES", "800"))
BUDGET = 0.25  # seconds per case: bounded work is the point, not how far each analysis gets
REGRESSIONS = sorted(p for p in (Path(__file__).parent / "fuzz_regressions").iterdir() if p.suffix in (".py", ".ptx"))


@pytest.fixture(scope="module")
def loaded():
    load_tool(DEFAULT_SETTINGS, "ptx")
    load_tool(DEFAULT_SETTINGS, "python")
    return fuzzer.seed_files()


@pytest.mark.slow
def test_fuzz(loaded):
    seeds = loaded
    counts: Counter = Counter()
    bad = []
    start = time.monotonic()
    for i in range(CASES):
        o = fuzzer.outcome(fuzzer.make_case(seeds, SEED, i), BUDGET)
        counts[o.kind] += 1
        counts.update(o.codes)
        if o.bad:
            bad.append(o.describe())
    print(f"\nfuzz: {CASES} cases in {time.monotonic() - start:.0f} s: TL001 {counts['TL001']}, TL002 "
          f"{counts['TL002']}, TL005 {counts['TL005']}, TL004 {counts['TL004']}, exceptions {counts['exception']}, "
          f"hangs {counts['hang']}")  # fmt: skip
    assert not bad, "\n".join(bad[:20])


def test_mutations_are_reproducible(loaded):
    """A case is a function of (seed, index) alone: replayable without the ones before it."""
    seeds = loaded
    a = [fuzzer.make_case(seeds, SEED, i).data for i in (5, 17, 1999)]
    fuzzer.make_case(seeds, SEED, 3)
    assert [fuzzer.make_case(seeds, SEED, i).data for i in (5, 17, 1999)] == a


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.name for p in REGRESSIONS])
def test_fuzz_regression(loaded, path):
    data = path.read_bytes()
    try:
        flags = tuple(parse_expectations(data.decode("utf-8", "replace"), fuzzer_language(path)).flags)
    except ValueError:
        flags = ()
    case = fuzzer.Case(0, fuzzer.Seed(path.name, "", flags), ["regression"], data)
    o = fuzzer.outcome(case, budget=5.0)
    assert not o.bad, o.describe()


def fuzzer_language(path: Path) -> str:
    return "ptx" if path.suffix == ".ptx" else "python"


def test_a_shift_by_the_width_or_more_is_zero_in_the_concrete_pass():
    # `shl.b32 %r, %tid.x, 2147483647` is 0 in every thread (PTX clamps the
    # amount): every thread's copy lands on byte 0, which the concrete pass
    # sees at once instead of building the integer 2**2147483647
    from tolk_lint import lint_text
    from tolk_lint.config import Settings

    text = (Path(__file__).parent / "fuzz_regressions" / "shl_by_2147483647.ptx").read_text()
    diags = lint_text(text, "shl.ptx", Settings(block=(128, 1, 1), time_budget=5.0)).diagnostics
    assert "TL204" in {d.code for d in diags} and "TL005" not in {d.code for d in diags}
