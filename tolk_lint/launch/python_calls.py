"""The launch shapes a Numba module's own call sites give its kernels.

``kernel[grid, block](...)`` and ``kernel[grid, block, stream, shmem]``
(called or not: subscripting a kernel *is* configuring its launch), with
the kernel found through the discovery's bindings (`discover.Discovery`
evaluates the expression: a name bound to a kernel, a factory's result, a
loop over kernels; a subscript or attribute through what the module stores
into it, ``KERNELS["scale"] = cuda.jit(f)``), and the block read as a constant: a
literal, a module constant, a local assigned a tuple of constants
(``threadsperblock = (TPB, TPB)``, also under ``if __name__ ==
"__main__":``), or each element of a literal tuple a ``for`` runs over.

``kernel.forall(n)`` launches one-dimensional blocks whose size Numba's
occupancy calculator picks (``cuDriverGetMaxPotentialBlockSize`` with a
1024-thread limit): any size from 1 to 1024 threads, depending on the
kernel's registers and shared memory and on the GPU. It gives no exact
block, so it is a `Contract` of every one-dimensional block
(``family="flat"``): a kernel launched that way must be right for all of
them, and no narrower contract is inferred for it. ``kernel.forall(n,
tpb=128)`` is the exact block (128, 1, 1).

A helper function or a method called through ``self`` that launches its
parameter launches the kernels its calls pass (`_Helpers`, `_Methods`).

A call's constant integer arguments (``kernel[1, 512](out, inp, 512)``)
are facts about the kernel's parameters for the launch (`arguments`).

A call site whose block is not a constant (a function parameter, a value
computed at run time) gives no shape (it is kept as an `UNREAD` one, which
TL205's message names); the kernel is then linted under the shapes the
other sites give, or under the next source (`choose`).
"""

from __future__ import annotations

import ast
from typing import Any

from tolk_lint.frontends.python.consts import UNKNOWN, Alias, HostArray, evaluate
from tolk_lint.frontends.python.discover import Compiled, Ctx, Discovery, Fn
from tolk_lint.frontends.python.scope import Flow, FuncInfo, Scope, self_method
from tolk_lint.frontends.python.vocabulary import CUDA_JIT
from tolk_lint.launch.arguments import ArgFact, hull
from tolk_lint.launch.c_types import INT64
from tolk_lint.launch.shapes import (
    MAX_GRID,
    MAX_THREADS,
    UNREAD,
    Contract,
    GridRange,
    LaunchShape,
    as_grid,
    grid_hull,
    valid_block,
)

_MAX_DEPTH = 8  # names followed through other names' assignments
_MAX_VALUES = 8  # shapes one block expression may stand for (a loop over sizes)


def call_site_shapes(tree: ast.Module, finder: Any, path: str) -> dict[FuncInfo, list[LaunchShape]]:
    """Kernel (its `FuncInfo`) -> the shapes its call sites in the module
    give, in source order (one per distinct block, naming every site)."""
    d = Discovery(finder._by_node, finder._class_scopes)
    nodes = list(_nodes_with_scopes(tree, finder))
    stores = _stores(nodes)
    calls = {id(n.func): n for n, _s in nodes if isinstance(n, ast.Call) and isinstance(n.func, (ast.Subscript, ast.Name))}
    helpers = _Helpers(d, finder._by_node, nodes, calls, stores)
    methods = _Methods(d, finder._by_node, nodes, stores)
    found: dict[FuncInfo, list[tuple]] = {}  # fi -> (block or Contract, line, what, argument facts, grid)
    for node, scope in nodes:
        if isinstance(node, ast.Subscript):
            kernels = _kernels(d, node.value, scope, node.lineno, stores) or helpers.kernels(node.value, scope)
            if not kernels:  # a method launching its parameter: a launch at each of its calls
                for fi, block, line, facts, grid in methods.launches(node, scope):
                    found.setdefault(fi, []).append((block, line, "call site", facts, grid))
                continue
            blocks = _blocks_of_config(node.slice, scope, node.lineno)
            grid = _grid_of_config(node.slice, scope, node.lineno)
            call = calls.get(id(node))
            for block in blocks or [None]:  # None: a site whose block is not a constant
                for fi in kernels:
                    facts = _argument_facts(fi, call, scope) if call is not None else {}
                    found.setdefault(fi, []).append((block, node.lineno, "call site", facts, grid))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "forall":
            kernels = _kernels(d, node.func.value, scope, node.lineno, stores)
            if not kernels:
                continue
            tpb = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "tpb"), None)
            if tpb is None:
                launches: list[Any] = [Contract((MAX_THREADS, 1, 1), MAX_THREADS, "flat")]
            else:
                launches = list(_block_values(tpb, scope, node.lineno))
                if not launches and _is_zero(tpb, scope, node.lineno):
                    launches = [Contract((MAX_THREADS, 1, 1), MAX_THREADS, "flat")]
            for launch in launches or [None]:
                for fi in kernels:  # the grid: Numba's, from n and the block
                    found.setdefault(fi, []).append((launch, node.lineno, "forall", {}, None))
    return {fi: _shapes(sites, path) for fi, sites in found.items()}


