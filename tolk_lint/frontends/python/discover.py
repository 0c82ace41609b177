"""Which functions of a Python file Numba compiles, and as what: kernel
discovery by data flow, not by decorator spelling.

A function is a kernel, a device function or a host kernel when a jit
reaches it, however it gets there: a decorator; a call anywhere in the
module, whatever the result is stored in (``k = cuda.jit(sig)(f)``,
``cache[key] = cuda.jit(f)``, ``self.k = cuda.jit(f)``, ``[cuda.jit(f) for f
in (f1, f2)]``, ``{"add": cuda.jit(add)}``); the module handed to a factory
as a parameter (``def make(cuda): @cuda.jit ...``); a method of the class called through
``self`` (``self.template(math_sin)`` compiling its parameter); a star import; an alias,
``functools.partial(cuda.jit, device=True)``, or the project's own wrapper
(``def jit(f): return cuda.jit(f)``, a decorator factory returning one).

Expressions are evaluated abstractly over the finder's scopes, never run: a
value is a jit with the options bound so far (`Jit`), a function of the file
(`Fn`), a compiled function (`Compiled`), a container (`Items`), a module
path (`Qual`), ...; what cannot be followed has no value. Calling a function
of the file evaluates its ``return`` expressions with its parameters bound
to the arguments. Every call in the module and every decorator stack is
evaluated; each compilation is recorded on the function it reaches, so a
function is found once however many jits reach it.

A function compiled with ``device=True`` is a device function. One also
compiled as a kernel (or as a host kernel) is found once, as the kernel:
lowered as an entry point, it reports everything a standalone lowering of
the device function would. The names bound to its other compilation are
bound to a *twin* `FuncInfo` of that kind (same body, same pre-scan tables),
so a kernel that calls the device compilation inlines it, as it does any
device function.

A factory parameter that receives a Numba module or jit (``make(cuda)``,
``make(cuda.jit)``) is reported as a seed: the finder walks the file again
with the parameter bound to it, so the kernel's decorator and the
intrinsics in its body resolve through it.
"""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass
from typing import Any, Union

from tolk_lint.frontends.python.consts import UNKNOWN, Alias, evaluate
from tolk_lint.frontends.python.scope import BUILTIN_NAMES, Flow, FuncInfo, Scope, self_method, walk_body
from tolk_lint.frontends.python.vocabulary import CUDA_JIT, DTYPE_NAMES, HOST_JIT, PARTIAL, dtype_of_qual

# how far evaluation follows before giving up on a value: evaluations nested in one another, and
# evaluations under bound parameters in all (those are not memoised: a recursive factory repeats)
_MAX_DEPTH = 32
_MAX_STEPS = 50_000
_MAX_BODIES = 2  # bodies of called functions visited for what they compile, one inside the other
_SIG_KEYWORDS = ("func_or_sig", "signature_or_function", "sig")
_KIND_PRIORITY = ("kernel", "host", "device")
_SAME_ITEMS = frozenset(f"builtins.{n}" for n in ("list", "tuple", "set", "sorted", "reversed", "iter"))
_ITERABLES = _SAME_ITEMS | {"builtins.enumerate", "builtins.zip", "builtins.map"}

# -- what an expression may be -----------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Ctx:
    """Where an expression is evaluated: its scope, the line its names are
    looked up at, and the parameters bound by the calls being followed (per
    function body scope; ``None``: comprehension and lambda variables)."""

    scope: Scope
    line: int
    env: dict


@dataclass(frozen=True, eq=False)
class Arg:
    """An expression not evaluated yet, and where it stands."""

    node: ast.expr
    ctx: Ctx


@dataclass(frozen=True, eq=False)
class Known:
    """Values already known (the function a decorator is applied to)."""

    values: tuple


@dataclass(frozen=True, eq=False)
class Each:
    """An element of what ``source`` iterates over, then the ``index``-th
    item of it (``for name, fn in d.items()``: fn is index (1,))."""

    source: Thunk
    index: tuple[int, ...] = ()


Thunk = Union[Arg, Known, Each]


_NOTHING = Known(())


