"""Compile-time evaluation of constant expressions (module constants, shapes).

`evaluate(node, lookup)` folds literals, tuples and arithmetic over them, with
Python's own semantics (``//`` floors, ``%`` takes the divisor's sign). Names
are resolved by ``lookup(name)``, which returns a Python value, an `Alias`
(a name standing for an imported thing, ``DT = float32``) or `UNKNOWN`.
Nothing from the user's file is executed.

A host or device array the module builds with a size it states
(``a = cuda.to_device(np.arange(1024))``, ``np.zeros((n, 4), np.float32)``)
is a `HostArray`: only its shape is known, so that ``len(a)``, ``a.shape``
and ``a.size`` fold (``nelem = len(a)`` sizing a kernel's shared array, as
Numba's documentation writes it).
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        return False


UNKNOWN: Any = _Unknown()


class HostArray:
    """An array the module builds on the host (or copies to the device) with
    a constant shape; its values are not known."""

    __slots__ = ("shape",)

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape


# the array constructors whose first argument is the shape (NumPy's and Numba's)
_SHAPED = {"numpy.zeros", "numpy.ones", "numpy.empty", "numpy.full", "numba.cuda.device_array",
           "numba.cuda.pinned_array", "numba.cuda.mapped_array", "numba.cuda.managed_array"}  # fmt: skip
# what keeps its argument's shape
_SAME_SHAPE = {"numba.cuda.to_device", "numpy.ascontiguousarray", "numpy.copy", "numpy.zeros_like",
               "numpy.ones_like", "numpy.empty_like", "numba.cuda.device_array_like"}  # fmt: skip


class Alias:
    """A name bound to an imported object (``DT = numba.float32``)."""

    __slots__ = ("qual",)

    def __init__(self, qual: str):
        self.qual = qual

    def __repr__(self) -> str:
        return f"Alias({self.qual})"


BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
CMPOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}

_SCALARS = (int, float, bool, complex)


def is_scalar(v: Any) -> bool:
    return isinstance(v, _SCALARS)


def fold_binop(op: type, a: Any, b: Any) -> Any:
    """``a op b`` for Python scalars, or UNKNOWN (division by zero, huge powers, ...)."""
    fn = BINOPS.get(op)
    if fn is None or not (is_scalar(a) and is_scalar(b)):
        return UNKNOWN
    if op in (ast.Pow, ast.LShift) and isinstance(b, int) and abs(b) > 256:
        return UNKNOWN
    try:
        return fn(a, b)
    except Exception:  # noqa: BLE001 - ZeroDivisionError, OverflowError, TypeError, ValueError
        return UNKNOWN


def fold_unary(op: ast.unaryop, a: Any) -> Any:
    if not is_scalar(a):
        return UNKNOWN
    try:
        if isinstance(op, ast.USub):
            return -a
        if isinstance(op, ast.UAdd):
            return +a
        if isinstance(op, ast.Not):
            return not a
        if isinstance(op, ast.Invert):
            return ~a
    except Exception:  # noqa: BLE001
        return UNKNOWN
    return UNKNOWN


def fold_compare(ops: list[ast.cmpop], values: list[Any]) -> Any:
    if not all(is_scalar(v) for v in values):
        return UNKNOWN
    for op, a, b in zip(ops, values, values[1:]):
        fn = CMPOPS.get(type(op))
        if fn is None:
            return UNKNOWN
        try:
            if not fn(a, b):
                return False
        except Exception:  # noqa: BLE001
            return UNKNOWN
    return True


_CONVERT = {"int": int, "float": float, "bool": bool}


def evaluate(
    node: ast.AST, lookup: Callable[[str], Any], qual_of: Callable[[ast.AST], str | None] | None = None
) -> Any:
    """The value of a constant expression, an `Alias`, or UNKNOWN."""
    if isinstance(node, ast.Constant):
        v = node.value
        return v if is_scalar(v) or isinstance(v, str) or v is None else UNKNOWN
    if isinstance(node, ast.Name):
        return lookup(node.id)
    if isinstance(node, ast.Attribute):
        if node.attr in ("shape", "size", "ndim") and isinstance(node.value, ast.Name):
            base = lookup(node.value.id)
            if isinstance(base, HostArray):
                shape = base.shape
                return shape if node.attr == "shape" else len(shape) if node.attr == "ndim" else math.prod(shape)
        q = qual_of(node) if qual_of else None
        if q is not None:
            from tolk_lint.frontends.python.vocabulary import KNOWN_CONSTANTS

            if q in KNOWN_CONSTANTS and KNOWN_CONSTANTS[q] is not None:
                return KNOWN_CONSTANTS[q]
            return Alias(q)
        return UNKNOWN
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [evaluate(e, lookup, qual_of) for e in node.elts]
        if any(i is UNKNOWN or isinstance(i, Alias) for i in items):
            return UNKNOWN
        return tuple(items)
    if isinstance(node, ast.UnaryOp):
        return fold_unary(node.op, evaluate(node.operand, lookup, qual_of))
    if isinstance(node, ast.BinOp):
        return fold_binop(
            type(node.op), evaluate(node.left, lookup, qual_of), evaluate(node.right, lookup, qual_of)
        )
    if isinstance(node, ast.Compare):
        vals = [evaluate(node.left, lookup, qual_of)] + [
            evaluate(c, lookup, qual_of) for c in node.comparators
        ]
        return fold_compare(node.ops, vals)
    if isinstance(node, ast.BoolOp):
        vals = [evaluate(v, lookup, qual_of) for v in node.values]
        if not all(is_scalar(v) for v in vals):
            return UNKNOWN
        if isinstance(node.op, ast.And):
            for v in vals:
                if not v:
                    return v
            return vals[-1]
        for v in vals:
            if v:
                return v
        return vals[-1]
    if isinstance(node, ast.IfExp):
        c = evaluate(node.test, lookup, qual_of)
        if not is_scalar(c):
            return UNKNOWN
        return evaluate(node.body if c else node.orelse, lookup, qual_of)
    if isinstance(node, ast.Subscript) and isinstance(node.value, (ast.Name, ast.Attribute)):
        seq, i = evaluate(node.value, lookup, qual_of), evaluate(node.slice, lookup, qual_of)
        if isinstance(seq, tuple) and isinstance(i, int) and not isinstance(i, bool) and -len(seq) <= i < len(seq):
            return seq[i]
        return UNKNOWN
    if isinstance(node, ast.Call) and qual_of is not None:
        q = qual_of(node.func)
        if q in _SHAPED or q in _SAME_SHAPE or q == "numpy.arange":
            return _array(q, [evaluate(a, lookup, qual_of) for a in node.args])
    if isinstance(node, ast.Call) and not node.keywords and qual_of is not None:
        q = qual_of(node.func)
        if q == "builtins.len" and len(node.args) == 1:
            arr = evaluate(node.args[0], lookup, qual_of)
            if isinstance(arr, HostArray):
                return arr.shape[0] if arr.shape else UNKNOWN
        args = [evaluate(a, lookup, qual_of) for a in node.args]
        if any(not is_scalar(a) and not isinstance(a, tuple) for a in args):
            return UNKNOWN
        return _call(q, args)
    return UNKNOWN


def _array(q: str, args: list[Any]) -> Any:
    """The `HostArray` an array constructor gives (its dtype, fill value and
    keywords do not change its shape), or UNKNOWN."""
    if not args:
        return UNKNOWN
    first = args[0]
    if q in _SAME_SHAPE:
        return first if isinstance(first, HostArray) else UNKNOWN
    if q == "numpy.arange":
        ends = args[:3]
        if not all(isinstance(a, int) and not isinstance(a, bool) for a in ends) or (len(ends) == 3 and ends[2] == 0):
            return UNKNOWN
        return HostArray((len(range(*ends)),))
    shape = (first,) if isinstance(first, int) and not isinstance(first, bool) else first
    if isinstance(shape, tuple) and shape and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                                  for d in shape):  # fmt: skip
        return HostArray(shape)
    return UNKNOWN


def _call(q: str | None, args: list[Any]) -> Any:
    from tolk_lint.frontends.python.vocabulary import dtype_of_qual

    if q is None:
        return UNKNOWN
    try:
        if q.startswith("builtins."):
            name = q[9:]
            if name in _CONVERT and len(args) == 1:
                return _CONVERT[name](args[0])
            if name in ("min", "max") and args:
                vals = args[0] if len(args) == 1 and isinstance(args[0], tuple) else args
                return (min if name == "min" else max)(vals)
            if name == "abs" and len(args) == 1:
                return abs(args[0])
            if name == "len" and len(args) == 1 and isinstance(args[0], tuple):
                return len(args[0])
            if name == "round" and len(args) == 1:
                return round(args[0])
            return UNKNOWN
        t = dtype_of_qual(q)
        if t is not None and len(args) == 1 and is_scalar(args[0]):
            if t.startswith("f"):
                return float(args[0])
            if t.startswith(("s", "u")):
                return int(args[0])
    except Exception:  # noqa: BLE001
        return UNKNOWN
    return UNKNOWN
