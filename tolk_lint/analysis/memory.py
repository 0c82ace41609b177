"""Shared memory: accesses, barrier phases, happens-before, and the cp.async group queue.

The facts behind TL201 (shared-race), TL202 (shared-out-of-bounds), TL203
(bank-conflict) and TL204 (async-copy-hazard), computed once per kernel by
`memory_facts` (what `RuleContext.memory()` calls and caches); each kind of
fact is computed on first use (`races`, `out_of_bounds`, `bank_conflicts`).

Accesses
    Every LOAD / STORE / ATOMIC / WMMA_LOAD / WMMA_STORE / LDMATRIX /
    STMATRIX in shared (or local) space, and the destination of every
    CP_ASYNC, becomes an `Access`: its instruction, its kind (``read``,
    ``write``, ``atomic``, ``copy``), the buffer its address points into (by
    root: ``ADDR(buffer)`` through additions, conversions and PHIs), and its
    footprint (byte address and width; a vector access covers all its lanes,
    a wmma fragment its rows at the stride given). Python accesses also keep
    their index tuple (bounds per dimension; Numba wraps ``-n..-1``).

Barrier phases (what orders two accesses)
    A *phase* starts at the kernel's entry or just after a barrier and runs
    along every barrier-free path (`Phases`). Two accesses of two distinct
    threads are unordered exactly when some phase start reaches both without
    a barrier (acceptance convention 3: a barrier lies between them on both
    threads' paths or they race; a divergent barrier still counts). Threads
    that start a phase at one barrier instance share the trip counters of the
    loops around it, so each reached access carries, per loop, its trip
    *relative* to the phase start: ``rel n`` (the start's trip + n, after n
    back edges), ``abs n`` (the loop was entered on the way: trip n),
    ``free`` (a barrier-free cycle: any trip), and for loops it left on the
    way ``x…`` (the trip it left them at) or, one enclosing trip later,
    ``h…``. In a loop with one barrier the read at trip k and the write at
    trip k + 1 are thus in one phase unless a barrier lies on the back-edge
    path between them. Paths also record the uniform branches they took
    (outside loops): two accesses whose paths took one uniform branch two
    ways are never in one phase; and a thread still inside a loop whose exit
    is uniform cannot meet one that left it at an earlier trip.
    ``bar.warp.sync`` / ``cuda.syncwarp()`` with the full mask end a phase for
    two lanes of one warp: pairs of one warp are checked against the
    warp-level phases, pairs of two warps against the workgroup-level ones.

cp.async (PTX ISA; research/staging.md 2.2 and Appendix B)
    A copy's write lands at an unknown moment between the copy and the
    CP_ASYNC_WAIT that retires its group *on the copying thread*
    (``wait_group N`` retires every group but the newest N committed ones;
    uncommitted copies are never covered; ``wait_all`` covers everything),
    and it is visible to other threads only after a barrier that follows
    that wait. For each copy a walk from it (`Phases.copy_walk`) follows the
    thread's own group queue (commits counted along the path) until the
    retiring wait and the barrier after it: the barriers crossed before that
    are the phases in which the copy is still *pending* for other threads,
    the accesses met before the wait are the copying thread's own hazards.
    Trips are kept relative to the copy (trip k; a slot ``k mod S`` is then
    a function of ``k``), so the verdict holds for every trip, not for a few
    unrolled ones.

Deciding a pair: the concrete pass, then Z3
    With the launch shape known, `_ThreadEval` evaluates both addresses for
    every thread of the block at once as ``symbolic part + per-thread
    constant``: thread indices concrete, everything the threads share
    (parameters, buffer bases, block indices, uniform loads) symbolic, and
    each loop trip split as ``P*Q + r`` with the residue ``r`` enumerated
    over the kernel's period ``P`` (the lcm of the small masks, moduli and
    compiler magic divisions applied to trip-dependent values, so ``k & 1``,
    ``k % 3`` and nvcc's ``mul.wide``/``shr`` division are concrete per
    residue while linear trip terms stay symbolic). When the symbolic parts
    agree, the addresses collide for no two threads (UNSAT without Z3), or
    collide for a concrete pair of threads: when no loop or uniform condition
    is left in doubt that pair is the witness, otherwise Z3 confirms. Every
    other pair is encoded for two threads with the `smt.Encoder` (geometric
    loop counters like ``s //= 2`` in closed form, redundant PHI webs seen
    through, integer trip validity including "the counter does not wrap"):
    both footprints, the launch shape, each thread's loop trips, the path
    conditions, the uniform branches, and both accesses in bounds (an access
    that leaves its array is TL202's finding). SAT: a race with its witness
    (threads, trips, inputs, offset). UNSAT: ordered or disjoint. UNKNOWN:
    reported anyway, saying the solver gave up (DESIGN.md). Queries go
    through a bit-blasting tactic with the deterministic resource limit
    (`_solve_bv`).

Bank conflicts
    For a warp's access of 16 bytes or less, the addresses of its lanes are
    evaluated with `_ThreadEval` (block known, or a flat block when the
    kernel reads only tid.x); when every active lane's address is one
    symbolic base plus a lane-specific constant, ways = the most distinct
    4-byte words one bank serves in one phase of the access (acceptance
    convention 6), else the access is not judged.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import math
import operator
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable

from tolk_lint.analysis import smt
from tolk_lint.analysis.buffers import MemoryOrder, is_barrier
from tolk_lint.analysis.uniform import barrier_functions
from tolk_lint.ir.cfg import Loop, cfg_of
from tolk_lint.ir.nodes import Block, Buffer, Instr, Kernel, Module, Value, is_float, is_signed, type_bits
from tolk_lint.ir.opcodes import Opcode

log = logging.getLogger("tolk_lint.memory")
O = Opcode

CAP = 4  # back edges counted exactly along a barrier-free path (beyond: any trip)
TRIP_BOUND = 1 << 28  # no loop of a kernel runs more trips than this
SAME_VALUE_BUDGET = 20  # "both store the same value" is asked with rlimit / this
MAX_PAIRS = 20000  # candidate pairs per kernel solved (beyond: `truncated`, and the rest are not asked)
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

Vec = tuple  # ((Loop, kind, n), ...) outer loop first; kind in "rel" "abs" "relge" "absge" "free", x-/h- prefixed


def _loose(k: str) -> bool:
    """A trip known only from below (``relge``/``absge``) or not at all (``free``)."""
    return k.endswith("free") or k.endswith("ge")


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
        self.cfg = cfg_of(kernel)
        self.by_instr = {a.instr: a for a in accesses}
        self.holders = barrier_functions(module) if module is not None else set()
        self._phase_cache: dict[tuple, dict] = {}
        self.uniform_branches: set[Block] = set()  # set by MemoryFacts: uniform two-way branches outside loops
        self._free_cycles: dict[tuple, bool] = {}
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

    def free_cycle(self, lp: Loop, level: str) -> bool:
        """Whether ``lp`` has a cycle through its header with no boundary: a
        phase can then span any number of its trips."""
        key = (lp, level)
        got = self._free_cycles.get(key)
        if got is None:
            def clear(b):
                return not any(self.boundary(i, level) for i in b.instrs)

            got = False
            if clear(lp.header):
                seen = {lp.header}
                stack = [lp.header]
                while stack and not got:
                    z = stack.pop()
                    for s2 in z.succs:
                        if s2 is lp.header:
                            got = True
                            break
                        if s2 in lp.blocks and s2 not in seen and clear(s2):
                            seen.add(s2)
                            stack.append(s2)
            self._free_cycles[key] = got
        return got

    def step(self, vec: Vec, x: Block, y: Block, level: str | None = None) -> Vec:
        """The trip relations after the edge ``x -> y``: a back edge counts a
        trip, an entered loop starts at trip 0, an exited loop's trip is kept
        as its exit trip (``xrel``/``xabs``/``xfree``) until an enclosing
        loop starts its next trip."""
        cur = {lp: (k, n) for lp, k, n in vec if k[0] not in "xh"}
        back = None
        for lp in self.loops(y):
            if lp in cur and y is lp.header:
                back = lp
        out = []
        for lp in self.loops(y):
            if lp in cur:
                k, n = cur[lp]
                if lp is back and k in ("rel", "abs"):
                    n += 1
                    if n > CAP or (level is not None and self.free_cycle(lp, level)):
                        k = k + "ge"  # at least n trips later: any number beyond
                out.append((lp, k, n))
            else:
                out.append((lp, "abs", 0) if y is lp.header else (lp, "free", 0))
        exits = []
        for lp, k, n in vec:
            outer_next = back is not None and lp is not back and lp.header in back.blocks
            if k[0] == "x":
                if outer_next:
                    # the enclosing loop starts its next trip: remember where this
                    # loop was left in the trip before (``h``: history)
                    if lp.parent is back and k in ("xrel", "xabs"):
                        exits.append((lp, "h" + k[1:], n))
                    continue
                if y in lp.blocks:
                    continue
                exits.append((lp, k, n))
            elif k[0] == "h":
                if not outer_next:
                    exits.append((lp, k, n))
        for lp, (k, n) in cur.items():
            if y not in lp.blocks:
                exits.append((lp, "x" + k, n))
        if exits:
            order = self.cfg.order
            exits.sort(key=lambda e: order.get(e[0].header, 0))
        return tuple(out) + tuple(exits)

    def starts(self, level: str) -> list[Instr | None]:
        out: list[Instr | None] = [None]
        for ins in self.k.instrs():
            if self.boundary(ins, level):
                out.append(ins)
        return out

    def phase(self, start: Instr | None, level: str) -> dict[Access, set[Vec]]:
        """Accesses reached from ``start`` (None: the entry) with no boundary,
        each with the trip relations it can be reached at."""
        key = ("vec", start, level)
        got = self._phase_cache.get(key)
        if got is None:
            got = defaultdict(set)
            for acc, pairs in self.phase_paths(start, level).items():
                for vec, _dec in pairs:
                    got[acc].add(vec)
            self._phase_cache[key] = got
        return got

    def phase_paths(self, start: Instr | None, level: str) -> dict[Access, set[tuple]]:
        """Like `phase`, with the uniform branches each path took since the
        phase start (outside loops, at most 8): two accesses whose paths took
        one uniform branch two ways are never in one phase, since every
        thread of the phase takes that branch the same way."""
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
        out: dict[Access, set[tuple]] = defaultdict(set)
        seen: set = set()
        work = [(b0, i0, v0, frozenset())]
        while work:
            b, i, vec, dec = work.pop()
            if (b, i, vec, dec) in seen:
                continue
            seen.add((b, i, vec, dec))
            stopped = False
            for ins in b.instrs[i:]:
                if self.boundary(ins, level):
                    stopped = True
                    break
                acc = self.by_instr.get(ins)
                if acc is not None:
                    out[acc].add((vec, dec))
            if stopped:
                continue
            split = b in self.uniform_branches and len(set(b.succs)) == 2 and len(dec) < 8
            for j, s in enumerate(b.succs):
                work.append((s, 0, self.step(vec, b, s, level), dec | {(b, j)} if split else dec))
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
    seen = set()
    for lp, k, n in phase_vec:
        seen.add(lp)
        base = k[1:] if k[0] in "xh" else k
        pre = k[0] if k[0] in "xh" else ""
        if base in ("rel", "relge"):
            k2, n2 = w.get(lp, ("free", 0))
            k2 = k2[1:] if k2[0] in "xh" else k2
            if k2 == "free":
                out.append((lp, pre + "free", 0))
            else:
                ge = base.endswith("ge") or k2.endswith("ge")
                out.append((lp, pre + k2.replace("ge", "") + ("ge" if ge else ""), n + n2))
        else:
            out.append((lp, k, n))
    # loops the copying thread left before the barrier: the access comes after
    for lp, k, n in walk_vec:
        if k[0] in "xh" and lp not in seen:
            out.append((lp, k, n))
    return tuple(out)


def _compatible(da: frozenset, db: frozenset) -> bool:
    """No uniform branch taken one way on one path and the other way on the other."""
    if not da or not db:
        return True
    ways = dict(da)
    return all(ways.get(b, j) == j for b, j in db)


def _normalize(a: Access, va: Vec, b: Access, vb: Vec) -> tuple:
    """Shift ``rel`` trips so that ``a``'s are 0 (the anchor is arbitrary)."""
    shift = {lp: n for lp, k, n in va if k in ("rel", "xrel")}
    rels = ("rel", "xrel", "hrel", "relge", "xrelge")
    na = tuple((lp, k, n - shift[lp] if (k in rels and lp in shift) else n) for lp, k, n in va)
    nb = tuple((lp, k, n - shift[lp] if (k in rels and lp in shift) else n) for lp, k, n in vb)
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
    model: Any = field(default=None, repr=False)


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
    """The two-thread encoder, seeing through redundant PHI webs, and with
    geometric loop counters (``s >>= 1``, ``off *= 2``) in closed form."""

    canon: _Canon | None = None
    geo: dict | None = None

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        if self.python:
            self._trip_width = 64
        # header PHI -> its `_carry_plan` (kept out of `memo`, whose size names the UFs)
        self._carry_plans: dict[Value, tuple | None] = {}

    def width(self, t: str) -> int:
        # Numba's integers are int64 and wrap: the memory queries use 64 bits
        # (the uniformity analysis keeps 128 to model Python's range exactly)
        if self.python and t not in ("pred",) and not is_float(t):
            return 64
        return super().width(t)

    def _phi(self, d, v, t):
        c = self.canon(v) if self.canon is not None else v
        if c is not v:
            return self.enc(c, t)
        return super()._phi(d, v, t)

    # A Python array whose dtype the front end could not tell is typed f32;
    # an integer-only operator on its elements (`x[i] & 255`) says it holds
    # integers: such operators, and the conversions of their results, are
    # encoded as 64-bit integer arithmetic (the element an unknown integer).
    _INT_ONLY = frozenset({O.AND, O.OR, O.XOR, O.SHL, O.SHR})

    def _int_float(self, v: Value) -> bool:
        d = v.defn
        return self.python and d is not None and d.op in self._INT_ONLY and is_float(v.type)

    def _int_of(self, a: Value, t: int):
        z3 = self.z3
        d = a.defn
        if d is not None and d.op is O.CONST:
            x = d.attrs.get("value")
            if isinstance(x, (int, float)) and float(x).is_integer():
                return z3.BitVecVal(int(x), 64)
        e = self._bv(self.enc(a, t))
        return e if e.size() == 64 else self.fit(e, 64, True)

    def _arith(self, d, v, t):
        if self.python and d.op in self._INT_ONLY and is_float(v.type) and len(d.args) == 2:
            a, b = (self._int_of(x, t) for x in d.args)
            return {O.AND: lambda: a & b, O.OR: lambda: a | b, O.XOR: lambda: a ^ b, O.SHL: lambda: a << b,
                    O.SHR: lambda: a >> b}[d.op]()  # fmt: skip
        if self.python and d.op is O.CVT and d.args and not is_float(v.type) and self._int_float(d.args[0]):
            return self.fit(self.enc(d.args[0], t), self.width(v.type), True)
        return super()._arith(d, v, t)

    def _header_phi(self, lp, d, v, t):
        g = (self.geo or {}).get(v)
        if g is None:
            got = self._carried(lp, d, v, t)
            if got is not None:
                return got
            return super()._header_phi(lp, d, v, t)
        z3 = self.z3
        start_v, direction, shift, kind = g
        start = self._bv(self.enc(start_v, t))
        w = start.size()
        trip = self.trip_of(lp, t)
        tw = trip.size()
        amount = trip * shift
        amount = z3.If(z3.UGT(amount, w), z3.BitVecVal(w, tw), amount)
        n = self.fit(amount, w)
        if direction == "left":
            return start << n
        if kind == "logical":
            return z3.LShR(start, n)
        if kind == "arith":
            return start >> n
        # C division by 2^n rounds toward zero
        return z3.If(start >= 0, start >> n, -((-start) >> n))

    # A header PHI that is no induction variable, but whose value along the
    # back edge is computed from values of the trip that do not lead back to
    # a loop-carried value (nvcc's unrolled copy loops: ``%r335 = phi(%r1,
    # %r336 + 256)`` with ``%r336`` an induction variable): at trip 0 its
    # value from outside the loop, at trip k > 0 its back-edge value at trip
    # k - 1. Exact where the base encoding's per-trip function is free
    # (sound for "uniform", but a free address is a possible race or
    # out-of-bounds access). Chains of such PHIs are followed a few levels.
    _CARRY_DEPTH = 4

    def _carried(self, lp: Loop, d: Instr, v: Value, t: int):
        if any(iv.phi is v for iv in lp.ivs) or self.nodes > smt.MAX_NODES:
            return None
        plan = self._carry_plan(lp, v)
        if plan is None:
            return None
        start_v, next_v = plan
        z3 = self.z3
        trip = self.trip_of(lp, t)
        start = self.enc(start_v, t)
        # the previous trip, kept a valid trip at trip 0 (where it is not used)
        prev = z3.If(trip == 0, trip, trip - 1)
        saved = self.trips.get(lp)
        if saved is None or saved[0].get_id() == saved[1].get_id():
            pair = (prev, prev)  # both threads at one trip: keep them together
        else:
            pair = (prev, saved[1]) if t == 0 else (saved[0], prev)
        # the trips given for loops inside `lp` (where the thread left them)
        # are those of this trip, not of the previous one: there, they exit
        # at their own exit trips
        inner = {x: self.trips.pop(x) for x in list(self.trips) if x is not lp and self._inside(x, lp)}
        self.trips[lp] = pair
        try:
            nxt = self.enc(next_v, t)
        finally:
            self.restore_trip(lp, saved)
            self.trips.update(inner)
        if z3.is_bool(start) != z3.is_bool(nxt):
            return None
        if not z3.is_bool(start) and start.size() != nxt.size():
            return None
        return z3.If(trip == 0, start, nxt)

    @staticmethod
    def _inside(x: Loop, lp: Loop) -> bool:
        p = x.parent
        while p is not None:
            if p is lp:
                return True
            p = p.parent
        return False

    def _carry_plan(self, lp: Loop, v: Value, depth: int = 0, busy: frozenset = frozenset()):
        """``(start, next)`` of a header PHI of ``lp`` whose back-edge value,
        at any trip, needs no value of an earlier trip but through induction
        variables and (to a bounded depth, without a cycle) other such PHIs;
        None otherwise."""
        plans = self._carry_plans
        if v in plans:
            return plans[v]
        plan = None
        d = v.defn
        if d is not None and d.op is O.PHI and d.block is lp.header and depth <= self._CARRY_DEPTH:
            pairs = list(zip(lp.header.preds, d.args))
            outside = {a for p, a in pairs if p not in lp.blocks}
            inside = {a for p, a in pairs if p in lp.blocks}
            if len(outside) == 1 and len(inside) == 1:
                (nxt,) = inside
                ok = True
                for w in self._carried_deps(lp, nxt):
                    if w is v or w in busy or self._carry_plan(lp, w, depth + 1, busy | {v}) is None:
                        ok = False
                        break
                if ok:
                    (start,) = outside
                    plan = (start, nxt)
        if depth == 0 or plan is not None:
            plans[v] = plan  # a failure below the top may be one of depth only
        return plan

    def _carried_deps(self, lp: Loop, x: Value) -> set:
        """The header PHIs of ``lp`` other than its induction variables that
        encoding ``x`` at one trip may ask for: through operands, and for a
        PHI inside the loop (encoded over its incoming edges' conditions, or
        an inner loop's PHI over its exit trips) through every branch
        condition of the loop."""
        canon = self.canon or (lambda a: a)
        ivs = {iv.phi for iv in lp.ivs}
        conds = None
        out: set = set()
        seen: set = set()
        stack = [x]
        while stack:
            y = stack.pop()
            for z in (y, canon(y)):
                if z in seen:
                    continue
                seen.add(z)
                dz = z.defn
                if dz is None or dz.block is None or dz.block not in lp.blocks:
                    continue
                if dz.op is O.PHI and dz.block is lp.header:
                    if z not in ivs:
                        out.add(z)
                    continue  # an induction variable: start and step come from outside
                stack.extend(dz.args)
                if dz.op is O.PHI:
                    if conds is None:
                        conds = [b.terminator.args[0] for b in lp.blocks if b.terminator is not None
                                 and b.terminator.op is O.BRANCH and b.terminator.args]  # fmt: skip
                    stack.extend(conds)
        return out


