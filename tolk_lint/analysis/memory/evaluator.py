"""The concrete pass's evaluator: a value for every thread of the block at once.

With the launch shape known, `ThreadEval` evaluates a value for every thread
of the block at once as ``symbolic part + per-thread constant``: thread
indices concrete, everything the threads share (parameters, buffer bases,
block indices, uniform loads) symbolic, and each loop trip split as
``P*Q + r`` with the residue ``r`` enumerated over the kernel's period ``P``
(`loops.trip_period`: the lcm of the small masks, moduli and compiler magic
divisions applied to trip-dependent values, so ``k & 1``, ``k % 3`` and
nvcc's ``mul.wide``/``shr`` division are concrete per residue while linear
trip terms stay symbolic). `addr_terms` gives an access's address in that
form; a value it cannot put in that form raises `Unevaluable`.
"""

from __future__ import annotations

import itertools
import operator
from typing import TYPE_CHECKING, Any

from tolk_lint.analysis.memory.loops import TRIP_BOUND, const_int, magic_division
from tolk_lint.ir.cfg import Loop
from tolk_lint.ir.nodes import Block, Instr, Value, is_float, is_signed, type_bits
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.accesses import Access
    from tolk_lint.analysis.memory.core import MemoryCore

O = Opcode


# The key, in a trip context, of an entry ((phi, value), ...) that fixes
# uniform counters to one value each (`ConcretePairs._clear_by_values`)
FIXED = "fixed"


class Unevaluable(Exception):
    """A value the evaluator cannot put in its form (``sym + c``)."""


def sym_add(a: frozenset, b: frozenset, k: int = 1) -> frozenset:
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
_UNKNOWN = object()  # the memo's entry for a value that raised `Unevaluable`
# the operators evaluated through their operands (the rest: an atom, when the threads share it)
_STRUCT_OPS = frozenset(
    {O.ADD, O.SUB, O.MUL, O.MAD, O.DIV, O.REM, O.NEG, O.ABS, O.MIN, O.MAX, O.AND, O.OR, O.XOR,
     O.NOT, O.SHL, O.SHR, O.CMP, O.SELECT, O.CVT}
)  # fmt: skip

# Binary ops `ThreadEval._concrete` computes with one C-level map, then wraps.
_WRAPPED_OPS = {O.ADD: operator.add, O.SUB: operator.sub, O.MUL: operator.mul, O.AND: operator.and_,
                O.OR: operator.or_, O.XOR: operator.xor}  # fmt: skip


