"""The race search (TL201 shared-race, TL204 async-copy-hazard).

Candidates: for TL201, the pairs of plain accesses (one of them a write)
that one barrier phase reaches, pairs of two warps against the workgroup
phases and pairs of one warp against the warp phases of their class of lane
pairs (`warp_masks`: the partial-mask syncs that order them); for TL204, every
access against the copies pending in its phase (`copies.copy_walk`), and the
copying thread's own accesses before the wait that retires the copy.

Deciding a pair: thread ranks, the concrete pass, then Z3
    Two threads whose addresses are one uniform base plus the same
    multiple of their linear rank never meet (`ranks`), launch shape or
    not. With the launch shape known, the concrete pass (`concrete`) evaluates
    both addresses for every thread of the block at once
    (`evaluator.ThreadEval`) and clears the pairs no two threads can
    collide on, or finds a colliding pair of threads: when no loop or
    uniform condition is left in doubt that pair is the witness, otherwise
    Z3 confirms. Every other pair is encoded for two threads with the
    `encoder.MemoryEncoder` (geometric loop counters like ``s //= 2`` in
    closed form, redundant PHI webs seen through, integer trip validity
    including "the counter does not wrap"): both footprints, the launch
    shape, each thread's loop trips, the path conditions, the uniform
    branches, and both accesses in bounds (an access that leaves its array
    is TL202's finding). SAT: a race with its witness (threads, trips,
    inputs, offset). UNSAT: ordered or disjoint. UNKNOWN: reported anyway,
    saying the solver gave up (a pair the solver could not tell apart is
    never dropped). Queries go through a bit-blasting tactic with the
    deterministic resource limit (`query.solve_bv`).
"""

from __future__ import annotations

import bisect
import logging
from collections import defaultdict
from typing import TYPE_CHECKING

from tolk_lint import budget
from tolk_lint.analysis import smt
from tolk_lint.analysis.memory.accesses import instr_text
from tolk_lint.analysis.memory.concrete import ConcretePairs
from tolk_lint.analysis.memory.copies import compose, copy_walk
from tolk_lint.analysis.memory.core import STATS
from tolk_lint.analysis.memory.loops import inside_successor, never_left_at
from tolk_lint.analysis.memory.phases import compatible, loose, normalize, vec_repr
from tolk_lint.analysis.memory.query import model_value, overflowing_thread
from tolk_lint.analysis.memory.race_findings import Race, direct_race, race_finding
from tolk_lint.analysis.memory.ranks import decode_private, residue_private, thread_private
from tolk_lint.analysis.memory.warp_masks import lane_pair_constraint

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.accesses import Access
    from tolk_lint.analysis.memory.core import MemoryCore
    from tolk_lint.analysis.memory.phases import Vec
    from tolk_lint.analysis.memory.query import Query
    from tolk_lint.ir.cfg import Loop

log = logging.getLogger("tolk_lint.memory")

MAX_PAIRS = 20000  # candidate pairs per kernel solved (beyond: `truncated`, and the rest are not asked)


def find_races(mf: MemoryCore) -> list[Race]:
    """The races of one kernel (TL201 and TL204), in the order they were found."""
    return RaceSearch(mf).run()


