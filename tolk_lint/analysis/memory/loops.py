"""Loop shapes the memory analysis reads off the IR.

A loop's trip count when its start, step and bound are constants
(`constant_trip_count`); header PHIs that are induction variables whose
step the latch selects on its own branch condition (`latch_selected_ivs`:
numba-cuda's range loops), or an induction variable shifted by a constant
(`shifted_ivs`: nvcc's unrolled copy loops) or a counter
multiplied or divided by a power of two each trip (`geometric_counters`:
``s //= 2``) or counting up by one and wrapping to 0 at a constant
(`ring_counters`: a pipeline's rotating slot); the multiply-and-shift a
compiler divides by a constant with (`magic_division`); and the trip period
the concrete pass enumerates residues over (`trip_period`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from tolk_lint.ir.cfg import CFG, InductionVariable, Loop, cfg_of
from tolk_lint.ir.nodes import Block, Instr, Kernel, Value, const_int, is_float, is_signed, type_bits
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.accesses import Canon

O = Opcode

TRIP_BOUND = 1 << 28  # no loop of a kernel runs more trips than this


def inside_successor(branch: Instr, lp: Loop) -> Block:
    """The target of a loop's exit branch that stays in the loop."""
    tt, ff = branch.targets()
    return tt if tt in lp.blocks else ff


def constant_trip_count(cfg: CFG, lp: Loop) -> int | None:
    """The trip count of a loop with a constant start, step and bound."""
    count = None
    always = [ex for ex in lp.exits if all(cfg.dominates(ex.branch.block, l) for l in lp.latches)]
    if len(always) == 1 and len(lp.exits) == 1:
        ex = always[0]
        iv = ex.iv
        cv = const_int(ex.bound) if ex.bound is not None else None
        st = const_int(iv.start) if iv is not None else None
        d = ex.cond.defn
        if iv is not None and iv.step is not None and cv is not None and st is not None and d is not None and d.op is O.CMP:
            swapped = d.args[0] is ex.bound or const_int(d.args[0]) is not None and d.args[1] in (iv.phi, iv.next)
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
    return count


def latch_selected_ivs(cfg: CFG) -> dict[Value, tuple[Loop, InductionVariable]]:
    """Header PHIs ``x = phi(s, x + select(c, a, b))`` with ``a``, ``b``
    constants and the select, the add and the loop's one back edge in its
    latch, which branches on ``c`` itself: the back edge is taken only when
    ``c`` holds (or only when it does not), so along it the step is the
    constant ``a`` (or ``b``), and ``x`` is an induction variable.

    numba-cuda lowers ``for i in range(n)`` this way: each trip adds
    ``selp(1, 0, more)`` to the counter and ``selp(-1, 0, more)`` to the
    trips left, then branches on ``more``. Only the PHI's value at each trip
    is claimed (``s + step * k``); the added value itself, which leaves the
    loop with the other step, is not an induction variable's ``next`` here,
    so no exit test is read through it. x -> (loop, induction variable)."""
    out: dict[Value, tuple[Loop, InductionVariable]] = {}
    for lp in cfg.loops:
        if len(lp.latches) != 1:
            continue
        latch = lp.latches[0]
        term = latch.terminator
        if term is None or term.op is not O.BRANCH or not term.args:
            continue
        cond = term.args[0]
        tt, ff = term.targets()
        if (tt is lp.header) == (ff is lp.header):
            continue
        taken_when = tt is lp.header  # the value of `cond` that takes the back edge
        known = {iv.phi for iv in lp.ivs}
        for phi in lp.header.phis():
            x = phi.result
            if x in known:
                continue
            outside = {a for p, a in zip(lp.header.preds, phi.args) if p not in lp.blocks}
            inside = [a for p, a in zip(lp.header.preds, phi.args) if p in lp.blocks]
            if len(outside) != 1 or len(inside) != 1:
                continue
            step = _selected_step(inside[0], x, latch, cond, taken_when)
            if step is not None:
                out[x] = (lp, InductionVariable(x, next(iter(outside)), step, inside[0]))
    return out


