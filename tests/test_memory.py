"""Shared memory (TL201-TL204): the acceptance verdicts, focused kernels in
hand-written PTX and Numba, and the barrier phases and trip relations of
`tolk_lint.analysis.memory`. The cp.async pipelines of the research note's
bug table, against its happens-before model, are `test_copy_pipelines.py`."""

from __future__ import annotations

import json
import re
import textwrap

import pytest
from conftest import ACCEPTANCE
from test_copy_pipelines import PIPE_HEAD, _copy  # the pipeline kernels' PTX

from tolk_lint.analysis import memory
from tolk_lint.analysis.buffers import is_barrier
from tolk_lint.analysis.memory.banks import _warp_offsets
from tolk_lint.analysis.memory.concrete import ConcretePairs
from tolk_lint.analysis.memory.copies import copy_walk
from tolk_lint.analysis.memory.evaluator import ThreadEval
from tolk_lint.config import resolve_settings
from tolk_lint.engine import lint_file, lint_text, parse, prepare
from tolk_lint.ir.opcodes import Opcode

TL2 = ("TL2",)


def lint(src: str, path: str, block=None, target=None, select=TL2):
    s = resolve_settings(target=target, block=block, select=select)
    res = lint_text(textwrap.dedent(src).lstrip("\n"), path, s)
    return res.diagnostics


def where(diags, code=None):
    out = set()
    for d in diags:
        if code is not None and d.code != code:
            continue
        line = d.origin.outermost().line if d.origin is not None else d.span.line
        out.add((d.code, line))
    return out


def facts_of(src: str, path: str, block=None):
    s = resolve_settings(block=block)
    m = parse(textwrap.dedent(src).lstrip("\n"), path)
    prepare(m, s)
    [k] = m.kernels
    return memory.memory_facts(k, m, s), k


# ---------------------------------------------------------------------------
# the acceptance set, TL2xx only


def _acceptance():
    path = ACCEPTANCE / "manifest.json"
    if not path.is_file():
        return []
    out = []
    for e in json.loads(path.read_text())["kernels"]:
        if e["language"] == "numba-host":
            continue
        for tgt in e["targets"]:
            if tgt in e.get("unasserted_targets", {}):
                continue
            linted = ACCEPTANCE / (e["ptx"][tgt] if e["language"] == "cuda" else e["file"])
            out.append(pytest.param(e, tgt, linted, id=f"{e['file']}[{tgt}]"))
    return out


@pytest.mark.parametrize(("entry", "target", "linted"), _acceptance())
def test_acceptance_tl2(entry, target, linted):
    block = tuple(entry["launch"]["block"]) if entry.get("launch") else None
    s = resolve_settings(target=target, block=block, select=TL2)
    diags = [d for d in lint_file(str(linted), s).diagnostics if d.kernel in (None, entry["kernel"])]
    got = {}
    for d in diags:
        line = d.origin.outermost().line if entry["language"] == "cuda" and d.origin else d.span.line
        got[(d.code, line)] = d
    expected = entry.get("expected_by_target", {}).get(target, entry["expected"])
    want = {(x["code"], x["line"]): x for x in expected if x["code"].startswith("TL2")}
    assert set(got) == set(want), "\n".join(f"{c}@{ln}: {d.message}" for (c, ln), d in got.items())
    for key, x in want.items():
        if "ways" in x:
            assert got[key].data.get("ways") == x["ways"]


# ---------------------------------------------------------------------------
# TL201


NEIGHBOUR_RACE = """
    from numba import cuda, float32

    @cuda.jit
    def k(x, out):
        s = cuda.shared.array(128, float32)
        t = cuda.threadIdx.x
        s[t] = x[t]
        out[t] = s[(t + 1) % 128]
"""


def test_race_points_at_the_later_access_and_names_the_other():
    diags = lint(NEIGHBOUR_RACE, "k.py", block=(128, 1, 1))
    assert where(diags) == {("TL201", 8)}
    [d] = diags
    assert "line 7" in d.message
    assert d.related and d.related[0].span.line == 7
    w = d.witness
    assert len(w["threads"]) == 2 and w["threads"][0] != w["threads"][1]
    assert "element" in w and "description" in w
    # the witness is a real collision: reader t reads (t + 1) % 128, written by the other thread
    (r,), (wr,) = ([t for t in w["threads"] if (t[0] + 1) % 128 == w["element"]],
                   [t for t in w["threads"] if t[0] == w["element"]])  # fmt: skip
    assert r != wr


