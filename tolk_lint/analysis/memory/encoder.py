"""The Z3 encoder of the memory queries.

`MemoryEncoder` is `smt.Encoder` for the two threads of a pair, seeing
through redundant PHI webs (`accesses.Canon`), with geometric loop counters
(``s >>= 1``, ``off *= 2``) and rotating slots (``(start + k) mod S``) in
closed form, numba-cuda's range counters (a step selected on the latch's
branch condition, `loops.latch_selected_ivs`) as the induction variables
they are, a counter stepped by a value the launch does not fix as an
uninterpreted product (`MemoryEncoder._strided`), a counter proved to move
with another through it (`invariants`), the loop-carried values of nvcc's
unrolled copy loops exact, ``2 ** e`` as a shift, PTX's ``bmsk`` as the mask
it makes, loads of one word in one stretch of code as one value
(`load_regions`), and Numba's integers as the 64-bit integers they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tolk_lint.analysis import smt
from tolk_lint.analysis.buffers import space_of
from tolk_lint.analysis.memory.narrow_counters import encode as encode_narrow
from tolk_lint.analysis.memory.narrow_counters import narrow_counters
from tolk_lint.ir.cfg import Loop, cfg_of
from tolk_lint.ir.nodes import Instr, Kernel, Value, is_float, is_signed, type_bits
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.accesses import Canon

O = Opcode


class MemoryEncoder(smt.Encoder):
    """The two-thread encoder, seeing through redundant PHI webs, and with
    geometric loop counters (``s >>= 1``, ``off *= 2``) in closed form."""

    canon: Canon | None = None
    geo: dict | None = None
    rings: dict | None = None  # `loops.ring_counters`: header PHI -> (start, S)
    invariants: Any = None  # `invariants.LoopInvariants`: facts of a loop's header values at any trip
    state: dict | None = None  # header PHI -> a free symbol: the values at some trip (an induction step)
    exact_products: bool = False  # counters with a symbolic step as real products (`_strided`)
    used_strides: bool = False  # some counter's product was abstracted
    selected_ivs: dict | None = None  # header PHI -> (loop, InductionVariable), `loops.latch_selected_ivs`

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        if self.python:
            self._trip_width = 64
        # header PHI -> its `_carry_plan` (kept out of `memo`, whose size names the UFs)
        self._carry_plans: dict[Value, tuple | None] = {}

    # A load of shared or local memory the analysis cannot call stable is a
    # free value per load: two loads of one word in one thread, with nothing
    # between them that writes memory or lets another thread's write be seen
    # (a store, a barrier, a warp sync, a fence, a call, a wait for copies),
    # read one value, as the solver is told here (one function of the address
    # per such stretch and thread, `load_regions`): ``if (buf[y][x] == U &&
    # buf[y][k] != U)`` cannot hold at k == x. A write by another thread
    # between the two would be a race of its own, reported as such.
    def _encode_one(self, v: Value, t: int):
        d = v.defn
        if d is not None and d.op is O.LOAD and d.args and self.nodes <= smt.MAX_NODES \
                and not (self.info is not None and v in self.info.proved_values):  # fmt: skip
            region = load_regions(self.k).get(d)
            if region is not None and not self._stable_load(d):
                self.nodes += 1
                z3 = self.z3
                addr = self._bv(self.enc(d.args[0], t))
                if v.index:
                    addr = addr + z3.BitVecVal(v.index * max(1, type_bits(v.type) // 8), addr.size())
                extra = [self.fit(self.trips[lp][t], 64) for lp in self.cfg.loops_around(d.block) if lp in self.trips]
                return self.uf(f"seen_{region}_{v.type}_t{t}", [addr] + extra, self.sort(v.type))
        if d is not None and d.op is O.VOTE and self.nodes <= smt.MAX_NODES:
            got = self._ballot(d, v, t)
            if got is not None:
                return got
        return super()._encode_one(v, t)

    def _ballot(self, d, v: Value, t: int):
        """``__ballot_sync(0xffffffff, p)``: one value for the whole warp at
        one instance (every lane runs a full-mask collective together; TL103
        checks that they do), whose bit for each lane is that lane's ``p``. So
        two lanes of one warp see each other's votes (a lane's rank among the
        lanes that vote yes, ``popc(ballot & lanemask_lt)``, is its own).
        The instance is the warp and the trips of the loops around it."""
        if d.attrs.get("mode") != "ballot" or d.attrs.get("sync") is False or len(d.args) != 2:
            return None
        mask = d.args[1].defn
        full = mask.attrs.get("value") if mask is not None and mask.op is O.CONST else None
        if not isinstance(full, int) or full & 0xFFFFFFFF != 0xFFFFFFFF:
            return None
        around = self.cfg.loops_around(d.block)
        if any(lp not in self.trips for lp in around):
            return None  # no trip to tell one instance from another
        z3 = self.z3
        self.nodes += 1
        rank = self.fit(self.linear(t), 32)
        extra = [self.fit(self.trips[lp][t], 64) for lp in around]
        votes = self.uf(f"ballot{d.id}", [z3.UDiv(rank, 32)] + extra, z3.BitVecSort(32))
        mine = z3.Extract(0, 0, z3.LShR(votes, z3.URem(rank, 32))) == 1
        self.constraints.append(mine == self.as_bool(self.enc(d.args[0], t)))
        return self.fit(votes, self.width(v.type))

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
        if d is not None and d.op is O.CVT and d.args and is_float(a.type) and not is_float(d.args[0].type) \
                and d.args[0].type != "pred":  # fmt: skip
            # an integer the front end converted to the element's guessed float type
            # (`key & ((1 << w) - 1)`): the integer it is, not a free float
            return self.fit(self._bv(self.enc(d.args[0], t)), 64, is_signed(d.args[0].type))
        e = self._bv(self.enc(a, t))
        return e if e.size() == 64 else self.fit(e, 64, True)

    def _arith(self, d, v, t):
        if self.python and d.op in self._INT_ONLY and is_float(v.type) and len(d.args) == 2:
            a, b = (self._int_of(x, t) for x in d.args)
            return {O.AND: lambda: a & b, O.OR: lambda: a | b, O.XOR: lambda: a ^ b, O.SHL: lambda: a << b,
                    O.SHR: lambda: a >> b}[d.op]()  # fmt: skip
        if self.python and d.op is O.CVT and d.args and not is_float(v.type) and self._int_float(d.args[0]):
            return self.fit(self.enc(d.args[0], t), self.width(v.type), True)
        got = self._power_of_two(d, v, t)
        if got is None:
            got = self._bit_mask(d, v, t)
        if got is not None:
            return got
        return super()._arith(d, v, t)

    def _is_iv(self, lp: Loop, v: Value) -> bool:
        return any(iv.phi is v for iv in lp.ivs) or v in (self.selected_ivs or {})

    def _power_of_two(self, d: Instr, v: Value, t: int):
        """``2 ** e`` (``4 ** e``...) of integers: a shift by ``e`` (times
        the base's bits) while that fits the width; otherwise (a negative or
        too large exponent) the pure function it was."""
        if d.op is not O.PURE or d.attrs.get("fn") != "pow" or len(d.args) != 2 or is_float(v.type) \
                or any(is_float(a.type) for a in d.args):  # fmt: skip
            return None
        bd = d.args[0].defn
        base = bd.attrs.get("value") if bd is not None and bd.op is O.CONST else None
        if not isinstance(base, int) or isinstance(base, bool) or base < 2 or base & (base - 1):
            return None
        z3 = self.z3
        w = self.width(v.type)
        bits = base.bit_length() - 1
        e = self.fit(self._bv(self.enc(d.args[1], t)), w, True)
        amount = e * bits
        other = super()._arith(d, v, t)
        return z3.If(z3.And(e >= 0, e < (w - 1) // bits), z3.BitVecVal(1, w) << amount, other)

    def _bit_mask(self, d: Instr, v: Value, t: int):
        """PTX's ``bmsk.{clamp,wrap}.b32 d, a, b``: ``b`` ones from bit ``a``
        (PTX ISA: with ``.clamp`` both taken up to 32, with ``.wrap`` modulo
        32; ``mask0 = ~0 << a``, ``mask1 = a + b < 32 ? ~0 << (a + b) : 0``,
        ``d = mask0 & ~mask1``). CUB's radix sort takes a key's digit with it
        (``key >> bit & bmsk(0, min(bits left, 4))``) and indexes its
        shared counters by the digit: a free function there is an index
        anywhere in shared memory."""
        if d.op is not O.PURE or d.attrs.get("fn") != "bmsk" or len(d.args) != 2 or type_bits(v.type) != 32:
            return None
        mode = next((m for m in ("clamp", "wrap") if f"bmsk.{m}" in (d.text or "")), None)
        if mode is None:  # the front end keeps the mode only in the statement's text
            return None
        z3 = self.z3
        a, b = (self.fit(self._bv(self.enc(x, t)), 32) for x in d.args)
        if mode == "wrap":
            a, b = a & 31, b & 31
        else:
            a = z3.If(z3.UGT(a, 32), z3.BitVecVal(32, 32), a)
            b = z3.If(z3.UGT(b, 32), z3.BitVecVal(32, 32), b)
        ones = z3.BitVecVal(0xFFFFFFFF, 32)
        end = a + b  # at most 64: no wrap
        mask1 = z3.If(z3.ULT(end, 32), ones << end, z3.BitVecVal(0, 32))
        return (ones << a) & ~mask1  # Z3's shift by 32 or more is 0, as bmsk's start at 32 is no bits

    def _header_phi(self, lp, d, v, t):
        if self.state is not None and v in self.state:
            return self.state[v]
        sel = (self.selected_ivs or {}).get(v)
        if sel is not None:
            iv = sel[1]
            start = self.enc(iv.start, t)
            if not self.z3.is_bool(start):
                w = start.size()
                return start + self.z3.BitVecVal(iv.step % (1 << w), w) * self.fit(self.trip_of(lp, t), w)
        ring = (self.rings or {}).get(v)
        if ring is not None:
            got = self._ring(lp, d, v, t, ring)
            if got is not None:
                return got
        narrow = self.k.cached("narrow_counters", narrow_counters).get(v)
        if narrow is not None and narrow.loop is lp:  # a `short` counter (`narrow_counters`)
            return encode_narrow(self, narrow, v, t)
        g = (self.geo or {}).get(v)
        if g is None:
            got = self._moves_with(lp, v, t)
            if got is not None:
                return got
            got = self._strided(lp, v, t)
            if got is not None:
                return got
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

    def _constrain_exit_trip(self, lp: Loop, t: int, T) -> None:
        # the loop's proved invariants hold at its exit trip, once the thread entered it
        super()._constrain_exit_trip(lp, t, T)
        if self.invariants is None or not self.invariants.facts(lp):
            return
        entered = self.loop_entry_condition(lp, t)
        terms = self.invariants.terms(self, lp, t, T)
        if entered is not None and terms:
            self.constraints.append(self.z3.Implies(entered, self.z3.And(*terms)))

    def _ring(self, lp: Loop, d: Instr, v: Value, t: int, ring):
        """A rotating slot (`loops.ring_counters`) at trip k: ``(start + k)
        mod S`` from a start in [0, S); from another start, what the base
        encoding gives (a free function of the trip)."""
        z3 = self.z3
        start_v, S = ring
        start = self.enc(start_v, t)
        if z3.is_bool(start):
            return None
        w = start.size()
        # in 30 bits: a trip is below 2^28, and so the start plus the trip
        # (a narrow division is far cheaper for the solver than a 64-bit one)
        trip = self.fit(self.trip_of(lp, t), 64)
        start30 = self.fit(z3.Extract(min(w, 30) - 1, 0, start), 30)
        anchor, n = _anchored(z3, trip)
        if anchor is None:
            closed = z3.URem(start30 + z3.Extract(29, 0, trip), z3.BitVecVal(S, 30))
        else:
            # a trip relative to a phase's anchor (``s + n``): one residue of the
            # anchor, then n more steps of a small counter, so that two trips of
            # one phase compare without a division
            key = ("ring_anchor", v, t, anchor.get_id())
            rho = self.memo.get(key)
            if rho is None:
                rho = self.memo[key] = self.fresh(f"ring_{v.name}", "b32", t)
                rho = self.memo[key] = z3.Extract(29, 0, rho)
                self.constraints.append(rho == z3.URem(start30 + z3.Extract(29, 0, anchor), z3.BitVecVal(S, 30)))
            x = rho + z3.BitVecVal(n % S, 30)
            closed = z3.If(z3.UGE(x, S), x - S, x)
        return z3.If(z3.ULT(start, z3.BitVecVal(S, w)), self.fit(closed, w), super()._header_phi(lp, d, v, t))

    def _moves_with(self, lp: Loop, v: Value, t: int):
        """A counter proved to move with another (`invariants.Fact` with
        ``other``: ``q - c * p`` keeps its start value, as a compiler's byte
        offset beside the element counter it was strength-reduced from) is
        that closed form: one product fewer, and ``q`` is bounded wherever
        ``p`` is. The relation holds at every trip the header is reached."""
        if self.invariants is None or self.state is not None:
            return None
        f = self.invariants.relation(lp, v)
        if f is None:
            return None
        z3 = self.z3
        x0 = self._bv(self.enc(f.bound, t))
        w = x0.size()
        y = self.fit(self._bv(self.enc(f.other, t)), w, f.signed)
        y0 = self.fit(self._bv(self.enc(f.other_start, t)), w, f.signed)
        c = z3.BitVecVal(f.scale % (1 << w), w)
        return x0 + c * (y - y0)

    def _strided(self, lp: Loop, v: Value, t: int):
        """A counter whose step is a loop-invariant value the launch does not
        fix (``i += blockDim.x`` with no block given): ``start + S * k`` is a
        product of two unknowns, which the bit-blasting solver finds costly to
        reason through (two threads' counters meeting is a question about
        multiples of S). The product is an uninterpreted function of (S, k)
        instead: one value for one step and trip, 0 at trip 0, and otherwise
        only what the loop's facts say (`Query.strided`: it moves one per
        trip; it keeps its thread's residue; the proved invariants). Every
        real run is still a model."""
        iv = next((x for x in lp.ivs if x.phi is v and x.step is None and x.step_value is not None), None)
        if iv is None or self.exact_products or self.nodes > smt.MAX_NODES:
            return None
        z3 = self.z3
        start = self.enc(iv.start, t)
        sv = self.enc(iv.step_value, t)
        if z3.is_bool(start) or z3.is_bool(sv):
            return None
        w = start.size()
        step = self.fit(sv, w, is_signed(iv.step_value.type))
        if z3.is_bv_value(z3.simplify(step)):
            return None  # a constant step: the product is linear
        trip = self.fit(self.trip_of(lp, t), w)
        moved = self.uf(f"stride_{w}", [step, trip], z3.BitVecSort(w))
        self.used_strides = True
        return z3.If(trip == 0, start, start - moved if iv.negated else start + moved)

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
        if self._is_iv(lp, v) or self.nodes > smt.MAX_NODES:
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
        ivs = {iv.phi for iv in lp.ivs} | set(self.selected_ivs or ())
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


# what ends a stretch of loads that see one memory (`MemoryEncoder._encode_one`)
_SEES_NEW = frozenset({O.STORE, O.ATOMIC, O.CP_ASYNC, O.CP_ASYNC_WAIT, O.WMMA_STORE, O.STMATRIX, O.BARRIER,
                       O.WARP_SYNC, O.FENCE, O.CALL, O.OPAQUE})  # fmt: skip


def load_regions(kernel: Kernel) -> dict[Instr, str]:
    """Each shared or local load -> its stretch: the straight run of code
    (blocks joined where a block's one predecessor leads into it, at one
    loop depth, never through a loop header) with no instruction of
    `_SEES_NEW` between. Loads of one stretch at one address read one value."""
    return kernel.cached("memory_load_regions", _load_regions)


def _load_regions(kernel: Kernel) -> dict[Instr, str]:
    cfg = cfg_of(kernel)
    out: dict[Instr, str] = {}
    end: dict = {}
    headers = {lp.header for lp in cfg.loops}
    for b in sorted(kernel.blocks, key=lambda x: cfg.order.get(x, len(cfg.order))):
        preds = b.preds
        if len(preds) == 1 and preds[0] in end and b not in headers \
                and cfg.loops_around(preds[0]) == cfg.loops_around(b):  # fmt: skip
            cur = end[preds[0]]
        else:
            cur = f"{b.id}_0"
        for i, ins in enumerate(b.instrs):
            if ins.op in _SEES_NEW:
                cur = f"{b.id}_{i + 1}"
            elif ins.op is O.LOAD and not ins.attrs.get("volatile") and space_of(ins) in ("shared", "local"):
                out[ins] = cur
        end[b] = cur
    return out


def _anchored(z3, trip):
    """(symbol, n) when ``trip`` is a symbol plus a constant (a trip relative
    to a phase's anchor), else (None, 0)."""
    e = z3.simplify(trip)
    if z3.is_const(e) and not z3.is_bv_value(e):
        return e, 0
    if z3.is_app_of(e, z3.Z3_OP_BADD) and e.num_args() == 2:
        a, b = e.arg(0), e.arg(1)
        for x, y in ((a, b), (b, a)):
            if z3.is_bv_value(y) and z3.is_const(x) and not z3.is_bv_value(x):
                n = y.as_long()
                if n >= 1 << 63:
                    n -= 1 << 64
                return x, n
    return None, 0
