"""The values a file's calls give a kernel factory's parameters.

A kernel nested in a function reads that function's parameters as
constants (Numba freezes them when it compiles each kernel the factory
makes). When every call of the factory in the file passes a constant
integer for a parameter (``mean7 = make_rolling_mean(7)``, a default the
calls leave alone), or every call passes a function of the file
(``add_kernel = make_binary_op_kernel(_add)``, or ``self.template(_add)``
calling a method of the class), those are the kernels the
file makes, and the lowering assumes the parameter is one of them, as it
takes the block shape from the file's launches. A call with any other
argument (a variable, ``*args``), or no call at all, leaves the parameter
any value.

Imports: `consts`, `scope`.
"""

from __future__ import annotations

import ast

from tolk_lint.frontends.python.consts import evaluate
from tolk_lint.frontends.python.scope import FuncInfo, Scope, self_method

MAX_VALUES = 16  # constant arguments kept per parameter; more leave it any value


def factory_values(finder, factory: ast.AST, param: str) -> tuple[int, ...] | tuple[FuncInfo, ...] | None:
    """The integers, or the functions of the file, that the file's calls of
    the function ``factory`` (its ``def`` node) pass for ``param``; None
    when a call passes something else, or there is none (see the module's
    docstring)."""
    cache = finder.__dict__.setdefault("_factory_values", {})
    key = (factory, param)
    if key not in cache:
        cache[key] = _values(finder, factory, param)
    return cache[key]


def _values(finder, factory: ast.AST, param: str) -> tuple | None:
    fi: FuncInfo | None = finder._by_node.get(factory)
    if fi is None or fi.has_varargs or param not in fi.params:
        return None
    slot = fi.params.index(param)
    values: list = []
    for call, scope in _calls(finder):
        if isinstance(call.func, ast.Name):
            b, _ = scope.lookup(call.func.id, call.lineno)
            if b is None or b.kind != "func" or b.value is not fi:
                continue
            at = slot
        elif self_method(scope, call.func, call.lineno) is fi:
            at = slot - 1  # ``self.template(math_sin)``: ``self`` is bound already
            if at < 0:
                continue
        else:
            continue
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return None
        given = call.args[at] if at < len(call.args) else None
        given = next((k.value for k in call.keywords if k.arg == param), given)
        given = given if given is not None else fi.defaults.get(param)
        if given is None:
            return None
        if isinstance(given, ast.Name):
            fb, _ = scope.lookup(given.id, call.lineno)
            if fb is not None and fb.kind == "func" and isinstance(fb.value, FuncInfo):
                values.append(fb.value)  # a function of the file
                continue
        v = evaluate(given, scope.const_lookup(call.lineno), lambda n, s=scope, ln=call.lineno: s.qual(n, ln))
        if not isinstance(v, int) or isinstance(v, bool):
            return None
        values.append(v)
    values = list(dict.fromkeys(values))
    kinds = {isinstance(v, int) for v in values}
    return tuple(values) if values and len(values) <= MAX_VALUES and len(kinds) == 1 else None


def _calls(finder) -> list[tuple[ast.Call, Scope]]:
    """Every call of the module, with the scope its names resolve in."""
    cache = finder.__dict__
    if "_module_calls" not in cache:
        out: list[tuple[ast.Call, Scope]] = []
        stack: list[tuple[ast.AST, Scope]] = [(finder.module.node, finder.module)]
        while stack:
            node, scope = stack.pop()
            for child in ast.iter_child_nodes(node):
                inner = scope
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    fi = finder._by_node.get(child)
                    inner = getattr(fi, "body_scope", None) or scope
                if isinstance(child, ast.Call):
                    out.append((child, scope))
                stack.append((child, inner))
        cache["_module_calls"] = out
    return cache["_module_calls"]
