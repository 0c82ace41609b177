"""IEEE comparisons on float bits (`smt.float_compare.ieee_compare`) and
PTX's float ``abs`` (`ieee_abs`), checked against the machine's own floats:
for single and double floats, every pair of a set of specials (±0, ±1, the
smallest subnormals, the largest finite, ±inf, NaNs with either sign and
payload) and random bit patterns, the solver's answer on the constants is
Python's (`struct`-packed, so the bits are exact)."""

from __future__ import annotations

import math
import random
import struct

import pytest

from tolk_lint.analysis.smt.float_compare import float_compare, ieee_abs, ieee_compare
from tolk_lint.analysis.smt.solver import z3mod

FORMATS = {32: ("<I", "<f"), 64: ("<Q", "<d")}


def _value(bits: int, w: int) -> float:
    ifmt, ffmt = FORMATS[w]
    return struct.unpack(ffmt, struct.pack(ifmt, bits))[0]


def _specials(w: int) -> list[int]:
    sign = 1 << (w - 1)
    inf = 0x7F800000 if w == 32 else 0x7FF0000000000000
    one = 0x3F800000 if w == 32 else 0x3FF0000000000000
    got = [0, sign, one, one | sign, 1, 1 | sign, inf - 1, inf, inf | sign, inf + 1, (inf + 1) | sign, sign - 1]
    rng = random.Random(w)
    got += [rng.getrandbits(w) for _ in range(8)]
    return got


PYTHON = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "eq": lambda a, b: a == b,
          "num": lambda a, b: not (math.isnan(a) or math.isnan(b)),
          "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
          "ltu": lambda a, b: not (a >= b), "geu": lambda a, b: not (a < b)}  # fmt: skip


@pytest.mark.parametrize("w", [32, 64])
def test_comparisons_are_ieees(w):
    z3 = z3mod()
    bits = _specials(w)
    wrong = []
    for a in bits:
        for b in bits:
            fa, fb = _value(a, w), _value(b, w)
            x, y = z3.BitVecVal(a, w), z3.BitVecVal(b, w)
            for cmp, expected in PYTHON.items():
                got = z3.simplify(float_compare(None, z3, cmp, [x, y], ieee=True))
                if z3.is_true(got) != expected(fa, fb):
                    wrong.append((cmp, fa, fb, hex(a), hex(b)))
    assert not wrong, wrong[:10]


def test_ieee_compare_is_only_the_four_ordered_relations():
    z3 = z3mod()
    x, y = z3.BitVecs("x y", 32)
    assert z3.is_bool(ieee_compare(z3, "lt", x, y))
    calls = []
    float_compare(lambda name, args, sort: calls.append(name) or z3.Bool(name), z3, "ne", [x, y], ieee=True)
    assert calls == ["fcmp_ne"]  # PTX's ordered `ne` and Python's unordered `!=` stay a free predicate


@pytest.mark.parametrize("w", [32, 64])
@pytest.mark.parametrize("ftz", [False, True])
def test_abs_clears_the_sign(w, ftz):
    z3 = z3mod()

    def free(name, args, sort):
        return z3.BitVec(name, sort.size())

    for a in _specials(w):
        f = _value(a, w)
        got = z3.simplify(ieee_abs(free, z3, z3.BitVecVal(a, w), ftz))
        if math.isnan(f):
            assert not z3.is_bv_value(got)  # some NaN: the ISA does not say which
            continue
        want = abs(f)
        if ftz and want != 0 and want < (2.0**-126 if w == 32 else 2.0**-1022):
            want = 0.0  # a subnormal flushed to +0
        assert z3.is_bv_value(got) and _value(got.as_long(), w) == want and got.as_long() >> (w - 1) == 0
