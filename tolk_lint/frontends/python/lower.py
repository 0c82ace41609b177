"""Lowering one Python kernel (its statements and expressions) to the IR.

The walk is over the stdlib `ast` tree; SSA form comes from `ir.Builder`
(variables are written and read by name, blocks sealed as soon as their
predecessors are known: a loop header after its back edge).

What an expression lowers to (``LV``) is either an SSA `Value`, or a
compile-time thing the front end keeps symbolic: a Python constant
(`PyConst`, folded with Python's semantics and materialised as a CONST when
it reaches an instruction), a tuple (`TupleLV`), an array (`ArrayRef`: a
parameter or a shared/local/const buffer, or a view of one), a qualified
name (`QualRef`: ``numba.cuda``, ``math.sqrt``), a jitted function
(`FuncRef`), a cooperative group (`ObjRef`) or a method of one
(`MethodRef`), or a global of unknown value (`GlobalRef`). Symbolic
bindings of a variable live beside the SSA variables (``statics``); tuple
variables keep one SSA variable per element.

Decisions worth knowing:

- ``a and b`` / ``a or b`` / ``x if c else y``: when every operand after the
  first is side-effect free (no loads, no calls beyond pure intrinsics), one
  AND/OR/SELECT of the evaluated operands; otherwise short-circuit control
  flow with a variable merged at the join, so a guarded load or barrier runs
  only where Python runs it. ``and``/``or`` results are booleans (``pred``).
- Python ints are ``s64``, floats ``f64``, booleans ``pred``. A Python
  constant meeting a typed value takes that value's float type
  (``float32(0.5) * s[t]`` stays ``f32``); an integer narrower than 64 bits
  meeting a Python int is widened (``CVT`` to ``s64``), as Numba does.
  Explicit conversions (``float(q)``, ``np.float32(q)``, ``int32(x)``) are
  always a ``CVT`` (attrs ``fn``), even between equal types, so decodes stay
  visible.
- ``for v in range(...)``: the canonical loop of `ir/cfg.py` (a hidden
  induction variable, ``phi``, ``CMP lt`` (``gt`` for a negative constant
  step), ``ADD phi, CONST step`` in a separate latch, which ``continue``
  jumps to). A step that is not constant is assumed positive. Loops over
  short constant tuples are unrolled (bounded: ``MAX_UNROLL*``); longer
  tuples of numbers become a range loop reading a `const` buffer that holds
  them; loops over anything else have an OPAQUE trip test and element
  (TL002).
- Array accesses compute a byte address: ``ADDR(buf)`` (or the array
  parameter's ``PARAM``) ``+ row-major index * itemsize``; the extents of an
  array parameter are ``PARAM "a.shape[d]"`` values (uniform), emitted once
  per kernel in the entry block.
- Calls to ``@cuda.jit(device=True)`` (and ``@njit``) functions of the file
  are inlined, each inlined instruction carrying an `Origin` chain that ends
  at the call in the kernel; past depth 8 (recursion), or once a kernel has
  inlined ``MAX_INLINED_NODES`` syntax nodes, a CALL (TL002). Constant
  arguments stay constants, so ``fact(5)`` folds to 120.
- A variable assigned once keeps a Python constant symbolic (``TILE = 16``
  in a kernel is a shape); one assigned again (or in a loop) holds CONSTs.
- A name the file gives no value for (a factory's parameter captured by a
  nested kernel, a module global that is not a constant) is a uniform
  ``PARAM`` (attrs ``global``: Numba freezes it when it compiles, so it is
  as uniform as a kernel argument and needs no TL002); subscripted, a
  ``const`` array. Calling such a name, or reading an attribute of it, is
  TL002; so is an undefined name. A device function lowered on its own (``Module.functions``)
  has its PARAMs marked ``varying``. Every ``shape=0`` shared array gets a
  Buffer of its own, but Numba places them all at one address: they alias.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from tolk_lint.diagnostics import Diagnostic, Severity
from tolk_lint.frontends.python import vocabulary as V
from tolk_lint.frontends.python.consts import UNKNOWN, fold_binop, fold_compare, fold_unary, is_scalar
from tolk_lint.frontends.python.finder import ExternInfo, FuncInfo, Scope, Source
from tolk_lint.ir.builder import Builder
from tolk_lint.ir.nodes import (
    Block,
    Buffer,
    Instr,
    Kernel,
    LaunchBounds,
    Origin,
    Param,
    Span,
    Value,
    is_float,
    type_bits,
)
from tolk_lint.ir.opcodes import Opcode as O

MAX_INLINE_DEPTH = 8
MAX_UNROLL = 16  # items of a constant-tuple loop that is unrolled
MAX_UNROLL_NEST = 64  # product of the unroll factors of nested unrolled loops
MAX_UNROLL_NODES = 4000  # syntax nodes an unrolling may copy
MAX_FOLDED_TUPLE = 1024
MAX_INLINED_NODES = 20_000  # syntax nodes one kernel may inline in all (bounds 3-way recursion)

# -- symbolic values -----------------------------------------------------------------


class PyConst:
    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __repr__(self) -> str:
        return f"PyConst({self.value!r})"


class QualRef:
    __slots__ = ("qual",)

    def __init__(self, qual: str):
        self.qual = qual


class TupleLV:
    __slots__ = ("items",)

    def __init__(self, items: list):
        self.items = items


class _TupleVar:
    """A tuple-valued variable: its elements are SSA variables ``name#i``."""

    __slots__ = ("n",)

    def __init__(self, n: int):
        self.n = n


