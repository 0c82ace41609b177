"""PTX's spellings of numbers: integers (decimal, ``0x`` hex, ``0b`` binary,
octal with a leading ``0``, an optional ``U`` suffix) and the bit patterns of
floats (``0f3F800000`` an f32, ``0d3FF0000000000000`` an f64).

What it may import: nothing of the front end.
"""

from __future__ import annotations

import struct


def parse_int(s: str) -> int:
    if s[-1] in "uU":
        s = s[:-1]
    neg = s.startswith("-")
    if neg:
        s = s[1:]
    if s[:2] in ("0x", "0X"):
        v = int(s[2:], 16)
    elif s[:2] in ("0b", "0B"):
        v = int(s[2:], 2)
    elif len(s) > 1 and s[0] == "0" and s.isdigit() and all(c in "01234567" for c in s):
        v = int(s, 8)
    else:
        v = int(s)
    return -v if neg else v


def wrap64(v: int) -> int:
    """An integer literal as ptxas keeps it: 64 bits, wrapped (ptxas takes
    ``0x1FFFFFFFFFFFFFFFF`` and ``-9223372036854775809`` and keeps their low
    64 bits), in the signed range unless only the unsigned one holds it."""
    if -(1 << 63) <= v < (1 << 64):
        return v
    v %= 1 << 64
    return v - (1 << 64) if v >= (1 << 63) else v


def as_operand(v: int, type: str) -> int:
    """The value an integer literal has as an operand of ``type`` (``s32``,
    ``u16``, ``b64``, ...): ptxas truncates it to the operand's width, so
    ``mul.wide.s32 %rd1, %r1, 9223372036854775807`` multiplies by -1.
    A signed type reads the bits as two's complement; an unsigned or bit
    type keeps a value that already fits one of the two readings as written
    (``add.u32 %r1, %r1, -1`` stays -1, which the analyses read as the
    subtraction it is), else the bits as unsigned."""
    v = wrap64(v)
    if len(type) < 2 or type[0] not in "sub" or not type[1:].isdigit():
        return v  # a predicate or a float: not an integer of a width
    bits = int(type[1:])
    lo, top = -(1 << (bits - 1)), 1 << bits
    if type[0] == "s":
        v %= top
        return v - top if v >= top >> 1 else v
    return v if lo <= v < top else v % top


def hexf(s: str) -> float:
    return struct.unpack(">f", bytes.fromhex(s[2:]))[0]


def hexd(s: str) -> float:
    return struct.unpack(">d", bytes.fromhex(s[2:]))[0]
