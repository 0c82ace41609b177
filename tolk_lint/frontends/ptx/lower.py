"""The PTX syntax tree (`parser.parse_tree`) -> the IR (`tolk_lint.ir`).

`parse_ptx` parses and lowers one file and never raises: a syntax error
becomes one TL001 diagnostic (and no kernels), an instruction not modelled
a TL002 warning. `lower_module` records the module's own buffers (the
variables declared outside any function) and its function names
(`declarations`), then lowers one `Kernel` per ``.entry`` and per ``.func``
with a body (`lower_function`, with `function.FunctionLowering`: flatten,
split into blocks, fill); a function that cannot be lowered (a bug of ours)
is reported as TL004, an error, and skipped. Then each kernel's calls are
inlined (`tolk_lint.ir.inline`), so that the analyses see what its ``.func``
callees do. The kernel-by-kernel reading (`stream`) uses the same three
steps, one function at a time.
The module keeps the file table of ``.file`` and the ``.target``.

Operand conventions follow the docstring of `tolk_lint.ir.opcodes`. Anything
not modelled becomes OPAQUE (results written to its destination registers)
and is reported once per opcode per kernel as TL002.

What it may import: `parser`, `tree`, `errors`, `flatten` (`buffer_of`), `function`,
`tolk_lint.diagnostics`, `tolk_lint.deep` (its recursion limit) and `tolk_lint.ir`. The package's
``__init__`` and `stream` import it.
"""

from __future__ import annotations

import gc

from tolk_lint.diagnostics import Diagnostic, Severity, internal_error
from tolk_lint.ir.inline import inline_calls
from tolk_lint.ir.nodes import Buffer, Kernel, Module, Span

from .errors import PtxSyntaxError
from .flatten import buffer_of
from .function import FunctionLowering
from .parser import parse_tree
from .tree import FuncDecl, PtxFile


def parse_ptx(text: str, path: str) -> Module:
    """Parse and lower one PTX file. Never raises: syntax errors become one
    TL001 diagnostic (and no kernels), unmodelled instructions TL002."""
    # Parsing and lowering allocate millions of small objects that all stay
    # alive: the cyclic GC would rescan them again and again (it is half the
    # time on big files). Nothing here makes cycles that need collecting early.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse_ptx(text, path)
    finally:
        if enabled:
            gc.enable()


def _parse_ptx(text: str, path: str) -> Module:
    mod = Module(path=path, language="ptx", source=text)
    try:
        pf = parse_tree(text)
    except PtxSyntaxError as e:
        mod.diagnostics.append(_tl001(path, e.message, e.line, e.column, e.end_line, e.end_column))
        return mod
    except RecursionError:
        mod.diagnostics.append(_too_deep(path))
        return mod
    except Exception as e:  # noqa: BLE001 - a bug of ours: TL004, never a traceback
        mod.diagnostics.append(internal_error("while parsing the file", e, Span(path, 1, 1, 1, 2)))
        return mod
    mod.files = dict(pf.files)
    mod.target = pf.target
    lower_module(pf, mod)
    return mod


def _too_deep(path: str, span: Span | None = None) -> Diagnostic:
    """TL001 for what nests deeper than the lint's stack (`tolk_lint.deep`)."""
    from tolk_lint.deep import RECURSION_LIMIT

    span = span or Span(path, 1, 1, 1, 2)
    message = f"cannot read this: it nests too deeply (past {RECURSION_LIMIT:,} levels of recursion); not analysed"
    return _tl001(path, message, span.line, span.column, span.end_line, span.end_column)


def _tl001(path: str, message: str, line: int, col: int, end_line: int | None = None, end_col: int | None = None):
    return Diagnostic(
        code="TL001",
        severity=Severity.ERROR,
        message=message,
        span=Span(path, line, col, end_line if end_line is not None else line, end_col if end_col is not None else col + 1),
        name="parse-error",
    )


def lower_module(pf: PtxFile, mod: Module) -> None:
    buffers, names = declarations(pf.items, mod.path)
    for it in pf.items:
        if not isinstance(it, FuncDecl) or it.body is None:
            continue
        k = lower_function(it, pf, mod, buffers, names)
        if k is None:
            continue
        if it.kind == "entry":
            mod.kernels.append(k)
        else:
            mod.functions[k.name] = k
    # the analyses see one kernel at a time: what its calls do is its own
    for k in mod.kernels:
        inline_calls(k, mod.functions)


def declarations(items: list, path: str) -> tuple[dict[str, Buffer], set[str]]:
    """What every function of the file sees of the module: its buffers (the
    variables declared outside any function, wherever they are in the file)
    and the names of its functions (declared or defined: an operand naming
    one is a function, not a register)."""
    buffers: dict[str, Buffer] = {}
    names: set[str] = set()
    for it in items:
        if isinstance(it, tuple) and it and it[0] == "V":
            d = it[1]
            if d.space in ("global", "shared", "const", "local", "tex"):
                buffers[d.name] = buffer_of(d, path)
        elif isinstance(it, FuncDecl):
            names.add(it.name)
    return buffers, names


def lower_function(
    fd: FuncDecl, pf: PtxFile, mod: Module, buffers: dict[str, Buffer], names: set[str]
) -> Kernel | None:
    """The `Kernel` of one function with a body, or None when it cannot be
    lowered: an instruction ptxas rejects (TL001), nesting past the stack
    (TL001), a bug of ours (TL004), each a diagnostic on ``mod`` for this
    function alone. Its statements are let go once lowered."""
    path = mod.path
    span = Span(path, fd.line, fd.column, fd.end_line, fd.end_column)
    try:
        k = FunctionLowering(fd, pf, mod, buffers, names).lower()
    except RecursionError:
        mod.diagnostics.append(_too_deep(path, span))
        return None
    except PtxSyntaxError as e:  # an instruction ptxas rejects: this function is not PTX
        mod.diagnostics.append(_tl001(path, e.message, e.line, e.column, e.end_line, e.end_column))
        return None
    except Exception as e:  # noqa: BLE001 - a bug of ours: TL004 for this function, the others go on
        mod.diagnostics.append(internal_error(f"while lowering `{fd.name}`", e, span, fd.name))
        return None
    fd.body = None  # the tuples are no longer needed: let them go before the next function
    return k
