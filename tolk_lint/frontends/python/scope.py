"""What the names of a Python file are bound to: the tables the finder fills
and the lowering reads.

A `Scope` per module / function / class body holds each name's bindings
with the line of each (an import alias, a constant value, a function, or
something unknown), and resolves expressions to *qualified* names through
them (``from numba import cuda as nc`` makes ``nc.jit`` mean
``numba.cuda.jit``). A name's value is the binding in force at the line
asked about; a name bound only further down the file takes its last binding
(the module has run to the end when Numba compiles). ``from numba.cuda
import *`` binds the names that module exports, below every explicit
binding; a star import of a module not known (``from helpers import *``)
may bring ``numba`` itself, so an otherwise unbound ``numba`` is Numba.
A `FuncInfo` is one ``def`` of the file and what the pre-scan learnt
about it.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field
from typing import Any

from tolk_lint.frontends.python.consts import UNKNOWN, Alias
from tolk_lint.frontends.python.vocabulary import STAR_EXPORTS

BUILTIN_NAMES = frozenset(dir(builtins))


@dataclass
class Binding:
    line: int
    kind: str  # "const" | "alias" | "func" | "unknown" | "extern" | "class" | "host"
    # const: the value; alias: the qualified name; func: the FuncInfo; extern: the ExternInfo;
    # class: the class body's Scope; unknown: a Flow, or None; host: a `consts.HostArray`
    value: Any = None


@dataclass(frozen=True)
class Flow:
    """Where a name of unknown value got it from, for kernel discovery to
    follow: the expression assigned (``k = cuda.jit(f)``), or an element of
    what it iterates over (``for f in (f1, f2)``: ``each``), then the
    ``index``-th item of a tuple (``add, mul = make()``, ``for name, fn in
    d.items()``)."""

    expr: ast.expr
    each: bool = False
    index: tuple[int, ...] = ()
    end: int = 0  # a ``for``'s last line: inside it the name is the loop's element, whatever else binds it


class Scope:
    """Names bound in one module, function or class body, with the line of
    each binding."""

    def __init__(self, parent: Scope | None, kind: str, node: ast.AST | None = None):
        self.parent = parent
        self.kind = kind  # "module" | "function" | "class"
        self.node = node
        self.bindings: dict[str, list[Binding]] = {}
        self.star_modules: list[str] = []  # `from numba.cuda import *`, in order
        self.opaque_star = False  # `from helpers import *` of a module whose names are not known
        self._star_bindings: dict[str, Binding] = {}

    def bind(self, name: str, b: Binding) -> None:
        self.bindings.setdefault(name, []).append(b)

    def own(self, name: str, line: int) -> Binding | None:
        bs = self.bindings.get(name)
        if not bs:
            return None
        best = None
        for b in bs:
            if b.line < line:
                best = b
        return best if best is not None else bs[-1]

    def lookup(self, name: str, line: int) -> tuple[Binding | None, Scope | None]:
        s: Scope | None = self
        while s is not None:
            if s.kind != "class" or s is self:
                b = s.own(name, line)
                if b is not None:
                    return b, s
            s = s.parent
        s = self
        while s is not None:
            b = s.star(name)
            if b is not None:
                return b, s
            s = s.parent
        return None, None

    def star(self, name: str) -> Binding | None:
        """The binding a star import of this scope gives ``name`` (the last
        star import that exports it), or None."""
        got = self._star_bindings.get(name)
        if got is not None:
            return got
        for mod in reversed(self.star_modules):
            if name in STAR_EXPORTS[mod]:
                got = self._star_bindings[name] = Binding(0, "alias", f"{mod}.{name}")
                return got
        if self.opaque_star and name == "numba":
            # the project's `helpers` may `import numba`; bound nowhere else, `numba.cuda.jit`
            # can only be Numba's (a module's other names stay unknown)
            got = self._star_bindings[name] = Binding(0, "alias", "numba")
            return got
        return None

    def qual(self, node: ast.AST, line: int) -> str | None:
        """The qualified name an expression stands for (``nc.shared.array`` ->
        ``numba.cuda.shared.array``), or None."""
        if isinstance(node, ast.Name):
            b, _ = self.lookup(node.id, line)
            if b is None:
                return f"builtins.{node.id}" if node.id in BUILTIN_NAMES else None
            if b.kind == "alias":
                return b.value
            return None
        if isinstance(node, ast.Attribute):
            base = self.qual(node.value, line)
            return f"{base}.{node.attr}" if base else None
        return None

    def const_lookup(self, line: int):
        def lookup(name: str) -> Any:
            b, _ = self.lookup(name, line)
            if b is None:
                return UNKNOWN
            if b.kind in ("const", "host"):
                return b.value
            if b.kind == "alias":
                return Alias(b.value)
            return UNKNOWN

        return lookup


@dataclass(eq=False)
class FuncInfo:
    name: str
    node: ast.FunctionDef | ast.AsyncFunctionDef
    scope: Scope  # where it is defined (its free names resolve here)
    kind: str = "plain"  # "kernel" | "device" | "host" | "plain"
    sig: list[tuple[str | None, int]] | None = None  # per parameter: (dtype, ndim)
    ret: str | None = None  # return dtype from the signature
    first_line: int = 0  # first decorator line, or the def line
    params: list[str] = field(default_factory=list)
    defaults: dict[str, ast.expr] = field(default_factory=dict)
    array_params: dict[str, int] = field(default_factory=dict)  # name -> ndim guess
    written_params: set[str] = field(default_factory=set)
    index_params: set[str] = field(default_factory=set)  # integer arrays: `index_arrays.index_params`
    locals: set[str] = field(default_factory=set)
    multi: set[str] = field(default_factory=set)  # names assigned more than once, or in a loop
    calls: list[tuple[ast.Call, list[tuple[int | str, str]]]] = field(default_factory=list)
    has_varargs: bool = False
    body_scope: Scope | None = None  # names bound inside it (for nested kernels)
    source: Any = None  # the `finder.Source` of its file (a module it was imported from: `siblings`)

    @property
    def line(self) -> int:
        return self.node.lineno


@dataclass
class ExternInfo:
    """``f = cuda.declare_device("name", sig)``: a foreign device function."""

    name: str
    line: int


_NOT_BOUND = ("staticmethod", "classmethod")
_MAX_BASES = 8  # classes of the file searched for a method, the class itself and its bases


def self_method(scope: Scope, node: ast.expr, line: int) -> FuncInfo | None:
    """``self.name`` read in a method whose first parameter is ``self``: the
    method ``name`` of its class (or of a base class of the file), bound to
    the instance; None for anything else (a ``@staticmethod`` has no
    ``self``, an attribute the class does not define is not followed)."""
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
        return None
    b, s = scope.lookup(node.value.id, line)
    if b is None or s is None or s.kind != "function" or s.parent is None or s.parent.kind != "class":
        return None
    fn = s.node
    positional = list(fn.args.posonlyargs) + list(fn.args.args)
    if not positional or positional[0].arg != node.value.id or b.line != fn.lineno:
        return None
    if any(isinstance(d, ast.Name) and d.id in _NOT_BOUND for d in fn.decorator_list):
        return None
    todo, seen = [s.parent], 0
    while todo and seen < _MAX_BASES:
        cls = todo.pop(0)
        seen += 1
        m = cls.own(node.attr, 1 << 30)
        if m is not None:
            return m.value if m.kind == "func" and isinstance(m.value, FuncInfo) else None
        for base in getattr(cls.node, "bases", ()):
            if isinstance(base, ast.Name) and cls.parent is not None:
                bb, _ = cls.parent.lookup(base.id, cls.node.lineno)
                if bb is not None and bb.kind == "class":
                    todo.append(bb.value)
    return None


def walk_body(node: ast.AST) -> tuple[ast.AST, ...]:
    """Every node of a function body, not descending into nested functions,
    classes or lambdas. Walked once per function and kept on its node: the
    finder's passes each read every node of every function (four walks of a
    1,000-line file on each edit in the language server), and nothing
    changes a tree once parsed."""
    got = getattr(node, "_tolk_body", None)
    if got is None:
        got = node._tolk_body = tuple(_walk_body(node))  # type: ignore[attr-defined]
    return got


def _walk_body(node: ast.AST):
    stack = list(ast.iter_child_nodes(node))
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(n))
