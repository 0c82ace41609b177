"""Reading a PTX file one kernel at a time: what the lint of a large file
holds is one kernel's IR, not the IR of all of them.

A 50 MB PTX file holds thousands of kernels. `parse_ptx` reads it whole
(the parse of every function, then the IR of every function), which takes
gigabytes; the analyses look at one kernel at a time anyway. `open_ptx`
reads what every kernel needs, once:

1. the text with its comments blanked (`source`), and where each function
   is in it (`split.find_functions`);
2. the declarations between the functions (``.version``, ``.target``, the
   ``.file`` table, which nvcc writes at the end, module-level variables,
   ``.func`` prototypes), each stretch parsed alone (`parser.parse_slice`);
3. every ``.func`` with a body, parsed and lowered: the kernels that call
   one inline its body (`tolk_lint.ir.inline`), and the analyses look into
   the others (``Module.functions``). They are few next to the kernels.

`PtxStream.kernels` then parses, lowers and inlines one ``.entry`` at a
time, in file order, and hands it over; the caller lints it and lets it go
before asking for the next. Each piece goes through the same steps as in
`lower.lower_module` (`declarations`, `lower_function`, `inline_calls`), so
each kernel is the one `parse_ptx` makes, and each front-end diagnostic the
one it reports: `PtxStream.finish` puts them back in file order.

Any piece that does not parse (or parses to something the split did not
predict) raises `NotStreamable`, and so does a file that does not split:
the caller then reads the file whole with `parse_ptx`, whose TL001 is the
one to report (a syntax error anywhere means no kernel is analysed). A file
with a syntax error in its last kernel is thus read twice; a file without
one, once.

What it may import: `parser`, `source`, `split`, `tree`, `lower`,
`tolk_lint.ir` and `tolk_lint.diagnostics`. Only `tolk_lint.engine` imports it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from dataclasses import dataclass, field

from tolk_lint.diagnostics import Diagnostic
from tolk_lint.ir.inline import inline_calls
from tolk_lint.ir.nodes import Buffer, Kernel, KernelOutline, Module, Span

from .lower import declarations, lower_function
from .parser import SLICES, parse_slice, ptx_file, starts_with_version
from .source import strip_comments
from .split import FunctionText, NoFunctions, find_functions
from .tree import FuncDecl, PtxFile


class NotStreamable(Exception):
    """The file cannot be read kernel by kernel: read it whole (`parse_ptx`)."""


@dataclass
class PtxStream:
    """A PTX file being read kernel by kernel (see the module docstring).

    ``module`` has the file's text, ``.file`` table, ``.target`` and device
    functions from the start; its ``kernels`` stay empty (each is handed
    over by `kernels` instead), its ``diagnostics`` grow as the kernels are
    read. ``outline`` names every ``.entry`` before any is read (the
    language server's kernel cache keys each kernel by the others' places);
    ``functions`` every function definition, ``.func`` and ``.entry``, in
    file order. An entry is read by `read` (what `kernels` does for each),
    or, when the caller has what reading it gave from an earlier lint, not
    read at all: `reuse` puts its diagnostics back in their place."""

    module: Module
    outline: list[KernelOutline]
    pf: PtxFile
    entries: list[FunctionText]
    buffers: dict[str, Buffer]
    names: set[str]
    functions: list[FunctionText] = field(default_factory=list)
    reading: FunctionText | None = None  # the entry being read now (where a budget stop is reported)
    # (offset of a function, its first diagnostic, past its last): the file order `finish` restores
    _diagnostics_of: list[tuple[int, int, int]] = field(default_factory=list)

    def kernels(self) -> Iterator[Kernel]:
        """Each ``.entry`` with a body, read, lowered and its calls inlined,
        in file order. Raises `NotStreamable` at a piece that does not
        parse; one that cannot be lowered is a diagnostic, and skipped."""
        for ft in self.entries:
            k = self.read(ft)
            if k is not None:
                yield k
            del k  # before the next one is read: the caller has let it go
        self.reading = None

    def read(self, ft: FunctionText) -> Kernel | None:
        """The entry ``ft`` read, lowered and its calls inlined (None: it
        could not be lowered, and a diagnostic says why). Raises
        `NotStreamable` when it does not parse."""
        self.reading = ft
        with _collector_off():
            k = self._lower(_parse_function(self.pf.clean, ft), ft)
            if k is not None:
                inline_calls(k, self.module.functions)
        return k

    def front_end_of(self, ft: FunctionText) -> list[Diagnostic]:
        """What reading the entry ``ft`` reported: it must be the last one `read`."""
        start, a, b = self._diagnostics_of[-1]
        assert start == ft.start, "front_end_of asks for the entry read last"
        return list(self.module.diagnostics[a:b])

    def reuse(self, ft: FunctionText, front_end: list[Diagnostic]) -> None:
        """The entry ``ft`` is not read: what reading it reported in an
        earlier lint takes its place among the module's diagnostics."""
        first = len(self.module.diagnostics)
        self.module.diagnostics.extend(front_end)
        self._diagnostics_of.append((ft.start, first, len(self.module.diagnostics)))

    def finish(self) -> Module:
        """The module, once every kernel was read: its diagnostics in file
        order (as `parse_ptx` gives them), and no IR left in it."""
        mod = self.module
        found = mod.diagnostics
        mod.diagnostics = [d for _, a, b in sorted(self._diagnostics_of) for d in found[a:b]]
        for f in mod.functions.values():
            f.release()
        mod.functions = {}
        self.pf = PtxFile()
        return mod

    def _lower(self, fd: FuncDecl, where: FunctionText) -> Kernel | None:
        first = len(self.module.diagnostics)
        k = lower_function(fd, self.pf, self.module, self.buffers, self.names)
        self._diagnostics_of.append((where.start, first, len(self.module.diagnostics)))
        return k


