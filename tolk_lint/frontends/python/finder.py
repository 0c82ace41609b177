"""Finding the kernels of a Python file, and what its names mean.

One walk over the module (stdlib `ast`, never importing or running it)
builds a `Scope` per module / function / class body (`scope`): what each
name is bound to and from which line (an import alias, a constant value, a
function, or something unknown, with the expression it came from). Names are
resolved to *qualified* names through those bindings (``from numba import
cuda as nc`` makes ``nc.jit`` mean ``numba.cuda.jit``), so decorators and
intrinsics are recognised under any alias. A name imported from a module
of the project beside the file (``from utils import dot``) is what that
module defines, read by a finder of its own (`siblings`).

Which functions are kernels (``@cuda.jit``, ``cuda.jit(sig)(f)`` anywhere,
through factories, wrappers and partials), device functions
(``device=True``) or host kernels (``@njit``) is decided by `discover`,
following what reaches a jit. A factory parameter found to receive a Numba
module (``make(cuda)``) is bound to it and the module walked again, so the
kernel inside resolves through it. Then, for each function, the pre-scan
records which parameters are arrays (subscripted, ``.shape`` read, handed to
an atomic or to a device function that treats them as arrays), their number
of dimensions, and which are written.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from tolk_lint.frontends.python.consts import UNKNOWN, Alias, HostArray, evaluate
from tolk_lint.frontends.python.discover import discover
from tolk_lint.frontends.python.index_arrays import index_params
from tolk_lint.frontends.python.scope import (
    BUILTIN_NAMES,
    Binding,
    ExternInfo,
    Flow,
    FuncInfo,
    Scope,
    walk_body,
)
from tolk_lint.frontends.python.siblings import imported
from tolk_lint.frontends.python.vocabulary import (
    ATOMIC_OPS,
    CUDA,
    DECLARE_DEVICE,
    ENUMERATE,
    MODULE_PARAMETERS,
    STAR_EXPORTS,
    XOROSHIRO_DRAWS,
    ZIP,
    runtime_call,
)
from tolk_lint.ir.nodes import Span

# what the lowering reads from here
__all__ = ["BUILTIN_NAMES", "ExternInfo", "Finder", "FuncInfo", "Scope", "Source"]

_LINE_SPLIT = re.compile(r"\r\n|\r|\n")
# packages never beside a linted file: not looked for (`siblings`)
_NOT_SIBLINGS = frozenset({"numba", "numpy", "math", "cmath", "cupy", "llvmlite", "tolk_lint", "__future__"})
# walks of a module whose factory parameters receive a Numba module found in a walk before
_MAX_WALKS = 3


# -- source positions ----------------------------------------------------------------


class Source:
    """The file's text, and spans of `ast` nodes in 1-based code-point columns
    (`ast` counts UTF-8 bytes from 0)."""

    def __init__(self, text: str, path: str):
        self.text = text
        self.path = path
        self.lines = _LINE_SPLIT.split(text)
        self._cache: dict[ast.AST, tuple[Span, str]] = {}

    def col(self, line: int, byte_offset: int) -> int:
        """1-based character column of a 0-based UTF-8 byte offset."""
        if 1 <= line <= len(self.lines):
            s = self.lines[line - 1]
            if not s.isascii():
                return len(s.encode("utf-8")[:byte_offset].decode("utf-8", errors="replace")) + 1
        return byte_offset + 1

    def line_text(self, line: int) -> str:
        return self.lines[line - 1] if 1 <= line <= len(self.lines) else ""

    def loc(self, node: ast.AST) -> tuple[Span, str]:
        """The span of ``node`` and its (shortened, one-line) source text."""
        got = self._cache.get(node)
        if got is not None:
            return got
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        end_line = getattr(node, "end_lineno", None) or line
        end_col = getattr(node, "end_col_offset", None)
        if end_col is None:
            end_col = len(self.line_text(end_line).encode("utf-8"))
        span = Span(self.path, line, self.col(line, col), end_line, self.col(end_line, end_col))
        first = self.line_text(line)
        if end_line == line:
            text = first[span.column - 1 : span.end_column - 1]
        else:
            text = first[span.column - 1 :].rstrip() + " ..."
        if len(text) > 80:
            text = text[:77] + "..."
        got = (span, text)
        self._cache[node] = got
        return got

    def def_span(self, fn: ast.AST) -> Span:
        """A function's ``def`` line, as far as its text goes (a kernel's `Kernel.span`)."""
        line = fn.lineno  # type: ignore[attr-defined]
        return Span(self.path, line, self.col(line, fn.col_offset), line, len(self.line_text(line).rstrip()) + 1)  # type: ignore[attr-defined]

    def span(self, node: ast.AST) -> Span:
        return self.loc(node)[0]


# -- functions -------------------------------------------------------------------------


class Finder:
    def __init__(self, tree: ast.Module, src: Source, importing: tuple[str, ...] = ()):
        self.src = src
        self._importing = importing  # the modules whose imports led here (`siblings`)
        self.sibling_files: frozenset[str] = frozenset()  # the project's modules read for this one
        seeds: dict[tuple[ast.AST, str], str] = {}
        for _ in range(_MAX_WALKS):
            self._walk(tree, seeds)
            found = discover(tree, self.module, self._by_node, self._class_scopes, self._scopes)
            changed = {k: q for k, q in found.items() if self._parameter_quals.get(k) != q}
            if not changed:
                break
            seeds.update(changed)
        for fi in self.funcs:
            _prescan(fi)
            fi.index_params = _by_text("index_params", self.src, fi.node, frozenset(fi.array_params.items()),
                                       lambda fi=fi: index_params(fi))  # fmt: skip
        self._propagate()

    @classmethod
    def of_module(cls, tree: ast.Module, text: str, path: str, importing: tuple[str, ...]) -> Finder:
        """The finder of a module the linted file imports from (`siblings`)."""
        return cls(tree, Source(text, path), importing)

    # -- the walk ---------------------------------------------------------------------

    def _walk(self, tree: ast.Module, seeds: dict[tuple[ast.AST, str], str]) -> None:
        """Bind every name of the module; ``seeds``: the Numba module or jit
        a factory's parameter receives (function node, parameter name)."""
        self._seeds = seeds
        self.module = Scope(None, "module", tree)
        self.funcs: list[FuncInfo] = []
        self._by_node: dict[ast.AST, FuncInfo] = {}
        self._class_scopes: dict[ast.AST, Scope] = {}
        self._scopes: list[Scope] = [self.module]
        self._parameter_quals: dict[tuple[ast.AST, str], str] = {}
        self._collect(tree.body, self.module, conditional=False)

    def _collect(self, stmts: list[ast.stmt], scope: Scope, conditional: bool) -> None:
        for st in stmts:
            self._stmt(st, scope, conditional)

    def _stmt(self, st: ast.stmt, scope: Scope, conditional: bool) -> None:
        line = st.lineno
        if isinstance(st, ast.Import):
            for a in st.names:
                if a.asname:
                    scope.bind(a.asname, Binding(line, "alias", a.name))
                else:
                    top = a.name.split(".", 1)[0]
                    scope.bind(top, Binding(line, "alias", top))
        elif isinstance(st, ast.ImportFrom):
            mod = st.module or ""
            for a in st.names:
                if a.name == "*":
                    if not st.level and mod in STAR_EXPORTS:
                        scope.star_modules.append(mod)
                    else:
                        scope.opaque_star = True
                    continue
                name = a.asname or a.name
                b = self._from_sibling(mod, st.level, a.name) if scope is self.module else None
                if b is not None:
                    scope.bind(name, Binding(line, b.kind, b.value))
                elif st.level:
                    scope.bind(name, Binding(line, "unknown"))
                else:
                    scope.bind(name, Binding(line, "alias", f"{mod}.{a.name}" if mod else a.name))
        elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            fi = self._function(st, scope)
            scope.bind(st.name, Binding(line, "func", fi))
        elif isinstance(st, ast.ClassDef):
            body = Scope(scope, "class", st)
            self._class_scopes[st] = body
            self._scopes.append(body)
            scope.bind(st.name, Binding(line, "class", body))
            self._collect(st.body, body, conditional)
        elif isinstance(st, ast.Assign):
            for t in st.targets:
                self._assign(t, st.value, scope, line, conditional)
        elif isinstance(st, ast.AnnAssign):
            if st.value is not None:
                self._assign(st.target, st.value, scope, line, conditional)
        elif isinstance(st, ast.AugAssign):
            if isinstance(st.target, ast.Name):
                old = scope.const_lookup(line)(st.target.id)
                new = evaluate(
                    ast.BinOp(ast.Name(st.target.id), st.op, st.value),
                    lambda n: old if n == st.target.id else scope.const_lookup(line)(n),
                    lambda n: scope.qual(n, line),
                )
                self._bind_value(st.target.id, new, scope, line, conditional)
        elif isinstance(st, ast.If) and self._static_test(st.test, scope, line) is not None:
            # `if config.ENABLE_CUDASIM: ... else: ...`, `if N > 8:`: only the arm taken runs
            taken = self._static_test(st.test, scope, line)
            self._collect(st.body if taken else st.orelse, scope, conditional)
        elif isinstance(st, (ast.If, ast.While)):
            self._collect(st.body, scope, True)
            self._collect(st.orelse, scope, True)
        elif isinstance(st, (ast.For, ast.AsyncFor)):
            for n, index in _target_paths(st.target):
                scope.bind(n, Binding(line, "unknown", Flow(st.iter, True, index, st.end_lineno or line)))
            self._collect(st.body, scope, True)
            self._collect(st.orelse, scope, True)
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            for item in st.items:
                if item.optional_vars is not None:
                    for n in _target_names(item.optional_vars):
                        scope.bind(n, Binding(line, "unknown"))
            self._collect(st.body, scope, conditional)
        elif isinstance(st, ast.Try) or type(st).__name__ == "TryStar":
            # imports in `try:` are the ones in force; `except ImportError:` fallbacks are not
            self._collect(st.body, scope, conditional)
            self._collect(st.orelse, scope, True)
            self._collect(st.finalbody, scope, conditional)
            for h in st.handlers:
                for sub in h.body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self._stmt(sub, scope, True)
        elif isinstance(st, ast.Match):
            for case in st.cases:
                self._collect(case.body, scope, True)

    def _static_test(self, test: ast.expr, scope: Scope, line: int) -> bool | None:
        """Whether an ``if``'s test is true, when it is a constant; else None."""
        v = evaluate(test, scope.const_lookup(line), lambda n: scope.qual(n, line))
        if v is None or isinstance(v, (bool, int, float, str)):
            return bool(v)
        return None

    def _from_sibling(self, module: str, level: int, name: str) -> Binding | None:
        """``from utils import dot``: what the project's module beside the
        file defines ``dot`` as (`siblings`), or None."""
        if not module or module.split(".", 1)[0] in _NOT_SIBLINGS:
            return None
        b, files = imported(Finder, self.src.path, self._importing, module, level, name)
        self.sibling_files |= files
        return b

    def _assign(self, target: ast.expr, value: ast.expr, scope: Scope, line: int, conditional: bool) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, ast.Call):
                if scope.qual(value.func, line) in DECLARE_DEVICE:
                    scope.bind(target.id, Binding(line, "extern", ExternInfo(target.id, line)))
                    return
            v = evaluate(value, scope.const_lookup(line), lambda n: scope.qual(n, line))
            if isinstance(value, ast.Name):
                b, _ = scope.lookup(value.id, line)
                if b is not None and b.kind in ("func", "extern"):
                    scope.bind(target.id, Binding(line, b.kind, b.value))
                    return
            self._bind_value(target.id, v, scope, line, conditional, Flow(value))
        elif isinstance(target, (ast.Tuple, ast.List)):
            if (
                isinstance(value, (ast.Tuple, ast.List))
                and len(value.elts) == len(target.elts)
                and not any(isinstance(e, ast.Starred) for e in target.elts)
            ):
                for t, v in zip(target.elts, value.elts):
                    self._assign(t, v, scope, line, conditional)
                return
            for n, index in _target_paths(target):
                scope.bind(n, Binding(line, "unknown", Flow(value, False, index)))

    def _bind_value(
        self, name: str, v: Any, scope: Scope, line: int, conditional: bool, flow: Flow | None = None
    ) -> None:
        if isinstance(v, Alias):
            scope.bind(name, Binding(line, "alias", v.qual))
        elif isinstance(v, HostArray) and not conditional:
            scope.bind(name, Binding(line, "host", v))  # its shape folds (`consts`); read in a kernel, unknown
        elif v is UNKNOWN or conditional or v is None or isinstance(v, str) or isinstance(v, HostArray):
            scope.bind(name, Binding(line, "unknown", flow))
        else:
            scope.bind(name, Binding(line, "const", v))

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: Scope) -> FuncInfo:
        fi = FuncInfo(node.name, node, scope, source=self.src)
        fi.first_line = min([d.lineno for d in node.decorator_list] + [node.lineno])
        a = node.args
        pos = list(a.posonlyargs) + list(a.args)
        fi.params = [p.arg for p in pos] + [p.arg for p in a.kwonlyargs]
        for p, d in zip(pos[len(pos) - len(a.defaults) :], a.defaults):
            fi.defaults[p.arg] = d
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            if d is not None:
                fi.defaults[p.arg] = d
        fi.has_varargs = a.vararg is not None or a.kwarg is not None
        self.funcs.append(fi)
        self._by_node[node] = fi
        body = Scope(scope, "function", node)
        self._scopes.append(body)
        for p in fi.params + [x.arg for x in (a.vararg, a.kwarg) if x is not None]:
            qual = self._seeds.get((node, p)) or _module_parameter(p, fi.defaults.get(p), scope, node.lineno)
            if qual is not None:
                self._parameter_quals[(node, p)] = qual
                body.bind(p, Binding(node.lineno, "alias", qual))
            else:
                body.bind(p, Binding(node.lineno, "unknown"))
        fi.locals = _by_text("locals", self.src, node, (), lambda: _assigned_names(node)) | set(fi.params)
        fi.multi = _by_text("multi", self.src, node, tuple(fi.params), lambda: _multi_assigned(node, fi.params))
        fi.body_scope = body  # constants a factory assigns are seen by its nested kernels
        self._collect(node.body, body, conditional=False)
        return fi

    # -- array parameters through calls ---------------------------------------------------

    def _propagate(self) -> None:
        jitted = [f for f in self.funcs if f.kind != "plain"]
        for _ in range(len(jitted) + 1):
            changed = False
            for fi in jitted:
                for call, args in fi.calls:
                    callee = self.resolve_call(fi, call)
                    if callee is None:
                        continue
                    for slot, pname in args:
                        if isinstance(slot, int):
                            if slot >= len(callee.params):
                                continue
                            cparam = callee.params[slot]
                        else:
                            cparam = slot
                        if cparam in callee.array_params:
                            nd = callee.array_params[cparam]
                            if fi.array_params.get(pname, -1) < nd:
                                fi.array_params[pname] = nd
                                changed = True
                        if cparam in callee.written_params and pname not in fi.written_params:
                            fi.written_params.add(pname)
                            changed = True
                        # the argument of a parameter the callee indexes by: an integer array too
                        if cparam in callee.index_params and pname not in fi.index_params:
                            fi.index_params.add(pname)
                            changed = True
            if not changed:
                break

    def resolve_call(self, fi: FuncInfo, call: ast.Call) -> FuncInfo | None:
        if not isinstance(call.func, ast.Name):
            return None
        scope = fi.body_scope or fi.scope
        if call.func.id in fi.locals:
            return None
        b, _ = scope.lookup(call.func.id, fi.line)
        if b is not None and b.kind == "func" and b.value.kind != "plain":
            return b.value
        return None

    def kernels(self) -> list[FuncInfo]:
        return [f for f in self.funcs if f.kind in ("kernel", "host")]

    def devices(self) -> list[FuncInfo]:
        return [f for f in self.funcs if f.kind == "device"]


