"""The expression dispatch (``expr``: one ``_e_<node>`` method per `ast`
node type, in whichever mixin owns it) and the expressions that belong to
no family: constants, names, attributes (an array's ``shape``/``size``/
``ndim``/``itemsize``), tuples and lists, ``:=``, and the ones not
understood (lambdas, comprehensions: TL002).

Imports: `values`, `tolk_lint.ir`.
"""

from __future__ import annotations

import ast
from typing import Any

from tolk_lint.frontends.python.consts import is_scalar
from tolk_lint.frontends.python.lower.values import (
    ArrayRef,
    GlobalRef,
    MethodRef,
    ObjRef,
    PyConst,
    QualRef,
    TupleLV,
)
from tolk_lint.ir.nodes import Value


class Expressions:
    """Mixin of `Lowerer`: the expression dispatch and the plain expressions."""

    def expr(self, node: ast.AST) -> Any:
        m = getattr(self, "_e_" + type(node).__name__, None)
        if m is None:
            return self.opaque(node, type(node).__name__, None, "expression")
        return m(node)

    def _e_Constant(self, node: ast.Constant) -> Any:
        return PyConst(node.value)

    def _e_Name(self, node: ast.Name) -> Any:
        return self.name(node.id, node)

    def _e_Attribute(self, node: ast.Attribute) -> Any:
        base = self.expr(node.value)
        return self.attr(base, node.attr, node)

    def attr(self, base: Any, attr: str, node) -> Any:
        if isinstance(base, QualRef):
            return self.qual_value(f"{base.qual}.{attr}", node)
        if isinstance(base, GlobalRef):
            if attr == "shape":
                return self.attr(self.global_array(base, node), attr, node)
            self.unsupported(base.node or node, f"global:{base.name}", base.name, base.why)
            return self.opaque(node, f"global:{base.name}", None, base.why)
        if isinstance(base, ArrayRef):
            if attr == "shape":
                return TupleLV([self.extent(base, d, node) for d in range(len(base.prefix), base.ndim)])
            if attr == "size":
                n: Any = PyConst(1)
                for d in range(len(base.prefix), base.ndim):
                    n = self.binop(ast.Mult, n, self.extent(base, d, node), node)
                return n
            if attr == "ndim":
                return PyConst(base.ndim - len(base.prefix))
            if attr == "itemsize":
                return PyConst(base.itemsize)
            return MethodRef(base, attr)
        if isinstance(base, Value) and attr not in ("real", "imag", "conjugate") and self.is_element(base):
            return self.field_load(base, attr, node)  # a record's field
        if attr in ("real", "imag") and (
            isinstance(base, Value) or (isinstance(base, PyConst) and is_scalar(base.value))
        ):
            return self.complex_part(base, attr, node)
        if isinstance(base, (ObjRef, Value, PyConst, TupleLV)):
            return MethodRef(base, attr)
        return self.opaque(node, "attribute", None, "attribute of an unknown object")

    def _e_Tuple(self, node: ast.Tuple) -> Any:
        items = [self.expr(e) for e in node.elts]
        if all(isinstance(i, PyConst) for i in items):
            return PyConst(tuple(i.value for i in items))
        return TupleLV(items)

    _e_List = _e_Tuple

    def _e_NamedExpr(self, node: ast.NamedExpr) -> Any:
        lv = self.expr(node.value)
        self.bind(self.frame.var(node.target.id), lv, node)
        return lv

    def _e_Slice(self, node) -> Any:
        return self.opaque(node, "slice", None, "a slice outside an index")

    # -- not understood ------------------------------------------------------------------------------

    def _e_Lambda(self, node) -> Any:
        return self.opaque(node, "lambda", "lambda", "a lambda")

    def _e_ListComp(self, node) -> Any:
        return self.opaque(node, "comprehension", None, "a comprehension")

    _e_SetComp = _e_DictComp = _e_GeneratorExp = _e_ListComp

    def _e_JoinedStr(self, node) -> Any:
        return PyConst("")

    def _e_Starred(self, node) -> Any:
        return self.opaque(node, "starred", None, "a starred expression")
