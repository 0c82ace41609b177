"""Variables and names: what a name reads, and binding a value to one.

A variable assigned once keeps a Python constant symbolic (``TILE = 16``
in a kernel is a shape); one assigned again (or in a loop) holds CONSTs.
Tuple variables keep one SSA variable per element (``name#i``).

A name the file gives no value for (a factory's parameter captured by a
nested kernel, a module global that is not a constant) is a uniform
``PARAM`` (attrs ``global``: Numba freezes it when it compiles, so it is
as uniform as a kernel argument and needs no TL002); subscripted, a
``const`` array. Calling such a name, or reading an attribute of it, is
TL002; so is an undefined name. Qualified names of ``numba.cuda`` that are
values (``cuda.threadIdx.x``, ``cuda.warpsize``) become SPECIALs or
constants here.

A closure or module variable assigned once from such names
(``halo = window - 1``) is that expression over their PARAMs; a factory's
parameter is the constant, or one of the constants, the file's calls give
it (`factory_calls`), else a PARAM with attrs ``factory``.

Imports: `context`, `values`, `limits`, the finder's builtins and scopes,
`factory_calls`, `vocabulary`, `consts`, `tolk_lint.ir`.
"""

from __future__ import annotations

import ast
from typing import Any

from tolk_lint.frontends.python import vocabulary as V
from tolk_lint.frontends.python.consts import is_scalar
from tolk_lint.frontends.python.factory_calls import factory_values
from tolk_lint.frontends.python.finder import BUILTIN_NAMES
from tolk_lint.frontends.python.lower.limits import MAX_DERIVED_DEPTH
from tolk_lint.frontends.python.scope import Binding, Flow, Scope
from tolk_lint.frontends.python.lower.context import Frame
from tolk_lint.frontends.python.lower.values import (
    ArrayRef,
    ChoiceRef,
    FuncRef,
    GlobalRef,
    PyConst,
    QualRef,
    TupleLV,
)
from tolk_lint.ir.nodes import Value
from tolk_lint.ir.opcodes import Opcode as O


# operators a closure variable may be computed with and still be followed (`derived_value`)
_DERIVED_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.LShift, ast.RShift,
                ast.BitAnd, ast.BitOr, ast.BitXor)  # fmt: skip


def _parameters(fn: ast.AST) -> set[str]:
    a = fn.args
    return {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]}


class _TupleVar:
    """A tuple-valued variable: its elements are SSA variables ``name#i``."""

    __slots__ = ("n",)

    def __init__(self, n: int):
        self.n = n


class _ArrayVar:
    """A variable assigned array parameters (``data = buf_0`` on one path,
    ``buf_1`` on another): its pointer is an SSA variable, ``choices`` the
    arrays it may hold."""

    __slots__ = ("choices",)

    def __init__(self, choices: list):
        self.choices = choices


def _same_value(v: Value) -> Value:
    """``v``, or the one value a PHI of PHIs stands for (the PHIs `Builder`
    leaves until it finishes: ``data = buf_0`` on both arms). A PHI still
    waiting for its operands (a loop header not sealed yet) stands for
    itself: later trips may bring another value."""
    seen: set[Value] = set()
    todo, found = [v], set()
    while todo:
        x = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        d = x.defn
        if d is not None and d.op is O.PHI and d.args:
            todo.extend(d.args)
        elif d is not None and d.op is O.PHI:
            return v
        else:
            found.add(x)
        if len(found) > 1:
            return v
    return found.pop() if len(found) == 1 else v