def _shapes(sites: list[tuple], path: str) -> list[LaunchShape]:
    """One shape per distinct launch, its source naming every site, with
    what every site's arguments fix (`arguments.hull`) and the grids they
    launch (`shapes.grid_hull`)."""
    by_launch: dict[Any, list[tuple[int, str]]] = {}
    facts: dict[Any, list[dict]] = {}
    grids: dict[Any, list] = {}
    for launch, line, what, fixed, grid in sites:
        by_launch.setdefault(launch, []).append((line, what))
        facts.setdefault(launch, []).append(fixed)
        grids.setdefault(launch, []).append(grid)
    out = []
    for launch, where in by_launch.items():
        fixed = hull(facts[launch])
        lines = sorted({ln for ln, _ in where})
        if all(w == "forall" for _, w in where):
            src = f"`.forall(...)` at line{'s' if len(lines) > 1 else ''} {_and(lines)}"
            if isinstance(launch, Contract):
                src += " (Numba's occupancy calculator picks the block size: any of 1 to 1024 threads)"
        else:
            src = f"the call site{'s' if len(lines) > 1 else ''} at line{'s' if len(lines) > 1 else ''} {_and(lines)}"
        if launch is None:  # not linted under: said in TL205's message
            out.append(LaunchShape(None, src, UNREAD, path=path, line=lines[0]))
        elif isinstance(launch, Contract):
            out.append(LaunchShape(None, src, "call site", contract=launch, path=path, line=lines[0]))
        else:
            out.append(LaunchShape(launch, src, "call site", path=path, line=lines[0], arguments=fixed,
                                   grid=grid_hull(grids[launch])))  # fmt: skip
    return out


def _argument_facts(fi: FuncInfo, call: ast.Call, scope: Scope) -> dict[int, ArgFact]:
    """What a call ``kernel[grid, block](a, b, 512)`` fixes of the kernel's
    integer parameters: a constant argument (or the few a loop over a
    literal tuple gives it, each listed), as Numba passes a Python int: an int64."""
    if call.keywords or any(isinstance(a, ast.Starred) for a in call.args) or len(call.args) > len(fi.params):
        return {}
    out = {}
    for i, (arg, name) in enumerate(zip(call.args, fi.params)):
        if name in fi.array_params:
            out.update(_shape_facts(i, name, _values(arg, scope, call.lineno, 0)))
            continue
        vals = _values(arg, scope, call.lineno, 0)
        if vals and all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
            lo, hi = min(vals), max(vals)
            listed = tuple(sorted(set(vals))) if len(set(vals)) > 1 else None  # a loop's: only those
            if INT64.lo <= lo <= hi <= INT64.hi:
                out[i] = ArgFact(i, name, lo, hi, INT64, listed)
    return out


def _shape_facts(i: int, name: str, vals: list) -> dict[int, ArgFact]:
    """An array argument the module built with a constant shape (``a =
    np.arange(1024)``, ``cuda.to_device(a)``): its extents, as the kernel's
    ``name.shape[d]`` reads them (keyed by a negative number of their own:
    `choose.use` maps them by name)."""
    shapes = {v.shape for v in vals if isinstance(v, HostArray)}
    if len(shapes) != 1 or len(vals) != 1:
        return {}
    [shape] = shapes
    out = {}
    for d, n in enumerate(shape):
        if isinstance(n, int) and 0 <= n <= INT64.hi:
            key = -(1 + 8 * i + d)
            out[key] = ArgFact(key, f"{name}.shape[{d}]", n, n, INT64)
    return out


