"""Loops: ``while``, ``for``, and ``break``/``continue`` (a jump to the
innermost loop's latch or exit, kept on the frame's ``loops`` stack).

``for v in range(...)`` is the canonical loop of `ir/cfg.py` (a hidden
induction variable, ``phi``, ``CMP lt`` (``gt`` for a negative constant
step), ``ADD phi, CONST step`` in a separate latch, which ``continue``
jumps to). A step that is not constant is assumed positive. Loops over
short constant tuples are unrolled (bounded: ``MAX_UNROLL*`` in `limits`);
longer tuples of numbers become a range loop reading a `const` buffer that
holds them; loops over an array, ``enumerate`` and ``zip`` are index loops
(`iteration`); loops over anything else have an OPAQUE trip test and
element (TL002).

Imports: `limits`, `values`, `conversion`'s ``is_number``, `vocabulary`,
`tolk_lint.ir`.
"""

from __future__ import annotations

import ast
from typing import Any

from tolk_lint.frontends.python import vocabulary as V
from tolk_lint.frontends.python.lower.conversion import is_number
from tolk_lint.frontends.python.lower.limits import MAX_UNROLL, MAX_UNROLL_NEST, MAX_UNROLL_NODES
from tolk_lint.frontends.python.lower.values import ArrayRef, GlobalRef, PyConst, TupleLV
from tolk_lint.ir.nodes import Value
from tolk_lint.ir.opcodes import Opcode as O


