"""Shared memory: accesses, barrier phases, happens-before, and the cp.async group queue.

The facts behind TL201 (shared-race), TL202 (shared-out-of-bounds), TL203
(bank-conflict) and TL204 (async-copy-hazard), computed once per kernel by
`memory_facts` (what `RuleContext.memory()` calls and caches).

Accesses
    Every LOAD / STORE / ATOMIC / WMMA_LOAD / WMMA_STORE / LDMATRIX /
    STMATRIX in shared (or local) space, and the destination of every
    CP_ASYNC, becomes an `Access`: its instruction, its kind (``read``,
    ``write``, ``atomic``, ``copy``), the buffer its address points into (by
    root: ``ADDR(buffer)`` through additions, conversions and PHIs), and its
    footprint (byte address and width; a wmma fragment covers its rows at
    the stride given). Python accesses also keep their index tuple.

Barrier phases (what orders two accesses)
    A *phase* starts at the kernel's entry or just after a barrier and runs
    along every barrier-free path. Two accesses of two distinct threads are
    unordered exactly when some phase start reaches both without a barrier
    (acceptance convention 3: a barrier lies between them on both threads'
    paths or they race; a divergent barrier still counts). Because every
    thread crosses the barriers in the same order, the threads that start a
    phase at the same barrier instance share the trip counters of the loops
    around it; so each reached access carries, per loop around it, its trip
    *relative* to the phase start: ``rel n`` (the start's trip + n, after n
    back edges), ``abs n`` (the loop was entered on the way: trip n), or
    ``free`` (a barrier-free cycle: any trip). In a loop with one barrier
    the read at trip k and the write at trip k + 1 are thus in one phase
    unless a barrier lies on the back-edge path between them.
    ``bar.warp.sync`` / ``cuda.syncwarp()`` with the full mask end a phase
    for two lanes of one warp: pairs of one warp are checked against the
    warp-level phases, pairs of two warps against the workgroup-level ones.

cp.async (PTX ISA; research/staging.md 2.2 and Appendix B)
    A copy's write lands at an unknown moment between the copy and the
    CP_ASYNC_WAIT that retires its group *on the copying thread*
    (``wait_group N`` retires every group but the newest N committed ones;
    uncommitted copies are never covered; ``wait_all`` covers everything),
    and it is visible to other threads only after a barrier that follows
    that wait. For each copy a walk from it follows the thread's own group
    queue (commits counted along the path) until the retiring wait and the
    barrier after it: the barriers crossed before that are the phases in
    which the copy is still *pending* for other threads, the accesses met
    before the wait are the copying thread's own hazards. Trips are tracked
    relative to the copy (trip k; a slot index ``k mod S`` is then an
    expression of ``k`` for Z3), so the proof holds for every trip, not for
    a few unrolled ones.

Z3 (`tolk_lint.analysis.smt`)
    Each candidate pair (same buffer root, one access at least writing, not
    two atomics) is encoded for two threads with the `smt.Encoder`: both
    addresses, the launch shape, each thread's loop trips (from the
    relations above, with "the thread did not leave the loop before this
    trip"), and the path conditions under which each access runs. SAT: a
    race, with the witness (threads, trips, inputs, address). UNSAT: the
    pair is ordered or disjoint. UNKNOWN: reported anyway, saying the
    solver gave up (DESIGN.md: an UNKNOWN never becomes "race-free").

Bank conflicts
    For a warp's access, the addresses of its 32 lanes are evaluated lane by
    lane (`_LaneEval`): thread indices concrete (from the launch shape and
    the warp), everything the same across the warp symbolic. When every
    active lane's address is one symbolic base plus a lane-specific
    constant, the number of distinct 4-byte words per bank is exact
    (acceptance convention 6); otherwise the access is not judged.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable

from tolk_lint.analysis import smt
from tolk_lint.analysis.uniform import barrier_functions, is_barrier
from tolk_lint.ir.cfg import Loop
from tolk_lint.ir.nodes import Block, Buffer, Instr, Kernel, Module, Value, is_float, is_signed, type_bits
from tolk_lint.ir.opcodes import Opcode

log = logging.getLogger("tolk_lint.memory")
O = Opcode

CAP = 4  # back edges counted exactly along a barrier-free path (beyond: any trip)
TRIP_BOUND = 1 << 28  # no loop of a kernel runs more trips than this
MAX_PAIRS = 6000  # candidate pairs per kernel before the analysis gives up precision
SHARED_WINDOW = 1 << 24  # shared addresses live below this

STATS = {"kernels": 0, "queries": 0, "seconds": 0.0, "pairs": 0}

ACCESS_OPS = frozenset({O.LOAD, O.STORE, O.ATOMIC, O.CP_ASYNC, O.WMMA_LOAD, O.WMMA_STORE, O.LDMATRIX, O.STMATRIX})
READ_OPS = frozenset({O.LOAD, O.WMMA_LOAD, O.LDMATRIX})
WRITE_OPS = frozenset({O.STORE, O.WMMA_STORE, O.STMATRIX})


# ---------------------------------------------------------------------------
# accesses


@dataclass(eq=False)
class Access:
    """One shared- or local-memory access of a kernel."""

    instr: Instr
    kind: str  # "read" | "write" | "atomic" | "copy"
    space: str  # "shared" | "local"
    root: str | None  # the buffer its address points into (None: unknown)
    buffer: Buffer | None
    addr: Value | None  # byte address
    base: Value | None  # the ADDR value of ``root`` (PTX), for offsets
    width: int  # bytes per thread (wmma: see ``fragment``)
    elem: int  # bytes of one element (vector accesses: width = elem * lanes)
    index: tuple | None = None  # Python: the index values, one per dimension
    fragment: tuple | None = None  # wmma: (rows, row_bytes, stride Value | None, elem bytes)
    order: int = 0  # position in the kernel's layout (program order tie-break)

    @property
    def writes(self) -> bool:
        return self.kind in ("write", "atomic", "copy")

    @property
    def reads(self) -> bool:
        return self.kind in ("read", "atomic")

    @property
    def line(self) -> int:
        return _line(self.instr)

    def describe(self) -> str:
        return {"read": "reads", "write": "writes", "atomic": "atomically updates", "copy": "copies into"}[self.kind]


def _line(ins: Instr | None) -> int:
    if ins is None:
        return 0
    if ins.origin is not None:
        return ins.origin.outermost().line
    return ins.span.line if ins.span is not None else 0


def _where(ins: Instr | None) -> str:
    return f"line {_line(ins)}"


def _text(ins: Instr, limit: int = 60) -> str:
    t = (ins.text or ins.op.value).strip().rstrip(";")
    return t if len(t) <= limit else t[: limit - 3] + "..."


_MANGLED = re.compile(r"_ZZ\d+\w*?E(\d+)(\w+)")


def pretty_buffer(name: str | None) -> str:
    """``_ZZ14tile_diff_raceE1s`` -> ``s`` (a function-local static)."""
    if not name:
        return "shared memory"
    m = re.fullmatch(r"_ZZ(\d+)(\w+)", name)
    if m:
        n = int(m.group(1))
        rest = m.group(2)[n:]
        if rest.startswith("E"):
            m2 = re.match(r"E(\d+)(\w+)", rest)
            if m2:
                return m2.group(2)[: int(m2.group(1))]
    return name


class _Canon:
    """Redundant PHI webs (``%r.0 = phi(%v, %r.1)``, ``%r.1 = phi(%r.0, %r.0)``)
    all equal their one value from outside the web (Braun et al. 2013, 3.2)."""

    def __init__(self, kernel: Kernel):
        self.map: dict[Value, Value] = {}
        phis = [i for i in kernel.instrs() if i.op is O.PHI]
        done: set[Value] = set()
        for p in phis:
            v = p.result
            if v in done:
                continue
            web: set[Value] = set()
            outer: set[Value] = set()
            stack = [v]
            while stack and len(outer) < 2:
                x = stack.pop()
                if x in web:
                    continue
                web.add(x)
                for a in x.defn.args:
                    if a.defn is not None and a.defn.op is O.PHI:
                        if a not in web:
                            stack.append(a)
                    else:
                        outer.add(a)
            if len(outer) == 1 and not stack:
                (o,) = outer
                for x in web:
                    self.map[x] = o
                    done.add(x)
            else:
                done.add(v)

    def __call__(self, v: Value) -> Value:
        return self.map.get(v, v)


def _root(v: Value, canon: _Canon, depth: int = 0, seen: set | None = None) -> Value | None:
    """The ADDR value an address is computed from, or None."""
    if depth > 64:
        return None
    v = canon(v)
    d = v.defn
    if d is None:
        return None
    if d.op is O.ADDR:
        return v
    if d.op in (O.ADD, O.SUB) and d.args:
        cands = [_root(a, canon, depth + 1, seen) for a in (d.args if d.op is O.ADD else d.args[:1])]
        found = [c for c in cands if c is not None]
        if len(found) == 1 or (found and all(f.defn.attrs.get("buffer") == found[0].defn.attrs.get("buffer") for f in found)):
            return found[0]
        return None
    if d.op is O.MAD and len(d.args) == 3:
        return _root(d.args[2], canon, depth + 1, seen)
    if d.op is O.CVT and d.args:
        return _root(d.args[0], canon, depth + 1, seen)
    if d.op is O.SELECT and len(d.args) == 3:
        a, b = _root(d.args[1], canon, depth + 1, seen), _root(d.args[2], canon, depth + 1, seen)
        if a is not None and b is not None and a.defn.attrs.get("buffer") == b.defn.attrs.get("buffer"):
            return a
        return None
    if d.op is O.PHI:
        seen = set() if seen is None else seen
        if v in seen:
            return None
        seen.add(v)
        roots = [_root(a, canon, depth + 1, seen) for a in d.args if canon(a) is not v]
        roots = [r for r in roots]
        known = [r for r in roots if r is not None]
        # operands that come back around the loop to this phi give None: ignore them
        if known and all(r.defn.attrs.get("buffer") == known[0].defn.attrs.get("buffer") for r in known):
            return known[0]
        return None
    return None


def _space(ins: Instr) -> str:
    sp = ins.attrs.get("space")
    if ins.op is O.CP_ASYNC:
        return "shared"
    if sp:
        return sp
    if ins.op in (O.LDMATRIX, O.STMATRIX):
        return "shared"
    return "generic"


def _bytes_of(dtype: str | None) -> int:
    if not dtype:
        return 4
    return max(1, type_bits(dtype) // 8)


def collect_accesses(kernel: Kernel, canon: _Canon | None = None) -> list[Access]:
    canon = canon or _Canon(kernel)
    addr_values: dict[str, Value] = {}
    for ins in kernel.instrs():
        if ins.op is O.ADDR and ins.attrs.get("buffer") not in addr_values:
            addr_values[ins.attrs.get("buffer")] = ins.result
    out: list[Access] = []
    order = 0
    for b in kernel.blocks:
        for ins in b.instrs:
            order += 1
            if ins.op not in ACCESS_OPS or not ins.args:
                continue
            space = _space(ins)
            name = ins.attrs.get("buffer")
            if ins.op is O.CP_ASYNC:
                name = ins.attrs.get("buffer")
            base = None
            if isinstance(name, str) and name in kernel.buffers:
                base = addr_values.get(name)
            else:
                name = None
            if name is None:
                r = _root(ins.args[0], canon)
                if r is not None:
                    name = r.defn.attrs.get("buffer")
                    base = r
            buf = kernel.buffers.get(name) if name else None
            if buf is not None and space in ("generic", ""):
                space = buf.space
            if space not in ("shared", "local"):
                continue
            if buf is not None and buf.space not in ("shared", "local"):
                continue
            kind = "copy" if ins.op is O.CP_ASYNC else "atomic" if ins.op is O.ATOMIC else \
                "read" if ins.op in READ_OPS else "write"  # fmt: skip
            dtype = ins.attrs.get("dtype")
            elem = _bytes_of(dtype) if dtype else (_bytes_of(buf.dtype) if buf is not None else 4)
            fragment = None
            if ins.op is O.LOAD:
                width = elem * max(1, len(ins.results))
            elif ins.op is O.STORE:
                n = len(ins.args) - 1
                if ins.attrs.get("gate") is True or ins.attrs.get("gated") is True:
                    n -= 1
                width = elem * max(1, n)
            elif ins.op is O.ATOMIC:
                width = elem
            elif ins.op is O.CP_ASYNC:
                width = int(ins.attrs.get("bytes") or 16)
            elif ins.op in (O.LDMATRIX, O.STMATRIX):
                width = 16
            else:  # wmma fragments
                fragment = _fragment(ins, elem)
                width = fragment[0] * fragment[1]
            index = ins.attrs.get("index") if kernel.language == "python" else None
            if not isinstance(index, tuple) or not all(isinstance(x, Value) for x in index):
                index = None
            out.append(Access(ins, kind, space, name, buf, ins.args[0], base, width, elem, index, fragment, order))
    return out


def _fragment(ins: Instr, elem: int) -> tuple:
    """(rows, row bytes, stride value or None, element bytes) of a wmma fragment."""
    shape = ins.attrs.get("shape") or "m16n16k16"
    m = re.fullmatch(r"m(\d+)n(\d+)k(\d+)", shape)
    M, N, K = (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else (16, 16, 16)
    which = ins.attrs.get("matrix") or "c"
    rows, cols = {"a": (M, K), "b": (K, N)}.get(which, (M, N))
    if ins.attrs.get("layout") == "col":
        rows, cols = cols, rows
    stride = None
    if ins.op is O.WMMA_LOAD and len(ins.args) > 1:
        stride = ins.args[1]
    elif ins.op is O.WMMA_STORE and ins.attrs.get("has_stride"):
        stride = ins.args[-1]
    dt = ins.attrs.get("dtype")
    e = _bytes_of(dt) if dt else elem
    return rows, cols * e, stride, e


# ---------------------------------------------------------------------------
# phases: barrier-free reachability with loop-trip relations

Vec = tuple  # ((Loop, kind, n), ...) outer loop first; kind in "rel" "abs" "free"


@dataclass(frozen=True)
class PendingWalk:
    """What the walk from one cp.async found."""

    bars: frozenset  # (barrier instr, Vec relative to the copy): phases where the copy is pending
    own: frozenset  # (Access, Vec relative to the copy): the copying thread's accesses before retirement
    retiring: frozenset  # CP_ASYNC_WAIT instrs that retire it on some path
    short_waits: frozenset  # (wait instr, commits seen) that left it pending
    uncommitted_waits: frozenset  # waits reached with the copy not committed yet
    never_retired: bool  # some path ends the kernel with it pending


class Phases:
    """Barrier-free reachability over a kernel, at the workgroup or warp level."""

    def __init__(self, kernel: Kernel, module: Module | None, accesses: list[Access]):
        self.k = kernel
        self.cfg = kernel.cfg()
        self.by_instr = {a.instr: a for a in accesses}
        self.holders = barrier_functions(module) if module is not None else set()
        self._phase_cache: dict[tuple, dict[Access, set[Vec]]] = {}
        self._loops_outer: dict[Block, tuple[Loop, ...]] = {}
        self.has_warp_sync = any(self._warp_boundary(i) for i in kernel.instrs())

    def loops(self, b: Block) -> tuple[Loop, ...]:
        got = self._loops_outer.get(b)
        if got is None:
            got = self._loops_outer[b] = tuple(reversed(self.cfg.loops_around(b)))
        return got

    def vec0(self, b: Block) -> Vec:
        return tuple((lp, "rel", 0) for lp in self.loops(b))

    def boundary(self, ins: Instr, level: str) -> bool:
        if is_barrier(ins):
            return True
        if ins.op is O.CALL and ins.attrs.get("callee") in self.holders:
            return True
        return level == "warp" and self._warp_boundary(ins)

    def _warp_boundary(self, ins: Instr) -> bool:
        if ins.op is not O.WARP_SYNC or not ins.args:
            return False
        d = ins.args[0].defn
        if d is not None and d.op is O.CONST and isinstance(d.attrs.get("value"), int):
            return (d.attrs["value"] & 0xFFFFFFFF) == 0xFFFFFFFF
        return False

    def step(self, vec: Vec, x: Block, y: Block) -> Vec:
        old = {lp: (k, n) for lp, k, n in vec}
        out = []
        for lp in self.loops(y):
            if lp in old:
                k, n = old[lp]
                if y is lp.header and k != "free":
                    n += 1
                    if n > CAP:
                        k, n = "free", 0
                out.append((lp, k, n))
            else:
                out.append((lp, "abs", 0) if y is lp.header else (lp, "free", 0))
        return tuple(out)

    def starts(self, level: str) -> list[Instr | None]:
        out: list[Instr | None] = [None]
        for ins in self.k.instrs():
            if self.boundary(ins, level):
                out.append(ins)
        return out

    def phase(self, start: Instr | None, level: str) -> dict[Access, set[Vec]]:
        """Accesses reached from ``start`` (None: the entry) with no boundary,
        each with the trip relations it can be reached at."""
        key = (start, level)
        got = self._phase_cache.get(key)
        if got is not None:
            return got
        if start is None:
            b0, i0, v0 = self.k.entry, 0, ()
        else:
            b0 = start.block
            i0 = b0.instrs.index(start) + 1
            v0 = self.vec0(b0)
        out: dict[Access, set[Vec]] = defaultdict(set)
        seen: set = set()
        work = [(b0, i0, v0)]
        while work:
            b, i, vec = work.pop()
            if (b, i, vec) in seen:
                continue
            seen.add((b, i, vec))
            stopped = False
            for ins in b.instrs[i:]:
                if self.boundary(ins, level):
                    stopped = True
                    break
                acc = self.by_instr.get(ins)
                if acc is not None:
                    out[acc].add(vec)
            if stopped:
                continue
            for s in b.succs:
                work.append((s, 0, self.step(vec, b, s)))
        self._phase_cache[key] = out
        return out

    def copy_walk(self, c: Access, level: str = "workgroup") -> PendingWalk:
        """Follow the copying thread from ``c`` until a wait retires it and a
        boundary publishes it (see the module docstring)."""
        waits = [i.attrs.get("n", 0) for i in self.k.instrs() if i.op is O.CP_ASYNC_WAIT]
        capc = (max(waits) if waits else 0) + 2
        b0 = c.instr.block
        i0 = b0.instrs.index(c.instr) + 1
        bars: set = set()
        own: set = set()
        retiring: set = set()
        short: set = set()
        uncommitted: set = set()
        never = False
        seen: set = set()
        work = [(b0, i0, self.vec0(b0), 0, False)]
        while work:
            b, i, vec, cm, ret = work.pop()
            key = (b, i, vec, cm, ret)
            if key in seen:
                continue
            seen.add(key)
            stopped = False
            for ins in b.instrs[i:]:
                op = ins.op
                if not ret:
                    if op is O.CP_ASYNC_COMMIT:
                        cm = min(cm + 1, capc)
                        continue
                    if op is O.CP_ASYNC_WAIT:
                        n = int(ins.attrs.get("n", 0) or 0)
                        if ins.attrs.get("all") or cm >= n + 1:
                            ret = True
                            retiring.add(ins)
                        elif cm == 0:
                            uncommitted.add(ins)
                        else:
                            short.add((ins, cm))
                        continue
                if self.boundary(ins, level):
                    if ret:
                        stopped = True
                        break
                    bars.add((ins, vec))
                    continue
                if not ret:
                    acc = self.by_instr.get(ins)
                    if acc is not None:
                        own.add((acc, vec))
            if stopped:
                continue
            t = b.terminator
            if not b.succs or (t is not None and t.op in (O.RET, O.EXIT)):
                if not ret:
                    never = True
                continue
            for s in b.succs:
                work.append((s, 0, self.step(vec, b, s), cm, ret))
        return PendingWalk(frozenset(bars), frozenset(own), frozenset(retiring), frozenset(short),
                           frozenset(uncommitted), never)  # fmt: skip


def compose(walk_vec: Vec, phase_vec: Vec) -> Vec:
    """An access's trips relative to a copy, from the barrier's trips relative
    to the copy (``walk_vec``) and the access's relative to the barrier."""
    w = {lp: (k, n) for lp, k, n in walk_vec}
    out = []
    for lp, k, n in phase_vec:
        if k == "rel":
            k2, n2 = w.get(lp, ("free", 0))
            if k2 == "free":
                out.append((lp, "free", 0))
            else:
                out.append((lp, k2, n + n2))
        else:
            out.append((lp, k, n))
    return tuple(out)


