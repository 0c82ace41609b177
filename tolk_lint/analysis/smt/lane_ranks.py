"""A lane's rank among the lanes whose bit is set: ``popc(bits & ((1 << lane) - 1))``.

Stream compaction packs the values a warp keeps: each keeping lane writes
to the slot numbered by how many keeping lanes are below it,
``__popc(__ballot_sync(FULL, keep) & lanemask_lt)`` (``cuda.popc(ballot &
((1 << lane) - 1))`` in Numba). Two keeping lanes get different slots, so
the stores never meet. Bit-blasted, that is two popcounts of two shifted
masks which the solver does not relate quickly: seconds per question on
32-bit PTX, and a give-up at its resource limit on Numba's 64-bit integers
(a "possible race" warning on correct code).

The fact that relates them is one line of arithmetic. For lanes ``l < h``
below the mask's width::

    popc(bits & low(h)) = popc(bits & low(l)) + popc(bits & [l, h))
                       >= popc(bits & low(l)) + bit l of bits

So when two threads see the same ``bits`` and the lower one's bit is set,
its count is the smaller; and a count is at most its lane (only ``l`` bits
lie below lane ``l``), which keeps two warps' rows of a ``[warp, rank]``
buffer apart. `note` adds both over the two threads' terms of one
``popc``; they hold for every value of the terms, so they remove no
behaviour, and the solver decides the pair at once.
"""

from __future__ import annotations

from typing import Any

from tolk_lint.ir.nodes import Value, const_int, type_bits
from tolk_lint.ir.opcodes import Opcode as O


def _widened(v: Value) -> Value:
    """``v`` before integer conversions that keep its value (widening)."""
    d = v.defn
    while d is not None and d.op is O.CVT and d.args and type_bits(d.args[0].type) <= type_bits(v.type):
        v = d.args[0]
        d = v.defn
    return v


def low_mask_lane(m: Value) -> tuple[Value | None, int] | None:
    """``(lane, width)`` when ``m`` is the mask of the bits below ``lane``:
    ``(1 << lane) - 1`` (or ``+ -1``), computed in ``width`` bits (the lane
    must stay below it), or ``%lanemask_lt`` (lane None: the thread's lane)."""
    m = _widened(m)
    d = m.defn
    if d is None:
        return None
    if d.op is O.SPECIAL and d.attrs.get("name") == "lanemask_lt":
        return None, 32
    if d.op not in (O.SUB, O.ADD) or len(d.args) != 2:
        return None
    shifted, k = d.args
    if const_int(k) != (1 if d.op is O.SUB else -1):
        return None
    s = shifted.defn
    if s is None or s.op is not O.SHL or len(s.args) != 2 or const_int(s.args[0]) != 1:
        return None
    return s.args[1], type_bits(m.type)


def note(enc: Any, d, t: int, x, count) -> None:
    """Record thread ``t``'s ``count = popc(x)`` of the ``popc`` instruction
    ``d``; when ``x`` is ``bits & low(lane)`` and the other thread's is
    recorded, add the rank lemma over the two."""
    if len(d.args) != 1:
        return
    a = _widened(d.args[0])
    ad = a.defn
    if ad is None or ad.op is not O.AND or len(ad.args) != 2:
        return
    for bits, mask in ((ad.args[0], ad.args[1]), (ad.args[1], ad.args[0])):
        got = low_mask_lane(mask)
        if got is not None:
            break
    else:
        return
    lane_value, limit = got
    z3 = enc.z3
    w = x.size()
    limit = min(limit, w)
    b = enc.fit(enc._bv(enc.enc(bits, t)), w)
    if lane_value is None:
        lane = enc.fit(z3.URem(enc.linear(t), 32), w)
    else:
        lane = enc.fit(enc._bv(enc.enc(lane_value, t)), w)
    # a rank is at most its lane (there are only `lane` bits below it):
    # what keeps two warps' rows of a `[warp, rank]` buffer apart
    wide = max(w, count.size())
    enc.constraints.append(z3.Implies(z3.ULT(lane, z3.BitVecVal(limit, w)),
                                      z3.ULE(enc.fit(count, wide), enc.fit(lane, wide))))  # fmt: skip
    seen = enc.__dict__.setdefault("_lane_ranks", {})
    seen[(d, t)] = (b, lane, count)
    other = seen.get((d, 1 - t))
    if other is None:
        return
    for (b0, l0, c0), (b1, l1, c1) in (((b, lane, count), other), (other, (b, lane, count))):
        if c0.size() != c1.size():
            return
        below = z3.And(b0 == b1, z3.ULT(l0, l1), z3.ULT(l1, z3.BitVecVal(limit, w)),
                       z3.Extract(0, 0, z3.LShR(b0, l0)) == 1)  # fmt: skip
        enc.constraints.append(z3.Implies(below, z3.ULT(c0, c1)))
