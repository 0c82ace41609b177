"""Python/Numba typing: Values for symbolic constants, the type two operands
meet in, implicit and explicit conversions, conditions as ``pred``.

Python ints are ``s64``, floats ``f64``, booleans ``pred``. A Python
constant meeting a typed value takes that value's float type
(``float32(0.5) * s[t]`` stays ``f32``); an integer narrower than 64 bits
meeting a Python int is widened (``CVT`` to ``s64``), as Numba does.
Explicit conversions (``float(q)``, ``np.float32(q)``, ``int32(x)``, see
`library`) are always a ``CVT`` (attrs ``fn``), even between equal types, so
decodes stay visible.

Imports: `values`, `consts`, `tolk_lint.ir`.
"""

from __future__ import annotations

from typing import Any

from tolk_lint.frontends.python.consts import UNKNOWN, is_scalar
from tolk_lint.frontends.python.lower.values import ArrayRef, GlobalRef, PyConst, QualRef, TupleLV
from tolk_lint.ir.nodes import Value, is_float, type_bits
from tolk_lint.ir.opcodes import Opcode as O


def is_number(c: Any) -> bool:
    return isinstance(c, (int, float, bool))


def join_types(a: str, b: str, bitwise: bool) -> str:
    """The type two operands meet in."""
    if a == b:
        return a
    if a == "pred" and bitwise and b == "pred":
        return "pred"
    if a.startswith("c") or b.startswith("c"):  # complex: one float-typed value (see `library`)
        return "f64"
    fa, fb = is_float(a), is_float(b)
    if fa or fb:
        if fa and fb:
            return a if type_bits(a) >= type_bits(b) else b
        return a if fa else b
    if a.startswith("u") and b.startswith("u"):
        return a if type_bits(a) >= type_bits(b) else b
    return "s64"


