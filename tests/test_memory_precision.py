"""The memory analysis's precision on real shapes (issue 14), below the
fixtures: the loop invariants it proves, the counters it puts in closed
form, the witnesses it gives, and that the reasoning it adds never clears a
race or an out-of-bounds access the reference interpreter sees (generated
kernels with `min` bounds, ring counters and block-stride loops)."""

from __future__ import annotations

import random
import textwrap

import pytest

from tolk_lint.analysis import memory
from tolk_lint.analysis.memory.invariants import candidates
from tolk_lint.analysis.memory.loops import geometric_counters, ring_counters
from tolk_lint.analysis.memory.warp_masks import LaneClasses
from tolk_lint.config import resolve_settings
from tolk_lint.engine import parse, prepare
from tolk_lint.ir.cfg import cfg_of


def facts_of(src: str, path: str, block=None, name=None):
    s = resolve_settings(block=block)
    m = parse(textwrap.dedent(src).lstrip("\n"), path)
    prepare(m, s)
    ks = [k for k in m.kernels if name is None or k.name == name]
    return memory.memory_facts(ks[0], m, s), ks[0]


BLOCK_STRIDE = """
    .version 8.0
    .target sm_80
    .address_size 64
    .visible .entry fill(.param .u64 x)
    {
        .shared .align 4 .b8 s[1024];
        .reg .pred %p<2>;
        .reg .b32 %r<8>;
        .reg .f32 %f<2>;
        .reg .b64 %rd<4>;
        ld.param.u64 %rd1, [x];
        mov.u32 %r1, %tid.x;
        mov.u32 %r2, %ntid.x;
        mov.u32 %r3, s;
    $L_head:
        setp.ge.s32 %p1, %r1, LIMIT;
        @%p1 bra $L_done;
        mul.wide.s32 %rd2, %r1, 4;
        add.s64 %rd3, %rd1, %rd2;
        ld.global.f32 %f1, [%rd3];
        shl.b32 %r4, %r1, 2;
        add.s32 %r5, %r3, %r4;
        st.shared.f32 [%r5], %f1;
        add.s32 %r1, %r1, %r2;
        bra.uni $L_head;
    $L_done:
        ret;
    }
"""


def test_block_stride_counter_is_bounded_by_its_test():
    mf, k = facts_of(BLOCK_STRIDE.replace("LIMIT", "256"), "k.ptx")
    [lp] = cfg_of(k).loops
    facts = {(f.rel, f.offset) for f in mf.invariants.facts(lp) if f.bound is None}
    # at every visit of the header, the exit trip's too (where it is >= 256)
    assert ("ge", 0) in facts and ("lt", 256) not in facts
    assert mf.out_of_bounds() == []
    assert mf.races() == []  # i - tid is a multiple of the block size


def test_block_stride_one_past_the_end_is_found_with_a_real_witness():
    mf, _k = facts_of(BLOCK_STRIDE.replace("LIMIT", "257"), "k.ptx", block=(128, 1, 1))
    [oob] = mf.out_of_bounds()
    assert "byte offset 1024" in oob.detail
    (tid,) = oob.witness["threads"][0][:1]
    trip = next(iter(oob.witness["trips"].values()))
    assert tid + 128 * trip == 256  # the counter the witness names is the one that leaves


RING = """
    .version 8.0
    .target sm_80
    .address_size 64
    .visible .entry ring(.param .u64 x, .param .u32 n)
    {
        .shared .align 4 .b8 r[4096];
        .reg .pred %p<4>;
        .reg .b32 %r<12>;
        .reg .f32 %f<2>;
        .reg .b64 %rd<4>;
        ld.param.u64 %rd1, [x];
        ld.param.u32 %r1, [n];
        mov.u32 %r2, %tid.x;
        setp.ge.u32 %p1, %r2, 64;
        @%p1 bra $L_done;
        mov.u32 %r3, r;
        shl.b32 %r4, %r2, 2;
        add.s32 %r3, %r3, %r4;
        mov.u32 %r5, 0;
        mov.u32 %r6, 0;
    $L_head:
        setp.ge.s32 %p2, %r6, %r1;
        @%p2 bra $L_done;
        mul.wide.s32 %rd2, %r6, 4;
        add.s64 %rd3, %rd1, %rd2;
        ld.global.f32 %f1, [%rd3];
        shl.b32 %r7, %r5, 8;
        add.s32 %r8, %r3, %r7;
        st.shared.f32 [%r8], %f1;
        add.s32 %r5, %r5, 1;
        setp.eq.s32 %p3, %r5, WRAP;
        selp.b32 %r5, 0, %r5, %p3;
        add.s32 %r6, %r6, 1;
        bra.uni $L_head;
    $L_done:
        ret;
    }
"""


