"""The lowerer's state, instruction emission and TL002 reports.

`LowererCore` holds what one lowering carries (the kernel being built, its
builder, the symbolic bindings, the frames of inlined calls) and the
primitives every other part uses: ``emit``/``value``/``const`` (an
instruction with the span, text and inlining `Origin` of its syntax node),
``jump``/``branch``, ``unsupported``/``opaque`` (one TL002 per kind and
kernel; an OPAQUE value for what is not understood). The entry and body
blocks (``entry``, ``start``) are set by `kernel`'s ``run``.

Imports: `context`, `limits`, `ssa`, the finder's `FuncInfo`, `tolk_lint.ir`
and the diagnostics.
"""

from __future__ import annotations

import ast
from typing import Any

from tolk_lint.diagnostics import Diagnostic, Severity
from tolk_lint.frontends.python.finder import FuncInfo
from tolk_lint.frontends.python.lower.context import Frame, ModuleCtx
from tolk_lint.frontends.python.lower.limits import MAX_INLINED_NODES
from tolk_lint.frontends.python.lower.ssa import SsaBuilder
from tolk_lint.ir.nodes import Block, Instr, Kernel, Origin, Span, Value
from tolk_lint.ir.opcodes import Opcode as O

CONSERVATIVE = "analyses treat it conservatively"
VARYING = "its value is treated as varying and unknown"


def unsupported_message(what: str, reason: str, assumed: str) -> str:
    """The TL002 message: the construct, why it is not modelled, what is assumed."""
    why = f": {reason}" if reason else ""
    return f"`{what}` is not modelled{why}; {assumed}"


class LowererCore:
    """The state of one lowering and the primitives that emit into it."""

    def __init__(self, ctx: ModuleCtx, fi: FuncInfo, standalone_device: bool = False):
        self.ctx = ctx
        self.src = ctx.src
        self.fi = fi
        self.standalone = standalone_device
        host = fi.kind == "host"
        self.host = host
        span = ctx.src.def_span(fi.node)
        self.kernel = Kernel(
            name=fi.name,
            language="python",
            path=ctx.path,
            target="cpu" if host else ctx.target,
            host=host,
            span=span,
            is_entry=not standalone_device,
        )
        self.b = SsaBuilder(self.kernel)
        self.statics: dict[str, Any] = {}
        self.merged: dict[Any, list] = {}  # a variable's merged array (or its opaque) -> the arrays it may be
        self.frames: list[Frame] = []
        self.reported: set[str] = set()
        self.shape_params: dict[tuple[str, int], Value] = {}
        self.global_params: dict[str, Value] = {}
        self.deriving: set[tuple[int, str]] = set()  # closure variables being followed (`derived_value`)
        self.counter = 0
        self.name_hint: str | None = None
        self.unroll_nest = 1
        self.inline_budget = MAX_INLINED_NODES
        self.no_cf = False  # lower `and`/`or`/`if-else` without control flow (assumptions)
        self.span_override: Span | None = None
        self.text_override: str | None = None

    # -- diagnostics ---------------------------------------------------------------------------------

    tl002_message = staticmethod(unsupported_message)

    def _report(self, span: Span, kind: str, what: str, origin: Origin | None = None,
                message: str | None = None) -> None:  # fmt: skip
        if kind in self.reported:
            return
        self.reported.add(kind)
        d = Diagnostic(
            code="TL002",
            severity=Severity.WARNING,
            message=message or unsupported_message(what, "", CONSERVATIVE),
            span=span,
            kernel=self.kernel.name,
            origin=origin,
            name="unsupported-construct",
        )
        self.ctx.diagnostics.append(d)
        if self.standalone:
            self.ctx.from_functions.add(id(d))

    def unsupported(self, node: ast.AST, kind: str, what: str | None = None, reason: str = "",
                    assumed: str = CONSERVATIVE) -> None:  # fmt: skip
        """One TL002 per ``kind`` and kernel: the construct (``what``, else the
        node's text), why it is not modelled (``reason``), what is assumed."""
        span, text = self.loc(node)
        message = unsupported_message(what or text, reason, assumed)
        self._report(span, kind, what or text, self._origin(span, node), message)

    def merged_arrays(self, lv: Any) -> bool:
        """Is ``lv`` the opaque array of a variable holding different buffers
        (reported once, as such: its subscripts need no TL002 of their own)?"""
        d = lv.defn if isinstance(lv, Value) else None
        return d is not None and d.op is O.OPAQUE and bool(d.attrs.get("merged_arrays"))

    def opaque(
        self, node: ast.AST, kind: str, what: str | None = None, reason: str = "", args=(), type="s64",
        assumed: str = VARYING,
    ) -> Value:  # fmt: skip
        if not any(self.merged_arrays(a) for a in args):
            self.unsupported(node, kind, what, reason, assumed)
        text = self.loc(node)[1]
        vals = [a for a in args if isinstance(a, Value)]
        return self.emit(O.OPAQUE, vals, (type,), {"text": text, "reason": reason or kind}, node).result

    # -- emission ------------------------------------------------------------------------------------

    def loc(self, node: ast.AST | None) -> tuple[Span, str]:
        if self.span_override is not None:
            return self.span_override, self.text_override or ""
        if node is None:
            return self.kernel.span, ""
        f = self.frames[-1] if self.frames else None
        if f is not None and f.source is not None:  # a function of another file: at the call here
            return f.site, f.source.loc(node)[1]
        return self.src.loc(node)

    def _origin(self, span: Span, node: ast.AST | None = None) -> Origin | None:
        f = self.frames[-1] if self.frames else None
        if f is None or f.call_origin is None:
            return None
        return self.origin_at(span, node, f.call_origin)

    def origin_at(self, span: Span, node: ast.AST | None, inlined_at: Origin | None) -> Origin:
        """Where ``node`` (at ``span``) is: in the function's own file when it
        comes from another one (`siblings`)."""
        f = self.frames[-1] if self.frames else None
        if f is not None and f.source is not None and node is not None and self.span_override is None:
            span = f.source.span(node)
        return Origin(span.path, span.line, span.column, inlined_at=inlined_at)

    def emit(self, op: O, args, types=(), attrs=None, node=None, names=None, block=None) -> Instr:
        span, text = self.loc(node)
        return self.b.emit(op, args, types, attrs=attrs, span=span, origin=self._origin(span, node),
                           text=text, names=names, block=block)  # fmt: skip

    def value(self, op: O, args, type: str, attrs=None, node=None) -> Value:
        return self.emit(op, args, (type,), attrs, node).result

    def const(self, value: Any, type: str, node) -> Value:
        return self.value(O.CONST, [], type, {"value": value}, node)

    def jump(self, target: Block, node=None) -> None:
        span, text = self.loc(node)
        self.b.jump(target, span=span, origin=self._origin(span, node), text=text)

    def branch(self, c: Value, t: Block, f: Block, node=None) -> None:
        span, text = self.loc(node)
        self.b.branch(c, t, f, span=span, origin=self._origin(span, node), text=text)

    def dead(self) -> bool:
        cur = self.b.current
        return (
            cur is not None
            and not cur.preds
            and cur is not self.entry
            and cur is not getattr(self, "start", None)
        )

    @property
    def frame(self) -> Frame:
        return self.frames[-1]
