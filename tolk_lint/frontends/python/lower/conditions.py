"""Conditions: the branch of an ``if``/``while`` test, ``a and b``,
``a or b`` and ``x if c else y``.

When every operand after the first is side-effect free (``is_pure``: no
loads, no calls beyond pure intrinsics), one AND/OR/SELECT of the
evaluated operands; otherwise short-circuit control flow with a variable
merged at the join, so a guarded load or barrier runs only where Python
runs it. ``and``/``or`` results are booleans (``pred``). In a
``# tolk: assume`` line (``no_cf``) there is never control flow.

Imports: `values`, `conversion`'s ``join_types``, `vocabulary`, `tolk_lint.ir`.
"""

from __future__ import annotations

import ast
from typing import Any

from tolk_lint.frontends.python import vocabulary as V
from tolk_lint.frontends.python.lower.conversion import join_types
from tolk_lint.frontends.python.lower.values import PyConst
from tolk_lint.ir.nodes import Block, Value
from tolk_lint.ir.opcodes import Opcode as O


class Conditions:
    """Mixin of `Lowerer`: branch conditions and the boolean expressions."""

    def is_pure(self, node: ast.AST) -> bool:
        """No side effects and no memory reads: safe to evaluate even where
        Python would not (the right operand of ``and``)."""
        for n in ast.walk(node):
            if isinstance(n, ast.Call):
                if not V.is_pure_call(self.static_qual(n.func)):
                    return False
            elif isinstance(n, ast.Subscript):
                v = n.value
                if not (isinstance(v, ast.Attribute) and v.attr == "shape"):
                    return False
            elif isinstance(n, (ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom, ast.Lambda, ast.ListComp,
                                ast.SetComp, ast.DictComp, ast.GeneratorExp)):  # fmt: skip
                return False
        return True

    def cond(self, node: ast.expr, t: Block, f: Block) -> None:
        b = self.b
        if (
            isinstance(node, ast.BoolOp)
            and not self.no_cf
            and not all(self.is_pure(v) for v in node.values[1:])
        ):
            is_and = isinstance(node.op, ast.And)
            for v in node.values[:-1]:
                nxt = b.block()
                if is_and:
                    self.cond(v, nxt, f)
                else:
                    self.cond(v, t, nxt)
                b.seal(nxt)
                b.position(nxt)
                if not nxt.preds:
                    return
            self.cond(node.values[-1], t, f)
            return
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            self.cond(node.operand, f, t)
            return
        c = self.to_pred(self.expr(node), node)
        if isinstance(c, PyConst):
            self.jump(t if c.value else f, node)
            return
        self.branch(c, t, f, node)

    def _combine(self, acc: Any, c: Any, is_or: bool, node) -> Any:
        if isinstance(c, PyConst):
            if bool(c.value) == is_or:
                return PyConst(is_or)
            return acc
        if isinstance(acc, PyConst):
            return c if bool(acc.value) != is_or else acc
        return self.value(O.OR if is_or else O.AND, [acc, c], "pred", None, node)

    def _e_BoolOp(self, node: ast.BoolOp) -> Any:
        is_or = isinstance(node.op, ast.Or)
        if self.no_cf or all(self.is_pure(v) for v in node.values[1:]):
            acc: Any = PyConst(not is_or)
            for v in node.values:
                c = self.to_pred(self.expr(v), v)
                acc = self._combine(acc, c, is_or, node)
                if isinstance(acc, PyConst) and bool(acc.value) == is_or:
                    return acc
            return acc
        b = self.b
        self.counter += 1
        var = f"$bool{self.counter}"
        join = b.block()
        for v in node.values[:-1]:
            c = self.to_pred(self.expr(v), v)
            if isinstance(c, PyConst):
                if bool(c.value) == is_or:
                    b.write(var, self.const(is_or, "pred", v))
                    self.jump(join, v)
                    b.seal(join)
                    b.position(join)
                    return b.read(var)
                continue
            b.write(var, c)
            nxt = b.block()
            if is_or:
                self.branch(c, join, nxt, v)
            else:
                self.branch(c, nxt, join, v)
            b.seal(nxt)
            b.position(nxt)
        last = node.values[-1]
        c = self.to_pred(self.expr(last), last)
        b.write(var, self.val(c, last))
        self.jump(join, last)
        b.seal(join)
        b.position(join)
        return b.read(var)

    def _e_IfExp(self, node: ast.IfExp) -> Any:
        c = self.to_pred(self.expr(node.test), node.test)
        if isinstance(c, PyConst):
            return self.expr(node.body if c.value else node.orelse)
        if self.no_cf or (self.is_pure(node.body) and self.is_pure(node.orelse)):
            a, b_ = self.expr(node.body), self.expr(node.orelse)
            if not isinstance(a, (Value, PyConst)) or not isinstance(b_, (Value, PyConst)):
                self.unsupported(node, "ifexp-object", None, "a conditional choosing between objects",
                                 "the first one is taken")  # fmt: skip
                return a
            va, vb, t = self.unify(a, b_, node)
            return self.value(O.SELECT, [c, va, vb], t, None, node)
        b = self.b
        self.counter += 1
        var = f"$ifexp{self.counter}"
        t_blk, f_blk, join = b.block(), b.block(), b.block()
        self.branch(c, t_blk, f_blk, node.test)
        arms = []
        for blk, arm in ((t_blk, node.body), (f_blk, node.orelse)):
            b.seal(blk)
            b.position(blk)
            lv = self.expr(arm)
            if not isinstance(lv, (Value, PyConst)):
                self.unsupported(arm, "ifexp-object", None, "a conditional choosing between objects",
                                 "its value is treated as varying and unknown")  # fmt: skip
                lv = self.val(lv, arm)
            arms.append((b.current, arm, lv))
        # one type for both arms, decided once both are known
        t = None
        for _, _, lv in arms:
            if isinstance(lv, Value):
                t = lv.type if t is None else join_types(t, lv.type, False)
        if t is None:
            t = join_types(self.type_of(arms[0][2]), self.type_of(arms[1][2]), False)
        for blk, arm, lv in arms:
            b.position(blk)
            b.write(var, self.coerce(lv, t, arm))
            self.jump(join, arm)
        b.seal(join)
        b.position(join)
        return b.read(var)
