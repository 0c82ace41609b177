"""Arithmetic, unary operators and comparisons.

Constant operands fold with Python's semantics (`consts`), tuples
concatenate and repeat (up to ``MAX_FOLDED_TUPLE`` items); otherwise the
operands meet in one type (`conversion`) and one instruction is emitted:
``/`` of integers is a float division, ``//`` and ``%`` are the ``floor``
forms, ``**`` a ``PURE pow``. A chained comparison is the AND of its links;
``x in (a, b)`` the OR of equalities.

Imports: `limits`, `values`, `consts`, `tolk_lint.ir`.
"""

from __future__ import annotations

import ast
from typing import Any

from tolk_lint.frontends.python.consts import UNKNOWN, fold_binop, fold_compare, fold_unary, is_scalar
from tolk_lint.frontends.python.lower.limits import MAX_FOLDED_TUPLE
from tolk_lint.frontends.python.lower.values import PyConst, TupleLV
from tolk_lint.ir.nodes import Value, is_float
from tolk_lint.ir.opcodes import Opcode as O

_BINOP_IR = {
    ast.Add: O.ADD,
    ast.Sub: O.SUB,
    ast.Mult: O.MUL,
    ast.Div: O.DIV,
    ast.FloorDiv: O.DIV,
    ast.Mod: O.REM,
    ast.LShift: O.SHL,
    ast.RShift: O.SHR,
    ast.BitAnd: O.AND,
    ast.BitOr: O.OR,
    ast.BitXor: O.XOR,
}
_CMP_NAMES = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}


# a comparison read the other way round (``C > p`` is ``p < C``)
_SWAPPED = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}