def test_ring_counter_closed_form_and_bounds():
    mf, k = facts_of(RING.replace("WRAP", "16"), "k.ptx")
    rings = ring_counters(k, mf.canon)
    assert [S for _start, S in rings.values()] == [16]
    assert mf.out_of_bounds() == []
    mf, _k = facts_of(RING.replace("WRAP", "17"), "k.ptx")
    assert len(mf.out_of_bounds()) == 1


def test_candidates_skip_counters_with_a_constant_step():
    # a constant step is exact in closed form: no question is spent on it
    mf, k = facts_of(RING.replace("WRAP", "16"), "k.ptx")
    [lp] = cfg_of(k).loops
    assert all(f.phi.name.startswith("%r5") for f in candidates(mf, lp))


def test_divergent_barrier_witness_names_threads_that_went_around_it():
    src = """
        from numba import cuda, float32

        @cuda.jit
        def k(a, out):
            s = cuda.shared.array(64, float32)
            t = cuda.threadIdx.x
            s[t] = a[t]
            if t < 32:
                cuda.syncthreads()
            out[t] = s[t ^ 1]
    """
    for block in ((64, 1, 1), None):
        mf, _k = facts_of(src, "k.py", block=block)
        [r] = [r for r in mf.races() if r.code == "TL201"]
        threads = [t[0] for t in r.witness["threads"]]
        assert all(t >= 32 for t in threads), threads  # the barrier orders threads 0..31


def test_guard_reads_one_value_of_one_word():
    src = """
        from numba import cuda, int32

        @cuda.jit
        def k(buf):
            sm = cuda.shared.array((4, 32), int32)
            x = cuda.threadIdx.x
            y = cuda.threadIdx.y
            sm[y, x] = buf[y, x]
            cuda.syncthreads()
            for k in range(32):
                if sm[y, x] == -1 and sm[y, k] != CMP:
                    sm[y, x] = sm[y, k]
                cuda.syncthreads()
            buf[y, x] = sm[y, x]
    """
    mf, _k = facts_of(src.replace("CMP", "-1"), "k.py", block=(32, 4, 1))
    assert [r for r in mf.races() if r.code == "TL201"] == []
    mf, _k = facts_of(src.replace("CMP", "0"), "k.py", block=(32, 4, 1))
    assert [r for r in mf.races() if r.code == "TL201"]


def test_two_shared_parameters_never_overlap():
    ptx = """
        .version 8.0
        .target sm_80
        .address_size 64
        .entry two_locals(.param .u64 .ptr .shared .align 4 a, .param .u64 .ptr .shared .align 4 b)
        {
            .reg .b32 %r<4>;
            .reg .b64 %rd<8>;
            ld.param.u64 %rd1, [a];
            ld.param.u64 %rd2, [b];
            mov.u32 %r1, %tid.x;
            mul.wide.u32 %rd3, %r1, 4;
            add.s64 %rd4, %rd1, %rd3;
            add.s64 %rd5, %rd2, %rd3;
            st.shared.u32 [%rd4], %r1;
            st.shared.u32 [%rd5+4], %r1;
            ret;
        }
    """
    mf, _k = facts_of(ptx, "k.ptx", block=(64, 1, 1))
    assert {a.root for a in mf.shared} == {"param:a", "param:b"}
    assert mf.races() == []  # b[t + 1] of one thread is never a[t'] of another


# -- generated kernels: what the added reasoning proves, against what is known ------------------


def _generated(seed: int) -> tuple[str, set[str]]:
    """A Numba kernel with a block-stride loop, a `min` bound and a ring slot,
    each at a size drawn from ``seed`` and sometimes one past its array, and
    the accesses that can leave their array (known by reasoning: with 32
    threads and any m, the loop reaches i = n; tx < min(m, n + 1) reaches s[n]
    only when n < 32; the ring reaches its last row + 1 once m > its rows)."""
    r = random.Random(seed)
    n = r.choice([16, 32, 64])
    over = [r.random() < 0.4 for _ in range(3)]
    rows = r.choice([4, 8, 16])
    src = f"""
from numba import cuda, float32

@cuda.jit
def k(a, out, m):
    s = cuda.shared.array({n}, float32)
    h = cuda.shared.array(({rows}, 32), float32)
    tx = cuda.threadIdx.x
    for i in range(tx, {n + int(over[0])}, cuda.blockDim.x):
        s[i] = a[i]  # stride
    cuda.syncthreads()
    j = min(m, {n + int(over[1])})
    if tx < j:
        out[tx] = s[tx]  # min
    slot = 0
    for i in range(m):
        h[slot, tx] = a[i]  # ring
        slot += 1
        if slot == {rows + int(over[2])}:
            slot = 0
"""
    bad = {tag for tag, b in (("stride", over[0]), ("min", over[1] and n < 32), ("ring", over[2])) if b}
    return src, bad


