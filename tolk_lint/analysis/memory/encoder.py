"""The Z3 encoder of the memory queries.

`MemoryEncoder` is `smt.Encoder` for the two threads of a pair, seeing
through redundant PHI webs (`accesses.Canon`), with geometric loop counters
(``s >>= 1``, ``off *= 2``) in closed form, numba-cuda's range counters
(a step selected on the latch's branch condition, `loops.latch_selected_ivs`)
as the induction variables they are, the loop-carried values of nvcc's
unrolled copy loops exact, and Numba's integers as the 64-bit integers they
are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tolk_lint.analysis import smt
from tolk_lint.ir.cfg import Loop
from tolk_lint.ir.nodes import Instr, Value, is_float
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.accesses import Canon

O = Opcode


class MemoryEncoder(smt.Encoder):
    """The two-thread encoder, seeing through redundant PHI webs, and with
    geometric loop counters (``s >>= 1``, ``off *= 2``) in closed form."""

    canon: Canon | None = None
    geo: dict | None = None
    selected_ivs: dict | None = None  # header PHI -> (loop, InductionVariable), `loops.latch_selected_ivs`

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

    def _is_iv(self, lp: Loop, v: Value) -> bool:
        return any(iv.phi is v for iv in lp.ivs) or v in (self.selected_ivs or {})

    def _header_phi(self, lp, d, v, t):
        sel = (self.selected_ivs or {}).get(v)
        if sel is not None:
            iv = sel[1]
            start = self.enc(iv.start, t)
            if not self.z3.is_bool(start):
                w = start.size()
                return start + self.z3.BitVecVal(iv.step % (1 << w), w) * self.fit(self.trip_of(lp, t), w)
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