def _and(items: list) -> str:
    s = [str(x) for x in items]
    return s[0] if len(s) == 1 else ", ".join(s[:-1]) + " and " + s[-1]


def _nodes_with_scopes(tree: ast.Module, finder: Any):
    """Every node of the module with the scope its names resolve in."""
    stack: list[tuple[ast.AST, Scope]] = [(n, finder.module) for n in reversed(tree.body)]
    while stack:
        node, scope = stack.pop()
        yield node, scope
        inner = scope
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            fi = finder._by_node.get(node)
            if fi is not None and fi.kind != "plain":
                continue  # a kernel's or device function's body launches nothing
            if fi is not None and fi.body_scope is not None:
                inner = fi.body_scope
            for dec in node.decorator_list:
                stack.append((dec, scope))
            stack.extend((st, inner) for st in reversed(node.body))
            continue
        if isinstance(node, ast.ClassDef):
            inner = finder._class_scopes.get(node, scope)
        stack.extend((child, inner) for child in reversed(list(ast.iter_child_nodes(node))))


def _stores(nodes) -> dict[str, list[tuple[ast.expr, Scope, int]]]:
    """What is stored into subscripts and attributes (``cache["k"] =
    cuda.jit(f)``, ``self.kernel = ...``), by the target's text: the
    discovery does not follow a value through them."""
    out: dict[str, list[tuple[ast.expr, Scope, int]]] = {}
    for node, scope in nodes:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, (ast.Subscript, ast.Attribute)):
                    out.setdefault(ast.unparse(t), []).append((node.value, scope, node.lineno))
    return out


def _kernels(d: Discovery, node: ast.expr, scope: Scope, line: int, stores=None) -> list[FuncInfo]:
    """The kernels ``node`` may stand for; a subscript or attribute the
    discovery cannot value, through what is stored into that same text
    (when that is one kernel: ``self.k`` of two classes is none)."""
    if not isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
        return []
    out = _values_kernels(d, node, scope, line)
    if not out and stores and isinstance(node, (ast.Subscript, ast.Attribute)):
        stored = [fi for value, s, ln in stores.get(ast.unparse(node), ()) for fi in _values_kernels(d, value, s, ln)]
        out = list(dict.fromkeys(stored))
        if len(out) > 1:
            return []
    return out


class _Helpers:
    """Kernels passed to a helper that launches its parameter: numba-cuda's
    tests write ``def _run_single_thread(func, arr): func[1, 1, 0, n](arr)``
    and call it ``_run_single_thread(slice_write, arr)``. The parameter
    stands for the kernels every call of the helper in the module passes
    (through helpers of helpers, up to `_MAX_HELPERS`); none when a call
    passes something else or leaves it out, the helper is used other than
    by calls, or the parameter is assigned in its body."""

    def __init__(self, d: Discovery, by_node: dict, nodes: list, calls: dict, stores: dict):
        self.d, self.by_node, self.nodes, self.calls, self.stores = d, by_node, nodes, calls, stores

    def kernels(self, node: ast.expr, scope: Scope, depth: int = 0) -> list[FuncInfo]:
        fdef = scope.node
        if depth >= _MAX_HELPERS or not isinstance(node, ast.Name) or scope.kind != "function" or \
                not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)):  # fmt: skip
            return []
        helper = self.by_node.get(fdef)
        a = fdef.args
        positional = [p.arg for p in a.posonlyargs + a.args]
        if helper is None or helper.kind != "plain" or len(scope.bindings.get(node.id, ())) != 1 or \
                node.id not in positional + [p.arg for p in a.kwonlyargs]:  # fmt: skip
            return []
        out: list[FuncInfo] = []
        for use, s in self.nodes:
            if not isinstance(use, ast.Name) or use.id != fdef.name:
                continue
            b, _ = s.lookup(use.id, use.lineno)
            if b is None or b.kind != "func" or b.value is not helper or isinstance(use.ctx, ast.Store):
                continue
            call = self.calls.get(id(use))
            arg = _argument(call, node.id, positional) if call is not None else None
            if arg is None:
                return []  # the helper passed on as a value, or the parameter left to its default
            got = _kernels(self.d, arg, s, use.lineno, self.stores) or self.kernels(arg, s, depth + 1)
            if not got:
                return []
            out += got
        return list(dict.fromkeys(out))