def _normalize(a: Access, va: Vec, b: Access, vb: Vec) -> tuple:
    """Shift ``rel`` trips so that ``a``'s are 0 (the anchor is arbitrary)."""
    shift = {lp: n for lp, k, n in va if k == "rel"}
    na = tuple((lp, k, 0 if k == "rel" else n) for lp, k, n in va)
    nb = tuple((lp, k, n - shift[lp] if (k == "rel" and lp in shift) else n) for lp, k, n in vb)
    return (a, na, b, nb)


def _vec_repr(v: Vec) -> tuple:
    return tuple((lp.header.name, k, n) for lp, k, n in v)


# ---------------------------------------------------------------------------
# findings


@dataclass(eq=False)
class Race:
    """An unordered pair: TL201 (``code``), or a cp.async hazard (TL204).

    ``later`` is where the diagnostic points (the access later in program
    order; for a pair on one instruction, that instruction), ``other`` the
    other access. ``kind``: ``read-write``, ``write-write`` (TL201);
    ``read-before-wait``, ``read-before-barrier``, ``copy-into-read``,
    ``copy-over-inflight``, ``write-over-inflight``, ``copy-over-write``
    (TL204)."""

    code: str
    kind: str
    later: Access
    other: Access
    copy: Access | None = None
    same_thread: bool = False
    same_value: bool = False
    witness: dict | None = None
    solver: str = "sat"  # or "unknown"
    reason: str = ""
    walk: PendingWalk | None = None