class Environment:
    """Mixin of `Lowerer`: variables and names."""

    def bind(self, raw: str, lv: Any, node, single: bool = False) -> None:
        """Give variable ``raw`` the value ``lv``. A Python constant stays
        symbolic when the variable is assigned once (``single``), else it
        becomes a CONST."""
        if isinstance(lv, PyConst) and is_scalar(lv.value) and not isinstance(lv.value, complex):
            if single:
                self.statics[raw] = lv
                return
            lv = self.val(lv, node)
        if isinstance(lv, Value) and lv in self.merged:  # `cur, nxt = nxt, cur` of merged arrays
            prev = self.statics.get(raw)
            choices = list(prev.choices) if isinstance(prev, _ArrayVar) else []
            choices += [c for c in self.merged[lv] if all(c.base is not x.base for x in choices)]
            self.statics[raw] = _ArrayVar(choices)
            self.b.write(raw, lv.defn.args[0])
            return
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
        elif isinstance(lv, ArrayRef) and not single and not (lv.prefix or lv.offsets or lv.strides):
            prev = self.statics.get(raw)
            choices = list(prev.choices) if isinstance(prev, _ArrayVar) else []
            choices += [c for c in self.merged.get(lv, [lv]) if all(c.base is not x.base for x in choices)]
            self.statics[raw] = _ArrayVar(choices)
            self.b.write(raw, lv.base)
        elif isinstance(lv, TupleLV):
            self.statics[raw] = _TupleVar(len(lv.items))
            for i, item in enumerate(lv.items):
                self.bind(f"{raw}#{i}", item, node)
        else:
            self.statics[raw] = lv

    def _array_var(self, raw: str, s: _ArrayVar, node) -> Any:
        """The array a variable assigned whole arrays holds here: the one whose
        pointer it is; where paths holding different array parameters meet,
        an array over the merged pointer, named after no parameter (so its
        accesses may alias any memory), its extents unknown and uniform.
        Different shared or local buffers meeting are not modelled (TL002)."""
        ptr = _same_value(self.b.read(raw))
        for c in s.choices:
            if c.base is ptr:
                return c
        first = s.choices[0]
        name = raw.split("@")[0]
        if any(c.param is None or c.space != "global" for c in s.choices):
            why = "a variable holding different shared or local arrays where paths meet (a swap in a loop)"
            assumed = "its accesses are treated as varying and unknown, and are not checked"
            self.unsupported(node, "array-merge", name, why, assumed)
            attrs = {
                "text": name,
                "reason": why,
                "merged_arrays": True,
            }  # its subscripts: no TL002 of their own
            v = self.value(O.OPAQUE, [ptr], "ptr", attrs, node)
            self.merged[v] = list(s.choices)
            return v
        if any((c.dtype, c.ndim) != (first.dtype, first.ndim) for c in s.choices):
            return self.opaque(node, "array-merge", name, "a variable holding arrays of different types")
        ref = ArrayRef("", "global", first.dtype, ptr, (None,) * first.ndim, first.ndim, key=f"{raw}")
        self.merged[ref] = list(s.choices)
        return ref

    def read(self, raw: str, node) -> Any:
        s = self.statics.get(raw)
        if s is not None:
            if isinstance(s, _TupleVar):
                return TupleLV([self.read(f"{raw}#{i}", node) for i in range(s.n)])
            if isinstance(s, _ArrayVar):
                return self._array_var(raw, s, node)
            return s
        return self.b.read(raw)

    def name(self, name: str, node: ast.AST) -> Any:
        f = self.frame
        raw = f.var(name)
        if raw in self.statics or name in f.locals:
            return self.read(raw, node)
        return self.global_name(name, node, f)

    def global_name(self, name: str, node: ast.AST, f: Frame) -> Any:
        return self.scoped_name(name, node, f.scope, f.line)

    def scoped_name(self, name: str, node: ast.AST, where: Scope, line: int) -> Any:
        """What ``name`` reads where ``where`` resolves it at ``line``: a
        constant, an alias, a function, or a name of unknown value."""
        b, scope = where.lookup(name, line)
        if b is None:
            if name in ("True", "False", "None"):
                return PyConst({"True": True, "False": False, "None": None}[name])
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
        if b.kind == "unknown" and scope is not None and scope.kind != "class":
            derived = self.derived_value(name, b, scope, node)
            if derived is not None:
                return derived
        in_function = scope is not None and scope.kind == "function"
        why = "closure variable of unknown value" if in_function else "global of unknown value"
        factory = None
        if in_function and b.kind == "unknown" and b.value is None and name in _parameters(scope.node):
            factory = scope.node  # a parameter of the function the kernel is nested in
            given = factory_values(self.ctx.finder, factory, name)
            if given is not None and isinstance(given[0], int):
                if len(given) == 1:
                    return PyConst(given[0])  # the one kernel the file's calls make
            elif given is not None:
                return FuncRef(given[0]) if len(given) == 1 else ChoiceRef(name, given)
        return GlobalRef(name, why, node, factory)

    def derived_value(self, name: str, b: Binding, scope: Scope, node: ast.AST) -> Any:
        """A closure or module variable assigned once from others of unknown
        value (a factory's ``halo = window - 1``): that expression over their
        PARAMs, so that the solver knows how the two relate (two free PARAMs
        would let it pick ``halo = 0, window = 101``). None for anything but
        integer arithmetic over names and constants."""
        flow = b.value
        if not isinstance(flow, Flow) or flow.each or flow.index or len(scope.bindings.get(name, ())) != 1:
            return None
        key = (id(scope), name)
        if key in self.deriving or len(self.deriving) >= MAX_DERIVED_DEPTH:
            return None
        self.deriving.add(key)
        try:
            return self._derived_expr(flow.expr, scope, b.line, node)
        finally:
            self.deriving.discard(key)

    def _derived_expr(self, e: ast.expr, scope: Scope, line: int, node: ast.AST) -> Any:
        if isinstance(e, ast.Constant):
            return PyConst(e.value) if isinstance(e.value, int) else None
        if isinstance(e, ast.Name):
            v = self.scoped_name(e.id, node, scope, line)
            scalar = isinstance(v, (GlobalRef, Value)) or (isinstance(v, PyConst) and isinstance(v.value, int))
            return v if scalar else None
        if isinstance(e, ast.BinOp) and type(e.op) in _DERIVED_OPS:
            a = self._derived_expr(e.left, scope, line, node)
            c = self._derived_expr(e.right, scope, line, node) if a is not None else None
            return None if c is None else self.binop(type(e.op), a, c, node)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            a = self._derived_expr(e.operand, scope, line, node)
            if a is None:
                return None
            return a if isinstance(e.op, ast.UAdd) else self.binop(ast.Sub, PyConst(0), a, node)
        return None

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
        if q in V.KNOWN_CONSTANTS and V.KNOWN_CONSTANTS[q] is not None:
            return PyConst(V.KNOWN_CONSTANTS[q])
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
            given = factory_values(self.ctx.finder, g.factory, g.name) if g.factory is not None else None
            given = given if given and isinstance(given[0], int) else None
            if g.factory is not None and given is None:
                attrs["factory"] = g.factory.name  # any value: no call of the file says which
            v = self.b.emit(O.PARAM, [], ("s64",), attrs=attrs, span=self.kernel.span, text=g.name,
                            names=(g.name,), block=self.entry).result  # fmt: skip
            self.global_params[g.name] = v
            if given:
                self._factory_assumption(v, given)
        return v

    def _factory_assumption(self, v: Value, given: tuple[int, ...] | None) -> None:
        """Assume a factory's argument ``v`` is one of the values the file's
        calls give it (`factory_calls`): an OR of equalities, in the entry."""
        if not given:
            return
        out = None
        for x in given:
            c = self.b.emit(O.CONST, [], ("s64",), attrs={"value": x}, block=self.entry).result
            eq = self.b.emit(O.CMP, [v, c], ("pred",), attrs={"cmp": "eq", "signed": True}, block=self.entry).result
            out = eq if out is None else self.b.emit(O.OR, [out, eq], ("pred",), block=self.entry).result
        self.kernel.assumptions.append(out)

    def global_array(self, g: GlobalRef, node) -> ArrayRef:
        base = self.global_value(g, node)
        space = "global" if self.host else "const"
        return ArrayRef(g.name, space, "f32", base, (None,), 1)