_MAX_HELPERS = 3


def _argument(call: ast.Call, name: str, positional: list[str]) -> ast.expr | None:
    """The expression ``call`` passes for the parameter ``name``."""
    kw = [k.value for k in call.keywords if k.arg == name]
    if kw:
        return kw[0]
    i = positional.index(name) if name in positional else len(call.args)
    if i < len(call.args) and not any(isinstance(x, ast.Starred) for x in call.args[: i + 1]):
        return call.args[i]
    return None


class _Methods:
    """Kernels passed to a method that launches its parameter: numba-cuda's
    test classes define each kernel in a test method and hand it to a method
    of the class, ``self._test_dynshared_slice(slice_write, arr, expected)``
    with ``def _test_dynshared_slice(self, func, arr, expected): ...
    func[1, 1, 0, nshared](arr)``, or compile it there first,
    ``cuda_func = cuda.jit(sig)(func); cuda_func[nblocks, blksize](...)``.

    Each call of the method is a launch of the kernel it passes, at the
    call's line, and a grid or block written as a parameter of the method
    is what that call passes for it (``self.check_inc_index(ary, idx, c,
    sig, 1, 32, atomic_inc32)``: block (32,1,1)); one it passes no constant
    for is that launch's unread block. The method is followed only when
    every use of its name in the file is a call through ``self`` that
    `scope.self_method` resolves to it, no other ``def`` of the file shares
    its name (an override would take some of those calls), and every call
    passes a kernel; else no call launches anything (never a wrong launch).
    The parameters read are never assigned in the method."""

    def __init__(self, d: Discovery, by_node: dict, nodes: list, stores: dict):
        self.d, self.by_node, self.stores = d, by_node, stores
        self.uses: dict[str, list[tuple[ast.expr, Scope]]] = {}  # every `name` and `x.name`, by name
        self.calls: dict[int, ast.Call] = {}  # a call, by its callee's node
        for n, s in nodes:
            if isinstance(n, ast.Name):
                self.uses.setdefault(n.id, []).append((n, s))
            elif isinstance(n, ast.Attribute):
                self.uses.setdefault(n.attr, []).append((n, s))
            elif isinstance(n, ast.Call):
                self.calls[id(n.func)] = n
        self.defs: dict[str, int] = {}
        for fdef in by_node:
            self.defs[fdef.name] = self.defs.get(fdef.name, 0) + 1

    def launches(self, launch: ast.Subscript, scope: Scope) -> list[tuple]:
        """(kernel, block or None, line, argument facts, grid) for each call
        of the method ``launch`` is in, when it launches its parameter."""
        fdef = scope.node
        in_class = scope.kind == "function" and scope.parent is not None and scope.parent.kind == "class"
        if not in_class or not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)) or fdef.decorator_list:
            return []  # a decorated method may be static, a class method, or wrapped
        method = self.by_node.get(fdef)
        a = fdef.args
        positional = [p.arg for p in a.posonlyargs + a.args]
        if method is None or method.kind != "plain" or len(positional) < 2 or self.defs.get(fdef.name) != 1:
            return []
        params = positional[1:] + [p.arg for p in a.kwonlyargs]  # what a call through `self` passes
        param = self._launched(launch.value, scope, params, launch.lineno)
        calls = self._calls(method, fdef.name)
        if param is None or not calls:
            return []
        launch_call = self.calls.get(id(launch))
        out = []
        for call, s in calls:
            arg = _argument(call, param, positional[1:])
            kernels = _kernels(self.d, arg, s, call.lineno, self.stores) if arg is not None else []
            if not kernels:
                return []  # one call passes something else: none is followed
            config = self._config(launch, scope, params, positional[1:], call, s)
            blocks = [b for v in config[1] for b in [_as_block(v)] if b is not None] if config else []
            grid = grid_hull([as_grid(v) for v in config[0]]) if config else None
            for fi in kernels:
                facts = _argument_facts(fi, launch_call, scope) if launch_call is not None else {}
                out += [(fi, block, call.lineno, facts, grid) for block in blocks or [None]]
        return out

    def _launched(self, node: ast.expr, scope: Scope, params: list[str], line: int) -> str | None:
        """The parameter ``node`` is: itself, or a local the method assigns
        once ``cuda.jit(param)`` or ``cuda.jit(sig)(param)``."""
        if not isinstance(node, ast.Name) or len(scope.bindings.get(node.id, ())) != 1:
            return None
        if node.id in params:
            return node.id
        [b] = scope.bindings[node.id]
        flow = b.value
        if b.kind != "unknown" or not isinstance(flow, Flow) or flow.each or flow.index:
            return None
        call = flow.expr
        if not (isinstance(call, ast.Call) and len(call.args) == 1 and not call.keywords):
            return None
        jit = call.func
        if isinstance(jit, ast.Call):  # `cuda.jit(sig)`: a kernel still, unless `device=True`
            if any(k.arg in (None, "device") for k in jit.keywords):
                return None
            jit = jit.func
        if scope.qual(jit, b.line) not in CUDA_JIT:
            return None
        p = call.args[0]
        if isinstance(p, ast.Name) and p.id in params and len(scope.bindings.get(p.id, ())) == 1:
            return p.id
        return None

    def _calls(self, method: FuncInfo, name: str) -> list[tuple[ast.Call, Scope]]:
        """Every call of ``method``, when every use of its name is one."""
        out = []
        for use, s in self.uses.get(name, ()):
            call = self.calls.get(id(use))
            through_self = isinstance(use, ast.Attribute) and self_method(s, use, use.lineno) is method
            if call is None or not through_self:
                return []  # read as a value, called otherwise, or another thing of that name
            out.append((call, s))
        return out

    def _config(self, launch: ast.Subscript, scope: Scope, params: list[str], positional: list[str],
                call: ast.Call, caller: Scope) -> tuple[list, list] | None:  # fmt: skip
        """The values the launch's grid and block have at this call."""
        sl = launch.slice
        if not (isinstance(sl, ast.Tuple) and len(sl.elts) >= 2):
            return None
        out = []
        for e in sl.elts[:2]:
            if isinstance(e, ast.Name) and e.id in params:
                arg = _argument(call, e.id, positional)
                ok = arg is not None and len(scope.bindings.get(e.id, ())) == 1
                out.append(_values(arg, caller, call.lineno, 0) if ok else [])
            else:
                out.append(_values(e, scope, launch.lineno, 0))
        return out[0], out[1]