def _selected_step(nxt: Value, x: Value, latch: Block, cond: Value, taken_when: bool) -> int | None:
    """The step of ``nxt = x + select(cond, a, b)`` (or ``x - ...``) along a
    back edge taken when ``cond`` is ``taken_when``; None for another shape."""
    d = nxt.defn
    if d is None or d.block is not latch or d.op not in (O.ADD, O.SUB) or len(d.args) != 2:
        return None
    a0, a1 = d.args
    orders = ((a0, a1), (a1, a0)) if d.op is O.ADD else ((a0, a1),)
    for base, added in orders:
        sel = added.defn
        if base is not x or sel is None or sel.op is not O.SELECT or sel.block is not latch:
            continue
        if len(sel.args) != 3 or sel.args[0] is not cond:
            continue
        k = const_int(sel.args[1] if taken_when else sel.args[2])
        if k is not None:
            return k if d.op is O.ADD else -k
    return None


def shifted_ivs(cfg, ivs: dict) -> dict:
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
                    k = const_int(b)
                    if k is not None and a in ivs:
                        y, c = a, (k if d.op is O.ADD else -k)
                        break
            hit = ivs.get(y)
            if hit is None or hit[0] is not lp:
                continue
            out[x] = (lp, hit[1], c, next(iter(outside)))
    return out


def magic_division(d: Instr, canon) -> tuple[Value, int] | None:
    """``(x * M) >> s`` (``mul.wide``/``mul.lo`` then a right shift), the way a
    compiler divides an unsigned 32-bit ``x`` by a constant: (x, divisor)."""
    if d.op is not O.SHR or len(d.args) != 2 or d.attrs.get("signed"):
        return None
    s = const_int(d.args[1])
    m = canon(d.args[0]).defn
    if s is None or m is None or m.op is not O.MUL or len(m.args) != 2:
        return None
    M = const_int(m.args[1])
    x = m.args[0]
    if M is None:
        M, x = const_int(m.args[0]), m.args[1]
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


def geometric_counters(kernel: Kernel, canon: Canon) -> dict:
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
            bits = _signed_halving(d, v, canon)
            if bits is not None:
                out[v] = (next(iter(outside)), "right", bits, "trunc")
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


def exit_tests(cfg: CFG, lp: Loop, phi: Instr, canon: Canon) -> bool:
    """Whether an exit of ``lp`` that every trip passes (its branch
    dominates the latches) compares the header PHI ``phi``'s value, or its
    next value, directly (``s > 0``, ``s != 0``, ``s < n``)."""
    v = phi.result
    nxt = {canon(a) for p, a in zip(lp.header.preds, phi.args) if p in lp.blocks}
    for ex in lp.exits:
        d = canon(ex.cond).defn
        if d is None or not all(cfg.dominates(ex.branch.block, l) for l in lp.latches):
            continue
        if any(canon(a) is v or canon(a) in nxt for a in d.args):
            return True
    return False


def _signed_halving(d: Instr, v: Value, canon) -> int | None:
    """s when ``d`` is C's signed ``v / 2^s`` as a compiler emits it: the
    bias ``2^s - 1`` added to a negative ``v`` before an arithmetic shift
    (``shr.u32 b, v, 31; add.s32 u, v, b; shr.s32 r, u, 1``, or for s > 1
    ``shr.s32 m, v, 31; shr.u32 b, m, 32 - s``), so that it rounds toward zero."""
    s = const_int(d.args[1])
    if d.op is not O.SHR or not d.attrs.get("signed") or s is None or s <= 0:
        return None
    add = canon(d.args[0]).defn
    if add is None or add.op is not O.ADD or len(add.args) != 2:
        return None
    w = type_bits(v.type)
    for x, bias in ((add.args[0], add.args[1]), (add.args[1], add.args[0])):
        if canon(x) is not v:
            continue
        b = canon(bias).defn
        if b is None or b.op is not O.SHR or b.attrs.get("signed") or len(b.args) != 2:
            continue
        amount, src = const_int(b.args[1]), canon(b.args[0])
        if s == 1 and src is v and amount == w - 1:
            return 1
        m = src.defn
        if amount == w - s and m is not None and m.op is O.SHR and m.attrs.get("signed") and \
                canon(m.args[0]) is v and const_int(m.args[1]) == w - 1:  # fmt: skip
            return s
    return None