class ArrayRef:
    """An array: a parameter, a buffer, or a view of one (fixed leading
    indices ``prefix``; ``offsets`` added to the indices of sliced dims)."""

    __slots__ = ("base", "dtype", "key", "name", "ndim", "offsets", "param", "prefix", "shape", "space")

    def __init__(self, name, space, dtype, base, shape, ndim, param=None, key=None):
        self.name = name
        self.space = space
        self.dtype = dtype
        self.base = base
        self.shape = tuple(shape)
        self.ndim = ndim
        self.prefix: tuple = ()
        self.offsets: dict[int, Value] = {}
        self.param = param
        self.key = key or name

    def view(self) -> ArrayRef:
        a = ArrayRef(
            self.name, self.space, self.dtype, self.base, self.shape, self.ndim, self.param, self.key
        )
        a.prefix = self.prefix
        a.offsets = dict(self.offsets)
        return a

    @property
    def itemsize(self) -> int:
        return max(1, type_bits(self.dtype) // 8)


class FuncRef:
    __slots__ = ("info",)

    def __init__(self, info):
        self.info = info


class ObjRef:
    __slots__ = ("kind",)

    def __init__(self, kind: str):
        self.kind = kind


class MethodRef:
    __slots__ = ("name", "obj")

    def __init__(self, obj, name: str):
        self.obj = obj
        self.name = name


class GlobalRef:
    """A global or closure variable whose value the file does not give."""

    __slots__ = ("name", "node", "why")

    def __init__(self, name: str, why: str, node: ast.AST | None = None):
        self.name = name
        self.why = why
        self.node = node  # where the name is read, for the TL002


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
_ASSUME = re.compile(r"#\s*tolk:\s*assume\s+(.+?)\s*$")
_LAUNCH = re.compile(
    r"#\s*(?:tolk:\s*launch:?|launch:)\s*block\s*=\s*\(?\s*(\d+)\s*(?:,\s*(\d+)\s*)?(?:,\s*(\d+)\s*)?,?\s*\)?"
)
_INT_TYPES = ("s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "b8", "b16", "b32", "b64")


class _Builder(Builder):
    """`ir.Builder` with one fix: a PHI placed in an unsealed block is
    recorded as that block's definition (Braun et al.'s ``writeVariable``),
    so a second path reaching the same unsealed loop header reuses it instead
    of placing a duplicate PHI for the same variable."""

    def _phi(self, var: str, block: Block) -> Instr:
        ins = super()._phi(var, block)
        self._defs[block][var] = ins.result
        return ins


def _fix_index_attrs(k: Kernel) -> None:
    """`Builder.finish` drops trivial PHIs and rewrites instruction operands,
    but not the Values held in ``attrs["index"]``: map those to what the
    dropped PHIs stood for (the same fixpoint as the builder's)."""
    live = {ins for ins in k.instrs()}

    def dropped(v: Value) -> bool:
        d = v.defn
        return d is not None and d.op is O.PHI and d not in live

    users = [ins for ins in live if isinstance(ins.attrs.get("index"), tuple)]
    todo = [x for ins in users for x in ins.attrs["index"] if isinstance(x, Value) and dropped(x)]
    if not todo:
        return
    phis: set[Value] = set()
    while todo:
        v = todo.pop()
        if v in phis:
            continue
        phis.add(v)
        todo.extend(a for a in v.defn.args if dropped(a))
    replace: dict[Value, Value] = {}

    def find(v: Value) -> Value:
        while v in replace:
            v = replace[v]
        return v

    changed = True
    while changed:
        changed = False
        for v in phis:
            if v in replace:
                continue
            ops = {find(a) for a in v.defn.args} - {v}
            if len(ops) == 1:
                replace[v] = ops.pop()
                changed = True
    for ins in users:
        ins.attrs["index"] = tuple(find(x) if isinstance(x, Value) else x for x in ins.attrs["index"])


class ModuleCtx:
    """What every kernel of one file shares: the source, the finder's tables
    and the diagnostics list."""

    def __init__(self, src: Source, finder, target: str = "sm_80"):
        self.src = src
        self.finder = finder
        self.path = src.path
        self.target = target
        self.diagnostics: list[Diagnostic] = []
        self.from_functions: set[int] = set()  # ids of diagnostics from a device function's own lowering
        self._sizes: dict[ast.AST, int] = {}

    def size(self, fn: ast.AST) -> int:
        """Syntax nodes in a function (cached)."""
        n = self._sizes.get(fn)
        if n is None:
            n = self._sizes[fn] = sum(1 for _ in ast.walk(fn))
        return n


class _Frame:
    """One function being lowered: the kernel itself, or an inlined call."""

    __slots__ = (
        "call_origin",
        "cont",
        "fi",
        "has_value",
        "line",
        "locals",
        "loops",
        "prefix",
        "ret_var",
        "scope",
    )

    def __init__(self, fi: FuncInfo, prefix: str, call_origin: Origin | None):
        self.fi = fi
        self.prefix = prefix
        self.scope: Scope = fi.scope
        self.line = fi.line
        self.call_origin = call_origin
        self.ret_var: str | None = None
        self.cont: Block | None = None
        self.loops: list[tuple[Block, Block]] = []  # (continue target, break target)
        self.has_value = False
        self.locals = fi.locals

    def var(self, name: str) -> str:
        return name if not self.prefix else f"{name}@{self.prefix}"


class Lowerer:
    def __init__(self, ctx: ModuleCtx, fi: FuncInfo, standalone_device: bool = False):
        self.ctx = ctx
        self.src = ctx.src
        self.fi = fi
        self.standalone = standalone_device
        host = fi.kind == "host"
        self.host = host
        span = self._def_span(fi)
        self.kernel = Kernel(
            name=fi.name,
            language="python",
            path=ctx.path,
            target="cpu" if host else ctx.target,
            host=host,
            span=span,
            is_entry=not standalone_device,
        )
        self.b = _Builder(self.kernel)
        self.statics: dict[str, Any] = {}
        self.frames: list[_Frame] = []
        self.reported: set[str] = set()
        self.shape_params: dict[tuple[str, int], Value] = {}
        self.global_params: dict[str, Value] = {}
        self.counter = 0
        self.name_hint: str | None = None
        self.unroll_nest = 1
        self.inline_budget = MAX_INLINED_NODES
        self.no_cf = False  # lower `and`/`or`/`if-else` without control flow (assumptions)
        self.span_override: Span | None = None
        self.text_override: str | None = None

    # -- entry points -------------------------------------------------------------------------

    def run(self) -> Kernel:
        k, b, fi = self.kernel, self.b, self.fi
        if not self.standalone and not self.host:
            k.launch = self._launch_comment(fi)
        entry = b.block("entry", span=k.span)
        b.seal(entry)
        b.position(entry)
        self.entry = entry
        frame = _Frame(fi, "", None)
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
        _fix_index_attrs(k)
        if self.standalone and frame.has_value:
            rets = [i for i in k.instrs() if i.op is O.RET and i.args]
            t = fi.ret or (rets[0].args[0].type if rets else "s64")
            k.returns = [Param("return", t)]
        return k

    def _def_span(self, fi: FuncInfo) -> Span:
        node = fi.node
        line = node.lineno
        text = self.src.line_text(line)
        col = self.src.col(line, node.col_offset)
        return Span(self.ctx.path, line, col, line, len(text.rstrip()) + 1)

    def _end_span(self, fi: FuncInfo) -> Span:
        last = fi.node.body[-1] if fi.node.body else fi.node
        return self.src.span(last)

    def _launch_comment(self, fi: FuncInfo) -> LaunchBounds:
        lines = self.src.lines
        cands = []
        ln = fi.first_line - 1
        while ln >= 1 and lines[ln - 1].strip().startswith("#"):
            cands.append(lines[ln - 1])
            ln -= 1
        for ln in range(fi.first_line, fi.node.lineno):  # comments between decorators and def
            if lines[ln - 1].strip().startswith("#"):
                cands.append(lines[ln - 1])
        for text in cands:
            m = _LAUNCH.search(text)
            if m:
                x, y, z = (int(g) if g else 1 for g in m.groups())
                return LaunchBounds(block=(x, y, z), source="launch comment")
        return LaunchBounds()

    # -- parameters and assumptions ---------------------------------------------------------------

    def _params(self, frame: _Frame) -> None:
        fi, k = self.fi, self.kernel
        if fi.has_varargs:
            self.unsupported(fi.node, "varargs", "*args/**kwargs", "variadic parameters")
        for i, name in enumerate(fi.params):
            sig = fi.sig[i] if fi.sig and i < len(fi.sig) else None
            attrs: dict[str, Any] = {"name": name}
            if self.standalone:
                attrs["varying"] = True
            if name in fi.array_params or (sig is not None and sig[1] > 0):
                ndim = max(fi.array_params.get(name, 1), sig[1] if sig else 0, 1)
                dtype = (sig[0] if sig else None) or "f32"
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
                self._report(span, "assume", f"tolk: assume {expr_text}")
                continue
            self.no_cf, self.span_override, self.text_override = True, span, expr_text
            try:
                lv = self.expr(tree.body)
                c = self.to_pred(lv, tree.body)
                self.kernel.assumptions.append(self.val(c, tree.body))
            finally:
                self.no_cf, self.span_override, self.text_override = False, None, None

    # -- diagnostics -------------------------------------------------------------------------------

    def _report(self, span: Span, kind: str, what: str, origin: Origin | None = None) -> None:
        if kind in self.reported:
            return
        self.reported.add(kind)
        d = Diagnostic(
            code="TL002",
            severity=Severity.WARNING,
            message=f"`{what}` is not understood; analyses treat it conservatively",
            span=span,
            kernel=self.kernel.name,
            origin=origin,
            name="unsupported-construct",
        )
        self.ctx.diagnostics.append(d)
        if self.standalone:
            self.ctx.from_functions.add(id(d))

    def unsupported(self, node: ast.AST, kind: str, what: str | None = None, reason: str = "") -> None:
        span, text = self.loc(node)
        self._report(span, kind, what or text, self._origin(span))

    def opaque(
        self, node: ast.AST, kind: str, what: str | None = None, reason: str = "", args=(), type="s64"
    ) -> Value:
        self.unsupported(node, kind, what, reason)
        text = self.loc(node)[1]
        vals = [a for a in args if isinstance(a, Value)]
        return self.emit(O.OPAQUE, vals, (type,), {"text": text, "reason": reason or kind}, node).result

    # -- emission ------------------------------------------------------------------------------

    def loc(self, node: ast.AST | None) -> tuple[Span, str]:
        if self.span_override is not None:
            return self.span_override, self.text_override or ""
        if node is None:
            return self.kernel.span, ""
        return self.src.loc(node)

    def _origin(self, span: Span) -> Origin | None:
        f = self.frames[-1] if self.frames else None
        if f is None or f.call_origin is None:
            return None
        return Origin(self.ctx.path, span.line, span.column, inlined_at=f.call_origin)

    def emit(self, op: O, args, types=(), attrs=None, node=None, names=None, block=None) -> Instr:
        span, text = self.loc(node)
        return self.b.emit(op, args, types, attrs=attrs, span=span, origin=self._origin(span), text=text,
                           names=names, block=block)  # fmt: skip

    def value(self, op: O, args, type: str, attrs=None, node=None) -> Value:
        return self.emit(op, args, (type,), attrs, node).result

    def const(self, value: Any, type: str, node) -> Value:
        return self.value(O.CONST, [], type, {"value": value}, node)

    def jump(self, target: Block, node=None) -> None:
        span, text = self.loc(node)
        self.b.jump(target, span=span, origin=self._origin(span), text=text)

    def branch(self, c: Value, t: Block, f: Block, node=None) -> None:
        span, text = self.loc(node)
        self.b.branch(c, t, f, span=span, origin=self._origin(span), text=text)

    def dead(self) -> bool:
        cur = self.b.current
        return (
            cur is not None
            and not cur.preds
            and cur is not self.entry
            and cur is not getattr(self, "start", None)
        )

    @property
    def frame(self) -> _Frame:
        return self.frames[-1]

    # -- variables -----------------------------------------------------------------------------

    def bind(self, raw: str, lv: Any, node, single: bool = False) -> None:
        """Give variable ``raw`` the value ``lv``. A Python constant stays
        symbolic when the variable is assigned once (``single``), else it
        becomes a CONST."""
        if isinstance(lv, PyConst) and is_scalar(lv.value) and not isinstance(lv.value, complex):
            if single:
                self.statics[raw] = lv
                return
            lv = self.val(lv, node)
        if isinstance(lv, Value):
            self.statics.pop(raw, None)
            if (
                lv.source_name.startswith("%")
                and not raw.startswith("$")
                and lv.defn is not None
                and lv.defn.op is not O.PARAM
            ):
                fresh = self.b.new_value(lv.type, raw)
                lv.name, lv.source_name = fresh.name, raw
            self.b.write(raw, lv)
        elif isinstance(lv, TupleLV):
            self.statics[raw] = _TupleVar(len(lv.items))
            for i, item in enumerate(lv.items):
                self.bind(f"{raw}#{i}", item, node)
        else:
            self.statics[raw] = lv

    def read(self, raw: str, node) -> Any:
        s = self.statics.get(raw)
        if s is not None:
            if isinstance(s, _TupleVar):
                return TupleLV([self.read(f"{raw}#{i}", node) for i in range(s.n)])
            return s
        return self.b.read(raw)

    def name(self, name: str, node: ast.AST) -> Any:
        f = self.frame
        raw = f.var(name)
        if raw in self.statics or name in f.locals:
            return self.read(raw, node)
        return self.global_name(name, node, f)

    def global_name(self, name: str, node: ast.AST, f: _Frame) -> Any:
        b, scope = f.scope.lookup(name, f.line)
        if b is None:
            if name in ("True", "False", "None"):
                return PyConst({"True": True, "False": False, "None": None}[name])
            from tolk_lint.frontends.python.finder import BUILTIN_NAMES

            if name in BUILTIN_NAMES:
                return QualRef(f"builtins.{name}")
            return GlobalRef(name, "undefined name", node)
        if b.kind == "const":
            return PyConst(b.value)
        if b.kind == "alias":
            return self.qual_value(b.value, node)
        if b.kind == "func":
            return FuncRef(b.value)
        if b.kind == "extern":
            return FuncRef(b.value)
        why = (
            "closure variable of unknown value"
            if scope is not None and scope.kind == "function"
            else "global of unknown value"
        )
        return GlobalRef(name, why, node)

    def static_qual(self, node: ast.AST) -> str | None:
        """The qualified name of a callee, without emitting anything."""
        if isinstance(node, ast.Name):
            f = self.frame
            raw = f.var(node.id)
            s = self.statics.get(raw)
            if s is not None:
                return s.qual if isinstance(s, QualRef) else None
            if node.id in f.locals:
                return None
            b, _ = f.scope.lookup(node.id, f.line)
            if b is None:
                from tolk_lint.frontends.python.finder import BUILTIN_NAMES

                return f"builtins.{node.id}" if node.id in BUILTIN_NAMES else None
            return b.value if b.kind == "alias" else None
        if isinstance(node, ast.Attribute):
            base = self.static_qual(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def qual_value(self, q: str, node: ast.AST) -> Any:
        if q.startswith(V.CUDA):
            rest = q[len(V.CUDA) :]
            grp, _, ax = rest.partition(".")
            if grp in V.SPECIAL_GROUPS and ax in V.AXES:
                return self.special(f"{V.SPECIAL_GROUPS[grp]}.{ax}", node)
            if rest in V.CUDA_VALUES:
                kind, what = V.CUDA_VALUES[rest]
                if kind == "special":
                    return self.special(what, node)
                return PyConst(what)
        if q in V.FLOAT_CONSTANTS and V.FLOAT_CONSTANTS[q] is not None:
            return PyConst(V.FLOAT_CONSTANTS[q])
        return QualRef(q)

    def special(self, name: str, node, type: str = "s64") -> Value:
        return self.emit(O.SPECIAL, [], (type,), {"name": name}, node, names=(name,)).result

    def global_value(self, g: GlobalRef, node) -> Value:
        if g.why == "undefined name":
            self.unsupported(g.node or node, f"global:{g.name}", g.name, g.why)
        # a closure or module variable: frozen by Numba when it compiles the
        # kernel, so a uniform value like a kernel argument (no TL002)
        v = self.global_params.get(g.name)
        if v is None:
            attrs = {"name": g.name, "global": True}
            v = self.b.emit(O.PARAM, [], ("s64",), attrs=attrs, span=self.kernel.span, text=g.name,
                            names=(g.name,), block=self.entry).result  # fmt: skip
            self.global_params[g.name] = v
        return v

    def global_array(self, g: GlobalRef, node) -> ArrayRef:
        base = self.global_value(g, node)
        space = "global" if self.host else "const"
        return ArrayRef(g.name, space, "f32", base, (None,), 1)

    # -- values -------------------------------------------------------------------------------------

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
        if isinstance(a, PyConst) and not _numeric(a.value):
            a = self.val(a, node)
        if isinstance(b, PyConst) and not _numeric(b.value):
            b = self.val(b, node)
        if isinstance(a, PyConst) and isinstance(b, PyConst):
            ta, tb = self.type_of(a), self.type_of(b)
            t = _join(ta, tb, bitwise)
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
        t = _join(va.type, vb.type, bitwise)
        if va.type != t:
            va = self.cvt(va, t, node)
        if vb.type != t:
            vb = self.cvt(vb, t, node)
        return va, vb, t

    # -- statements ------------------------------------------------------------------------------

    def suite(self, stmts: list[ast.stmt]) -> None:
        for st in stmts:
            if self.b.terminated() or self.dead():
                return
            m = getattr(self, "_s_" + type(st).__name__, None)
            if m is None:
                self.unsupported(st, type(st).__name__, None, "statement")
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
        if isinstance(t, ast.Subscript):
            base = self.expr(t.value)
            if isinstance(base, GlobalRef):
                base = self.global_array(base, t)
            if not isinstance(base, ArrayRef):
                self.opaque(st, "subscript-store", None, "store into something that is not an array")
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
        self.opaque(st, "attribute-store", None, "store to an attribute")

    def assign(self, target: ast.expr, lv: Any, st: ast.AST) -> None:
        if isinstance(target, ast.Name):
            f = self.frame
            self.bind(f.var(target.id), lv, st, single=target.id not in f.fi.multi)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in target.elts):
                self.unsupported(target, "starred", None, "starred assignment")
                for e in target.elts:
                    inner = e.value if isinstance(e, ast.Starred) else e
                    self.assign(inner, self.opaque(st, "starred", None, "starred assignment"), st)
                return
            items = self.items(lv, len(target.elts), st)
            for t, item in zip(target.elts, items):
                self.assign(t, item, st)
        elif isinstance(target, ast.Subscript):
            base = self.expr(target.value)
            if isinstance(base, GlobalRef):
                base = self.global_array(base, target)
            if not isinstance(base, ArrayRef):
                self.opaque(
                    st, "subscript-store", None, "store into something that is not an array", args=[lv]
                )
                return
            self.store(base, target.slice, lv, target, st)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, lv, st)
        else:
            self.opaque(st, "attribute-store", None, "store to an attribute")

    def items(self, lv: Any, n: int, node) -> list:
        if isinstance(lv, TupleLV) and len(lv.items) == n:
            return list(lv.items)
        if isinstance(lv, PyConst) and isinstance(lv.value, tuple) and len(lv.value) == n:
            return [PyConst(x) for x in lv.value]
        return [self.opaque(node, "unpack", None, "unpacking a value that is not a tuple") for _ in range(n)]

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
            and self.static_qual(it.func) in _RANGES
        ):
            self.range_loop(st, it)
            return
        lv = self.expr(it)
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
            if items and all(isinstance(x, PyConst) and _numeric(x.value) for x in items):
                self.table_loop(st, [x.value for x in items])
                return
        self.opaque_loop(st, lv)

    def range_loop(self, st: ast.For, it: ast.Call, element: tuple | None = None) -> None:
        b = self.b
        lvs = [self.expr(a) for a in it.args]
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

    def opaque_loop(self, st: ast.For, lv: Any) -> None:
        b = self.b
        what = f"for ... in {self.loc(st.iter)[1]}"
        self.unsupported(st.iter, "iteration", what, "loop over something that is not a range")
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
            self.unsupported(st, "break", None, "break outside a loop")
            return
        self.jump(self.frame.loops[-1][1], st)

    def _s_Continue(self, st) -> None:
        if not self.frame.loops:
            self.unsupported(st, "continue", None, "continue outside a loop")
            return
        self.jump(self.frame.loops[-1][0], st)

    def _s_Return(self, st: ast.Return) -> None:
        f = self.frame
        lv = self.expr(st.value) if st.value is not None else None
        if lv is not None and isinstance(lv, PyConst) and lv.value is None:
            lv = None
        if f.cont is None:  # the kernel itself
            args = []
            if lv is not None:
                f.has_value = True
                args = [self.val(lv, st)]
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
                self.unsupported(st, "import", None, "relative or star import")
                continue
            q = f"{st.module}.{a.name}" if st.module else a.name
            self.statics[f.var(a.asname or a.name)] = self.qual_value(q, st)

    def _s_FunctionDef(self, st) -> None:
        self.unsupported(st, "nested-def", f"def {st.name}", "a function defined inside a kernel")
        self.statics[self.frame.var(st.name)] = GlobalRef(st.name, "nested function")

    _s_AsyncFunctionDef = _s_FunctionDef

    def _s_ClassDef(self, st) -> None:
        self.unsupported(st, "class", f"class {st.name}", "a class defined inside a kernel")

    def _s_With(self, st: ast.With) -> None:
        self.unsupported(st, "with", "with", "a with statement")
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
        self.unsupported(st, "try", "try", "exception handling")
        self.suite(st.body)
        if st.orelse and not self.b.terminated() and not self.dead():
            self.suite(st.orelse)
        if st.finalbody and not self.b.terminated() and not self.dead():
            self.suite(st.finalbody)

    _s_TryStar = _s_Try

    # -- conditions ------------------------------------------------------------------------------

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

    # -- expressions ------------------------------------------------------------------------------

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
        if isinstance(base, (ObjRef, Value, PyConst, TupleLV)):
            return MethodRef(base, attr)
        return self.opaque(node, "attribute", None, "attribute of an unknown object")

    def _e_Subscript(self, node: ast.Subscript) -> Any:
        base = self.expr(node.value)
        if isinstance(base, GlobalRef):
            base = self.global_array(base, node)
        if isinstance(base, ArrayRef):
            acc = self.access(base, node.slice, node)
            if acc is None:
                return self.opaque(node, "subscript", None, "an index the front end does not model")
            if isinstance(acc, ArrayRef):
                return acc
            arr, addr, index = acc
            attrs = {"space": arr.space, "dtype": arr.dtype, "buffer": arr.name, "index": index}
            return self.value(O.LOAD, [addr], arr.dtype, attrs, node)
        if isinstance(base, (TupleLV, PyConst)):
            items = base.items if isinstance(base, TupleLV) else None
            if items is None:
                if not isinstance(base.value, tuple):
                    return self.opaque(node, "subscript", None, "subscript of a constant")
                items = [PyConst(x) for x in base.value]
            sl = node.slice
            if isinstance(sl, ast.Slice):
                lo, hi, st = (
                    self.static(self.expr(x)) if x is not None else None
                    for x in (sl.lower, sl.upper, sl.step)
                )
                if any(x is UNKNOWN for x in (lo, hi, st)):
                    return self.opaque(node, "tuple-slice", None, "a tuple sliced by unknown bounds")
                return TupleLV(items[lo:hi:st])
            i = self.static(self.expr(sl))
            if isinstance(i, int) and -len(items) <= i < len(items):
                return items[i]
            return self.opaque(node, "tuple-index", None, "a tuple indexed by a value that is not constant")
        return self.opaque(node, "subscript", None, "subscript of something that is not an array")

    # -- arrays ------------------------------------------------------------------------------

    def extent(self, arr: ArrayRef, d: int, node) -> Any:
        n = arr.shape[d] if d < len(arr.shape) else None
        if isinstance(n, int):
            return PyConst(n)
        key = (arr.key, d)
        v = self.shape_params.get(key)
        if v is None:
            name = f"{arr.key}.shape[{d}]"
            v = self.b.emit(O.PARAM, [], ("s64",), attrs={"name": name}, span=self.kernel.span, text=name,
                            names=(name,), block=self.entry).result  # fmt: skip
            self.shape_params[key] = v
        return v

    def _index_value(self, lv: Any, node) -> Value:
        if isinstance(lv, PyConst) and isinstance(lv.value, (int, bool)):
            return self.const(int(lv.value), "s64", node)
        v = self.val(lv, node)
        if v.type not in ("s64", "u64", "ptr"):
            v = self.cvt(v, "s64", node)
        return v

    def access(self, arr: ArrayRef, sl: ast.expr, node) -> Any:
        """Index ``arr`` by ``sl``: (array, byte address, index values) for an
        element, an ArrayRef for a view, or None."""
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        if any(isinstance(e, ast.Starred) for e in elts):
            return None
        if any(isinstance(e, ast.Slice) for e in elts):
            return self.slice_view(arr, elts, node)
        lvs = [self.expr(e) for e in elts]
        flat: list[Any] = []
        for lv in lvs:
            if isinstance(lv, TupleLV):
                flat.extend(lv.items)
            elif isinstance(lv, PyConst) and isinstance(lv.value, tuple):
                flat.extend(PyConst(x) for x in lv.value)
            else:
                flat.append(lv)
        return self.element(arr, flat, node)

    def element(self, arr: ArrayRef, idx: list, node) -> Any:
        d0 = len(arr.prefix)
        vals = list(arr.prefix)
        for i, lv in enumerate(idx):
            v = self._index_value(lv, node)
            off = arr.offsets.get(d0 + i)
            if off is not None:
                v = self.value(O.ADD, [v, off], "s64", None, node)
            vals.append(v)
        if len(vals) < arr.ndim:
            view = arr.view()
            view.prefix = tuple(vals)
            return view
        return arr, self.address(arr, vals, node), tuple(vals)

    def address(self, arr: ArrayRef, idx: list[Value], node) -> Value:
        lin: Any = self._foldable(idx[0])
        for d in range(1, len(idx)):
            lin = self._arith(O.MUL, lin, self.extent(arr, d, node), node)
            lin = self._arith(O.ADD, lin, self._foldable(idx[d]), node)
        byte = self._arith(O.MUL, lin, PyConst(arr.itemsize), node)
        if isinstance(byte, PyConst) and byte.value == 0:
            return arr.base
        return self.value(O.ADD, [arr.base, self.val(byte, node, "s64")], "ptr", None, node)

    def _foldable(self, v: Value) -> Any:
        d = v.defn
        if d is not None and d.op is O.CONST and isinstance(d.attrs.get("value"), int):
            return PyConst(d.attrs["value"])
        return v

    def _arith(self, op: O, a: Any, b: Any, node) -> Any:
        """Index arithmetic with constant folding (s64)."""
        if isinstance(a, PyConst) and isinstance(b, PyConst):
            return PyConst(a.value * b.value if op is O.MUL else a.value + b.value)
        if op is O.MUL:
            for x, y in ((a, b), (b, a)):
                if isinstance(y, PyConst) and y.value == 1:
                    return x
                if isinstance(y, PyConst) and y.value == 0:
                    return PyConst(0)
        if op is O.ADD:
            for x, y in ((a, b), (b, a)):
                if isinstance(y, PyConst) and y.value == 0:
                    return x
        return self.value(op, [self.val(a, node, "s64"), self.val(b, node, "s64")], "s64", None, node)

    def slice_view(self, arr: ArrayRef, elts: list[ast.expr], node) -> Any:
        d0 = len(arr.prefix)
        view = arr.view()
        prefix = list(arr.prefix)
        sliced = False
        for i, e in enumerate(elts):
            d = d0 + i
            if isinstance(e, ast.Slice):
                if e.step is not None:
                    step = self.static(self.expr(e.step))
                    if step != 1:
                        self.unsupported(e, "strided-slice", None, "a strided slice")
                if e.lower is not None:
                    lo = self._index_value(self.expr(e.lower), e)
                    prev = view.offsets.get(d)
                    view.offsets[d] = (
                        self.value(O.ADD, [prev, lo], "s64", None, e) if prev is not None else lo
                    )
                if e.upper is not None:
                    self.expr(e.upper)
                shape = list(view.shape) + [None] * (d + 1 - len(view.shape))
                shape[d] = None
                view.shape = tuple(shape)
                sliced = True
            else:
                if sliced:
                    self.unsupported(e, "mixed-slice", None, "an index after a slice")
                    return view
                v = self._index_value(self.expr(e), e)
                off = view.offsets.get(d)
                if off is not None:
                    v = self.value(O.ADD, [v, off], "s64", None, e)
                prefix.append(v)
        view.prefix = tuple(prefix)
        return view

    def store(self, arr: ArrayRef, sl: ast.expr, lv: Any, target, st) -> None:
        acc = self.access(arr, sl, target)
        if acc is None or isinstance(acc, ArrayRef):
            self.opaque(
                st,
                "view-store",
                None,
                "a store into an array view",
                args=[lv] if isinstance(lv, Value) else [],
            )
            return
        arr, addr, index = acc
        v = self.coerce(lv, arr.dtype, st)
        attrs = {"space": arr.space, "dtype": arr.dtype, "buffer": arr.name, "index": index}
        self.emit(O.STORE, [addr, v], (), attrs, target)
        if arr.param is not None:
            arr.param.written = True

    def new_buffer(self, space: str, dtype: str, shape: tuple, node, dynamic=False, align=0) -> ArrayRef:
        base = self.name_hint or f"{space}_array"
        name, n = base, 0
        while name in self.kernel.buffers:
            n += 1
            name = f"{base}.{n}"
        span = self.loc(node)[0]
        buf = Buffer(
            name,
            space,
            dtype,
            tuple(shape),
            align=align,
            dynamic=dynamic,
            span=span,
            origin=self._origin(span),
        )
        self.kernel.buffers[name] = buf
        addr = self.emit(O.ADDR, [], ("ptr",), {"buffer": name}, node, names=(name,)).result
        return ArrayRef(name, space, dtype, addr, shape, len(shape))

    # -- operators ------------------------------------------------------------------------------

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
        va, vb, t = self.unify(a, b, node)
        attrs: dict[str, Any] = {"cmp": name}
        if not is_float(t):
            attrs["signed"] = not t.startswith("u")
        return self.value(O.CMP, [va, vb], "pred", attrs, node)

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
                self.unsupported(node, "ifexp-object", None, "a conditional choosing between objects")
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
                self.unsupported(arm, "ifexp-object", None, "a conditional choosing between objects")
                lv = self.val(lv, arm)
            arms.append((b.current, arm, lv))
        # one type for both arms, decided once both are known
        t = None
        for _, _, lv in arms:
            if isinstance(lv, Value):
                t = lv.type if t is None else _join(t, lv.type, False)
        if t is None:
            t = _join(self.type_of(arms[0][2]), self.type_of(arms[1][2]), False)
        for blk, arm, lv in arms:
            b.position(blk)
            b.write(var, self.coerce(lv, t, arm))
            self.jump(join, arm)
        b.seal(join)
        b.position(join)
        return b.read(var)

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

    # -- calls ------------------------------------------------------------------------------

    def _e_Call(self, node: ast.Call) -> Any:
        callee = self.expr(node.func)
        if isinstance(callee, QualRef):
            return self.call_qual(callee.qual, node)
        if isinstance(callee, FuncRef):
            info = callee.info
            if isinstance(info, ExternInfo):
                return self.call_op(node, info.name, "external device function")
            if info.kind in ("device", "host"):
                return self.inline(info, node)
            if info.kind == "kernel":
                return self.opaque_call(
                    node, f"call:{info.name}", f"{info.name}(...)", "a kernel called from a kernel"
                )
            return self.opaque_call(
                node, f"call:{info.name}", f"{info.name}(...)", "a function that is not jitted"
            )
        if isinstance(callee, MethodRef):
            if (
                isinstance(callee.obj, ObjRef)
                and callee.obj.kind == "grid"
                and callee.name == "sync"
                and not node.args
            ):
                return self.barrier_grid(node)
            return self.opaque_call(node, f"method:{callee.name}", f".{callee.name}()", "a method call")
        if isinstance(callee, GlobalRef):
            self.unsupported(callee.node or node, f"global:{callee.name}", callee.name, callee.why)
            return self.opaque_call(node, f"global:{callee.name}", callee.name, callee.why)
        return self.opaque_call(node, "call", None, "a call of an unknown object")

    def call_args(self, node: ast.Call, names: list[str]) -> dict[str, ast.expr] | None:
        out: dict[str, ast.expr] = {}
        for i, a in enumerate(node.args):
            if isinstance(a, ast.Starred) or i >= len(names):
                return None
            out[names[i]] = a
        for kw in node.keywords:
            if kw.arg is None:
                return None
            out[kw.arg] = kw.value
        return out

    def opaque_call(
        self, node: ast.Call, kind: str, what: str | None, reason: str, type: str = "s64"
    ) -> Value:
        args = [self.expr(a.value if isinstance(a, ast.Starred) else a) for a in node.args]
        args += [self.expr(k.value) for k in node.keywords]
        vals = []
        for a in args:
            if isinstance(a, Value):
                vals.append(a)
            elif isinstance(a, ArrayRef):
                vals.append(a.base)
        return self.opaque(node, kind, what or self.loc(node)[1], reason, args=vals, type=type)

    def call_op(self, node: ast.Call, callee: str, reason: str) -> Value:
        self.unsupported(node, f"call:{callee}", f"{callee}(...)", reason)
        vals = []
        for a in node.args:
            lv = self.expr(a)
            if isinstance(lv, ArrayRef):
                vals.append(lv.base)
            elif isinstance(lv, (Value, PyConst)):
                vals.append(self.val(lv, a))
        return self.value(O.CALL, vals, "s64", {"callee": callee}, node)

    def call_qual(self, q: str, node: ast.Call) -> Any:
        if q.startswith(V.CUDA):
            rest = q[len(V.CUDA) :]
            if rest.startswith("atomic."):
                op = V.ATOMIC_OPS.get(rest[7:])
                if op is not None:
                    return self.atomic(rest[7:], op, node)
            h = V.CUDA_CALLS.get(rest)
            if h is not None:
                return getattr(self, "_cuda_" + h[0])(node, h[1])
            if rest.startswith(("fp16.", "bf16.")):
                return self.half_op(rest.split(".", 1)[1], "f16" if rest.startswith("fp16") else "bf16", node)
            if rest.startswith("libdevice."):
                return self.pure_fn(rest[10:], node, keep_int=False)
        if q.startswith("math."):
            return self.math_call(q[5:], node, numpy=False)
        if q.startswith("numpy."):
            return self.numpy_call(q[6:], node)
        if q.startswith("builtins."):
            return self.builtin_call(q[9:], node)
        t = V.dtype_of_qual(q)
        if t is not None:
            return self.convert(t, node, q.rsplit(".", 1)[-1])
        return self.opaque_call(node, f"call:{q}", q, "an unknown function")

    # -- numba.cuda ---------------------------------------------------------------------------

    def _arg(self, node: ast.Call, names: list[str], required: int) -> dict[str, ast.expr] | None:
        a = self.call_args(node, names)
        if a is None or any(n not in a for n in names[:required]):
            return None
        return a

    def _bad_call(self, node: ast.Call) -> Value:
        return self.opaque_call(
            node, f"call:{self.loc(node.func)[1]}", None, "a call with arguments the front end does not model"
        )

    def _cuda_grid(self, node: ast.Call, _: Any) -> Any:
        a = self._arg(node, ["ndim"], 1)
        n = self.static(self.expr(a["ndim"])) if a else UNKNOWN
        if n not in (1, 2, 3):
            return self._bad_call(node)
        vals = []
        for ax in V.AXES[:n]:
            ctaid = self.special(f"ctaid.{ax}", node)
            ntid = self.special(f"ntid.{ax}", node)
            prod = self.value(O.MUL, [ctaid, ntid], "s64", None, node)
            vals.append(self.value(O.ADD, [prod, self.special(f"tid.{ax}", node)], "s64", None, node))
        return vals[0] if n == 1 else TupleLV(vals)

    def _cuda_gridsize(self, node: ast.Call, _: Any) -> Any:
        a = self._arg(node, ["ndim"], 1)
        n = self.static(self.expr(a["ndim"])) if a else UNKNOWN
        if n not in (1, 2, 3):
            return self._bad_call(node)
        vals = []
        for ax in V.AXES[:n]:
            vals.append(
                self.value(
                    O.MUL,
                    [self.special(f"nctaid.{ax}", node), self.special(f"ntid.{ax}", node)],
                    "s64",
                    None,
                    node,
                )
            )
        return vals[0] if n == 1 else TupleLV(vals)

    def _shape_of(self, lv: Any, node) -> tuple[tuple, bool] | None:
        s = self.static(lv)
        if isinstance(s, bool):
            return None
        if isinstance(s, int):
            return ((None,), True) if s == 0 else ((s,), False)
        if isinstance(s, tuple) and s and all(isinstance(x, int) and not isinstance(x, bool) for x in s):
            if any(x == 0 for x in s):
                return tuple(None for _ in s), True
            return s, False
        return None

    def dtype_arg(self, node: ast.expr | None, default: str) -> str:
        if node is None:
            return default
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            t = V.dtype_of_string(node.value)
            if t:
                return t
        q = self.static_qual(node)
        t = V.dtype_of_qual(q) if q else None
        if t is None and isinstance(node, ast.Attribute) and node.attr == "dtype":
            base = self.expr(node.value)
            if isinstance(base, ArrayRef):
                return base.dtype
        if t is None:
            self.unsupported(node, "dtype", None, "a dtype the front end does not know")
            return default
        return t

    def _cuda_array(self, node: ast.Call, space: str) -> Any:
        a = self._arg(node, ["shape", "dtype", "alignment"], 2)
        if a is None:
            return self._bad_call(node)
        shape_lv = self.expr(a["shape"])
        got = self._shape_of(shape_lv, a["shape"])
        dtype = self.dtype_arg(a.get("dtype"), "f32")
        align = 0
        if "alignment" in a:
            al = self.static(self.expr(a["alignment"]))
            align = al if isinstance(al, int) else 0
        if got is None:
            self.unsupported(
                a["shape"], "array-shape", None, "an array shape that is not a compile-time constant"
            )
            n = len(shape_lv.items) if isinstance(shape_lv, TupleLV) else 1
            shape, dynamic = (None,) * n, False
        else:
            shape, dynamic = got
        return self.new_buffer(space, dtype, shape, node, dynamic=dynamic and space == "shared", align=align)

    def _cuda_const_array(self, node: ast.Call, _: Any) -> Any:
        a = self._arg(node, ["ary"], 1)
        if a is None:
            return self._bad_call(node)
        src = self.expr(a["ary"])
        if isinstance(src, ArrayRef):
            shape, dtype = src.shape[len(src.prefix) :], src.dtype
        else:
            shape, dtype = (None,), "f32"
        return self.new_buffer("const", dtype, tuple(shape) or (None,), node)

    def _cuda_syncthreads(self, node: ast.Call, _: Any) -> Any:
        self.emit(O.BARRIER, [], (), {"kind": "sync", "aligned": True}, node)
        return PyConst(None)

    def _cuda_sync_red(self, node: ast.Call, op: str) -> Any:
        a = self._arg(node, ["predicate"], 1)
        if a is None:
            return self._bad_call(node)
        p = self.to_pred(self.expr(a["predicate"]), node)
        p = self.val(p, node)
        return self.value(O.BARRIER, [p], "s64", {"kind": "red", "op": op, "aligned": True}, node)

    def _mask(self, node: ast.expr | None, call) -> Value:
        if node is None:
            return self.const(0xFFFFFFFF, "u32", call)
        lv = self.expr(node)
        if isinstance(lv, PyConst) and isinstance(lv.value, int):
            return self.const(lv.value & 0xFFFFFFFF, "u32", node)
        return self.val(lv, node)

    def _cuda_syncwarp(self, node: ast.Call, _: Any) -> Any:
        a = self.call_args(node, ["mask"])
        if a is None:
            return self._bad_call(node)
        self.emit(O.WARP_SYNC, [self._mask(a.get("mask"), node)], (), None, node)
        return PyConst(None)

    def _cuda_fence(self, node: ast.Call, scope: str) -> Any:
        self.emit(O.FENCE, [], (), {"scope": scope}, node)
        return PyConst(None)

    def _cuda_this_grid(self, node: ast.Call, _: Any) -> Any:
        return ObjRef("grid")

    def barrier_grid(self, node: ast.Call) -> Any:
        self.emit(O.BARRIER, [], (), {"kind": "grid", "aligned": True}, node)
        return PyConst(None)

    def _cuda_shfl(self, node: ast.Call, mode: str) -> Any:
        a = self._arg(node, ["mask", "value", "lane"], 3)
        if a is None:
            return self._bad_call(node)
        mask = self._mask(a["mask"], node)
        v = self.val(self.expr(a["value"]), a["value"])
        lane = self._index_value(self.expr(a["lane"]), a["lane"])
        clamp = self.const(0 if mode == "up" else 31, "s64", node)
        return self.value(O.SHUFFLE, [v, lane, clamp, mask], v.type, {"mode": mode}, node)

    def _cuda_vote(self, node: ast.Call, mode: str) -> Any:
        a = self._arg(node, ["mask", "predicate"], 2)
        if a is None:
            return self._bad_call(node)
        mask = self._mask(a["mask"], node)
        p = self.val(self.to_pred(self.expr(a["predicate"]), node), node)
        return self.value(O.VOTE, [p, mask], "u32" if mode == "ballot" else "pred", {"mode": mode}, node)

    def _cuda_match(self, node: ast.Call, mode: str) -> Any:
        a = self._arg(node, ["mask", "value"], 2)
        if a is None:
            return self._bad_call(node)
        mask = self._mask(a["mask"], node)
        v = self.val(self.expr(a["value"]), a["value"])
        if mode == "any":
            return self.value(O.MATCH, [v, mask], "u32", {"mode": "any"}, node)
        ins = self.emit(O.MATCH, [v, mask], ("u32", "pred"), {"mode": "all"}, node)
        return TupleLV(list(ins.results))

    def _cuda_activemask(self, node: ast.Call, _: Any) -> Any:
        return self.value(O.ACTIVEMASK, [], "u32", None, node)

    def _cuda_lanemask(self, node: ast.Call, name: str) -> Any:
        return self.special(name, node, "u32")

    def _cuda_selp(self, node: ast.Call, _: Any) -> Any:
        a = self._arg(node, ["cond", "a", "b"], 3)
        if a is None:
            return self._bad_call(node)
        c = self.to_pred(self.expr(a["cond"]), node)
        x, y = self.expr(a["a"]), self.expr(a["b"])
        if isinstance(c, PyConst):
            return x if c.value else y
        va, vb, t = self.unify(x, y, node)
        return self.value(O.SELECT, [c, va, vb], t, None, node)

    def _cuda_fma(self, node: ast.Call, _: Any) -> Any:
        a = self._arg(node, ["a", "b", "c"], 3)
        if a is None:
            return self._bad_call(node)
        x, y, z = (self.expr(a[k]) for k in "abc")
        vx, vy, t = self.unify(x, y, node)
        vz = self.coerce(z, t, node)
        return self.value(O.MAD, [vx, vy, vz], t, None, node)

    def _cuda_pure(self, node: ast.Call, fn: str) -> Any:
        return self.pure_fn(fn, node, keep_int=True)

    def _cuda_nothing(self, node: ast.Call, _: Any) -> Any:
        for a in node.args:
            self.expr(a)
        return PyConst(None)

    def _cuda_true(self, node: ast.Call, _: Any) -> Any:
        return PyConst(True)

    def _cuda_cache_load(self, node: ast.Call, hint: str) -> Any:
        a = self._arg(node, ["array", "i"], 2)
        arr = self.expr(a["array"]) if a else None
        if not isinstance(arr, ArrayRef):
            return self._bad_call(node)
        acc = self.element(arr, self._index_items(a["i"]), node)
        if isinstance(acc, ArrayRef):
            return self._bad_call(node)
        arr, addr, index = acc
        attrs = {"space": arr.space, "dtype": arr.dtype, "buffer": arr.name, "index": index, "cache": hint}
        return self.value(O.LOAD, [addr], arr.dtype, attrs, node)

    def _cuda_cache_store(self, node: ast.Call, hint: str) -> Any:
        a = self._arg(node, ["array", "i", "value"], 3)
        arr = self.expr(a["array"]) if a else None
        if not isinstance(arr, ArrayRef):
            return self._bad_call(node)
        acc = self.element(arr, self._index_items(a["i"]), node)
        if isinstance(acc, ArrayRef):
            return self._bad_call(node)
        arr, addr, index = acc
        v = self.coerce(self.expr(a["value"]), arr.dtype, node)
        attrs = {"space": arr.space, "dtype": arr.dtype, "buffer": arr.name, "index": index, "cache": hint}
        self.emit(O.STORE, [addr, v], (), attrs, node)
        if arr.param is not None:
            arr.param.written = True
        return PyConst(None)

    def _index_items(self, node: ast.expr) -> list:
        lv = self.expr(node)
        if isinstance(lv, TupleLV):
            return list(lv.items)
        if isinstance(lv, PyConst) and isinstance(lv.value, tuple):
            return [PyConst(x) for x in lv.value]
        return [lv]

    def atomic(self, name: str, op: str, node: ast.Call) -> Any:
        if name == "compare_and_swap":
            a = self._arg(node, ["ary", "old", "val"], 3)
            idx_items: list = [PyConst(0)]
            vals = ["old", "val"]
        elif name == "cas":
            a = self._arg(node, ["ary", "idx", "old", "val"], 4)
            idx_items = []
            vals = ["old", "val"]
        else:
            a = self._arg(node, ["ary", "idx", "val"], 3)
            idx_items = []
            vals = ["val"]
        arr = self.expr(a["ary"]) if a else None
        if isinstance(arr, GlobalRef):
            arr = self.global_array(arr, node)
        if not isinstance(arr, ArrayRef):
            return self._bad_call(node)
        if not idx_items:
            idx_items = self._index_items(a["idx"])
        acc = self.element(arr, idx_items, node)
        if isinstance(acc, ArrayRef):
            return self._bad_call(node)
        arr, addr, index = acc
        operands = [addr] + [self.coerce(self.expr(a[k]), arr.dtype, node) for k in vals]
        attrs = {"op": op, "space": arr.space, "dtype": arr.dtype, "buffer": arr.name, "index": index}
        if arr.param is not None:
            arr.param.written = True
        return self.value(O.ATOMIC, operands, arr.dtype, attrs, node)

    def half_op(self, fn: str, t: str, node: ast.Call) -> Any:
        args = [self.expr(a) for a in node.args]
        vals = [self.coerce(x, t, node) if not (isinstance(x, Value) and x.type == t) else x for x in args]
        op = V.HALF_OPS.get(fn)
        if op is not None and len(vals) == {O.NEG: 1, O.ABS: 1, O.MAD: 3}.get(op, 2):
            return self.value(op, vals, t, None, node)
        cmp = V.HALF_CMPS.get(fn)
        if cmp is not None and len(vals) == 2:
            return self.value(O.CMP, vals, "pred", {"cmp": cmp}, node)
        return self.value(O.PURE, vals, t, {"fn": fn}, node)

    # -- math / numpy / builtins -------------------------------------------------------------------

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
            t = _join(t, v.type, False)
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
        if fn in V.MATH_PURE:
            return self.pure_fn(fn, node, keep_int=False)
        return self.opaque_call(
            node, f"call:{'numpy' if numpy else 'math'}.{fn}", None, "an unknown function"
        )

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

    # -- inlining -------------------------------------------------------------------------------

    def inline(self, fi: FuncInfo, node: ast.Call) -> Any:
        size = self.ctx.size(fi.node)
        if len(self.frames) > MAX_INLINE_DEPTH or size > self.inline_budget:
            what = f"{fi.name}(...)"
            self.unsupported(node, f"recursion:{fi.name}", what, "recursion deeper than the inlining limit")
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
                from tolk_lint.frontends.python.consts import evaluate

                c = evaluate(d, fi.scope.const_lookup(fi.line), lambda n: fi.scope.qual(n, fi.line))
                bound[p] = (
                    PyConst(c)
                    if c is not UNKNOWN and (is_scalar(c) or c is None or isinstance(c, tuple))
                    else self.opaque(d, "default", None, "a default argument")
                )
        self.inline_budget -= size
        span = self.loc(node)[0]
        outer = self.frame.call_origin
        self.counter += 1
        frame = _Frame(
            fi, f"{fi.name}{self.counter}", Origin(self.ctx.path, span.line, span.column, inlined_at=outer)
        )
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

    # -- everything else ---------------------------------------------------------------------------

    def _e_Lambda(self, node) -> Any:
        return self.opaque(node, "lambda", "lambda", "a lambda")

    def _e_ListComp(self, node) -> Any:
        return self.opaque(node, "comprehension", None, "a comprehension")

    _e_SetComp = _e_DictComp = _e_GeneratorExp = _e_ListComp

    def _e_JoinedStr(self, node) -> Any:
        return PyConst("")

    def _e_Starred(self, node) -> Any:
        return self.opaque(node, "starred", None, "a starred expression")