@dataclass(eq=False)
class OutOfBounds:
    access: Access
    witness: dict | None
    detail: str
    assumed: str
    solver: str = "sat"


@dataclass(eq=False)
class BankConflict:
    access: Access
    ways: int
    stride_bytes: int | None
    warp: int
    lanes: list[int]
    bank: int
    suggestion: str
    assumed: str = ""


# ---------------------------------------------------------------------------
# Z3 encoding of accesses


class _Enc(smt.Encoder):
    """The two-thread encoder, seeing through redundant PHI webs."""

    canon: _Canon | None = None

    def _phi(self, d, v, t):
        c = self.canon(v) if self.canon is not None else v
        if c is not v:
            return self.enc(c, t)
        return super()._phi(d, v, t)


class _Query:
    """One Z3 context: one access of thread 0 against partners of thread 1
    (or of thread 0 itself)."""

    def __init__(self, mf: MemoryFacts):
        self.mf = mf
        self.k = mf.k
        self.enc = _Enc(self.k, mf.info, "workgroup", point=None)
        self.enc.canon = mf.canon
        self.z3 = self.enc.z3
        self.anchors: dict[Loop, Any] = {}
        self.base_constraints: list = []
        self.trips_of: dict[tuple, dict[Loop, Any]] = {}
        smt._assume(self.enc)
        self._layout()

    def _layout(self) -> None:
        """Shared buffers are disjoint, aligned and below the shared window."""
        z3 = self.z3
        enc = self.enc
        if self.k.language == "python":
            return
        bases = []
        for name, buf in self.k.buffers.items():
            if buf.space != "shared":
                continue
            v = self.mf.addr_values.get(name)
            if v is None:
                continue
            try:
                b = enc.fit(enc.enc(v, 0), 64)
            except Exception:  # noqa: BLE001
                continue
            al = max(1, buf.align or 1)
            c = [z3.ULT(b, SHARED_WINDOW)]
            if al & (al - 1) == 0 and al > 1:
                c.append(b & (al - 1) == 0)
            enc.constraints.extend(c)
            bases.append((b, buf))
        for i in range(len(bases)):
            for j in range(i + 1, len(bases)):
                (a, ba), (b, bb) = bases[i], bases[j]
                na, nb = ba.bytes, bb.bytes
                if ba.dynamic or na is None:
                    if nb is not None and not bb.dynamic:
                        enc.constraints.append(z3.UGE(a, b + nb))
                    continue
                if bb.dynamic or nb is None:
                    enc.constraints.append(z3.UGE(b, a + na))
                    continue
                enc.constraints.append(z3.Or(z3.ULE(a + na, b), z3.ULE(b + nb, a)))

    # trips -------------------------------------------------------------------------
    def trip_exprs(self, acc: Access, vec: Vec, tag: str) -> dict[Loop, Any]:
        z3 = self.z3
        w = self.enc._trip_width
        out: dict[Loop, Any] = {}
        for lp, k, n in vec:
            if k == "rel":
                s = self.anchors.get(lp)
                if s is None:
                    s = self.anchors[lp] = z3.BitVec(f"s_{lp.header.name}", w)
                    self.enc.constraints += [s >= 0, s < TRIP_BOUND]
                out[lp] = s + n if n else s
            elif k == "abs":
                out[lp] = z3.BitVecVal(n, w)
            else:
                f = z3.BitVec(f"k_{lp.header.name}_{tag}", w)
                self.enc.constraints += [f >= 0, f < TRIP_BOUND]
                out[lp] = f
        return out

    def context(self, trips: dict[Loop, Any]) -> None:
        self.enc.trips = {lp: (e, e) for lp, e in trips.items()}

    def conditions(self, acc: Access, t: int, trips: dict[Loop, Any]) -> list:
        """The thread runs ``acc`` at these trips: valid trips, the paths to it."""
        z3 = self.z3
        enc = self.enc
        self.context(trips)
        out = []
        loops = self.mf.phases.loops(acc.instr.block)
        for lp in loops:
            k = trips[lp]
            out.append(k >= 0)
            out.append(k < TRIP_BOUND)
            try:
                prev = enc.exits_at(lp, t, k - 1)
            except Exception:  # noqa: BLE001
                prev = None
            if prev is not None:
                out.append(z3.Or(k == 0, z3.Not(prev)))
        out += self.reach(acc.instr.block, t)
        return out

    def reach(self, block: Block, t: int) -> list:
        z3 = self.z3
        enc = self.enc
        out = []
        try:
            pc = enc.path_condition(block, t)
        except Exception:  # noqa: BLE001
            pc = None
        if pc is not None:
            out.append(pc)
        for lp in self.mf.cfg.loops_around(block):
            terms = []
            for p in lp.header.preds:
                if p in lp.blocks:
                    continue
                try:
                    pcp = enc.path_condition(p, t)
                    if pcp is None:
                        terms = None
                        break
                    terms.append(z3.And(pcp, enc._edge(p, lp.header, t)))
                except Exception:  # noqa: BLE001
                    terms = None
                    break
            if terms:
                out.append(z3.Or(*terms) if len(terms) > 1 else terms[0])
        return out

    # addresses ------------------------------------------------------------------------
    def footprint(self, acc: Access, t: int, trips: dict[Loop, Any]):
        """(start, width) in bytes: 64-bit (PTX) or 128-bit (Python) vectors."""
        z3 = self.z3
        enc = self.enc
        self.context(trips)
        python = self.k.language == "python"
        W = 128 if python else 64
        if python and acc.index is not None and acc.buffer is not None and all(d for d in acc.buffer.shape) \
                and len(acc.index) == len(acc.buffer.shape):  # fmt: skip
            lin = None
            for i, (x, dim) in enumerate(zip(acc.index, acc.buffer.shape)):
                e = enc.fit(enc.enc(x, t), W, True)
                e = z3.If(e < 0, e + dim, e)  # Numba wraps negative indices
                lin = e if lin is None else lin * dim + e
            base = enc.shared(f"pybuf:{acc.root}", "s64")
            start = enc.fit(base, W) + lin * acc.elem
        else:
            start = enc.fit(enc.enc(acc.addr, t), W, False)
        width: Any = acc.width
        if acc.fragment is not None:
            rows, row_bytes, stride, e = acc.fragment
            if stride is not None:
                s = enc.fit(enc.enc(stride, t), W, False)
                width = (rows - 1) * s * e + row_bytes
            else:
                width = rows * row_bytes
        return start, width

    def overlap(self, f0, f1):
        z3 = self.z3
        (a, wa), (b, wb) = f0, f1
        wa = wa if not isinstance(wa, int) else z3.BitVecVal(wa, a.size())
        wb = wb if not isinstance(wb, int) else z3.BitVecVal(wb, b.size())
        return z3.Or(z3.ULT(b - a, wa), z3.ULT(a - b, wb))

    def warp_rel(self, same: bool | None):
        if same is None:
            return None
        z3 = self.z3
        w0 = z3.UDiv(self.enc.linear(0), 32)
        w1 = z3.UDiv(self.enc.linear(1), 32)
        return w0 == w1 if same else w0 != w1

    def stored_value(self, acc: Access, t: int, trips):
        ins = acc.instr
        if ins.op is not O.STORE or len(ins.args) < 2:
            return None
        self.context(trips)
        vals = [self.enc._bv(self.enc.enc(v, t)) for v in ins.args[1:]]
        if ins.attrs.get("gate") is True or ins.attrs.get("gated") is True:
            vals = vals[:-1]
        if not vals:
            return None
        return vals[0] if len(vals) == 1 else self.z3.Concat(*vals)