def open_ptx(text: str, path: str) -> PtxStream:
    """Read what every kernel of the PTX ``text`` needs (see the module
    docstring). Raises `NotStreamable` when the file must be read whole."""
    if not SLICES:
        raise NotStreamable("this lark has no TextSlice")
    with _collector_off():
        clean = strip_comments(text)
        try:
            functions = find_functions(clean)
        except NoFunctions as e:
            raise NotStreamable(str(e)) from None
        items = _declarations(clean, functions)
        if not starts_with_version(items):
            raise NotStreamable("no `.version` first")
        pf = ptx_file(items, clean)
        buffers, names = declarations(items, path)
        names.update(f.name for f in functions)
        mod = Module(path=path, language="ptx", source=text, files=dict(pf.files), target=pf.target)
        outline = [KernelOutline(f.name, Span(path, f.line, f.column, f.name_line, f.name_end_column))
                   for f in functions if f.kind == "entry"]  # fmt: skip
        stream = PtxStream(mod, outline, pf, [f for f in functions if f.kind == "entry"], buffers, names, functions)
        for f in functions:
            if f.kind == "func":
                k = stream._lower(_parse_function(clean, f), f)
                if k is not None:
                    mod.functions[k.name] = k
    return stream


def _declarations(clean: str, functions: list[FunctionText]) -> list:
    """The items of the text around the functions, each stretch parsed alone."""
    items: list = []
    pos, line, column = 0, 1, 1
    for f in [*functions, None]:
        end = f.start if f is not None else len(clean)
        if clean[pos:end].strip():
            got = _parse(clean, pos, end, line, column)
            if any(isinstance(it, FuncDecl) and it.body is not None for it in got):
                raise NotStreamable("a function the split did not find")
            items += got
        if f is not None:
            pos, line, column = f.end, f.end_line, f.end_column
    return items


def _parse_function(clean: str, f: FunctionText) -> FuncDecl:
    got = _parse(clean, f.start, f.end, f.line, f.column)
    fd = got[0] if len(got) == 1 else None
    if not (isinstance(fd, FuncDecl) and fd.body is not None and (fd.kind, fd.name, fd.line, fd.column)
            == (f.kind, f.name, f.line, f.column)):  # fmt: skip
        raise NotStreamable(f"the piece at line {f.line} is not the function `{f.name}`")
    return fd


def _parse(clean: str, start: int, end: int, line: int, column: int) -> list:
    try:
        return parse_slice(clean, start, end, line, column)
    except Exception as e:  # noqa: BLE001 - a syntax error, too deep, a bug: the whole file says which
        raise NotStreamable(f"the piece at line {line} does not parse: {type(e).__name__}") from None


@contextlib.contextmanager
def _collector_off():
    """Parsing and lowering allocate many small objects that all stay alive
    while the piece is read: the cyclic collector would scan them again and
    again (see `lower.parse_ptx`). It runs again between pieces, when the
    kernel linted before is garbage."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
