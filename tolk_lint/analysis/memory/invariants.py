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
  same bound less ``c``, zero, and ``v``'s start; for a ping-pong index
  (``src = 1 - src``, ``src ^= 1`` from a constant start) the least and
  greatest of the two values it takes (`_toggle_range`);
- for two header values stepped alike on some paths (a pipeline's head,
  stepped by each commit, and its tail, by each wait that retires a group):
  that they keep their difference, that they stay equal, and the same in
  the threads where a loop-invariant test of the loop holds or fails (a
  producer under ``if (t4x < BLOCK_SIZE)``: `Fact.guard`, an implication);
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
from tolk_lint.ir.nodes import Value, const_int, is_float, is_signed, type_bits
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.core import MemoryCore
    from tolk_lint.ir.cfg import Loop

log = logging.getLogger("tolk_lint.memory")
O = Opcode

MAX_CANDIDATES = 64  # per loop
# the kernel's cache entry of the facts proved for every block, per loop and
# the launch's other facts (kept when a contract narrows the block: choose.FOR_EVERY_BLOCK)
EVERY_BLOCK_FACTS = "loop_facts_every_block"
MAX_GUARDS = 2  # loop-invariant tests a relation of two counters is also tried under
MAX_ROUNDS = 12  # Houdini rounds per loop
ALONE_SHARE = 64  # a candidate asked alone gets this share of the joint question's limit (see `_houdini`)
RELATIONS = ("lt", "le", "ge", "lo", "ls", "hs")


@dataclass(frozen=True)
class Fact:
    """``phi REL bound + offset`` (``bound`` None: the constant ``offset``);
    with ``other`` (another header value of the loop, a counter whose step
    is ``phi``'s divided by ``scale``), the relation ``phi - scale * other ==
    bound - scale * other_start`` (``bound`` None: ``== offset``): the two
    move together (a compiler's byte offset beside its element counter)."""

    phi: Value
    rel: str  # lt le ge (signed), lo ls hs (unsigned); eq (with ``other``)
    bound: Value | None
    offset: int
    other: Value | None = None
    other_start: Value | None = None
    scale: int = 1
    signed: bool = True  # how ``other`` widens to ``phi``'s width
    # it holds in the threads where this loop-invariant predicate is ``guard_true``
    # (``if (t4x < BLOCK_SIZE)`` around a pipeline's producer: only those threads commit)
    guard: Value | None = None
    guard_true: bool = True


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
            if ins.op is O.CVT and ins.args and ins.results and canon(ins.args[0]) in out \
                    and _integer(ins.results[0]):  # fmt: skip
                # a conversion (the 32-bit test of a 64-bit counter): its bounds may hold of the counter
                out.setdefault(ins.results[0], out[canon(ins.args[0])])
                continue
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
    # a counter with a constant step is exact in closed form (its bounds follow
    # from the trip's, `Query.counted`): no candidate is worth a question
    exact = {iv.phi for iv in lp.ivs if iv.step is not None}
    for phi in lp.header.phis():
        v = phi.result
        if not _integer(v) or canon(v) is not v or v in exact:
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
        starts = _starts(lp, v)
        if len(starts) == 1:
            (s,) = starts
            if _integer(s):
                for rel in ("ge", "le", "hs", "ls"):
                    add(v, rel, s, 0)
            for c in _toggle_range(lp, v, s, canon):
                for rel in RELATIONS:
                    add(v, rel, None, c)
    # a counter stepped on some paths only, by a counter's constant step: the
    # two may move together (cuda::pipeline's tail, advanced by each
    # consumer_wait that finds a group, beside its head, advanced by each
    # commit); the induction keeps the relation only if every latch path
    # steps both alike
    # Both may also be stepped on some paths only (a producer's commit and its
    # consumer_wait both under `if (t4x < BLOCK_SIZE)`): the relation is
    # then tried as it is and in the threads a loop-invariant test of the
    # loop lets through (`Fact.guard`).
    stepped = []  # (header value, its constant steps)
    for phi in lp.header.phis():
        q = phi.result
        if _integer(q) and canon(q) is q and q not in exact and len(_starts(lp, q)) == 1:
            stepped.append((q, {c for c in _offsets(lp, q, canon).values() if c}))
    tests = _invariant_tests(lp, cfg)[:MAX_GUARDS]
    for n, (q, steps) in enumerate(stepped):
        partners = [p.phi for p in lp.ivs if p.step in steps and p.step]
        partners += [r for r, rsteps in stepped[n + 1:] if steps & rsteps and 1 in steps & rsteps]
        for p in partners:
            if type_bits(p.type) != type_bits(q.type) or len(_starts(lp, p)) != 1:
                continue
            key = (q, p, 1, True)
            if key in seen:
                continue
            seen.add(key)
            qs, ps = next(iter(_starts(lp, q))), next(iter(_starts(lp, p)))
            for g, when in [(None, True)] + [(g, w) for g in tests for w in (True, False)]:
                # as their starts differ, or equal (`tail = head` before the loop,
                # and a loop after one whose exit values it starts from)
                for start in (qs, None):
                    if len(out) < MAX_CANDIDATES:
                        out.append(Fact(q, "eq", start, 0, p, ps, 1, guard=g, guard_true=when))
    # counters that move together: one's step a constant multiple of the other's
    for q in lp.ivs:
        for p in lp.ivs:
            if p is q or p.negated or q.negated or not (_integer(q.phi) and _integer(p.phi)):
                continue
            if q.step is not None or p.step is not None:
                continue  # constant steps: both exact in closed form already
            if type_bits(q.phi.type) < type_bits(p.phi.type):
                continue
            c = _scale(q, p, canon)
            sq, sp = _starts(lp, q.phi), _starts(lp, p.phi)
            if c is None or len(sq) != 1 or len(sp) != 1:
                continue
            for signed in (True, False) if type_bits(q.phi.type) > type_bits(p.phi.type) else (True,):
                key = (q.phi, p.phi, c, signed)
                if key not in seen and len(out) < MAX_CANDIDATES:
                    seen.add(key)
                    out.append(Fact(q.phi, "eq", next(iter(sq)), 0, p.phi, next(iter(sp)), c, signed))
    return out


