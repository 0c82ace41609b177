"""The reference interpreter (`tolk_lint.ir.interp`) on hand-built kernels,
on generated kernels (`tests/kernelgen.py`), and on the acceptance kernels
read by the front ends."""

from __future__ import annotations

import json
import random
import struct
import time

import pytest
from conftest import ACCEPTANCE
from hypothesis import HealthCheck, given, settings
from kernelgen import generate, kernels

from tolk_lint.ir import Buffer, Builder, Kernel, Param
from tolk_lint.ir.interp import NotSupported, run
from tolk_lint.ir.opcodes import Opcode as O

# ---------------------------------------------------------------------------
# a small kernel-building helper


class KB:
    """Builder with shorthands: straight-line code in the current block."""

    def __init__(self, name: str = "k", language: str = "ptx", block=None):
        self.k = Kernel(name, language, f"<test {name}>")
        if block:
            self.k.launch.block = block
        self.b = Builder(self.k)
        e = self.b.block("entry")
        self.b.position(e)
        self.b.seal(e)

    def param(self, name: str, t: str = "s32", kind: str = "scalar") -> object:
        self.k.params.append(Param(name, t, kind=kind, space="global" if kind == "pointer" else None))
        return self.b.value_of(O.PARAM, [], t, attrs={"name": name})

    def shared(self, name: str, dtype: str, n: int) -> object:
        self.k.buffers[name] = Buffer(name, "shared", dtype, (n,))
        return self.b.value_of(O.ADDR, [], "u32", attrs={"buffer": name})

    def sp(self, name: str, t: str = "u32"):
        return self.b.value_of(O.SPECIAL, [], t, attrs={"name": name})

    def c(self, x, t: str = "u32"):
        return self.b.const(x, t)

    def op(self, op, *args, t: str = "u32", **attrs):
        return self.b.value_of(op, list(args), t, attrs=attrs or None)

    def elem(self, base, idx, width: int = 4):
        return self.op(O.ADD, base, self.op(O.MUL, idx, self.c(width)))

    def st(self, addr, val, dtype: str = "s32", space: str = "shared"):
        self.b.emit(O.STORE, [addr, val], attrs={"space": space, "dtype": dtype})

    def ld(self, addr, dtype: str = "s32", space: str = "shared"):
        return self.b.emit(O.LOAD, [addr], (dtype,), attrs={"space": space, "dtype": dtype}).result

    def bar(self):
        return self.b.emit(O.BARRIER, [self.c(0)], attrs={"kind": "sync", "aligned": True})

    def if_(self, cond):
        """Start `if cond:`; returns the join block (call endif(join) after the body)."""
        then, join = self.b.block(), self.b.block()
        self.b.branch(cond, then, join)
        self.b.seal(then)
        self.b.position(then)
        return join

    def endif(self, join):
        if not self.b.terminated():
            self.b.jump(join)
        self.b.seal(join)
        self.b.position(join)

    def done(self) -> Kernel:
        if not self.b.terminated():
            self.b.ret()
        return self.b.finish()


def s32(buf: bytearray, i: int) -> int:
    return struct.unpack_from("<i", buf, 4 * i)[0]


# ---------------------------------------------------------------------------
# arithmetic


def test_integer_wrap_around_and_signedness():
    kb = KB()
    big = kb.c(0xFFFFFFFF, "u32")
    one = kb.c(1, "u32")
    add_u = kb.op(O.ADD, big, one, t="u32")
    smax = kb.c(0x7FFFFFFF, "s32")
    add_s = kb.op(O.ADD, smax, kb.c(1, "s32"), t="s32")
    mul_s = kb.op(O.MUL, kb.c(65536, "s32"), kb.c(65536, "s32"), t="s32")
    neg7 = kb.c(-7, "s32")
    div_t = kb.op(O.DIV, neg7, kb.c(2, "s32"), t="s32")
    div_f = kb.op(O.DIV, neg7, kb.c(2, "s32"), t="s32", floor=True)
    rem_t = kb.op(O.REM, neg7, kb.c(2, "s32"), t="s32")
    rem_f = kb.op(O.REM, neg7, kb.c(2, "s32"), t="s32", floor=True)
    div0 = kb.op(O.DIV, one, kb.c(0), t="u32")
    shr_s = kb.op(O.SHR, neg7, kb.c(1), t="s32")
    shr_u = kb.op(O.SHR, kb.c(0x80000000, "u32"), kb.c(31), t="u32")
    shl_over = kb.op(O.SHL, one, kb.c(40), t="u32")
    s8 = kb.op(O.ADD, kb.c(127, "s8"), kb.c(1, "s8"), t="s8")
    lt_s = kb.op(O.CMP, kb.c(-1, "s32"), kb.c(1, "s32"), t="pred", cmp="lt", signed=True)
    lt_u = kb.op(O.CMP, kb.c(-1, "s32"), kb.c(1, "s32"), t="pred", cmp="lt", signed=False)
    sext = kb.b.value_of(O.CVT, [neg7], "s64", attrs={"from_type": "s32"})
    zext = kb.b.value_of(O.CVT, [kb.c(0xFFFFFFFF, "u32")], "s64", attrs={"from_type": "u32"})
    trunc = kb.b.value_of(O.CVT, [kb.c(0x1_2345_6789, "u64")], "u32", attrs={"from_type": "u64"})
    f2i = kb.b.value_of(O.CVT, [kb.c(-2.7, "f32")], "s32", attrs={"from_type": "f32", "rnd": "rzi"})
    f2i_sat = kb.b.value_of(O.CVT, [kb.c(1e20, "f32")], "s32", attrs={"from_type": "f32", "rnd": "rzi"})
    fadd = kb.op(O.ADD, kb.c(0.1, "f32"), kb.c(0.2, "f32"), t="f32")
    wide = kb.op(O.MUL, kb.c(-3, "s32"), kb.c(0x40000000, "s32"), t="s64", wide=True)
    hi = kb.op(O.MUL, kb.c(0x80000000, "u32"), kb.c(4, "u32"), t="u32", hi=True)
    sel = kb.b.value_of(O.SELECT, [lt_s, kb.c(10, "s32"), kb.c(20, "s32")], "s32")
    r = run(kb.done(), (1, 1, 1))
    v = {k: d[0] for k, d in r.values.items()}
    assert v[add_u] == 0
    assert v[add_s] == -(2**31)
    assert v[mul_s] == 0
    assert (v[div_t], v[div_f], v[rem_t], v[rem_f]) == (-3, -4, -1, 1)
    assert v[div0] == 0 and any("division by zero" in n for n in r.notes)
    assert v[shr_s] == -4 and v[shr_u] == 1 and v[shl_over] == 0
    assert v[s8] == -128
    assert v[lt_s] is True and v[lt_u] is False
    assert v[sext] == -7 and v[zext] == 0xFFFFFFFF and v[trunc] == 0x23456789
    assert v[f2i] == -2 and v[f2i_sat] == 2**31 - 1
    assert v[fadd] == struct.unpack("<f", struct.pack("<f", 0.1 + 0.2))[0] != 0.1 + 0.2
    assert v[wide] == -3 * 0x40000000
    assert v[hi] == 2
    assert v[sel] == 10


