"""Float comparisons for the solver: IEEE's order on the bits.

The encoders leave floating-point arithmetic uninterpreted (a sum is a free
function of its operands' bits), but a comparison of two single or double
floats is exact: IEEE orders floats by their bits (`ieee_compare`), so a
comparison with a constant bounds the operand's exponent, which code that
reinterprets the bits as an integer reads (CUDA's `sinf` slow path takes
``6 - (exponent - 128) / 32`` as a table index only when ``|x| >= 105615``).
Other widths (half and bfloat16, which share 16 bits) keep one free
predicate per relation. Free, but not one per spelling: ``a > b`` is
``b < a``, and PTX's unordered forms are the negations of the ordered ones
(``leu`` is "not ``gt``": true when ``a <= b`` or either is NaN). So nvcc's
``setp.gt`` for a vote and its ``setp.leu`` for the branch around the store
that vote guards are one question, not two unrelated ones. ``ne`` stays a
predicate of its own (PTX's ``ne`` is ordered, Python's ``!=`` is not).
"""

from __future__ import annotations

import struct
from typing import Any

SWAPPED = {"gt": "lt", "ge": "le"}  # a > b is b < a
NEGATED = {  # unordered form: (ordered form it negates, operands swapped)
    "ltu": ("le", True),  # not (a >= b) = not (b <= a)
    "leu": ("lt", True),  # not (a > b) = not (b < a)
    "gtu": ("le", False),
    "geu": ("lt", False),
    "neu": ("eq", False),
    "equ": ("ne", False),
    "nan": ("num", False),
}


def float_compare(uf, z3, cmp: str, args: list, ieee: bool = False) -> Any:
    """The predicate ``cmp`` of the float bit-vectors ``args``: with ``ieee``
    (both IEEE single or both double floats) IEEE's own, else built from
    ``uf(name, args, sort)`` (the encoder's uninterpreted functions)."""
    if len(args) != 2:
        return uf(f"fcmp_{cmp}", args, z3.BoolSort())
    a, b = args
    if cmp in NEGATED:
        base, swap = NEGATED[cmp]
        return z3.Not(float_compare(uf, z3, base, [b, a] if swap else [a, b], ieee))
    if cmp in SWAPPED:
        cmp, a, b = SWAPPED[cmp], b, a
    if ieee and a.size() == b.size() and a.size() in (32, 64) and cmp in ("lt", "le", "eq", "num"):
        return ieee_compare(z3, cmp, a, b)
    return uf(f"fcmp_{cmp}", [a, b], z3.BoolSort())


def _ieee_parts(z3, x):
    """``x``'s magnitude (its bits without the sign), its sign, and whether it is NaN."""
    w = x.size()
    magnitude = x & ((1 << (w - 1)) - 1)
    infinity = 0x7F800000 if w == 32 else 0x7FF0000000000000
    return magnitude, z3.Extract(w - 1, w - 1, x) == 1, z3.UGT(magnitude, infinity)


def ieee_compare(z3, cmp: str, a, b):
    """IEEE's ordered comparison ``cmp`` (``lt le eq num``) of two floats'
    bits: false when either is NaN; +0 and -0 equal; below that, two
    non-negative floats compare as their bits do as unsigned integers, two
    negative ones the other way round, and a negative one is the smaller."""
    ma, sa, nan_a = _ieee_parts(z3, a)
    mb, sb, nan_b = _ieee_parts(z3, b)
    numbers = z3.And(z3.Not(nan_a), z3.Not(nan_b))
    if cmp == "num":
        return numbers
    zeros = z3.And(ma == 0, mb == 0)
    equal = z3.Or(a == b, zeros)
    if cmp == "eq":
        return z3.And(numbers, equal)
    less = z3.And(z3.Not(zeros), z3.If(sa, z3.Or(z3.Not(sb), z3.ULT(mb, ma)), z3.And(z3.Not(sb), z3.ULT(ma, mb))))
    if cmp == "le":
        less = z3.Or(less, equal)
    return z3.And(numbers, less)


def ieee_abs(uf, z3, x, ftz: bool):
    """PTX's ``abs.f32``/``abs.f64`` of ``x``'s bits: the sign cleared; with
    ``.ftz`` a subnormal becomes +0. A NaN's result is a NaN whose bits the
    ISA leaves unspecified: a free value of ``x`` there (``uf``)."""
    w = x.size()
    magnitude, _, nan = _ieee_parts(z3, x)
    if ftz:
        exponent_mask = 0x7F800000 if w == 32 else 0x7FF0000000000000
        magnitude = z3.If(magnitude & exponent_mask == 0, z3.BitVecVal(0, w), magnitude)
    return z3.If(nan, uf(f"abs_nan_f{w}", [x], z3.BitVecSort(w)), magnitude)


def float_bits(x: float, w: int) -> int:
    """The bits of the float constant ``x`` at width ``w`` (IEEE half, single,
    double; another width: its integer value, wrapped)."""
    if w == 32:
        return struct.unpack("<I", struct.pack("<f", x))[0]
    if w == 64:
        return struct.unpack("<Q", struct.pack("<d", x))[0]
    if w == 16:
        return struct.unpack("<H", struct.pack("<e", x))[0]
    return int(x) % (1 << w)
