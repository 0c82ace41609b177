"""Witnesses found cheaply: a race or out-of-bounds access found over an
abstracted product (a grid-stride counter's ``start + S * k``, `MemoryEncoder._strided`)
is confirmed from the model already found (`MemoryCore.model_of`) before
the exact question is asked whole; and `shrink` stops bisecting a bound
the solver gave up on. Each answer is known by reasoning:

- ``sm[tid] = acc`` then ``sm[tid] += sm[tid + 64]`` with no barrier
  between, after a grid-stride loop that only sums: thread 0 reads
  ``sm[64]`` while thread 64 writes it. The grid-stride loop's exit trip is
  all the exact question adds, and with the block, the grid and the
  threads fixed to the witness's (or the grid one block) the solver finds
  it at once: the race is reported with a real witness (threads ``t`` and
  ``t + 64``), confirmed at least once with no exact question asked
  whole. Numba, and nvcc's PTX of the same kernel in CUDA C.
- a solver that gives up on every question (a resource limit of 1): the
  shrink stops after `MAX_GIVE_UPS` of them, and the model stays the one
  given; with a real limit the witness is threads 0 and 1 of a block of 2.
- a division by an extent (k-means' staging loop): the parameters pinned
  first, the witness is a shape of a few rows and columns.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tolk_lint import engine
from tolk_lint.analysis.memory import core
from tolk_lint.analysis.memory.races import RaceSearch
from tolk_lint.analysis.smt.shrink import MAX_GIVE_UPS, MAX_QUERIES, shrink
from tolk_lint.analysis.smt.solver import z3mod

NUMBA = """from numba import cuda, float32

# tolk: launch block=(128,1,1)
@cuda.jit
def k(values, partials):
    sm = cuda.shared.array(128, float32)
    tid = cuda.threadIdx.x
    acc = float32(0.0)
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        acc += values[i]
    sm[tid] = acc
    if tid < 64:
        sm[tid] += sm[tid + 64]
    if tid == 0:
        partials[cuda.blockIdx.x] = sm[0]
"""

CUDA = """__global__ void k(const float *values, float *partials, int n)
{
    __shared__ float sm[128];
    int tid = threadIdx.x;
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + tid; i < n; i += blockDim.x * gridDim.x)
        acc += values[i];
    sm[tid] = acc;
    if (tid < 64)
        sm[tid] += sm[tid + 64];
    if (tid == 0)
        partials[blockIdx.x] = sm[0];
}
"""


def _lint_counting(monkeypatch, text: str, path: str):
    """The lint's diagnostics, the models `model_of` answered with, and the
    exact questions asked whole (not with the launch and threads fixed)."""
    answered: list = []
    whole: list = []
    model_of, solve = core.MemoryCore.model_of, core.MemoryCore.solve

    def counting_model_of(self, q, goal, *models):
        got = model_of(self, q, goal, *models)
        answered.append(got)
        return got

    def counting_solve(self, q, goal, rlimit=None, fallback=True):
        if q is self._q_exact and (rlimit or self.rlimit) == self.rlimit:
            whole.append(goal)
        return solve(self, q, goal, rlimit, fallback)

    monkeypatch.setattr(core.MemoryCore, "model_of", counting_model_of)
    monkeypatch.setattr(core.MemoryCore, "solve", counting_solve)
    diags = engine.lint_text(text, path).diagnostics
    return diags, answered, whole


def _check_race(diags, answered, whole, lines: set):
    races = [d for d in diags if d.code == "TL201"]
    assert races and {d.span.line for d in races} == lines, [(d.code, d.span.line) for d in diags]
    a, b = (t[0] for t in races[0].witness["threads"])
    assert abs(a - b) == 64 and min(a, b) < 64
    assert any(m is not None for m in answered)
    assert len(whole) < len(answered)  # at least one confirmed with no whole question


def test_numba_grid_stride_race_confirmed_from_its_model(monkeypatch):
    diags, answered, whole = _lint_counting(monkeypatch, NUMBA, "k.py")
    # one race of lines 11 (the store) and 13 (the read of `tid + 64`): reported
    # once, at the later access, naming the store (`RaceSearch._covering`)
    _check_race(diags, answered, whole, {13})


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_nvcc_grid_stride_race_confirmed_from_its_model(monkeypatch, tmp_path):
    cu, ptx = tmp_path / "k.cu", tmp_path / "k.ptx"
    cu.write_text(CUDA)
    subprocess.run(["nvcc", "-ptx", "-lineinfo", "-arch=sm_80", "-o", str(ptx), str(cu)], check=True, timeout=300)
    text = ptx.read_text().replace(".visible .entry", "// tolk: launch block=(128,1,1)\n.visible .entry", 1)
    # nvcc's copies of the pair: the one found first needs no confirmation, and
    # the others are covered by it (`RaceSearch._covering`); asked about here,
    # the one over abstracted strides is confirmed from its model
    monkeypatch.setattr(RaceSearch, "_covering", lambda self, *args: None)
    diags, answered, whole = _lint_counting(monkeypatch, text, str(ptx))
    races = [d for d in diags if d.code == "TL201"]
    assert races, [(d.code, d.span.line) for d in diags]
    a, b = (t[0] for t in races[0].witness["threads"])
    assert abs(a - b) == 64 and min(a, b) < 64
    assert any(m is not None for m in answered) and len(whole) < len(answered)


def _two_threads(z3):
    t0, t1 = z3.BitVec("tid.x@t0", 32), z3.BitVec("tid.x@t1", 32)
    n = z3.BitVec("ntid.x", 32)
    s = z3.Solver()
    s.add(t0 != t1, z3.ULT(t0, n), z3.ULT(t1, n), z3.ULE(n, 1024))
    s.add(t0 == 700, t1 == 900, n == 1000)
    assert s.check() == z3.sat
    m = s.model()
    s.reset()
    s.add(t0 != t1, z3.ULT(t0, n), z3.ULT(t1, n), z3.ULE(n, 1024))
    return s, m, (t0, t1, n)


def test_shrink_stops_bisecting_when_the_solver_gives_up():
    z3 = z3mod()
    s, m, (t0, t1, n) = _two_threads(z3)
    checks = []
    check = s.check

    def counting_check(*a):
        r = check(*a)
        checks.append(str(r))
        return r

    s.check = counting_check
    got, asked = shrink(z3, s, m, rlimit=1)
    assert checks and set(checks) == {"unknown"}
    # each of the three stages (pinned questions one symbol at a time, the
    # bound on them all, the parameters' small values) stops after
    # MAX_GIVE_UPS given up on, and no bisection follows a bound given up on
    assert len(checks) <= 3 * MAX_GIVE_UPS and asked < MAX_QUERIES
    assert got is m
    # a real limit: the smallest witness, threads 0 and 1 of a block of 2
    s2, m2, (t0, t1, n) = _two_threads(z3)
    got, _ = shrink(z3, s2, m2)
    vals = sorted(got.eval(x, model_completion=True).as_long() for x in (t0, t1))
    assert vals == [0, 1] and got.eval(n, model_completion=True).as_long() == 2


STAGE_BY_EXTENT = """from numba import cuda, float32

