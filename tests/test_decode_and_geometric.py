"""Two structural answers the race search gives before any solver question
(tolk_lint.analysis.memory.ranks.decode_private, loops.geometric_values /
never_left_at). Each case's answer is known by reasoning:

- ``s[x // d, x % d]`` with ``x`` a block-stride counter (two threads' ``x``
  differ) and ``d`` an extent, the access under ``x < k * d``: ``d >= 1``
  there, ``(x // d, x % d)`` determines ``x``, and in bounds the element
  determines the pair: apart.
- ``s[x // d, x % e]``, two extents: ``x = 0`` and ``x = 1`` meet at
  ``(0, 0)`` when ``d = 2``, ``e = 1``: not this proof.
- ``(x // 2, x % 2)`` against ``(y // 2, y % 2)``: not one ``x``, and
  neither thread-private: not this proof.
- ``x // 2`` with ``x = tid.x`` (a constant divisor, no loop): apart.
- a runtime ``d`` with no test of ``x`` against a multiple of it
  (``range(t, 128, ...)``): ``d = 0`` is not ruled out (Numba gives
  ``(0, 0)`` for every ``x``): not this proof.
- bitonic sort's compare-exchange (``sh[t]``, ``sh[t ^ j]`` under ``t ^ j >
  t``, ``j`` halving from ``k // 2``): lints clean; the same stage with the
  partner gate dropped races (thread t and thread t ^ j both write
  ``sh[t]``) and stays reported.
"""

from __future__ import annotations

from tolk_lint import engine
from tolk_lint.analysis.memory.facts import memory_facts
from tolk_lint.analysis.memory.loops import geometric_values, never_left_at
from tolk_lint.analysis.memory.ranks import decode_private


def _facts(src: str):
    module = engine.parse(src, "k.py")
    engine.prepare(module, engine.DEFAULT_SETTINGS)
    return memory_facts(module.kernels[0], module, engine.DEFAULT_SETTINGS)


def _stores(mf):
    return [a for a in sorted(mf.shared, key=lambda x: x.order) if a.kind == "write"]


DECODE = """from numba import cuda, float32

@cuda.jit
def k(c, out):
    sc = cuda.shared.array((16, 8), float32)
    n = c.shape[0]
    d = c.shape[1]
    e = out.shape[1]
    t = cuda.threadIdx.x
    for x in range({start}, {bound}, cuda.blockDim.x):
        sc[{index}] = 1.0
    cuda.syncthreads()
    out[t, 0] = sc[0, 0]
"""


def _decode(start="t", bound="n * d", index="x // d, x % d"):
    mf = _facts(DECODE.format(start=start, bound=bound, index=index))
    [a] = _stores(mf)
    return decode_private(mf.ranks, a, a)


def test_decoded_block_stride_counter_is_apart():
    assert _decode()
    assert _decode(bound="d * n")
    assert _decode(bound="d")


def test_two_extents_are_not_apart():
    assert not _decode(index="x // d, x % e")


def test_unguarded_runtime_divisor_is_not_apart():
    assert not _decode(bound="128")  # d = 0 not ruled out where the store runs
    assert not _decode(bound="n * e")  # a bound that is no multiple of d


def test_counter_that_repeats_is_not_apart():
    assert not _decode(start="t % 4")
    assert not _decode(start="2 * t")


CONST = """from numba import cuda, float32

@cuda.jit
def k(x, y, out):
    s = cuda.shared.array((64, 2), float32)
    t = cuda.threadIdx.x
    s[{a}] = 1.0
    s[{b}] = 2.0
    cuda.syncthreads()
    out[t] = s[0, 0]
"""


def test_constant_divisor():
    mf = _facts(CONST.format(a="t // 2, t % 2", b="t // 2, t % 2"))
    first, second = _stores(mf)
    assert decode_private(mf.ranks, first, second)
    mf = _facts(CONST.format(a="x[t] // 2, x[t] % 2", b="y[t] // 2, y[t] % 2"))
    first, second = _stores(mf)
    assert not decode_private(mf.ranks, first, second)
    assert not decode_private(mf.ranks, first, first)


BITONIC = """from numba import cuda, float32

BLOCK = 256

@cuda.jit
def k(keys):
    sh = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    sh[t] = keys[t]
    cuda.syncthreads()
    k = 2
    while k <= BLOCK:
        j = k // 2
        while j > 0:
            partner = t ^ j
            if {gate}:
                a = sh[t]
                b = sh[partner]
                if (a > b) == ((t & k) == 0):
                    sh[t] = b
                    sh[partner] = a
            cuda.syncthreads()
            j //= 2
        k *= 2
    keys[t] = sh[t]


k[1, BLOCK](None)
"""


def test_geometric_values_and_inner_loop_always_runs():
    mf = _facts(BITONIC.format(gate="partner > t"))
    vals = geometric_values(mf.cfg, mf.canon, mf.geo, mf.info.varying)
    [(j, got)] = vals.items()
    assert got == (0, 1, 2, 4, 8, 16, 32, 64, 128)
    inner = next(lp for lp in mf.cfg.loops if lp.header is j.defn.block)
    assert never_left_at(mf.cfg, mf.canon, mf.geo, mf.info.varying, inner, 0)
    assert not never_left_at(mf.cfg, mf.canon, mf.geo, mf.info.varying, inner, 1)  # k = 2: j = 1, then 0


def _races(src: str):
    return [(d.code, d.span.line) for d in engine.lint_text(src, "k.py").diagnostics if d.code == "TL201"]


def test_bitonic_stage_clean_and_planted_twin_reported():
    assert _races(BITONIC.format(gate="partner > t")) == []
    assert _races(BITONIC.format(gate="partner != t"))  # both threads of a pair exchange: they race