def test_loop_with_one_barrier_races_across_trips():
    # the write of trip k + 1 and the read of trip k: no barrier on the back edge
    src = """
        from numba import cuda, float32

        @cuda.jit
        def k(x, out, n):
            s = cuda.shared.array(128, float32)
            t = cuda.threadIdx.x
            acc = float32(0.0)
            for i in range(n):
                s[t] = 2.0 * x[i * 128 + t]
                cuda.syncthreads()
                acc += s[127 - t]
            out[t] = acc
    """
    diags = lint(src, "k.py", block=(128, 1, 1))
    assert where(diags) == {("TL201", 9)}
    [d] = diags
    trips = d.witness["trips"]
    # the store of one thread is one trip after the load of the other
    values = sorted(v for side in trips.values() for v in side.values())
    assert values[1] == values[0] + 1


def test_loop_with_two_barriers_is_clean():
    src = """
        from numba import cuda, float32

        @cuda.jit
        def k(x, out, n):
            s = cuda.shared.array(128, float32)
            t = cuda.threadIdx.x
            acc = float32(0.0)
            for i in range(n):
                s[t] = 2.0 * x[i * 128 + t]
                cuda.syncthreads()
                acc += s[127 - t]
                cuda.syncthreads()
            out[t] = acc
    """
    assert lint(src, "k.py", block=(128, 1, 1)) == []


def test_write_write_of_the_same_value_says_so():
    src = """
        .version 8.0
        .target sm_80
        .address_size 64
        .visible .entry flag(.param .u32 n)
        {
            .shared .align 4 .b32 f;
            .reg .b32 %r<3>;
            ld.param.u32 %r1, [n];
            st.shared.u32 [f], %r1;
            bar.sync 0;
            ret;
        }
    """
    diags = lint(src, "k.ptx", block=(64, 1, 1))
    assert where(diags) == {("TL201", 9)}
    assert "same value" in diags[0].message
    assert diags[0].data["same_value"] is True


def test_atomics_do_not_race_with_atomics_but_with_plain_loads():
    src = """
        from numba import cuda, int32

        @cuda.jit
        def k(x, out):
            h = cuda.shared.array(16, int32)
            t = cuda.threadIdx.x
            if t < 16:
                h[t] = 0
            cuda.syncthreads()
            cuda.atomic.add(h, t % 16, 1)
            out[t] = h[(t + 1) % 16]
    """
    diags = lint(src, "k.py", block=(64, 1, 1))
    assert where(diags) == {("TL201", 11)}


def test_divergent_barrier_still_orders():
    # convention 3: a divergent barrier counts (its divergence is TL101's)
    src = """
        from numba import cuda, float32

        @cuda.jit
        def k(x, out):
            s = cuda.shared.array(64, float32)
            t = cuda.threadIdx.x
            s[t] = x[t]
            if x[0] > 0:
                cuda.syncthreads()
                out[t] = s[63 - t]
    """
    assert where(lint(src, "k.py", block=(64, 1, 1))) == set()


PTX_WARP = """
    .version 8.0
    .target sm_80
    .address_size 64
    .visible .entry k(.param .u64 y)
    {{
        .shared .align 4 .b8 s[1024];
        .reg .b32 %r<12>;
        .reg .f32 %f<2>;
        mov.u32 %r1, %tid.x;
        shl.b32 %r2, %r1, 2;
        mov.u32 %r3, s;
        add.s32 %r4, %r3, %r2;
        st.shared.u32 [%r4], %r1;
        bar.warp.sync -1;
        {index}
        shl.b32 %r6, %r5, 2;
        add.s32 %r7, %r3, %r6;
        ld.shared.u32 %r8, [%r7];
        ret;
    }}
"""