def ring_counters(kernel: Kernel, canon: Canon) -> dict:
    """Header PHIs that count up by one and wrap to 0 at a constant S (a
    pipeline's rotating slot: ``x = x + 1 < S ? x + 1 : 0``, ``x + 1 == S ?
    0 : x + 1``, ``(x + 1) % S``): phi -> (start, S). From a start in [0, S)
    such a counter is ``(start + k) mod S`` at trip k."""
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
            S = _wraps_at(next(iter(inside)), v, canon) or _wraps_at_join(cfg, lp, next(iter(inside)), v, canon)
            if S is not None:
                out[v] = (next(iter(outside)), S)
    return out


def _plus_one(x: Value, v: Value, canon) -> bool:
    d = canon(x).defn
    return d is not None and d.op is O.ADD and len(d.args) == 2 and (
        (canon(d.args[0]) is v and const_int(d.args[1]) == 1) or (canon(d.args[1]) is v and const_int(d.args[0]) == 1))


def _wraps_at(nxt: Value, v: Value, canon) -> int | None:
    """S when ``nxt`` is ``v + 1`` wrapped to 0 at S (see `ring_counters`)."""
    d = nxt.defn
    if d is None:
        return None
    if d.op is O.REM and len(d.args) == 2 and _plus_one(d.args[0], v, canon):
        S = const_int(d.args[1])
        return S if S is not None and S >= 2 else None
    if d.op is not O.SELECT or len(d.args) != 3:
        return None
    c, a, b = d.args
    cd = canon(c).defn
    if cd is None or cd.op is not O.CMP or len(cd.args) != 2:
        return None
    x, y = cd.args
    cmp = cd.attrs.get("cmp", "")
    flip = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "lo": "hi", "hi": "lo", "ls": "hs", "hs": "ls"}
    if not _plus_one(x, v, canon):
        x, y, cmp = y, x, flip.get(cmp, cmp)
    S = const_int(y)
    if S is None or S < 2 or not _plus_one(x, v, canon):
        return None
    zero_a, zero_b = const_int(a) == 0, const_int(b) == 0
    # the select keeps x + 1 while x + 1 < S, and gives 0 once it reaches S
    keeps = {"lt": True, "lo": True, "ne": True, "eq": False, "ge": False, "hs": False}.get(cmp)
    if keeps is None:
        return None
    if keeps and _plus_one(a, v, canon) and zero_b:
        return S
    if not keeps and zero_a and _plus_one(b, v, canon):
        return S
    return None


def _wraps_at_join(cfg, lp, nxt: Value, v: Value, canon) -> int | None:
    """S when ``nxt`` is a PHI of 0 and ``v + 1`` at the join of a branch on
    ``v + 1 == S`` (``!=``, ``>=``), 0 arriving the way the wrap is taken
    (``slot += 1; if slot == S: slot = 0`` in Python)."""
    d = nxt.defn
    if d is None or d.op is not O.PHI or len(d.args) != 2 or d.block not in lp.blocks or d.block is lp.header:
        return None
    J = d.block
    D = cfg.idom.get(J)
    t = D.terminator if D is not None else None
    if t is None or t.op is not O.BRANCH or not t.args:
        return None
    cd = canon(t.args[0]).defn
    if cd is None or cd.op is not O.CMP or len(cd.args) != 2:
        return None
    x, y = cd.args
    if not _plus_one(x, v, canon):
        x, y = y, x
    S = const_int(y)
    cmp = cd.attrs.get("cmp", "")
    if S is None or S < 2 or not _plus_one(x, v, canon) or cmp not in ("eq", "ne", "ge", "hs"):
        return None
    tt, ff = t.targets()
    wrap_edge = tt if cmp in ("eq", "ge", "hs") else ff  # the way taken once x + 1 reaches S

    def via(p, succ) -> bool:
        return p is D and succ is J or succ is p or cfg.dominates(succ, p)

    vals = dict(zip(J.preds, d.args))
    zero = [p for p, a in vals.items() if const_int(a) == 0]
    step = [p for p, a in vals.items() if _plus_one(a, v, canon)]
    if len(zero) != 1 or len(step) != 1:
        return None
    keep_edge = ff if wrap_edge is tt else tt
    if via(zero[0], wrap_edge) and via(step[0], keep_edge):
        return S
    return None