_PURE_OPS = frozenset({O.ADD, O.SUB, O.MUL, O.AND, O.OR, O.XOR, O.NOT, O.SHL, O.SHR, O.CMP, O.SELECT, O.CVT})


def _same_every_trip(v: Value, lp: Loop, cfg, depth: int = 0) -> bool:
    """``v`` is loop-invariant (`CFG.invariant`), or arithmetic on such values
    that the loop recomputes each trip (nvcc's ``setp.gt.u32 %p3, %r1, 15``
    in the header, of the thread index)."""
    if cfg.invariant(v, lp):
        return True
    d = v.defn
    if depth > 4 or d is None or d.op not in _PURE_OPS:
        return False
    return all(_same_every_trip(a, lp, cfg, depth + 1) for a in d.args)


def _invariant_tests(lp: Loop, cfg) -> list[Value]:
    """The conditions of the loop's branches that are the same at every trip
    (computed before the loop, or from such values only), in block order."""
    out: list[Value] = []
    for b in lp.blocks:
        t = b.terminator
        if t is not None and t.op is O.BRANCH and t.args and t.args[0] not in out \
                and _same_every_trip(t.args[0], lp, cfg):  # fmt: skip
            out.append(t.args[0])
    return out


def _toggle_range(lp: Loop, v: Value, start: Value, canon) -> tuple[int, ...]:
    """The least and greatest value of a ping-pong index (``src = 1 - src``,
    ``src ^= 1``) from a constant start: every back-edge value is ``c - v``
    or ``v ^ c``, so ``v`` only ever takes the start and its image (the
    image's image is the start again). The bounds are candidates like any
    other: the induction proves them."""
    s = const_int(start)
    if s is None:
        return ()
    seen = {s}
    for p, a in zip(lp.header.preds, v.defn.args):
        if p not in lp.blocks:
            continue
        d = canon(a).defn
        if d is None or len(d.args) != 2 or d.op not in (O.SUB, O.XOR):
            return ()
        x, y = d.args
        if d.op is O.SUB and const_int(x) is not None and canon(y) is v:
            seen.add(const_int(x) - s)
        elif d.op is O.XOR and canon(x) is v and const_int(y) is not None:
            seen.add(s ^ const_int(y))
        elif d.op is O.XOR and canon(y) is v and const_int(x) is not None:
            seen.add(s ^ const_int(x))
        else:
            return ()
    return (min(seen), max(seen)) if len(seen) > 1 else ()