# -- pre-scan of a function body -------------------------------------------------------------

_ARRAY_ATTRS = frozenset({"shape", "size", "ndim", "strides", "T", "dtype", "itemsize", "nbytes"})


def _module_parameter(name: str, default: ast.expr | None, scope: Scope, line: int) -> str | None:
    """``def make(cuda):``: the module a parameter of that name stands for,
    unless its default says otherwise."""
    qual = MODULE_PARAMETERS.get(name)
    if qual is None or default is None:
        return qual
    return qual if scope.qual(default, line) == qual else None


def _target_paths(t: ast.expr, index: tuple[int, ...] = ()) -> list[tuple[str, tuple[int, ...]]]:
    """The names an assignment or loop target binds, each with where it sits
    in the value (``a, (b, c) = ...``: b at (1, 0)); under a starred name no
    position is known."""
    if isinstance(t, ast.Name):
        return [(t.id, index)]
    if isinstance(t, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in t.elts):
        return [p for i, e in enumerate(t.elts) for p in _target_paths(e, index + (i,))]
    return [(n, (-1,)) for n in _target_names(t)]


# Per-function facts that depend on the function's text alone, kept across
# the lints of one process: the language server lints a file again at every
# edit, and most of its functions are as they were (on a 1,000-line file,
# 33 of the finder's 50 ms per edit).
_BY_TEXT: dict[tuple, frozenset] = {}
_BY_TEXT_MAX = 8192