def _shift_below(v: Value, depth: int = 0) -> int | None:
    """``s`` when ``v`` is ``x << s`` (or ``x * 2^s``) seen through bitwise
    negations and integer conversions: its bits from ``s`` up are ``x``'s
    from 0 up."""
    d = v.defn
    if d is None or depth > 8:
        return None
    if d.op is O.NOT and len(d.args) == 1 and not is_float(v.type):
        return _shift_below(d.args[0], depth + 1)
    if d.op is O.CVT and len(d.args) == 1 and not (is_float(v.type) or is_float(d.args[0].type)):
        return _shift_below(d.args[0], depth + 1)
    if d.op in (O.SHL, O.MUL) and len(d.args) == 2 and not d.attrs.get("hi"):
        k = const_int(d.args[1])
        if d.op is O.MUL and k is not None:
            k = k.bit_length() - 1 if k > 0 and k & (k - 1) == 0 else None
        return k
    return None


def trip_period(kernel: Kernel, cap: int = 48) -> int:
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
        magic = magic_division(ins, lambda v: v) if ins.op is O.SHR else None
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
        elif ins.op is O.AND and c > 0:
            # a mask of bits shifted up: ``(k << 8) & 256``, ``~(k << 8) & 256``
            # (numba-cuda's slot offset) see the low bits of k only
            shift = _shift_below(ins.args[0])
            if shift is not None and 1 <= c.bit_length() - shift <= 4:
                cands.add(1 << (c.bit_length() - shift))
        elif ins.op in (O.REM, O.DIV) and 2 <= c <= 16:
            cands.add(c)
        elif ins.op is O.SHR and 1 <= c <= 4:
            cands.add(1 << c)
    for _phi, (_start, S) in ring_counters(kernel, lambda v: v).items():
        if 2 <= S <= 16:
            cands.add(S)
    p = 1
    for c in sorted(cands):
        q = p * c // math.gcd(p, c)
        if q <= cap:
            p = q
    return p


MAX_VALUES = 64  # a counter with more values than this is not enumerated


def geometric_values(cfg: CFG, canon: Canon, geo: dict, varying) -> dict:
    """The uniform right-shifted geometric counters whose every value is
    known (``j = k // 2; while j > 0: ...; j //= 2`` with ``k`` doubling up
    to a constant): phi -> the sorted values it may hold, at most
    `MAX_VALUES`. A superset: every value of ``start >> (bits * n)`` for
    each value ``start`` may have, 0 included (the trip that leaves).

    A start is read through constants, products and quotients by positive
    constants, and a left-shifted counter ``k`` (``k *= 2``) where it is
    used inside its loop past the loop's first test ``k <= C`` (``< C``):
    the header tests every trip before the body runs, and the values grow
    from a non-negative start, so the body sees the prefix of ``s << (bits
    * n)`` up to ``C`` (no wrap: ``C < 2^30``). Only non-negative values
    are taken, so that a floor, truncating or logical shift agree."""
    out: dict = {}
    for v in geo:
        starts = _start_values(cfg, canon, geo, varying, v)
        if starts is None:
            continue
        bits = geo[v][2]
        vals = set()
        for s in starts:
            while s and len(vals) <= MAX_VALUES:
                vals.add(s)
                s >>= bits
            vals.add(0)
        if len(vals) <= MAX_VALUES:
            out[v] = tuple(sorted(vals))
    return out


def _start_values(cfg: CFG, canon: Canon, geo: dict, varying, v: Value):
    """The values a right-shifted uniform geometric counter ``v`` may start
    from, all non-negative (None: not known)."""
    start, way, bits, _kind = geo[v]
    if way != "right" or v in varying or not 0 < bits < 32:
        return None
    d = start.defn
    starts = _values(cfg, canon, geo, varying, start, d.block if d is not None else None, 0)
    return None if starts is None or any(s < 0 for s in starts) else starts


