"""The statements other than loops: assignments (plain, annotated,
augmented, to tuples and array elements), ``if``, ``return``, ``raise``,
imports inside a kernel, and the ones with nothing to lower (``pass``,
``assert``: compiled out without ``debug=True``) or not understood
(``with``, ``try``, a nested ``def``: TL002, their bodies lowered).

``return`` ends the kernel (RET), or, in an inlined call, binds the call's
result variable and jumps to the code after the call.

Imports: `values`, `tolk_lint.ir`.
"""

from __future__ import annotations

import ast
from typing import Any

from tolk_lint import budget
from tolk_lint.frontends.python.lower.values import ArrayRef, GlobalRef, PyConst, QualRef, TupleLV
from tolk_lint.ir.nodes import Value
from tolk_lint.ir.opcodes import Opcode as O


class Statements:
    """Mixin of `Lowerer`: a statement list and every statement but the loops."""

    def suite(self, stmts: list[ast.stmt]) -> None:
        for st in stmts:
            budget.check("lowering `%s` (line %d)", self.kernel.name, st.lineno)
            if self.b.terminated() or self.dead():
                return
            m = getattr(self, "_s_" + type(st).__name__, None)
            if m is None:
                self.unsupported(
                    st, type(st).__name__, None, f"a `{type(st).__name__}` statement", "it is skipped"
                )
                continue
            m(st)

    def _s_Expr(self, st: ast.Expr) -> None:
        if isinstance(st.value, ast.Constant):
            return  # docstring / bare constant
        self.expr(st.value)

    def _s_Pass(self, st) -> None:
        pass

    def _s_Global(self, st) -> None:
        pass

    _s_Nonlocal = _s_Global
    _s_Delete = _s_Global

    def _s_Assert(self, st) -> None:
        pass  # compiled out without debug=True

    # -- assignments ---------------------------------------------------------------------------------

    def _s_Assign(self, st: ast.Assign) -> None:
        if len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            self.name_hint = st.targets[0].id
        try:
            lv = self.expr(st.value)
        finally:
            self.name_hint = None
        for t in st.targets:
            self.assign(t, lv, st)

    def _s_AnnAssign(self, st: ast.AnnAssign) -> None:
        if st.value is None:
            return
        if isinstance(st.target, ast.Name):
            self.name_hint = st.target.id
        try:
            lv = self.expr(st.value)
        finally:
            self.name_hint = None
        self.assign(st.target, lv, st)

    def _s_AugAssign(self, st: ast.AugAssign) -> None:
        t = st.target
        if isinstance(t, ast.Name):
            cur = self.name(t.id, t)
            new = self.binop(type(st.op), cur, self.expr(st.value), st)
            self.bind(self.frame.var(t.id), new, st)
            return
        if (
            isinstance(t, ast.Subscript)
            and isinstance(t.slice, ast.Constant)
            and isinstance(t.slice.value, str)
        ):
            self.field_store(t.value, t.slice.value, self.expr(st.value), t, st, type(st.op))
            return
        if isinstance(t, ast.Attribute):
            self.field_store(t.value, t.attr, self.expr(st.value), t, st, type(st.op))
            return
        if isinstance(t, ast.Subscript):
            base = self.expr(t.value)
            if isinstance(base, GlobalRef):
                base = self.global_array(base, t)
            if not isinstance(base, ArrayRef):
                self.opaque(
                    st, "subscript-store", None, "store into something that is not an array", args=[base]
                )
                return
            acc = self.access(base, t.slice, t)
            if acc is None or isinstance(acc, ArrayRef):
                self.opaque(st, "view-store", None, "augmented store into an array view")
                return
            arr, addr, index = acc
            attrs = {"space": arr.space, "dtype": arr.dtype, "buffer": arr.name, "index": index}
            old = self.value(O.LOAD, [addr], arr.dtype, dict(attrs), t)
            new = self.binop(type(st.op), old, self.expr(st.value), st)
            self.emit(O.STORE, [addr, self.coerce(new, arr.dtype, st)], (), attrs, st)
            if arr.param is not None:
                arr.param.written = True
            return
        self.opaque(st, "attribute-store", None, "an augmented store to this target",
                    assumed="it is treated as a write to unknown memory")  # fmt: skip

    def assign(self, target: ast.expr, lv: Any, st: ast.AST) -> None:
        if isinstance(target, ast.Name):
            f = self.frame
            self.bind(f.var(target.id), lv, st, single=target.id not in f.fi.multi)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in target.elts):
                self.unsupported(
                    target,
                    "starred",
                    None,
                    "a starred assignment",
                    "the values are treated as varying and unknown",
                )
                for e in target.elts:
                    inner = e.value if isinstance(e, ast.Starred) else e
                    self.assign(inner, self.opaque(st, "starred", None, "starred assignment"), st)
                return
            items = self.items(lv, len(target.elts), st)
            for t, item in zip(target.elts, items):
                self.assign(t, item, st)
        elif (
            isinstance(target, ast.Subscript)
            and isinstance(target.slice, ast.Constant)
            and isinstance(target.slice.value, str)
        ):
            self.field_store(target.value, target.slice.value, lv, target, st)
        elif isinstance(target, ast.Subscript):
            base = self.expr(target.value)
            if isinstance(base, GlobalRef):
                base = self.global_array(base, target)
            if not isinstance(base, ArrayRef):
                self.opaque(
                    st, "subscript-store", None, "store into something that is not an array", args=[lv, base]
                )
                return
            self.store(base, target.slice, lv, target, st)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, lv, st)
        elif isinstance(target, ast.Attribute):
            self.field_store(target.value, target.attr, lv, target, st)
        else:
            args = [lv] if isinstance(lv, Value) else []
            why, assumed = "a store to this target", "it is treated as a write to unknown memory"
            self.opaque(st, "attribute-store", None, why, args=args, assumed=assumed)

    def flat_items(self, lv: Any) -> list | None:
        """The scalars of a (nested) tuple, or None for anything else."""
        if isinstance(lv, PyConst) and isinstance(lv.value, tuple):
            lv = TupleLV([PyConst(x) for x in lv.value])
        if not isinstance(lv, TupleLV):
            return None
        out: list = []
        for x in lv.items:
            sub = self.flat_items(x)
            out.extend(sub if sub is not None else [x])
        return out

    def items(self, lv: Any, n: int, node) -> list:
        if isinstance(lv, TupleLV) and len(lv.items) == n:
            return list(lv.items)
        if isinstance(lv, PyConst) and isinstance(lv.value, tuple) and len(lv.value) == n:
            return [PyConst(x) for x in lv.value]
        return [self.opaque(node, "unpack", None, "unpacking a value that is not a tuple") for _ in range(n)]

    # -- control flow --------------------------------------------------------------------------------

    def _s_If(self, st: ast.If) -> None:
        b = self.b
        then = b.block()
        els = b.block() if st.orelse else None
        join = b.block()
        self.cond(st.test, then, els or join)
        b.seal(then)
        if then.preds:
            b.position(then)
            self.suite(st.body)
            if not b.terminated() and not self.dead():
                self.jump(join, st)
        if els is not None:
            b.seal(els)
            if els.preds:
                b.position(els)
                self.suite(st.orelse)
                if not b.terminated() and not self.dead():
                    self.jump(join, st)
        b.seal(join)
        b.position(join)

    def _s_Return(self, st: ast.Return) -> None:
        f = self.frame
        lv = self.expr(st.value) if st.value is not None else None
        if lv is not None and isinstance(lv, PyConst) and lv.value is None:
            lv = None
        if f.cont is None:  # the kernel itself
            args = []
            if lv is not None:
                f.has_value = True
                items = self.flat_items(lv)
                args = [self.val(x, st) for x in items] if items is not None else [self.val(lv, st)]
            span, text = self.loc(st)
            self.b.ret(args, span=span, origin=self._origin(span), text=text)
            return
        if lv is not None:
            f.has_value = True
            self.bind(f.ret_var, lv, st)
        self.jump(f.cont, st)

    def _s_Raise(self, st) -> None:
        span, text = self.loc(st)
        self.b.exit(span=span, origin=self._origin(span), text=text)

    # -- imports, definitions and what is not understood ---------------------------------------------

    def _s_Import(self, st: ast.Import) -> None:
        f = self.frame
        for a in st.names:
            if a.asname:
                self.statics[f.var(a.asname)] = QualRef(a.name)
            else:
                top = a.name.split(".", 1)[0]
                self.statics[f.var(top)] = QualRef(top)

    def _s_ImportFrom(self, st: ast.ImportFrom) -> None:
        f = self.frame
        for a in st.names:
            if a.name == "*" or st.level:
                self.unsupported(
                    st, "import", None, "a relative or star import", "the names it brings in are unknown"
                )
                continue
            q = f"{st.module}.{a.name}" if st.module else a.name
            self.statics[f.var(a.asname or a.name)] = self.qual_value(q, st)

    def _s_FunctionDef(self, st) -> None:
        self.unsupported(st, "nested-def", f"def {st.name}", "a function defined inside a kernel",
                         "its calls are treated as varying and unknown")  # fmt: skip
        self.statics[self.frame.var(st.name)] = GlobalRef(st.name, "nested function")

    _s_AsyncFunctionDef = _s_FunctionDef

    def _s_ClassDef(self, st) -> None:
        self.unsupported(st, "class", f"class {st.name}", "a class defined inside a kernel", "it is skipped")

    def _s_With(self, st: ast.With) -> None:
        self.unsupported(
            st, "with", "with", "a with statement", "its body is lowered as if the `with` were not there"
        )
        for item in st.items:
            lv = self.expr(item.context_expr)
            if item.optional_vars is not None:
                self.assign(
                    item.optional_vars,
                    self.opaque(item.context_expr, "with", "with", "with target", args=[lv]),
                    st,
                )
        self.suite(st.body)

    def _s_Try(self, st: ast.Try) -> None:
        self.unsupported(
            st,
            "try",
            "try",
            "exception handling",
            "its body is lowered as if it cannot raise; the handlers are skipped",
        )
        self.suite(st.body)
        if st.orelse and not self.b.terminated() and not self.dead():
            self.suite(st.orelse)
        if st.finalbody and not self.b.terminated() and not self.dead():
            self.suite(st.finalbody)

    _s_TryStar = _s_Try
