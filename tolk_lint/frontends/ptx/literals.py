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


def hexf(s: str) -> float:
    return struct.unpack(">f", bytes.fromhex(s[2:]))[0]


def hexd(s: str) -> float:
    return struct.unpack(">d", bytes.fromhex(s[2:]))[0]