def _values_kernels(d: Discovery, node: ast.expr, scope: Scope, line: int) -> list[FuncInfo]:
    try:
        values = d.eval(node, Ctx(scope, line, {}))
    except RecursionError:
        return []
    out = []
    for v in values:
        if isinstance(v, Compiled) and v.kind == "kernel" and v.fi.kind == "kernel":
            out.append(v.fi)
        elif isinstance(v, Fn) and v.fi.kind == "kernel":
            out.append(v.fi)
    return list(dict.fromkeys(out))


def _blocks_of_config(sl: ast.expr, scope: Scope, line: int) -> list[tuple[int, int, int]]:
    """The blocks of a launch configuration ``[grid, block, ...]``."""
    if isinstance(sl, ast.Tuple) and len(sl.elts) >= 2:
        return _block_values(sl.elts[1], scope, line)
    out = []
    for v in _values(sl, scope, line, 0):  # `k[config]` with `config = (grid, block)`
        if isinstance(v, tuple) and len(v) >= 2:
            b = _as_block(v[1])
            if b is not None:
                out.append(b)
    return out


def _grid_of_config(sl: ast.expr, scope: Scope, line: int) -> GridRange | None:
    """The grid of a launch configuration ``[grid, block, ...]``: the
    smallest ranges holding each value it may have (a loop over sizes);
    None when one is not a constant grid."""
    if isinstance(sl, ast.Tuple) and len(sl.elts) >= 2:
        values = _values(sl.elts[0], scope, line, 0)
        if not values:  # not a constant: what its form says
            return _grid_form(sl.elts[0], scope, line)
    else:  # `k[config]` with `config = (grid, block)`
        values = [v[0] for v in _values(sl, scope, line, 0) if isinstance(v, tuple) and len(v) >= 2]
    return grid_hull([as_grid(v) for v in values])