class Operators:
    """Mixin of `Lowerer`: binary and unary operators, comparisons."""

    def _e_BinOp(self, node: ast.BinOp) -> Any:
        return self.binop(type(node.op), self.expr(node.left), self.expr(node.right), node)

    def binop(self, op: type, a: Any, b: Any, node) -> Any:
        a, b = self._py_int(a), self._py_int(b)
        if isinstance(a, PyConst) and isinstance(b, PyConst):
            r = fold_binop(op, a.value, b.value)
            if r is not UNKNOWN:
                return PyConst(r)
            if op is ast.Add and isinstance(a.value, tuple) and isinstance(b.value, tuple):
                return PyConst(a.value + b.value)
            if (
                op is ast.Mult
                and isinstance(a.value, tuple)
                and isinstance(b.value, int)
                and len(a.value) * b.value <= MAX_FOLDED_TUPLE
            ):
                return PyConst(a.value * b.value)
        if (
            isinstance(a, (TupleLV, PyConst))
            and isinstance(b, (TupleLV, PyConst))
            and op in (ast.Add, ast.Mult)
        ):
            ia = (
                a.items
                if isinstance(a, TupleLV)
                else ([PyConst(x) for x in a.value] if isinstance(a.value, tuple) else None)
            )
            if op is ast.Add:
                ib = (
                    b.items
                    if isinstance(b, TupleLV)
                    else ([PyConst(x) for x in b.value] if isinstance(b.value, tuple) else None)
                )
                if ia is not None and ib is not None:
                    return TupleLV(ia + ib)
            elif (
                ia is not None
                and isinstance(b, PyConst)
                and isinstance(b.value, int)
                and len(ia) * b.value <= MAX_FOLDED_TUPLE
            ):
                return TupleLV(ia * b.value)
        if op is ast.MatMult:
            return self.opaque(node, "matmul", None, "the @ operator", args=[a, b])
        bitwise = op in (ast.BitAnd, ast.BitOr, ast.BitXor)
        va, vb, t = self.unify(a, b, node, bitwise)
        if t == "pred" and not bitwise:
            va, vb, t = self.cvt(va, "s64", node), self.cvt(vb, "s64", node), "s64"
        if op is ast.Pow:
            return self.value(O.PURE, [va, vb], t, {"fn": "pow"}, node)
        if op is ast.Div and not is_float(t):
            va, vb, t = self.cvt(va, "f64", node), self.cvt(vb, "f64", node), "f64"
        attrs = {"floor": True} if op in (ast.FloorDiv, ast.Mod) else None
        return self.value(_BINOP_IR[op], [va, vb], t, attrs, node)

    def _py_int(self, lv: Any) -> Any:
        """A CONST s64 value (a Python int) as a foldable PyConst."""
        if isinstance(lv, Value) and lv.type == "s64":
            c = self.static(lv)
            if isinstance(c, int) and not isinstance(c, bool):
                return PyConst(c)
        return lv

    def _e_UnaryOp(self, node: ast.UnaryOp) -> Any:
        a = self.expr(node.operand)
        if isinstance(a, PyConst):
            r = fold_unary(node.op, a.value)
            if r is not UNKNOWN:
                return PyConst(r)
        if isinstance(node.op, ast.Not):
            c = self.to_pred(a, node)
            if isinstance(c, PyConst):
                return PyConst(not c.value)
            return self.value(O.NOT, [c], "pred", None, node)
        v = self.val(a, node)
        if isinstance(node.op, ast.UAdd):
            return v
        if v.type == "pred":
            v = self.cvt(v, "s64", node)
        if isinstance(node.op, ast.USub):
            return self.value(O.NEG, [v], v.type, None, node)
        return self.value(O.NOT, [v], v.type, None, node)

    def _e_Compare(self, node: ast.Compare) -> Any:
        operands = [self.expr(node.left)]
        for c in node.comparators:
            operands.append(self.expr(c))
        consts = [self.static(o) for o in operands]
        if all(is_scalar(c) for c in consts):
            r = fold_compare(node.ops, consts)
            if r is not UNKNOWN:
                return PyConst(r)
        result: Any = None
        for op, a, b in zip(node.ops, operands, operands[1:]):
            c = self.compare(op, a, b, node)
            if result is None:
                result = c
            elif isinstance(c, PyConst):
                if not c.value:
                    return PyConst(False)
            elif isinstance(result, PyConst):
                result = c if result.value else result
            else:
                result = self.value(O.AND, [result, c], "pred", None, node)
        return result

    def _power_compare(self, op: ast.cmpop, a: Any, bound: Any, node) -> Any:
        """``base**x < C`` (a constant integer ``base >= 2``, an integer ``x``,
        a constant ``C >= 1``; also ``<=``, ``>``, ``>=``): the same test on
        the exponent, ``x < m`` with ``m`` the least with ``base**m >= C``, so
        that ``while 2**x < n: ... x += 1`` has an exit on its induction
        variable (the PURE ``pow`` says nothing of its trips: any trip, and a
        ``j = 2**x`` of any sign, would be possible). Exact for a negative
        exponent (Numba's integer power is 0 there) and up to where
        ``base**x`` leaves int64; past that (Numba wraps it) it is not
        modelled. None when it does not apply."""
        d = a.defn if isinstance(a, Value) else None
        if d is None or d.op is not O.PURE or d.attrs.get("fn") != "pow" or is_float(a.type):
            return None
        base = self.static(d.args[0])
        if not isinstance(base, int) or isinstance(base, bool) or base < 2:
            return None
        if not isinstance(bound, int) or isinstance(bound, bool) or not 1 <= bound < 1 << 63:
            return None
        x = d.args[1]
        if is_float(x.type) or x.type in ("pred", "ptr"):
            return None
        if isinstance(op, (ast.LtE, ast.Gt)):
            bound += 1  # p <= C is p < C + 1; p > C is p >= C + 1
        m = 0
        while base**m < bound:
            m += 1
        below = isinstance(op, (ast.Lt, ast.LtE))
        return self.compare(ast.Lt() if below else ast.GtE(), x, PyConst(m), node)

    def compare(self, op: ast.cmpop, a: Any, b: Any, node) -> Any:
        name = _CMP_NAMES.get(type(op))
        if name is None:
            if isinstance(op, (ast.In, ast.NotIn)):
                items = (
                    b.items
                    if isinstance(b, TupleLV)
                    else [PyConst(x) for x in b.value]
                    if isinstance(b, PyConst) and isinstance(b.value, tuple)
                    else None
                )
                if items is not None:
                    eq = ast.Eq() if isinstance(op, ast.In) else ast.NotEq()
                    out: Any = PyConst(not isinstance(op, ast.In))
                    for it in items:
                        c = self.compare(eq, a, it, node)
                        out = self._combine(out, c, isinstance(op, ast.In), node)
                    return out
            if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(b, PyConst) and b.value is None:
                same = isinstance(a, PyConst) and a.value is None
                return PyConst(same if isinstance(op, ast.Is) else not same)
            return self.opaque(
                node,
                f"cmp:{type(op).__name__}",
                None,
                "a comparison the front end does not model",
                args=[a, b],
                type="pred",
            )
        sa, sb = self.static(a), self.static(b)
        if is_scalar(sa) and is_scalar(sb):
            r = fold_compare([op], [sa, sb])
            if r is not UNKNOWN:
                return PyConst(r)
        on_exponent = self._power_compare(op, a, sb, node)
        if on_exponent is None and type(op) in _SWAPPED:
            on_exponent = self._power_compare(_SWAPPED[type(op)](), b, sa, node)
        if on_exponent is not None:
            return on_exponent
        va, vb, t = self.unify(a, b, node)
        attrs: dict[str, Any] = {"cmp": name}
        if not is_float(t):
            attrs["signed"] = not t.startswith("u")
        return self.value(O.CMP, [va, vb], "pred", attrs, node)
