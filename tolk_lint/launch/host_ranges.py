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

`bounded` is the same walk for a value that must be bounded though its
variables are not (a launch's block dimension, `bounded_block`): a variable
it is given no range for is any value of its C type, and so is any
subexpression this walk cannot bound more tightly, a value of its type all
the same. What bounds it then is a minimum or a maximum: ``(a < b) ? a :
b`` (the comparison and the result are both in the arms' common type, so it
is ``min(a, b)`` in that type), ``min(a, b)`` / ``max(a, b)`` (CUDA's and
``std::``'s, when the file defines no function of that name), ``x & 15``,
``x % 16``, a cast to a narrow type, a comparison. FDTD3d's ``dimBlock.y =
((n / 32) < (size_t)16) ? (n / 32) : (size_t)16`` is in 0..16 whatever
``n`` is.
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


# -- bounding a value whose variables need not be bounded ----------------------------------------------------


def bounded(e: tuple, ranges: dict[str, tuple[int, int]], machine: host_eval.Machine) -> tuple[int, int] | None:
    """``lo..hi`` holding every value of ``e`` (in its C type) when each
    variable of ``ranges`` is in its range and every other variable is any
    value of its type (``machine.outer`` gives each a `host_eval.Cell` of its
    type, or None for the file's constants); None when its type is not
    known (a float, a pointer, a name the file does not declare)."""
    try:
        return _bounded(e, ranges, machine)
    except (host_eval.Unknown, RecursionError, IndexError):
        return None


def _bounded(e: tuple, ranges: dict[str, tuple[int, int]], machine: host_eval.Machine) -> tuple[int, int]:
    kind = e[0]
    if kind == "call":
        return _min_max_call(e, ranges, machine)
    t = machine.type_of(e, None)
    whole = (t.lo, t.hi)  # what any value of the type is in: the bound when nothing tighter is known
    got: tuple[int, int] | None = None
    if kind == "num":
        got = (e[1].v, e[1].v)
    elif kind == "name":
        if e[1] in ranges:
            got = ranges[e[1]]
        elif not isinstance(machine.outer(e[1]), host_eval.Cell):
            got = _constant(e, machine)
    elif kind == "cast":
        got = _bounded(e[2], ranges, machine)
    elif kind == "un" and e[1] in ("-", "+"):
        a = _within(e[2], t, ranges, machine)
        got = a if e[1] == "+" else (-a[1], -a[0])
    elif kind == "bin" and e[1] in _COMPARISONS:
        got = (0, 1)
    elif kind == "bin" and e[1] in ("<<", ">>"):
        got = _shift(e[1], _within(e[2], t, ranges, machine), _bounded(e[3], ranges, machine), t)
    elif kind == "bin" and e[1] in _SIGNED_OPS:
        got = _SIGNED_OPS[e[1]](_within(e[2], t, ranges, machine), _within(e[3], t, ranges, machine))
    elif kind == "cond":
        a, b = _within(e[2], t, ranges, machine), _within(e[3], t, ranges, machine)
        got = _PICK[_min_or_max(e)](a, b)
    return got if got is not None and _fits(got, t) else whole


def _within(e: tuple, t: IntType, ranges: dict[str, tuple[int, int]], machine: host_eval.Machine) -> tuple[int, int]:
    """``e``'s range once converted to ``t`` (the usual arithmetic
    conversions): unchanged when every value fits, else any value of ``t``."""
    r = _bounded(e, ranges, machine)
    return r if _fits(r, t) else (t.lo, t.hi)


def _min_or_max(e: tuple) -> str:
    """``min`` for ``(a < b) ? a : b`` (or ``(b > a) ? a : b``), ``max`` for
    the mirrored forms, else ``either`` (a ``?:`` whose value is one arm or
    the other, which is all that is known of it)."""
    c, x, y = e[1], e[2], e[3]
    if c[0] != "bin" or c[1] not in ("<", "<=", ">", ">=") or not (_pure(x) and _pure(y)):
        return "either"  # (an arm run twice, `(rand() < 16) ? rand() : 16`, need not be what was compared)
    less = c[1] in ("<", "<=")
    if (x, y) == (c[2], c[3]):
        return "min" if less else "max"
    if (x, y) == (c[3], c[2]):
        return "max" if less else "min"
    return "either"


def _pure(e: tuple) -> bool:
    """Whether ``e`` has the same value each time it runs: no call, no assignment, no pointer read."""
    if e[0] in ("call", "assign", "pre", "post", "deref", "addr"):
        return False
    return all(_pure(x) for x in e[1:] if isinstance(x, tuple) and x and isinstance(x[0], str))


def _min_max_call(e: tuple, ranges: dict[str, tuple[int, int]], machine: host_eval.Machine) -> tuple[int, int]:
    """``min(a, b)`` / ``max(a, b)`` in the arguments' common type; another
    call is unknown (its type is the file's function's, when it has one)."""
    name, args = e[1], e[2]
    t = machine.type_of(e, None)
    if name not in ("min", "max") or len(args) != 2 or any(f.name == name for f in machine.src.functions):
        return (t.lo, t.hi)
    a, b = _within(args[0], t, ranges, machine), _within(args[1], t, ranges, machine)
    return _PICK[name](a, b)


def _shift(op: str, a: tuple[int, int], b: tuple[int, int], t: IntType) -> tuple[int, int] | None:
    if a[0] < 0 or b[0] < 0 or b[1] >= t.bits:
        return None
    return _shift_left(a, b) if op == "<<" else (a[0] >> b[1], a[1] >> b[0])


def _corners(f):
    """An operation monotone in each argument over intervals: its extremes are at the corners."""

    def at(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        vals = [f(x, y) for x in a for y in b]
        return min(vals), max(vals)

    return at


def _divide(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int] | None:
    """C's division (toward zero) by a divisor that is never 0 nor negative."""
    if b[0] <= 0:
        return None
    return _corners(lambda x, y: abs(x) // y * (1 if x >= 0 else -1))(a, b)


def _remainder(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int] | None:
    return (0, min(a[1], b[1] - 1)) if a[0] >= 0 and b[0] > 0 else None


def _and(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int] | None:
    """``x & y`` is within 0..y when ``y`` is never negative, whatever ``x`` is."""
    his = [r[1] for r in (a, b) if r[0] >= 0]
    return (0, min(his)) if his else None


_SIGNED_OPS = {
    "+": _corners(lambda x, y: x + y),
    "-": _corners(lambda x, y: x - y),
    "*": _corners(lambda x, y: x * y),
    "/": _divide,
    "%": _remainder,
    "&": _and,
}
_COMPARISONS = frozenset(("<", "<=", ">", ">=", "==", "!=", "&&", "||"))
_PICK = {
    "min": lambda a, b: (min(a[0], b[0]), min(a[1], b[1])),
    "max": lambda a, b: (max(a[0], b[0]), max(a[1], b[1])),
    "either": lambda a, b: (min(a[0], b[0]), max(a[1], b[1])),
}
