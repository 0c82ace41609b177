"""``math``, ``cmath``, NumPy and the Python builtins: pure functions (folded when
every argument is a constant), ``abs``/``min``/``max``/``where``, NumPy's
local allocations (``np.empty``, ``np.zeros_like``), ``len``, ``round``,
``divmod``, and the explicit conversions (``float(q)``, ``np.float32(q)``,
``int32(x)``: always a ``CVT`` with attrs ``fn``).

Imports: `values`, `conversion`'s ``join_types``, `vocabulary`, `consts`,
`tolk_lint.ir`.
"""

from __future__ import annotations

import ast
import cmath
import math
from typing import Any

from tolk_lint.frontends.python import vocabulary as V
from tolk_lint.frontends.python.consts import UNKNOWN, is_scalar
from tolk_lint.frontends.python.lower.conversion import join_types
from tolk_lint.frontends.python.lower.values import ArrayRef, GlobalRef, PyConst, TupleLV
from tolk_lint.ir.nodes import Value, is_float
from tolk_lint.ir.opcodes import Opcode as O


def _fold_math(fn: str, args: list) -> Any:
    """``math.fn(*args)`` for constant arguments, or UNKNOWN (domain errors
    are left to the IR)."""
    try:
        r = getattr(math, fn)(*args)
    except (ValueError, TypeError, OverflowError, ZeroDivisionError):
        return UNKNOWN
    return r if is_scalar(r) else UNKNOWN