def _by_text(kind: str, src: Source, node: ast.AST, extra, compute) -> set[str]:
    """``compute()`` (a set of names) for the function ``node``, remembered
    by its source lines and ``extra`` (what else it reads); a fresh set."""
    key = (kind, "\n".join(src.lines[node.lineno - 1 : node.end_lineno]), extra)
    got = _BY_TEXT.get(key)
    if got is None:
        if len(_BY_TEXT) >= _BY_TEXT_MAX:
            _BY_TEXT.clear()
        got = _BY_TEXT[key] = frozenset(compute())
    return set(got)


def _target_names(t: ast.expr) -> list[str]:
    out = []
    for n in ast.walk(t):
        if isinstance(n, ast.Name):
            out.append(n.id)
    return out


def _assigned_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The function's local names (Python's rule: assigned anywhere in the
    body, and not declared ``global``/``nonlocal``)."""
    out: set[str] = set()
    declared: set[str] = set()
    for n in walk_body(fn):
        if isinstance(n, ast.Name):
            if isinstance(n.ctx, (ast.Store, ast.Del)):
                out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                out.add(a.asname or a.name.split(".", 1)[0])
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            declared.update(n.names)
    return out - declared


def _multi_assigned(fn: ast.FunctionDef | ast.AsyncFunctionDef, params: list[str]) -> set[str]:
    """Names that may hold more than one value: stored more than once
    (a parameter counts as one store), stored inside a loop, augmented, or a
    loop target. The others are single-assignment: a constant stays one."""
    counts: dict[str, int] = {p: 1 for p in params}
    multi: set[str] = set()

    def visit(node: ast.AST, in_loop: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            loop = in_loop or isinstance(node, (ast.For, ast.AsyncFor, ast.While))
            if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
                counts[child.id] = counts.get(child.id, 0) + 1
                if loop:
                    multi.add(child.id)
            elif isinstance(child, ast.AugAssign) and isinstance(child.target, ast.Name):
                multi.add(child.target.id)
            elif isinstance(child, (ast.For, ast.AsyncFor, ast.comprehension)):
                for n in ast.walk(child.target):
                    if isinstance(n, ast.Name):
                        multi.add(n.id)
            visit(child, loop)

    visit(fn, False)
    return multi | {n for n, c in counts.items() if c > 1}


# A NumPy array has at most 64 dimensions (NumPy 2; 32 before).
MAX_ARRAY_DIMS = 64


def _note_copy_arrays(call: ast.Call, params: set[str], note, written: set[str]) -> None:
    """``cp_async(dst, dst_index, src, src_index, ...)`` of tolk_lint.runtime:
    its ``dst`` and ``src`` are arrays of as many dimensions as their indices
    have items (the destination is written)."""
    named = dict(enumerate(call.args))
    named.update({kw.arg: kw.value for kw in call.keywords if kw.arg})
    for pos, key, ipos, ikey in ((0, "dst", 1, "dst_index"), (2, "src", 3, "src_index")):
        arr = named.get(pos, named.get(key))
        if not isinstance(arr, ast.Name) or arr.id not in params:
            continue
        index = named.get(ipos, named.get(ikey))
        note(arr.id, len(index.elts) if isinstance(index, ast.Tuple) else 1)
        if key == "dst":
            written.add(arr.id)


def _param_aliases(fi: FuncInfo) -> dict[str, set[str]]:
    """The local names assigned a parameter (``data = buf_0``, ``src, dst =
    dst, src``), each with the parameters it may hold."""
    direct: dict[str, set[str]] = {}
    for n in walk_body(fi.node):
        if not isinstance(n, ast.Assign):
            continue
        for t in n.targets:
            pairs = [(t, n.value)]
            if isinstance(t, (ast.Tuple, ast.List)) and isinstance(n.value, (ast.Tuple, ast.List)):
                pairs = list(zip(t.elts, n.value.elts)) if len(t.elts) == len(n.value.elts) else []
            for a, b in pairs:
                if isinstance(a, ast.Name) and isinstance(b, ast.Name) and a.id != b.id:
                    direct.setdefault(a.id, set()).add(b.id)
    params = set(fi.params)
    out: dict[str, set[str]] = {}
    for name in direct:
        seen, todo, roots = {name}, [name], set()
        while todo:
            x = todo.pop()
            for y in direct.get(x, ()):
                if y in params:
                    roots.add(y)
                if y not in seen:
                    seen.add(y)
                    todo.append(y)
        if roots:
            out[name] = roots
    return out


def _holds(name: str, aliases: dict[str, set[str]], fi: FuncInfo) -> set[str]:
    return aliases.get(name, set()) | ({name} if name in fi.params else set())


def _prescan(fi: FuncInfo) -> None:
    aliases = _param_aliases(fi)
    params = set(fi.params) | set(aliases)  # an alias's uses are its parameters' (folded in below)
    scope = fi.body_scope or fi.scope
    line = fi.line
    arrays = fi.array_params
    written = fi.written_params

    def note(name: str, nd: int) -> None:
        if arrays.get(name, -1) < nd:
            arrays[name] = nd

    for n in walk_body(fi.node):
        if isinstance(n, ast.Subscript):
            depth = 0
            base: ast.expr = n
            while isinstance(base, ast.Subscript):
                sl = base.slice
                if not (isinstance(sl, ast.Constant) and isinstance(sl.value, str)):  # a record's field
                    depth += len(sl.elts) if isinstance(sl, ast.Tuple) else 1
                base = base.value
            if isinstance(base, ast.Name) and base.id in params:
                note(base.id, depth)
                if isinstance(n.ctx, ast.Store):
                    written.add(base.id)
            elif (
                isinstance(base, ast.Attribute)
                and base.attr == "shape"
                and isinstance(base.value, ast.Name)
                and base.value.id in params
            ):
                sl = n.slice
                d = sl.value if isinstance(sl, ast.Constant) and isinstance(sl.value, int) else 0
                if 0 <= d < MAX_ARRAY_DIMS:  # `a.shape[2147483647]` says nothing of `a` (it fails to compile)
                    note(base.value.id, d + 1)
        elif isinstance(n, ast.Attribute) and n.attr in _ARRAY_ATTRS:
            if isinstance(n.value, ast.Name) and n.value.id in params:
                note(n.value.id, 1)
        elif isinstance(n, (ast.For, ast.AsyncFor)):
            todo = [n.iter]  # `for x in a`, and the arrays `enumerate`/`zip` iterate over
            while todo:
                it = todo.pop()
                if isinstance(it, ast.Name) and it.id in params:
                    note(it.id, 1)
                elif isinstance(it, ast.Call) and scope.qual(it.func, line) in (ENUMERATE, ZIP):
                    todo.extend(it.args[:1] if scope.qual(it.func, line) == ENUMERATE else it.args)
        elif isinstance(n, ast.AugAssign):
            base = n.target
            while isinstance(base, ast.Subscript):
                base = base.value
            if isinstance(base, ast.Name) and base.id in params and base is not n.target:
                written.add(base.id)
        elif isinstance(n, ast.Call):
            q = (
                scope.qual(n.func, line)
                if not (isinstance(n.func, ast.Name) and n.func.id in fi.locals)
                else None
            )
            first = n.args[0] if n.args else None
            fname = first.id if isinstance(first, ast.Name) and first.id in params else None
            if q is not None and fname is not None:
                rest = q[len(CUDA) :] if q.startswith(CUDA) else None
                if rest is not None and rest.startswith("atomic.") and rest[7:] in ATOMIC_OPS:
                    note(fname, 1)
                    written.add(fname)
                elif rest in ("ldca", "ldcg", "ldcs", "ldlu", "ldcv", "const.array_like"):
                    note(fname, 1)
                elif rest in ("stcg", "stcs", "stwb", "stwt"):
                    note(fname, 1)
                    written.add(fname)
                elif q == "builtins.len":
                    note(fname, 1)
                elif rest is not None and rest.startswith("random.") and rest[7:] in XOROSHIRO_DRAWS:
                    note(fname, 1)
                    written.add(fname)
            if q is not None and runtime_call(q) in ("cp_async", "cp_async_zfill"):
                _note_copy_arrays(n, params, note, written)
            args: list[tuple[int | str, str]] = []
            for i, a in enumerate(n.args):
                if isinstance(a, ast.Name) and a.id in params:
                    args.extend((i, p) for p in _holds(a.id, aliases, fi))
            for kw in n.keywords:
                if kw.arg and isinstance(kw.value, ast.Name) and kw.value.id in params:
                    args.extend((kw.arg, p) for p in _holds(kw.value.id, aliases, fi))
            if args:
                fi.calls.append((n, args))
    if fi.sig:
        for p, (dt, nd) in zip(fi.params, fi.sig):
            if nd > 0:
                arrays[p] = nd
            elif p in arrays and dt is not None and nd == 0:
                pass
    for name, roots in aliases.items():
        nd = arrays.get(name) if name in fi.params else arrays.pop(name, None)
        w = name in written
        if name not in fi.params:
            written.discard(name)
        for p in roots:
            if nd is not None:
                note(p, nd)
            if w:
                written.add(p)