class _Query:
    """One Z3 context: one access of thread 0 against partners of thread 1
    (or of thread 0 itself)."""

    def __init__(self, mf: MemoryFacts):
        self.mf = mf
        self.k = mf.k
        self.enc = _Enc(self.k, mf.info, "workgroup", point=None)
        self.enc.canon = mf.canon
        self.enc.geo = mf.geo
        self.z3 = self.enc.z3
        self.anchors: dict[Loop, Any] = {}
        self._free_names: set[str] = set()
        self._cache: dict[tuple, Any] = {}
        self.base_constraints: list = []
        self.trips_of: dict[tuple, dict[Loop, Any]] = {}
        smt._assume(self.enc)
        self._layout()
        if self.k.launch.block is None:
            # a kernel that never reads tid.y (tid.z) is launched with a flat block
            z3 = self.z3
            for d, dim in ((1, "y"), (2, "z")):
                if dim not in mf.tid_dims:
                    self.enc.constraints.append(self.enc.ntid[d] == 1)

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
            if k[0] == "h":
                continue
            k = k[1:] if k[0] == "x" else k
            if k in ("relge", "absge"):
                extra = z3.BitVec(f"g_{lp.header.name}_{tag}", w)
                if k == "relge":
                    s = self.anchors.get(lp)
                    if s is None:
                        s = self.anchors[lp] = z3.BitVec(f"s_{lp.header.name}", w)
                        self.enc.constraints += [s >= 0, s < TRIP_BOUND]
                    base = s + n
                else:
                    base = z3.BitVecVal(n, w)
                # extra >= 0 and small: the trip bound in `conditions` keeps the sum in range
                out[lp] = base + z3.ZeroExt(w - 28, z3.Extract(27, 0, extra))
                continue
            if k == "rel":
                s = self.anchors.get(lp)
                if s is None:
                    s = self.anchors[lp] = z3.BitVec(f"s_{lp.header.name}", w)
                    self.enc.constraints += [s >= 0, s < TRIP_BOUND]
                out[lp] = s + n if n else s
            elif k == "abs":
                out[lp] = z3.BitVecVal(n, w)
            else:
                # bounded by `conditions` (kept out of the shared constraints, which every query carries)
                out[lp] = z3.BitVec(f"k_{lp.header.name}_{tag}", w)
        return out

    def cached(self, key: tuple, compute):
        """Per-kernel memo of encodings (conditions, footprints) by access,
        trip relations and thread: the query context is shared by all pairs."""
        got = self._cache.get(key)
        if got is None:
            got = self._cache[key] = compute()
        return got

    def context(self, trips: dict[Loop, Any]) -> None:
        self.enc.trips = {lp: (e, e) for lp, e in trips.items()}

    def history(self, vec: Vec, t: int, trips: dict[Loop, Any], tag: str) -> list:
        """Where the thread left an inner loop in the trip of its enclosing
        loop before this one (``h`` entries): that loop really ran so."""
        z3 = self.z3
        enc = self.enc
        out = []
        w = enc._trip_width
        for lp, k, n in vec:
            if k[0] != "h" or lp.parent is None or lp.parent not in trips:
                continue
            if k == "hrel":
                sym = self.anchors.get(lp)
                if sym is None:
                    sym = self.anchors[lp] = z3.BitVec(f"s_{lp.header.name}", w)
                    enc.constraints += [sym >= 0, sym < TRIP_BOUND]
                T = sym + n
            elif k == "habs":
                T = z3.BitVecVal(n, w)
            else:
                continue
            ctx = dict(trips)
            ctx.pop(lp, None)
            ctx[lp.parent] = trips[lp.parent] - 1
            self.context(ctx)
            try:
                here = enc.exits_at(lp, t, T)
                prev = enc.exits_at(lp, t, T - 1)
            except Exception:  # noqa: BLE001
                continue
            out += [trips[lp.parent] >= 1, T >= 0] + self.geometric(lp, T) + self.geometric(lp.parent, trips[lp.parent])
            if here is not None:
                out.append(here)
            if prev is not None:
                out.append(z3.Or(T == 0, z3.Not(prev)))
        self.context(trips)
        return out

    def conditions(self, acc: Access, t: int, trips: dict[Loop, Any], vec: Vec = ()) -> list:
        """The thread runs ``acc`` at these trips: valid trips, the paths to it,
        and the exit trips of the loops it came out of."""
        z3 = self.z3
        enc = self.enc
        out = self.history(vec, t, trips, "h") if vec else []
        self.context(trips)
        loops = self.mf.phases.loops(acc.instr.block)
        inside = set(loops)
        for lp, k in trips.items():
            if lp in inside:
                continue
            out += [k >= 0, k < TRIP_BOUND] + self.geometric(lp, k)
            try:
                here = enc.exits_at(lp, t, k)
                prev = enc.exits_at(lp, t, k - 1)
            except Exception:  # noqa: BLE001
                here = prev = None
            if here is not None:
                out.append(here)
            if prev is not None:
                out.append(z3.Or(k == 0, z3.Not(prev)))
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
            out += self.counted(lp, t, k, acc.instr.block)
        out += self.reach(acc.instr.block, t)
        return out

    def geometric(self, lp: Loop, k) -> list:
        """A counter multiplied or divided by 2^s each trip runs fewer than
        width / s trips (a doubling one would wrap to 0, a halving one is 0
        by then): without this bound a wrapped counter makes any trip valid."""
        out = []
        for phi in lp.header.phis():
            g = (self.mf.geo or {}).get(phi.result)
            if g is None:
                continue
            w = self.enc.width(phi.result.type)
            out.append(k * g[2] < w)
        return out

    def counted(self, lp: Loop, t: int, k, block: Block) -> list:
        """What the loop's counted exits say of trip ``k`` beyond "not left at
        k - 1": induction variables do not wrap (a compiler's loop counter
        never does), and a ``!=`` exit at a bound ``start + n * step`` runs
        exactly n trips."""
        z3 = self.z3
        enc = self.enc
        cfg = self.mf.cfg
        out = self.geometric(lp, k)
        for ex in lp.exits:
            iv = ex.iv
            if iv is None or iv.step is None or ex.bound is None or not all(
                cfg.dominates(ex.branch.block, l) for l in lp.latches
            ):  # a loop-invariant, non-constant step: no closed form here
                continue
            try:
                start = enc._bv(enc.enc(iv.start, t))
                bound = enc._bv(enc.enc(ex.bound, t))
            except Exception:  # noqa: BLE001
                continue
            if z3.is_bool(start) or z3.is_bool(bound):
                continue
            w = start.size()
            if w >= 128:
                continue  # Python integers do not wrap
            bound = enc.fit(bound, w, ex.cmp in ("lt", "le", "gt", "ge"))
            K = enc.fit(k, 2 * w + 2, False)
            step = iv.step
            last = K + (1 if ex.uses_next else 0)
            if ex.cmp in ("lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"):
                signed = ex.cmp in ("lt", "le", "gt", "ge")
                S = z3.SignExt(w + 2, start) if signed else z3.ZeroExt(w + 2, start)
                V = S + z3.BitVecVal(step, 2 * w + 2) * last
                if signed:
                    out += [V >= -(1 << (w - 1)), V < (1 << (w - 1))]
                else:
                    out += [V >= 0, V < (1 << w)]
            elif ex.cmp == "ne" and not ex.exits_when and step != 0:
                # runs while iv != bound: n = (bound - start) / step trips
                dist = (bound - start) if step > 0 else (start - bound)
                D = z3.ZeroExt(w + 2, dist)
                strict = ex.uses_next or cfg.dominates(_inside_succ(ex.branch, lp), block)
                lhs = K * abs(step)
                out.append(z3.ULT(lhs, D) if strict else z3.ULE(lhs, D))
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
        W = 64
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
            start = enc._bv(enc.enc(acc.addr, t))
            W = start.size()
        width: Any = acc.width
        if acc.fragment is not None:
            rows, row_bytes, stride, e = acc.fragment
            if stride is not None:
                s = enc.fit(enc.enc(stride, t), W, False)
                width = (rows - 1) * s * e + row_bytes
            else:
                width = rows * row_bytes
        return start, width

    def in_bounds(self, acc: Access, t: int, trips, f) -> list:
        """The access stays inside its array (an access that leaves it is
        TL202's finding, not a race on the array)."""
        z3 = self.z3
        enc = self.enc
        buf = acc.buffer
        if buf is None or buf.dynamic or acc.fragment is not None:
            return []
        self.context(trips)
        try:
            if self.k.language == "python" and acc.index is not None and len(acc.index) == len(buf.shape) \
                    and all(buf.shape):  # fmt: skip
                out = []
                for x, dim in zip(acc.index, buf.shape):
                    e = enc.fit(enc.enc(x, t), 64, True)
                    out += [e >= -dim, e < dim]
                return out
            nbytes = buf.bytes
            if nbytes is None or acc.base is None or not isinstance(f[1], int) or f[1] > nbytes:
                return []
            start = f[0]
            base = enc.fit(enc._bv(enc.enc(acc.base, t)), start.size(), False)
            return [z3.ULE(start - base, nbytes - f[1])]
        except Exception:  # noqa: BLE001
            return []

    def overlap(self, f0, f1):
        """The byte ranges meet (computed in the addresses' own width, so a
        common base cancels)."""
        z3 = self.z3
        (a, wa), (b, wb) = f0, f1
        if a.size() != b.size():
            n = max(a.size(), b.size())
            a, b = self.enc.fit(a, n), self.enc.fit(b, n)
            wa = wa if isinstance(wa, int) else self.enc.fit(wa, n)
            wb = wb if isinstance(wb, int) else self.enc.fit(wb, n)
        if not isinstance(wa, int) and wa.size() != a.size():
            wa = self.enc.fit(wa, a.size())
        if not isinstance(wb, int) and wb.size() != b.size():
            wb = self.enc.fit(wb, b.size())
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
        self.cfg = cfg_of(kernel)
        self.canon = _Canon(kernel)
        self.accesses = collect_accesses(kernel, self.canon)
        self.shared = [a for a in self.accesses if a.space == "shared"]
        self.addr_values: dict[str, Value] = {}
        for ins in kernel.instrs():
            if ins.op is O.ADDR and ins.attrs.get("buffer") not in self.addr_values:
                self.addr_values[ins.attrs.get("buffer")] = ins.result
        self.rlimit = getattr(settings, "solver_rlimit", None) or smt.DEFAULT_RLIMIT
        self.ivs: dict[Value, tuple[Loop, Any]] = {}
        for lp in self.cfg.loops:
            for iv in lp.ivs:
                if iv.step is not None:  # constant steps only: the address algebra needs them
                    self.ivs[iv.phi] = (lp, iv)
        self.shifted = _shifted_ivs(self.cfg, self.ivs)
        self._evals: dict[tuple, _ThreadEval] = {}
        self._same: dict[int, bool] = {}  # `_same_facts`, by id of the facts
        self._q: _Query | None = None
        self._kind_vec = None
        self._fwd: dict[Block, int] = {}  # `_fwd_reaches`: block -> bits of the blocks it reaches
        self._fwd_bit: dict[Block, int] = {}
        self.geo = _geometric(kernel, self.canon)
        self._const_trips: dict[Loop, int | None] = {}
        self.tid_dims = {i.attrs.get("name", "").partition(".")[2] for i in kernel.instrs()
                         if i.op is O.SPECIAL and i.attrs.get("name", "").startswith(("tid.", "ntid."))}  # fmt: skip
        self.period = _period(kernel)
        self._bytemaps: dict[tuple, Any] = {}
        self.concrete_cleared = 0
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
            info = self.info
            self._phases.uniform_branches = {
                b for b in self.k.blocks
                if b.terminator is not None and b.terminator.op is O.BRANCH and not self.cfg.loops_around(b)
                and b not in info.divergent_branches and b in self.cfg.order
            }  # fmt: skip
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

    def _infeasible(self, a: Access, va: Vec, b: Access, vb: Vec) -> bool:
        """Two paths of one phase that a uniform loop exit splits: one thread
        is still in the loop at a trip where the other already left it (in
        the same trip of the enclosing loop). Every thread leaves a loop
        whose exit is uniform at the same trip."""
        for x, vx, y, vy in ((a, va, b, vb), (b, vb, a, va)):
            dx = {lp: (k, n) for lp, k, n in vx}
            for lp, k, n in vy:
                if k not in ("hrel", "habs") or lp in self.info.divergent_loops or lp.parent is None:
                    continue
                mine = dx.get(lp)
                O = lp.parent
                if mine is None or mine[0] != k[1:]:
                    continue
                ox, oy = dx.get(O), next(((kk, nn) for l2, kk, nn in vy if l2 is O), None)
                if ox is None or oy is None or ox[0] != oy[0] or _loose(ox[0]) or oy[1] != ox[1] + 1:
                    continue
                if mine[1] > n or (mine[1] == n and self._past_exit_test(x, lp)):
                    return True
        return False

    def _past_exit_test(self, acc: Access, lp: Loop) -> bool:
        cfg = self.cfg
        always = [ex for ex in lp.exits if all(cfg.dominates(ex.branch.block, l) for l in lp.latches)]
        if len(always) != 1 or len(lp.exits) != 1:
            return False
        return cfg.dominates(_inside_succ(always[0].branch, lp), acc.instr.block)

    def _may_alias(self, a: Access, b: Access) -> bool:
        if a.root is None or b.root is None:
            return self.k.language != "python"
        return a.root == b.root

    def _find_races(self) -> list[Race]:
        if not self.shared:
            return []
        ph = self.phases
        out: list[Race] = []
        self._found: set = set()
        # TL201: plain accesses, per phase; pairs of two warps against the
        # workgroup phases, pairs of one warp against the warp phases.
        levels = [("workgroup", False if ph.has_warp_sync else None)]
        if ph.has_warp_sync:
            levels.append(("warp", True))
        for level, same_warp in levels:
            cands: dict[tuple, bool] = {}
            for start in ph.starts(level):
                reached = ph.phase_paths(start, level)
                items = [(a, v, d) for a, vs in reached.items() if a.kind != "copy" for v, d in vs]
                items.sort(key=lambda x: (x[0].order, _vec_repr(x[1]), len(x[2])))
                # a pair needs a writer: a reader is paired with the writers after it only
                writers = [j for j, it in enumerate(items) if it[0].writes]
                for i, (a, va, da) in enumerate(items):
                    later = items[i:] if a.writes else [items[j] for j in writers[bisect.bisect_left(writers, i):]]
                    for b, vb, db in later:
                        if a.kind == "atomic" and b.kind == "atomic":
                            continue
                        if not self._may_alias(a, b) or not _compatible(da, db):
                            continue
                        if self._infeasible(a, va, b, vb):
                            continue
                        key = _normalize(a, va, b, vb)
                        if a is b:
                            alt = _normalize(b, vb, a, va)
                            if repr(_vec_repr(alt[3])) < repr(_vec_repr(key[3])):
                                key = alt
                        cands[key] = False
            out += self._solve_pairs(cands, "TL201", same_warp=same_warp)
        # TL204: every access against the copies pending in its phase
        copies = [a for a in self.shared if a.kind == "copy"]
        if copies:
            cands2: dict[tuple, bool] = {}
            walks = {c: ph.copy_walk(c) for c in copies}
            # the phase a copy is issued in: anything in it, before or after the copy
            for start in ph.starts("workgroup"):
                reached = ph.phase_paths(start, "workgroup")
                for c, vcs in reached.items():
                    if c.kind != "copy":
                        continue
                    for vc, dc in vcs:
                        for x, vxs in reached.items():
                            if not self._may_alias(c, x):
                                continue
                            for vx, dx in vxs:
                                if _compatible(dc, dx) and not self._infeasible(c, vc, x, vx):
                                    cands2[_normalize(c, vc, x, vx)] = False
            # the phases it stays pending in: what comes after it there
            for c, w in walks.items():
                for bar, wv in w.bars:
                    reached = ph.phase(bar, "workgroup")
                    for x, vxs in reached.items():
                        if not self._may_alias(c, x):
                            continue
                        for vx in vxs:
                            cx = compose(wv, vx)
                            if self._infeasible(c, ph.vec0(c.instr.block), x, cx):
                                continue
                            key = _normalize(c, ph.vec0(c.instr.block), x, cx)
                            cands2.setdefault(key, True)
            out += self._solve_pairs(cands2, "TL204", walks=walks)
            # the copying thread's own accesses before the wait that retires the copy
            own: dict[tuple, bool] = {}
            for c, w in walks.items():
                for x, vx in w.own:
                    if not self._may_alias(c, x):
                        continue
                    own[_normalize(c, ph.vec0(c.instr.block), x, vx)] = True
            out += self._solve_pairs(own, "TL204", walks=walks, same_thread=True)
        return out

    # -- solving pairs ------------------------------------------------------------------
    def _solve_pairs(self, pairs: dict[tuple, bool], code: str, same_warp: bool | None = None,
                     walks: dict | None = None, same_thread: bool = False) -> list[Race]:  # fmt: skip
        """Group the pairs by their first access and solve each group with
        one disjunction, peeling off the partners each model satisfies.
        ``pairs`` maps each pair to whether its second access is known to
        come after the first (found by walking on from it)."""
        # in program order: which pair of a source line is asked first (and
        # so reported) must not depend on how the pairs were found (walks
        # over sets of blocks), or two runs print different lines
        items = sorted(pairs.items(), key=lambda kv: (kv[0][0].order, _vec_repr(kv[0][1]),
                                                       kv[0][2].order, _vec_repr(kv[0][3])))  # fmt: skip
        if len(items) > MAX_PAIRS:
            self.truncated = True
            items = items[:MAX_PAIRS]
        STATS["pairs"] += len(items)
        groups: dict[tuple, list[tuple]] = defaultdict(list)
        for (a, va, b, vb), after in items:
            groups[(a, va)].append((b, vb, after))
        out: list[Race] = []
        for (a, va), partners in groups.items():
            out += self._solve_group(a, va, partners, code, same_warp, walks, same_thread)
        return out

    def _direction(self, a: Access, va: Vec, b: Access, vb: Vec, after: bool) -> bool | None:
        """Whether ``b`` comes after ``a`` in program order, when the trip
        relations decide it (None: a ``free`` trip leaves it open)."""
        if after:
            return True
        da = {lp: (k, n) for lp, k, n in va if k[0] != "h"}
        for lp, k, n in vb:
            if lp not in da or k[0] == "h":
                continue
            ka, na = da[lp]
            if _loose(k) or _loose(ka) or k.lstrip("x") != ka.lstrip("x"):
                return None
            if n != na:
                return n > na
            if k != ka:
                return k[0] == "x"  # the one that left the loop comes after
        return self.program_after(a, b) if a is not b else None

    def _line_key(self, acc: Access):
        ins = acc.instr
        return ins.origin.outermost().line if ins.origin is not None else ("instr", ins.id, id(ins))

    def _known(self, code: str, a: Access, b: Access, direction: bool | None) -> bool:
        ka, kb = self._line_key(a), self._line_key(b)
        if direction is True:
            return (code, kb, ka) in self._found
        if direction is False:
            return (code, ka, kb) in self._found
        return (code, kb, ka) in self._found and (code, ka, kb) in self._found

    def _solve_group(self, a: Access, va: Vec, partners: list, code: str, same_warp, walks, same_thread) -> list[Race]:
        z3 = smt.z3mod()
        partners = [(b, vb, af) for b, vb, af in partners
                    if not self._known(code, a, b, self._direction(a, va, b, vb, af))]  # fmt: skip
        if not partners:
            return []
        after_of = {(id(b), _vec_repr(vb)): af for b, vb, af in partners}
        kept, hints = self._concrete_filter(a, va, [(b, vb) for b, vb, _af in partners], same_warp, same_thread)
        # collisions the concrete pass saw exactly (no loop, every deciding
        # branch known per thread): the two threads are the witness
        out: list[Race] = []
        rest = []
        for b, vb in kept:
            h = hints.get(id(b), {}).get(_vec_repr(vb))
            if h is not None and h[2]:
                self._kind_vec = vb if a.kind == "copy" else None
                r = self._direct_race(a, b, h, code, walks, same_thread)
                out.append(r)
                self._found.add((code, self._line_key(r.later), self._line_key(r.other)))
            else:
                rest.append((b, vb))
        kept = rest
        if not kept:
            return out
        try:
            q = self.query()
            ka = (a.order, _vec_repr(va), 0)
            ta = q.trip_exprs(a, va, f"{a.order}a")
            fa = q.cached(("fp",) + ka, lambda: q.footprint(a, 0, ta))
            bounds_a = q.cached(("ib",) + ka, lambda: q.in_bounds(a, 0, ta, fa))
            base = list(q.cached(("cond",) + ka, lambda: q.conditions(a, 0, ta, va))) + bounds_a
            wr = q.warp_rel(same_warp) if not same_thread else None
            if wr is not None:
                base.append(wr)
            items = []
            t1 = 0 if same_thread else 1
            for j, (b, vb) in enumerate(kept):
                if same_thread and b is a and all(k == "rel" and n == 0 for _, k, n in vb):
                    continue  # the same dynamic instance
                side = "s" if same_thread else "b"
                kb = (b.order, _vec_repr(vb), t1, side)
                tb = q.trip_exprs(b, vb, f"{b.order}{side}")
                fb = q.cached(("fp",) + kb, lambda: q.footprint(b, t1, tb))
                cond = q.cached(("cond",) + kb, lambda: q.conditions(b, t1, tb, vb))
                ov = [q.overlap(fa, fb)] + q.cached(("ib",) + kb, lambda: q.in_bounds(b, t1, tb, fb))
                if b is a and a.fragment is not None and not same_thread and same_warp is not False:
                    # a wmma fragment is stored (loaded) by its warp's lanes
                    # together, one `.sync.aligned` operation: two lanes of
                    # one warp at one such instruction do not race
                    ov.append(q.warp_rel(False))
                if same_thread or after_of.get((id(b), _vec_repr(vb))):
                    ov.append(self._later_expr(q, a, ta, b, tb))
                items.append((b, vb, tb, fb, z3.And(*(cond + ov)), z3.And(*ov)))
        except Exception as e:  # noqa: BLE001 - never let the solver crash a lint
            log.debug("memory: encoding failed for %s: %r", _text(a.instr), e, exc_info=True)
            return out + [self._race(a, None, b, None, code, None, "unknown", walks, same_thread, None,
                                     reason=f"the solver could not encode it ({type(e).__name__})")
                          for b, _vb in kept[:1]]  # fmt: skip

        def record(it, status, model):
            self._kind_vec = it[1] if a.kind == "copy" else None
            r = self._race(a, ta, it[0], it[2], code, q, status, walks, same_thread, model, fa=fa, fb=it[3])
            ambiguous = any(_loose(k) for _lp, k, _n in va) or any(_loose(k) for _lp, k, _n in it[1])
            if status == "sat" and model is not None and code == "TL201" and it[0] is not a and ambiguous:
                r = self._prefer_same_trip(q, a, ta, it, base, r, fa, walks, same_thread) or r
            out.append(r)
            self._found.add((code, self._line_key(r.later), self._line_key(r.other)))

        def skip(it) -> bool:
            return self._known(code, a, it[0], self._direction(a, va, it[0], it[1],
                                                                 after_of.get((id(it[0]), _vec_repr(it[1])), False)))

        # first the addresses alone (no paths, no loop exits): most pairs are
        # told apart there, cheaply, and that proof holds for every path
        plain = [it for it in items if hints.get(id(it[0]), {}).get(_vec_repr(it[1])) is None]
        cheap_base = ([wr] if wr is not None else []) + bounds_a
        survivors: list = []
        if plain and self.k.launch.block is None:
            # all partners in one question, on a quarter of the budget: when
            # the solver cannot settle them together, each is asked alone
            # (one hard partner must not make the easy ones costly)
            v = self._solve(q, z3.And(*cheap_base, z3.Or(*[it[5] for it in plain])),
                            self.rlimit // 4 if len(plain) > 1 else None)  # fmt: skip
            if v.status == "unknown" and len(plain) > 1:
                # Each alone; a partner on the source line of one that
                # survived is kept without asking: unrolled copies of one
                # line, and the rounds below stop at a line pair's first race.
                lines: set = set()
                for it in plain:
                    line = self._line_key(it[0])
                    if line in lines or self._solve(q, z3.And(*cheap_base, it[5])).status != "unsat":
                        survivors.append(it)
                        lines.add(line)
            elif v.status != "unsat":
                survivors = plain
        else:
            survivors = plain
        # partners whose collision the concrete pass found: confirm with the threads fixed
        remaining = []
        for it in items:
            h = hints.get(id(it[0]), {}).get(_vec_repr(it[1]))
            if h is None:
                if it in survivors:
                    remaining.append(it)
                continue
            if skip(it):
                continue
            if not (self._terms_exact(a, h[3]) and self._terms_exact(it[0], h[4])):
                # a uniform condition may rule those threads out: ask for any threads, alone
                # (a likely race: its own small query beats a round of the disjunction)
                v = self._solve(q, z3.And(*base, it[4]))
                if v.status == "sat":
                    record(it, "sat", v.model)
                elif v.status == "unknown":
                    record(it, "unknown", None)
                continue
            fixed = [q.enc.linear(0) == h[0]] + ([] if same_thread else [q.enc.linear(1) == h[1]])
            v = self._solve(q, z3.And(*base, *fixed, it[4]))
            if v.status == "sat":
                record(it, "sat", v.model)
            else:
                remaining.append(it)
        rounds = 0
        while remaining and rounds < 64:
            rounds += 1
            remaining = [it for it in remaining if not skip(it)]
            if not remaining:
                break
            goal = z3.And(*base, z3.Or(*[it[4] for it in remaining]))
            v = self._solve(q, goal)
            if v.status == "unsat":
                break
            if v.status == "unknown":
                # ask one by one: only the partners the solver cannot clear stay
                for it in remaining:
                    if skip(it):
                        continue
                    v1 = self._solve(q, z3.And(*base, it[4])) if len(remaining) > 1 else v
                    if v1.status == "sat":
                        record(it, "sat", v1.model)
                    elif v1.status == "unknown":
                        record(it, "unknown", None)
                break
            m = v.model
            hit = [it for it in remaining if z3.is_true(m.eval(it[4], model_completion=True))]
            if not hit:
                hit = remaining[:1]
            for it in hit:
                record(it, "sat", m)
            remaining = [it for it in remaining if it not in hit]
        return out

    def _direct_race(self, a: Access, b: Access, hint, code: str, walks, same_thread) -> Race:
        """A race the concrete pass proved: threads ``hint[0]`` and ``hint[1]``
        run both accesses (no loop around them, every deciding branch known)."""
        h0, h1, _exact, ca, cb = hint
        tra, trb = self._q0_trips(ca) or {}, self._q0_trips(cb) or {}
        later, other = (b, a) if self._after(b, trb, a, tra) else (a, b)
        copy = a if a.kind == "copy" else (b if b.kind == "copy" else None)
        kind = self._kind(code, later, other, copy, same_thread, walks)
        ev = self._evaluator(ca)
        bx, by, _bz = self.k.launch.block

        def tid(i):
            return (i % bx, (i // bx) % by, i // (bx * by))

        threads = [tid(h0)] if same_thread else [tid(h0), tid(h1)]
        w: dict[str, Any] = {"threads": threads, "block": tuple(self.k.launch.block), "inputs": {},
                             "buffer": pretty_buffer(a.root or b.root)}  # fmt: skip
        try:
            sa, c = _addr_terms(ev, a)
            cs = c if isinstance(c, list) else [c] * ev.n
            if self.k.language == "python":
                w["offset"] = cs[h0]
                w["element"] = cs[h0] // max(1, a.elem)
            elif a.base is not None:
                sb, cbase = ev.ev(a.base)
                if sb == sa and isinstance(cbase, int):
                    w["offset"] = cs[h0] - cbase
        except _Unknown:
            pass
        trips = {}
        for label, tr in (("first", tra), ("second", trb)):
            if tr:
                trips[label] = {f"loop@{_line_block(lp.header)}": v for lp, v in tr.items()}
        if trips:
            w["trips"] = trips
        same_value = False
        if code == "TL201" and a.instr.op is O.STORE and b.instr.op is O.STORE and len(a.instr.args) > 1:
            try:
                ea, eb = ev, self._evaluator(cb)
                xa, xb = ea.ev(a.instr.args[1]), eb.ev(b.instr.args[1])
                va_ = xa[1][h0] if isinstance(xa[1], list) else xa[1]
                vb_ = xb[1][h1] if isinstance(xb[1], list) else xb[1]
                same_value = xa[0] == xb[0] and va_ == vb_ and not is_float(a.instr.args[1].type)
            except _Unknown:
                pass
        w["description"] = self._describe(w, a, b, same_thread)
        walk = walks.get(copy) if (walks and copy is not None) else None
        return Race(code, kind, later, other, copy, same_thread, same_value, w, "sat", "", walk)

    def _prefer_same_trip(self, q: _Query, a: Access, ta: dict, it, base, r: Race, fa, walks, same_thread):
        """A race whose model puts the two accesses at different trips of a
        loop they share: when they can also meet at one trip, point where
        that trip's program order says (the read of a write-then-read)."""
        z3 = q.z3
        tb = it[2]
        common = [lp for lp in ta if lp in tb]
        if not common:
            return None
        m = r.model
        if m is not None and all(_val(m, ta[lp]) == _val(m, tb[lp]) for lp in common):
            return None
        eq = [ta[lp] == tb[lp] for lp in common]
        try:
            v = self._solve(q, z3.And(*base, it[4], *eq))
        except Exception:  # noqa: BLE001
            return None
        if v.status != "sat":
            return None
        return self._race(a, ta, it[0], tb, r.code, q, "sat", walks, same_thread, v.model, fa=fa, fb=it[3])

    @property
    def concrete_block(self) -> tuple[tuple[int, int, int] | None, bool]:
        """The block the concrete pass evaluates every thread of, and whether
        it is an assumption. Without a launch shape, a kernel that reads only
        tid.x is run as the largest flat block its bounds allow: each smaller
        flat block's threads are among its threads and compute the same
        addresses under the same conditions (ntid stays symbolic), so a pair
        cleared there is cleared for every allowed block."""
        block = self.k.launch.block
        if block is not None:
            return (block, False) if block[0] * block[1] * block[2] <= 1024 else (None, False)
        if self.tid_dims & {"y", "z"}:
            return None, False
        n = self.k.launch.max_threads or 1024
        return ((n, 1, 1), True) if 0 < n <= 1024 else (None, False)

    def _evaluator(self, ctx: tuple, info=None) -> _ThreadEval | None:
        """The concrete pass's evaluator for the loop trips ``ctx``, over the
        uniformity facts ``info`` (the workgroup level's by default), shared
        by every rule that asks for the same."""
        block, assumed = self.concrete_block
        if block is None:
            return None
        if info is None or self._same_facts(info):
            info = self.info
        key = (info is self.info,) + tuple((id(lp),) + r for lp, r in ctx)
        ev = self._evals.get(key)
        if ev is None:
            ev = self._evals[key] = _ThreadEval(self, block, info, dict(ctx), assumed=assumed)
        return ev

    def _same_facts(self, info) -> bool:
        """Whether ``info`` holds the facts an evaluator reads (varying values,
        divergent loops) exactly as the workgroup level does: then the two
        levels share evaluators (most kernels, before any Z3 proof)."""
        if info is self.info:
            return True
        got = self._same.get(id(info))
        if got is None:
            got = self._same[id(info)] = (info.varying == self.info.varying
                                          and info.divergent_loops == self.info.divergent_loops)  # fmt: skip
        return got

    def _combos(self, va: Vec, vb: Vec, limit: int = 64):
        """The assignments of trip residues to enumerate for a pair: one per
        shared anchor (``rel``) and one per side for each ``free`` trip.
        Yields (ctx of a, ctx of b); None when there are too many."""
        P = self.period
        shared = sorted({id(lp): lp for lp, k, _n in list(va) + list(vb) if k in ("rel", "xrel")}.items())
        frees = [("a", lp) for lp, k, _n in va if k[0] != "h" and _loose(k)] + \
            [("b", lp) for lp, k, _n in vb if k[0] != "h" and _loose(k)]  # fmt: skip
        n = len(shared) + len(frees)
        if P ** n > limit:
            return None

        out = []
        for rs in itertools.product(range(P), repeat=n):
            rel = {lp: rs[i] for i, (_id, lp) in enumerate(shared)}
            fr = {(side, lp): rs[len(shared) + i] for i, (side, lp) in enumerate(frees)}

            def ctx(vec, side):
                items = []
                for lp, k, m in vec:
                    if k[0] == "h":
                        continue
                    x = "x" if k[0] == "x" else ""
                    if _loose(k):
                        items.append((lp, (x + "free", fr[(side, lp)], side)))
                    elif k in ("rel", "xrel"):
                        items.append((lp, (x + "rel", m, rel[lp])))
                    elif k in ("abs", "xabs"):
                        items.append((lp, (x + "abs", m)))
                    else:
                        items.append((lp, (x + "free", fr[(side, lp)], side)))
                return tuple(items)

            out.append((ctx(va, "a"), ctx(vb, "b")))
        return out

    def _terms(self, acc: Access, ctx: tuple):
        """(sym, offsets per thread, active per thread, modulus) or None."""
        if acc.fragment is not None:
            return None
        ev = self._evaluator(ctx)
        if ev is None:
            return None
        try:
            s, c = _addr_terms(ev, acc)
        except _Unknown:
            return None
        except Exception:  # noqa: BLE001
            log.debug("memory: concrete evaluation failed", exc_info=True)
            return None
        act, exact = ev.activity(acc.instr.block)
        mod = None
        if self.k.language != "python" and acc.addr is not None and acc.addr.type not in ("ptr",):
            mod = 1 << max(8, type_bits(acc.addr.type))
        cs = c if isinstance(c, list) else [c] * ev.n
        return s, cs, act, mod, exact

    def _bytemap(self, a: Access, va: tuple, ta, mode, by_byte: bool = False):
        """byte (or word) -> the threads of ``a`` touching it, for ``mode``:
        "any" (min, max thread), "warps" ((warp, thread) min and max),
        "samewarp" keyed by (unit, warp). Words when every address is
        word-aligned, unless ``by_byte`` (a partner of mixed granularity)."""
        key = (a, tuple((id(lp),) + r for lp, r in va), mode, by_byte)
        got = self._bytemaps.get(key)
        if got is not None:
            return got
        s, cs, act, mod = ta[:4]
        words = not by_byte and all(x % 4 == 0 for x in cs) and a.width % 4 == 0
        unit = 4 if words else 1
        n_units = max(1, a.width // unit)
        m: dict = {}
        for t, base in enumerate(cs):
            if act is not None and not act[t]:
                continue
            for j in range(n_units):
                u = base + j * unit
                if mod:
                    u %= mod
                u //= unit
                if mode == "samewarp":
                    k = (u, t // 32)
                    lo_hi = m.get(k)
                    m[k] = (t, t) if lo_hi is None else (min(lo_hi[0], t), max(lo_hi[1], t))
                elif mode == "warps":
                    w = (t // 32, t)
                    lo_hi = m.get(u)
                    m[u] = (w, w) if lo_hi is None else (min(lo_hi[0], w), max(lo_hi[1], w))
                else:
                    lo_hi = m.get(u)
                    m[u] = (t, t) if lo_hi is None else (min(lo_hi[0], t), max(lo_hi[1], t))
        got = (m, unit)
        self._bytemaps[key] = got
        return got

    def _concrete_filter(self, a: Access, va: Vec, partners: list, same_warp, same_thread):
        """Drop the partners no two threads of the launch can collide with at
        any trip (every thread evaluated, each trip residue enumerated); hint
        a colliding pair of threads for the others."""
        hints: dict[int, dict] = {}
        block, assumed = self.concrete_block
        if block is None or a.fragment is not None:
            return partners, hints
        keep = []
        for b, vb in partners:
            combos = self._combos(va, vb)
            verdict = "clear" if combos is not None else "keep"
            hit = None
            for ca, cb in combos or ():
                if hit is not None and hit[2]:
                    break
                ta = self._terms(a, ca)
                tb = self._terms(b, cb)
                if ta is None or tb is None or tb[3] != ta[3]:
                    verdict = "keep"
                    break
                if tb[0] != ta[0]:
                    # the two addresses differ by C * Q, Q >= 0 a trip quotient
                    if self._residues_apart(a, ta, b, tb, same_warp, same_thread):
                        continue
                    verdict = "keep"
                    break
                h = self._collide(a, ca, ta, b, tb, same_warp, same_thread, cb)
                if h is not None:
                    # with an assumed block, Z3 confirms the pair (the witness names a real launch)
                    exact = not assumed and ta[4] and tb[4] and self._q0_trips(ca) is not None \
                        and self._q0_trips(cb) is not None  # fmt: skip
                    if hit is None or exact:
                        verdict, hit = "hit", (h[0], h[1], exact, ca, cb)
            if verdict == "clear":
                self.concrete_cleared += 1
                continue
            keep.append((b, vb))
            if hit is not None:
                hints.setdefault(id(b), {})[_vec_repr(vb)] = hit
        return keep, hints

    def const_trips(self, lp: Loop) -> int | None:
        """The trip count of a loop with a constant start, step and bound."""
        got = self._const_trips.get(lp)
        if got is not None or lp in self._const_trips:
            return got
        count = None
        cfg = self.cfg
        always = [ex for ex in lp.exits if all(cfg.dominates(ex.branch.block, l) for l in lp.latches)]
        if len(always) == 1 and len(lp.exits) == 1:
            ex = always[0]
            iv = ex.iv
            cv = _const_int(ex.bound) if ex.bound is not None else None
            st = _const_int(iv.start) if iv is not None else None
            d = ex.cond.defn
            if iv is not None and iv.step is not None and cv is not None and st is not None and d is not None and d.op is O.CMP:
                swapped = d.args[0] is ex.bound or _const_int(d.args[0]) is not None and d.args[1] in (iv.phi, iv.next)
                for trip in range(0, 257):
                    x = st + iv.step * (trip + (1 if ex.uses_next else 0))
                    a0, b0 = (cv, x) if swapped else (x, cv)
                    c = {"lt": a0 < b0, "le": a0 <= b0, "gt": a0 > b0, "ge": a0 >= b0, "eq": a0 == b0,
                         "ne": a0 != b0, "lo": a0 < b0, "ls": a0 <= b0, "hi": a0 > b0,
                         "hs": a0 >= b0}.get(d.attrs.get("cmp", ""))  # fmt: skip
                    if c is None:
                        break
                    if bool(c) == ex.exits_when:
                        # leaves at this trip: header tests run `trip` bodies, latch tests `trip + 1`
                        count = trip + (1 if ex.uses_next else 0)
                        break
        self._const_trips[lp] = count
        return count

    def _q0_trips(self, ctx) -> dict | None:
        """The trips of a concrete-pass context with every quotient Q = 0, when
        each is a trip its (constant-count) loop really runs; else None."""
        out = {}
        for lp, r in ctx:
            kind = r[0]
            if kind[0] in "xh":
                return None
            n = self.const_trips(lp)
            trip = r[2] + r[1] if kind == "rel" else (r[1] if kind == "abs" else r[1])
            if n is None or not 0 <= trip < n:
                return None
            out[lp] = trip
        return out

    def _terms_exact(self, acc: Access, ctx) -> bool:
        t = self._terms(acc, ctx)
        return bool(t and t[4])

    def _residues_apart(self, a, ta, b, tb, same_warp, same_thread) -> bool:
        """Whether ``a + C*Q`` (or ``b + C*Q``) can meet the other access for no
        Q >= 0 and no two threads: bytes compared by their residue mod C (and
        by order when addresses do not wrap)."""
        diff = _sadd(ta[0], tb[0], -1)
        if len(diff) != 1:
            return False
        (atom, C), = diff
        if not (isinstance(atom, tuple) and atom and atom[0] == "Q"):
            return False
        mod = ta[3]
        # which side carries + |C| * Q
        hi, lo = (ta, tb) if C > 0 else (tb, ta)
        wh, wl = (a.width, b.width) if C > 0 else (b.width, a.width)
        C = abs(C)
        if mod is not None and mod % C:
            return False
        _sh, ch, acth, _m = hi[:4]
        _sl, cl, actl, _m2 = lo[:4]
        # for each residue class: the smallest byte of the "hi" side, with its thread
        best: dict[int, list] = {}
        for t, base in enumerate(ch):
            if acth is not None and not acth[t]:
                continue
            for j in range(wh):
                u = base + j
                if mod:
                    u %= mod
                r = u % C
                cur = best.get(r)
                if cur is None:
                    best[r] = [(u, t)]
                elif len(cur) < 2 and all(t2 != t for _u, t2 in cur):
                    cur.append((u, t))
                    cur.sort()
                elif cur and u < cur[0][0]:
                    cur.insert(0, (u, t))
                    del cur[2:]
        for t, base in enumerate(cl):
            if actl is not None and not actl[t]:
                continue
            for j in range(wl):
                u = base + j
                if mod:
                    u %= mod
                for (v, th) in best.get(u % C, ()):
                    if mod is None and v > u:
                        continue  # C * Q >= 0 cannot bring it down
                    if same_thread:
                        if th == t:
                            return False
                        continue
                    if th == t:
                        continue
                    if same_warp is True and th // 32 != t // 32:
                        continue
                    if same_warp is False and th // 32 == t // 32:
                        continue
                    return False
        return True

    def _footprint(self, acc: Access, ctx, terms):
        """What ``acc`` touches over its active threads, for a quick
        disjointness test (cached): ``(lo, hi, aligned, units)``, the bytes
        ``[lo, hi)`` it spans (None when an address may wrap around), whether
        every address and the width are multiples of 4, and a function giving
        the set of its bytes (unit 1) or 4-byte words (unit 4)."""
        ckey = tuple((id(lp),) + r for lp, r in ctx)
        key = (acc, ckey, "footprint")
        got = self._bytemaps.get(key)
        if got is None:
            _s, cs, act, mod = terms[:4]
            xs = cs if act is None else [x for x, on in zip(cs, act) if on]
            w = acc.width
            if not xs:
                lo = hi = 0
            elif mod and (min(xs) < 0 or max(xs) + w > mod):
                lo = hi = None
            else:
                lo, hi = min(xs), max(xs) + w
            aligned = w % 4 == 0 and all(x % 4 == 0 for x in xs)

            def units(unit: int) -> frozenset:
                ukey = (acc, ckey, "units", unit)
                got = self._bytemaps.get(ukey)
                if got is None:
                    offs = range(0, w, unit)
                    got = self._bytemaps[ukey] = frozenset(
                        ((x + j) % mod if mod else x + j) // unit for x in xs for j in offs)
                return got

            got = self._bytemaps[key] = (lo, hi, aligned, units)
        return got

    def _disjoint(self, a: Access, va, ta, b: Access, vb, tb) -> bool:
        """Whether no byte ``a`` touches is touched by ``b`` (any threads)."""
        la, ha, aligned_a, units_a = self._footprint(a, va, ta)
        lb, hb, aligned_b, units_b = self._footprint(b, vb, tb)
        if la is not None and lb is not None and (ha <= lb or hb <= la):
            return True
        unit = 4 if aligned_a and aligned_b else 1  # words, when both are word-aligned
        return units_a(unit).isdisjoint(units_b(unit))

    def _collide(self, a, va, ta, b, tb, same_warp, same_thread, vb=None):
        if vb is not None and self._disjoint(a, va, ta, b, vb, tb):
            return None
        _s, ca, acta, mod = ta[:4]
        _s2, cb, actb, _m = tb[:4]
        if same_thread:
            for t in range(len(ca)):
                if (acta is not None and not acta[t]) or (actb is not None and not actb[t]):
                    continue
                x, y = ca[t], cb[t]
                d = (y - x) % mod if mod else y - x
                e = (x - y) % mod if mod else x - y
                if 0 <= d < a.width or 0 <= e < b.width:
                    return (t, t)
            return None
        mode = "samewarp" if same_warp is True else "warps" if same_warp is False else "any"
        m, unit = self._bytemap(a, va, ta, mode)
        words = unit == 4 and all(x % 4 == 0 for x in cb) and b.width % 4 == 0
        if unit == 4 and not words:
            # mixed granularity: compare bytes
            m, unit = self._bytemap(a, va, ta, mode, by_byte=True)
        n_units = max(1, b.width // unit)
        for t, base in enumerate(cb):
            if actb is not None and not actb[t]:
                continue
            for j in range(n_units):
                u = base + j * unit
                if mod:
                    u %= mod
                u //= unit
                if mode == "samewarp":
                    lo_hi = m.get((u, t // 32))
                    if lo_hi is None:
                        continue
                    if lo_hi[0] != t:
                        return (lo_hi[0], t)
                    if lo_hi[1] != t:
                        return (lo_hi[1], t)
                elif mode == "warps":
                    lo_hi = m.get(u)
                    if lo_hi is None:
                        continue
                    w = t // 32
                    if lo_hi[0][0] != w:
                        return (lo_hi[0][1], t)
                    if lo_hi[1][0] != w:
                        return (lo_hi[1][1], t)
                else:
                    lo_hi = m.get(u)
                    if lo_hi is None:
                        continue
                    if lo_hi[0] != t:
                        return (lo_hi[0], t)
                    if lo_hi[1] != t:
                        return (lo_hi[1], t)
        return None

    def query(self) -> _Query:
        """The kernel's one Z3 context (encoder, memo, trip symbols)."""
        if self._q is None:
            self._q = _Query(self)
        return self._q

    def _solve(self, q: _Query, goal, rlimit: int | None = None, fallback: bool = True) -> smt.Verdict:
        self.queries += 1
        STATS["queries"] += 1
        v = _solve_bv(q.enc, goal, rlimit or self.rlimit, fallback)
        if v.status == "unknown":
            self.unknown += 1
        return v

    def _later_expr(self, q: _Query, a: Access, ta: dict, b: Access, tb: dict):
        """``b`` runs after ``a`` in one thread's program order."""
        z3 = q.z3
        la, lb = set(self.phases.loops(a.instr.block)), set(self.phases.loops(b.instr.block))
        keys = [lp for lp in self.cfg.loops if lp in ta and lp in tb and (lp in la or lp in lb)]
        keys.sort(key=lambda lp: lp.depth)
        expr = z3.BoolVal(self.program_after(a, b))
        for lp in reversed(keys):
            x, y = ta[lp], tb[lp]
            expr = z3.Or(y > x, z3.And(y == x, expr))
        return expr

    def _after(self, b: Access, tb: dict, a: Access, ta: dict) -> bool:
        """Whether ``b`` at trips ``tb`` runs after ``a`` at ``ta``."""
        keys = [lp for lp in self.cfg.loops if lp in ta and lp in tb]
        keys.sort(key=lambda lp: lp.depth)
        for lp in keys:
            x, y = ta[lp], tb[lp]
            if isinstance(x, int) and isinstance(y, int) and x != y:
                return y > x
        return self.program_after(a, b) if a is not b else True

    def program_after(self, a: Access, b: Access) -> bool:
        """Whether ``b`` comes after ``a`` at the same trips of the loops
        around both: by the forward edges of the CFG (each loop around one of
        them but not the other taken as a whole), else by the source line."""
        if a.instr.block is b.instr.block:
            pos = self.k.cached("memory_order", MemoryOrder).pos  # index in the block
            return pos[b.instr] > pos[a.instr]
        cfg = self.cfg
        la, lb = cfg.loops_around(a.instr.block), cfg.loops_around(b.instr.block)
        xa = next((lp.header for lp in reversed(la) if lp not in lb), a.instr.block)
        xb = next((lp.header for lp in reversed(lb) if lp not in la), b.instr.block)
        if xa is not xb:
            if self._fwd_reaches(xa, xb):
                return True
            if self._fwd_reaches(xb, xa):
                return False
        return _static_key(b) > _static_key(a)

    def _fwd_reaches(self, x: Block, y: Block) -> bool:
        """Whether ``y`` is ``x`` or follows it by forward edges (those that
        go up in the CFG's order: no back edge)."""
        if not self._fwd:
            # one pass from the last block up: a block's bit set is its own
            # bit and those of its forward successors
            order = self.cfg.order
            bit = {b: 1 << i for i, b in enumerate(self.k.blocks)}
            for z in sorted(self.k.blocks, key=lambda b: order.get(b, -1), reverse=True):
                got = bit[z]
                oz = order.get(z, -1)
                for s2 in z.succs:
                    if order.get(s2, -1) > oz:
                        got |= self._fwd[s2]
                self._fwd[z] = got
            self._fwd_bit = bit
        return bool(self._fwd[x] & self._fwd_bit[y])

    # -- building findings ----------------------------------------------------------------
    def _race(self, a: Access, ta, b: Access, tb, code: str, q: _Query | None, status: str, walks,
              same_thread: bool, model, reason: str = "", fa=None, fb=None) -> Race:  # fmt: skip
        later, other = b, a
        trips_a = trips_b = None
        if model is not None and ta is not None and tb is not None:
            trips_a = {lp: _val(model, e) for lp, e in ta.items()}
            trips_b = {lp: _val(model, e) for lp, e in tb.items()}
            if not self._after(b, trips_b, a, trips_a):
                later, other = a, b
        elif not self.program_after(a, b):
            later, other = a, b
        copy = a if a.kind == "copy" else (b if b.kind == "copy" else None)
        kind = self._kind(code, later, other, copy, same_thread, walks)
        walk = walks.get(copy) if (walks and copy is not None) else None
        witness = None
        same_value = False
        if model is not None and q is not None:
            witness = self._witness(q, model, a, trips_a, b, trips_b, fa, same_thread)
            if code == "TL201" and a.kind == "write" and b.kind == "write" and fa is not None and fb is not None:
                same_value = self._same_value(q, a, ta, b, tb, fa, fb, model)
        return Race(code, kind, later, other, copy, same_thread, same_value, witness, status, reason, walk, model)

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
        # met on the copying thread's own path before the retiring wait
        vx = self._kind_vec
        if vx is not None and any(acc is x and _vec_repr(v) == _vec_repr(vx) for acc, v in w.own):
            return "read-before-wait"
        return "read-before-barrier"

    def _same_value(self, q: _Query, a, ta, b, tb, fa, fb, model=None) -> bool:
        z3 = q.z3
        try:
            va = q.stored_value(a, 0, ta)
            vb = q.stored_value(b, 1, tb)
            if va is None or vb is None or va.size() != vb.size():
                return False
            if model is not None and _val(model, va) != _val(model, vb):
                return False  # the witness itself stores two values
            base = q.conditions(a, 0, ta) + q.conditions(b, 1, tb)
            goal = z3.And(*base, q.overlap(fa, fb), va != vb)
            # Only the message's wording depends on this: a small budget, no
            # second solver; "don't know" words it as two values.
            return self._solve(q, goal, self.rlimit // SAME_VALUE_BUDGET, fallback=False).status == "unsat"
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
        """The accesses that may leave their array, in program order: the
        first of each source line (`source_key`; the solver is not asked
        about the others, unrolled copies of the same line)."""
        if self._oob is None:
            t0 = time.perf_counter()
            try:
                self._oob = self._find_oob()
            finally:
                self.seconds += time.perf_counter() - t0
        return self._oob

    def _oob_concrete(self, acc: Access):
        """"clear" when every thread stays in bounds at every trip residue,
        a thread (int) that leaves them, or None (cannot tell)."""
        buf = acc.buffer
        block, _assumed = self.concrete_block
        if block is None or buf is None or acc.fragment is not None:
            return None
        loops = self.phases.loops(acc.instr.block)
        P = self.period
        if P ** len(loops) > 64:
            return None

        python = self.k.language == "python" and acc.index is not None and len(acc.index) == len(buf.shape) \
            and all(buf.shape)  # fmt: skip
        for rs in itertools.product(range(P), repeat=len(loops)):
            ctx = tuple((lp, ("free", r, "o")) for lp, r in zip(loops, rs))
            ev = self._evaluator(ctx)
            if ev is None:
                return None
            try:
                act = ev.active(acc.instr.block)
                if python:
                    for x, dim in zip(acc.index, buf.shape):
                        sy, c = ev.ev(x)
                        if sy:
                            return None
                        cs = c if isinstance(c, list) else [c] * ev.n
                        for t, i in enumerate(cs):
                            if (act is None or act[t]) and not -dim <= i < dim:
                                return t
                    continue
                if acc.base is None or buf.bytes is None:
                    return None
                sy, c = ev.ev(acc.addr)
                sb, cb = ev.ev(acc.base)
            except _Unknown:
                return None
            if _sadd(sy, sb, -1):
                return None
            mod = 1 << max(8, type_bits(acc.addr.type)) if acc.addr.type != "ptr" else 1 << 64
            cs = c if isinstance(c, list) else [c] * ev.n
            base_c = cb if isinstance(cb, int) else None
            if base_c is None:
                return None
            limit = buf.bytes - acc.width  # the last byte offset the access may start at
            if base_c <= min(cs) and max(cs) - base_c <= limit:
                continue  # every thread in bounds (no wrap-around either)
            for t, x in enumerate(cs):
                if (x - base_c) % mod > limit and (act is None or act[t]):
                    return t
        return "clear"

    def assumed_launch(self) -> str:
        lb = self.k.launch
        if lb.block is not None:
            return ""
        if lb.reqntid:
            return f"a block of {'x'.join(str(x) for x in lb.reqntid)} threads (.reqntid)"
        flat = "" if ("y" in self.tid_dims or "z" in self.tid_dims) else ", one-dimensional as the kernel reads only tid.x"
        if lb.max_threads:
            src = ".maxntid" if lb.maxntid else (lb.source or "the configured bounds")
            return f"a block of at most {lb.max_threads} threads ({src}{flat})"
        return f"any block of at most 1024 threads (no launch shape given{flat})"

    def _find_oob(self) -> list[OutOfBounds]:
        z3 = smt.z3mod()
        out = []
        q: _Query | None = None
        reported: set = set()  # source lines with a finding: their later accesses are not asked about
        for acc in self.accesses:
            buf = acc.buffer
            if buf is None or buf.dynamic:
                continue
            line = source_key(acc.instr)
            if line in reported:
                continue
            conc = self._oob_concrete(acc)
            if conc == "clear":
                self.concrete_cleared += 1
                continue
            try:
                # one context for every access: each trip is a free variable
                # of its loop (tag "o"), the same in every question asked here
                if q is None:
                    q = _Query(self)
                vec = self.phases.vec0(acc.instr.block)
                tr = q.trip_exprs(acc, tuple((lp, "free", 0) for lp, _k, _n in vec), "o")
                q.context(tr)
                python = self.k.language == "python"
                if python and acc.index is not None and len(acc.index) == len(buf.shape) and all(buf.shape):
                    terms = []
                    idx_vals = []
                    for x, dim in zip(acc.index, buf.shape):
                        e = q.enc.fit(q.enc.enc(x, 0), 64, True)
                        idx_vals.append(e)
                        terms.append(z3.Or(e < -dim, e >= dim))
                    bad = z3.Or(*terms)
                    detail_vals = idx_vals
                else:
                    nbytes = buf.bytes
                    if nbytes is None or acc.base is None:
                        continue
                    start, width = q.footprint(acc, 0, tr)
                    W = start.size()
                    if python:
                        base = q.enc.fit(q.enc.enc(acc.base, 0), W, False)
                    else:
                        base = q.enc.fit(q.enc._bv(q.enc.enc(acc.base, 0)), W, False)
                    off = start - base
                    if not isinstance(width, int):
                        width = q.enc.fit(width, W)
                    if isinstance(width, int):
                        bad = z3.BoolVal(True) if width > nbytes else z3.UGT(off, nbytes - width)
                    else:
                        bad = z3.Or(z3.UGT(width, nbytes), z3.UGT(off, z3.BitVecVal(nbytes, W) - width))
                    detail_vals = [off]
                v = None
                if conc is None and self._solve(q, bad).status == "unsat":
                    continue  # in bounds whatever the path (its conditions are not even encoded)
                cond = q.conditions(acc, 0, tr)
                q.context(tr)
                if isinstance(conc, int):
                    v = self._solve(q, z3.And(*cond, bad, q.enc.linear(0) == conc))
                    if v.status != "sat":
                        v = None
                if v is None:
                    v = self._solve(q, z3.And(*cond, bad))
            except Exception as e:  # noqa: BLE001
                log.debug("memory: bounds query failed: %r", e, exc_info=True)
                continue
            if v.status == "unsat":
                continue
            reported.add(line)
            assumed = self.assumed_launch()
            if v.status == "unknown":
                out.append(OutOfBounds(acc, None, "", assumed, "unknown"))
                continue
            m = v.model
            vals = [_val(m, e) for e in detail_vals]
            if self.k.language == "python" and acc.index is not None:
                detail = "index " + ", ".join(str(_signed(x, 64)) for x in vals)
            else:
                off_v = vals[0] if isinstance(vals[0], int) else None
                if off_v is not None:
                    off_s = _signed(off_v, detail_vals[0].size())
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


def _inside_succ(branch: Instr, lp: Loop) -> Block:
    tt, ff = branch.targets()
    return tt if tt in lp.blocks else ff



def _solve_bv(enc, goal, rlimit: int, fallback: bool = True) -> smt.Verdict:
    """`smt.solve`'s question through a bit-blasting tactic (simplify, solve
    equations, drop unconstrained terms, Ackermannize the uninterpreted
    functions, bit-blast, SAT): the memory queries are pure bit-vector
    arithmetic over many small terms, where this is a few times faster than
    the default solver. Same deterministic resource limit; when the tactic
    cannot decide for another reason, `smt.solve` answers."""
    z3 = smt.z3mod()
    _TACTIC = smt.tactic("memory", lambda z3: z3.Then("simplify", "propagate-values", "solve-eqs", "elim-uncnstr",
                                                       "simplify", "ackermannize_bv", "bit-blast", "sat"))  # fmt: skip
    smt.STATS["queries"] += 1
    start = time.perf_counter()
    try:
        s = _TACTIC.solver()
        s.set("rlimit", rlimit)
        s.add(*enc.constraints)
        s.add(goal)
        r = smt.check_within_budget(s)
        reason = s.reason_unknown() if r == z3.unknown else ""
    except z3.Z3Exception as e:  # noqa: F841
        r, reason = None, "tactic failed"
    smt.STATS["seconds"] += time.perf_counter() - start
    if r == z3.unsat:
        smt.STATS["unsat"] += 1
        return smt.Verdict("unsat")
    if r == z3.sat:
        smt.STATS["sat"] += 1
        return smt.Verdict("sat", s.model())
    if "resource" in (reason or "") or not fallback:
        smt.STATS["unknown"] += 1
        return smt.Verdict("unknown", reason="resource limit" if "resource" in (reason or "") else reason)
    smt.STATS["queries"] -= 1
    return smt.solve(enc, goal, rlimit)


def source_key(ins: Instr) -> tuple:
    """The source line an instruction reports at: its outermost ``.loc``
    origin, else its own line and column. The copies nvcc unrolls from one
    line share it, and TL202 reports one finding per key."""
    if ins.origin is not None:
        return (ins.origin.outermost().line,)
    return (ins.span.line, ins.span.column) if ins.span is not None else ("instr", id(ins))


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
    """Program order when the trips agree: the user's line (PTX ``.loc``:
    a compiler may lay out two sibling branches in either order), then the
    position in the linted file."""
    ins = a.instr
    sp = ins.span
    first = ins.origin.outermost().line if ins.origin is not None else (sp.line if sp else 0)
    return (first, sp.line if sp else 0, sp.column if sp else 0, a.order)


# ---------------------------------------------------------------------------
# bank conflicts: lane-by-lane evaluation of addresses


class _Unknown(Exception):
    pass


def _sadd(a: frozenset, b: frozenset, k: int = 1) -> frozenset:
    """``a + k * b`` for linear combinations of atoms."""
    if not b:
        return a
    d = dict(a)
    for atom, c in b:
        n = d.get(atom, 0) + k * c
        if n:
            d[atom] = n
        else:
            d.pop(atom, None)
    return frozenset(d.items())


def _smul(a: frozenset, k: int) -> frozenset:
    if k == 0:
        return frozenset()
    return frozenset((atom, c * k) for atom, c in a)


_EMPTY: frozenset = frozenset()


class _ThreadEval:
    """Evaluates integer values for every thread of a block at once.

    A result is ``(sym, c)``: ``sym`` a linear combination of *atoms* (values
    the same in every thread: parameters, buffer addresses, block indices,
    the loop-trip anchors ``K``, uniform loads...), ``c`` an int (the same
    in every thread) or a list with one int per thread. ``ctx`` gives each
    loop's trip: ``("rel", n)`` = anchor ``K`` + n, ``("abs", n)`` = n,
    ``("free", 0)`` = unknown. Values it cannot put in that form raise
    `_Unknown`. Concrete arithmetic wraps at the value's type width (PTX).
    """

    def __init__(self, mf: MemoryFacts, block: tuple[int, int, int], info, ctx: dict, assumed: bool = False):
        self.assumed = assumed  # the block shape is an assumption: ntid stays symbolic
        self.mf = mf
        self.k = mf.k
        self.cfg = mf.cfg
        self.info = info
        self.ctx = ctx
        bx, by, bz = block
        self.n = bx * by * bz
        self.block = block
        self.tx = [i % bx for i in range(self.n)]
        self.ty = [(i // bx) % by for i in range(self.n)]
        self.tz = [i // (bx * by) for i in range(self.n)]
        self.lane = [i % 32 for i in range(self.n)]
        self.python = self.k.language == "python"
        self.memo: dict[Value, Any] = {}
        self.iv: dict[Value, tuple[Loop, Any]] = mf.ivs

    # helpers ---------------------------------------------------------------------
    def _bits(self, v: Value) -> int:
        if self.python or v.type == "ptr":
            return 128
        return max(1, type_bits(v.type))

    def _width(self, v: Value, signed: bool | None):
        """``(mask, half, signed)`` of ``v``'s two's-complement width, or None
        when it does not wrap (Python integers, pointers)."""
        bits = self._bits(v)
        if bits >= 128:
            return None
        return (1 << bits) - 1, 1 << (bits - 1), is_signed(v.type) if signed is None else signed

    def _wrap_fn(self, v: Value, signed: bool | None = None):
        w = self._width(v, signed)
        if w is None:
            return lambda x: x
        m, half, s = w
        if s:
            return lambda x: ((x & m) ^ half) - half
        return lambda x: x & m

    def _wrap_list(self, v: Value, signed: bool | None, xs: list) -> list:
        """``xs`` wrapped as `_wrap_fn` wraps each element, copied only when
        some element is out of range."""
        w = self._width(v, signed)
        if w is None:
            return xs
        m, half, s = w
        lo, hi = (-half, half - 1) if s else (0, m)
        if lo <= min(xs) and max(xs) <= hi:
            return xs
        if s:
            return [((x & m) ^ half) - half for x in xs]
        return [x & m for x in xs]

    def _map(self, f, *cs):
        # the one- and two-operand forms are most of the work: no splat,
        # no column built for a shared constant
        if len(cs) == 1:
            c = cs[0]
            return f(c) if isinstance(c, int) else list(map(f, c))
        if len(cs) == 2:
            a, b = cs
            if isinstance(a, list):
                return list(map(f, a, b if isinstance(b, list) else itertools.repeat(b)))
            return list(map(f, itertools.repeat(a), b)) if isinstance(b, list) else f(a, b)
        if all(isinstance(c, int) for c in cs):
            return f(*cs)
        cols = [c if isinstance(c, list) else [c] * self.n for c in cs]
        return [f(*xs) for xs in zip(*cols)]

    def ctxkey(self, v: Value) -> tuple:
        d = v.defn
        if d is None or d.block is None:
            return ()
        out = []
        for lp in self.cfg.loops_around(d.block):
            r = self.ctx.get(lp)
            if r is None:
                if lp in self.info.divergent_loops:
                    raise _Unknown
                out.append((id(lp), "exit"))
            else:
                out.append((id(lp),) + tuple(r))
        return tuple(out)

    def trip(self, lp: Loop):
        """The trip of ``lp`` as (sym, c): ``P*Q + r (+ n)``."""
        r = self.ctx.get(lp)
        P = self.mf.period
        if r is None:
            return None
        kind = r[0].lstrip("x")
        if kind == "abs":
            return (_EMPTY, r[1])
        if kind == "rel":
            _k, n, rr = r
            return (frozenset({(("Q", id(lp)), P)}), rr + n)
        _k, rr, side = r
        return (frozenset({(("Q", id(lp), side), P)}), rr)

    def atom(self, v: Value):
        return (frozenset({(("v", v.id, self.ctxkey(v)), 1)}), 0)

    # evaluation ------------------------------------------------------------------
    def ev(self, v: Value):
        v = self.mf.canon(v)
        got = self.memo.get(v)
        if got is not None:
            if got is _UNKNOWN:
                raise _Unknown
            return got
        # iterative over operands, to stay clear of the recursion limit
        stack = [v]
        while stack:
            x = stack[-1]
            if x in self.memo:
                stack.pop()
                continue
            deps = self._deps(x)
            todo = [a for a in deps if a not in self.memo]
            if todo:
                stack.extend(todo)
                if len(stack) > 100000:
                    raise _Unknown
                continue
            stack.pop()
            try:
                self.memo[x] = self._ev(x)
            except _Unknown:
                self.memo[x] = _UNKNOWN
        got = self.memo[v]
        if got is _UNKNOWN:
            raise _Unknown
        return got

    def _deps(self, v: Value) -> list[Value]:
        d = v.defn
        if d is None:
            return []
        if d.op in _STRUCT_OPS:
            return [self.mf.canon(a) for a in d.args]
        if d.op is O.PHI:
            hit = self.iv.get(v)
            if hit is not None:
                return [self.mf.canon(hit[1].start)]
            sh = self.mf.shifted.get(v)
            if sh is not None:
                return [self.mf.canon(sh[3]), self.mf.canon(sh[1].start)]
            if v in self.info.varying and not (self.cfg.loop_of(d.block) and self.cfg.loop_of(d.block).header is d.block):
                return [self.mf.canon(a) for a in d.args if self.mf.canon(a) is not v]
        return []

    def get(self, v: Value):
        got = self.memo.get(self.mf.canon(v))
        if got is None or got is _UNKNOWN:
            raise _Unknown
        return got

    def _ev(self, v: Value):
        d = v.defn
        if d is None:
            if v not in self.info.varying:
                return self.atom(v)
            raise _Unknown
        op = d.op
        if op is O.CONST:
            x = d.attrs.get("value")
            if isinstance(x, bool):
                return (_EMPTY, int(x))
            if isinstance(x, int):
                return (_EMPTY, x)
            raise _Unknown
        if op is O.SPECIAL:
            name = d.attrs.get("name", "")
            base, _, dim = name.partition(".")
            if base == "tid" and dim in ("x", "y", "z"):
                return (_EMPTY, {"x": self.tx, "y": self.ty, "z": self.tz}[dim])
            if name == "laneid":
                return (_EMPTY, self.lane)
            if base == "ntid" and dim in ("x", "y", "z"):
                if self.assumed:
                    return (frozenset({(("special", name), 1)}), 0)
                return (_EMPTY, self.block["xyz".index(dim)])
            if name == "warpsize":
                return (_EMPTY, 32)
            if name.startswith("lanemask_"):
                f = {"lanemask_eq": lambda ln: 1 << ln, "lanemask_lt": lambda ln: (1 << ln) - 1,
                     "lanemask_le": lambda ln: (2 << ln) - 1, "lanemask_gt": lambda ln: 0xFFFFFFFF & ~((2 << ln) - 1),
                     "lanemask_ge": lambda ln: 0xFFFFFFFF & ~((1 << ln) - 1)}.get(name)  # fmt: skip
                if f is None:
                    raise _Unknown
                return (_EMPTY, [f(ln) for ln in self.lane])
            if v in self.info.varying:
                raise _Unknown
            return (frozenset({(("special", name), 1)}), 0)
        if op is O.ADDR:
            return (frozenset({(("addr", d.attrs.get("buffer")), 1)}), 0)
        if op is O.PARAM:
            return (frozenset({(("param", d.attrs.get("name")), 1)}), 0)
        if op is O.UNDEF:
            return self.atom(v)
        if op is O.PHI:
            hit = self.iv.get(v)
            if hit is not None:
                lp, iv = hit
                s, c = self.get(iv.start)
                tr = self.trip(lp)
                if tr is None:
                    if lp in self.info.divergent_loops:
                        raise _Unknown
                    return (_sadd(s, frozenset({(("T", id(lp), self.ctxkey(v)[:-1]), 1)}), iv.step), c)
                ts, tc = tr
                return (_sadd(s, ts, iv.step), self._map(lambda x: x + iv.step * tc, c))
            sh = self.mf.shifted.get(v)
            if sh is not None:
                got = self._shifted(v, sh)
                if got is not None:
                    return got
            if v not in self.info.varying:
                return self.atom(v)
            lp = self.cfg.loop_of(d.block)
            if lp is not None and lp.header is d.block:
                raise _Unknown
            vals = []
            for a in d.args:
                a = self.mf.canon(a)
                if a is v:
                    continue
                vals.append(self.get(a))
            first = vals[0]
            if all(x[0] == first[0] and x[1] == first[1] for x in vals[1:]):
                return first
            raise _Unknown
        if op in _STRUCT_OPS:
            try:
                args = [self.get(a) for a in d.args]
                return self._arith(d, v, args)
            except _Unknown:
                if v not in self.info.varying:
                    return self.atom(v)
                raise
        if v not in self.info.varying:
            return self.atom(v)
        raise _Unknown

    def _shifted(self, v: Value, sh):
        """A header PHI ``phi(s, y + c)``, ``y`` an induction variable of step
        ``st``: ``y(k - 1) + c`` at trip k > 0, so ``s + st * k`` at every trip
        when ``s = y.start - st + c`` (nvcc's unrolled copy loops); None when
        that does not hold (per thread, at the PHI's width)."""
        lp, iv, c, start = sh
        try:
            s, cs = self.get(start)
            ys, yc = self.get(iv.start)
        except _Unknown:
            return None
        if s != ys:
            return None
        bits = self._bits(v)
        m = (1 << bits) - 1 if bits < 128 else None
        delta = c - iv.step
        same = self._map(lambda a, b: int((a - b - delta) & m == 0 if m is not None else a - b == delta),
                         cs, yc)  # fmt: skip
        if not (all(same) if isinstance(same, list) else same):
            return None
        tr = self.trip(lp)
        if tr is None:
            if lp in self.info.divergent_loops:
                return None
            return (_sadd(s, frozenset({(("T", id(lp), self.ctxkey(v)[:-1]), 1)}), iv.step), cs)
        ts, tc = tr
        return (_sadd(s, ts, iv.step), self._map(lambda x: x + iv.step * tc, cs))

    def _arith(self, d: Instr, v: Value, args):
        op = d.op
        if all(not s for s, _ in args):
            return (_EMPTY, self._concrete(d, v, [c for _, c in args]))
        if op is O.ADD:
            s = _EMPTY
            for x, _ in args:
                s = _sadd(s, x)
            return (s, self._map(operator.add if len(args) == 2 else lambda *xs: sum(xs), *[c for _, c in args]))
        if op is O.SUB and len(args) == 2:
            (s1, c1), (s2, c2) = args
            return (_sadd(s1, s2, -1), self._map(lambda a, b: a - b, c1, c2))
        if op in (O.MUL, O.SHL) and len(args) == 2 and not d.attrs.get("hi"):
            (s1, c1), (s2, c2) = args
            if not s2 and isinstance(c2, int):
                f = (1 << c2) if op is O.SHL else c2
                return (_smul(s1, f), self._map(lambda a: a * f, c1))
            if op is O.MUL and not s1 and isinstance(c1, int):
                return (_smul(s2, c1), self._map(lambda a: a * c1, c2))
        if op is O.MAD and len(args) == 3 and not d.attrs.get("hi"):
            (s1, c1), (s2, c2), (s3, c3) = args
            if not s2 and isinstance(c2, int):
                return (_sadd(_smul(s1, c2), s3), self._map(lambda a, b: a * c2 + b, c1, c3))
            if not s1 and isinstance(c1, int):
                return (_sadd(_smul(s2, c1), s3), self._map(lambda a, b: a * c1 + b, c2, c3))
        if op is O.CVT and args:
            src = d.attrs.get("from_type") or d.args[0].type
            if not (is_float(src) or is_float(v.type)):
                if type_bits(v.type) >= type_bits(src):
                    return args[0]
                # narrowing a value a right shift already brought in range
                sd = self.mf.canon(d.args[0]).defn
                if sd is not None and sd.op is O.SHR and len(sd.args) == 2:
                    sh = _const_int(sd.args[1])
                    if sh is not None and sh >= type_bits(src) - type_bits(v.type) and \
                            not (sd.attrs.get("signed") or is_signed(sd.result.type)):  # fmt: skip
                        return args[0]
        # a trip split as P*Q + r: low bits and small moduli see only r
        got = self._periodic(d, v, args)
        if got is not None:
            return got
        # nonlinear in a symbolic operand: a new atom, if it is the same in every thread
        if any(isinstance(c, list) for _, c in args):
            raise _Unknown
        atom = (op.value, d.attrs.get("cmp"), d.attrs.get("signed"), v.type, tuple((s, c) for s, c in args))
        return (frozenset({(atom, 1)}), 0)

    def _periodic(self, d: Instr, v: Value, args):
        """``(sum of coef*Q) + c`` with every coef a positive multiple of
        ``m`` and ``0 <= c``: its low bits / its remainder by ``m`` are
        those of ``c`` (Q, the trip quotients, are >= 0)."""
        op = d.op
        if op not in (O.AND, O.REM, O.DIV, O.SHR, O.XOR, O.OR) or len(args) != 2:
            return None
        if op is O.SHR:
            magic = _magic_division(d, self.mf.canon)
            if magic is not None:
                x, div = magic
                try:
                    args = [self.get(x), (_EMPTY, div)]
                except _Unknown:
                    return None
                op = O.DIV
        (s1, c1), (s2, c2) = args
        if s2 or not isinstance(c2, int) or not s1:
            return None
        if not all(isinstance(a, tuple) and a and a[0] == "Q" and k > 0 for a, k in s1):
            return None
        cs = c1 if isinstance(c1, list) else [c1]
        if any(x < 0 for x in cs):
            return None

        def divides(m: int) -> bool:
            return m > 0 and all(k % m == 0 for _a, k in s1)

        if op is O.AND:
            m = c2 + 1
            if c2 >= 0 and m & (m - 1) == 0 and divides(m):
                return (_EMPTY, self._map(lambda x: x & c2, c1))
            return None
        if op in (O.REM, O.DIV):
            if c2 <= 0 or not divides(c2):
                return None
            if op is O.REM:
                return (_EMPTY, self._map(lambda x: x % c2, c1))
            return (frozenset((a, k // c2) for a, k in s1), self._map(lambda x: x // c2, c1))
        if op is O.SHR:
            if not 0 <= c2 < 64 or not divides(1 << c2):
                return None
            return (frozenset((a, k >> c2) for a, k in s1), self._map(lambda x: x >> c2, c1))
        # XOR / OR with a constant below 2^b, c below 2^b too
        if c2 < 0:
            return None
        b = max(1, c2.bit_length())
        if not divides(1 << b) or any(x >= 1 << b for x in cs):
            return None
        f = (lambda x: x ^ c2) if op is O.XOR else (lambda x: x | c2)
        return (s1, self._map(f, c1))

    def _concrete(self, d: Instr, v: Value, xs: list):
        op = d.op
        t = v.type
        signed = d.attrs.get("signed")
        if signed is None:
            signed = is_signed(t) or any(is_signed(a.type) for a in d.args)
        wrap = self._wrap_fn(v, signed if t not in ("pred",) else False)
        fast = _WRAPPED_OPS.get(op)
        if fast is not None and len(xs) == 2 and t != "pred" and not d.attrs.get("hi"):
            # the common binary ops: C-level maps, wrapped only when a
            # result leaves the type's range
            a, b = xs
            if not isinstance(a, list) and not isinstance(b, list):
                return wrap(fast(a, b))
            return self._wrap_list(v, signed, self._map(fast, a, b))
        if op is O.ADD:
            return self._map(lambda *a: wrap(sum(a)), *xs)
        if op is O.SUB:
            return self._map(lambda a, b: wrap(a - b), *xs)
        if op is O.MUL:
            if d.attrs.get("hi"):
                bits = self._bits(v)
                return self._map(lambda a, b: wrap((a * b) >> bits), *xs)
            return self._map(lambda a, b: wrap(a * b), *xs)
        if op is O.MAD:
            if d.attrs.get("hi"):
                bits = self._bits(v)
                return self._map(lambda a, b, c: wrap(((a * b) >> bits) + c), *xs)
            return self._map(lambda a, b, c: wrap(a * b + c), *xs)
        if op is O.SHL:
            return self._map(lambda a, b: wrap(a << b) if 0 <= b < 256 else 0, *xs)
        if op is O.SHR:
            bits = self._bits(d.args[0])
            m = (1 << bits) - 1
            if signed:
                return self._map(lambda a, b: wrap(a >> b) if b >= 0 else 0, *xs)
            return self._map(lambda a, b: wrap((a & m) >> b) if b >= 0 else 0, *xs)
        if op is O.AND:
            return self._map(lambda *a: wrap(a[0] & a[1]) if t != "pred" else int(bool(a[0]) and bool(a[1])), *xs)
        if op is O.OR:
            return self._map(lambda *a: wrap(a[0] | a[1]) if t != "pred" else int(bool(a[0]) or bool(a[1])), *xs)
        if op is O.XOR:
            return self._map(lambda *a: wrap(a[0] ^ a[1]) if t != "pred" else int(bool(a[0]) != bool(a[1])), *xs)
        if op is O.NOT:
            return self._map(lambda a: wrap(~a) if t != "pred" else int(not a), *xs)
        if op is O.NEG:
            return self._map(lambda a: wrap(-a), *xs)
        if op in (O.DIV, O.REM):
            floor = d.attrs.get("floor")
            bits = self._bits(d.args[0])
            m = (1 << bits) - 1

            def dv(a, b):
                if not signed:
                    a, b = a & m, b & m
                if b == 0:
                    raise _Unknown
                if floor:
                    return wrap(a // b if op is O.DIV else a % b)
                q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
                return wrap(q if op is O.DIV else a - q * b)

            return self._map(dv, *xs)
        if op in (O.MIN, O.MAX):
            f = min if op is O.MIN else max
            return self._map(lambda a, b: f(a, b), *xs)
        if op is O.ABS:
            return self._map(lambda a: wrap(abs(a)), *xs)
        if op is O.CVT:
            src = d.attrs.get("from_type") or d.args[0].type
            if is_float(src) or is_float(t):
                raise _Unknown
            sw = self._wrap_fn(d.args[0])
            return self._map(lambda a: wrap(sw(a)), *xs)
        if op is O.CMP:
            cmp = d.attrs.get("cmp", "eq")
            if any(is_float(a.type) for a in d.args):
                raise _Unknown
            aw = [self._wrap_fn(a, bool(signed) and cmp not in ("lo", "ls", "hi", "hs")) for a in d.args]
            fn = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
                  "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
                  "lo": lambda a, b: a < b, "ls": lambda a, b: a <= b, "hi": lambda a, b: a > b,
                  "hs": lambda a, b: a >= b}.get(cmp)  # fmt: skip
            if fn is None:
                raise _Unknown
            return self._map(lambda a, b: int(fn(aw[0](a), aw[1](b))), *xs)
        if op is O.SELECT:
            return self._map(lambda c, a, b: a if c else b, *xs)
        raise _Unknown

    # paths -----------------------------------------------------------------------
    def active(self, block: Block) -> list[bool] | None:
        """Which threads may run ``block`` (from its plain controlling branches
        whose conditions are known per thread); None: all of them."""
        return self.activity(block)[0]

    def activity(self, block: Block) -> tuple[list[bool] | None, bool]:
        """``(active, exact)``: which threads may run ``block``, and whether
        that is exactly the threads that run it (every branch deciding it
        known per thread, none a loop exit)."""
        key = ("active", block)
        got = self.memo.get(key)
        if got is not None:
            return got
        cfg = self.cfg
        act: list[bool] | None = None
        exact = True
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
                if any(any(s2 not in lp.blocks for s2 in dblk.succs) for lp in cfg.loops_around(dblk)):
                    exact = False
                    continue  # a loop exit: decided per trip
                tt, ff = term.targets()
                rt = block is tt or self.mf._fwd_reaches(tt, block)
                rf = block is ff or self.mf._fwd_reaches(ff, block)
                if rt == rf:
                    if not rt:
                        exact = False
                    continue
                need = rt
                try:
                    s, c = self.ev(term.args[0])
                except _Unknown:
                    exact = False
                    continue
                if s:
                    exact = False
                    continue
                if isinstance(c, int):
                    if bool(c) != need:
                        act = [False] * self.n
                    continue
                cur = [bool(x) == need for x in c]
                act = cur if act is None else [a and b for a, b in zip(act, cur)]
        got = (act, exact)
        self.memo[key] = got
        return got


_UNKNOWN = object()
_STRUCT_OPS = frozenset(
    {O.ADD, O.SUB, O.MUL, O.MAD, O.DIV, O.REM, O.NEG, O.ABS, O.MIN, O.MAX, O.AND, O.OR, O.XOR,
     O.NOT, O.SHL, O.SHR, O.CMP, O.SELECT, O.CVT}
)  # fmt: skip


def _shifted_ivs(cfg, ivs: dict) -> dict:
    """Header PHIs ``x = phi(s, y + c)`` (or ``phi(s, y)``, ``phi(s, y - c)``)
    with ``y`` a constant-step induction variable of the same loop and ``c`` a
    constant: x -> (loop, y's induction variable, c, s). Whether ``x`` is
    itself an induction variable (``s = y.start - step + c``) is for the
    concrete pass to check, thread by thread."""
    out: dict = {}
    for lp in cfg.loops:
        for phi in lp.header.phis():
            x = phi.result
            if x in ivs:
                continue
            pairs = list(zip(lp.header.preds, phi.args))
            outside = {a for p, a in pairs if p not in lp.blocks}
            inside = {a for p, a in pairs if p in lp.blocks}
            if len(outside) != 1 or len(inside) != 1:
                continue
            (nxt,) = inside
            y, c = nxt, 0
            d = nxt.defn
            if d is not None and d.op in (O.ADD, O.SUB) and len(d.args) == 2:
                a0, a1 = d.args
                orders = ((a0, a1), (a1, a0)) if d.op is O.ADD else ((a0, a1),)
                for a, b in orders:
                    k = _const_int(b)
                    if k is not None and a in ivs:
                        y, c = a, (k if d.op is O.ADD else -k)
                        break
            hit = ivs.get(y)
            if hit is None or hit[0] is not lp:
                continue
            out[x] = (lp, hit[1], c, next(iter(outside)))
    return out


def _magic_division(d: Instr, canon) -> tuple[Value, int] | None:
    """``(x * M) >> s`` (``mul.wide``/``mul.lo`` then a right shift), the way a
    compiler divides an unsigned 32-bit ``x`` by a constant: (x, divisor)."""
    if d.op is not O.SHR or len(d.args) != 2 or d.attrs.get("signed"):
        return None
    s = _const_int(d.args[1])
    m = canon(d.args[0]).defn
    if s is None or m is None or m.op is not O.MUL or len(m.args) != 2:
        return None
    M = _const_int(m.args[1])
    x = m.args[0]
    if M is None:
        M, x = _const_int(m.args[0]), m.args[1]
    if M is None:
        return None
    M &= (1 << 32) - 1
    shift = s + (32 if m.attrs.get("hi") else 0)
    if m.attrs.get("hi") and m.attrs.get("wide"):
        return None
    if not m.attrs.get("hi") and type_bits(m.result.type) < 64:
        return None
    if M == 0 or not 32 <= shift < 64:
        return None
    div = round((1 << shift) / M)
    if div < 2 or div > 1 << 16:
        return None
    for x0 in (*range(0, 3000), (1 << 32) - 1, (1 << 31) + 7, 123456789, 4000000000):
        if (x0 * M) >> shift != x0 // div:
            return None
    return x, div


def _const_int(v: Value | None) -> int | None:
    d = v.defn if v is not None else None
    if d is not None and d.op is O.CONST and isinstance(d.attrs.get("value"), int) and \
            not isinstance(d.attrs.get("value"), bool):  # fmt: skip
        return d.attrs["value"]
    return None


def _geometric(kernel: Kernel, canon: _Canon) -> dict:
    """Header PHIs multiplied or divided by a power of two each trip:
    phi -> (start, "left"/"right", bits per trip, "logical"/"arith"/"trunc")."""
    out = {}
    cfg = cfg_of(kernel)
    for lp in cfg.loops:
        ivs = {iv.phi for iv in lp.ivs}
        for phi in lp.header.phis():
            v = phi.result
            if v in ivs:
                continue
            outside = {canon(a) for p, a in zip(lp.header.preds, phi.args) if p not in lp.blocks}
            inside = {canon(a) for p, a in zip(lp.header.preds, phi.args) if p in lp.blocks}
            if len(outside) != 1 or len(inside) != 1:
                continue
            nxt = next(iter(inside))
            d = nxt.defn
            if d is None or len(d.args) != 2 or d.op not in (O.MUL, O.SHL, O.DIV, O.SHR):
                continue
            a0, a1 = canon(d.args[0]), canon(d.args[1])
            if a0 is not v and not (d.op is O.MUL and a1 is v):
                continue
            other = a1 if a0 is v else a0
            c = other.defn.attrs.get("value") if other.defn is not None and other.defn.op is O.CONST else None
            if not isinstance(c, int) or isinstance(c, bool) or c <= 0:
                continue
            signed = d.attrs.get("signed")
            if signed is None:
                signed = is_signed(v.type) or is_signed(nxt.type)
            if d.op in (O.SHL, O.SHR):
                bits = c
            elif c & (c - 1) == 0:
                bits = c.bit_length() - 1
            else:
                continue
            if bits == 0:
                continue
            if d.op in (O.MUL, O.SHL):
                out[v] = (next(iter(outside)), "left", bits, "")
            elif d.op is O.SHR:
                out[v] = (next(iter(outside)), "right", bits, "arith" if signed else "logical")
            else:
                kind = "arith" if d.attrs.get("floor") else ("trunc" if signed else "logical")
                out[v] = (next(iter(outside)), "right", bits, kind)
    return out


def _period(kernel: Kernel, cap: int = 48) -> int:
    """The trip period the concrete pass enumerates: the lcm of the small
    masks, moduli and shifts the kernel applies (``k & 1``, ``k % 3``)."""
    cands = set()
    cfg = cfg_of(kernel)
    dep: set[Value] = set()  # values that depend on a loop's trip
    for lp in cfg.loops:
        for phi in lp.header.phis():
            dep.add(phi.result)
    with_results = [ins for ins in kernel.instrs() if ins.results]
    for _ in range(3):
        n = len(dep)
        for ins in with_results:
            if (ins.op is not O.PHI or ins.results[0] not in dep) and not dep.isdisjoint(ins.args):
                dep.update(ins.results)
        if len(dep) == n:
            break
    for ins in kernel.instrs():
        magic = _magic_division(ins, lambda v: v) if ins.op is O.SHR else None
        if magic is not None and magic[0] in dep and magic[1] <= 16:
            cands.add(magic[1])
            continue
        if ins.op not in (O.AND, O.REM, O.DIV, O.SHR) or len(ins.args) != 2 or ins.args[0] not in dep:
            continue
        d = ins.args[1].defn
        if d is None or d.op is not O.CONST or not isinstance(d.attrs.get("value"), int):
            continue
        c = d.attrs["value"]
        if ins.op is O.AND and c >= 0 and (c + 1) & c == 0 and 2 <= c + 1 <= 16:
            cands.add(c + 1)
        elif ins.op in (O.REM, O.DIV) and 2 <= c <= 16:
            cands.add(c)
        elif ins.op is O.SHR and 1 <= c <= 4:
            cands.add(1 << c)
    p = 1
    for c in sorted(cands):
        q = p * c // math.gcd(p, c)
        if q <= cap:
            p = q
    return p


# Binary ops `_ThreadEval._concrete` computes with one C-level map, then wraps.
_WRAPPED_OPS = {O.ADD: operator.add, O.SUB: operator.sub, O.MUL: operator.mul, O.AND: operator.and_,
                O.OR: operator.or_, O.XOR: operator.xor}  # fmt: skip


def _addr_terms(ev: _ThreadEval, acc: Access):
    """``(sym, per-thread byte offsets)`` of an access's address, or _Unknown."""
    mf = ev.mf
    if mf.k.language == "python" and acc.index is not None and acc.buffer is not None \
            and len(acc.index) == len(acc.buffer.shape) and all(acc.buffer.shape):  # fmt: skip
        sym = _EMPTY
        lin: Any = 0
        for x, dim in zip(acc.index, acc.buffer.shape):
            s, c = ev.ev(x)
            if s:
                # a symbolic index may be negative, and Numba wraps it: only
                # trip quotients (>= 0) with a non-negative rest are kept
                cs = c if isinstance(c, list) else [c]
                if not all(isinstance(a, tuple) and a[0] == "Q" and k > 0 for a, k in s) or min(cs) < 0:
                    raise _Unknown
            else:
                c = ev._map(lambda a, dim=dim: a + dim if a < 0 else a, c)
            sym = _sadd(_smul(sym, dim), s)
            lin = ev._map(lambda a, b, dim=dim: a * dim + b, lin, c)
        sym = _sadd(_smul(sym, acc.elem), frozenset({(("buf", acc.root), 1)}))
        return (sym, ev._map(lambda a: a * acc.elem, lin))
    return ev.ev(acc.addr)


def _bank_conflicts(mf: MemoryFacts) -> list[BankConflict]:
    out: list[BankConflict] = []
    # every warp of the launch's block, or (a kernel that reads only tid.x,
    # with no launch shape) of the largest flat block its bounds allow
    block, flat = mf.concrete_block
    if block is None:
        return out
    assumed = "assuming a one-dimensional block, as the kernel reads only tid.x; the launch shape is not given" \
        if flat else ""  # fmt: skip
    # Unrolled code repeats one lane pattern at many offsets: banks repeat
    # every 128 bytes, so a warp's verdict depends only on its lanes'
    # offsets from the first and on that first address modulo 128.
    memo: dict[tuple, tuple] = {}
    for acc in mf.shared:
        ins = acc.instr
        if ins.op not in (O.LOAD, O.STORE, O.ATOMIC, O.CP_ASYNC):
            continue
        if acc.width > 16 or acc.width <= 0:
            continue
        # the first trip residue of the loops around the access, the
        # evaluator TL202 uses there too (with the warp level's facts)
        ev = mf._evaluator(tuple((lp, ("free", 0, "o")) for lp in mf.phases.loops(ins.block)), mf.warp_info)
        nwarps = -(-ev.n // 32)
        try:
            s, c = _addr_terms(ev, acc)
        except _Unknown:
            continue
        if isinstance(c, int):
            continue  # one address for the whole warp: a broadcast
        act = ev.active(acc.instr.block)
        rel = _warp_offsets(c) if act is None else None
        best: BankConflict | None = None
        for w in range(nwarps):
            lo, hi = w * 32, min(ev.n, w * 32 + 32)
            if act is None:
                lanes, addrs, which = range(lo, hi), c[lo:hi], hi - lo  # every lane: the count says which
            else:
                lanes = [i for i in range(lo, hi) if act[i]]
                addrs, which = [c[i] for i in lanes], tuple(i - lo for i in lanes)
            if len(lanes) < 2:
                continue
            first = addrs[0]
            pattern = rel[w] if rel is not None else tuple(map(first.__rsub__, addrs))
            key = (acc.width, first % 128, which, pattern)
            got = memo.get(key)
            if got is None:
                got = memo[key] = _warp_ways({i - lo: a for i, a in zip(lanes, addrs)}, acc.width)
            ways, worst, bank, stride = got
            if best is None or ways > best.ways:
                best = BankConflict(acc, ways, stride, w, worst, bank, "", assumed)
        if best is not None and best.ways > 1:
            best.suggestion = _padding(mf, acc, best)
            out.append(best)
    return out


def _warp_offsets(c: list[int]) -> list | None:
    """Per warp of ``c`` (one address per thread), its lanes' offsets from
    its first lane as bytes (a memo key), with numpy: a large kernel has
    thousands of accesses of eight warps each. None when an address or a
    difference might not fit in 64 bits (the caller then builds the keys
    itself)."""
    import numpy

    lo, hi = min(c), max(c)
    if lo < -(1 << 62) or hi >= 1 << 62:
        return None  # the differences might not fit either
    arr = numpy.array(c, dtype=numpy.int64)
    n = len(c)
    full = n - n % 32
    out = []
    if full:
        warps = arr[:full].reshape(-1, 32)
        raw = (warps - warps[:, :1]).tobytes()
        out = [raw[i : i + 256] for i in range(0, len(raw), 256)]
    if full < n:
        part = arr[full:]
        out.append((part - part[0]).tobytes())
    return out


def _warp_ways(addrs: dict[int, int], width: int):
    """(ways, lanes of the worst bank, bank, lane stride in bytes): the most
    distinct 4-byte words one bank serves in one phase of the access."""
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


def _padding(mf: MemoryFacts, acc: Access, bc: BankConflict) -> str:
    """The padding that puts consecutive lanes in distinct banks."""
    name = pretty_buffer(acc.root)
    stride = bc.stride_bytes
    buf = acc.buffer
    if not stride or stride % 4:
        return f"pad the rows of `{name}` by one 4-byte word, or swizzle the index, so the lanes fall in distinct banks"
    words = stride // 4
    if mf.k.language == "python" and buf is not None and buf.shape and all(buf.shape):
        dt = _np_dtype(buf.dtype)
        per = max(1, 4 // max(1, acc.elem))
        if len(buf.shape) == 2 and stride == buf.shape[1] * acc.elem:
            rows, cols = buf.shape
            return (f"pad each row by one element: declare `{name} = cuda.shared.array(({rows}, {cols + per}), {dt})` "
                    "and keep the same indices")  # fmt: skip
        if len(buf.shape) == 1 and stride % acc.elem == 0:
            row = stride // acc.elem
            n = buf.shape[0]
            rows = -(-n // row)
            return (f"lanes are {row} elements apart: pad each row of {row} to {row + per} (allocate "
                    f"{rows * (row + per)} elements and index `{name}[t * {row + per} + k]` instead of "
                    f"`{name}[t * {row} + k]`)")  # fmt: skip
    return (f"lanes are {stride} bytes ({words} words) apart: pad each row of `{name}` by one 4-byte word, to a row "
            f"stride of {stride + 4} bytes (for a {words}x{words} float tile, "
            f"declare it `[{words}][{words + 1}]`)")  # fmt: skip


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
