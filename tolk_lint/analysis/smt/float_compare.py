"""Float comparisons for the solver: one free predicate per relation.

The encoders leave floating-point values uninterpreted, so a comparison of
two floats is a free predicate of their bits. Free, but not one per
spelling: ``a > b`` is ``b < a``, and PTX's unordered forms are the
negations of the ordered ones (``leu`` is "not ``gt``": true when ``a <= b``
or either is NaN). So nvcc's ``setp.gt`` for a vote and its ``setp.leu`` for
the branch around the store that vote guards are one question, not two
unrelated ones. ``ne`` stays a predicate of its own (PTX's ``ne`` is
ordered, Python's ``!=`` is not).
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


def float_compare(uf, z3, cmp: str, args: list) -> Any:
    """The predicate ``cmp`` of the float bit-vectors ``args``, built from
    ``uf(name, args, sort)`` (the encoder's uninterpreted functions)."""
    if len(args) != 2:
        return uf(f"fcmp_{cmp}", args, z3.BoolSort())
    a, b = args
    if cmp in NEGATED:
        base, swap = NEGATED[cmp]
        return z3.Not(float_compare(uf, z3, base, [b, a] if swap else [a, b]))
    if cmp in SWAPPED:
        cmp, a, b = SWAPPED[cmp], b, a
    return uf(f"fcmp_{cmp}", [a, b], z3.BoolSort())


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
