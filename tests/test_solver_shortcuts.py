"""What the speed work of the Numba bench may skip gives the answers the full
work gives: a memory question the bit-blasting tactic gave up on is not asked
again under the same limit (`query.solve_bv`), and the concrete pass
evaluates an access once per trip assignment (`ConcretePairs.terms`)."""

from __future__ import annotations

import textwrap
from types import SimpleNamespace

from tolk_lint.analysis import memory, smt
from tolk_lint.analysis.memory import query
from tolk_lint.analysis.memory.concrete import ConcretePairs
from tolk_lint.config import resolve_settings
from tolk_lint.engine import parse, prepare


def _division_pair(z3):
    """Two threads' ``(x // d, x % d)`` (Python's floor division, encoded as
    `smt.Encoder` encodes it) equal while their ``x`` differ: unsatisfiable
    (``x = (x // d) * d + x % d`` for every ``d``, and ``d = 0`` gives
    ``x % d = x``), but the two 64-bit division circuits per thread are more
    than a small resource limit lets the SAT solver refute."""
    d = z3.BitVec("param:d", 64)
    x0, x1 = z3.BitVec("x@t0", 64), z3.BitVec("x@t1", 64)

    def floor(x):
        r = x % d  # bvsmod: the divisor's sign, as Python's %
        return (x - r) / d, r

    (q0, r0), (q1, r1) = floor(x0), floor(x1)
    constraints = [d >= 0, d < (1 << 31), x0 >= 0, x1 >= 0, x0 < (1 << 40), x1 < (1 << 40), x0 != x1]
    return SimpleNamespace(z3=z3, constraints=constraints), z3.And(q0 == q1, r0 == r1)


def test_a_question_given_up_on_is_not_asked_again(monkeypatch):
    z3 = smt.z3mod()
    smt.fresh_context()
    enc, goal = _division_pair(z3)
    rlimit = 2_000_000  # past the bit-blasting: it runs out in the SAT solver ("canceled")
    # the exact path, as it was: the default solver under the same limit gives up too
    exact = smt.solve(enc, goal, rlimit)
    assert exact.status == "unknown"

    asked = []
    monkeypatch.setattr(smt, "solve", lambda *a, **k: asked.append(a) or exact)
    v = query.solve_bv(enc, goal, rlimit)
    assert (v.status, v.reason) == ("unknown", "resource limit")
    assert not asked  # the tactic's "canceled" is its resource limit: no second, equally long question


def test_the_tactic_still_decides_what_it_can():
    """The same question on 8-bit values, where the limit is enough: unsat,
    as by the reasoning above (and as the default solver says)."""
    z3 = smt.z3mod()
    smt.fresh_context()
    d = z3.BitVec("param:d", 8)
    x0, x1 = z3.BitVec("x@t0", 8), z3.BitVec("x@t1", 8)
    r0, r1 = x0 % d, x1 % d
    enc = SimpleNamespace(z3=z3, constraints=[d >= 0, x0 >= 0, x1 >= 0, x0 != x1])
    goal = z3.And((x0 - r0) / d == (x1 - r1) / d, r0 == r1)
    assert query.solve_bv(enc, goal, smt.DEFAULT_RLIMIT).status == "unsat"
    assert smt.solve(enc, goal, smt.DEFAULT_RLIMIT).status == "unsat"


STAGING = """
from numba import cuda, float32

@cuda.jit
def staged(a, out):
    s = cuda.shared.array((16, 64), float32)
    t = cuda.threadIdx.x
    for i in range(4):
        e = i * 256 + t
        s[e // 64, e % 64] = a[e]
    cuda.syncthreads()
    out[t] = s[t % 16, t // 16]

staged[1, 256](a, out)
"""


