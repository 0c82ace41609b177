"""The concrete pass over a pair of accesses, before any solver question.

Both addresses are evaluated for every thread of the block (`evaluator`),
for each assignment of trip residues the pair's loops allow. When the
symbolic parts agree, the addresses collide for no two threads (the pair is
cleared without Z3), or collide for a concrete pair of threads: when no
loop or uniform condition is left in doubt that pair is the witness,
otherwise Z3 confirms. When they differ by a multiple of a trip quotient,
the residues of the bytes mod that multiple may still keep them apart.
"""

from __future__ import annotations

import itertools
import logging
from typing import TYPE_CHECKING, Any

from tolk_lint import budget
from tolk_lint.analysis.memory.evaluator import FIXED, Unevaluable, addr_terms, sym_add
from tolk_lint.analysis.memory.loops import geometric_values
from tolk_lint.analysis.memory.phases import loose, vec_repr
from tolk_lint.ir.nodes import type_bits

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.accesses import Access
    from tolk_lint.analysis.memory.core import MemoryCore
    from tolk_lint.analysis.memory.phases import Vec

log = logging.getLogger("tolk_lint.memory")


class ConcretePairs:
    """The concrete pass's verdicts on the pairs of one kernel (its byte maps
    cached per access and trip assignment)."""

    def __init__(self, mf: MemoryCore):
        self.mf = mf
        self._bytemaps: dict[tuple, Any] = {}
        # an access's terms at one trip assignment, keyed as the evaluators are: the
        # same access is evaluated against each partner and each group it is in
        # (sgemm's staging loads: 2,580 evaluations of 399 distinct ones)
        self._terms: dict[tuple, Any] = {}
        self._values: dict | None = None  # `loops.geometric_values`, on first use

    def filter_partners(self, a: Access, va: Vec, partners: list, same_warp, same_thread):
        """Drop the partners no two threads of the launch can collide with at
        any trip (every thread evaluated, each trip residue enumerated); hint
        a colliding pair of threads for the others."""
        hints: dict[int, dict] = {}
        block, assumed = self.mf.concrete_block
        if block is None or a.fragment is not None:
            return partners, hints
        keep = []
        for b, vb in partners:
            budget.check("the race search's concrete pass (%d partners)", len(partners))
            combos = self._combos(va, vb)
            verdict = "clear" if combos is not None else "keep"
            hit = None
            unevaluable = False
            for ca, cb in combos or ():
                if hit is not None and hit[2]:
                    break
                budget.check("the race search's concrete pass (a partner's trip residues)")
                ta = self.terms(a, ca)
                tb = self.terms(b, cb)
                if ta is None or tb is None or tb[3] != ta[3]:
                    verdict = "keep"
                    unevaluable = ta is None or tb is None
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
                    exact = not assumed and ta[4] and tb[4] and q0_trips(self.mf, ca) is not None \
                        and q0_trips(self.mf, cb) is not None  # fmt: skip
                    if hit is None or exact:
                        verdict, hit = "hit", (h[0], h[1], exact, ca, cb)
            if unevaluable and self._clear_by_values(a, b, combos, same_warp, same_thread):
                verdict = "clear"
            if verdict == "clear":
                self.mf.concrete_cleared += 1
                continue
            keep.append((b, vb))
            if hit is not None:
                hints.setdefault(id(b), {})[vec_repr(vb)] = hit
        return keep, hints

    def _combos(self, va: Vec, vb: Vec, limit: int = 64):
        """The assignments of trip residues to enumerate for a pair: one per
        shared anchor (``rel``) and one per side for each ``free`` trip.
        Yields (ctx of a, ctx of b); None when there are too many."""
        P = self.mf.period
        shared = sorted({id(lp): lp for lp, k, _n in list(va) + list(vb) if k in ("rel", "xrel")}.items())
        frees = [("a", lp) for lp, k, _n in va if k[0] != "h" and loose(k)] + \
            [("b", lp) for lp, k, _n in vb if k[0] != "h" and loose(k)]  # fmt: skip
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
                    if loose(k):
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

    def _clear_by_values(self, a: Access, b: Access, combos, same_warp, same_thread) -> bool:
        """Whether the pair is apart at every trip assignment ``combos`` for
        every value of the uniform geometric counters it reads
        (`loops.geometric_values`: ``t ^ j`` with ``j`` halving from a
        doubling ``k``, bitonic sort's partner): each counter is fixed to
        each of its values in turn, so that the address and the branches
        are concrete per thread. A counter one value in both threads where
        both sides see it at one trip (one context key, as the evaluator's
        atoms are), two independent values where not. Only a clearance is
        taken from it: a collision found at some value is left to the
        solver as before (that value may be one the trip never holds)."""
        if self._values is None:
            mf = self.mf
            self._values = {mf.canon(v): vals for v, vals in
                            geometric_values(mf.cfg, mf.canon, mf.geo, mf.info.varying).items()}  # fmt: skip
        if not self._values:
            return False
        for ca, cb in combos:
            try:
                keys_a = {v: self.mf.evaluator(ca).ctxkey(v) for v in self._values}
                keys_b = {v: self.mf.evaluator(cb).ctxkey(v) for v in self._values}
            except Unevaluable:
                return False
            slots = sorted({(v.id, k): v for side in (keys_a, keys_b) for v, k in side.items()}.items(),
                           key=lambda x: (x[0][0], repr(x[0][1])))  # fmt: skip
            space = itertools.product(*[self._values[v] for _key, v in slots])
            n = 1
            for _key, v in slots:
                n *= len(self._values[v])
            if n > 256:
                return False
            for vals in space:
                got = dict(zip([key for key, _v in slots], vals))
                fa = tuple((v, got[(v.id, keys_a[v])]) for v in self._values)
                fb = tuple((v, got[(v.id, keys_b[v])]) for v in self._values)
                xa, xb = ca + ((FIXED, fa),), cb + ((FIXED, fb),)
                ta, tb = self.terms(a, xa), self.terms(b, xb)
                if ta is None or tb is None or tb[3] != ta[3]:
                    return False
                if tb[0] != ta[0]:
                    if self._residues_apart(a, ta, b, tb, same_warp, same_thread):
                        continue
                    return False
                if self._collide(a, xa, ta, b, tb, same_warp, same_thread, xb) is not None:
                    return False
        return True

    def terms(self, acc: Access, ctx: tuple):
        """(sym, offsets per thread, active per thread, modulus, exact) or
        None (cached: every caller only reads them)."""
        if acc.fragment is not None:
            return None
        key = (id(acc),) + tuple((id(lp),) + tuple(r) for lp, r in ctx)
        got = self._terms.get(key)
        if got is None:
            got = self._terms[key] = (acc, self._terms_of(acc, ctx))  # the access held: its id stays its own
        return got[1]

    def _terms_of(self, acc: Access, ctx: tuple):
        ev = self.mf.evaluator(ctx)
        if ev is None:
            return None
        try:
            s, c = addr_terms(ev, acc)
        except Unevaluable:
            return None
        except Exception:  # noqa: BLE001
            log.debug("memory: concrete evaluation failed", exc_info=True)
            return None
        act, exact = ev.activity(acc.instr.block)
        mod = None
        if self.mf.k.language != "python" and acc.addr is not None and acc.addr.type not in ("ptr",):
            mod = 1 << max(8, type_bits(acc.addr.type))
        cs = c if isinstance(c, list) else [c] * ev.n
        return s, cs, act, mod, exact

    def terms_exact(self, acc: Access, ctx) -> bool:
        """Whether the threads that run ``acc`` are known exactly at trips ``ctx``."""
        t = self.terms(acc, ctx)
        return bool(t and t[4])

    def _residues_apart(self, a, ta, b, tb, same_warp, same_thread) -> bool:
        """Whether ``a + C*Q`` (or ``b + C*Q``) can meet the other access for no
        Q >= 0 and no two threads: bytes compared by their residue mod C (and
        by order when addresses do not wrap)."""
        diff = sym_add(ta[0], tb[0], -1)
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

    def _collide(self, a, va, ta, b, tb, same_warp, same_thread, vb=None):
        if vb is not None and self.disjoint(a, va, ta, b, vb, tb):
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

    def disjoint(self, a: Access, va, ta, b: Access, vb, tb) -> bool:
        """Whether no byte ``a`` touches is touched by ``b`` (any threads)."""
        la, ha, aligned_a, units_a = self._footprint(a, va, ta)
        lb, hb, aligned_b, units_b = self._footprint(b, vb, tb)
        if la is not None and lb is not None and (ha <= lb or hb <= la):
            return True
        unit = 4 if aligned_a and aligned_b else 1  # words, when both are word-aligned
        return units_a(unit).isdisjoint(units_b(unit))

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


def q0_trips(mf: MemoryCore, ctx) -> dict | None:
    """The trips of a concrete-pass context with every quotient Q = 0, when
    each is a trip its (constant-count) loop really runs; else None."""
    out = {}
    for lp, r in ctx:
        kind = r[0]
        if kind[0] in "xh":
            return None
        n = mf.const_trips(lp)
        trip = r[2] + r[1] if kind == "rel" else (r[1] if kind == "abs" else r[1])
        if n is None or not 0 <= trip < n:
            return None
        out[lp] = trip
    return out