@pytest.mark.parametrize("seed", range(10))
def test_generated_bounds_are_exact(seed):
    """TL202 on a generated kernel is reported exactly where an index can
    leave its array: the invariants, `min` bounds and closed forms prove
    only what holds, and miss nothing."""
    src, bad = _generated(seed)
    mf, _k = facts_of(src, "k.py", block=(32, 1, 1))
    lines = textwrap.dedent(src).lstrip("\n").splitlines()
    tags = {lines[o.access.line - 1].rsplit("# ", 1)[-1] for o in mf.out_of_bounds()}
    assert tags == bad, src


PING_PONG = """
    from numba import cuda, float32

    @cuda.jit
    def k(x, y):
        buf = cuda.shared.array((2, 256), float32)
        t = cuda.threadIdx.x
        buf[0, t] = x[t]
        cuda.syncthreads()
        src = 0
        offset = 1
        while offset < 256:
            buf[1 - src, t] = buf[src, t]
            cuda.syncthreads()
            src = FLIP
            offset *= 2
        y[t] = buf[src, t]
"""


@pytest.mark.parametrize("flip, low, high", [("1 - src", 0, 1), ("src ^ 1", 0, 1), ("3 - src", 0, 3)])
def test_ping_pong_index_keeps_the_range_of_its_two_values(flip, low, high):
    mf, k = facts_of(PING_PONG.replace("FLIP", flip), "k.py", block=(256, 1, 1))
    [lp] = cfg_of(k).loops
    facts = {(f.phi.name.split(".")[0], f.rel, f.offset) for f in mf.invariants.facts(lp) if f.bound is None}
    assert ("src", "ge", low) in facts and ("src", "le", high) in facts
    # 3 - src leaves the two-row buffer at row 3; the others stay inside it
    assert bool(mf.out_of_bounds()) == (high > 1)


HALVING = """
    .version 8.0
    .target sm_80
    .address_size 64
    .visible .entry k(.param .u32 n)
    {
        .reg .pred %p<2>;
        .reg .b32 %r<8>;
        ld.param.u32 %r1, [n];
    $L_head:
        BIAS
        add.s32 %r3, %r1, %r2;
        shr.s32 %r1, %r3, SHIFT;
        setp.ne.s32 %p1, %r1, 0;
        @%p1 bra $L_head;
        ret;
    }
"""


@pytest.mark.parametrize("bias, shift, expected", [
    ("shr.u32 %r2, %r1, 31;", 1, ("right", 1, "trunc")),  # i /= 2
    ("shr.s32 %r4, %r1, 31;\n        shr.u32 %r2, %r4, 30;", 2, ("right", 2, "trunc")),  # i /= 4
    ("shr.u32 %r2, %r1, 30;", 1, None),  # a bias of 3 for a shift by 1: not C's division
])
def test_signed_halving_is_a_truncating_geometric_counter(bias, shift, expected):
    src = HALVING.replace("BIAS", bias).replace("SHIFT", str(shift))
    mf, k = facts_of(src, "k.ptx")
    got = [g[1:] for g in geometric_counters(k, mf.canon).values()]
    assert got == ([expected] if expected else [])


