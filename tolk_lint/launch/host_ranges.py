"""The range of a host expression over the ranges of its variables.

NVIDIA's scan launches ``scanExclusiveShared2<<<...>>>(..., arrayLength /
(4 * THREADBLOCK_SIZE))`` after asserting ``MIN_LARGE_ARRAY_SIZE <=
arrayLength <= MAX_LARGE_ARRAY_SIZE``: the argument is within the bounds
divided by 1024. `arguments` runs such an expression for each value of its
variables when they are few (`host_eval`); when they are not, this module
bounds it by interval arithmetic over host_eval's parsed expressions.

Only what is sure is bounded: ``+ - * / % << >>`` and casts over values
that are never negative, each subexpression's range checked against its C
type (`host_eval.Machine.type_of`), so that no value between the bounds
wraps or overflows. Anything else (a negative value, a call, ``?:``, a
bitwise operator, a divisor that may be 0) gives no range.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tolk_lint.launch import host_eval

if TYPE_CHECKING:
    from tolk_lint.launch.c_types import IntType


def interval(e: tuple, ranges: dict[str, tuple[int, int]], machine: host_eval.Machine) -> tuple[int, int] | None:
    """``lo..hi`` holding every value of the expression ``e`` when each
    variable ``n`` of ``ranges`` is in ``ranges[n]`` (the others are the
    file's constants, read by ``machine``); None: not bounded so."""
    try:
        return _interval(e, ranges, machine)
    except (host_eval.Unknown, RecursionError):
        return None


def _interval(e: tuple, ranges: dict[str, tuple[int, int]], machine: host_eval.Machine) -> tuple[int, int] | None:
    kind = e[0]
    if kind == "num":
        got = (e[1].v, e[1].v)
    elif kind == "name":
        got = ranges[e[1]] if e[1] in ranges else _constant(e, machine)
    elif kind == "cast":
        got = _interval(e[2], ranges, machine)
    elif kind == "bin" and e[1] in _OPS:
        a = _interval(e[2], ranges, machine)
        b = _interval(e[3], ranges, machine)
        if a is None or b is None or (e[1] in ("<<", ">>") and b[1] >= machine.type_of(e, None).bits):
            return None
        got = _OPS[e[1]](a, b)
    else:
        return None
    if got is None or got[0] < 0:
        return None
    return got if _fits(got, machine.type_of(e, None)) else None


def _constant(e: tuple, machine: host_eval.Machine) -> tuple[int, int]:
    v = machine.value(e, None)
    if not isinstance(v, host_eval.Int):
        raise host_eval.Unknown
    return v.v, v.v


def _fits(r: tuple[int, int], t: IntType) -> bool:
    return t.lo <= r[0] <= r[1] <= t.hi


def _div(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int] | None:
    return (a[0] // b[1], a[1] // b[0]) if b[0] > 0 else None


def _mod(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int] | None:
    return (0, min(a[1], b[1] - 1)) if b[0] > 0 else None


def _shift_left(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int] | None:
    return (a[0] << b[0], a[1] << b[1])


_OPS = {
    "+": lambda a, b: (a[0] + b[0], a[1] + b[1]),
    "-": lambda a, b: (a[0] - b[1], a[1] - b[0]),  # below 0: refused by the caller
    "*": lambda a, b: (a[0] * b[0], a[1] * b[1]),  # both never negative
    "/": _div,
    "%": _mod,
    "<<": _shift_left,
    ">>": lambda a, b: (a[0] >> b[1], a[1] >> b[0]),
}
