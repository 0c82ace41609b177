"""Budgets stop the analyses that can grow: a lint that runs out of time or
memory ends promptly with TL005 naming what was not finished (exit 2),
and what was found before the stop is still reported.

The command-line cases run in a subprocess with a timeout; their bounds are
generous (a loaded machine takes seconds to start Python), the in-process
ones show the stop itself is prompt. `test_each_analysis_checks_its_budget`
makes the budget run out at the first check of each analysis in turn, so
every analysis that can grow is known to look at it.
"""

from __future__ import annotations

import json
import time

import pytest
from conftest import FIXTURES, REPO
from test_bad_input import ACCEPTANCE, SMALL_PTX, codes, replicate_ptx, tolk_lint

from tolk_lint import budget
from tolk_lint.engine import lint_text, load_tool
from tolk_lint.testing import settings_from_flags

SLOW = REPO / "fixtures" / "corpus" / "numba" / "kmeans_assign.py"  # seconds of solving (division by runtime extents)
QUICK_BUG = '''

@cuda.jit
def first_divergent_barrier(a):
    if cuda.threadIdx.x < 16:
        cuda.syncthreads()
'''


def slow_file_with_a_quick_bug(tmp_path):
    """The slow file with a kernel in front that is TL101 at once."""
    text = SLOW.read_text()
    head = text.index("@cuda.jit")
    text = text[:head] + QUICK_BUG.lstrip("\n") + "\n\n" + text[head:]
    f = tmp_path / "slow.py"
    f.write_text(text)
    return f, text.splitlines().index("        cuda.syncthreads()") + 1


def test_time_budget_stops_a_slow_kernel(tmp_path):
    f, bug_line = slow_file_with_a_quick_bug(tmp_path)
    start = time.monotonic()
    p = tolk_lint("check", "--no-cache", "--time-budget", "1", "--output-format", "json", str(f), timeout=120)
    elapsed = time.monotonic() - start
    diags = json.loads(p.stdout)
    assert p.returncode == 2, (p.returncode, diags)
    assert ("TL101", bug_line) in {(d["code"], d["line"]) for d in diags}, diags  # found before the stop
    stops = [d for d in diags if d["code"] == "TL005"]
    assert stops and all("time budget of 1 s ran out" in d["message"] for d in stops), stops
    assert any("did not finish" in d["message"] or "did not run" in d["message"] for d in stops), stops
    assert elapsed < 60, elapsed  # without the budget: minutes on a loaded machine


def test_time_budget_stop_is_prompt():
    """In process (no start-up to wait for): one second of budget, stopped
    within a few of it, inside the analysis (the solver, the race search)."""
    s = settings_from_flags([])
    load_tool(s)
    start = time.monotonic()
    r = lint_text(SLOW.read_text(), str(SLOW), s.with_(time_budget=1.0))
    elapsed = time.monotonic() - start
    assert "TL005" in {d.code for d in r.diagnostics}, [d.message for d in r.diagnostics]
    assert elapsed < 6, elapsed


def test_memory_budget_below_what_the_lint_needs(tmp_path):
    """The slow file's analysis grows the process by far more than 1 MiB
    (its IR, Z3): the lint stops at a check past the first MiB."""
    f, _ = slow_file_with_a_quick_bug(tmp_path)
    p = tolk_lint("check", "--no-cache", "--memory-budget", "1", "--output-format", "json", str(f), timeout=120)
    diags = json.loads(p.stdout)
    assert p.returncode == 2 and "TL005" in codes(diags), diags
    stops = [d for d in diags if d["code"] == "TL005"]
    assert all("memory budget of 1 MiB ran out" in d["message"] for d in stops), stops
    assert all("more in use than when the file's lint began" in d["message"] for d in stops), stops


def test_memory_held_before_the_lint_is_not_the_lints():
    """A process that lints many files (the language server, a test run)
    holds what it loaded and cached for earlier ones: a budget smaller than
    that still lets the next file's lint run to its end."""
    held = bytearray(64 * budget.MIB)  # resident: every page written
    for i in range(0, len(held), 4096):
        held[i] = 1
    assert (budget.resident_bytes() or 0) > 64 * budget.MIB
    s = settings_from_flags([])
    load_tool(s)
    path = FIXTURES / "ptx" / "memory" / "shared_race_no_barrier.ptx"
    r = lint_text(path.read_text(), str(path), s.with_(memory_budget=48))
    assert "TL005" not in {d.code for d in r.diagnostics}, [d.message for d in r.diagnostics]
    assert "TL201" in {d.code for d in r.diagnostics}, [d.message for d in r.diagnostics]
    del held