def test_syncwarp_orders_the_lanes_of_one_warp():
    # (t & ~31) | ((t + 1) & 31): the right neighbour inside t's warp
    idx = "add.s32 %r9, %r1, 1; and.b32 %r10, %r9, 31; and.b32 %r11, %r1, -32; or.b32 %r5, %r11, %r10;"
    assert lint(PTX_WARP.format(index=idx), "k.ptx", block=(256, 1, 1)) == []


def test_syncwarp_does_not_order_two_warps():
    idx = "add.s32 %r9, %r1, 32; and.b32 %r5, %r9, 255;"
    diags = lint(PTX_WARP.format(index=idx), "k.ptx", block=(256, 1, 1))
    assert where(diags) == {("TL201", 18)}
    a, b = diags[0].witness["threads"]
    assert a[0] // 32 != b[0] // 32


def test_reduction_with_halving_stride_is_clean():
    # `s //= 2` is a geometric counter: encoded in closed form, not as an unknown
    src = """
        from numba import cuda, float32

        @cuda.jit
        def k(x, out):
            buf = cuda.shared.array(256, float32)
            t = cuda.threadIdx.x
            buf[t] = x[t]
            cuda.syncthreads()
            s = 128
            while s > 0:
                if t < s:
                    buf[t] += buf[t + s]
                cuda.syncthreads()
                s //= 2
            if t == 0:
                out[0] = buf[0]
    """
    assert lint(src, "k.py", block=(256, 1, 1)) == []


def test_reduction_missing_barrier_races():
    src = """
        from numba import cuda, float32

        @cuda.jit
        def k(x, out):
            buf = cuda.shared.array(256, float32)
            t = cuda.threadIdx.x
            buf[t] = x[t]
            cuda.syncthreads()
            s = 128
            while s > 0:
                if t < s:
                    buf[t] += buf[t + s]
                s //= 2
            cuda.syncthreads()
            if t == 0:
                out[0] = buf[0]
    """
    assert where(lint(src, "k.py", block=(256, 1, 1))) == {("TL201", 12)}


# ---------------------------------------------------------------------------
# TL202


def test_oob_with_the_launch_shape():
    src = """
        from numba import cuda, float32

        @cuda.jit
        def k(x):
            tile = cuda.shared.array((16, 16), float32)
            tx = cuda.threadIdx.x
            ty = cuda.threadIdx.y
            tile[ty, tx] = x[ty * 16 + tx]
    """
    assert lint(src, "k.py", block=(16, 16, 1)) == []
    diags = lint(src, "k.py", block=(16, 32, 1))
    assert where(diags) == {("TL202", 8)}
    w = diags[0].witness
    assert w["threads"][0][1] >= 16
    assert "assuming" not in diags[0].message


def test_oob_without_the_launch_shape_says_what_it_assumed():
    src = """
        .version 8.0
        .target sm_80
        .address_size 64
        .visible .entry k()
        .maxntid 256, 1, 1
        {
            .shared .align 4 .b8 s[512];
            .reg .b32 %r<5>;
            mov.u32 %r1, %tid.x;
            shl.b32 %r2, %r1, 2;
            mov.u32 %r3, s;
            add.s32 %r4, %r3, %r2;
            st.shared.u32 [%r4], %r1;
            ret;
        }
    """
    diags = lint(src, "k.ptx")
    assert where(diags) == {("TL202", 13)}
    d = diags[0]
    assert "at most 256 threads (.maxntid" in d.message
    assert d.data["assumed"]
    assert d.witness["threads"][0][0] >= 128
    # with the launch shape given, nothing is assumed and nothing is wrong
    assert lint(src, "k.ptx", block=(128, 1, 1)) == []


def test_numba_negative_index_wraps_around():
    src = """
        from numba import cuda, float32

        @cuda.jit
        def k(x, y):
            s = cuda.shared.array(32, float32)
            t = cuda.threadIdx.x
            s[t] = x[t]
            cuda.syncthreads()
            y[t] = s[t - 32]
    """
    # -32..-1 is in bounds for Numba (it counts from the end)
    assert where(lint(src, "k.py", block=(32, 1, 1)), "TL202") == set()
    assert where(lint(src, "k.py", block=(64, 1, 1)), "TL202") == {("TL202", 7)}