@dataclass(frozen=True)
class Jit:
    """``cuda.jit`` / ``njit`` and the options bound so far. A bare one
    called with a function compiles it, with anything else returns a
    configured one (``cuda.jit("void(f4[:])", device=True)``), which compiles
    the function it is called with."""

    target: str  # "cuda" | "host"
    bare: bool = True
    device: bool = False
    compiles: bool = True  # False: object mode (forceobj=True, nopython=False), not a kernel
    sig: Thunk | None = None
    qual: str | None = None  # its name while nothing is bound (``make(cuda.jit)`` hands it on)


@dataclass(frozen=True, eq=False)
class Fn:
    """A function of the file (its closure: the parameters bound around it)."""

    fi: FuncInfo
    env: dict


@dataclass(frozen=True, eq=False)
class Method:
    """A method of a class of the file read through ``self`` (`scope.self_method`):
    calling it binds ``self`` to what is not followed."""

    fn: Fn


@dataclass(frozen=True, eq=False)
class Lam:
    node: ast.Lambda
    ctx: Ctx


@dataclass(frozen=True)
class Compiled:
    fi: FuncInfo
    kind: str  # "kernel" | "device" | "host"


@dataclass(frozen=True, eq=False)
class Items:
    """A tuple, list, set or dict (``keys``: a dict's, ``items`` its values),
    or what a comprehension builds."""

    items: tuple[Thunk, ...]
    keys: tuple[Thunk, ...] = ()


@dataclass(frozen=True, eq=False)
class Kwargs:
    """``**kw`` inside a function called with keywords it does not name."""

    by_name: dict


@dataclass(frozen=True)
class Qual:
    """A module or one of its attributes (``numba.cuda``)."""

    qual: str


@dataclass(frozen=True, eq=False)
class Cls:
    """A class of the file: calling it runs its ``__init__``."""

    body: Scope


@dataclass
class _CallArgs:
    pos: list
    kw: dict


def _qual_value(q: str) -> Any:
    if q in CUDA_JIT:
        return Jit("cuda", qual=q)
    if q in HOST_JIT:
        return Jit("host", qual=q)
    return Qual(q)


def _unique(values) -> tuple:
    return tuple(dict.fromkeys(values))


# -- the evaluation --------------------------------------------------------------------------------