# ---------------------------------------------------------------------------
# the facts


class MemoryFacts:
    """Memory facts of one kernel, computed on first use."""

    def __init__(self, kernel: Kernel, module: Module | None, settings=None, target=None):
        self.k = kernel
        self.module = module
        self.settings = settings
        self.target = target
        self.cfg = kernel.cfg()
        self.canon = _Canon(kernel)
        self.accesses = collect_accesses(kernel, self.canon)
        self.shared = [a for a in self.accesses if a.space == "shared"]
        self.addr_values: dict[str, Value] = {}
        for ins in kernel.instrs():
            if ins.op is O.ADDR and ins.attrs.get("buffer") not in self.addr_values:
                self.addr_values[ins.attrs.get("buffer")] = ins.result
        self.rlimit = getattr(settings, "solver_rlimit", None) or smt.DEFAULT_RLIMIT
        self._info = None
        self._phases: Phases | None = None
        self._races: list[Race] | None = None
        self._oob: list[OutOfBounds] | None = None
        self._conflicts: list[BankConflict] | None = None
        self.queries = 0
        self.seconds = 0.0
        self.unknown = 0
        self.truncated = False

    @property
    def info(self):
        if self._info is None:
            from tolk_lint.analysis.uniform import uniformity

            u = self.k.cached("uniformity", lambda k: uniformity(k, self.module, self.settings))
            self._info = u.workgroup
            self._warp_info = u.warp
        return self._info

    @property
    def warp_info(self):
        self.info  # noqa: B018
        return self._warp_info

    @property
    def phases(self) -> Phases:
        if self._phases is None:
            self._phases = Phases(self.k, self.module, self.shared)
        return self._phases

    # -- races -------------------------------------------------------------------------
    def races(self) -> list[Race]:
        if self._races is None:
            t0 = time.perf_counter()
            try:
                self._races = self._find_races()
            finally:
                self.seconds += time.perf_counter() - t0
                STATS["seconds"] += time.perf_counter() - t0
                STATS["kernels"] += 1
        return self._races

    def _may_alias(self, a: Access, b: Access) -> bool:
        if a.root is None or b.root is None:
            return self.k.language != "python"
        return a.root == b.root

    def _find_races(self) -> list[Race]:
        if not self.shared:
            return []
        ph = self.phases
        out: list[Race] = []
        # TL201: plain accesses, per phase; pairs of two warps against the
        # workgroup phases, pairs of one warp against the warp phases.
        levels = [("workgroup", False if ph.has_warp_sync else None)]
        if ph.has_warp_sync:
            levels.append(("warp", True))
        for level, same_warp in levels:
            cands: dict[tuple, None] = {}
            for start in ph.starts(level):
                reached = ph.phase(start, level)
                items = [(a, v) for a, vs in reached.items() if a.kind != "copy" for v in vs]
                items.sort(key=lambda x: (x[0].order, _vec_repr(x[1])))
                for i, (a, va) in enumerate(items):
                    for b, vb in items[i:]:
                        if not (a.writes or b.writes) or (a.kind == "atomic" and b.kind == "atomic"):
                            continue
                        if not self._may_alias(a, b):
                            continue
                        key = _normalize(a, va, b, vb)
                        if a is b:
                            alt = _normalize(b, vb, a, va)
                            if repr(_vec_repr(alt[3])) < repr(_vec_repr(key[3])):
                                key = alt
                        cands[key] = None
            out += self._solve_pairs(list(cands), "TL201", same_warp=same_warp)
        # TL204: every access against the copies pending in its phase
        copies = [a for a in self.shared if a.kind == "copy"]
        if copies:
            cands2: dict[tuple, PendingWalk | None] = {}
            walks = {c: ph.copy_walk(c) for c in copies}
            for start in ph.starts("workgroup"):
                reached = ph.phase(start, "workgroup")
                for c, vcs in reached.items():
                    if c.kind != "copy":
                        continue
                    for vc in vcs:
                        for x, vxs in reached.items():
                            if not self._may_alias(c, x):
                                continue
                            for vx in vxs:
                                if x is c and vx == vc:
                                    key = _normalize(c, vc, x, vx)
                                else:
                                    key = _normalize(c, vc, x, vx)
                                cands2.setdefault(key, walks[c])
            for c, w in walks.items():
                for bar, wv in w.bars:
                    reached = ph.phase(bar, "workgroup")
                    for x, vxs in reached.items():
                        if not self._may_alias(c, x):
                            continue
                        for vx in vxs:
                            key = _normalize(c, ph.vec0(c.instr.block), x, compose(wv, vx))
                            cands2.setdefault(key, w)
            out += self._solve_pairs(list(cands2), "TL204", walks=walks)
            # the copying thread's own accesses before the wait that retires the copy
            own: dict[tuple, None] = {}
            for c, w in walks.items():
                for x, vx in w.own:
                    if not self._may_alias(c, x):
                        continue
                    own[_normalize(c, ph.vec0(c.instr.block), x, vx)] = None
            out += self._solve_pairs(list(own), "TL204", walks=walks, same_thread=True)
        return out

    # -- solving pairs ------------------------------------------------------------------
    def _solve_pairs(self, pairs: list[tuple], code: str, same_warp: bool | None = None,
                     walks: dict | None = None, same_thread: bool = False) -> list[Race]:  # fmt: skip
        """Group the pairs by their first access and solve each group with
        one disjunction, peeling off the partners each model satisfies."""
        if len(pairs) > MAX_PAIRS:
            self.truncated = True
            pairs = pairs[:MAX_PAIRS]
        STATS["pairs"] += len(pairs)
        groups: dict[tuple, list[tuple]] = defaultdict(list)
        for a, va, b, vb in pairs:
            groups[(a, va)].append((b, vb))
        out: list[Race] = []
        for (a, va), partners in groups.items():
            out += self._solve_group(a, va, partners, code, same_warp, walks, same_thread)
        return out

    def _solve_group(self, a: Access, va: Vec, partners: list, code: str, same_warp, walks, same_thread) -> list[Race]:
        z3 = smt.z3mod()
        try:
            q = _Query(self)
            ta = q.trip_exprs(a, va, "a")
            fa = q.footprint(a, 0, ta)
            base = q.conditions(a, 0, ta)
            wr = q.warp_rel(same_warp) if not same_thread else None
            if wr is not None:
                base.append(wr)
            items = []
            t1 = 0 if same_thread else 1
            for j, (b, vb) in enumerate(partners):
                if same_thread and b is a and all(k == "rel" and n == 0 for _, k, n in vb):
                    continue  # the same dynamic instance
                tb = q.trip_exprs(b, vb, f"b{j}")
                fb = q.footprint(b, t1, tb)
                cond = q.conditions(b, t1, tb)
                if same_thread:
                    cond.append(self._later_expr(q, a, ta, b, tb))
                ov = q.overlap(fa, fb)
                items.append((b, vb, tb, fb, z3.And(*(cond + [ov]))))
        except Exception as e:  # noqa: BLE001 - never let the solver crash a lint
            log.debug("memory: encoding failed for %s: %r", _text(a.instr), e, exc_info=True)
            return [self._race(a, None, b, None, code, None, "unknown", walks, same_thread, None,
                               reason=f"the solver could not encode it ({type(e).__name__})")
                    for b, _vb in partners[:1]]  # fmt: skip
        out: list[Race] = []
        remaining = items
        rounds = 0
        while remaining and rounds < 64:
            rounds += 1
            goal = z3.And(*base, z3.Or(*[it[4] for it in remaining]))
            v = self._solve(q, goal)
            if v.status == "unsat":
                break
            if v.status == "unknown":
                if len(remaining) > 1:
                    # ask one by one: only the partners the solver cannot clear stay
                    nxt = []
                    for it in remaining:
                        v1 = self._solve(q, z3.And(*base, it[4]))
                        if v1.status == "sat":
                            out.append(self._race(a, ta, it[0], it[2], code, q, "sat", walks, same_thread, v1.model,
                                                  fa=fa, fb=it[3]))  # fmt: skip
                        elif v1.status == "unknown":
                            out.append(self._race(a, ta, it[0], it[2], code, q, "unknown", walks, same_thread, None))
                    remaining = nxt
                    break
                it = remaining[0]
                out.append(self._race(a, ta, it[0], it[2], code, q, "unknown", walks, same_thread, None))
                break
            m = v.model
            hit = [it for it in remaining if z3.is_true(m.eval(it[4], model_completion=True))]
            if not hit:
                hit = remaining[:1]
            for it in hit:
                out.append(self._race(a, ta, it[0], it[2], code, q, "sat", walks, same_thread, m, fa=fa, fb=it[3]))
            remaining = [it for it in remaining if it not in hit]
        return out

    def _solve(self, q: _Query, goal) -> smt.Verdict:
        self.queries += 1
        STATS["queries"] += 1
        v = smt.solve(q.enc, goal, self.rlimit)
        if v.status == "unknown":
            self.unknown += 1
        return v

    def _later_expr(self, q: _Query, a: Access, ta: dict, b: Access, tb: dict):
        """``b`` (same thread) runs after ``a`` in program order."""
        z3 = q.z3
        common = [lp for lp in q.mf.phases.loops(a.instr.block) if lp in tb]
        static_after = _static_key(b) > _static_key(a)
        expr = z3.BoolVal(static_after)
        for lp in reversed(common):
            x, y = ta[lp], tb[lp]
            expr = z3.Or(y > x, z3.And(y == x, expr))
        return expr

    # -- building findings ----------------------------------------------------------------
    def _race(self, a: Access, ta, b: Access, tb, code: str, q: _Query | None, status: str, walks,
              same_thread: bool, model, reason: str = "", fa=None, fb=None) -> Race:  # fmt: skip
        later, other = b, a
        trips_a = trips_b = None
        if model is not None and ta is not None and tb is not None:
            trips_a = {lp: _val(model, e) for lp, e in ta.items()}
            trips_b = {lp: _val(model, e) for lp, e in tb.items()}
            if not _after(b, trips_b, a, trips_a):
                later, other = a, b
        elif _static_key(a) > _static_key(b):
            later, other = a, b
        copy = a if a.kind == "copy" else (b if b.kind == "copy" else None)
        kind = self._kind(code, later, other, copy, same_thread, walks)
        walk = walks.get(copy) if (walks and copy is not None) else None
        witness = None
        same_value = False
        if model is not None and q is not None:
            witness = self._witness(q, model, a, trips_a, b, trips_b, fa, same_thread)
            if code == "TL201" and a.kind == "write" and b.kind == "write" and fa is not None and fb is not None:
                same_value = self._same_value(q, a, ta, b, tb, fa, fb)
        return Race(code, kind, later, other, copy, same_thread, same_value, witness, status, reason, walk)

    def _kind(self, code, later: Access, other: Access, copy, same_thread, walks) -> str:
        if code == "TL201":
            return "write-write" if later.writes and other.writes and not (later.reads or other.reads) \
                else "read-write"  # fmt: skip
        x = other if later is copy else later
        if later is copy:
            if x.kind == "copy":
                return "copy-over-inflight"
            return "copy-into-read" if x.kind == "read" else "copy-over-write"
        if x.kind == "copy":
            return "copy-over-inflight"
        if x.kind in ("write", "atomic") and not x.reads:
            return "write-over-inflight"
        w = walks.get(copy) if walks else None
        if same_thread or w is None or not w.retiring:
            return "read-before-wait"
        return "read-before-barrier"

    def _same_value(self, q: _Query, a, ta, b, tb, fa, fb) -> bool:
        z3 = q.z3
        try:
            va = q.stored_value(a, 0, ta)
            vb = q.stored_value(b, 1, tb)
            if va is None or vb is None or va.size() != vb.size():
                return False
            base = q.conditions(a, 0, ta) + q.conditions(b, 1, tb)
            goal = z3.And(*base, q.overlap(fa, fb), va != vb)
            return self._solve(q, goal).status == "unsat"
        except Exception:  # noqa: BLE001
            return False

    def _witness(self, q: _Query, model, a: Access, trips_a, b: Access, trips_b, fa, same_thread) -> dict:
        enc = q.enc
        extra: dict[str, Any] = {}
        try:
            addr = _val(model, fa[0])
            extra["address"] = addr
            if a.root is not None and a.base is not None and self.k.language != "python":
                base = _val(model, enc.fit(enc.enc(a.base, 0), fa[0].size()))
                if isinstance(addr, int) and isinstance(base, int):
                    extra["offset"] = (addr - base) % (1 << fa[0].size())
            elif self.k.language == "python" and a.root is not None:
                base = _val(model, enc.fit(enc.shared(f"pybuf:{a.root}", "s64"), fa[0].size()))
                if isinstance(addr, int) and isinstance(base, int):
                    extra["offset"] = (addr - base) % (1 << fa[0].size())
                    extra["element"] = extra["offset"] // max(1, a.elem)
        except Exception:  # noqa: BLE001
            pass
        extra["buffer"] = pretty_buffer(a.root or b.root)
        trips = {}
        for label, tr, acc in (("first", trips_a, a), ("second", trips_b, b)):
            if tr:
                trips[label] = {f"loop@{_line_block(lp.header)}": v for lp, v in tr.items()}
        w = smt.witness_of(enc, model, extra)
        if trips:
            w["trips"] = trips
        else:
            w.pop("trips", None)
        if same_thread:
            w["threads"] = [w["threads"][0]]
        w["description"] = self._describe(w, a, b, same_thread)
        return w

    def _describe(self, w: dict, a: Access, b: Access, same_thread: bool) -> str:
        def th(x):
            x = tuple(x)
            return "(" + ",".join(str(i) for i in x) + ")" if (len(x) > 1 and (x[1] or x[2])) else str(x[0])

        ts = w.get("threads") or []
        if same_thread:
            desc = f"thread {th(ts[0])}"
        else:
            desc = f"threads {th(ts[0])} and {th(ts[1])}" if len(ts) > 1 else "two threads"
        if self.k.launch.block is None and w.get("block"):
            bl = w["block"]
            desc += f" of a block of {bl[0]}x{bl[1]}x{bl[2]}"
        if "offset" in w:
            if "element" in w:
                desc += f", element {w['element']} of `{w.get('buffer')}`"
            else:
                desc += f", byte offset {w['offset']} of `{w.get('buffer')}`"
        trips = w.get("trips") or {}
        tparts = []
        for label in ("first", "second"):
            for loop, k in (trips.get(label) or {}).items():
                tparts.append(f"{'thread ' + th(ts[0]) if label == 'first' or same_thread else 'thread ' + th(ts[1] if len(ts) > 1 else ts[0])} at trip {k} of the {loop.replace('loop@', 'loop at line ')}")
        if tparts:
            desc += " (" + "; ".join(dict.fromkeys(tparts)) + ")"
        inputs = w.get("inputs") or {}
        if inputs:
            desc += " when " + ", ".join(f"{k} = {v}" for k, v in sorted(inputs.items()))
        return desc

    # -- out of bounds -----------------------------------------------------------------
    def out_of_bounds(self) -> list[OutOfBounds]:
        if self._oob is None:
            t0 = time.perf_counter()
            try:
                self._oob = self._find_oob()
            finally:
                self.seconds += time.perf_counter() - t0
        return self._oob

    def assumed_launch(self) -> str:
        lb = self.k.launch
        if lb.block is not None:
            return ""
        if lb.reqntid:
            return f"a block of {'x'.join(str(x) for x in lb.reqntid)} threads (.reqntid)"
        if lb.max_threads:
            src = ".maxntid" if lb.maxntid else (lb.source or "the configured bounds")
            return f"a block of at most {lb.max_threads} threads ({src})"
        return "any block of at most 1024 threads (no launch shape given)"

    def _find_oob(self) -> list[OutOfBounds]:
        z3 = smt.z3mod()
        out = []
        for acc in self.accesses:
            buf = acc.buffer
            if buf is None or buf.dynamic:
                continue
            try:
                q = _Query(self)
                vec = self.phases.vec0(acc.instr.block)
                tr = q.trip_exprs(acc, tuple((lp, "free", 0) for lp, _k, _n in vec), "o")
                cond = q.conditions(acc, 0, tr)
                q.context(tr)
                python = self.k.language == "python"
                if python and acc.index is not None and len(acc.index) == len(buf.shape) and all(buf.shape):
                    terms = []
                    idx_vals = []
                    for x, dim in zip(acc.index, buf.shape):
                        e = q.enc.fit(q.enc.enc(x, 0), 128, True)
                        idx_vals.append(e)
                        terms.append(z3.Or(e < -dim, e >= dim))
                    bad = z3.Or(*terms)
                    detail_vals = idx_vals
                else:
                    nbytes = buf.bytes
                    if nbytes is None or acc.base is None:
                        continue
                    W = 128 if python else 64
                    start, width = q.footprint(acc, 0, tr)
                    base = q.enc.fit(q.enc.enc(acc.base, 0), W, False)
                    off = start - base
                    if self.k.language != "python" and acc.addr is not None:
                        aw = q.enc.enc(acc.addr, 0)
                        aw = q.enc._bv(aw)
                        if aw.size() < 64:
                            # the address wraps in its own width
                            bw = q.enc.fit(q.enc.enc(acc.base, 0), aw.size(), False)
                            off = z3.ZeroExt(W - aw.size(), aw - bw)
                    if isinstance(width, int):
                        if width > nbytes:
                            bad = z3.BoolVal(True)
                        else:
                            bad = z3.UGT(off, nbytes - width)
                    else:
                        bad = z3.Or(z3.UGT(width, nbytes), z3.UGT(off, z3.BitVecVal(nbytes, W) - width))
                    detail_vals = [off]
                v = self._solve(q, z3.And(*cond, bad))
            except Exception as e:  # noqa: BLE001
                log.debug("memory: bounds query failed: %r", e, exc_info=True)
                continue
            if v.status == "unsat":
                continue
            assumed = self.assumed_launch()
            if v.status == "unknown":
                out.append(OutOfBounds(acc, None, "", assumed, "unknown"))
                continue
            m = v.model
            vals = [_val(m, e) for e in detail_vals]
            if self.k.language == "python" and acc.index is not None:
                detail = "index " + ", ".join(str(_signed(x, 128)) for x in vals)
            else:
                off_v = vals[0] if isinstance(vals[0], int) else None
                if off_v is not None:
                    off_s = _signed(off_v, 64)
                    detail = f"byte offset {off_s}" + (f"..{off_s + acc.width - 1}" if acc.width > 1 else "")
                else:
                    detail = "an offset"
            extra = {"buffer": pretty_buffer(acc.root), "access": detail}
            w = smt.witness_of(q.enc, m, extra)
            t0 = tuple(w["threads"][0])
            w["threads"] = [t0]
            w.pop("trips", None)
            trips = {f"loop@{_line_block(lp)}": _val(m, e) for lp, e in tr.items()}
            trips = {k.replace("loop@", "loop@"): v for k, v in trips.items()}
            if trips:
                w["trips"] = trips
            desc = f"thread {t0[0] if not (t0[1] or t0[2]) else '(' + ','.join(map(str, t0)) + ')'}"
            if self.k.launch.block is None:
                bl = w["block"]
                desc += f" of a block of {bl[0]}x{bl[1]}x{bl[2]}"
            if trips:
                desc += " at " + ", ".join(f"trip {k} of the loop at line {lp.split('@')[1]}" for lp, k in trips.items())
            inputs = w.get("inputs") or {}
            if inputs:
                desc += " when " + ", ".join(f"{k} = {v}" for k, v in sorted(inputs.items()))
            w["description"] = desc
            out.append(OutOfBounds(acc, w, detail, assumed, "sat"))
        return out

    # -- bank conflicts ------------------------------------------------------------------
    def bank_conflicts(self) -> list[BankConflict]:
        if self._conflicts is None:
            t0 = time.perf_counter()
            try:
                self._conflicts = _bank_conflicts(self)
            finally:
                self.seconds += time.perf_counter() - t0
        return self._conflicts


