"""Bit-scan instructions as exact terms: ``clz``, ``brev``, ``bfind`` (PTX)
and ``ffs`` (Numba's ``cuda.ffs``; nvcc writes CUDA's ``__ffs(x)`` as
``brev`` then ``bfind.shiftamt``, plus one).

Kept as uninterpreted functions they could be any 32-bit value, and an
index built from one (``v[__ffs(stride) - 1]``, a Sobol direction number,
a radix digit's position) got witnesses past any array: index 32 of a
32-entry table, which no input gives. Each is a chain of ``width``
if-then-elses over the operand's bits, cheap for the solver.

Semantics (PTX ISA, "Integer Arithmetic Instructions"):

- ``clz.bW a``: the number of leading zeros, ``W`` when ``a`` is 0;
- ``brev.bW a``: the bits in reverse order;
- ``bfind.uW a``: the position of the most significant 1 bit, 0xffffffff
  when there is none; ``bfind.sW``: of the most significant bit that
  differs from the sign bit (0xffffffff for 0 and -1); ``.shiftamt``
  gives ``W - 1 - position`` instead (the left shift that normalises
  ``a``), still 0xffffffff when there is none;
- ``ffs(a)``: 1 + the position of the least significant 1 bit, 0 when
  ``a`` is 0.
"""

from __future__ import annotations

NOT_FOUND = 0xFFFFFFFF
FUNCTIONS = frozenset({"clz", "brev", "bfind", "ffs"})


def _leading_zeros(z3, x):
    """The number of leading zeros of ``x``, as a term of ``x``'s width."""
    w = x.size()
    out = z3.BitVecVal(w, w)
    for i in range(w):  # from the least significant bit up: the highest set bit decides, so it is the outermost `If`
        out = z3.If(z3.Extract(i, i, x) == 1, z3.BitVecVal(w - 1 - i, w), out)
    return out


def _reversed(z3, x):
    w = x.size()
    return z3.Concat(*[z3.Extract(i, i, x) for i in range(w)]) if w > 1 else x


def bit_scan(z3, fn: str, x, attrs: dict, result_width: int):
    """The term of ``fn`` (``clz``, ``brev``, ``bfind``, ``ffs``) on ``x``,
    at ``result_width`` bits; None for any other function."""

    def fit(e):
        n = e.size()
        if n == result_width:
            return e
        return z3.ZeroExt(result_width - n, e) if n < result_width else z3.Extract(result_width - 1, 0, e)

    w = x.size()
    if fn == "brev":
        return fit(_reversed(z3, x))
    if fn == "clz":
        return fit(_leading_zeros(z3, x))
    if fn == "ffs":
        low = _leading_zeros(z3, _reversed(z3, x))  # trailing zeros, w when x is 0
        return fit(z3.If(x == 0, z3.BitVecVal(0, w), low + 1))
    if fn == "bfind":
        if attrs.get("signed"):
            x = z3.If(x < 0, ~x, x)  # the most significant bit that differs from the sign
        zeros = _leading_zeros(z3, x)
        found = zeros if attrs.get("shiftamt") else z3.BitVecVal(w - 1, w) - zeros
        wide = max(w, 32)
        found = z3.ZeroExt(wide - w, found) if wide > w else found
        return fit(z3.If(x == 0, z3.BitVecVal(NOT_FOUND, wide), found))
    return None