class Discovery:
    """One pass over a module the finder has walked: every decorator stack
    and every call evaluated, the compilations recorded (`compiled`), and the
    factory parameters that receive a Numba module (`seeds`)."""

    def __init__(self, by_node: dict[ast.AST, FuncInfo], class_scopes: dict[ast.AST, Scope]):
        self.by_node = by_node
        self.class_scopes = class_scopes
        # function -> kind -> the jit that compiles it so (the first one with a signature)
        self.compiled: dict[FuncInfo, dict[str, Jit]] = {}
        self._handed: dict[tuple[ast.AST, str], set[str]] = {}  # parameter -> the Numba names it receives
        self._memo: dict[tuple[int, int, int], tuple] = {}
        self._active: set[tuple[int, int, int]] = set()
        self._decorated: dict[FuncInfo, tuple] = {}
        self._depth = 0
        self._steps = 0
        self._bodies = 0
        self._calling: set[FuncInfo] = set()  # the functions whose call is being followed

    # -- the module's calls and decorators ----------------------------------------------------

    def visit(self, node: ast.AST, scope: Scope, line: int, env: dict) -> None:
        """Evaluate every call under ``node`` (in source order; iteratively: a
        long expression is deep) and every decorator stack."""
        stack = [(node, scope, line, env)]
        while stack:
            node, scope, line, env = stack.pop()
            todo = []  # (children, their scope, env), in source order
            if isinstance(node, ast.stmt):
                line = node.lineno
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                todo.append(
                    (node.args.defaults + [d for d in node.args.kw_defaults if d is not None], scope, env)
                )
                fi = self.by_node.get(node)
                # a jitted body compiles nothing: only the others are read
                if fi is not None and fi.body_scope is not None:
                    if not all(isinstance(v, Compiled) for v in self.decorated(fi)):
                        todo.append((node.body, fi.body_scope, env))
            elif isinstance(node, ast.ClassDef):
                todo.append((node.bases + [k.value for k in node.keywords] + node.decorator_list, scope, env))
                todo.append((node.body, self.class_scopes.get(node, scope), env))
            elif isinstance(node, ast.Lambda):
                names = {a.arg: _NOTHING for a in _all_params(node.args)}
                todo.append(([node.body], scope, _with_locals(env, names)))
            elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                inner = env
                for gen in node.generators:
                    todo.append(([gen.iter], scope, inner))
                    inner = _with_locals(
                        inner, _iteration(gen.target, Arg(gen.iter, Ctx(scope, line, inner)))
                    )
                    todo.append((gen.ifs, scope, inner))
                parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
                todo.append((parts, scope, inner))
            else:
                if isinstance(node, ast.Call):
                    self.eval(node, Ctx(scope, line, env))
                todo.append((list(ast.iter_child_nodes(node)), scope, env))
            for children, s, e in reversed(todo):
                stack.extend((child, s, line, e) for child in reversed(children))

    def decorated(self, fi: FuncInfo) -> tuple:
        """What the def's name is bound to: the function, through its
        decorators from the innermost out. A decorator not understood hands
        the function on (``@staticmethod``, ``@functools.wraps(...)``)."""
        got = self._decorated.get(fi)
        if got is None:
            self._decorated[fi] = ()  # a decorator that reaches its own function
            values: tuple = (Fn(fi, {}),)
            ctx = Ctx(fi.scope, fi.line, {})
            for dec in reversed(fi.node.decorator_list):
                applied = self._apply_all(self.eval(dec, ctx), _CallArgs([Known(values)], {}))
                values = applied or values
            got = self._decorated[fi] = values
        return got

    # -- expressions -----------------------------------------------------------------------------

    def eval(self, node: ast.expr, ctx: Ctx) -> tuple:
        key = (id(node), id(ctx.scope), ctx.line) if not ctx.env else None
        if key is not None:
            got = self._memo.get(key)
            if got is not None:
                return got
            if key in self._active:
                return ()
            self._active.add(key)
        if self._depth > _MAX_DEPTH or (key is None and self._steps > _MAX_STEPS):
            out: tuple = ()
        else:
            self._depth += 1
            self._steps += key is None
            try:
                out = _unique(self._eval(node, ctx))
            finally:
                self._depth -= 1
        if key is not None:
            self._active.discard(key)
            self._memo[key] = out
        return out

    def force(self, t: Thunk) -> tuple:
        if isinstance(t, Arg):
            return self.eval(t.node, t.ctx)
        if isinstance(t, Known):
            return t.values
        out = [v for item in self._elements(self.force(t.source)) for v in self.force(item)]
        for i in t.index:
            out = [
                v
                for x in out
                if isinstance(x, Items) and not x.keys and 0 <= i < len(x.items)
                for v in self.force(x.items[i])
            ]
        return _unique(out)

    def _eval(self, node: ast.expr, ctx: Ctx) -> Any:
        if isinstance(node, ast.Name):
            return self._name(node.id, ctx)
        if isinstance(node, ast.Attribute):
            method = self_method(ctx.scope, node, ctx.line)
            if method is not None:
                return [Method(Fn(method, {}))]
            return [
                _qual_value(f"{v.qual}.{node.attr}")
                for v in self.eval(node.value, ctx)
                if isinstance(v, Qual)
            ]
        if isinstance(node, ast.Call):
            return self._call(node, ctx)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return [Items(tuple(Arg(e, ctx) for e in node.elts if not isinstance(e, ast.Starred)))]
        if isinstance(node, ast.Dict):
            pairs = [(k, v) for k, v in zip(node.keys, node.values) if k is not None]
            return [Items(tuple(Arg(v, ctx) for _, v in pairs), tuple(Arg(k, ctx) for k, _ in pairs))]
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = ctx
            for gen in node.generators:
                inner = Ctx(
                    ctx.scope, ctx.line, _with_locals(inner.env, _iteration(gen.target, Arg(gen.iter, inner)))
                )
            if isinstance(node, ast.DictComp):
                return [Items((Arg(node.value, inner),), (Arg(node.key, inner),))]
            return [Items((Arg(node.elt, inner),))]
        if isinstance(node, ast.Subscript):
            return [v for t in self._items(self.eval(node.value, ctx)) for v in self.force(t)]
        if isinstance(node, ast.Lambda):
            return [Lam(node, ctx)]
        if isinstance(node, ast.IfExp):
            return self.eval(node.body, ctx) + self.eval(node.orelse, ctx)
        if isinstance(node, ast.BoolOp):
            return [v for e in node.values for v in self.eval(e, ctx)]
        if isinstance(node, ast.NamedExpr):
            return self.eval(node.value, ctx)
        return ()

    def _name(self, name: str, ctx: Ctx) -> Any:
        local = ctx.env.get(None)
        if local is not None and name in local:
            return self.force(local[name])
        b, s = ctx.scope.lookup(name, ctx.line)
        if b is None:
            return [Qual(f"builtins.{name}")] if name in BUILTIN_NAMES else ()
        frame = ctx.env.get(s)
        if frame is not None and name in frame:
            return self.force(frame[name])
        if b.kind == "alias":
            return [_qual_value(b.value)]
        if b.kind == "func" and b.value.node not in self.by_node:  # imported from a sibling module
            return [Compiled(b.value, b.value.kind)] if b.value.kind != "plain" else []
        if b.kind == "func":
            return [Fn(v.fi, ctx.env) if isinstance(v, Fn) else v for v in self.decorated(b.value)]
        if b.kind == "class":
            return [Cls(b.value)]
        if b.kind == "unknown" and isinstance(b.value, Flow):
            return self.force(flow_thunk(b.value, Ctx(s, b.line, ctx.env)))
        return ()

    def _elements(self, values) -> list[Thunk]:
        """What iterating over ``values`` gives (a dict: its keys)."""
        return [t for v in values if isinstance(v, Items) for t in (v.keys or v.items)]

    def _items(self, values) -> list[Thunk]:
        """What indexing ``values`` may give (a dict: its values)."""
        return [t for v in values if isinstance(v, Items) for t in v.items]

    # -- calls ------------------------------------------------------------------------------------

    def _call(self, node: ast.Call, ctx: Ctx) -> Any:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("values", "items", "keys") and not node.args:
            return self._dict_view(self.eval(func.value, ctx), func.attr)
        callees = self.eval(func, ctx)
        if not callees:
            return ()
        args = _CallArgs([], {})
        for a in node.args:
            if isinstance(a, ast.Starred):
                spread = self._items(self.eval(a.value, ctx))
                args.pos.extend(spread)
                if not spread:
                    break
            else:
                args.pos.append(Arg(a, ctx))
        for kw in node.keywords:
            if kw.arg is not None:
                args.kw[kw.arg] = Arg(kw.value, ctx)
            else:
                for v in self.eval(kw.value, ctx):
                    if isinstance(v, Kwargs):
                        args.kw.update(v.by_name)
        return self._apply_all(callees, args)

    def _dict_view(self, values, view: str) -> list:
        out = []
        for v in values:
            if isinstance(v, Items) and v.keys:
                if view == "items":
                    pairs = tuple(Known((Items((k, x)),)) for k, x in zip(v.keys, v.items))
                    out.append(Items(pairs))
                else:
                    out.append(Items(v.keys if view == "keys" else v.items))
        return out

    def _apply_all(self, callees, args: _CallArgs) -> tuple:
        return _unique(r for c in callees for r in self._apply(c, args))

    def _apply(self, callee: Any, args: _CallArgs) -> Any:
        if isinstance(callee, Jit):
            return self._jit_call(callee, args)
        if isinstance(callee, Fn):
            return self._call_function(callee, args)
        if isinstance(callee, Method):
            return self._call_function(callee.fn, _CallArgs([_NOTHING] + args.pos, args.kw))
        if isinstance(callee, Lam):
            frame = _bind(callee.node.args, args, callee.ctx)
            env = _with_locals(callee.ctx.env, frame)
            return self.eval(callee.node.body, Ctx(callee.ctx.scope, callee.ctx.line, env))
        if isinstance(callee, Cls):
            b = callee.body.own("__init__", 1 << 30)
            if b is not None and b.kind == "func":
                self._call_function(Fn(b.value, {}), _CallArgs([_NOTHING] + args.pos, args.kw))
            return ()
        if isinstance(callee, Qual) and args.pos:
            return self._builtin(callee.qual, args)
        return ()

    def _builtin(self, qual: str, args: _CallArgs) -> Any:
        if qual not in PARTIAL and qual not in _ITERABLES:
            return ()
        first = self.force(args.pos[0])
        if qual in PARTIAL:
            rest = _CallArgs(args.pos[1:], args.kw)
            return [self._configure(j, rest, keep_bare=True) for j in first if isinstance(j, Jit)]
        if qual in _SAME_ITEMS:
            return [Items(tuple(self._elements(first)))]
        if qual == "builtins.enumerate":
            return [Items(tuple(Known((Items((_NOTHING, t)),)) for t in self._elements(first)))]
        if qual == "builtins.map" and len(args.pos) == 2:
            each = self._elements(self.force(args.pos[1]))
            return [Items(tuple(Known(self._apply_all(first, _CallArgs([t], {}))) for t in each))]
        if qual == "builtins.zip":
            columns = [self._elements(self.force(a)) for a in args.pos]
            return [Items(tuple(Known((Items(tuple(row)),)) for row in zip(*columns)))]
        return ()

    def _jit_call(self, jit: Jit, args: _CallArgs) -> Any:
        if args.pos:
            funcs = _unique(v.fi for v in self.force(args.pos[0]) if isinstance(v, (Fn, Compiled)))
            if funcs:
                if jit.bare:
                    jit = self._configure(jit, _CallArgs(args.pos[1:], args.kw))
                return [c for c in (self._compile(fi, jit) for fi in funcs) if c is not None]
        if not jit.bare:
            return ()
        return [self._configure(jit, args)]

    def _configure(self, jit: Jit, args: _CallArgs, keep_bare: bool = False) -> Jit:
        sig, device, compiles = jit.sig, jit.device, jit.compiles
        if args.pos:
            sig = args.pos[0]
        for name, t in args.kw.items():
            if name == "device":
                device = self.flag(t)
            elif name in _SIG_KEYWORDS and not args.pos:
                sig = t
            elif name == "forceobj" and self.flag(t):
                compiles = False
            elif name == "nopython" and self.const(t) is False:
                compiles = False
        return Jit(jit.target, keep_bare and jit.bare, device, compiles, sig, None)

    def _compile(self, fi: FuncInfo, jit: Jit) -> Compiled | None:
        if not jit.compiles:
            return None
        kind = "host" if jit.target == "host" else "device" if jit.device else "kernel"
        by_kind = self.compiled.setdefault(fi, {})
        if kind not in by_kind or (by_kind[kind].sig is None and jit.sig is not None):
            by_kind[kind] = jit
        return Compiled(fi, kind)

    def _call_function(self, fn: Fn, args: _CallArgs) -> Any:
        fi = fn.fi
        if fi.body_scope is None or fi in self._calling:  # recursion: what it returns is not followed
            return ()
        self._calling.add(fi)
        try:
            return self._run(fn, args)
        finally:
            self._calling.discard(fi)

    def _run(self, fn: Fn, args: _CallArgs) -> list:
        fi = fn.fi
        assert fi.body_scope is not None
        frame = _bind(fi.node.args, args, Ctx(fi.scope, fi.line, fn.env))
        self._seed(fi, frame)
        env = {**fn.env, fi.body_scope: frame}
        if self._bodies < _MAX_BODIES and (args.kw or any(t is not _NOTHING for t in args.pos)):
            # what it compiles on the way (``self.kernel = cuda.jit(fn)`` in ``__init__``)
            self._bodies += 1
            try:
                for st in fi.node.body:
                    self.visit(st, fi.body_scope, st.lineno, env)
            finally:
                self._bodies -= 1
        out: list = []
        for n in walk_body(fi.node):
            if isinstance(n, ast.Return) and n.value is not None:
                out += self.eval(n.value, Ctx(fi.body_scope, n.lineno, env))
        return out

    def _seed(self, fi: FuncInfo, frame: dict[str, Thunk]) -> None:
        """Note what Numba module or bare jit each parameter is handed."""
        for name, t in frame.items():
            if not isinstance(t, Arg):
                continue
            for v in self.force(t):
                q = v.qual if isinstance(v, (Qual, Jit)) else None
                if q is not None and q.split(".", 1)[0] == "numba":
                    self._handed.setdefault((fi.node, name), set()).add(q)

    def seeds(self) -> dict[tuple[ast.AST, str], str]:
        """The parameters every call hands the same Numba module or jit."""
        return {k: next(iter(qs)) for k, qs in self._handed.items() if len(qs) == 1}

    def resolve(self, t: Thunk) -> Thunk:
        """The argument a parameter stands for (``sig`` inside a decorator
        factory: the caller's signature)."""
        for _ in range(_MAX_DEPTH):
            if not (isinstance(t, Arg) and isinstance(t.node, ast.Name)):
                break
            local = t.ctx.env.get(None)
            if local is not None and t.node.id in local:
                t = local[t.node.id]
                continue
            _, s = t.ctx.scope.lookup(t.node.id, t.ctx.line)
            frame = t.ctx.env.get(s)
            if frame is None or t.node.id not in frame:
                break
            t = frame[t.node.id]
        return t

    def flag(self, t: Thunk) -> bool:
        """A keyword's value is known and true (``device=True``, ``device=ON_GPU``)."""
        v = self.const(t)
        return v is not UNKNOWN and not isinstance(v, Alias) and bool(v)

    def const(self, t: Thunk) -> Any:
        t = self.resolve(t)
        if not isinstance(t, Arg):
            return UNKNOWN
        scope, line = t.ctx.scope, t.ctx.line
        return evaluate(t.node, scope.const_lookup(line), lambda n: scope.qual(n, line))


