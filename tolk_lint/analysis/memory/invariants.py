"""Loop invariants proved by induction: the ranges a loop's header values keep.

The encoder gives a header PHI at trip k as a closed form (``start + step *
k``, wrapping at its width) or as a free function of k (a loop-carried
value); neither knows the tests the loop runs on it. So a block-stride
counter (``for (i = tid; i < 256; i += blockDim.x)``) wraps back below 256
at some huge trip, a ring index (``slot++; if (slot == 32) slot = 0;``) is
any value, and an access through them leaves its array at a trip that never
runs. Here each loop gets the facts about its header values that hold at
every trip its header is reached:

- candidates (`candidates`): ``v < b``, ``v <= b``, ``v >= b`` (signed and
  unsigned) for ``b`` a loop-invariant value that ``v`` (or ``v + c``, or
  the value ``v`` takes on the back edge) is compared with in the loop, the
  same bound less ``c``, zero, and ``v``'s start;
- each is checked at the loop's entry (the start values, given the path
  into the loop) and kept only if it is inductive: assuming every kept
  candidate of the header values at some trip (each a free symbol), and the
  path from the header to a latch, it holds of the values that latch sends
  back. Candidates that fail are dropped until the rest prove one another
  (Houdini: Flanagan and Leino, 2001); a question the solver cannot answer
  drops them all.

The survivors are true of every real execution, so a query may assume them
at the trips it names (`Query.conditions`), and the encoder at a loop's exit
trip, once the thread entered the loop. A counter of a signed comparison
does not overflow in the induction step either (C's signed overflow is
undefined; the same assumption as `Query.counted`). The proofs use the
invariants of the loops before and inside the loop (computed first; a loop
being proved has none while it is).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tolk_lint import budget
from tolk_lint.analysis import smt
from tolk_lint.analysis.memory.encoder import MemoryEncoder
from tolk_lint.analysis.memory.query import TRIP_BOUND, solve_bv
from tolk_lint.ir.nodes import Value, is_float, is_signed
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.core import MemoryCore
    from tolk_lint.ir.cfg import Loop

log = logging.getLogger("tolk_lint.memory")
O = Opcode

MAX_CANDIDATES = 64  # per loop
MAX_ROUNDS = 12  # Houdini rounds per loop
RELATIONS = ("lt", "le", "ge", "lo", "ls", "hs")


@dataclass(frozen=True)
class Fact:
    """``phi REL bound + offset`` (``bound`` None: the constant ``offset``)."""

    phi: Value
    rel: str  # lt le ge (signed), lo ls hs (unsigned)
    bound: Value | None
    offset: int


def _integer(v: Value) -> bool:
    return v.type not in ("pred", "ptr") and not is_float(v.type)


def _offsets(lp: Loop, v: Value, canon) -> dict[Value, int | None]:
    """The values of the loop that are ``v + c`` (c known) or what ``v``
    takes on the back edge (None: compared bounds apply to ``v`` itself)."""
    out: dict[Value, int | None] = {v: 0}
    d = v.defn
    for p, a in zip(lp.header.preds, d.args):
        if p in lp.blocks:
            out.setdefault(a, None)
    for b in lp.blocks:
        for ins in b.instrs:
            if ins.op not in (O.ADD, O.SUB) or len(ins.args) != 2 or not ins.results:
                continue
            x, y = canon(ins.args[0]), ins.args[1]
            c = y.defn.attrs.get("value") if y.defn is not None and y.defn.op is O.CONST else None
            if x is not v or not isinstance(c, int) or isinstance(c, bool):
                if ins.op is O.ADD and canon(ins.args[1]) is v and ins.args[0].defn is not None \
                        and ins.args[0].defn.op is O.CONST:  # fmt: skip
                    c = ins.args[0].defn.attrs.get("value")
                    if isinstance(c, int) and not isinstance(c, bool):
                        out.setdefault(ins.results[0], c)
                continue
            out.setdefault(ins.results[0], c if ins.op is O.ADD else -c)
    return out


def candidates(mf: MemoryCore, lp: Loop) -> list[Fact]:
    """The facts to try for ``lp``'s integer header values (see the module docstring)."""
    cfg = mf.cfg
    canon = mf.canon
    out: list[Fact] = []
    seen: set = set()

    def add(phi, rel, bound, off):
        key = (phi, rel, bound, off)
        if key not in seen and len(out) < MAX_CANDIDATES:
            seen.add(key)
            out.append(Fact(phi, rel, bound, off))

    cmps = [ins for b in lp.blocks for ins in b.instrs if ins.op is O.CMP and len(ins.args) == 2]
    for phi in lp.header.phis():
        v = phi.result
        if not _integer(v) or canon(v) is not v:
            continue
        offs = _offsets(lp, v, canon)
        bounds: list[tuple[Value | None, int]] = [(None, 0)]
        for ins in cmps:
            for x, y in ((ins.args[0], ins.args[1]), (ins.args[1], ins.args[0])):
                if x not in offs or not cfg.invariant(y, lp) or not _integer(y):
                    continue
                c = offs[x]
                const = y.defn.attrs.get("value") if y.defn is not None and y.defn.op is O.CONST else None
                if isinstance(const, int) and not isinstance(const, bool):
                    bounds.append((None, const))
                    if c:
                        bounds.append((None, const - c))
                else:
                    bounds.append((y, 0))
                    if c:
                        bounds.append((y, -c))
        for b, off in dict.fromkeys(bounds):
            for rel in RELATIONS:
                add(v, rel, b, off)
        starts = {a for p, a in zip(lp.header.preds, phi.args) if p not in lp.blocks}
        if len(starts) == 1:
            (s,) = starts
            if _integer(s):
                for rel in ("ge", "le", "hs", "ls"):
                    add(v, rel, s, 0)
    return out