@pytest.mark.slow
def test_time_budget_stops_parsing_fifty_megabytes(tmp_path):
    src = ACCEPTANCE / "cuda" / "sgemm_tiled.sm80.ptx"
    text = src.read_text() if src.is_file() else SMALL_PTX
    f = tmp_path / "big.ptx"
    f.write_text(replicate_ptx(text, 50 * 1024 * 1024))
    p = tolk_lint("check", "--no-cache", "--time-budget", "2", "--output-format", "json", str(f), timeout=300)
    diags = json.loads(p.stdout)
    assert p.returncode == 2, diags
    # PTX is read kernel by kernel: the budget runs out while the file is read
    # (before the first kernel, or between two: the findings of those before
    # stay), or in the analysis of a kernel (its TL005), and then at once while
    # the next one is read. One TL005 says where reading stopped.
    stops = [d for d in diags if d["code"] == "TL005"]
    [d] = [d for d in stops if d["message"].startswith("reading the file stopped")]
    assert "line" in d["message"], d
    assert all(s is d or s["message"].startswith("the analysis of kernel") for s in stops), stops


# -- every analysis that can grow looks at the budget ------------------------------------------

CASES = [  # (what the check names, the fixture that reaches it, its flags)
    ("parsing the file", "ptx/memory/shared_race_no_barrier.ptx", None),
    ("lowering `", "ptx/memory/shared_race_no_barrier.ptx", None),
    ("lowering `", "numba/memory/race_tile_2d.py", None),
    ("asking the solver", "ptx/uniformity/early_exit_barrier.ptx", None),
    ("the uniformity refinement", "ptx/uniformity/loop_varying_bound.ptx", None),
    ("the race search", "numba/memory/race_tile_2d.py", None),
    ("the race search's concrete pass", "numba/memory/race_tile_2d.py", None),
    ("the bounds search", "numba/memory/stencil_halo_oob.py", None),
    ("the staging analysis", "numba/staging/naive_matmul_global.py", None),
]


@pytest.mark.parametrize("what, fixture, _", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_each_analysis_checks_its_budget(monkeypatch, what, fixture, _):
    """The budget runs out at the first check whose name starts with
    ``what``: the lint stops there with TL005 naming it."""
    from tolk_lint.testing import parse_expectations

    path = FIXTURES / fixture
    text = path.read_text()
    flags = parse_expectations(text, "ptx" if path.suffix == ".ptx" else "python").flags
    settings = settings_from_flags([f for f in flags]).with_(time_budget=120, select=("ALL",), ignore=())
    real = budget.check
    seen: list[str] = []

    def check(name: str, *args):
        label = name % args if args else name
        seen.append(label)
        if label.startswith(what):
            raise budget.BudgetExceeded(label, "the test's budget ran out")
        real(name, *args)

    monkeypatch.setattr(budget, "check", check)
    r = lint_text(text, str(path), settings)
    stops = [d for d in r.diagnostics if d.code == "TL005"]
    assert stops, (what, sorted(set(seen))[:40])
    assert any(what in d.message and "the test's budget ran out" in d.message for d in stops), [
        d.message for d in stops]  # fmt: skip


def test_a_cancel_interrupts_the_solver_question_under_way():
    """`budget.Cancel`: a question that would take seconds (factoring a
    64-bit product of two primes) ends within moments of the cancel, and
    the lint stops there (`BudgetExceeded`) rather than at its end."""
    import threading

    from tolk_lint.analysis.smt import solver

    z3 = solver.z3mod()
    x, y = z3.BitVecs("x y", 64)
    s = z3.SolverFor("QF_BV")
    s.add(x * y == 0xE3F3B9A3_4A9F56C1, z3.UGT(x, 1), z3.UGT(y, 1), z3.ULT(x, 1 << 32), z3.ULT(y, 1 << 32))
    cancel = budget.Cancel()
    threading.Timer(0.3, cancel.set).start()
    start = time.monotonic()
    with budget.running(budget.Budget(120.0, cancel=cancel)):
        with pytest.raises(budget.BudgetExceeded) as stop:
            solver.check_within_budget(s)
    assert time.monotonic() - start < 5.0
    assert stop.value.reason == "cancelled"