class Conversions:
    """Mixin of `Lowerer`: values, types and conversions."""

    def val(self, lv: Any, node, want: str | None = None) -> Value:
        """A Value for ``lv`` (CONSTs for Python constants)."""
        if isinstance(lv, Value):
            return lv
        if isinstance(lv, PyConst):
            c = lv.value
            if isinstance(c, bool):
                return self.const(c, want or "pred", node)
            if isinstance(c, int):
                if want and is_float(want):
                    return self.const(float(c), want, node)
                return self.const(c, want or "s64", node)
            if isinstance(c, float):
                return self.const(c, want if want and is_float(want) else "f64", node)
            if isinstance(c, complex):  # one float-typed value, as `cmath` results are
                parts = [self.const(c.real, "f64", node), self.const(c.imag, "f64", node)]
                return self.value(O.PURE, parts, "f64", {"fn": "complex"}, node)
            return self.opaque(node, "constant", None, "a constant that is not a number")
        if isinstance(lv, ArrayRef):
            return lv.base
        if isinstance(lv, GlobalRef):
            return self.global_value(lv, node)
        if isinstance(lv, TupleLV):
            return self.opaque(node, "tuple-value", None, "a tuple used as a number")
        if isinstance(lv, QualRef):
            return self.opaque(node, f"name:{lv.qual}", lv.qual, "a name used as a value")
        return self.opaque(node, "object-value", None, "an object used as a value")

    def static(self, lv: Any) -> Any:
        """The compile-time value of ``lv``, or UNKNOWN."""
        if isinstance(lv, PyConst):
            return lv.value
        if isinstance(lv, Value):
            d = lv.defn
            if d is not None and d.op is O.CONST:
                return d.attrs.get("value")
            return UNKNOWN
        if isinstance(lv, TupleLV):
            items = [self.static(i) for i in lv.items]
            return UNKNOWN if any(i is UNKNOWN for i in items) else tuple(items)
        return UNKNOWN

    def type_of(self, lv: Any) -> str:
        if isinstance(lv, Value):
            return lv.type
        if isinstance(lv, PyConst):
            c = lv.value
            return "pred" if isinstance(c, bool) else "s64" if isinstance(c, int) else "f64"
        return "s64"

    def cvt(self, v: Value, t: str, node, fn: str | None = None) -> Value:
        attrs = {"from_type": v.type}
        if fn:
            attrs["fn"] = fn
        return self.value(O.CVT, [v], t, attrs, node)

    def coerce(self, lv: Any, t: str, node) -> Value:
        """``lv`` as a value of type ``t`` (implicit conversion: stores, atomics)."""
        if isinstance(lv, PyConst) and is_scalar(lv.value):
            c = lv.value
            if t == "pred":
                return self.const(bool(c), t, node)
            if is_float(t):
                return self.const(float(c), t, node)
            if isinstance(c, float):
                return self.const(int(c), t, node)
            return self.const(int(c), t, node)
        v = self.val(lv, node)
        if v.type == t or v.type == "ptr":
            return v
        c = self.static(v)
        if is_scalar(c) and not isinstance(c, complex) and v.type != "pred":
            return self.coerce(PyConst(c), t, node)
        if t == "pred":
            return self._nonzero(v, node)
        return self.cvt(v, t, node)

    def _nonzero(self, v: Value, node) -> Value:
        zero = self.const(0.0 if is_float(v.type) else 0, v.type, node)
        attrs = {"cmp": "ne"} if is_float(v.type) else {"cmp": "ne", "signed": not v.type.startswith("u")}
        return self.value(O.CMP, [v, zero], "pred", attrs, node)

    def to_pred(self, lv: Any, node) -> Any:
        """A ``pred`` Value for a condition, or a PyConst bool when known."""
        s = self.static(lv)
        if s is not UNKNOWN and is_scalar(s):
            return PyConst(bool(s))
        if isinstance(lv, PyConst) and lv.value is None:
            return PyConst(False)
        if isinstance(lv, TupleLV):
            return PyConst(bool(lv.items))
        v = self.val(lv, node)
        if v.type == "pred":
            return v
        return self._nonzero(v, node)

    def unify(self, a: Any, b: Any, node, bitwise: bool = False) -> tuple[Value, Value, str]:
        """Two operands in one type, with Python/Numba promotion."""
        if isinstance(a, PyConst) and not is_number(a.value):
            a = self.val(a, node)
        if isinstance(b, PyConst) and not is_number(b.value):
            b = self.val(b, node)
        if isinstance(a, PyConst) and isinstance(b, PyConst):
            ta, tb = self.type_of(a), self.type_of(b)
            t = join_types(ta, tb, bitwise)
            return self.val(a, node, t), self.val(b, node, t), t
        if isinstance(a, PyConst) or isinstance(b, PyConst):
            c, v, c_first = (a, b, True) if isinstance(a, PyConst) else (b, a, False)
            v = self.val(v, node)
            cv = c.value
            t = v.type
            if t == "ptr":
                t = "s64"
            if isinstance(cv, bool) and t == "pred" and bitwise:
                cval = self.const(cv, "pred", node)
            elif isinstance(cv, float):
                if not is_float(t):
                    t = "f64"
                    v = self.cvt(v, t, node)
                cval = self.val(c, node, t)
            else:  # int / bool
                if t == "pred" or (not is_float(t) and type_bits(t) < 64) or t.startswith("b"):
                    t = "s64"
                    v = self.cvt(v, t, node)
                cval = self.val(c, node, t)
            return (cval, v, t) if c_first else (v, cval, t)
        va, vb = self.val(a, node), self.val(b, node)
        if va.type == vb.type:
            return va, vb, va.type
        if va.type == "ptr" or vb.type == "ptr":
            return va, vb, "ptr"
        t = join_types(va.type, vb.type, bitwise)
        if va.type != t:
            va = self.cvt(va, t, node)
        if vb.type != t:
            vb = self.cvt(vb, t, node)
        return va, vb, t