# ---------------------------------------------------------------------------
# TL203


def test_bank_conflict_ways_and_padding():
    src = """
        from numba import cuda, float32

        @cuda.jit
        def k(x, y):
            tile = cuda.shared.array((32, {cols}), float32)
            tx = cuda.threadIdx.x
            ty = cuda.threadIdx.y
            tile[ty, tx] = x[ty * 32 + tx]
            cuda.syncthreads()
            y[ty * 32 + tx] = tile[tx, ty]
    """
    diags = lint(src.format(cols=32), "k.py", block=(32, 32, 1))
    assert where(diags) == {("TL203", 10)}
    d = diags[0]
    assert d.data["ways"] == 32 and d.severity.value == "info"
    assert "(32, 33)" in d.message
    assert lint(src.format(cols=33), "k.py", block=(32, 32, 1)) == []


@pytest.mark.parametrize(("stride", "ways"), [(1, 1), (2, 2), (4, 4), (8, 8), (3, 1), (32, 32), (0, 1)])
def test_bank_conflict_ways_by_stride(stride, ways):
    src = f"""
        from numba import cuda, float32

        @cuda.jit
        def k(x):
            s = cuda.shared.array(1024, float32)
            t = cuda.threadIdx.x
            s[t * {stride}] = x[t]
    """
    diags = lint(src, "k.py", block=(32, 1, 1), select=("TL203",))
    got = diags[0].data["ways"] if diags else 1
    assert got == ways


def test_two_byte_and_sixteen_byte_accesses_share_words():
    # 2-byte consecutive lanes: two lanes per word, no conflict; v4 loads: 8 lanes per phase
    src = """
        .version 8.0
        .target sm_80
        .address_size 64
        .visible .entry k()
        {
            .shared .align 16 .b8 s[4096];
            .reg .b32 %r<8>;
            .reg .b16 %h<2>;
            .reg .f32 %f<5>;
            mov.u32 %r1, %tid.x;
            shl.b32 %r2, %r1, 1;
            mov.u32 %r3, s;
            add.s32 %r4, %r3, %r2;
            ld.shared.u16 %h1, [%r4];
            shl.b32 %r5, %r1, 4;
            add.s32 %r6, %r3, %r5;
            ld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [%r6];
            ret;
        }
    """
    assert lint(src, "k.ptx", block=(32, 1, 1), select=("TL203",)) == []


# ---------------------------------------------------------------------------
# the phases and trip relations


def test_phase_relations_of_a_loop_with_one_barrier():
    src = """
        from numba import cuda, float32

        @cuda.jit
        def k(x, out, n):
            s = cuda.shared.array(128, float32)
            t = cuda.threadIdx.x
            acc = float32(0.0)
            for i in range(n):
                s[t] = x[i]
                cuda.syncthreads()
                acc += s[127 - t]
            out[t] = acc
    """
    mf, k = facts_of(src, "k.py", block=(128, 1, 1))
    store = next(a for a in mf.shared if a.kind == "write")
    load = next(a for a in mf.shared if a.kind == "read")
    bar = next(i for i in k.instrs() if is_barrier(i))
    reached = mf.phases.phase(bar, "workgroup")
    # after the barrier at trip k: the load at trip k, the store at trip k + 1
    assert {n for _lp, kind, n in next(iter(reached[load]))} == {0}
    assert [(kind, n) for _lp, kind, n in next(iter(reached[store]))] == [("rel", 1)]
    # the entry reaches the store at trip 0 (and the load only through the barrier)
    entry = mf.phases.phase(None, "workgroup")
    assert load not in entry
    assert [(kind, n) for _lp, kind, n in next(iter(entry[store]))] == [("abs", 0)]