# tolk: launch block=(128,1,1)
@cuda.jit
def stage(centroids, out):
    sc = cuda.shared.array((16, 8), float32)
    k = centroids.shape[0]
    d = centroids.shape[1]
    for idx in range(cuda.threadIdx.x, k * d, cuda.blockDim.x):
        sc[idx // d, idx % d] = centroids[idx // d, idx % d]
    cuda.syncthreads()
    out[cuda.threadIdx.x] = sc[0, 0]
"""


def test_a_witness_through_a_division_by_an_extent_is_small():
    """k-means' staging loop: ``sc[idx // d, idx % d]`` with ``idx < k * d``
    leaves the 16x8 tile when ``k > 16`` (row ``idx // d``) or ``d > 8``
    (column ``idx % d``). Every symbol bounded at once is a question through
    two 64-bit divisions by ``d`` that the solver gives up on, and the
    witness stayed Z3's first model (``centroids.shape[0] = 1788119081``,
    trip 197623808). Questions that pin every symbol to a value turn the
    divisions into divisions by a constant: the witness is a real small one,
    and replaying it leaves the tile."""
    [d] = [d for d in engine.lint_text(STAGE_BY_EXTENT, "k.py").diagnostics if d.code == "TL202" and d.span.line == 10]
    shape = d.witness["inputs"]
    k, dd = shape["centroids.shape[0]"], shape["centroids.shape[1]"]
    [[t, _, _]] = d.witness["threads"]
    trips = [int(x) for x in re.findall(r"at trip (\d+) of the loop at line 9", d.message)] or [0]
    idx = t + 128 * trips[0]
    assert idx < k * dd and (idx // dd >= 16 or idx % dd >= 8), (d.message, shape)
    assert 1 <= k <= 129 and 1 <= dd <= 129 and 0 <= t < 128  # at most one trip past the first block


PER_BLOCK_SLOT = """from numba import cuda, float32

# tolk: launch block=(128,1,1)
@cuda.jit
def per_block(a, out):
    s = cuda.shared.array(4, float32)
    if cuda.threadIdx.x == 0:
        s[cuda.blockIdx.x] = a[cuda.blockIdx.x]
    cuda.syncthreads()
    out[cuda.blockIdx.x] = s[0]
"""


def test_a_witness_that_needs_a_far_block_names_it():
    """``s[blockIdx.x]`` leaves a 4-slot array only in block 4 and later:
    the block index is a witness symbol, made as small as it can be (4,
    not whatever Z3 picked), and the message names it."""
    [d] = [d for d in engine.lint_text(PER_BLOCK_SLOT, "k.py").diagnostics if d.code == "TL202"]
    assert d.witness["ctaid"] == [4, 0, 0]
    assert "thread 0 in block (4,0,0)" in d.message