def _line_block(x) -> int:
    b = x.header if isinstance(x, Loop) else x
    for ins in b.instrs:
        if ins.span is not None:
            return _line(ins)
    for s in b.succs:
        for ins in s.instrs:
            if ins.span is not None:
                return _line(ins)
    return 0


def _val(model, e):
    z3 = smt.z3mod()
    x = model.eval(e, model_completion=True)
    try:
        return bool(z3.is_true(x)) if z3.is_bool(x) else x.as_long()
    except Exception:  # noqa: BLE001
        return str(x)


def _signed(x, w: int):
    if not isinstance(x, int):
        return x
    return x - (1 << w) if x >= 1 << (w - 1) else x


def _static_key(a: Access) -> tuple:
    ins = a.instr
    sp = ins.span
    return (sp.line if sp else 0, sp.column if sp else 0, a.order)


def _after(b: Access, tb: dict, a: Access, ta: dict) -> bool:
    """Whether ``b`` at trips ``tb`` runs after ``a`` at ``ta`` in program order."""
    for lp in reversed(b.instr.block.kernel.cfg().loops_around(b.instr.block)):
        if lp in ta and lp in tb and isinstance(ta[lp], int) and isinstance(tb[lp], int):
            if tb[lp] != ta[lp]:
                return tb[lp] > ta[lp]
    return _static_key(b) >= _static_key(a)