def test_phis_are_parallel_copies():
    """A loop that swaps a and b each trip: both PHIs read the old values."""
    kb = KB()
    b = kb.b
    b.write("a", kb.c(1, "s32"))
    b.write("b", kb.c(2, "s32"))
    b.write("i", kb.c(0, "s32"))
    h, body, ex = b.block("h"), b.block("body"), b.block("ex")
    b.jump(h)
    b.position(h)
    cond = kb.op(O.CMP, b.read("i"), kb.c(3, "s32"), t="pred", cmp="lt", signed=True)
    b.branch(cond, body, ex)
    b.seal(body)
    b.seal(ex)
    b.position(body)
    a, bb = b.read("a"), b.read("b")
    b.write("a", bb)
    b.write("b", a)
    b.write("i", kb.op(O.ADD, b.read("i"), kb.c(1, "s32"), t="s32"))
    b.jump(h)
    b.seal(h)
    b.position(ex)
    out_a, out_b = b.read("a"), b.read("b")
    r = run(kb.done(), (1, 1, 1))
    assert (r.values[out_a][0], r.values[out_b][0]) == (2, 1)  # three swaps
    assert r.history[out_a][0] == [1, 2, 1, 2]


def test_specials_and_thread_shape():
    kb = KB()
    names = ["tid.x", "tid.y", "ntid.x", "ntid.y", "laneid", "warpid", "ctaid.x", "nctaid.x", "warpsize"]
    vals = [kb.sp(n) for n in names]
    r = run(kb.done(), (8, 6, 1), ctaid=(3, 0, 0), grid=(5, 1, 1))
    got = {n: r.values[v] for n, v in zip(names, vals)}
    assert got["tid.x"][13] == 5 and got["tid.y"][13] == 1
    assert got["laneid"][40] == 8 and got["warpid"][40] == 1
    assert set(got["ntid.x"].values()) == {8} and set(got["ntid.y"].values()) == {6}
    assert set(got["ctaid.x"].values()) == {3} and set(got["nctaid.x"].values()) == {5}
    assert len(got["tid.x"]) == 48 and set(got["warpsize"].values()) == {32}
    assert r.differs(vals[0]) and not r.differs(vals[2])


def test_match_redux_and_packed_cvt():
    kb = KB()
    b = kb.b
    lane = kb.sp("laneid")
    full = kb.c(0xFFFFFFFF)
    half = kb.op(O.SHR, lane, kb.c(4))
    many = b.emit(O.MATCH, [half, full], ("b32",), attrs={"mode": "any"}).result
    alls = b.emit(O.MATCH, [half, full], ("b32", "pred"), attrs={"mode": "all"})
    tot = b.emit(O.REDUX, [lane, full], ("u32",), attrs={"op": "add"}).result
    mx = b.emit(O.REDUX, [lane, full], ("u32",), attrs={"op": "max"}).result
    packed = b.emit(
        O.CVT, [kb.c(1.0, "f32"), kb.c(-2.0, "f32")], ("f16x2",), attrs={"from_type": "f32"}
    ).result
    r = run(kb.done(), (32, 1, 1))
    assert r.values[many][3] == 0xFFFF and r.values[many][20] == 0xFFFF0000
    assert set(r.values[alls.results[1]].values()) == {False}
    assert set(r.values[tot].values()) == {sum(range(32))} and set(r.values[mx].values()) == {31}
    assert r.values[packed][0] == (0x3C00 << 16) | 0xC000


def test_instances_compare_trip_by_trip():
    """Inside a loop whose trips differ, a value of the trip number agrees trip
    by trip; read after the loop, it differs (temporal divergence)."""
    kb = KB()
    b = kb.b
    tid = kb.sp("tid.x")
    b.write("i", kb.c(0))
    h, body, ex = b.block("h"), b.block("body"), b.block("ex")
    b.jump(h)
    b.position(h)
    i = b.read("i")
    b.branch(kb.op(O.CMP, i, kb.op(O.AND, tid, kb.c(3)), t="pred", cmp="lt"), body, ex)
    b.seal(body)
    b.seal(ex)
    b.position(body)
    twice = kb.op(O.MUL, b.read("i"), kb.c(2))
    b.write("i", kb.op(O.ADD, b.read("i"), kb.c(1)))
    b.jump(h)
    b.seal(h)
    b.position(ex)
    after = kb.op(O.ADD, b.read("i"), kb.c(0))
    r = run(kb.done(), (8, 1, 1))
    assert not r.differs(twice, by="instance") and r.differs(twice)  # last values differ
    assert r.differs(after, by="instance")
    assert r.instances[twice][(2,)] == {3: 4, 7: 4}


