"""Barrier phases: what orders two accesses of two threads.

A *phase* starts at the kernel's entry or just after a barrier and runs
along every barrier-free path (`Phases`). Two accesses of two distinct
threads are unordered exactly when some phase start reaches both without a
barrier: a barrier must lie between them on both threads' paths, or they
race, and a divergent barrier still counts (its divergence is TL101's
finding). Threads that start a phase at one barrier instance share the trip
counters of the loops around it, so each reached access carries, per loop,
its trip *relative* to the phase start: ``rel n`` (the start's trip + n,
after n back edges), ``abs n`` (the loop was entered on the way: trip n),
``free`` (a barrier-free cycle: any trip), and for loops it left on the way
``x…`` (the trip it left them at) or, one enclosing trip later, ``h…``. In
a loop with one barrier the read at trip k and the write at trip k + 1 are
thus in one phase unless a barrier lies on the back-edge path between them.
Paths also record the uniform branches they took (outside loops): two
accesses whose paths took one uniform branch two ways are never in one
phase, and an edge of such a branch that no thread takes under what the
launch's arguments fix (``if (n < 2)`` skipping a loop of barriers, launched
with n = 1024: `dead_edges`) is not walked; and a thread still inside a loop whose exit is uniform cannot meet
one that left it at an earlier trip. ``bar.warp.sync`` /
``cuda.syncwarp(mask)`` end a phase for the pairs of lanes of one warp their
masks name (`warp_masks.LaneClasses`): pairs of one warp are checked, class
by class, against the phases of the level ``warp`` (full masks) or
``warp:<ids>`` (the syncs that order that class), pairs of two warps against
the workgroup-level ones.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING

from tolk_lint import budget
from tolk_lint.analysis.buffers import is_barrier
from tolk_lint.analysis.memory.warp_masks import LaneClasses
from tolk_lint.analysis.uniform import barrier_functions
from tolk_lint.ir.cfg import Loop, cfg_of
from tolk_lint.ir.nodes import Block, Instr, Kernel, Module
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.accesses import Access

O = Opcode


CAP = 4  # back edges counted exactly along a barrier-free path (beyond: any trip)
Vec = tuple  # ((Loop, kind, n), ...) outer loop first; kind in "rel" "abs" "relge" "absge" "free", x-/h- prefixed


def loose(k: str) -> bool:
    """A trip known only from below (``relge``/``absge``) or not at all (``free``)."""
    return k.endswith("free") or k.endswith("ge")


class Phases:
    """Barrier-free reachability over a kernel, at the workgroup or warp level."""

    def __init__(self, kernel: Kernel, module: Module | None, accesses: list[Access]):
        self.k = kernel
        self.cfg = cfg_of(kernel)
        self.by_instr = {a.instr: a for a in accesses}
        self.holders = barrier_functions(module) if module is not None else set()
        self._phase_cache: dict[tuple, dict] = {}
        self.uniform_branches: set[Block] = set()  # set by MemoryCore: uniform two-way branches outside loops
        # set by MemoryCore: whether no thread takes the edge b -> s of such a branch (`dead_edges`)
        self.dead_edge: Callable[[Block, Block], bool] | None = None
        self._free_cycles: dict[tuple, bool] = {}
        self._loops_outer: dict[Block, tuple[Loop, ...]] = {}
        self.lanes = LaneClasses(kernel)
        self.has_warp_sync = self.lanes.any()

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
        return level != "workgroup" and self.lanes.orders(ins, level)

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
            budget.check("the race search (walking the %s phases)", level)
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
                if split and self.dead_edge is not None and self.dead_edge(b, s):
                    continue
                work.append((s, 0, self.step(vec, b, s, level), dec | {(b, j)} if split else dec))
        self._phase_cache[key] = out
        return out


def compatible(da: frozenset, db: frozenset) -> bool:
    """No uniform branch taken one way on one path and the other way on the other."""
    if not da or not db:
        return True
    ways = dict(da)
    return all(ways.get(b, j) == j for b, j in db)


def normalize(a: Access, va: Vec, b: Access, vb: Vec) -> tuple:
    """Shift ``rel`` trips so that ``a``'s are 0 (the anchor is arbitrary)."""
    shift = {lp: n for lp, k, n in va if k in ("rel", "xrel")}
    rels = ("rel", "xrel", "hrel", "relge", "xrelge")
    na = tuple((lp, k, n - shift[lp] if (k in rels and lp in shift) else n) for lp, k, n in va)
    nb = tuple((lp, k, n - shift[lp] if (k in rels and lp in shift) else n) for lp, k, n in vb)
    return (a, na, b, nb)


def vec_repr(v: Vec) -> tuple:
    return tuple((lp.header.name, k, n) for lp, k, n in v)