def test_cached_terms_are_what_a_fresh_evaluation_gives():
    """Every access's terms, asked twice: the second answer is the first
    (one evaluation per access and trip assignment), and equal to a fresh
    evaluation of the same access at the same trips."""
    s = resolve_settings()
    m = parse(textwrap.dedent(STAGING).lstrip("\n"), "k.py")
    prepare(m, s)
    [k] = m.kernels
    f = memory.memory_facts(k, m, s)
    pairs = ConcretePairs(f)
    seen = 0
    for acc in f.shared:
        for trip in range(4):
            ctx = tuple((lp, ("abs", trip)) for lp in f.cfg.loops_around(acc.instr.block))
            first = pairs.terms(acc, ctx)
            assert pairs.terms(acc, ctx) is first
            assert pairs._terms_of(acc, ctx) == first
            seen += first is not None
    assert seen == 8  # the store (e // 64, e % 64 at each trip) and the load, each evaluated


def test_witness_symbols_read_through_the_c_calls_are_the_portable_walks():
    """`shrink.witness_symbols` walks a formula through Z3's C functions
    directly (no wrapper objects per node); it finds the same symbols, in
    the same order, as the walk over z3py's objects, on a formula with
    shared subterms, unnamed and named constants of other prefixes, a
    Boolean constant and an uninterpreted function."""
    from tolk_lint.analysis.smt import shrink

    z3 = smt.z3mod()
    smt.fresh_context()
    t0, t1 = z3.BitVec("tid.x@t0", 32), z3.BitVec("tid.x@t1", 32)
    n, k = z3.BitVec("param:n", 64), z3.BitVec("k_loop", 64)
    other, flag = z3.BitVec("mem7_0", 32), z3.Bool("p@t0")
    f = z3.Function("seen_s", z3.BitVecSort(64), z3.BitVecSort(32))
    shared = z3.ZeroExt(32, t0 + t1) * k
    formulas = [z3.And(shared == n, f(shared) == other, flag), z3.ULT(t0, 128), shared != 0]
    raw = shrink.witness_symbols(z3, formulas)
    portable = shrink._constants(z3, formulas, shrink._PREFIXES)
    assert [str(x) for x in raw] == sorted(portable) == ["k_loop", "param:n", "tid.x@t0", "tid.x@t1"]
    assert all(x.eq(portable[str(x)]) for x in raw)
    assert shrink.witness_symbols(z3, []) == []


GRID_STRIDE_BARRIER = textwrap.dedent("""\
    from numba import cuda, float32

    # tolk: launch block=(128,1,1)
    @cuda.jit
    def scale(x, n):
        s = cuda.shared.array(128, float32)
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            s[cuda.threadIdx.x] = x[i]
            cuda.syncthreads()
            x[i] = s[127 - cuda.threadIdx.x]
            cuda.syncthreads()
    """)


def test_a_uniformity_question_the_smallest_launch_answers_asks_nothing_more(monkeypatch):
    """A grid-stride loop's trips differ between threads 0 and 1 when
    ``n = 1`` (thread 0 runs one trip, thread 1 none): `solve` tries the
    smallest launch first (`solver._probe`: threads 0 and 1, trip 0,
    parameters 1), which answers SAT, so the whole question over symbolic
    extents (seconds of 64-bit arithmetic for the solver) is never asked,
    and the witness is that launch."""
    from tolk_lint.analysis.smt import solver

    checks = []
    real = solver.check_within_budget

    def counted(s):
        checks.append(s.num_scopes())  # 1 under the probe's pins, 0 for a question asked whole
        return real(s)

    monkeypatch.setattr(solver, "check_within_budget", counted)
    from tolk_lint.engine import lint_text

    diags = [d for d in lint_text(GRID_STRIDE_BARRIER, "k.py").diagnostics if d.code == "TL102"]
    assert len(diags) == 2
    assert checks and 0 not in checks  # every uniformity question answered under the probe
    w = diags[0].witness
    assert sorted(t[0] for t in w["threads"]) == [0, 1] and w["inputs"]["n"] == 1