def _grid_form(node: ast.expr, scope: Scope, line: int) -> GridRange | None:
    """A grid whose value is not known, by its form: arithmetic
    (``(n + tpb - 1) // tpb``) or ``math.ceil(...)``/``int(...)`` is an
    integer, one block high and deep; a tuple literal gives each element
    (its value, or any number of blocks) and 1 past them. None otherwise (a
    name may hold a tuple)."""
    def scalar(e: ast.expr) -> bool:
        if isinstance(e, (ast.BinOp, ast.UnaryOp)):
            return True
        return isinstance(e, ast.Call) and ast.unparse(e.func) in ("math.ceil", "ceil", "int", "math.floor")

    def dim(e: ast.expr, d: int) -> tuple[int, int]:
        vs = [v for v in _values(e, scope, line, 0) if isinstance(v, int) and not isinstance(v, bool)]
        if len(vs) == 1 and 1 <= vs[0] <= MAX_GRID[d]:
            return (vs[0], vs[0])
        return (1, MAX_GRID[d])

    if scalar(node):
        return ((1, MAX_GRID[0]), (1, 1), (1, 1))
    if isinstance(node, ast.Tuple) and 1 <= len(node.elts) <= 3 and all(not isinstance(e, ast.Starred) for e in node.elts):
        dims = [dim(e, d) for d, e in enumerate(node.elts)] + [(1, 1)] * (3 - len(node.elts))
        return (dims[0], dims[1], dims[2])
    return None


def _block_values(node: ast.expr, scope: Scope, line: int) -> list[tuple[int, int, int]]:
    return [b for v in _values(node, scope, line, 0) for b in [_as_block(v)] if b is not None]


def _is_zero(node: ast.expr, scope: Scope, line: int) -> bool:
    return _values(node, scope, line, 0) == [0]


def _as_block(v: Any) -> tuple[int, int, int] | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        v = (v,)
    if not isinstance(v, tuple) or not 1 <= len(v) <= 3 or not all(isinstance(x, int) for x in v):
        return None
    dims = tuple(v) + (1,) * (3 - len(v))
    return dims if valid_block(dims) else None  # type: ignore[return-value]


def _values(node: ast.expr, scope: Scope, line: int, depth: int) -> list[Any]:
    """The constant values ``node`` may have at ``line`` (several for a name
    a ``for`` binds to each element of a literal tuple); [] when unknown."""
    if isinstance(node, ast.Name) and depth < _MAX_DEPTH:
        b, s = scope.lookup(node.id, line)
        if b is not None and b.kind == "unknown" and isinstance(b.value, Flow) and s is not None:
            return _flow_values(node.id, b.value, b.line, s, depth, line)
    v = evaluate(node, _lookup(scope, line, depth), lambda n: scope.qual(n, line))
    return [] if v is UNKNOWN or isinstance(v, Alias) else [v]


def _flow_values(name: str, flow: Flow, bound_at: int, scope: Scope, depth: int, line: int) -> list[Any]:
    """The values at ``line`` of a name bound where the finder could not fold
    it: an assignment under a condition, or a loop over a literal tuple. A
    name bound more than once in its scope could hold any of them: unknown,
    but inside the loop that binds it last (``bound_at`` to ``flow.end``),
    it is that loop's element."""
    if len(scope.bindings.get(name, ())) != 1 and not (flow.each and bound_at <= line <= flow.end):
        return []
    if flow.each:
        seqs = _values(flow.expr, scope, bound_at, depth + 1)
        items = [x for seq in seqs if isinstance(seq, (tuple, list)) for x in seq]
    else:
        items = _values(flow.expr, scope, bound_at, depth + 1)
    for i in flow.index:
        items = [x[i] for x in items if isinstance(x, (tuple, list)) and 0 <= i < len(x)]
    return list(dict.fromkeys(items))[:_MAX_VALUES] if all(_hashable(x) for x in items) else []


def _hashable(x: Any) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


def _lookup(scope: Scope, line: int, depth: int):
    base = scope.const_lookup(line)

    def lookup(name: str) -> Any:
        v = base(name)
        if v is not UNKNOWN or depth >= _MAX_DEPTH:
            return v
        got = _values(ast.Name(name), scope, line, depth + 1)
        return got[0] if len(got) == 1 else UNKNOWN

    return lookup