class Loops:
    """Mixin of `Lowerer`: loops and the jumps out of them."""

    def _s_While(self, st: ast.While) -> None:
        b = self.b
        header = b.block()
        self.jump(header, st.test)
        b.position(header)
        body = b.block()
        exit_ = b.block()
        els = b.block() if st.orelse else None
        self.cond(st.test, body, els or exit_)
        b.seal(body)
        if body.preds:
            b.position(body)
            self.frame.loops.append((header, exit_))
            self.suite(st.body)
            self.frame.loops.pop()
            if not b.terminated() and not self.dead():
                self.jump(header, st.test)
        b.seal(header)
        if els is not None:
            b.seal(els)
            if els.preds:
                b.position(els)
                self.suite(st.orelse)
                if not b.terminated() and not self.dead():
                    self.jump(exit_, st)
        b.seal(exit_)
        b.position(exit_)

    def _s_For(self, st: ast.For) -> None:
        it = st.iter
        if (
            isinstance(it, ast.Call)
            and not it.keywords
            and 1 <= len(it.args) <= 3
            and not any(isinstance(a, ast.Starred) for a in it.args)
            and self.static_qual(it.func) in V.RANGES
        ):
            self.range_loop(st, it)
            return
        q = self.static_qual(it.func) if isinstance(it, ast.Call) else None
        if q in (V.ENUMERATE, V.ZIP):
            self.iter_loop(st, q)
            return
        lv = self.expr(it)
        if isinstance(lv, (ArrayRef, GlobalRef)):
            self.iter_loop(st, "for", lv)
            return
        s = self.static(lv)
        if isinstance(lv, TupleLV) or isinstance(s, tuple):
            items = lv.items if isinstance(lv, TupleLV) else [PyConst(x) for x in s]
            size = sum(1 for _ in ast.walk(st)) * len(items)
            if (
                len(items) <= MAX_UNROLL
                and self.unroll_nest * len(items) <= MAX_UNROLL_NEST
                and size <= MAX_UNROLL_NODES
            ):
                self.unroll_nest *= max(1, len(items))
                try:
                    self.unrolled_loop(st, items)
                finally:
                    self.unroll_nest //= max(1, len(items))
                return
            if items and all(isinstance(x, PyConst) and is_number(x.value) for x in items):
                self.table_loop(st, [x.value for x in items])
                return
        self.opaque_loop(st, lv, "a loop over something that is not a range, an array or a tuple")

    def range_loop(self, st: ast.For, it: ast.expr, element: Any = None, bounds: tuple | None = None) -> None:
        """The canonical loop over ``range(*it.args)`` (or over ``bounds``:
        start, stop, step), its target bound to the induction variable, or
        to ``element(v)`` (a callable), or to the `const` table ``element``
        (table, target) read at ``v``."""
        b = self.b
        lvs = list(bounds) if bounds is not None else [self.expr(a) for a in it.args]
        if len(lvs) == 1:
            start, stop, step = PyConst(0), lvs[0], PyConst(1)
        elif len(lvs) == 2:
            start, stop, step = lvs[0], lvs[1], PyConst(1)
        else:
            start, stop, step = lvs
        step_c = self.static(step)
        negative = isinstance(step_c, (int, float)) and step_c < 0
        start_v = self._int_val(start, it)
        stop_v = self._int_val(stop, it)
        step_v = None if isinstance(step_c, int) else self._int_val(step, it)
        self.counter += 1
        ivar = f"$iv{self.counter}"
        b.write(ivar, start_v)
        header = b.block()
        self.jump(header, it)
        b.position(header)
        phi = b.read(ivar)
        if (
            element is None
            and isinstance(st.target, ast.Name)
            and phi.defn is not None
            and phi.defn.op is O.PHI
        ):
            shown = self.frame.var(st.target.id)  # dumps show the loop variable, not the hidden one
            fresh = b.new_value(phi.type, shown)
            phi.name, phi.source_name = fresh.name, shown
        cmp = "gt" if negative else "lt"
        c = self.value(O.CMP, [phi, stop_v], "pred", {"cmp": cmp, "signed": True}, it)
        body, latch, exit_ = b.block(), b.block(), b.block()
        els = b.block() if st.orelse else None
        self.branch(c, body, els or exit_, it)
        b.seal(body)
        b.position(body)
        if element is None:
            self.assign(st.target, phi, st)
        elif callable(element):
            self.assign(st.target, element(phi), st)
        else:
            table, target = element
            arr, addr, index = self.element(table, [phi], it)
            attrs = {"space": "const", "dtype": arr.dtype, "buffer": arr.name, "index": index}
            item = self.value(O.LOAD, [addr], arr.dtype, attrs, it)
            if arr.dtype == "u8":
                item = self._nonzero(item, it)
            self.assign(target, item, st)
        self.frame.loops.append((latch, exit_))
        self.suite(st.body)
        self.frame.loops.pop()
        if not b.terminated() and not self.dead():
            self.jump(latch, it)
        b.seal(latch)
        b.position(latch)
        if latch.preds:
            cur = b.read(ivar)
            if step_v is None:
                step_v = self.const(step_c, "s64", it)
            nxt = self.value(O.ADD, [cur, step_v], "s64", None, it)
            b.write(ivar, nxt)
            self.jump(header, it)
        b.seal(header)
        if els is not None:
            b.seal(els)
            b.position(els)
            self.suite(st.orelse)
            if not b.terminated() and not self.dead():
                self.jump(exit_, st)
        b.seal(exit_)
        b.position(exit_)

    def _int_val(self, lv: Any, node) -> Value:
        v = self.val(lv, node, "s64") if isinstance(lv, PyConst) else self.val(lv, node)
        if v.type != "s64" and v.type != "ptr":
            v = self.cvt(v, "s64", node)
        return v

    def unrolled_loop(self, st: ast.For, items: list) -> None:
        b = self.b
        exit_ = b.block()
        nxt = None
        for item in items:
            body = b.block()
            self.jump(body, st.iter)
            b.seal(body)
            b.position(body)
            nxt = b.block()
            self.assign(st.target, item, st)
            self.frame.loops.append((nxt, exit_))
            self.suite(st.body)
            self.frame.loops.pop()
            if not b.terminated() and not self.dead():
                self.jump(nxt, st.iter)
            b.seal(nxt)
            b.position(nxt)
            if not nxt.preds:
                break
        if nxt is None or nxt.preds:
            if st.orelse:
                self.suite(st.orelse)
            if not b.terminated() and not self.dead():
                self.jump(exit_, st)
        b.seal(exit_)
        b.position(exit_)

    def table_loop(self, st: ast.For, values: list) -> None:
        """``for v in (c0, c1, ...)`` too long to unroll: a range loop over the
        constants, read from a `const` buffer holding them."""
        t = (
            "f64"
            if any(isinstance(v, float) for v in values)
            else "pred"
            if all(isinstance(v, bool) for v in values)
            else "s64"
        )
        saved, self.name_hint = self.name_hint, "loop_constants"
        try:
            table = self.new_buffer("const", "u8" if t == "pred" else t, (len(values),), st.iter)
        finally:
            self.name_hint = saved
        self.kernel.buffers[table.name].init = list(values)
        self.counter += 1
        hidden = f"$item{self.counter}"
        loop = ast.For(
            target=ast.Name(hidden, ast.Store()),
            iter=ast.Call(ast.Name("range", ast.Load()), [ast.Constant(len(values))], []),
            body=st.body,
            orelse=st.orelse,
        )
        ast.copy_location(loop, st)
        for n in (loop.target, loop.iter, loop.iter.func, loop.iter.args[0]):
            ast.copy_location(n, st.iter)
        self.range_loop(loop, loop.iter, element=(table, st.target))

    def opaque_loop(self, st: ast.For, lv: Any, why: str) -> None:
        b = self.b
        what = f"for ... in {self.loc(st.iter)[1]}"
        self.unsupported(
            st.iter,
            "iteration",
            what,
            why,
            "its trip count and its elements are treated as varying and unknown",
        )
        it_v = [lv] if isinstance(lv, Value) else [lv.base] if isinstance(lv, ArrayRef) else []
        header = b.block()
        self.jump(header, st.iter)
        b.position(header)
        c = self.value(O.OPAQUE, it_v, "pred", {"text": self.loc(st.iter)[1], "reason": "loop test"}, st.iter)
        body, exit_ = b.block(), b.block()
        els = b.block() if st.orelse else None
        self.branch(c, body, els or exit_, st.iter)
        b.seal(body)
        b.position(body)
        t = lv.dtype if isinstance(lv, ArrayRef) else "s64"
        elem = self.value(
            O.OPAQUE, it_v, t, {"text": self.loc(st.iter)[1], "reason": "loop element"}, st.iter
        )
        if isinstance(st.target, ast.Name):
            self.assign(st.target, elem, st)
        else:
            for n in ast.walk(st.target):
                if isinstance(n, ast.Name):
                    self.bind(
                        self.frame.var(n.id),
                        self.value(O.OPAQUE, it_v, "s64", {"text": n.id, "reason": "loop element"}, n),
                        st,
                    )
        self.frame.loops.append((header, exit_))
        self.suite(st.body)
        self.frame.loops.pop()
        if not b.terminated() and not self.dead():
            self.jump(header, st.iter)
        b.seal(header)
        if els is not None:
            b.seal(els)
            b.position(els)
            self.suite(st.orelse)
            if not b.terminated() and not self.dead():
                self.jump(exit_, st)
        b.seal(exit_)
        b.position(exit_)

    def _s_Break(self, st) -> None:
        if not self.frame.loops:
            self.unsupported(st, "break", None, "`break` outside a loop", "it is skipped")
            return
        self.jump(self.frame.loops[-1][1], st)

    def _s_Continue(self, st) -> None:
        if not self.frame.loops:
            self.unsupported(st, "continue", None, "`continue` outside a loop", "it is skipped")
            return
        self.jump(self.frame.loops[-1][0], st)