# ---------------------------------------------------------------------------
# bank conflicts: lane-by-lane evaluation of addresses


class _Unknown(Exception):
    pass


_MASK64 = (1 << 64) - 1


class _LaneEval:
    """Evaluates an integer value for one lane of one warp: a pair
    ``(sym, c)`` meaning ``sym + c``, where ``sym`` is a structural tag of
    everything the same across the warp (None: just ``c``)."""

    def __init__(self, mf: MemoryFacts, block: tuple[int, int, int] | None):
        self.mf = mf
        self.k = mf.k
        self.block = block
        self.cfg = mf.cfg
        self.uni = mf.warp_info
        self.memo: dict = {}
        self.iv: dict[Value, tuple[Loop, Any]] = {}
        for lp in self.cfg.loops:
            for iv in lp.ivs:
                self.iv[iv.phi] = (lp, iv)

    def tid(self, lane: int, warp: int) -> tuple[int, int, int] | None:
        if self.block is None:
            return None
        bx, by, bz = self.block
        lin = warp * 32 + lane
        if lin >= bx * by * bz:
            return None
        return lin % bx, (lin // bx) % by, lin // (bx * by)

    def ev(self, v: Value, lane: int, warp: int, depth: int = 0):
        v = self.mf.canon(v)
        key = (v, lane, warp)
        got = self.memo.get(key)
        if got is not None:
            return got
        if depth > 200:
            raise _Unknown
        r = self._ev(v, lane, warp, depth)
        self.memo[key] = r
        return r

    def _tag(self, v: Value):
        return (("v", v.id), 0)

    def _ev(self, v: Value, lane: int, warp: int, depth: int):
        d = v.defn
        if d is None:
            if v not in self.uni.varying:
                return self._tag(v)
            raise _Unknown
        op = d.op
        if op is O.CONST:
            x = d.attrs.get("value")
            if isinstance(x, bool):
                return (None, int(x))
            if isinstance(x, int):
                return (None, x)
            raise _Unknown
        if op is O.SPECIAL:
            name = d.attrs.get("name", "")
            base, _, dim = name.partition(".")
            if base == "tid" and dim in "xyz" and dim:
                t = self.tid(lane, warp)
                if t is None:
                    if self.block is None and dim == "x":
                        return (("warpbase",), lane)
                    if self.block is None:
                        return (("tid", dim), 0)
                    raise _Unknown
                return (None, t["xyz".index(dim)])
            if name == "laneid":
                return (None, lane)
            if base == "ntid" and dim and self.block is not None:
                return (None, self.block["xyz".index(dim)])
            if name == "warpsize":
                return (None, 32)
            if name.startswith("lanemask"):
                raise _Unknown
            return (("s", name), 0)
        if op in (O.PARAM, O.ADDR, O.UNDEF):
            return self._tag(v)
        if op is O.PHI:
            hit = self.iv.get(v)
            if hit is not None:
                lp, iv = hit
                s, c = self.ev(iv.start, lane, warp, depth + 1)
                k = (("trip", lp.header.name, iv.step),)
                return ((s, k) if s is not None else k, c)
            if v not in self.uni.varying:
                return self._tag(v)
            vals = {self.ev(a, lane, warp, depth + 1) for a in d.args if self.mf.canon(a) is not v}
            if len(vals) == 1:
                return vals.pop()
            raise _Unknown
        if op is O.LOAD or op in (O.ATOMIC, O.SHUFFLE, O.OPAQUE, O.CALL):
            if v not in self.uni.varying:
                return self._tag(v)
            raise _Unknown
        args = [self.ev(a, lane, warp, depth + 1) for a in d.args]
        return self._arith(d, v, args)

    def _arith(self, d: Instr, v: Value, args):
        op = d.op
        if all(s is None for s, _ in args):
            xs = [c for _, c in args]
            return (None, self._concrete(d, v, xs))
        if op is O.ADD:
            syms = [s for s, _ in args if s is not None]
            s = syms[0] if len(syms) == 1 else ("+",) + tuple(syms)
            return (s, sum(c for _, c in args))
        if op is O.SUB:
            (s1, c1), (s2, c2) = args
            if s2 is None:
                return (s1, c1 - c2)
            if s1 == s2:
                return (None, c1 - c2)
            return (("-", s1, s2), c1 - c2)
        if op in (O.MUL, O.SHL) and len(args) == 2:
            (s1, c1), (s2, c2) = args
            if op is O.SHL:
                if s2 is None:
                    f = 1 << c2
                    return (("*", s1, f), c1 * f)
            elif s2 is None:
                return (("*", s1, c2), c1 * c2)
            elif s1 is None:
                return (("*", s2, c1), c2 * c1)
        if op is O.MAD and len(args) == 3 and not d.attrs.get("hi"):
            m = self._arith(_FakeMul, v, args[:2])
            return self._arith(_FakeAdd, v, [m, args[2]])
        if op is O.CVT and args:
            src = d.attrs.get("from_type") or d.args[0].type
            if not (is_float(src) or is_float(v.type)) and type_bits(v.type) >= min(32, type_bits(src)):
                return args[0]
        # anything else: an opaque tag over the operands (lane-specific
        # constants in it make the lanes differ, which `_bank_conflicts` sees)
        return ((op.value, d.attrs.get("cmp"), tuple(args)), 0)

    def _concrete(self, d: Instr, v: Value, xs: list[int]) -> int:
        op = d.op
        t = v.type
        bits = 64 if t == "ptr" or self.k.language == "python" else max(1, type_bits(t))
        signed = d.attrs.get("signed")
        if signed is None:
            signed = is_signed(t)

        def wrap(x):
            x &= (1 << bits) - 1
            return x - (1 << bits) if signed and x >= 1 << (bits - 1) else x

        a = xs[0] if xs else 0
        b = xs[1] if len(xs) > 1 else 0
        if op is O.ADD:
            return wrap(sum(xs))
        if op is O.SUB:
            return wrap(a - b)
        if op is O.MUL:
            return wrap(a * b)
        if op is O.MAD:
            return wrap(a * b + xs[2])
        if op is O.SHL:
            return wrap(a << b)
        if op is O.SHR:
            if signed:
                return wrap(a >> b)
            return wrap((a & ((1 << bits) - 1)) >> b)
        if op is O.AND:
            return wrap(a & b)
        if op is O.OR:
            return wrap(a | b)
        if op is O.XOR:
            return wrap(a ^ b)
        if op is O.NOT:
            return wrap(~a)
        if op is O.NEG:
            return wrap(-a)
        if op in (O.DIV, O.REM):
            if b == 0:
                raise _Unknown
            if d.attrs.get("floor"):
                return wrap(a // b if op is O.DIV else a % b)
            q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
            return wrap(q if op is O.DIV else a - q * b)
        if op in (O.MIN, O.MAX):
            return min(a, b) if op is O.MIN else max(a, b)
        if op is O.CVT:
            return wrap(a)
        if op is O.CMP:
            cmp = d.attrs.get("cmp", "eq")
            return int({"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b,
                        "lo": a < b, "ls": a <= b, "hi": a > b, "hs": a >= b}.get(cmp, False))  # fmt: skip
        if op is O.SELECT:
            return xs[1] if xs[0] else xs[2]
        raise _Unknown


class _Fake:
    def __init__(self, op):
        self.op = op
        self.attrs: dict = {}
        self.args: list = []


_FakeMul = _Fake(O.MUL)
_FakeAdd = _Fake(O.ADD)


def _lane_active(ev: _LaneEval, block: Block, lane: int, warp: int) -> bool | None:
    """Whether the lane reaches ``block`` (None: cannot tell, counted active)."""
    cfg = ev.cfg
    seen = set()
    stack = [block]
    while stack:
        x = stack.pop()
        for dblk in cfg.control_deps(x):
            if dblk in seen:
                continue
            seen.add(dblk)
            stack.append(dblk)
            term = dblk.terminator
            if term is None or term.op is not O.BRANCH or not term.args:
                continue
            tt, ff = term.targets()
            need = None
            if cfg.post_dominates(block, tt) and not cfg.post_dominates(block, ff):
                need = True
            elif cfg.post_dominates(block, ff) and not cfg.post_dominates(block, tt):
                need = False
            if need is None:
                continue
            # loop exits are decided per trip: only plain branches filter lanes
            if any(lp.contains(dblk) and any(s not in lp.blocks for s in dblk.succs) for lp in cfg.loops_around(dblk)):
                continue
            try:
                s, c = ev.ev(term.args[0], lane, warp)
            except _Unknown:
                continue
            if s is not None:
                continue
            if bool(c) != need:
                return False
    return True


def _bank_conflicts(mf: MemoryFacts) -> list[BankConflict]:
    out: list[BankConflict] = []
    block = mf.k.launch.block
    assumed = ""
    if block is None:
        assumed = "assuming blockDim.x is a multiple of 32"
    nwarps = 1 if block is None else max(1, -(-block[0] * block[1] * block[2] // 32))
    ev = _LaneEval(mf, block)
    for acc in mf.shared:
        ins = acc.instr
        if ins.op not in (O.LOAD, O.STORE, O.ATOMIC, O.CP_ASYNC):
            continue
        width = acc.width
        if width > 16 or width <= 0:
            continue
        best: BankConflict | None = None
        warps = range(nwarps) if nwarps <= 32 else list(range(4)) + [nwarps - 1]
        for w in warps:
            res = _warp_ways(ev, mf, acc, w)
            if res is None:
                continue
            ways, lanes, bank, stride = res
            if best is None or ways > best.ways:
                best = BankConflict(acc, ways, stride, w, lanes, bank, "", assumed)
        if best is not None and best.ways > 1:
            best.suggestion = _padding(mf, acc, best)
            out.append(best)
    return out


def _warp_ways(ev: _LaneEval, mf: MemoryFacts, acc: Access, warp: int):
    """(ways, lanes of the worst bank, bank, lane stride in bytes) or None."""
    addrs: dict[int, int] = {}
    sym0 = None
    first = True
    for lane in range(32):
        if ev.block is not None and ev.tid(lane, warp) is None:
            continue
        act = _lane_active(ev, acc.instr.block, lane, warp)
        if act is False:
            continue
        try:
            s, c = _lane_address(ev, mf, acc, lane, warp)
        except _Unknown:
            return None
        if first:
            sym0, first = s, False
        elif s != sym0:
            return None
        addrs[lane] = c
    if len(addrs) < 2:
        return None
    width = acc.width
    words_per_lane = max(1, width // 4)
    lanes_per_phase = 32 if width <= 4 else 32 // words_per_lane
    best = (1, [], 0)
    lanes_sorted = sorted(addrs)
    for ph in range(0, 32, lanes_per_phase):
        group = [ln for ln in lanes_sorted if ph <= ln < ph + lanes_per_phase]
        banks: dict[int, dict[int, list[int]]] = defaultdict(dict)
        for ln in group:
            w0 = addrs[ln] // 4
            for j in range(words_per_lane if width >= 4 else 1):
                word = w0 + j
                banks[word % 32].setdefault(word, []).append(ln)
        for bank, words in banks.items():
            if len(words) > best[0]:
                lanes = sorted({ln for ls in words.values() for ln in ls})
                best = (len(words), lanes, bank)
    stride = None
    if len(lanes_sorted) >= 2:
        l0, l1 = lanes_sorted[0], lanes_sorted[1]
        d = addrs[l1] - addrs[l0]
        if d % (l1 - l0) == 0:
            stride = d // (l1 - l0)
    return best[0], best[1], best[2], stride


def _lane_address(ev: _LaneEval, mf: MemoryFacts, acc: Access, lane: int, warp: int):
    if mf.k.language == "python" and acc.index is not None and acc.buffer is not None \
            and len(acc.index) == len(acc.buffer.shape) and all(acc.buffer.shape):  # fmt: skip
        sym: Any = None
        lin = 0
        for x, dim in zip(acc.index, acc.buffer.shape):
            s, c = ev.ev(x, lane, warp)
            if s is not None:
                sym = (sym, s, dim) if sym is not None else (s, dim)
            lin = lin * dim + c
            if sym is not None:
                sym = ("*", sym, dim)
        return sym, lin * acc.elem
    return ev.ev(acc.addr, lane, warp)


def _padding(mf: MemoryFacts, acc: Access, bc: BankConflict) -> str:
    name = pretty_buffer(acc.root)
    stride = bc.stride_bytes
    buf = acc.buffer
    if mf.k.language == "python" and buf is not None and len(buf.shape) == 2 and buf.shape[1]:
        rows, cols = buf.shape
        if stride is not None and stride == cols * acc.elem:
            return (f"pad each row of `{name}` by one element: declare it `cuda.shared.array(({rows}, {cols + 1}), "
                    f"{buf.dtype_name if hasattr(buf, 'dtype_name') else _np_dtype(buf.dtype)})` and keep indexing "
                    "[row, col]")  # fmt: skip
    if mf.k.language == "python" and buf is not None and len(buf.shape) == 1 and stride:
        words = stride // 4
        return (f"lanes are {stride} bytes apart, so they fall in {32 // math.gcd(max(1, words), 32)}-way shared banks:"
                f" view `{name}` as rows of {words + 1} elements (pad each row of {words} by one) so consecutive lanes "
                "hit different banks")  # fmt: skip
    if stride:
        words = stride // 4
        return (f"lanes are {stride} bytes ({words} words) apart: pad each row of `{name}` by one 4-byte word (a "
                f"row stride of {stride + 4} bytes, e.g. `[{words}][{words + 1}]` for a {words}x{words} float tile) so "
                "that consecutive lanes fall in distinct banks")  # fmt: skip
    return f"pad the rows of `{name}` by one 4-byte word, or swizzle the index, so the lanes fall in distinct banks"


def _np_dtype(t: str) -> str:
    return {"f32": "float32", "f64": "float64", "s32": "int32", "u32": "uint32", "s64": "int64", "f16": "float16",
            "u8": "uint8", "s8": "int8", "s16": "int16", "u16": "uint16", "u64": "uint64"}.get(t, t)  # fmt: skip


# ---------------------------------------------------------------------------


def memory_facts(kernel: Kernel, module: Module | None = None, settings=None, target=None) -> MemoryFacts:
    """The memory facts of ``kernel`` (cached by `RuleContext.memory`)."""
    return MemoryFacts(kernel, module, settings, target)


def races_by_line(races: Iterable[Race], code: str) -> dict[tuple, list[Race]]:
    """Findings of ``code`` grouped by where they point (the user's line)."""
    out: dict[tuple, list[Race]] = defaultdict(list)
    for r in races:
        if r.code != code:
            continue
        ins = r.later.instr
        if ins.origin is not None:
            o = ins.origin.outermost()
            key = (o.path, o.line)
        else:
            key = (ins.span.path if ins.span else "", ins.span.line if ins.span else 0, ins.span.column if ins.span else 0)
        out[key].append(r)
    return out


# ---------------------------------------------------------------------------
# phrases shared by the memory rules (TL201-TL204)


def access_text(a: Access) -> str:
    """How a message names an access: the PTX statement, or the Python line."""
    ins = a.instr
    k = ins.block.kernel if ins.block is not None else None
    if k is not None and k.language == "python":
        kind = {"read": "the load", "write": "the store", "atomic": "the atomic", "copy": "the async copy"}[a.kind]
        return f"{kind} at line {a.line}"
    return f"`{_text(ins)}`"


def verb(a: Access) -> str:
    if a.instr.op is O.WMMA_LOAD:
        return "loads a fragment from"
    if a.instr.op is O.WMMA_STORE:
        return "stores a fragment into"
    return {"read": "reads", "write": "writes", "atomic": "atomically updates", "copy": "copies into"}[a.kind]


def solver_note(r: Race) -> str:
    if r.solver == "unknown":
        return (f"; the solver gave up ({r.reason or 'resource limit'}) before proving the two accesses apart, "
                "so the pair is reported")  # fmt: skip
    if r.witness and r.witness.get("description"):
        return f"; for example {r.witness['description']}"
    return ""