def test_tile_mask_from_the_rank_and_block_size_orders_one_tile():
    # cooperative groups' run-time tiled_partition(block, 16): the mask is
    # computed from the thread's rank and the block's size
    src = """
        from numba import cuda, int32

        @cuda.jit
        def k(out):
            x = cuda.shared.array(64, int32)
            r = cuda.threadIdx.x
            width = min(cuda.blockDim.x - (r & ~15), 16)
            cuda.syncwarp(((1 << width) - 1) << (cuda.laneid & 16))
            out[r] = x[r]
    """
    s = resolve_settings(block=(64, 1, 1))
    m = parse(textwrap.dedent(src).lstrip("\n"), "k.py")
    prepare(m, s)
    [k] = m.kernels
    classes = LaneClasses(k)
    [rel] = {r for r in classes.ids if r}
    pair = lambda a, b: rel >> (a * 32 + b) & 1  # noqa: E731
    assert pair(0, 15) and pair(16, 31) and not pair(15, 16) and not pair(0, 31)
    # a block of 24 threads: the second half-warp has 8 lanes, the mask names them only
    s = resolve_settings(block=(24, 1, 1))
    m = parse(textwrap.dedent(src).lstrip("\n"), "k.py")
    prepare(m, s)
    [rel] = {r for r in LaneClasses(m.kernels[0]).ids if r}
    assert rel >> (16 * 32 + 23) & 1 and not rel >> (15 * 32 + 16) & 1


HALVING_LOOPS = """
    .version 8.0
    .target sm_80
    .address_size 64
    .visible .entry halving(.param .u32 n)
    {
        .reg .pred %p<3>;
        .reg .b32 %r<12>;
        ld.param.u32 %r1, [n];
        mov.u32 %r2, %r1;
        mov.u32 %r3, 0;
    $L_counted:
        shr.u32 %r2, %r2, 1;
        add.s32 %r3, %r3, 1;
        setp.lt.u32 %p1, %r3, %r1;
        @%p1 bra $L_counted;
        mov.u32 %r4, %r1;
    $L_halving:
        shr.u32 %r4, %r4, 1;
        setp.ne.s32 %p2, %r4, 0;
        @%p2 bra $L_halving;
        ret;
    }
"""


def test_a_halving_counter_bounds_only_the_loop_whose_exit_tests_it():
    # The first loop halves %r2 but is left on the trip counter %r3 < n: it
    # may run n trips, long after %r2 is 0, so %r2 must not bound its trips.
    # The second loop is left when its halving counter reaches 0: fewer
    # than 32 trips.
    facts, _k = facts_of(HALVING_LOOPS, "halving.ptx")
    q = facts.query()
    bounded = {}
    for lp in facts.cfg.loops:
        bounded[lp.header.name] = bool(q.geometric(lp, q.z3.BitVecVal(40, 32)))
    assert bounded == {"$L_counted": False, "$L_halving": True}


GRID_STRIDE_SUM = """
from numba import cuda, float32

TPB = 128

@cuda.jit
def block_sum(values, partials):
    sm = cuda.shared.array(TPB, float32)
    tid = cuda.threadIdx.x
    acc = 0.0
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        acc += values[i]
    sm[tid] = acc
    cuda.syncthreads()
    if tid == 0:
        partials[cuda.blockIdx.x] = sm[0] + sm[TPB - 1]
"""


def test_loop_facts_proved_for_every_block_are_taken_under_a_contract(monkeypatch):
    # the grid-stride loop's facts, proved with no launch shape, hold for the
    # blocks of any contract: proving under one asks only about the others,
    # and ends with the same facts as a proof from scratch
    from tolk_lint.analysis.memory import invariants
    from tolk_lint.launch.choose import FOR_EVERY_BLOCK, forget, use
    from tolk_lint.launch.shapes import Contract, LaunchShape

    mf, k = facts_of(GRID_STRIDE_SUM, "k.py")
    [lp] = cfg_of(k).loops
    every_block = mf.invariants.facts(lp)
    assert every_block
    asked: list[int] = []
    real = invariants.LoopInvariants._houdini

    def houdini(self, enc, cands, cases, assume):
        asked.append(len(cands))
        return real(self, enc, cands, cases, assume)

    monkeypatch.setattr(invariants.LoopInvariants, "_houdini", houdini)
    contract = Contract(dims=(128, 1, 1), threads=128, family="box")
    use(k, LaunchShape(None, "test", "inferred", contract=contract))
    forget(k, FOR_EVERY_BLOCK)
    under = memory.memory_facts(k, None, resolve_settings()).invariants.facts(lp)
    seeded = list(asked)
    del asked[:]
    k._cache.pop(invariants.EVERY_BLOCK_FACTS)
    forget(k, FOR_EVERY_BLOCK)
    fresh = memory.memory_facts(k, None, resolve_settings()).invariants.facts(lp)
    assert {repr(f) for f in under} == {repr(f) for f in fresh} and set(map(repr, every_block)) <= set(map(repr, under))
    assert sum(seeded) < sum(asked)  # the known facts were not asked about again