def test_numpy_arrays_and_shapes():
    np = pytest.importorskip("numpy")
    kb = KB(language="python")
    a = kb.param("a", "ptr", kind="pointer")
    n = kb.b.value_of(O.PARAM, [], "s64", attrs={"name": "a.shape[1]"})
    tid = kb.sp("tid.x", "s64")
    addr = kb.op(O.ADD, a, kb.op(O.MUL, tid, kb.c(8, "s64"), t="s64"), t="ptr")
    x = kb.ld(addr, "f64", "global")
    kb.st(
        addr,
        kb.op(O.MUL, x, kb.b.value_of(O.CVT, [n], "f64", attrs={"from_type": "s64"}), t="f64"),
        "f64",
        "global",
    )
    arr = np.arange(6, dtype=np.float64).reshape(2, 3)
    r = run(kb.done(), (6, 1, 1), {}, {"a": arr})
    assert r.values[n][0] == 3
    assert (r.memory["a"] == arr * 3).all() and r.memory["a"].shape == (2, 3)


# ---------------------------------------------------------------------------
# barriers, hangs, early returns


def _reduction(n_threads: int, with_barriers: bool = True) -> tuple[Kernel, object]:
    """s[t] = t; tree sum with a barrier per level; thread 0 reads s[0]."""
    kb = KB("reduce")
    b = kb.b
    s = kb.shared("s", "s32", n_threads)
    tid = kb.sp("tid.x")
    a = kb.elem(s, tid)
    kb.st(a, tid)
    if with_barriers:
        kb.bar()
    b.write("st", kb.c(n_threads // 2))
    h, body, latch, ex = b.block("h"), b.block("body"), b.block("latch"), b.block("ex")
    b.jump(h)
    b.position(h)
    st = b.read("st")
    b.branch(kb.op(O.CMP, tid, st, t="pred", cmp="lt", signed=False), body, latch)
    b.seal(body)
    b.position(body)
    x = kb.ld(a)
    y = kb.ld(kb.elem(a, b.read("st")))
    kb.st(a, kb.op(O.ADD, x, y, t="s32"))
    b.jump(latch)
    b.seal(latch)
    b.position(latch)
    if with_barriers:
        kb.bar()
    nxt = kb.op(O.SHR, b.read("st"), kb.c(1))
    b.write("st", nxt)
    b.branch(kb.op(O.CMP, nxt, kb.c(0), t="pred", cmp="gt"), h, ex)
    b.seal(h)
    b.seal(ex)
    b.position(ex)
    total = kb.ld(s)
    return kb.done(), total


def test_shared_reduction_with_barriers_sums():
    k, total = _reduction(128)
    r = run(k, (128, 1, 1))
    assert r.ok and r.hang is None and not r.partial
    assert r.races == [] and r.async_hazards == []
    assert s32(r.memory["s"], 0) == sum(range(128))
    assert set(r.values[total].values()) == {sum(range(128))}
    assert len({tuple(c.items()) for c in [r.barrier_counts[i] for i in r.barrier_counts]}) >= 1
    for counts in r.barrier_counts.values():
        assert set(counts.values()) in ({1}, {7})


def test_reduction_without_barriers_races():
    k, _ = _reduction(64, with_barriers=False)
    r = run(k, (64, 1, 1))
    assert r.hang is None
    kinds = {x.kind for x in r.races}
    assert "read-write" in kinds
    # the race detector does not depend on the order threads run in
    r2 = run(k, (64, 1, 1), schedule="reverse")
    assert {(x.kind, x.first.id, x.second.id) for x in r.races} | {
        (x.kind, x.second.id, x.first.id) for x in r.races
    } >= {(x.kind, x.first.id, x.second.id) for x in r2.races}


def test_barrier_under_tid_branch_is_a_partial_arrival():
    kb = KB()
    tid = kb.sp("tid.x")
    join = kb.if_(kb.op(O.CMP, tid, kb.c(16), t="pred", cmp="lt"))
    bar = kb.bar()
    kb.endif(join)
    r = run(kb.done(), (64, 1, 1))
    assert r.hang is None
    (p,) = r.partial
    assert p.kind == "barrier" and p.instr is bar
    assert p.arrived == tuple(range(16)) and p.exited == tuple(range(16, 64))
    assert bar in r.divergent_barriers and not r.ok


def test_barrier_under_tid_branch_then_another_barrier_hangs():
    kb = KB()
    tid = kb.sp("tid.x")
    join = kb.if_(kb.op(O.CMP, tid, kb.c(16), t="pred", cmp="lt"))
    inner = kb.bar()
    kb.endif(join)
    outer = kb.bar()
    r = run(kb.done(), (64, 1, 1))
    h = r.hang
    assert h is not None and h.kind == "barrier"
    assert {h.instr} | set(h.elsewhere.values()) == {inner, outer}
    assert sorted(h.arrived + tuple(h.elsewhere)) == list(range(64))
    assert "hang" in h.message


def test_early_return_before_barrier_is_recorded():
    kb = KB()
    n = kb.param("n")
    tid = kb.sp("tid.x")
    b = kb.b
    ret, cont = b.block("ret"), b.block("cont")
    b.branch(kb.op(O.CMP, tid, n, t="pred", cmp="ge", signed=True), ret, cont)
    b.seal(ret)
    b.seal(cont)
    b.position(ret)
    b.ret()
    b.position(cont)
    bar = kb.bar()
    k = kb.done()
    r = run(k, (64, 1, 1), {"n": 40})
    assert r.hang is None
    (p,) = r.partial
    assert p.instr is bar and p.exited == tuple(range(40, 64)) and len(p.arrived) == 40
    assert set(r.exits) == set(range(64))
    # every thread reaches it when n covers the block
    assert run(k, (64, 1, 1), {"n": 64}).ok


def test_barrier_in_loop_with_varying_trip_count():
    kb = KB()
    b = kb.b
    tid = kb.sp("tid.x")
    trips = kb.op(O.AND, tid, kb.c(3))
    b.write("i", kb.c(0))
    h, body, ex = b.block("h"), b.block("body"), b.block("ex")
    b.jump(h)
    b.position(h)
    b.branch(kb.op(O.CMP, b.read("i"), trips, t="pred", cmp="lt"), body, ex)
    b.seal(body)
    b.seal(ex)
    b.position(body)
    bar = kb.bar()
    b.write("i", kb.op(O.ADD, b.read("i"), kb.c(1)))
    b.jump(h)
    b.seal(h)
    b.position(ex)
    r = run(kb.done(), (32, 1, 1))
    assert r.hang is None and r.partial and r.partial[0].instr is bar
    assert set(r.barrier_counts[bar].values()) == {1, 2, 3}


def test_step_limit_is_reported_not_hung():
    kb = KB()
    b = kb.b
    h = b.block("h")
    b.jump(h)
    b.position(h)
    kb.op(O.ADD, kb.c(1), kb.c(2))
    b.jump(h)
    b.seal(h)
    r = run(kb.done(), (2, 1, 1), max_steps=1000)
    assert r.hang is not None and r.hang.kind == "step-limit" and r.hang.thread == 0


def test_syncthreads_count():
    kb = KB()
    tid = kb.sp("tid.x")
    p = kb.op(O.CMP, tid, kb.c(10), t="pred", cmp="lt")
    cnt = kb.b.emit(O.BARRIER, [p], ("u32",), attrs={"kind": "red", "op": "popc"}).result
    anyp = kb.b.emit(O.BARRIER, [p], ("pred",), attrs={"kind": "red", "op": "or"}).result
    allp = kb.b.emit(O.BARRIER, [p], ("pred",), attrs={"kind": "red", "op": "and"}).result
    r = run(kb.done(), (64, 1, 1))
    assert set(r.values[cnt].values()) == {10}
    assert set(r.values[anyp].values()) == {True} and set(r.values[allp].values()) == {False}


# ---------------------------------------------------------------------------
# warp collectives


def test_shuffle_xor_reduction_gives_the_warp_sum():
    kb = KB()
    b = kb.b
    tid = kb.sp("tid.x")
    full = kb.c(0xFFFFFFFF)
    v = tid
    for k in (16, 8, 4, 2, 1):
        sh = b.emit(O.SHUFFLE, [v, kb.c(k), kb.c(31), full], ("u32", "pred"), attrs={"mode": "bfly"}).result
        v = kb.op(O.ADD, v, sh)
    r = run(kb.done(), (64, 1, 1))
    assert r.ok
    got = r.values[v]
    assert all(got[t] == sum(range(32)) for t in range(32))
    assert all(got[t] == sum(range(32, 64)) for t in range(32, 64))


def test_shuffle_modes_follow_ptx_clamps():
    kb = KB()
    b = kb.b
    lane = kb.sp("laneid")
    full = kb.c(0xFFFFFFFF)
    up = b.emit(O.SHUFFLE, [lane, kb.c(1), kb.c(0), full], ("u32", "pred"), attrs={"mode": "up"})
    down = b.emit(O.SHUFFLE, [lane, kb.c(4), kb.c(31), full], ("u32", "pred"), attrs={"mode": "down"})
    idx = b.emit(O.SHUFFLE, [lane, kb.c(5), kb.c(31), full], ("u32", "pred"), attrs={"mode": "idx"})
    seg = b.emit(
        O.SHUFFLE, [lane, kb.c(1), kb.c(0x1F | (0x18 << 8)), full], ("u32", "pred"), attrs={"mode": "down"}
    )
    r = run(kb.done(), (32, 1, 1))
    val = lambda ins, t: r.values[ins.results[0]][t]
    ok = lambda ins, t: r.values[ins.results[1]][t]
    assert val(up, 0) == 0 and not ok(up, 0) and val(up, 7) == 6 and ok(up, 7)
    assert val(down, 27) == 31 and val(down, 28) == 28 and not ok(down, 28)
    assert {val(idx, t) for t in range(32)} == {5}
    assert val(seg, 3) == 4 and val(seg, 7) == 7  # width 8: lane 7 is the end of its segment


def test_vote_ballot_and_activemask():
    kb = KB()
    b = kb.b
    lane = kb.sp("laneid")
    full = kb.c(0xFFFFFFFF)
    odd = kb.op(O.CMP, kb.op(O.AND, lane, kb.c(1)), kb.c(1), t="pred", cmp="eq")
    ballot = b.emit(O.VOTE, [odd, full], ("u32",), attrs={"mode": "ballot"}).result
    anyv = b.emit(O.VOTE, [odd, full], ("pred",), attrs={"mode": "any"}).result
    allv = b.emit(O.VOTE, [odd, full], ("pred",), attrs={"mode": "all"}).result
    join = kb.if_(kb.op(O.CMP, lane, kb.c(8), t="pred", cmp="lt"))
    am = b.emit(O.ACTIVEMASK, [], ("u32",)).result
    kb.endif(join)
    r = run(kb.done(), (32, 1, 1))
    assert set(r.values[ballot].values()) == {0xAAAAAAAA}
    assert set(r.values[anyv].values()) == {True} and set(r.values[allv].values()) == {False}
    assert r.values[am] == {t: 0xFF for t in range(8)}


def test_full_mask_shuffle_under_lane_branch_is_divergent():
    kb = KB()
    b = kb.b
    lane = kb.sp("laneid")
    join = kb.if_(kb.op(O.CMP, lane, kb.c(16), t="pred", cmp="lt"))
    shf = b.emit(
        O.SHUFFLE, [lane, kb.c(1), kb.c(31), kb.c(0xFFFFFFFF)], ("u32", "pred"), attrs={"mode": "bfly"}
    )
    kb.endif(join)
    r = run(kb.done(), (32, 1, 1))
    (p,) = r.partial
    assert p.kind == "collective" and p.instr is shf and p.exited == tuple(range(16, 32))
    # with another collective after the join, the lanes that skipped it wait there: a hang
    kb2 = KB()
    lane = kb2.sp("laneid")
    join = kb2.if_(kb2.op(O.CMP, lane, kb2.c(16), t="pred", cmp="lt"))
    kb2.b.emit(O.WARP_SYNC, [kb2.c(0xFFFFFFFF)])
    kb2.endif(join)
    kb2.b.emit(O.WARP_SYNC, [kb2.c(0xFFFFFFFF)])
    h = run(kb2.done(), (32, 1, 1)).hang
    assert h is not None and h.kind == "collective"


def test_partial_mask_naming_the_branch_lanes_is_fine():
    kb = KB()
    b = kb.b
    lane = kb.sp("laneid")
    join = kb.if_(kb.op(O.CMP, lane, kb.c(16), t="pred", cmp="lt"))
    b.emit(O.SHUFFLE, [lane, kb.c(1), kb.c(31), kb.c(0xFFFF)], ("u32", "pred"), attrs={"mode": "bfly"})
    kb.endif(join)
    r = run(kb.done(), (32, 1, 1))
    assert r.ok


# ---------------------------------------------------------------------------
# races


def _neighbour(barrier: bool, warp_sync: bool = False, block=(64, 1, 1)) -> tuple[Kernel, object, object]:
    kb = KB()
    s = kb.shared("s", "s32", 128)
    tid = kb.sp("tid.x")
    store = kb.b.emit(O.STORE, [kb.elem(s, tid), tid], attrs={"space": "shared", "dtype": "s32"})
    if barrier:
        kb.bar()
    if warp_sync:
        kb.b.emit(O.WARP_SYNC, [kb.c(0xFFFFFFFF)])
    nb = kb.elem(s, kb.op(O.AND, kb.op(O.ADD, tid, kb.c(1)), kb.c(block[0] - 1)))
    load = kb.b.emit(O.LOAD, [nb], ("s32",), attrs={"space": "shared", "dtype": "s32"})
    return kb.done(), store, load


def test_race_detected_without_barrier_and_not_with_one():
    k, store, load = _neighbour(barrier=False)
    r = run(k, (64, 1, 1))
    (race,) = r.races
    assert race.kind == "read-write" and {race.first, race.second} == {store, load}
    assert race.threads[0] != race.threads[1] and race.buffer == "s" and not race.same_value
    assert not race.async_copy
    k, _, _ = _neighbour(barrier=True)
    assert run(k, (64, 1, 1)).races == []


def test_warp_sync_orders_lanes_of_its_warp_only():
    k, _, _ = _neighbour(barrier=False, warp_sync=True, block=(32, 1, 1))
    assert run(k, (32, 1, 1)).races == []
    k, _, _ = _neighbour(barrier=False, warp_sync=True, block=(64, 1, 1))
    r = run(k, (64, 1, 1))
    assert r.races and all({t // 32 for t in x.threads} == {0, 1} for x in r.races)


def test_write_write_race_and_same_value():
    for value, same in ((7, True), (None, False)):
        kb = KB()
        s = kb.shared("s", "s32", 4)
        tid = kb.sp("tid.x")
        kb.st(s, kb.c(value, "s32") if value is not None else tid)
        r = run(kb.done(), (8, 1, 1))
        (race,) = r.races
        assert race.kind == "write-write" and race.first is race.second and race.same_value is same


def test_atomics_do_not_race_with_atomics():
    kb = KB()
    s = kb.shared("s", "s32", 4)
    tid = kb.sp("tid.x")
    old = kb.b.emit(
        O.ATOMIC, [s, kb.c(1, "s32")], ("s32",), attrs={"op": "add", "space": "shared", "dtype": "s32"}
    )
    kb.b.emit(
        O.ATOMIC, [kb.elem(s, kb.c(1)), tid], ("s32",), attrs={"op": "max", "space": "shared", "dtype": "s32"}
    )
    r = run(kb.done(), (64, 1, 1))
    assert r.races == []
    assert s32(r.memory["s"], 0) == 64 and s32(r.memory["s"], 1) == 63
    assert sorted(r.values[old.result].values()) == list(range(64))
    # a plain read of the counter in the same epoch races with the atomics
    kb = KB()
    s = kb.shared("s", "s32", 4)
    kb.b.emit(O.ATOMIC, [s, kb.c(1, "s32")], ("s32",), attrs={"op": "add", "space": "shared", "dtype": "s32"})
    kb.ld(s)
    assert {x.kind for x in run(kb.done(), (8, 1, 1)).races} == {"read-write"}


def test_atomic_ops():
    kb = KB()
    s = kb.shared("s", "u32", 8)
    tid = kb.sp("tid.x")
    ops = {"exch": [tid], "cas": [kb.c(0), kb.c(99)], "inc": [kb.c(5)], "and": [kb.c(0xF0)], "xor": [kb.c(1)]}
    for i, (op, vals) in enumerate(ops.items()):
        kb.b.emit(
            O.ATOMIC,
            [kb.elem(s, kb.c(i)), *vals],
            ("u32",),
            attrs={"op": op, "space": "shared", "dtype": "u32"},
        )
    r = run(kb.done(), (8, 1, 1))
    words = struct.unpack("<8I", r.memory["s"][:32])
    assert words[1] == 99  # the first CAS succeeds, the rest fail
    assert words[2] == 8 % 6  # inc wraps at 5: 1,2,3,4,5,0,1,2
    assert words[3] == 0 and words[4] == 0  # 8 xors of 1
    assert r.races == []


# ---------------------------------------------------------------------------
# cp.async


def _pipeline(wait: bool, barrier: bool, read_other: bool = True) -> tuple[Kernel, object, object]:
    kb = KB("cp")
    kb.k.params.append(Param("g", "u64", kind="pointer", space="global"))
    g = kb.b.value_of(O.PARAM, [], "u64", attrs={"name": "g"})
    s = kb.shared("s", "s32", 256)
    tid = kb.sp("tid.x")
    dst = kb.elem(s, tid, 16)
    src = kb.op(
        O.ADD,
        g,
        kb.b.value_of(O.CVT, [kb.op(O.MUL, tid, kb.c(16))], "u64", attrs={"from_type": "u32"}),
        t="u64",
    )
    cp = kb.b.emit(O.CP_ASYNC, [dst, src], attrs={"bytes": 16, "cache": "cg"})
    kb.b.emit(O.CP_ASYNC_COMMIT, [])
    if wait:
        kb.b.emit(O.CP_ASYNC_WAIT, [], attrs={"n": 0})
    if barrier:
        kb.bar()
    who = kb.op(O.XOR, tid, kb.c(1)) if read_other else tid
    load = kb.b.emit(O.LOAD, [kb.elem(s, who, 16)], ("s32",), attrs={"space": "shared", "dtype": "s32"})
    return kb.done(), cp, load


def test_cp_async_read_before_wait_is_flagged():
    k, cp, load = _pipeline(wait=False, barrier=True)
    gm = {"g": list(range(256))}
    r = run(k, (32, 1, 1), global_mem=gm)
    kinds = {h.kind for h in r.async_hazards}
    assert "read-before-wait" in kinds
    h = next(h for h in r.async_hazards if h.kind == "read-before-wait")
    assert h.copy is cp and h.access is load
    # under the latest-landing policy thread 0 read the old bytes (copies never
    # retired land when their thread exits)
    assert r.values[load.result][0] == 0
    assert "never-retired" in kinds


def test_cp_async_wait_without_barrier_and_correct_pipeline():
    gm = {"g": list(range(256))}
    k, _cp, load = _pipeline(wait=True, barrier=False)
    r = run(k, (32, 1, 1), global_mem=gm)
    assert {h.kind for h in r.async_hazards} == {"read-before-barrier"}
    assert all(x.async_copy for x in r.races)
    # reading one's own chunk needs only the wait
    k, _, _ = _pipeline(wait=True, barrier=False, read_other=False)
    assert run(k, (32, 1, 1), global_mem=gm).async_hazards == []
    k, _cp, load = _pipeline(wait=True, barrier=True)
    for policy in ("latest", "earliest"):
        r = run(k, (32, 1, 1), global_mem=gm, cp_async_policy=policy)
        assert r.async_hazards == [] and r.races == [] and r.ok
        assert r.values[load.result] == {t: (t ^ 1) * 4 for t in range(32)}


def test_cp_async_wait_group_counts():
    """Two groups; wait_group 1 retires only the older one."""
    kb = KB("cp2")
    kb.k.params.append(Param("g", "u64", kind="pointer", space="global"))
    g = kb.b.value_of(O.PARAM, [], "u64", attrs={"name": "g"})
    s = kb.shared("s", "s32", 64)
    tid = kb.sp("tid.x")
    off = kb.b.value_of(O.CVT, [kb.op(O.MUL, tid, kb.c(16))], "u64", attrs={"from_type": "u32"})
    for slot in (0, 1):
        dst = kb.op(O.ADD, kb.op(O.ADD, s, kb.c(slot * 128)), kb.op(O.MUL, tid, kb.c(16)))
        src = kb.op(O.ADD, kb.op(O.ADD, g, kb.c(slot * 128, "u64"), t="u64"), off, t="u64")
        kb.b.emit(O.CP_ASYNC, [dst, src], attrs={"bytes": 16})
        kb.b.emit(O.CP_ASYNC_COMMIT, [])
    kb.b.emit(O.CP_ASYNC_WAIT, [], attrs={"n": 1})
    first = kb.ld(kb.op(O.MUL, tid, kb.c(16)) if False else kb.op(O.ADD, s, kb.op(O.MUL, tid, kb.c(16))))
    second = kb.ld(kb.op(O.ADD, kb.op(O.ADD, s, kb.c(128)), kb.op(O.MUL, tid, kb.c(16))))
    r = run(kb.done(), (8, 1, 1), global_mem={"g": list(range(64))})
    assert r.values[first][2] == 8
    bad = [h for h in r.async_hazards if h.kind == "read-before-wait"]
    assert [h.access for h in bad] == [second.defn]


# ---------------------------------------------------------------------------
# memory plumbing


def test_global_arrays_params_and_out_of_bounds():
    kb = KB()
    x = kb.param("x", "u64", kind="pointer")
    n = kb.param("n", "s32")
    tid = kb.sp("tid.x")
    v = kb.ld(
        kb.op(
            O.ADD,
            x,
            kb.b.value_of(O.CVT, [kb.op(O.MUL, tid, kb.c(4))], "u64", attrs={"from_type": "u32"}),
            t="u64",
        ),
        "f32",
        "global",
    )
    kb.st(
        kb.op(
            O.ADD,
            x,
            kb.b.value_of(O.CVT, [kb.op(O.MUL, tid, kb.c(4))], "u64", attrs={"from_type": "u32"}),
            t="u64",
        ),
        kb.op(O.MUL, v, kb.c(2.0, "f32"), t="f32"),
        "f32",
        "global",
    )
    loc = kb.b.value_of(O.ADDR, [], "u32", attrs={"buffer": "l"})
    kb.k.buffers["l"] = Buffer("l", "local", "s32", (2,))
    kb.st(loc, kb.op(O.ADD, tid, n, t="s32"), space="local")
    back = kb.ld(loc, space="local")
    kb.st(kb.op(O.ADD, loc, kb.c(8)), tid, space="local")  # past the end of l
    r = run(kb.done(), (4, 1, 1), {"n": 100}, {"x": [1.5, 2.5, 3.5]})
    assert r.memory["x"] == [3.0, 5.0, 7.0]
    assert r.values[back] == {0: 100, 1: 101, 2: 102, 3: 103}
    assert {o.space for o in r.oob} == {"global", "local"}  # x[3], l[2]
    assert struct.unpack("<ii", r.local_memory["l"][2]) == (102, 0)


def test_unsupported_ops_raise():
    kb = KB()
    kb.b.emit(O.OPAQUE, [], ("b32",), attrs={"text": "foo"})
    with pytest.raises(NotSupported):
        run(kb.done(), (1, 1, 1))


# ---------------------------------------------------------------------------
# generated kernels


def test_generated_kernels_run(record_property=None):
    t0 = time.process_time()
    seen: dict[str, int] = {}
    for seed in range(200):
        g = generate(seed)
        k, block, _params = g
        assert k.launch.block == block
        r = g.run()
        for key, hit in (
            ("hang", r.hang is not None and r.hang.kind != "step-limit"),
            ("step-limit", r.hang is not None and r.hang.kind == "step-limit"),
            ("partial", bool(r.partial)),
            ("ok", r.ok),
            ("race", bool(r.races)),
        ):
            seen[key] = seen.get(key, 0) + hit
    dt = time.process_time() - t0
    # both correct and buggy kernels come out, and none runs away
    assert seen["ok"] > 50 and seen["hang"] + seen["partial"] > 20 and seen["step-limit"] == 0
    assert dt < 60


def test_generated_shared_kernels_run():
    seen = {"race": 0, "async": 0, "clean": 0, "pipeline": 0}
    for seed in range(100):
        g = generate(seed, mode="shared")
        r = g.run()
        assert r.hang is None or r.hang.kind != "step-limit"
        assert not r.oob
        seen["race"] += any(not x.async_copy for x in r.races)
        seen["async"] += bool(r.async_hazards)
        seen["clean"] += not r.races and not r.async_hazards
        seen["pipeline"] += any(f.startswith("cp.async") for f in g.features)
    assert all(v > 5 for v in seen.values()), seen


def test_generated_correct_pipelines_are_clean():
    """Unmutated pipelines never show a hazard; each mutation shows one for
    some inputs (checked over the population)."""
    mutated_hits: dict[str, int] = {}
    forms = set()
    for seed in range(120):
        g = generate(seed, mode="shared", pipeline_only=True)
        forms |= {f for f in g.features if f.startswith("cp.async")}
        r = g.run(record_history=False)
        hz = [h for h in r.async_hazards if h.kind != "never-retired"]
        muts = {f for f in g.features if f.startswith("mut-")} - {"mut-own_chunk"}
        if not muts:
            assert hz == [], (g, r.summary())
        for m in muts:
            mutated_hits[m] = mutated_hits.get(m, 0) + bool(hz)
    assert mutated_hits.get("mut-no_wait", 0) > 0 and mutated_hits.get("mut-wait_plus", 0) > 0
    assert forms == {"cp.async-A", "cp.async-C", "cp.async-single"}


def test_generated_kernels_are_deterministic():
    a, b = generate(11), generate(11)
    assert a.source == b.source and a.params == b.params
    ra, rb = a.run(), b.run()
    assert ra.steps == rb.steps and len(ra.races) == len(rb.races)
    other = a.random_params(random.Random(3))
    assert set(other) == {"n", "m"}
    a.run(params=other)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernels())
def test_kernels_strategy(g):
    r = g.run()
    assert r.hang is None or r.hang.kind != "step-limit"


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernels(mode="shared", block_sizes=(32, 64)))
def test_shared_kernels_strategy(g):
    assert g.block[0] in (32, 64)
    g.run()


# ---------------------------------------------------------------------------
# the acceptance kernels, through the front ends


def _frontend(rel: str):
    path = ACCEPTANCE / rel
    if not path.is_file():
        pytest.skip(f"{path} is not there (the acceptance set beside the clone)")
    text = path.read_text()
    try:
        if rel.endswith(".py"):
            from tolk_lint.frontends.python import parse_python

            return parse_python(text, str(path))
        from tolk_lint.frontends.ptx import parse_ptx

        return parse_ptx(text, str(path))
    except ImportError:  # pragma: no cover - front ends land separately
        pytest.skip("front end not available")


def _manifest_cases():
    if not (ACCEPTANCE / "manifest.json").exists():
        return []
    man = json.loads((ACCEPTANCE / "manifest.json").read_text())
    out = []
    for e in man["kernels"]:
        if e["language"] == "numba-host":
            continue
        rel = e["file"] if e["language"] == "numba" else e["ptx"].get("sm_80")
        if rel is None:
            continue
        out.append(pytest.param(e, rel, id=rel))
    return out


def _line(ins, language: str):
    if ins is None:
        return None
    if language == "cuda":
        return ins.origin.outermost().line if ins.origin is not None else None
    return ins.span.line if ins.span is not None else None


def _implied(r, language: str) -> set[tuple[str, int]]:
    """The diagnostics a run's observations imply: a partial barrier or hang
    (TL101/TL102), a divergent collective (TL103), a race at its later line
    (TL201), a cp.async hazard at the line TL204 points at, an
    out-of-bounds access (TL202)."""
    out: set[tuple[str, int]] = set()
    for p in r.partial:
        out.add(("TL103" if p.kind == "collective" else "TL10x", _line(p.instr, language)))
    if r.hang is not None and r.hang.kind != "step-limit":
        out.add(("TL103" if r.hang.kind == "collective" else "TL10x", _line(r.hang.instr, language)))
    for x in r.races:
        if not x.async_copy:
            out.add(("TL201", max(_line(x.first, language), _line(x.second, language))))
    for h in r.async_hazards:
        if h.kind == "never-retired":
            continue
        at = h.copy if h.kind == "copy-into-read" else h.access
        out.add(("TL204", _line(at, language)))
    for o in r.oob:
        out.add(("TL202", _line(o.instr, language)))
    return out


# kernels whose bugs a run shows with the inputs below (the others depend on data or on
# the order threads run in, or are about performance)
_SHOWN = {
    "TL101": "all", "TL103": "all", "TL201": "all", "TL202": "all", "TL204": "all",
    "TL102": {"cuda/block_stride_loop.sm80.ptx", "numba/block_stride_loop.py", "cuda/global_bound.sm80.ptx"},
}  # fmt: skip


@pytest.mark.parametrize("entry,rel", _manifest_cases())
def test_acceptance_kernel_runs_agree_with_manifest(entry, rel):
    mod = _frontend(rel)
    (k,) = [k for k in mod.kernels if k.name == entry["kernel"]]
    language = entry["language"]
    block = tuple(entry["launch"]["block"])
    params: dict = {}
    gm: dict = {}
    for p in k.params:
        if p.kind == "pointer" or p.dtype in ("u64", "b64", "ptr"):
            gm[p.name] = [i % 7 + 1 for i in range(1 << 16)]
        else:
            params[p.name] = 64  # fewer than a block's threads: early returns and stride loops show
        for axis in range(2):
            params[f"{p.name}.shape[{axis}]"] = 64
    if all(d["code"].startswith(("TL3", "TL203")) for d in entry["expected"]):
        params = {name: 16 for name in params}  # performance findings: one tile is enough
    try:
        r = run(
            k, block, params, gm, global_dtypes={n: "f32" for n in gm} if language == "numba" else None,
            record_history=False,
        )  # fmt: skip
    except NotSupported as e:
        assert "wmma" in str(e) or "mma" in str(e)  # tensor cores are not executed
        return
    expected = {(d["code"], d["line"]) for d in entry["expected"]}
    loose = {("TL10x", line) if code in ("TL101", "TL102") else (code, line) for code, line in expected}
    implied = _implied(r, language)
    assert implied <= loose, f"observed {sorted(implied - loose)} not in the manifest\n{r.summary()}"
    for code, line in expected:
        shown = _SHOWN.get(code)
        if shown == "all" or (shown and rel in shown):
            key = ("TL10x", line) if code in ("TL101", "TL102") else (code, line)
            assert key in implied, f"{code}@{line} not observed\n{r.summary()}"
    if entry["clean"]:
        assert r.ok and not r.races and not r.async_hazards and not r.oob


def test_acceptance_warp_reduce_numba_sums():
    mod = _frontend("numba/warp_reduce.py")
    (k,) = mod.kernels
    x = [float(i % 5) for i in range(256)]
    r = run(k, (256, 1, 1), {"n": 200}, {"x": x, "out": [0.0]})
    assert r.ok and r.races == []
    assert r.memory["out"] == [sum(x[:200])]


def test_acceptance_race_neighbor_ptx():
    mod = _frontend("cuda/race_neighbor.sm80.ptx")
    (k,) = mod.kernels
    p0, p1, p2 = (p.name for p in k.params)
    r = run(k, (256, 1, 1), {p2: 256}, {p0: [float(i) for i in range(256)], p1: [0.0] * 256})
    assert [x.kind for x in r.races] == ["read-write"]
    race = r.races[0]
    assert {_line(race.first, "cuda"), _line(race.second, "cuda")} == {12, 13}
    fixed = _frontend("cuda/race_neighbor_fixed.sm80.ptx").kernels[0]
    q0, q1, q2 = (p.name for p in fixed.params)
    r = run(fixed, (256, 1, 1), {q2: 256}, {q0: [float(i) for i in range(256)], q1: [0.0] * 256})
    assert r.ok and r.races == []
    assert r.memory[q1][:4] == [1.0, 1.0, 1.0, 1.0]  # right - s[t] after the barrier


def test_acceptance_broadcast_without_barrier_diverges_in_some_order():
    """A race on the trip count shows as divergent barriers when thread 0 writes last."""
    mod = _frontend("cuda/broadcast_no_barrier.sm80.ptx")
    (k,) = mod.kernels
    gm = {p.name: [3] * 512 for p in k.params}
    fwd = run(k, (256, 1, 1), {}, gm)
    rev = run(k, (256, 1, 1), {}, gm, schedule="reverse")
    assert fwd.races and rev.races
    assert fwd.ok and not rev.ok  # thread 0 runs 3 passes, the others none


def test_races_and_hazards_do_not_depend_on_the_schedule():
    """Shared-mode kernels address memory by thread index only, so every
    schedule sees the same races and cp.async hazards."""

    def key(r):
        races = {(x.kind, frozenset((x.first.id, x.second.id)), x.async_copy) for x in r.races}
        hazards = {(h.kind, h.copy.id, h.access.id if h.access else None) for h in r.async_hazards}
        return races, hazards

    for seed in range(40):
        g = generate(seed, mode="shared")
        runs = [g.run(record_history=False, schedule=s) for s in ("forward", "reverse", seed)]
        if any(r.hang for r in runs):
            continue
        assert key(runs[0]) == key(runs[1]) == key(runs[2]), g
