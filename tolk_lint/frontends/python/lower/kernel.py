"""One kernel from its ``def``: the entry block with the parameters, the
launch comment, the ``# tolk: assume`` lines, then the body.

An array parameter is an `ArrayRef` over its ``PARAM``; a scalar one a
variable. A device function lowered on its own (``Module.functions``) has
its PARAMs marked ``varying``.

Imports: `context`, `ssa`, `values`, the finder's `FuncInfo`, `tolk_lint.ir`.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from tolk_lint.frontends.python.finder import FuncInfo
from tolk_lint.frontends.python.lower.context import Frame
from tolk_lint.frontends.python.lower.ssa import fix_index_attrs
from tolk_lint.frontends.python.lower.values import ArrayRef
from tolk_lint.ir.nodes import Kernel, LaunchBounds, Param, Span, impossible_block
from tolk_lint.ir.opcodes import Opcode as O
from tolk_lint.launch.comments import block_in, comment_shape

_ASSUME = re.compile(r"#\s*tolk:\s*assume\s+(.+?)\s*$")


class KernelLowering:
    """Mixin of `Lowerer`: the entry point, `run`."""

    def run(self) -> Kernel:
        k, b, fi = self.kernel, self.b, self.fi
        if not self.standalone and not self.host:
            k.launch = self._launch_comment(fi)
        entry = b.block("entry", span=k.span)
        b.seal(entry)
        b.position(entry)
        self.entry = entry
        frame = Frame(fi, "", None)
        self.frames.append(frame)
        self._params(frame)
        self._assumptions()
        start = b.block("body")
        b.add_edge(entry, start)
        b.seal(start)
        b.position(start)
        self.start = start
        self.suite(fi.node.body)
        if not b.terminated() and not self.dead():
            b.ret(span=self._end_span(fi), text="return")
        b.emit(O.JUMP, [], attrs={"target": start}, span=k.span, block=entry, text="")
        for blk in k.blocks:
            if blk.preds and blk.terminator is None and blk is not entry:
                b.emit(O.RET, [], span=self._end_span(fi), block=blk, text="return")
        b.finish()
        fix_index_attrs(k)
        if self.standalone and frame.has_value:
            rets = [i for i in k.instrs() if i.op is O.RET and i.args]
            t = fi.ret or (rets[0].args[0].type if rets else "s64")
            k.returns = [Param("return", t)]
        return k

    def _end_span(self, fi: FuncInfo) -> Span:
        last = fi.node.body[-1] if fi.node.body else fi.node
        return self.src.span(last)

    def _launch_comment(self, fi: FuncInfo) -> LaunchBounds:
        """The ``tolk: launch`` comment on the comment lines right above the
        decorators, or between them and the ``def``: the kernel's block
        until the engine's ``prepare`` weighs it against the call sites
        (`tolk_lint.launch`), which come first."""
        lines = self.src.lines
        cands = []
        ln = fi.first_line - 1
        while ln >= 1 and lines[ln - 1].strip().startswith("#"):
            cands.append(ln)
            ln -= 1
        for ln in range(fi.first_line, fi.node.lineno):  # comments between decorators and def
            if lines[ln - 1].strip().startswith("#"):
                cands.append(ln)
        for ln in cands:
            text = lines[ln - 1]
            block = block_in(text, "#")
            if block is None:
                continue
            why = impossible_block(block)
            if why is not None:  # not a shape any launch has: analyse for every shape
                span = Span(self.ctx.path, ln, 1, ln, len(text) + 1)
                message = (f"`{text.strip()}` is not a launch shape: {why}; "
                           "the kernel is analysed for any block shape")
                self._report(span, "launch-comment", text, self._origin(span), message)
                return LaunchBounds()
            shape = comment_shape(ln, block, self.ctx.path)
            if shape is not None:
                return LaunchBounds(block=block, source=shape.source, found=(shape,))
        return LaunchBounds()

    # -- parameters and assumptions ------------------------------------------------------------------

    def _params(self, frame: Frame) -> None:
        fi, k = self.fi, self.kernel
        if fi.has_varargs:
            self.unsupported(fi.node, "varargs", "*args/**kwargs", "variadic parameters",
                             "what they hold is unknown")  # fmt: skip
        for i, name in enumerate(fi.params):
            sig = fi.sig[i] if fi.sig and i < len(fi.sig) else None
            attrs: dict[str, Any] = {"name": name}
            if self.standalone:
                attrs["varying"] = True
            if name in fi.array_params or (sig is not None and sig[1] > 0):
                ndim = max(fi.array_params.get(name, 1), sig[1] if sig else 0, 1)
                # a signature's dtype wins; unknown, an array whose elements index
                # something holds integers (`index_arrays`), anything else is taken as f32
                dtype = (sig[0] if sig else None) or ("s64" if name in fi.index_params else "f32")
                p = Param(
                    name, dtype, "pointer", space="global", written=name in fi.written_params, ndim=ndim
                )
                v = self.b.emit(
                    O.PARAM, [], ("ptr",), attrs=attrs, span=k.span, text=name, names=(name,)
                ).result
                arr = ArrayRef(name, "global", dtype, v, (None,) * ndim, ndim, param=p)
                self.statics[frame.var(name)] = arr
            else:
                dtype = (sig[0] if sig else None) or "s64"
                p = Param(name, dtype, "scalar", written=False)
                v = self.b.emit(
                    O.PARAM, [], (dtype,), attrs=attrs, span=k.span, text=name, names=(name,)
                ).result
                self.b.write(frame.var(name), v)
            p.value = v
            k.params.append(p)

    def _assumptions(self) -> None:
        node = self.fi.node
        first, last = node.lineno, getattr(node, "end_lineno", node.lineno) or node.lineno
        for ln in range(first, last + 1):
            text = self.src.lines[ln - 1]
            if "tolk" not in text:
                continue
            m = _ASSUME.search(text)
            if not m:
                continue
            expr_text = m.group(1)
            col = len(text[: m.start(1)]) + 1
            span = Span(self.ctx.path, ln, col, ln, col + len(expr_text))
            try:
                tree = ast.parse(expr_text, mode="eval")
            except SyntaxError:
                what = f"tolk: assume {expr_text}"
                message = self.tl002_message(what, "an assumption that does not parse", "it is ignored")
                self._report(span, "assume", what, None, message)
                continue
            self.no_cf, self.span_override, self.text_override = True, span, expr_text
            try:
                lv = self.expr(tree.body)
                c = self.to_pred(lv, tree.body)
                self.kernel.assumptions.append(self.val(c, tree.body))
            finally:
                self.no_cf, self.span_override, self.text_override = False, None, None