_RANGES = frozenset(
    {"builtins.range", "numba.prange", "numba.np.ufunc.parallel.prange", "numba.parfors.parfor.prange"}
)


def _fold_math(fn: str, args: list) -> Any:
    """``math.fn(*args)`` for constant arguments, or UNKNOWN (domain errors
    are left to the IR)."""
    try:
        r = getattr(math, fn)(*args)
    except (ValueError, TypeError, OverflowError, ZeroDivisionError):
        return UNKNOWN
    return r if is_scalar(r) else UNKNOWN


def _numeric(c: Any) -> bool:
    return isinstance(c, (int, float, bool))


def _join(a: str, b: str, bitwise: bool) -> str:
    """The type two operands meet in."""
    if a == b:
        return a
    if a == "pred" and bitwise and b == "pred":
        return "pred"
    fa, fb = is_float(a), is_float(b)
    if fa or fb:
        if fa and fb:
            return a if type_bits(a) >= type_bits(b) else b
        return a if fa else b
    if a.startswith("u") and b.startswith("u"):
        return a if type_bits(a) >= type_bits(b) else b
    return "s64"


def lower_function(ctx: ModuleCtx, fi: FuncInfo, standalone_device: bool = False) -> Kernel:
    return Lowerer(ctx, fi, standalone_device).run()
