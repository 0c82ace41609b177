"""Loops whose trips are uniform by arithmetic alone (`trip_difference`): a
range whose start and bound vary by the same thread term runs the same
trips everywhere, with no solver question; anything else is left to Z3,
which still answers it."""

from __future__ import annotations

import textwrap

import pytest

from tolk_lint.analysis import smt
from tolk_lint.analysis.trip_difference import exact_trips_uniform
from tolk_lint.analysis.uniform import compute
from tolk_lint.config import DEFAULT_SETTINGS
from tolk_lint.engine import lint_text, parse, prepare
from tolk_lint.ir.cfg import cfg_of

KERNEL = """\
from numba import cuda, float32


# tolk: launch block=(256,1,1)
@cuda.jit
def k(x, y, n):
    pipe = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    carry = float32(0.0)
    for i in {loop}:
        pipe[t] = carry + x[i]
        cuda.syncthreads()
        if t > 0:
            carry = pipe[t - 1]
        cuda.syncthreads()
    y[t] = carry
"""


def _loop(loop: str):
    m = parse(KERNEL.format(loop=loop), "k.py")
    prepare(m, DEFAULT_SETTINGS)
    (k,) = m.kernels
    cfg = cfg_of(k)
    (lp,) = cfg.loops
    return k, cfg, lp, compute(k, "workgroup", set(), set())


@pytest.mark.parametrize(
    "loop, uniform",
    [
        ("range(t, n + t)", True),  # n trips in every thread
        ("range(n + t, t, -1)", True),  # n trips, counting down
        ("range(2 * t - t, n + t)", True),  # the start is t too
        ("range(t + 3, t + n)", True),  # n - 3 trips
        ("range(t, n + 2 * t)", False),  # n + t trips
        ("range(t, n)", False),  # n - t trips
        ("range(0, n, t + 1)", False),  # a step that varies
    ],
)
def test_which_loops_are_uniform_by_arithmetic(loop, uniform):
    k, cfg, lp, info = _loop(loop)
    assert lp in info.divergent_loops  # the taint alone calls it divergent: its start or bound varies
    assert exact_trips_uniform(k, cfg, lp, info) is uniform


def test_the_solver_agrees_where_it_is_asked():
    smt.fresh_context()
    for loop, verdict in (("range(t, n + t)", "uniform"), ("range(t, n)", "varying")):
        k, _cfg, lp, info = _loop(loop)
        assert smt.loop_trips_uniform(k, lp, info, "workgroup").verdict == verdict


def test_a_shifted_loop_is_clean_and_its_twin_is_not():
    clean = lint_text(KERNEL.format(loop="range(t, n + t)"), "k.py", DEFAULT_SETTINGS)
    assert not [d for d in clean.diagnostics if d.code.startswith("TL1")]
    twin = lint_text(KERNEL.format(loop="range(t, n + 2 * t)"), "k.py", DEFAULT_SETTINGS)
    assert {d.code for d in twin.diagnostics} >= {"TL102"}


PTX = """\
.version 8.0
.target sm_80
.address_size 64

.visible .entry k(.param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    add.s32 %r3, %r1, %r2;
    mov.u32 %r4, %r2;
LOOP:
    setp.ge.s32 %p1, %r4, %r3;
    @%p1 bra DONE;
    bar.sync 0;
    add.s32 %r4, %r4, 1;
    bra.uni LOOP;
DONE:
    ret;
}
"""


def test_ptx_registers_wrap_so_the_solver_decides():
    """In 32-bit registers ``n + tid`` wraps for a large ``n``: the trips
    then differ (``n = 2**31 - 1``: thread 0 runs n trips, thread 1 none),
    which only the solver's model of the wrap sees."""
    m = parse(textwrap.dedent(PTX), "k.ptx")
    prepare(m, DEFAULT_SETTINGS)
    (k,) = m.kernels
    cfg = cfg_of(k)
    (lp,) = cfg.loops
    info = compute(k, "workgroup", set(), set())
    assert not exact_trips_uniform(k, cfg, lp, info)
    smt.fresh_context()
    assert smt.loop_trips_uniform(k, lp, info, "workgroup").verdict == "varying"