def _starts(lp: Loop, v: Value) -> set:
    return {a for p, a in zip(lp.header.preds, v.defn.args) if p not in lp.blocks}


def _strip(v: Value, canon) -> Value:
    """``v`` under its integer conversions."""
    v = canon(v)
    while v.defn is not None and v.defn.op is O.CVT and v.defn.args and _integer(v.defn.args[0]):
        v = canon(v.defn.args[0])
    return v


def _same(a: Value, b: Value) -> bool:
    da, db = a.defn, b.defn
    return a is b or (da is not None and db is not None and da.op is O.SPECIAL and db.op is O.SPECIAL
                      and da.attrs.get("name") == db.attrs.get("name"))  # fmt: skip


@dataclass(frozen=True)
class _Step:
    """A step value alone (`_scale` of a negated step)."""

    step_value: Value
    step: None = None


def _scale(q, p, canon) -> int | None:
    """c when counter ``q``'s step is c times ``p``'s (constants, or one
    loop-invariant value scaled: ``mul.wide.s32 %rd4, %ntid, 4``)."""
    if q.step is not None or p.step is not None:
        if q.step is None or p.step is None or p.step == 0 or q.step % p.step:
            return None
        return q.step // p.step
    a, b = _strip(q.step_value, canon), _strip(p.step_value, canon)
    if _same(a, b):
        return 1
    d = a.defn
    if d is not None and d.op is O.NEG and d.args:
        neg = _scale(_Step(d.args[0]), p, canon)
        return -neg if neg is not None else None
    if d is None or d.op not in (O.MUL, O.SHL) or len(d.args) != 2:
        return None
    for x, y in ((d.args[0], d.args[1]), (d.args[1], d.args[0])) if d.op is O.MUL else ((d.args[0], d.args[1]),):
        c = y.defn.attrs.get("value") if y.defn is not None and y.defn.op is O.CONST else None
        if isinstance(c, int) and not isinstance(c, bool) and _same(_strip(x, canon), b):
            return c if d.op is O.MUL else (1 << c if 0 <= c < 64 else None)
    return None


def compare(z3, rel: str, a, b):
    return {"lt": lambda: a < b, "le": lambda: a <= b, "ge": lambda: a >= b, "lo": lambda: z3.ULT(a, b),
            "ls": lambda: z3.ULE(a, b), "hs": lambda: z3.UGE(a, b)}[rel]()  # fmt: skip


