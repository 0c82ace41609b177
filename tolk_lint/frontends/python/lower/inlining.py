"""Calls of the file's device functions, inlined.

Calls to ``@cuda.jit(device=True)`` (and ``@njit``) functions of the file
are inlined, each inlined instruction carrying an `Origin` chain that ends
at the call in the kernel; past depth ``MAX_INLINE_DEPTH`` (8: recursion),
or once a kernel has inlined ``MAX_INLINED_NODES`` syntax nodes, a CALL
(TL002). Constant arguments stay constants, so ``fact(5)`` folds to 120.
The callee runs in a `Frame` of its own (its variables renamed
``name@prefix``); its ``return`` binds the frame's result variable. A
function imported from another file of the project (`siblings`) is placed
on the line of its call, its origins in its own file.

Imports: `context`, `limits`, `values`, `consts`, `tolk_lint.ir`.
"""

from __future__ import annotations

import ast
from typing import Any

from tolk_lint.frontends.python.consts import UNKNOWN, evaluate, is_scalar
from tolk_lint.frontends.python.finder import FuncInfo
from tolk_lint.frontends.python.lower.context import Frame
from tolk_lint.frontends.python.lower.limits import MAX_INLINE_DEPTH
from tolk_lint.frontends.python.lower.values import ArrayRef, PyConst
from tolk_lint.ir.opcodes import Opcode as O


class Inlining:
    """Mixin of `Lowerer`: inlining a call of a device function."""

    def inline(self, fi: FuncInfo, node: ast.Call) -> Any:
        size = self.ctx.size(fi.node)
        if len(self.frames) > MAX_INLINE_DEPTH or size > self.inline_budget:
            what = f"{fi.name}(...)"
            self.unsupported(node, f"recursion:{fi.name}", what, "recursion deeper than the inlining limit",
                             "its result is treated as varying and unknown")  # fmt: skip
            vals = []
            for a in node.args:
                lv = self.expr(a)
                vals.append(lv.base if isinstance(lv, ArrayRef) else self.val(lv, a))
            return self.value(O.CALL, vals, fi.ret or "s64", {"callee": fi.name}, node)
        bound: dict[str, Any] = {}
        for i, a in enumerate(node.args):
            if isinstance(a, ast.Starred) or i >= len(fi.params):
                return self.opaque_call(
                    node, f"call:{fi.name}", f"{fi.name}(...)", "a call whose arguments do not match"
                )
            bound[fi.params[i]] = self.expr(a)
        for kw in node.keywords:
            if kw.arg is None or kw.arg not in fi.params:
                return self.opaque_call(
                    node, f"call:{fi.name}", f"{fi.name}(...)", "a call whose arguments do not match"
                )
            bound[kw.arg] = self.expr(kw.value)
        for p in fi.params:
            if p not in bound:
                d = fi.defaults.get(p)
                if d is None:
                    return self.opaque_call(
                        node, f"call:{fi.name}", f"{fi.name}(...)", "a call with a missing argument"
                    )
                c = evaluate(d, fi.scope.const_lookup(fi.line), lambda n: fi.scope.qual(n, fi.line))
                bound[p] = (
                    PyConst(c)
                    if c is not UNKNOWN and (is_scalar(c) or c is None or isinstance(c, tuple))
                    else self.opaque(d, "default", None, "a default argument")
                )
        self.inline_budget -= size
        span = self.loc(node)[0]
        self.counter += 1
        frame = Frame(fi, f"{fi.name}{self.counter}", self.origin_at(span, node, self.frame.call_origin))
        if fi.source is not None and fi.source is not self.src:  # imported from another file
            frame.source, frame.site = fi.source, span
        frame.ret_var = f"$ret@{frame.prefix}"
        frame.cont = self.b.block()
        self.frames.append(frame)
        try:
            for p, lv in bound.items():
                self.bind(frame.var(p), lv, node, single=p not in fi.multi)
            self.suite(fi.node.body)
            if not self.b.terminated() and not self.dead():
                self.jump(frame.cont, fi.node.body[-1] if fi.node.body else node)
        finally:
            self.frames.pop()
        self.b.seal(frame.cont)
        self.b.position(frame.cont)
        if frame.has_value:
            return self.read(frame.ret_var, node)
        return PyConst(None)
