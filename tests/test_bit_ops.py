"""`smt.bit_ops`: the bit-scan instructions as terms, checked against their
definitions (the PTX ISA's ``clz``, ``brev``, ``bfind`` with and without
``.shiftamt``, signed and unsigned; Numba's ``cuda.ffs``) on every 8-bit
value, and on the 32-bit values at the edges."""

from __future__ import annotations

import pytest

from tolk_lint.analysis import smt
from tolk_lint.analysis.smt.bit_ops import NOT_FOUND, bit_scan


def _signed(v: int, w: int) -> int:
    return v - (1 << w) if v >> (w - 1) else v


def expected(fn: str, v: int, w: int, signed: bool = False, shiftamt: bool = False) -> int:
    if fn == "clz":
        return w - v.bit_length()
    if fn == "brev":
        return int(format(v, f"0{w}b")[::-1], 2)
    if fn == "ffs":
        return (v & -v).bit_length()
    # bfind: the most significant bit that is 1 (unsigned) or differs from the sign (signed)
    x = v
    if signed and _signed(v, w) < 0:
        x = ~v & ((1 << w) - 1)
    if x == 0:
        return NOT_FOUND
    pos = x.bit_length() - 1
    return w - 1 - pos if shiftamt else pos


def _value(z3, fn, v, w, **attrs):
    term = bit_scan(z3, fn, z3.BitVecVal(v, w), attrs, 32)
    return z3.simplify(term).as_long()


@pytest.mark.parametrize("fn", ["clz", "brev", "ffs"])
def test_every_8_bit_value(fn):
    z3 = smt.z3mod()
    for v in range(256):
        assert _value(z3, fn, v, 8) == expected(fn, v, 8), (fn, v)


@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("shiftamt", [False, True])
def test_bfind_every_8_bit_value(signed, shiftamt):
    z3 = smt.z3mod()
    for v in range(256):
        got = _value(z3, "bfind", v, 8, signed=signed, shiftamt=shiftamt)
        assert got == expected("bfind", v, 8, signed, shiftamt), (v, signed, shiftamt)


@pytest.mark.parametrize("v", [0, 1, 2, 0x80000000, 0x7FFFFFFF, 0xFFFFFFFF, 0x00010000, 12345678])
def test_32_bit_edges(v):
    """``__ffs(x) - 1`` as nvcc writes it (``brev`` then ``bfind.shiftamt``)
    is the lowest set bit's position, and all-ones when x is 0."""
    z3 = smt.z3mod()
    for fn in ("clz", "brev", "ffs"):
        assert _value(z3, fn, v, 32) == expected(fn, v, 32), (fn, hex(v))
    for signed in (False, True):
        for shiftamt in (False, True):
            assert _value(z3, "bfind", v, 32, signed=signed, shiftamt=shiftamt) == expected(
                "bfind", v, 32, signed, shiftamt
            )
    reversed_ = bit_scan(z3, "brev", z3.BitVecVal(v, 32), {}, 32)
    lowest = z3.simplify(bit_scan(z3, "bfind", reversed_, {"shiftamt": True}, 32)).as_long()
    assert lowest == ((v & -v).bit_length() - 1 if v else NOT_FOUND)