def fact_term(enc: MemoryEncoder, f: Fact, value_of, t: int):
    """``f`` of the header values ``value_of(phi)`` gives (terms) in thread
    ``t``, in ``enc``'s current trip context; None when one is missing."""
    z3 = enc.z3
    value = value_of(f.phi)
    if value is None:
        return None
    x = enc._bv(value)
    w = x.size()
    if f.other is not None:
        y = value_of(f.other)
        if y is None:
            return None
        y = enc.fit(enc._bv(y), w, f.signed)
        c = z3.BitVecVal(f.scale % (1 << w), w)
        if f.bound is None:  # a constant difference (the starts may be merged values the encoder does not know)
            rel = x - c * y == z3.BitVecVal(f.offset % (1 << w), w)
        else:
            y0 = enc.fit(enc._bv(enc.enc(f.other_start, t)), w, f.signed)
            x0 = enc.fit(enc._bv(enc.enc(f.bound, t)), w, True)
            rel = x - c * y == x0 - c * y0
        if f.guard is None:
            return rel
        g = enc.enc(f.guard, t)
        if not z3.is_bool(g):
            return None
        return z3.Implies(g if f.guard_true else z3.Not(g), rel)
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
        self._relations: dict[Loop, dict[Value, Fact]] = {}  # `relation`
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

    def relation(self, lp: Loop, v: Value) -> Fact | None:
        """The proved relation that gives ``v`` from another counter of ``lp``
        (a base counter, given by no relation: one an exit tests first), if any."""
        if lp in self._busy:
            return None
        got = self._relations.get(lp)
        if got is None:
            got = self._relations[lp] = {}
            tested = {ex.iv.phi for ex in lp.exits if ex.iv is not None}
            bases: set = set()
            rels = [f for f in self.facts(lp) if f.other is not None and f.guard is None and f.bound is not None]
            for f in sorted(rels, key=lambda f: f.other not in tested):
                if f.phi in got or f.phi in bases or f.other in got:
                    continue
                got[f.phi] = f
                bases.add(f.other)
        return got.get(v)

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
            got = [fact_term(enc, f, lambda phi: enc.enc(phi, t), t) for f in facts]
            return [x for x in got if x is not None]
        finally:
            enc.restore_trip(lp, saved)

    # -- the proof -------------------------------------------------------------------
    def _encoder(self, lp: Loop, state: bool) -> MemoryEncoder:
        mf = self.mf
        enc = MemoryEncoder(mf.k, mf.info, "workgroup", point=None)
        enc.canon = mf.canon
        enc.geo = mf.geo
        enc.rings = mf.rings
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
                    term = fact_term(enc, f, values.get, 0)
                    if term is None:
                        continue
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
                # too hard together: each alone (the others assumed); those
                # not proved go, and the rest are asked again without them.
                # Alone, each gets 1/ALONE_SHARE of the limit: a candidate the
                # solver cannot settle is dropped whatever limit it got, and
                # most of a big loop's candidates are such (a counter against
                # the thread index, a bound it never keeps: CUDA's bisection
                # kernel, 38 candidates, most giving up after 0.5-5 s each at
                # a sixteenth), while the facts that hold are proved in a few
                # milliseconds (under a hundredth of a sixteenth's units).
                alone = []
                for f in kept:
                    budget.check("proving loop invariants")
                    mine = [z3.And(cond, z3.Not(t)) for (cond, values) in cases
                            for t in [fact_term(enc, f, values.get, 0)] if t is not None]  # fmt: skip
                    if not mine or solve_bv(enc, z3.And(*assume(kept), z3.Or(*mine)), rlimit // ALONE_SHARE,
                                            fallback=False).status == "unsat":  # fmt: skip
                        alone.append(f)
                if len(alone) == len(kept):
                    return kept  # each holds given all: together they are inductive
                kept = alone
                continue
            m = v.model
            bad = {f for f, term in terms if not z3.is_true(m.eval(term, model_completion=True))}
            if not bad:
                return []  # the model breaks none of them: cannot tell which
            kept = [f for f in kept if f not in bad]
        return []

    def _prove(self, lp: Loop) -> tuple[Fact, ...]:
        """The loop's facts; those proved for every block are kept on the
        kernel (`EVERY_BLOCK_FACTS`) and, when a contract narrows the block
        (the inferred launch contract of TL205), taken as proved."""
        launch = self.mf.k.launch
        store = self.mf.k._cache.setdefault(EVERY_BLOCK_FACTS, {})
        key = (lp.header.name, launch.grid, launch.max_threads, repr(sorted(launch.arguments.items(), key=str)))
        if launch.block is None and launch.contract is None:
            store[key] = self._prove_from(lp, ())
            return store[key]
        return self._prove_from(lp, store.get(key, ()) if launch.block is None else ())

    def _prove_from(self, lp: Loop, known: tuple[Fact, ...]) -> tuple[Fact, ...]:
        """The loop's facts, given ``known``: facts already proved of it
        under weaker assumptions (a wider set of blocks), so inductive here
        too; the other candidates are proved with them assumed."""
        mf = self.mf
        cfg = mf.cfg
        if any(cfg.loop_of(l) is not lp for l in lp.latches):
            return ()
        cands = candidates(mf, lp)
        known = tuple(f for f in cands if f in known)
        cands = [f for f in cands if f not in known]
        if not cands:
            return known
        z3 = smt.z3mod()
        phis = [p for p in lp.header.phis() if any(p.result in (f.phi, f.other) for f in cands)]
        # the entry: the start values, given the path into the loop
        base = self._encoder(lp, state=False)
        entry = base.loop_entry_condition(lp, 0)
        starts = {}
        for p in phis:
            outside = {a for q, a in zip(lp.header.preds, p.args) if q not in lp.blocks}
            if len(outside) == 1:
                starts[p.result] = base.enc(next(iter(outside)), 0)
        cands = [f for f in cands if f.phi in starts and (f.other is None or f.other in starts)]
        cands = self._houdini(base, cands, [(entry if entry is not None else z3.BoolVal(True), starts)],
                              lambda kept: [])  # fmt: skip
        if not cands:
            return known
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
            got = [fact_term(step, f, step.state.get, 0) for f in (*known, *kept)]
            return no_overflow + [x for x in got if x is not None]

        return known + tuple(self._houdini(step, cands, cases, assume))

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