def compare(z3, rel: str, a, b):
    return {"lt": lambda: a < b, "le": lambda: a <= b, "ge": lambda: a >= b, "lo": lambda: z3.ULT(a, b),
            "ls": lambda: z3.ULE(a, b), "hs": lambda: z3.UGE(a, b)}[rel]()  # fmt: skip


def fact_term(enc: MemoryEncoder, f: Fact, value, t: int):
    """``f`` of ``value`` (the header value's term) in thread ``t``, in
    ``enc``'s current trip context."""
    z3 = enc.z3
    x = enc._bv(value)
    w = x.size()
    if f.bound is None:
        b = z3.BitVecVal(f.offset % (1 << w), w)
    else:
        b = enc.fit(enc._bv(enc.enc(f.bound, t)), w, is_signed(f.bound.type) or f.rel in ("lt", "le", "ge"))
        if f.offset:
            b = b + z3.BitVecVal(f.offset % (1 << w), w)
    return compare(z3, f.rel, x, b)


class LoopInvariants:
    """The proved facts of a kernel's loops, computed on first use."""

    def __init__(self, mf: MemoryCore):
        self.mf = mf
        self._facts: dict[Loop, tuple[Fact, ...]] = {}
        self._busy: set[Loop] = set()
        self.proved = 0  # facts kept, over every loop asked about

    def facts(self, lp: Loop) -> tuple[Fact, ...]:
        got = self._facts.get(lp)
        if got is not None:
            return got
        if lp in self._busy:
            return ()
        self._busy.add(lp)
        try:
            got = self._prove(lp)
        except budget.BudgetExceeded:
            raise
        except Exception as e:  # noqa: BLE001 - never let the solver crash a lint
            log.debug("memory: loop invariants failed: %r", e, exc_info=True)
            got = ()
        finally:
            self._busy.discard(lp)
        self._facts[lp] = got
        self.proved += len(got)
        return got

    def terms(self, enc: MemoryEncoder, lp: Loop, t: int, trip) -> list:
        """The facts of ``lp`` at ``trip`` in thread ``t``, as terms of ``enc``."""
        facts = self.facts(lp)
        if not facts:
            return []
        saved = enc.trips.get(lp)
        pair = list(saved) if saved else [trip, trip]
        pair[t] = trip
        enc.trips[lp] = (pair[0], pair[1])
        try:
            return [fact_term(enc, f, enc.enc(f.phi, t), t) for f in facts]
        finally:
            enc.restore_trip(lp, saved)

    # -- the proof -------------------------------------------------------------------
    def _encoder(self, lp: Loop, state: bool) -> MemoryEncoder:
        mf = self.mf
        enc = MemoryEncoder(mf.k, mf.info, "workgroup", point=None)
        enc.canon = mf.canon
        enc.geo = mf.geo
        enc.invariants = self
        smt._assume(enc)
        z3 = enc.z3
        # the loops around the header run some trip; the loop itself too (in the step)
        around = mf.cfg.loops_around(lp.header)
        for x in around if state else around[1:]:
            k = z3.BitVec(f"inv_k_{x.header.name}", enc._trip_width)
            enc.constraints += [k >= 0, k < TRIP_BOUND]
            enc.trips[x] = (k, k)
        if state:
            enc.state = {phi.result: enc.fresh(f"st_{phi.result.name}", phi.result.type, 0)
                         for phi in lp.header.phis()}  # fmt: skip
        return enc

    def _houdini(self, enc: MemoryEncoder, cands: list[Fact], cases: list[tuple[Any, dict]],
                 assume) -> list[Fact]:  # fmt: skip
        """The candidates that hold of every case's values whenever its
        condition does (``assume(kept)``: the assumptions, given the kept ones)."""
        z3 = enc.z3
        kept = list(cands)
        rlimit = max(1, self.mf.rlimit // 4)
        for _ in range(MAX_ROUNDS):
            if not kept:
                return []
            budget.check("proving loop invariants")
            goals = []
            terms: list[tuple[Fact, Any]] = []
            for cond, values in cases:
                here = []
                for f in kept:
                    v = values.get(f.phi)
                    if v is None:
                        continue
                    term = fact_term(enc, f, v, 0)
                    terms.append((f, term))
                    here.append(z3.Not(term))
                if here:
                    goals.append(z3.And(cond, z3.Or(*here)))
            if not goals:
                return kept
            v = solve_bv(enc, z3.And(*assume(kept), z3.Or(*goals)), rlimit, fallback=False)
            if v.status == "unsat":
                return kept
            if v.status != "sat":
                return []
            m = v.model
            bad = {f for f, term in terms if not z3.is_true(m.eval(term, model_completion=True))}
            if not bad:
                return []  # the model breaks none of them: cannot tell which
            kept = [f for f in kept if f not in bad]
        return []

    def _prove(self, lp: Loop) -> tuple[Fact, ...]:
        mf = self.mf
        cfg = mf.cfg
        if any(cfg.loop_of(l) is not lp for l in lp.latches):
            return ()
        cands = candidates(mf, lp)
        if not cands:
            return ()
        z3 = smt.z3mod()
        phis = [p for p in lp.header.phis() if any(f.phi is p.result for f in cands)]
        # the entry: the start values, given the path into the loop
        base = self._encoder(lp, state=False)
        entry = base.loop_entry_condition(lp, 0)
        starts = {}
        for p in phis:
            outside = {a for q, a in zip(lp.header.preds, p.args) if q not in lp.blocks}
            if len(outside) == 1:
                starts[p.result] = base.enc(next(iter(outside)), 0)
        cands = [f for f in cands if f.phi in starts]
        cands = self._houdini(base, cands, [(entry if entry is not None else z3.BoolVal(True), starts)],
                              lambda kept: [])  # fmt: skip
        if not cands:
            return ()
        # the step: from the kept facts of free header values, along each latch
        step = self._encoder(lp, state=True)
        cases = []
        for latch in lp.latches:
            pc = step.path_condition(latch, 0)
            cond = z3.And(pc if pc is not None else z3.BoolVal(True), step._edge(latch, lp.header, 0))
            values = {}
            for p in phis:
                for q, a in zip(lp.header.preds, p.args):
                    if q is latch:
                        values[p.result] = step.enc(a, 0)
            cases.append((cond, values))
        no_overflow = self._no_overflow(step, lp)

        def assume(kept):
            return no_overflow + [fact_term(step, f, step.state[f.phi], 0) for f in kept]

        return tuple(self._houdini(step, cands, cases, assume))

    def _no_overflow(self, enc: MemoryEncoder, lp: Loop) -> list:
        """A counter a signed exit test compares does not overflow its step."""
        z3 = enc.z3
        out = []
        for ex in lp.exits:
            iv = ex.iv
            if iv is None or ex.cmp not in ("lt", "le", "gt", "ge"):
                continue
            x = enc._bv(enc.state.get(iv.phi) if enc.state.get(iv.phi) is not None else enc.enc(iv.phi, 0))
            w = x.size()
            if iv.step is not None:
                s = z3.BitVecVal(iv.step, w + 1)
            else:
                s = enc.fit(enc.fit(enc._bv(enc.enc(iv.step_value, 0)), w, is_signed(iv.step_value.type)), w + 1,
                            True)  # fmt: skip
                if iv.negated:
                    s = -s
            total = z3.SignExt(1, x) + s
            out += [total >= -(1 << (w - 1)), total < (1 << (w - 1))]
        return out