def flow_thunk(flow: Flow, ctx: Ctx) -> Thunk:
    t: Thunk = Arg(flow.expr, ctx)
    if flow.each:
        return Each(t, flow.index)
    if flow.index:
        return Each(Known((Items((t,)),)), flow.index)
    return t


def _all_params(a: ast.arguments) -> list[ast.arg]:
    return list(a.posonlyargs) + list(a.args) + list(a.kwonlyargs)


def _bind(a: ast.arguments, args: _CallArgs, defaults_ctx: Ctx) -> dict[str, Thunk]:
    """The parameters of a call: positional, keyword, ``*args`` / ``**kw``,
    defaults (evaluated where the function is defined)."""
    positional = list(a.posonlyargs) + list(a.args)
    frame: dict[str, Thunk] = {p.arg: t for p, t in zip(positional, args.pos)}
    if a.vararg is not None:
        frame[a.vararg.arg] = Known((Items(tuple(args.pos[len(positional) :])),))
    named = {p.arg for p in positional[len(a.posonlyargs) :]} | {p.arg for p in a.kwonlyargs}
    extra = {}
    for name, t in args.kw.items():
        if name in named and name not in frame:
            frame[name] = t
        else:
            extra[name] = t
    if a.kwarg is not None:
        frame[a.kwarg.arg] = Known((Kwargs(extra),))
    defaults = list(zip(positional[len(positional) - len(a.defaults) :], a.defaults))
    defaults += [(p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
    for p, d in defaults:
        frame.setdefault(p.arg, Arg(d, defaults_ctx))
    for p in _all_params(a):
        frame.setdefault(p.arg, _NOTHING)
    return frame


def _with_locals(env: dict, names: dict[str, Thunk]) -> dict:
    return {**env, None: {**env.get(None, {}), **names}}


def _iteration(target: ast.expr, source: Thunk) -> dict[str, Thunk]:
    """The names a ``for`` target binds, each to its element of ``source``."""
    out: dict[str, Thunk] = {}

    def walk(t: ast.expr, index: tuple[int, ...]) -> None:
        if isinstance(t, ast.Name):
            out[t.id] = Each(source, index)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for i, e in enumerate(t.elts):
                walk(e, index + (i,))
        elif isinstance(t, ast.Starred):
            walk(t.value, index)

    walk(target, ())
    return out


# -- the verdicts --------------------------------------------------------------------------------


def discover(
    tree: ast.Module, module: Scope, by_node: dict[ast.AST, FuncInfo], class_scopes: dict[ast.AST, Scope],
    scopes: list[Scope],
) -> dict[tuple[ast.AST, str], str]:  # fmt: skip
    """Classify every function a jit reaches (``kind``, ``sig``, ``ret``) and
    bind the names of its compilations to it (or to its twin); return the
    seeds found (parameter -> the Numba module or jit it receives)."""
    d = Discovery(by_node, class_scopes)
    for st in tree.body:
        d.visit(st, module, st.lineno, {})
    twins: dict[tuple[FuncInfo, str], FuncInfo] = {}
    for fi, by_kind in d.compiled.items():
        fi.kind = next(k for k in _KIND_PRIORITY if k in by_kind)
        fi.sig, fi.ret = _signature(d, by_kind[fi.kind])
        for kind, jit in by_kind.items():
            if kind != fi.kind:
                sig, ret = _signature(d, jit)
                twins[(fi, kind)] = dataclasses.replace(fi, kind=kind, sig=sig, ret=ret)

    def info(c: Compiled) -> FuncInfo:
        return c.fi if c.fi.kind == c.kind else twins[(c.fi, c.kind)]

    rebind = []
    for scope in scopes:
        for bs in scope.bindings.values():
            for b in bs:
                if b.kind == "func" and isinstance(b.value, FuncInfo) and b.value in d.compiled:
                    values = d.decorated(b.value)
                elif b.kind == "unknown" and isinstance(b.value, Flow):
                    values = d.force(flow_thunk(b.value, Ctx(scope, b.line, {})))
                else:
                    continue
                if values and all(isinstance(v, Compiled) for v in values) and len(values) == 1:
                    rebind.append((b, info(values[0])))
    for b, fi in rebind:
        b.kind, b.value = "func", fi
    return d.seeds()


def _signature(d: Discovery, jit: Jit) -> tuple[list[tuple[str | None, int]] | None, str | None]:
    if jit.sig is None:
        return None, None
    t = d.resolve(jit.sig)
    if not isinstance(t, Arg):
        return None, None
    return parse_signature(t.node, t.ctx.scope, t.ctx.line)


# -- signatures ------------------------------------------------------------------------


def parse_signature(
    node: ast.expr, scope: Scope, line: int
) -> tuple[list[tuple[str | None, int]] | None, str | None]:
    """``"void(float32[:], int32)"``, a list of them (the first counts), or the
    same written with Numba types: per parameter (dtype, ndim), and the
    return dtype."""
    if (
        isinstance(node, (ast.List, ast.Tuple))
        and node.elts
        and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
    ):
        node = node.elts[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value.strip(), mode="eval").body
        except SyntaxError:
            return None, None
        resolve = None
    else:
        resolve = scope
    ret = None
    if isinstance(node, ast.Call):
        ret = _type_of(node.func, resolve, line)[0]
        args = node.args
    elif isinstance(node, ast.Tuple):
        args = node.elts
    else:
        return None, None
    return [_type_of(a, resolve, line) for a in args], ret


def _type_of(node: ast.expr, scope: Scope | None, line: int) -> tuple[str | None, int]:
    if isinstance(node, ast.Subscript):
        dt = _type_of(node.value, scope, line)[0]
        sl = node.slice
        nd = len(sl.elts) if isinstance(sl, ast.Tuple) else 1
        return dt, nd
    if isinstance(node, ast.Call):
        # types.Array(types.float32, 2, "C")
        if (
            isinstance(node.func, (ast.Name, ast.Attribute))
            and _last_name(node.func) == "Array"
            and len(node.args) >= 2
        ):
            dt = _type_of(node.args[0], scope, line)[0]
            nd = (
                node.args[1].value
                if isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, int)
                else 1
            )
            return dt, nd
        return None, 0
    if isinstance(node, (ast.Name, ast.Attribute)):
        if scope is not None:
            q = scope.qual(node, line)
            dt = dtype_of_qual(q) if q else None
            if dt is not None:
                return dt, 0
        return DTYPE_NAMES.get(_last_name(node) or ""), 0
    return None, 0


def _last_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None