def test_copy_walk_follows_the_group_queue():
    src = PIPE_HEAD + """
        // prologue: copy tile 0 into slot 0
        mov.u32 %r40, 0;
        {copy0}
        cp.async.commit_group;
        cp.async.wait_group 1;
        bar.sync 0;
        cp.async.wait_group 0;
        bar.sync 0;
        ret;
    }}
    """
    src = src.format(nbytes=2048, copy0=_copy(0, "%r40", 2, "C0"))
    mf, k = facts_of(src, "k.ptx", block=(256, 1, 1))
    [c] = [a for a in mf.shared if a.kind == "copy"]
    w = copy_walk(mf.phases, c)
    bars = [i for i in k.instrs() if is_barrier(i)]
    waits = [i for i in k.instrs() if i.op is Opcode.CP_ASYNC_WAIT]
    # wait_group 1 leaves the only group pending; wait_group 0 retires it
    assert {b for b, _v in w.bars} == {bars[0]}
    assert w.retiring == {waits[1]}
    assert {i for i, _n in w.short_waits} == {waits[0]}
    assert not w.never_retired


# -- no launch shape: the concrete pass runs the largest flat block ----------------------

FLAT_TILE = """
    .version 8.0
    .target sm_80
    .address_size 64
    .visible .entry tile(.param .u64 out)
    .maxntid 256, 1, 1
    {
        .shared .align 4 .b8 s[2048];
        .reg .b32 %r<8>;
        .reg .b64 %rd<4>;
        mov.u32 %r1, %tid.x;
        shl.b32 %r2, %r1, 2;
        mov.u32 %r3, s;
        add.u32 %r4, %r3, %r2;
        st.shared.u32 [%r4], %r1;
        st.shared.u32 [%r4+1024], %r1;
        OFFSET
        ld.shared.u32 %r6, [%r5];
        ret;
    }
"""


def test_flat_kernel_without_launch_shape_is_cleared_without_the_solver():
    """Reads only tid.x, bounded by .maxntid 256: each thread's two stores
    and its own read (no barrier, but the same thread) touch its own words.
    Every smaller flat block's threads are among the 256 evaluated, so the
    concrete pass clears all pairs and Z3 is never asked."""
    src = FLAT_TILE.replace("OFFSET", "add.u32 %r5, %r4, 1024;")
    f, _k = facts_of(src, "k.ptx")
    assert f.concrete_block == ((256, 1, 1), True)
    assert f.races() == [] and f.out_of_bounds() == []
    assert f.queries == 0 and f.concrete_cleared > 0


def test_flat_kernel_without_launch_shape_still_finds_the_race():
    """The read of the neighbour's word races with its store; the witness
    comes from the solver (the block is an assumption), within 256 threads."""
    src = FLAT_TILE.replace("OFFSET", "add.u32 %r5, %r4, 4;")
    diags = lint(src, "k.ptx")
    assert where(diags, "TL201") == {("TL201", 17)}
    assert diags[0].data["solver"] == "sat" and diags[0].data["other_line"] == 14
    m = re.search(r"threads (\d+) and (\d+) of a block of (\d+)x1x1", diags[0].message)
    assert m and max(int(m[1]), int(m[2])) < int(m[3]) <= 256, diags[0].message
    assert "at most 256 threads (.maxntid, one-dimensional" in diags[0].message


# ---------------------------------------------------------------------------
# the concrete pass's shortcuts, each against the plain computation it replaces


def _generated_facts(n: int):
    from kernelgen import generate

    for seed in range(n):
        g = generate(seed, mode="shared")
        k = g.kernel
        s = resolve_settings(block=g.block)
        yield memory.memory_facts(k, None, s), k


def test_forward_reach_bitsets_agree_with_a_walk():
    """`ProgramOrder.forward_reaches` (one bit set per block, built from the last block up)
    answers what a walk along the forward edges answers, for every pair."""
    checked = 0
    for f, k in _generated_facts(40):
        order = f.cfg.order
        for x in k.blocks:
            seen, stack = {x}, [x]
            while stack:
                z = stack.pop()
                for s2 in z.succs:
                    if order.get(s2, -1) > order.get(z, -1) and s2 not in seen:
                        seen.add(s2)
                        stack.append(s2)
            for y in k.blocks:
                assert f.order.forward_reaches(x, y) == (y in seen), (k.name, x.name, y.name)
                checked += 1
    assert checked > 500


