"""The Numba Python front end: ``parse_python(text, path) -> ir.Module``.

The file is read as text and parsed with the standard library's `ast`
(never imported, never run): `finder` binds every name (`scope`: what each
is bound to) and `discover` finds the kernels by what reaches a jit
(``@cuda.jit``, ``@cuda.jit(device=True)``, ``@njit``, ``cuda.jit(f)``
anywhere, through aliases, star imports, factories, wrappers and partials),
`lower` turns each into the IR, `vocabulary` says what each Numba / NumPy /
``math`` name means, `consts` folds module constants, and `siblings` reads
(as text too) the modules of the project the file imports device functions
and constants from.

Why `ast` rather than libcst here: the IR needs a span for every expression,
and libcst computes positions with a metadata pass that, with its parser,
costs about 0.6 s for 2,000 lines; `ast` gives positions for free and parses
10x faster. libcst is still what reports a syntax error's expectations
(TL001), and what the fixer uses to rewrite source.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from tolk_lint.diagnostics import Diagnostic, Severity, internal_error
from tolk_lint.ir.nodes import PYTHON_TREE, KernelOutline, Module, Span

__all__ = ["parse_python"]

_MENTIONS = ("numba", "cuda", "njit")

# `parse_python`'s ``reuse``: (module, outlines) -> {kernel name: its front-end diagnostics}
Reuse = Callable[[Module, list[KernelOutline]], dict[str, list[Diagnostic]]]


def parse_python(text: str, path: str, reuse: Reuse | None = None) -> Module:
    """Lower every kernel of a Numba Python file. Never raises: a file that
    does not parse (or nests past the recursion limit) gives one TL001, a
    construct not understood a TL002, a failure of ours a TL004 (an error:
    that kernel is not analysed, and the run says so).

    ``reuse`` (the language server's, `tolk_lint.engine`) is called once
    the finder has read the file, before anything is lowered, with the
    module and the outlines of its kernels and host functions; it returns
    the front-end diagnostics of those it already has the findings of, by
    name. Those are not lowered (they are not in ``Module.kernels``), and
    their diagnostics stand where lowering them would have put its own."""
    mod = Module(path=path, language="python", source=text)
    if not any(m in text for m in _MENTIONS):
        return mod
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as e:
        mod.diagnostics.append(_parse_error(text, path, e))
        return mod
    except RecursionError:
        mod.diagnostics.append(_too_deep(path))
        return mod
    except (ValueError, MemoryError) as e:
        mod.diagnostics.append(_tl001(path, 1, 1, 2, f"cannot parse the file: {e}"))
        return mod
    mod.cached(PYTHON_TREE, lambda _mod: tree)  # the kernel cache reads its functions' lines from it
    try:
        _lower_module(mod, tree, text, path, reuse)
    except RecursionError:
        mod.kernels.clear()
        mod.functions.clear()
        mod.diagnostics[:] = [_too_deep(path)]
    return mod


def _too_deep(path: str) -> Diagnostic:
    """TL001 for a file nested deeper than the lint's stack (`tolk_lint.deep`)."""
    from tolk_lint.deep import RECURSION_LIMIT

    return _tl001(path, 1, 1, 2, f"cannot read the file: it nests too deeply (past {RECURSION_LIMIT:,} "
                                 "levels of recursion); nothing in it was analysed")


def _lower_module(mod: Module, tree: ast.Module, text: str, path: str, reuse: Reuse | None = None) -> None:
    from tolk_lint.frontends.python.finder import Finder, Source
    from tolk_lint.frontends.python.lower import ModuleCtx, lower_function

    src = Source(text, path)
    try:
        finder = Finder(tree, src)
    except RecursionError:
        raise  # too deep: TL001 (parse_python)
    except Exception as e:  # noqa: BLE001 - never raise on user input
        mod.diagnostics.append(internal_error("while reading the file", e, Span(path, 1, 1, 1, 2)))
        return
    # the project's modules it imports from, read as text (`siblings`): the caches look at them too
    mod.files.update(enumerate(sorted(finder.sibling_files), start=1))
    ctx = ModuleCtx(src, finder)
    # kernels first: a construct inside a device function is reported for the
    # kernel that inlines it, and for the function itself only when no kernel did
    ordered = [f for f in finder.funcs if f.kind in ("kernel", "host")]
    ordered += [f for f in finder.funcs if f.kind == "device"]
    kept: dict[str, list[Diagnostic]] = {}
    if reuse is not None:
        kept = reuse(mod, [KernelOutline(fi.name, src.def_span(fi.node), fi.kind == "host")
                           for fi in ordered if fi.kind != "device"])  # fmt: skip
    lowered: dict = {}  # FuncInfo -> its kernel
    for fi in ordered:
        if fi.kind != "device" and fi.name in kept:
            ctx.diagnostics.extend(kept[fi.name])
            continue
        try:
            k = lower_function(ctx, fi, standalone_device=fi.kind == "device")
        except RecursionError:
            raise  # too deep: TL001 (parse_python)
        except Exception as e:  # noqa: BLE001 - one broken kernel must not hide the others
            line = fi.node.lineno
            where = f"while lowering `{fi.name}`"
            mod.diagnostics.append(internal_error(where, e, Span(path, line, 1, line, 2), fi.name))
            continue
        if fi.kind == "device":
            mod.functions[fi.name] = k
        else:
            mod.kernels.append(k)
            lowered[fi] = k
    _attach_call_sites(mod, tree, finder, lowered)
    seen: set[tuple] = set()
    places: set[tuple] = set()
    for d in ctx.diagnostics:
        place = (d.code, d.span.line, d.span.column, d.message)
        standalone = id(d) in ctx.from_functions
        if standalone and place in places:
            continue
        key = place + (d.kernel,)
        if key in seen:
            continue
        seen.add(key)
        places.add(place)
        mod.diagnostics.append(d)
    mod.diagnostics.sort(key=lambda d: d.sort_key())


def _attach_call_sites(mod: Module, tree: ast.Module, finder, lowered: dict) -> None:
    """The launch shapes the module's own call sites give each kernel, put
    before its launch comment in ``launch.found`` (`tolk_lint.launch`)."""
    if not any(fi.kind == "kernel" for fi in lowered):
        return
    from tolk_lint.launch.python_calls import call_site_shapes

    try:
        sites = call_site_shapes(tree, finder, mod.path)
    except RecursionError:
        return
    for fi, shapes in sites.items():
        k = lowered.get(fi)
        if k is not None and not k.host:
            k.launch.found = tuple(shapes) + tuple(k.launch.found)


def _tl001(path: str, line: int, col: int, end_col: int, message: str) -> Diagnostic:
    return Diagnostic(
        code="TL001",
        severity=Severity.ERROR,
        message=message,
        span=Span(path, line, col, line, end_col),
        name="parse-error",
    )


_TOKEN = re.compile(r"\w+|\S")


def _parse_error(text: str, path: str, e: SyntaxError) -> Diagnostic:
    """TL001 at the position `ast` reports (1-based line and column), with
    what was found there and, from libcst's parser, what was expected."""
    lines = text.splitlines() or [""]
    line = max(1, min(e.lineno or 1, len(lines)))
    src_line = lines[line - 1] if line - 1 < len(lines) else ""
    col = max(1, e.offset or 1)
    col = min(col, len(src_line) + 1)
    m = _TOKEN.search(src_line, col - 1) if col - 1 <= len(src_line) else None
    found = m.group(0) if m and m.start() == col - 1 else None
    if found is None and col - 1 >= len(src_line.rstrip()):
        found = "end of line"
    end_col = col + (len(found) if found and found != "end of line" else 1)
    msg = f"cannot parse the file: {e.msg}"
    if found:
        msg += f" (found `{found}`)" if found != "end of line" else " (found the end of the line)"
    expected = _libcst_expected(text, line)
    if expected:
        msg += f"; expected {expected}"
    return _tl001(path, line, col, end_col, msg)


def _libcst_expected(text: str, line: int) -> str | None:
    try:
        import libcst
    except ImportError:  # pragma: no cover - libcst is a dependency
        return None
    try:
        libcst.parse_module(text)
    except libcst.ParserSyntaxError as e:
        m = re.search(r"error at (\d+):\d+: (expected .*)$", e.message)
        if m and int(m.group(1)) == line:
            return m.group(2)[len("expected ") :]
    except Exception:  # noqa: BLE001
        return None
    return None