class ThreadEval:
    """Evaluates integer values for every thread of a block at once.

    A result is ``(sym, c)``: ``sym`` a linear combination of *atoms* (values
    the same in every thread: parameters, buffer addresses, block indices,
    the loop-trip anchors ``K``, uniform loads...), ``c`` an int (the same
    in every thread) or a list with one int per thread. ``ctx`` gives each
    loop's trip: ``("rel", n)`` = anchor ``K`` + n, ``("abs", n)`` = n,
    ``("free", 0)`` = unknown. Values it cannot put in that form raise
    `Unevaluable`. Concrete arithmetic wraps at the value's type width (PTX).
    """

    def __init__(self, mf: MemoryCore, block: tuple[int, int, int], info, ctx: dict, assumed: bool = False):
        self.assumed = assumed  # the block shape is an assumption: ntid stays symbolic
        self.mf = mf
        self.k = mf.k
        self.cfg = mf.cfg
        self.info = info
        self.ctx = ctx
        # the counters this context fixes to one value each (the same in every thread)
        self.fixed: dict[Value, int] = dict(ctx.pop(FIXED, ()))
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
                    raise Unevaluable
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
                raise Unevaluable
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
                    raise Unevaluable
                continue
            stack.pop()
            try:
                self.memo[x] = self._ev(x)
            except Unevaluable:
                self.memo[x] = _UNKNOWN
        got = self.memo[v]
        if got is _UNKNOWN:
            raise Unevaluable
        return got

    def _deps(self, v: Value) -> list[Value]:
        d = v.defn
        if d is None:
            return []
        if d.op in _STRUCT_OPS:
            return [self.mf.canon(a) for a in d.args]
        if d.op is O.PHI:
            if v in self.fixed:
                return []
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
            raise Unevaluable
        return got

    def _ev(self, v: Value):
        d = v.defn
        if d is None:
            if v not in self.info.varying:
                return self.atom(v)
            raise Unevaluable
        op = d.op
        if op is O.CONST:
            x = d.attrs.get("value")
            if isinstance(x, bool):
                return (_EMPTY, int(x))
            if isinstance(x, int):
                return (_EMPTY, x)
            raise Unevaluable
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
                    raise Unevaluable
                return (_EMPTY, [f(ln) for ln in self.lane])
            if v in self.info.varying:
                raise Unevaluable
            return (frozenset({(("special", name), 1)}), 0)
        if op is O.ADDR:
            return (frozenset({(("addr", d.attrs.get("buffer")), 1)}), 0)
        if op is O.PARAM:
            return (frozenset({(("param", d.attrs.get("name")), 1)}), 0)
        if op is O.UNDEF:
            return self.atom(v)
        if op is O.PHI:
            if v in self.fixed:
                return (_EMPTY, self.fixed[v])
            hit = self.iv.get(v)
            if hit is not None:
                lp, iv = hit
                s, c = self.get(iv.start)
                tr = self.trip(lp)
                if tr is None:
                    if lp in self.info.divergent_loops:
                        raise Unevaluable
                    return (sym_add(s, frozenset({(("T", id(lp), self.ctxkey(v)[:-1]), 1)}), iv.step), c)
                ts, tc = tr
                return (sym_add(s, ts, iv.step), self._map(lambda x: x + iv.step * tc, c))
            sh = self.mf.shifted.get(v)
            if sh is not None:
                got = self._shifted(v, sh)
                if got is not None:
                    return got
            if v not in self.info.varying:
                return self.atom(v)
            lp = self.cfg.loop_of(d.block)
            if lp is not None and lp.header is d.block:
                raise Unevaluable
            vals = []
            for a in d.args:
                a = self.mf.canon(a)
                if a is v:
                    continue
                vals.append(self.get(a))
            first = vals[0]
            if all(x[0] == first[0] and x[1] == first[1] for x in vals[1:]):
                return first
            raise Unevaluable
        if op in _STRUCT_OPS:
            try:
                args = [self.get(a) for a in d.args]
                return self._arith(d, v, args)
            except Unevaluable:
                if v not in self.info.varying:
                    return self.atom(v)
                raise
        if v not in self.info.varying:
            return self.atom(v)
        raise Unevaluable

    def _shifted(self, v: Value, sh):
        """A header PHI ``phi(s, y + c)``, ``y`` an induction variable of step
        ``st``: ``y(k - 1) + c`` at trip k > 0, so ``s + st * k`` at every trip
        when ``s = y.start - st + c`` (nvcc's unrolled copy loops); None when
        that does not hold (per thread, at the PHI's width)."""
        lp, iv, c, start = sh
        try:
            s, cs = self.get(start)
            ys, yc = self.get(iv.start)
        except Unevaluable:
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
            return (sym_add(s, frozenset({(("T", id(lp), self.ctxkey(v)[:-1]), 1)}), iv.step), cs)
        ts, tc = tr
        return (sym_add(s, ts, iv.step), self._map(lambda x: x + iv.step * tc, cs))

    def _arith(self, d: Instr, v: Value, args):
        op = d.op
        if all(not s for s, _ in args):
            return (_EMPTY, self._concrete(d, v, [c for _, c in args]))
        if op is O.ADD:
            s = _EMPTY
            for x, _ in args:
                s = sym_add(s, x)
            return (s, self._map(operator.add if len(args) == 2 else lambda *xs: sum(xs), *[c for _, c in args]))
        if op is O.SUB and len(args) == 2:
            (s1, c1), (s2, c2) = args
            return (sym_add(s1, s2, -1), self._map(lambda a, b: a - b, c1, c2))
        if op in (O.MUL, O.SHL) and len(args) == 2 and not d.attrs.get("hi"):
            (s1, c1), (s2, c2) = args
            if not s2 and isinstance(c2, int):
                # a shift by the width or more gives 0 (PTX clamps it), not a 2**c2-sized factor
                f = ((1 << c2) if 0 <= c2 < self._bits(v) else 0) if op is O.SHL else c2
                return (_smul(s1, f), self._map(lambda a: a * f, c1))
            if op is O.MUL and not s1 and isinstance(c1, int):
                return (_smul(s2, c1), self._map(lambda a: a * c1, c2))
        if op is O.MAD and len(args) == 3 and not d.attrs.get("hi"):
            (s1, c1), (s2, c2), (s3, c3) = args
            if not s2 and isinstance(c2, int):
                return (sym_add(_smul(s1, c2), s3), self._map(lambda a, b: a * c2 + b, c1, c3))
            if not s1 and isinstance(c1, int):
                return (sym_add(_smul(s2, c1), s3), self._map(lambda a, b: a * c1 + b, c2, c3))
        if op is O.NOT and len(args) == 1 and v.type != "pred":
            (s1, c1), = args
            return (_smul(s1, -1), self._map(lambda a: -a - 1, c1))  # two's complement: ~x = -x - 1
        if op is O.CVT and args:
            src = d.attrs.get("from_type") or d.args[0].type
            if not (is_float(src) or is_float(v.type)):
                if type_bits(v.type) >= type_bits(src) or self._trip_fits(args[0], v.type):
                    return args[0]
                # narrowing a value a right shift already brought in range
                sd = self.mf.canon(d.args[0]).defn
                if sd is not None and sd.op is O.SHR and len(sd.args) == 2:
                    sh = const_int(sd.args[1])
                    if sh is not None and sh >= type_bits(src) - type_bits(v.type) and \
                            not (sd.attrs.get("signed") or is_signed(sd.result.type)):  # fmt: skip
                        return args[0]
        # a trip split as P*Q + r: low bits and small moduli see only r
        got = self._periodic(d, v, args)
        if got is not None:
            return got
        # nonlinear in a symbolic operand: a new atom, if it is the same in every thread
        if any(isinstance(c, list) for _, c in args):
            raise Unevaluable
        atom = (op.value, d.attrs.get("cmp"), d.attrs.get("signed"), v.type, tuple((s, c) for s, c in args))
        return (frozenset({(atom, 1)}), 0)

    def _trip_fits(self, arg, t: str) -> bool:
        """Whether ``arg``, trip quotients (each below `TRIP_BOUND`, and not
        negative) times coefficients plus a per-thread constant, lies in the
        range of the integer type ``t`` whatever the trips: then narrowing
        it to ``t`` (numba-cuda's ``cvt.u32.u64`` of a range counter) keeps
        it unchanged."""
        s, c = arg
        if not s or not all(isinstance(a, tuple) and a and a[0] == "Q" for a, _k in s):
            return False
        cs = c if isinstance(c, list) else [c]
        lo = min(cs) + sum(min(k, 0) for _a, k in s) * TRIP_BOUND
        hi = max(cs) + sum(max(k, 0) for _a, k in s) * TRIP_BOUND
        bits = type_bits(t)
        if is_signed(t):
            return -(1 << (bits - 1)) <= lo and hi < 1 << (bits - 1)
        return 0 <= lo and hi < 1 << bits

    def _periodic(self, d: Instr, v: Value, args):
        """``(sum of coef*Q) + c`` with every coef a positive multiple of
        ``m`` and ``0 <= c``: its low bits / its remainder by ``m`` are
        those of ``c`` (Q, the trip quotients, are >= 0)."""
        op = d.op
        if op not in (O.AND, O.REM, O.DIV, O.SHR, O.XOR, O.OR) or len(args) != 2:
            return None
        if op is O.SHR:
            magic = magic_division(d, self.mf.canon)
            if magic is not None:
                x, div = magic
                try:
                    args = [self.get(x), (_EMPTY, div)]
                except Unevaluable:
                    return None
                op = O.DIV
        (s1, c1), (s2, c2) = args
        if s2 or not isinstance(c2, int) or not s1:
            return None
        if op is O.AND and c2 >= 0 and all(k % (1 << c2.bit_length()) == 0 for _a, k in s1):
            # the bits c2 keeps are below every symbolic term's lowest bit,
            # whatever its atoms and signs: they are the constant's (numba-cuda's
            # slot offset ``~(k << 8) & 256``)
            return (_EMPTY, self._map(lambda x: x & c2, c1))
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
                    raise Unevaluable
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
                raise Unevaluable
            sw = self._wrap_fn(d.args[0])
            return self._map(lambda a: wrap(sw(a)), *xs)
        if op is O.CMP:
            cmp = d.attrs.get("cmp", "eq")
            if any(is_float(a.type) for a in d.args):
                raise Unevaluable
            aw = [self._wrap_fn(a, bool(signed) and cmp not in ("lo", "ls", "hi", "hs")) for a in d.args]
            fn = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
                  "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
                  "lo": lambda a, b: a < b, "ls": lambda a, b: a <= b, "hi": lambda a, b: a > b,
                  "hs": lambda a, b: a >= b}.get(cmp)  # fmt: skip
            if fn is None:
                raise Unevaluable
            return self._map(lambda a, b: int(fn(aw[0](a), aw[1](b))), *xs)
        if op is O.SELECT:
            return self._map(lambda c, a, b: a if c else b, *xs)
        raise Unevaluable

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
        decided = True  # every controlling branch's way known per thread (`decided`)
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
                    # A loop exit. One taken before the block in the same trip
                    # (``if (tid >= 2) break;``, ``while (i < 4)``, its way on
                    # into the loop a forward edge) keeps the threads it sends
                    # out from the block at this trip; those that left at an
                    # earlier trip are not known, so the threads are no longer
                    # exact. A latch's test decides the next trip, not this one.
                    exact = False
                    order = cfg.order
                    if any(order.get(s2, -1) <= order.get(dblk, -1) for s2 in dblk.succs):
                        continue
                tt, ff = term.targets()
                rt = block is tt or self.mf.order.forward_reaches(tt, block)
                rf = block is ff or self.mf.order.forward_reaches(ff, block)
                if rt == rf:
                    if not rt:
                        exact = False
                    continue
                need = rt
                vals = self.truth(term.args[0])
                if vals is None:
                    exact = decided = False
                    continue
                if any(x is None for x in vals):
                    exact = decided = False  # some threads' way is not known: they may run it
                cur = [x is None or x == need for x in vals]
                act = cur if act is None else [a and b for a, b in zip(act, cur)]
        got = (act, exact)
        self.memo[key] = got
        self.memo[("decided", block)] = decided
        return got

    def decided(self, block: Block) -> bool:
        """Whether each branch ``block`` depends on was told per thread (no
        thread may run it only because a condition was not known here)."""
        self.activity(block)
        return self.memo[("decided", block)]


    def truth(self, v: Value, depth: int = 0) -> list | None:
        """A condition's value in each thread: True, False, or None where it
        is not known (a uniform unknown); through and/or/not of predicates, so
        ``tid > 1 || n < 1`` is known true for the threads with tid > 1.
        None when nothing is known."""
        try:
            s, c = self.ev(v)
            if not s:
                return [bool(c)] * self.n if isinstance(c, int) else [bool(x) for x in c]
        except Unevaluable:
            pass
        d = self.mf.canon(v).defn
        if d is None or v.type != "pred" or depth > 8 or d.op not in (O.AND, O.OR, O.NOT, O.XOR):
            return None
        parts = [self.truth(a, depth + 1) for a in d.args]
        if any(p is None for p in parts) and d.op in (O.NOT, O.XOR):
            return None
        parts = [p if p is not None else [None] * self.n for p in parts]
        if d.op is O.NOT:
            return [None if x is None else not x for x in parts[0]]
        if d.op is O.XOR:
            return [None if a is None or b is None else a != b for a, b in zip(*parts)]
        out = []
        for xs in zip(*parts):
            if d.op is O.AND:
                out.append(False if any(x is False for x in xs) else (True if all(x is True for x in xs) else None))
            else:
                out.append(True if any(x is True for x in xs) else (False if all(x is False for x in xs) else None))
        return out if any(x is not None for x in out) else None


def addr_terms(ev: ThreadEval, acc: Access):
    """``(sym, per-thread byte offsets)`` of an access's address, or Unevaluable."""
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
                    raise Unevaluable
            else:
                c = ev._map(lambda a, dim=dim: a + dim if a < 0 else a, c)
            sym = sym_add(_smul(sym, dim), s)
            lin = ev._map(lambda a, b, dim=dim: a * dim + b, lin, c)
        sym = sym_add(_smul(sym, acc.elem), frozenset({(("buf", acc.root), 1)}))
        return (sym, ev._map(lambda a: a * acc.elem, lin))
    return ev.ev(acc.addr)