class RaceSearch:
    """One kernel's race search: the candidate pairs of its phases, each
    group of partners through the concrete pass, then the solver."""

    def __init__(self, mf: MemoryCore):
        self.mf = mf
        self.concrete = ConcretePairs(mf)
        self._found: set = set()  # (code, line, other line) of the races found: not asked about again
        self._race_of: dict[tuple, Race] = {}  # (code, line, other line) -> the first race found there
        self._kind_vec = None  # the trips of the partner of the copy last reported (see `race_kind`)
        self._starts: dict[tuple, set] = {}  # TL201 pair -> the phase starts it was found in (`_phase_terms`)
        self._level: str | None = None  # the level whose TL201 pairs are being solved
        self._lane_rows: list[int] | None = None  # the lane classes of the warp sync whose pairs are solved
        self._never_left: dict[tuple, bool] = {}  # (loop, trip) -> `loops.never_left_at`

    def run(self) -> list[Race]:
        """TL201's races, then TL204's hazards."""
        if not self.mf.shared:
            return []
        ph = self.mf.phases
        out: list[Race] = []
        # TL201: plain accesses, per phase; pairs of two warps against the
        # workgroup phases, pairs of one warp against the warp phases.
        levels = [("workgroup", False if ph.has_warp_sync else None, None)]
        if ph.has_warp_sync:
            levels += [(level, True, rows) for level, rows in ph.lanes.classes]
        for level, same_warp, lane_rows in levels:
            cands: dict[tuple, bool] = {}
            for start in ph.starts(level):
                budget.check("the race search (the %s phases' accesses)", level)
                reached = ph.phase_paths(start, level)
                # pairs of (access, trip vector), each with the decisions of the paths to it
                # (`_decisions`): one pair of agreeing paths makes the candidate
                paths = {key: d for key, d in _decisions(reached).items() if key[0].kind != "copy"}
                items = sorted(paths, key=lambda x: (x[0].order, vec_repr(x[1])))
                # a pair needs a writer: a reader is paired with the writers after it only
                writers = [j for j, it in enumerate(items) if it[0].writes]
                for i, (a, va) in enumerate(items):
                    budget.check("the race search (pairing access %d of %d)", i + 1, len(items))
                    later = items[i:] if a.writes else [items[j] for j in writers[bisect.bisect_left(writers, i):]]
                    for b, vb in later:
                        if a.kind == "atomic" and b.kind == "atomic":
                            continue
                        if not self._may_alias(a, b) or not _agree(paths[(a, va)], paths[(b, vb)]):
                            continue
                        if self._infeasible(a, va, b, vb):
                            continue
                        key = normalize(a, va, b, vb)
                        if a is b:
                            alt = normalize(b, vb, a, va)
                            if repr(vec_repr(alt[3])) < repr(vec_repr(key[3])):
                                key = alt
                        cands[key] = False
                        self._starts.setdefault((level,) + _pair_id(key), set()).add(start)
            self._level = level
            out += self._solve_pairs(cands, "TL201", same_warp=same_warp, lane_rows=lane_rows)
            self._level = None
        # TL204: every access against the copies pending in its phase
        copies = [a for a in self.mf.shared if a.kind == "copy"]
        if copies:
            cands2: dict[tuple, bool] = {}
            dead = self.mf.dead_edges
            walks = {c: copy_walk(ph, c, dead=dead) for c in copies}
            # the phase a copy is issued in: anything in it, before or after the copy
            for start in ph.starts("workgroup"):
                budget.check("the race search (the cp.async copies' phases)")
                reached = ph.phase_paths(start, "workgroup")
                # each access at each trip vector with the uniform branch decisions of the paths
                # that reach it there: compared per pair of (access, vector), a pair being a
                # candidate when one decision of each agrees (a pipelined wmma kernel: 4 million
                # comparisons pair by pair, 12 of its 22 s)
                paths = _decisions(reached)
                for c, vcs in reached.items():
                    if c.kind != "copy":
                        continue
                    for vc in dict.fromkeys(v for v, _ in vcs):
                        for x, vxs in reached.items():
                            if not self._may_alias(c, x):
                                continue
                            for vx in dict.fromkeys(v for v, _ in vxs):
                                key = normalize(c, vc, x, vx)
                                if key in cands2 or not _agree(paths[(c, vc)], paths[(x, vx)]):
                                    continue
                                if not self._infeasible(c, vc, x, vx):
                                    cands2[key] = False
            # the phases it stays pending in: what comes after it there
            for c, w in walks.items():
                budget.check("the race search (the phases each cp.async copy stays pending in)")
                for bar, wv in w.bars:
                    reached = ph.phase(bar, "workgroup")
                    for x, vxs in reached.items():
                        if not self._may_alias(c, x):
                            continue
                        for vx in vxs:
                            cx = compose(wv, vx)
                            if self._infeasible(c, ph.vec0(c.instr.block), x, cx):
                                continue
                            key = normalize(c, ph.vec0(c.instr.block), x, cx)
                            cands2.setdefault(key, True)
            out += self._solve_pairs(cands2, "TL204", walks=walks)
            # the copying thread's own accesses before the wait that retires the copy
            own: dict[tuple, bool] = {}
            for c, w in walks.items():
                for x, vx in w.own:
                    if not self._may_alias(c, x):
                        continue
                    own[normalize(c, ph.vec0(c.instr.block), x, vx)] = True
            out += self._solve_pairs(own, "TL204", walks=walks, same_thread=True)
        return out

    def _infeasible(self, a: Access, va: Vec, b: Access, vb: Vec) -> bool:
        """Two paths of one phase that a uniform loop exit splits: one thread
        is still in the loop at a trip where the other already left it (in
        the same trip of the enclosing loop). Every thread leaves a loop
        whose exit is uniform at the same trip. Or one path that leaves a
        loop at a trip where no thread can (`loops.never_left_at`: bitonic
        sort's inner loop, ``j = k // 2 >= 1``, skipped by no thread)."""
        if any(self._cannot_leave(lp, n) for lp, k, n in va + vb if k in ("habs", "xabs")):
            return True
        for x, vx, y, vy in ((a, va, b, vb), (b, vb, a, va)):
            dx = {lp: (k, n) for lp, k, n in vx}
            for lp, k, n in vy:
                if k not in ("hrel", "habs") or lp in self.mf.info.divergent_loops or lp.parent is None:
                    continue
                mine = dx.get(lp)
                outer = lp.parent
                if mine is None or mine[0] != k[1:]:
                    continue
                ox, oy = dx.get(outer), next(((kk, nn) for l2, kk, nn in vy if l2 is outer), None)
                if ox is None or oy is None or ox[0] != oy[0] or loose(ox[0]) or oy[1] != ox[1] + 1:
                    continue
                if mine[1] > n or (mine[1] == n and self._past_exit_test(x, lp)):
                    return True
        return False

    def _cannot_leave(self, lp, n: int) -> bool:
        got = self._never_left.get((lp, n))
        if got is None:
            mf = self.mf
            got = self._never_left[(lp, n)] = never_left_at(mf.cfg, mf.canon, mf.geo, mf.info.varying, lp, n)
        return got

    def _past_exit_test(self, acc: Access, lp: Loop) -> bool:
        """Whether ``acc`` lies past the one exit test of ``lp`` (its in-loop target dominates it)."""
        cfg = self.mf.cfg
        always = [ex for ex in lp.exits if all(cfg.dominates(ex.branch.block, l) for l in lp.latches)]
        if len(always) != 1 or len(lp.exits) != 1:
            return False
        return cfg.dominates(inside_successor(always[0].branch, lp), acc.instr.block)

    def _may_alias(self, a: Access, b: Access) -> bool:
        """Whether the two may touch one buffer (an unknown buffer: any, in
        PTX; a pointer chosen between buffers: any of them)."""
        if a.roots is not None and b.roots is not None:
            return not a.roots.isdisjoint(b.roots)
        if a.root is None or b.root is None:
            return self.mf.k.language != "python"
        return a.root == b.root

    # -- solving pairs ------------------------------------------------------------------
    def _solve_pairs(self, pairs: dict[tuple, bool], code: str, same_warp: bool | None = None,
                     walks: dict | None = None, same_thread: bool = False,
                     lane_rows: list[int] | None = None) -> list[Race]:  # fmt: skip
        """Group the pairs by their first access and solve each group with
        one disjunction, peeling off the partners each model satisfies.
        ``pairs`` maps each pair to whether its second access is known to
        come after the first (found by walking on from it). ``lane_rows``:
        the class of lane pairs of one warp asked about (`warp_masks`)."""
        # in program order: which pair of a source line is asked first (and
        # so reported) must not depend on how the pairs were found (walks
        # over sets of blocks), or two runs print different lines
        items = sorted(pairs.items(), key=lambda kv: (kv[0][0].order, vec_repr(kv[0][1]),
                                                       kv[0][2].order, vec_repr(kv[0][3])))  # fmt: skip
        if len(items) > MAX_PAIRS:
            self.mf.truncated = True
            items = items[:MAX_PAIRS]
        STATS["pairs"] += len(items)
        groups: dict[tuple, list[tuple]] = defaultdict(list)
        for (a, va, b, vb), after in items:
            groups[(a, va)].append((b, vb, after))
        out: list[Race] = []
        for n, ((a, va), partners) in enumerate(groups.items(), 1):
            budget.check("the race search (%s: access %d of %d against its partners)", code, n, len(groups))
            out += self._solve_group(a, va, partners, code, same_warp, walks, same_thread, lane_rows)
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
            if loose(k) or loose(ka) or k.lstrip("x") != ka.lstrip("x"):
                return None
            if n != na:
                return n > na
            if k != ka:
                return k[0] == "x"  # the one that left the loop comes after
        return self.mf.order.program_after(a, b) if a is not b else None

    def _line_key(self, acc: Access):
        """The source line of an access, with every call it was inlined
        through: two accesses of one inlined device function are told apart
        (by the call's line alone, the first race found inside a call hid
        every other pair of that call from the search)."""
        ins = acc.instr
        if ins.origin is not None:
            return tuple((o.path, o.line) for o in ins.origin.chain())
        return ("instr", ins.id, id(ins))

    def _known(self, code: str, a: Access, b: Access, direction: bool | None) -> bool:
        ka, kb = self._line_key(a), self._line_key(b)
        if direction is True:
            return (code, kb, ka) in self._found
        if direction is False:
            return (code, ka, kb) in self._found
        return (code, kb, ka) in self._found and (code, ka, kb) in self._found

    def _covering(self, code: str, a: Access, b: Access, direction: bool | None) -> Race | None:
        """The race found already that reports the pair ``a``, ``b`` too, so
        that asking about it can change no report (None: ask): the trips
        leave the order of the two open, and the race of their two lines
        was found, in either order. Another instance of the pair (another
        trip relation, an unrolled copy) would report that race again, at
        one of the two lines: the finding there names the other line."""
        if direction is not None:
            return None
        ka, kb = self._line_key(a), self._line_key(b)
        return self._race_of.get((code, kb, ka)) or self._race_of.get((code, ka, kb))

    def _note_found(self, r: Race) -> None:
        key = (r.code, self._line_key(r.later), self._line_key(r.other))
        self._found.add(key)
        self._race_of.setdefault(key, r)

    def _solve_group(self, a: Access, va: Vec, partners: list, code: str, same_warp, walks, same_thread,
                     lane_rows=None) -> list[Race]:  # fmt: skip
        partners = [(b, vb, af) for b, vb, af in partners
                    if not self._known(code, a, b, self._direction(a, va, b, vb, af))]  # fmt: skip
        if self.mf.k.launch.block is not None:  # no launch contract to hand the covered instances to
            partners = [(b, vb, af) for b, vb, af in partners
                        if self._covering(code, a, b, self._direction(a, va, b, vb, af)) is None]  # fmt: skip
        if not same_thread:  # two threads whose addresses are a multiple of their ranks apart, or
            # whose indices decode two different counters (`ranks`)
            n = len(partners)
            mf = self.mf
            n_max, flat = mf.k.launch.threads or 1024, mf.tid_dims <= {"x"}
            partners = [(b, vb, af) for b, vb, af in partners if not thread_private(mf.ranks, a, b)
                        and not residue_private(mf.residues, a, b, n_max, flat)
                        and not decode_private(mf.ranks, a, b)]  # fmt: skip
            self.mf.concrete_cleared += n - len(partners)
        if not partners:
            return []
        after_of = {(id(b), vec_repr(vb)): af for b, vb, af in partners}
        kept, hints = self.concrete.filter_partners(a, va, [(b, vb) for b, vb, _af in partners], same_warp, same_thread)
        # collisions the concrete pass saw exactly (no loop, every deciding
        # branch known per thread): the two threads are the witness
        out: list[Race] = []
        rest = []
        for b, vb in kept:
            h = hints.get(id(b), {}).get(vec_repr(vb))
            if h is not None and h[2] and lane_rows is None and not self._around_barriers(a, va, b, vb) \
                    and not self._overflows(a, b, h):  # fmt: skip
                self._kind_vec = vb if a.kind == "copy" else None
                r = direct_race(self.mf, a, b, h, code, walks, same_thread, self._kind_vec)
                out.append(r)
                self._note_found(r)
            else:
                rest.append((b, vb))
        kept = rest
        if not kept:
            return out
        z3 = smt.z3mod()  # only now: the pairs the concrete pass decided need no solver
        try:
            q = self.mf.query()
            self._lane_rows = lane_rows
            ta, fa, bounds_a, base, wr = self._side_a(q, a, va, same_warp, same_thread)
            items = []
            for j, (b, vb) in enumerate(kept):
                budget.check("the race search (encoding partner %d of %d)", j + 1, len(kept))
                if same_thread and b is a and all(k == "rel" and n == 0 for _, k, n in vb):
                    continue  # the same dynamic instance
                after = after_of.get((id(b), vec_repr(vb)))
                tb, fb, full, ov = self._partner(q, a, ta, fa, b, vb, same_warp, same_thread, after)
                phase = self._phase_terms(q, a, va, ta, b, vb, tb, same_thread)
                if phase is not None:
                    full = z3.And(full, phase)
                items.append((b, vb, tb, fb, full, ov))
        except Exception as e:  # noqa: BLE001 - never let the solver crash a lint
            log.debug("memory: encoding failed for %s: %r", instr_text(a.instr), e, exc_info=True)
            return out + [race_finding(self.mf, a, None, b, None, code, None, "unknown", walks, same_thread, None,
                                       reason=f"the solver could not encode it ({type(e).__name__})",
                                       kind_vec=self._kind_vec)
                          for b, _vb in kept[:1]]  # fmt: skip

        def record(it, status, model):
            self._kind_vec = it[1] if a.kind == "copy" else None
            raw = model(raw=True) if callable(model) else model
            if callable(model):  # a small witness, only for a line pair not reported yet (one per finding)
                ka, kb = self._line_key(a), self._line_key(it[0])
                model = model() if not {(code, ka, kb), (code, kb, ka)} & self._found else model(raw=True)
            qx, tax, fax, itx = q, ta, fa, it
            if status == "sat" and q.enc.used_strides:
                # found over counters whose products were abstracted: confirm
                # with them exact (a model there is a real witness; none, no race)
                got = self._confirm(a, va, it, same_warp, same_thread, after_of, (model, raw))
                if got == "unsat":
                    return
                if got is not None:
                    qx, tax, fax, itx, model = got
            r = race_finding(self.mf, a, tax, itx[0], itx[2], code, qx, status, walks, same_thread, model,
                             fa=fax, fb=itx[3], kind_vec=self._kind_vec)  # fmt: skip
            ambiguous = any(loose(k) for _lp, k, _n in va) or any(loose(k) for _lp, k, _n in it[1])
            if status == "sat" and model is not None and code == "TL201" and it[0] is not a and ambiguous \
                    and qx is q:  # fmt: skip
                r = self._prefer_same_trip(q, a, ta, it, base, r, fa, walks, same_thread) or r
            r.goal = (q, z3.And(*base, it[4]))
            if qx is q:
                r.trips = (ta, it[2])
            out.append(r)
            self._note_found(r)

        def direction(it) -> bool | None:
            return self._direction(a, va, it[0], it[1], after_of.get((id(it[0]), vec_repr(it[1])), False))

        def skip(it) -> bool:
            return self._known(code, a, it[0], direction(it))

        def covered(it) -> bool:
            r = self._covering(code, a, it[0], direction(it))
            if r is None:
                return False
            if self.mf.k.launch.block is None:  # the launch contract (TL205) must rule this instance out too
                r.also.append((q, z3.And(*base, it[4]), a, it[0]))
            return True

        items = [it for it in items if not covered(it)]
        # first the addresses alone (no paths, no loop exits): most pairs are
        # told apart there, cheaply, and that proof holds for every path
        plain = [it for it in items if hints.get(id(it[0]), {}).get(vec_repr(it[1])) is None]
        cheap_base = ([wr] if wr is not None else []) + bounds_a
        survivors: list = []
        if plain and self.mf.k.launch.block is None:
            # all partners in one question, on a quarter of the budget: when
            # the solver cannot settle them together, each is asked alone
            # (one hard partner must not make the easy ones costly)
            v = self.mf.solve(q, z3.And(*cheap_base, z3.Or(*[it[5] for it in plain])),
                            self.mf.rlimit // 4 if len(plain) > 1 else None)  # fmt: skip
            if v.status == "unknown" and len(plain) > 1:
                # Each alone; a partner on the source line of one that
                # survived is kept without asking: unrolled copies of one
                # line, and the rounds below stop at a line pair's first race.
                lines: set = set()
                for it in plain:
                    line = self._line_key(it[0])
                    if line in lines or self.mf.solve(q, z3.And(*cheap_base, it[5])).status != "unsat":
                        survivors.append(it)
                        lines.add(line)
            elif v.status != "unsat":
                survivors = plain
        else:
            survivors = plain
        # partners whose collision the concrete pass found: confirm with the threads fixed
        remaining = []
        for it in items:
            h = hints.get(id(it[0]), {}).get(vec_repr(it[1]))
            if h is None:
                if it in survivors:
                    remaining.append(it)
                continue
            if skip(it):
                continue
            if not (self.concrete.terms_exact(a, h[3]) and self.concrete.terms_exact(it[0], h[4])):
                # a uniform condition may rule those threads out: ask for any threads, alone
                # (a likely race: its own small query beats a round of the disjunction)
                v = self.mf.solve(q, z3.And(*base, it[4]))
                if v.status == "sat":
                    record(it, "sat", _lazy(v))
                elif v.status == "unknown":
                    record(it, "unknown", None)
                continue
            fixed = [q.enc.linear(0) == h[0]] + ([] if same_thread else [q.enc.linear(1) == h[1]])
            v = self.mf.solve(q, z3.And(*base, *fixed, it[4]))
            if v.status == "sat":
                record(it, "sat", _lazy(v))
            else:
                remaining.append(it)
        rounds = 0
        while remaining and rounds < 64:
            budget.check("the race search (round %d, %d partners left)", rounds + 1, len(remaining))
            rounds += 1
            remaining = [it for it in remaining if not skip(it) and not covered(it)]
            if not remaining:
                break
            goal = z3.And(*base, z3.Or(*[it[4] for it in remaining]))
            v = self.mf.solve(q, goal)
            if v.status == "unsat":
                break
            if v.status == "unknown":
                # ask one by one: only the partners the solver cannot clear stay
                for it in remaining:
                    if skip(it):
                        continue
                    v1 = self.mf.solve(q, z3.And(*base, it[4])) if len(remaining) > 1 else v
                    if v1.status == "sat":
                        record(it, "sat", _lazy(v1))
                    elif v1.status == "unknown":
                        record(it, "unknown", None)
                break
            m = v.model
            hit = [it for it in remaining if z3.is_true(m.eval(it[4], model_completion=True))]
            if not hit:
                hit = remaining[:1]
            for n, it in enumerate(hit):  # the first few witnesses made small (each for its own pair)
                record(it, "sat", _lazy(v, it[4]) if n < 4 else m)
            remaining = [it for it in remaining if it not in hit]
        return out

    def _side_a(self, q: Query, a: Access, va: Vec, same_warp, same_thread):
        """The first access of a group as terms of ``q``: trips, footprint,
        staying in bounds, the conditions it runs under (thread 0)."""
        ka = (a.order, vec_repr(va), 0)
        ta = q.trip_exprs(a, va, f"{a.order}a")
        fa = q.cached(("fp",) + ka, lambda: q.footprint(a, 0, ta))
        bounds_a = q.cached(("ib",) + ka, lambda: q.in_bounds(a, 0, ta, fa))
        base = list(q.cached(("cond",) + ka, lambda: q.conditions(a, 0, ta, va))) + bounds_a
        wr = q.warp_rel(same_warp) if not same_thread else None
        lane_rows = self._lane_rows
        if wr is not None and lane_rows is not None:  # the pair's lanes lie in one class of the warp sync
            lanes = [q.z3.URem(q.enc.linear(t), 32) for t in (0, 1)]
            wr = q.z3.And(wr, lane_pair_constraint(q.z3, lanes[0], lanes[1], lane_rows))
        if wr is not None:
            base.append(wr)
        return ta, fa, bounds_a, base, wr

    def _partner(self, q: Query, a: Access, ta, fa, b: Access, vb: Vec, same_warp, same_thread, after):
        """A partner of ``a`` as terms of ``q`` (thread 1, or thread 0 for the
        copying thread's own hazards): its trips and footprint, and the race
        with and without its conditions."""
        z3 = q.z3
        t1 = 0 if same_thread else 1
        side = "s" if same_thread else "b"
        kb = (b.order, vec_repr(vb), t1, side)
        tb = q.trip_exprs(b, vb, f"{b.order}{side}")
        fb = q.cached(("fp",) + kb, lambda: q.footprint(b, t1, tb))
        cond = q.cached(("cond",) + kb, lambda: q.conditions(b, t1, tb, vb))
        ov = [q.overlap(fa, fb)] + q.cached(("ib",) + kb, lambda: q.in_bounds(b, t1, tb, fb))
        if b is a and a.fragment is not None and not same_thread and same_warp is not False:
            # a wmma fragment is stored (loaded) by its warp's lanes
            # together, one `.sync.aligned` operation: two lanes of
            # one warp at one such instruction do not race
            ov.append(q.warp_rel(False))
        if same_thread or after:
            ov.append(self._later_expr(q, a, ta, b, tb))
        return tb, fb, z3.And(*(cond + ov)), z3.And(*ov)

    def _confirm(self, a: Access, va: Vec, it, same_warp, same_thread, after_of, models=()):
        """The pair ``(a, it)`` asked again with every counter's product exact
        (`Query` with ``exact``): "unsat", or (query, trips of a, footprint of
        a, the partner's item, model) for a witness, or None (no answer).
        One of ``models`` (the witness found with the products abstracted,
        small first) that already satisfies the exact question is its answer,
        with no solver asked: the abstraction's model is often exact (the
        abstracted counter at trip 0, or in a loop the pair does not need)."""
        try:
            q2 = self.mf.query(exact=True)
            ta, fa, _bounds, base, _wr = self._side_a(q2, a, va, same_warp, same_thread)
            b, vb = it[0], it[1]
            tb, fb, full, ov = self._partner(q2, a, ta, fa, b, vb, same_warp, same_thread,
                                             after_of.get((id(b), vec_repr(vb))))  # fmt: skip
            phase = self._phase_terms(q2, a, va, ta, b, vb, tb, same_thread)
            if phase is not None:
                full = q2.z3.And(full, phase)
            goal = q2.z3.And(*base, full)
            m = self.mf.model_of(q2, goal, *models)
            if m is not None:
                return q2, ta, fa, (b, vb, tb, fb, full, ov), m
            v = self.mf.solve(q2, goal)
        except Exception:  # noqa: BLE001
            return None
        if v.status == "unsat":
            return "unsat"
        if v.status != "sat":
            return None
        return q2, ta, fa, (b, vb, tb, fb, full, ov), v.small_model()

    def _overflows(self, a, b, hint) -> bool:
        """Whether a scaled index of the concrete pair overflows: out of
        bounds, not a race (`query.scaled_addends`); the solver decides it."""
        lang = self.mf.k.language
        return any(overflowing_thread(self.mf.evaluator(ctx), acc, lang) is not None
                   for acc, ctx in ((a, hint[3]), (b, hint[4])))  # fmt: skip

    def _around_barriers(self, a: Access, va: Vec, b: Access, vb: Vec) -> bool:
        """Whether a barrier lies on some way into ``a`` or ``b`` from a phase
        start of the pair (then which threads took the way around it is for
        the solver: `_phase_terms`)."""
        if self._level is None:
            return False
        starts = self._starts.get((self._level,) + _pair_id((a, va, b, vb)))
        if not starts:
            return False
        q = self.mf.query()
        return any(q.barrier_blocks_before(x, s, self._level) for s in starts for x in (a, b))

    def _phase_terms(self, q: Query, a: Access, va: Vec, ta, b: Access, vb: Vec, tb, same_thread):
        """For a TL201 pair: both threads run their access in one phase the
        pair was found in, each having passed none of the barriers before it
        there (`Query.in_phase`); None when no barrier lies on the way."""
        if self._level is None or same_thread:
            return None
        starts = self._starts.get((self._level,) + _pair_id((a, va, b, vb)))
        if not starts:
            return None
        z3 = q.z3
        ways = []
        for s in sorted(starts, key=lambda x: -1 if x is None else x.id):
            terms = q.in_phase(a, 0, ta, s, self._level) + q.in_phase(b, 1, tb, s, self._level)
            if not terms:
                return None  # a way in with no barrier on it: nothing to add
            ways.append(z3.And(*terms))
        return z3.Or(*ways) if len(ways) > 1 else ways[0]

    def _prefer_same_trip(self, q: Query, a: Access, ta: dict, it, base, r: Race, fa, walks, same_thread):
        """A race whose model puts the two accesses at different trips of a
        loop they share: when they can also meet at one trip, point where
        that trip's program order says (the read of a write-then-read)."""
        z3 = q.z3
        tb = it[2]
        common = [lp for lp in ta if lp in tb]
        if not common:
            return None
        m = r.model
        if m is not None and all(model_value(m, ta[lp]) == model_value(m, tb[lp]) for lp in common):
            return None
        eq = [ta[lp] == tb[lp] for lp in common]
        try:
            v = self.mf.solve(q, z3.And(*base, it[4], *eq))
        except Exception:  # noqa: BLE001
            return None
        if v.status != "sat":
            return None
        return race_finding(self.mf, a, ta, it[0], tb, r.code, q, "sat", walks, same_thread, v.small_model(), fa=fa,
                            fb=it[3], kind_vec=self._kind_vec)  # fmt: skip

    def _later_expr(self, q: Query, a: Access, ta: dict, b: Access, tb: dict):
        """``b`` runs after ``a`` in one thread's program order."""
        z3 = q.z3
        la, lb = set(self.mf.phases.loops(a.instr.block)), set(self.mf.phases.loops(b.instr.block))
        keys = [lp for lp in self.mf.cfg.loops if lp in ta and lp in tb and (lp in la or lp in lb)]
        keys.sort(key=lambda lp: lp.depth)
        expr = z3.BoolVal(self.mf.order.program_after(a, b))
        for lp in reversed(keys):
            x, y = ta[lp], tb[lp]
            expr = z3.Or(y > x, z3.And(y == x, expr))
        return expr


def _decisions(reached: dict) -> dict[tuple, list[frozenset]]:
    """``(access, trip vector) -> the decision sets of the paths that reach it
    there``, from `Phases.phase_paths`."""
    out: dict[tuple, list[frozenset]] = {}
    for a, vs in reached.items():
        for v, d in vs:
            out.setdefault((a, v), []).append(d)
    return out


def _agree(da: list[frozenset], db: list[frozenset]) -> bool:
    """Whether some path to one access and some path to the other took no
    uniform branch both ways (`phases.compatible`)."""
    if any(not d for d in da) or any(not d for d in db):
        return True
    return any(compatible(x, y) for x in da for y in db)


def _pair_id(key: tuple) -> tuple:
    """A pair's key (`normalize`) by identity of its accesses and its trips."""
    a, va, b, vb = key
    return (id(a), vec_repr(va), id(b), vec_repr(vb))


def _lazy(v, *keep):
    """The verdict's model for `record`: small when called, the first with ``raw``."""
    return lambda raw=False: v.model if raw else v.small_model(*keep)