def test_wrapped_lists_match_the_per_element_wrap():
    """`_wrap_list` leaves in-range lists as they are and wraps the others
    exactly as `_wrap_fn` does element by element, signed and unsigned."""
    import random

    f, k = facts_of(FLAT_TILE.replace("OFFSET", "add.u32 %r5, %r4, 4;"), "k.ptx")
    ev = ThreadEval(f, (64, 1, 1), f.info, {})
    rng = random.Random(7)
    values = {t: next(i.result for i in k.instrs() if i.results and i.result.type == t) for t in ("u32", "u64")}
    for t, v in values.items():
        bits = 32 if t == "u32" else 64
        for signed in (False, True):
            wrap = ev._wrap_fn(v, signed)
            for spread in (10, 1 << (bits - 1), 1 << (bits + 3)):
                xs = [rng.randrange(-spread, spread) for _ in range(64)]
                assert ev._wrap_list(v, signed, xs) == [wrap(x) for x in xs], (t, signed, spread)
            inside = [wrap(x) for x in range(64)]
            assert ev._wrap_list(v, signed, inside) is inside  # nothing to wrap: no copy


def test_footprints_decide_disjointness_as_byte_sets_do():
    """`ConcretePairs.disjoint` (extent first, then words when both accesses are
    word-aligned, else bytes) agrees with intersecting the plain byte sets of
    every pair of shared accesses the concrete pass can evaluate."""
    checked = 0
    for f, k in _generated_facts(60):
        pairs = ConcretePairs(f)
        ctx = ()
        terms = []
        for acc in f.shared:
            t = pairs.terms(acc, ctx) if acc.fragment is None else None
            if t is not None:
                terms.append((acc, t))
        for a, ta in terms:
            for b, tb in terms:
                if ta[3] != tb[3] or ta[0] != tb[0]:
                    continue

                def bytes_of(acc, t):
                    _s, cs, act, mod = t[:4]
                    return {(x + j) % mod if mod else x + j for i, x in enumerate(cs)
                            if act is None or act[i] for j in range(acc.width)}  # fmt: skip

                expect = not (bytes_of(a, ta) & bytes_of(b, tb))
                assert pairs.disjoint(a, ctx, ta, b, ctx, tb) == expect, (k.name, a.line, b.line)
                checked += 1
    assert checked > 200


def test_warp_offset_keys_tell_lane_patterns_apart_exactly():
    """`_warp_offsets`: two warps get the same key exactly when their lanes
    sit at the same offsets from their first lane; addresses too wide for
    int64 differences are left to the caller (None)."""
    import random

    rng = random.Random(3)
    for n in (32, 96, 100):
        base = [rng.choice((0, 4, 8)) * (i % 32) + rng.choice((0, 128, 4096)) for i in range(n)]
        keys = _warp_offsets(base)
        assert len(keys) == -(-n // 32)
        for w1 in range(len(keys)):
            for w2 in range(len(keys)):
                p1 = [x - base[w1 * 32] for x in base[w1 * 32 : w1 * 32 + 32]]
                p2 = [x - base[w2 * 32] for x in base[w2 * 32 : w2 * 32 + 32]]
                assert (keys[w1] == keys[w2]) == (p1 == p2)
    assert _warp_offsets([0, 1 << 63]) is None
    assert _warp_offsets([-(1 << 63), 0]) is None


def test_findings_do_not_depend_on_the_process():
    """Two runs with different hash seeds print the same report, witnesses
    included: the pairs are asked in program order, whatever order the phase
    walks found them in (cpasync_no_wait reported its TL204 for line 38 at
    PTX line 170 in one run and 188 in another)."""
    import os
    import subprocess
    import sys

    src = ACCEPTANCE / "cuda" / "cpasync_no_wait.sm80.ptx"
    if not src.is_file():
        pytest.skip(f"{src} is not there (../shared/acceptance beside the clone)")
    outs = []
    for seed in ("1", "7"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        r = subprocess.run([sys.executable, "-m", "tolk_lint", "check", "--no-cache", "--isolated", "-q", str(src)],
                           capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
        assert r.returncode == 1, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1]
    assert outs[0].count(": TL204 ") >= 3  # one per source line: the copies of lines 31 and 32, the read of line 37