class LibraryCalls:
    """Mixin of `Lowerer`: ``math``, NumPy and the builtins."""

    def pure_fn(self, fn: str, node: ast.Call, keep_int: bool, result: str | None = None) -> Any:
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            return self._bad_call(node)
        args = [self.expr(a) for a in node.args]
        consts = [x.value for x in args if isinstance(x, PyConst)]
        if len(consts) == len(args) and all(is_scalar(c) for c in consts) and hasattr(math, fn) and args:
            r = _fold_math(fn, consts)
            if r is not UNKNOWN:
                return PyConst(r)
        vals = [self.val(x, a) for x, a in zip(args, node.args)]
        if not vals:
            return self.value(O.PURE, [], result or "f64", {"fn": fn}, node)
        t = vals[0].type
        for v in vals[1:]:
            t = join_types(t, v.type, False)
        if not keep_int and not is_float(t):
            t = "f64"
        vals = [v if v.type == t else self.cvt(v, t, node) for v in vals]
        return self.value(O.PURE, vals, result or t, {"fn": fn}, node)

    def math_call(self, fn: str, node: ast.Call, numpy: bool) -> Any:
        if fn in V.MATH_ABS and len(node.args) == 1:
            x = self.expr(node.args[0])
            if isinstance(x, PyConst) and is_scalar(x.value):
                return PyConst(abs(x.value))
            v = self.val(x, node)
            if v.type.startswith("c") or (
                v.defn is not None
                and v.defn.op is O.PURE
                and str(v.defn.attrs.get("fn", "")).startswith(("cmath.", "complex"))
            ):
                return self.value(O.PURE, [v], "f32" if v.type == "c64" else "f64", {"fn": "cmath.abs"}, node)
            return self.value(O.ABS, [v], v.type, None, node)
        if fn in V.MATH_PREDICATES:
            return self.pure_fn(fn, node, keep_int=False, result="pred")
        if fn in ("floor", "ceil", "trunc") and not numpy:
            r = self.pure_fn(fn, node, keep_int=False)
            if isinstance(r, PyConst):
                return r
            return (
                self.cvt(r, "s64", node, fn)
                if isinstance(r, Value) and r.defn is not None and r.defn.op is O.PURE
                else r
            )
        if fn in ("frexp", "modf") and len(node.args) == 1 and not node.keywords:
            return self.split_float(fn, node)
        if fn in V.MATH_PURE:
            return self.pure_fn(fn, node, keep_int=False)
        lib = "numpy" if numpy else "math"
        return self.opaque_call(
            node, f"call:{lib}.{fn}", None, f"a `{lib}` function the front end does not model"
        )

    def split_float(self, fn: str, node: ast.Call) -> Any:
        """``frexp(x)`` (mantissa, exponent) and ``modf(x)`` (fraction, whole
        part): a tuple of two PUREs of ``x``, folded for a constant."""
        x = self.expr(node.args[0])
        if isinstance(x, PyConst) and is_scalar(x.value) and not isinstance(x.value, complex):
            try:
                return PyConst(getattr(math, fn)(x.value))
            except (ValueError, TypeError, OverflowError):
                pass
        v = self.val(x, node)
        t = v.type if is_float(v.type) else "f64"
        v = v if v.type == t else self.cvt(v, t, node)
        second = "s64" if fn == "frexp" else t
        return TupleLV([self.value(O.PURE, [v], t, {"fn": f"{fn}.0"}, node),
                        self.value(O.PURE, [v], second, {"fn": f"{fn}.1"}, node)])  # fmt: skip

    def cmath_call(self, fn: str, node: ast.Call) -> Any:
        """``cmath.fn(...)``: a PURE ``cmath.fn`` (folded for constants). A
        complex value is one float-typed Value: uniform iff what it is made
        of is."""
        if fn not in V.CMATH_COMPLEX and fn not in V.CMATH_PREDICATES and fn not in ("phase", "polar"):
            return self.opaque_call(
                node, f"call:cmath.{fn}", None, "a `cmath` function the front end does not know"
            )
        if node.keywords or not node.args or any(isinstance(a, ast.Starred) for a in node.args):
            return self._bad_call(node)
        args = [self.expr(a) for a in node.args]
        if all(isinstance(x, PyConst) and is_scalar(x.value) for x in args):
            try:
                r = getattr(cmath, fn)(*(x.value for x in args))
            except (ValueError, TypeError, OverflowError, ZeroDivisionError):
                r = UNKNOWN
            if is_scalar(r) or (isinstance(r, tuple) and all(is_scalar(x) for x in r)):
                return PyConst(r)
        vals = [self.val(x, a) for x, a in zip(args, node.args)]
        if fn == "polar":
            return TupleLV(
                [self.value(O.PURE, vals, "f64", {"fn": f"cmath.{f}"}, node) for f in ("abs", "phase")]
            )
        t = "pred" if fn in V.CMATH_PREDICATES else "f64"
        return self.value(O.PURE, vals, t, {"fn": f"cmath.{fn}"}, node)

    def complex_part(self, x: Any, part: str, node) -> Any:
        """``x.real``, ``x.imag``, ``x.conjugate()``: folded for a constant, a
        PURE of the value otherwise."""
        if isinstance(x, PyConst) and is_scalar(x.value):
            c = complex(x.value)
            return PyConst({"real": c.real, "imag": c.imag, "conjugate": c.conjugate()}[part])
        v = self.val(x, node)  # a complex value may be typed as a float: always a PURE
        t = "f32" if v.type == "c64" else "f64"
        return self.value(O.PURE, [v], t, {"fn": part}, node)

    def numpy_call(self, fn: str, node: ast.Call) -> Any:
        t = V.dtype_of_qual(f"numpy.{fn}")
        if t is not None:
            return self.convert(t, node, fn)
        if fn in V.NUMPY_ALLOC:
            return self.np_alloc(fn, node)
        op = V.NUMPY_MINMAX.get(fn)
        if op is not None and len(node.args) == 2 and not node.keywords:
            return self.minmax(op, [self.expr(a) for a in node.args], node)
        if fn == "where" and len(node.args) == 3:
            c = self.to_pred(self.expr(node.args[0]), node)
            x, y = self.expr(node.args[1]), self.expr(node.args[2])
            if isinstance(c, PyConst):
                return x if c.value else y
            va, vb, t2 = self.unify(x, y, node)
            return self.value(O.SELECT, [c, va, vb], t2, None, node)
        return self.math_call(fn, node, numpy=True)

    def np_alloc(self, fn: str, node: ast.Call) -> Any:
        like = fn.endswith("_like")
        names = ["a", "dtype"] if like else ["shape", "dtype"]
        if fn.startswith("full"):
            names.insert(1, "fill_value")
        a = self.call_args(node, names)
        if a is None or names[0] not in a:
            return self._bad_call(node)
        if like:
            src = self.expr(a["a"])
            if not isinstance(src, ArrayRef):
                return self._bad_call(node)
            shape = tuple(src.shape[len(src.prefix) :]) or (None,)
            dtype = self.dtype_arg(a.get("dtype"), src.dtype)
            return self.new_buffer("local", dtype, shape, node)
        shape_lv = self.expr(a["shape"])
        got = self._shape_of(shape_lv, a["shape"])
        dtype = self.dtype_arg(a.get("dtype"), "f64")
        if got is None:
            n = len(shape_lv.items) if isinstance(shape_lv, TupleLV) else 1
            shape: tuple = (None,) * n
        else:
            shape = got[0]
        return self.new_buffer("local", dtype, shape, node)

    def minmax(self, op: O, args: list, node) -> Any:
        if len(args) == 1:
            a = args[0]
            if isinstance(a, TupleLV):
                args = list(a.items)
            elif isinstance(a, PyConst) and isinstance(a.value, tuple):
                args = [PyConst(x) for x in a.value]
            else:
                return self.opaque(node, "minmax-iterable", None, "min/max of an iterable")
        if not args:
            return self.opaque(node, "minmax-empty", None, "min/max of nothing")
        if all(isinstance(x, PyConst) and is_scalar(x.value) for x in args):
            vals = [x.value for x in args]
            return PyConst(min(vals) if op is O.MIN else max(vals))
        acc = args[0]
        for x in args[1:]:
            va, vb, t = self.unify(acc, x, node)
            acc = self.value(op, [va, vb], t, None, node)
        return acc if isinstance(acc, Value) else self.val(acc, node)

    def convert(self, t: str, node: ast.Call, fn: str) -> Any:
        if len(node.args) != 1 or node.keywords:
            if not node.args and not node.keywords:
                return self.val(PyConst(False if t == "pred" else 0), node, t)
            return self._bad_call(node)
        x = self.expr(node.args[0])
        if isinstance(x, PyConst) and is_scalar(x.value) and not isinstance(x.value, complex):
            c = x.value
            try:
                if t == "pred":
                    return PyConst(bool(c))
                if is_float(t):
                    return self.const(float(c), t, node)
                return self.const(int(c), t, node)
            except (OverflowError, ValueError):
                return self._bad_call(node)
        if isinstance(x, PyConst) and isinstance(x.value, str):
            return self._bad_call(node)
        v = self.val(x, node)
        if t == "pred":
            return v if v.type == "pred" else self._nonzero(v, node)
        return self.cvt(v, t, node, fn)

    def builtin_call(self, fn: str, node: ast.Call) -> Any:
        if fn in ("min", "max") and not node.keywords:
            return self.minmax(O.MIN if fn == "min" else O.MAX, [self.expr(a) for a in node.args], node)
        if fn == "abs" and len(node.args) == 1:
            return self.math_call("abs", node, numpy=False)
        if fn in ("int", "float", "bool"):
            return self.convert({"int": "s64", "float": "f64", "bool": "pred"}[fn], node, fn)
        if fn == "len" and len(node.args) == 1:
            x = self.expr(node.args[0])
            if isinstance(x, ArrayRef):
                if len(x.prefix) >= x.ndim:
                    return self._bad_call(node)
                return self.extent(x, len(x.prefix), node)
            if isinstance(x, TupleLV):
                return PyConst(len(x.items))
            if isinstance(x, PyConst) and isinstance(x.value, tuple):
                return PyConst(len(x.value))
            if isinstance(x, GlobalRef):
                return self.extent(self.global_array(x, node), 0, node)
            return self.opaque(node, "len", None, "len of something that is not an array")
        if fn == "round" and 1 <= len(node.args) <= 2:
            r = self.pure_fn("round", node, keep_int=True)
            if isinstance(r, Value) and len(node.args) == 1 and r.type != "s64":
                return self.cvt(r, "s64", node, "round")
            return r
        if fn == "pow" and len(node.args) == 2:
            return self.binop(ast.Pow, self.expr(node.args[0]), self.expr(node.args[1]), node)
        if fn == "divmod" and len(node.args) == 2:
            x, y = self.expr(node.args[0]), self.expr(node.args[1])
            return TupleLV([self.binop(ast.FloorDiv, x, y, node), self.binop(ast.Mod, x, y, node)])
        if fn == "print":
            for a in node.args:
                self.expr(a)
            return PyConst(None)
        if fn == "range":
            return self.opaque_call(node, "range-value", "range(...)", "a range outside a for loop")
        return self.opaque_call(node, f"call:{fn}", f"{fn}(...)", "a builtin the front end does not model")