def never_left_at(cfg: CFG, canon: Canon, geo: dict, varying, lp: Loop, n: int) -> bool:
    """Whether no thread leaves ``lp`` at its trip ``n``: its one exit is
    the header's test of a right-shifted counter against a constant
    (``while j > 0``), and every value the counter may hold at trip ``n``
    (``start >> (bits * n)``, `geometric_values`' starts) passes it
    (bitonic sort's ``j = k // 2 >= 1``: the inner loop always runs)."""
    if len(lp.exits) != 1 or lp.exits[0].branch.block is not lp.header or not 0 <= n < 64:
        return False
    ex = lp.exits[0]
    d = canon(ex.cond).defn
    if d is None or d.op is not O.CMP or len(d.args) != 2:
        return False
    a, c = canon(d.args[0]), const_int(d.args[1])
    cmp = d.attrs.get("cmp")
    if a not in geo or a.defn is None or a.defn.block is not lp.header or c is None:
        return False
    starts = _start_values(cfg, canon, geo, varying, a)
    test = {"gt": lambda x: x > c, "ge": lambda x: x >= c, "ne": lambda x: x != c, "lt": lambda x: x < c,
            "le": lambda x: x <= c, "eq": lambda x: x == c}.get(cmp)  # fmt: skip
    if starts is None or test is None:
        return False
    bits = geo[a][2]
    return all(test(s >> (bits * n)) != ex.exits_when for s in starts)


def _values(cfg: CFG, canon: Canon, geo: dict, varying, v: Value, at: Block | None, depth: int):
    """The set of values ``v`` may hold where block ``at`` uses it (None: not known)."""
    v = canon(v)
    c = const_int(v)
    if c is not None:
        return {c}
    d = v.defn
    if d is None or depth > 8 or v in varying or is_float(v.type):
        return None
    if d.op is O.PHI and v in geo:
        start, way, bits, _kind = geo[v]
        lp = next((x for x in cfg.loops if x.header is d.block), None)
        if way != "left" or lp is None or at is None or at is lp.header or at not in lp.blocks:
            return None
        bound = _header_bound(lp, v, canon)
        starts = _values(cfg, canon, geo, varying, start, d.block, depth + 1)
        if bound is None or starts is None or any(s < 0 for s in starts):
            return None
        vals = set()
        for s in starts:
            while s <= bound and len(vals) <= MAX_VALUES:
                vals.add(s)
                if s == 0:
                    break
                s <<= bits
        return vals if len(vals) <= MAX_VALUES else None
    if d.op in (O.MUL, O.DIV, O.SHL, O.SHR) and len(d.args) == 2 and not d.attrs.get("hi"):
        k = const_int(d.args[1])
        xs = _values(cfg, canon, geo, varying, d.args[0], d.block, depth + 1)
        if k is None or xs is None or any(x < 0 for x in xs):
            return None
        if d.op is O.MUL and k >= 0:
            return {x * k for x in xs} if max(xs, default=0) * k < 1 << 30 else None
        if d.op is O.DIV and k > 0:
            return {x // k for x in xs}
        if d.op is O.SHR and 0 <= k < 64:
            return {x >> k for x in xs}
        if d.op is O.SHL and 0 <= k < 30:
            return {x << k for x in xs} if max(xs, default=0) << k < 1 << 30 else None
    return None


def _header_bound(lp: Loop, v: Value, canon: Canon) -> int | None:
    """``C`` (inclusive) when ``lp``'s header leaves unless ``v <= C`` (``v < C + 1``), 0 <= C < 2^30."""
    for ex in lp.exits:
        if ex.branch.block is not lp.header:
            continue
        d = canon(ex.cond).defn
        if d is None or d.op is not O.CMP or len(d.args) != 2:
            continue
        a, b = (canon(x) for x in d.args)
        cmp = d.attrs.get("cmp")
        if a is not v:
            a, b = b, a
            cmp = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}.get(cmp)
        c = const_int(b)
        if a is not v or c is None or not 0 <= c < 1 << 30:
            continue
        if (cmp == "le" and not ex.exits_when) or (cmp == "gt" and ex.exits_when):
            return c
        if (cmp == "lt" and not ex.exits_when) or (cmp == "ge" and ex.exits_when):
            return c - 1
    return None
