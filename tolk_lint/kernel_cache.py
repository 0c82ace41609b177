"""Per-kernel reuse of findings for the language server: `KernelCache`.

An edited document is linted again on every change; the kernels the edit
did not touch keep their findings. A kernel's key hashes what its findings
depend on (`KernelCache`'s docstring says what that is); `kernel_units`
cuts the file into the kernels' text and the code around them.

A PTX file read kernel by kernel is keyed from its text alone
(`KernelCache.ptx_keys`): an ``.entry`` whose key is there is not even
parsed, and its record (`ReadKernel`) gives back what reading it reported
too.

What it may import: the IR, the settings, the diagnostics, the tool's
fingerprint, and (when keying a PTX file) the files a PTX result depends on
(`tolk_lint.suppress.origin_dependencies`,
`tolk_lint.launch.choose.source_paths`). `tolk_lint.engine` imports it.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import math
import os
import re
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tolk_lint.config import Settings
from tolk_lint.diagnostics import Diagnostic
from tolk_lint.fingerprint import tool_fingerprint
from tolk_lint.ir.nodes import PYTHON_TREE, Kernel, KernelOutline, Module
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.frontends.ptx.split import FunctionText
    from tolk_lint.frontends.ptx.stream import PtxStream

log = logging.getLogger("tolk_lint")


@dataclass
class ReadKernel:
    """What the lint of one PTX ``.entry`` gave, kept under its text key:
    the rules' findings, what reading it reported (front-end diagnostics),
    and its outline (None when it could not be lowered)."""

    findings: list[Diagnostic]
    front_end: list[Diagnostic]
    outline: KernelOutline | None


class KernelCache:
    """Findings per kernel, in memory, for re-linting an edited document (the
    language server): the kernels an edit did not touch are not analysed
    again.

    A kernel's key hashes the tool's fingerprint, the settings, the path, the
    kernel's own text *and its first line* (a kernel moved by lines inserted
    above it is a miss: its diagnostics, and the line numbers their messages
    quote, would be stale), its target and launch after `prepare`, and the
    file's *surroundings*: every line of code outside the cached kernels
    (module constants, device functions, ``.func`` bodies and host functions,
    which kernels inline; each kernel's decorators and ``def`` line; the PTX
    header), with its line number down to the last line the kernel's IR
    comes from (`ir_reach`: the kernel itself, and the device functions it
    inlines), without it below. Blank and comment-only lines outside the
    kernels are not part of it (the comment lines right above a Python
    kernel are part of that kernel: its ``tolk: launch`` comment). So an
    edit inside one kernel re-lints that kernel, plus, when it adds or
    removes lines, the kernels below it and those that inline code below
    it; an edit to the code around the kernels re-lints them all. Kernels
    the surroundings cannot be split from (a kernel nested in another
    statement or naming another kernel, two of one name, a PTX file with
    ``/* */`` comments) are always linted.
    noqa comments are applied after, on the whole file, so they never make a
    stale entry. Results holding a TL004 are never kept, nor a TL005 unless
    the kernel had all the time a lint gives it (`tolk_lint.engine.keepable`).
    """

    def __init__(self) -> None:
        # path -> {key: findings} of the latest lint of that path: what an edit
        # of the document can reuse (older versions are dropped, so memory
        # stays at the open documents' current findings)
        self.entries: dict[str, dict[str, list[Diagnostic] | ReadKernel]] = {}
        self.hits = 0
        self.misses = 0
        self._shas: dict[str, tuple[tuple[int, int], str | None]] = {}  # path -> ((mtime, size), its sha)

    def keys(self, module: Module, settings: Settings, outline: Sequence[KernelOutline] | None = None
             ) -> Callable[[Kernel], str | None]:  # fmt: skip
        """The key of each kernel of ``module`` (None for one that cannot be
        cached). The kernels are ``module.kernels``, or, when the module is
        linted kernel by kernel (`tolk_lint.frontends.ptx.stream`), those
        ``outline`` names: each kernel is keyed when it has been read and
        prepared, with the key it would have with all of them in memory."""
        units, context = _units(module, outline)
        if not units:
            return lambda k: None
        base = _base(module, settings)

        def key(k: Kernel) -> str | None:
            unit = units.get(k.name)
            if unit is None:
                return None
            first, last, text = unit
            own = f"\0{k.name}\0{first}\0{k.target}\0{k.host}\0{k.launch!r}\0{text}\0"
            return _digest(base, own, context, max(last, ir_reach(k, module)))

        return key

    def ptx_keys(self, stream: PtxStream, settings: Settings) -> Callable[[FunctionText], str | None]:
        """The key of each ``.entry`` of a PTX file read kernel by kernel
        (`stream`), from the text alone, before the entry is parsed (None
        for one that cannot be cached). It hashes what the IR-based key
        (`keys`) does, with what the kernel's IR would say read from the
        text instead: the target is the file's (``.target``, in the
        surroundings, or the settings'); the launch shapes come from the
        settings, the entry's own text (``.reqntid``, ``.maxntid``), the
        comment lines right above it (a ``tolk: launch`` comment; every
        line since the function before it counts) and the CUDA sources
        (the content of every file the ``.file`` table names and of the
        ``.cu`` the shapes are read from); the lines the IR reaches
        (`ir_reach`) are the entry's and every declaration's outside the
        functions, or all of them when the entry holds a ``call`` (it
        inlines, or its analyses read, a ``.func`` body wherever it is).
        The names of all functions count too: a body may name one."""
        module = stream.module
        units, context = _units(module, stream.outline)
        if not units:
            return lambda ft: None
        from tolk_lint.launch.choose import source_paths
        from tolk_lint.suppress import origin_dependencies

        base = _base(module, settings)
        for dep in sorted(set(origin_dependencies(module)) | {os.path.abspath(p) for p in source_paths(module)}):
            base.update(f"{dep}\0{self._sha(dep)}\0".encode("utf-8", "surrogateescape"))
        base.update(repr(sorted(f.name for f in stream.functions)).encode("utf-8", "surrogateescape"))
        in_functions = set()
        for f in stream.functions:
            in_functions.update(range(f.line, f.end_line + 1))
        last_declaration = max((ln for ln, _ in context if ln not in in_functions), default=0)
        lines = module.lines()
        after: dict[str, int] = {}  # entry -> the last line of the function before it
        end = 0
        for f in stream.functions:
            after.setdefault(f.name, end)
            end = f.end_line

        def key(ft: FunctionText) -> str | None:
            unit = units.get(ft.name)
            if unit is None or ft.kind != "entry":
                return None
            first, last, text = unit
            reach = math.inf if _PTX_CALL.search(text) else max(last, last_declaration)
            above = "\n".join(lines[after.get(ft.name, 0) : first - 1])
            own = f"\0{ft.name}\0{first}\0{ft.line}\0{ft.column}\0{above}\0{text}\0"
            return "ptx:" + _digest(base, own, context, reach)

        return key

    def python_keys(self, module: Module, settings: Settings, outline: Sequence[KernelOutline]
                    ) -> Callable[[KernelOutline], str | None]:  # fmt: skip
        """The key of each kernel of a Python file (``outline``: the
        kernels and host functions the finder found) from the file's text,
        before any is lowered: a kernel whose key is kept is not lowered at
        all. It hashes what the IR-based key (`keys`) does, read from the
        text instead: the launch comes from the kernel's own lines, the call
        sites around it and the settings; the lines the IR reaches are the
        kernel's and those of every top-level statement it names, followed
        through the names those statements name in turn (`python_reach`:
        the device functions it inlines, the aliases and factories they go
        through), or all of them when the file imports from the project's
        other modules (their functions' calls are placed on lines here).
        The content of those modules counts too."""
        units, context = _units(module, outline)
        if not units:
            return lambda o: None
        reach_of = python_reach(module)
        base = _base(module, settings)
        for dep in sorted(module.files.values()):
            base.update(f"{dep}\0{self._sha(os.path.abspath(dep))}\0".encode("utf-8", "surrogateescape"))

        def key(o: KernelOutline) -> str | None:
            unit = units.get(o.name)
            if unit is None:
                return None
            first, last, text = unit
            reach = math.inf if module.files else max(last, reach_of(o.name))
            return "py:" + _digest(base, f"\0{o.name}\0{first}\0{o.host}\0{text}\0", context, reach)

        return key

    def _sha(self, path: str) -> str | None:
        """The sha of the file ``path`` (None when unreadable), read again only when its mtime or size changed."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        got = self._shas.get(path)
        if got is not None and got[0] == stamp:
            return got[1]
        try:
            with open(path, "rb") as f:
                sha: str | None = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            sha = None
        self._shas[path] = (stamp, sha)
        return sha

    def get(self, path: str, key: str) -> list[Diagnostic] | ReadKernel | None:
        got = self.entries.get(path, {}).get(key)
        if got is None:
            self.misses += 1
            return None
        self.hits += 1
        return copy.deepcopy(got)

    def store(self, path: str, found: dict[str, list[Diagnostic] | ReadKernel], complete: bool = True) -> None:
        """What the lint of ``path`` found, per key: replaces the path's
        entries, or, from a lint that stopped before it saw every kernel
        (``complete`` false: cancelled, or out of budget while reading),
        is added to them (the kernels it did not reach keep theirs)."""
        kept = {key: copy.deepcopy(v) for key, v in found.items()}
        self.entries[path] = kept if complete else {**self.entries.get(path, {}), **kept}

    def forget_stops(self, path: str, reason: str | None = None) -> None:
        """Drop ``path``'s kept budget stops (TL005; with ``reason``, those
        stopped for that reason only): the next lint analyses those kernels again."""
        def stopped(v) -> bool:
            return any(d.code == "TL005" and (reason is None or (d.data or {}).get("reason") == reason)
                       for d in (v.findings if isinstance(v, ReadKernel) else v))  # fmt: skip

        entries = self.entries.get(path)
        if entries:
            self.entries[path] = {k: v for k, v in entries.items() if not stopped(v)}

    def forget(self, path: str) -> None:
        self.entries.pop(path, None)

    def clear(self) -> None:
        self.entries.clear()


class PythonReuse:
    """`tolk_lint.frontends.python.parse_python`'s ``reuse`` for a lint
    through ``cache``: each kernel's text key (`KernelCache.python_keys`),
    the records of the kernels whose key is kept (not lowered again), and
    what this lint keeps (`KernelCache.store`, by the engine)."""

    def __init__(self, cache: KernelCache, path: str, settings: Settings):
        self.cache, self.path, self.settings = cache, path, settings
        self.keys: dict[str, str] = {}  # kernel name -> its key
        self.hits: dict[str, ReadKernel] = {}  # kernel name -> what an earlier lint kept
        self.kept: dict[str, list[Diagnostic] | ReadKernel] = {}  # key -> this lint's record
        self.outline: list[KernelOutline] = []

    def __call__(self, module: Module, outline: list[KernelOutline]) -> dict[str, list[Diagnostic]]:
        self.outline = outline
        key = self.cache.python_keys(module, self.settings, outline)
        for o in outline:
            k = key(o)
            if k is None:
                continue
            self.keys[o.name] = k
            got = self.cache.get(self.path, k)
            if isinstance(got, ReadKernel):
                self.hits[o.name] = got
                self.kept[k] = got
        return {name: got.front_end for name, got in self.hits.items()}


def _units(module: Module, outline=None) -> tuple[dict[str, tuple[int, int, str]], list[tuple[int, str]]]:
    """`kernel_units`, or none when it fails (a lint never fails over the cache)."""
    try:
        return kernel_units(module, outline)
    except Exception:  # noqa: BLE001
        log.debug("kernel_units failed on %s:\n%s", module.path, traceback.format_exc())
        return {}, []


def _digest(base, own: str, context: list[tuple[int, str]], reach: float) -> str:
    """``base`` updated with a kernel's own part and the code around it: below
    what the kernel reaches, the code counts but not where it is."""
    h = base.copy()
    h.update(own.encode("utf-8", "surrogateescape"))
    for line, code in context:
        h.update(f"{line if line <= reach else ''}:{code}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _base(module: Module, settings: Settings):
    """The hash every key of ``module``'s kernels starts from."""
    base = hashlib.sha256()
    for part in (tool_fingerprint(), settings.fingerprint(), module.path, module.language,
                 str(module.target), repr(sorted(module.files.items()))):  # fmt: skip
        base.update(part.encode("utf-8", "surrogateescape") + b"\0")
    return base


# A call instruction (`call.uni`, `call (%r), f, ...`): the entry's IR reaches a `.func` body.
_PTX_CALL = re.compile(r"(?<![\w$.%])call(?![\w$])")


def ir_reach(k: Kernel, module: Module) -> float:
    """The last line of the linted file that ``k``'s IR comes from (its
    instructions, with the origins of inlined code, and its buffers): the
    analyses see nothing below it, so where the code below sits cannot
    change the kernel's findings. Infinite when the kernel calls a function
    (the analyses read the callee's body, wherever it is) or has an origin
    in a file named otherwise."""
    top = k.span.line if k.span is not None else 0

    def spans():
        yield k.span, k.origin
        for b in k.buffers.values():
            yield b.span, b.origin
        for ins in k.instrs():
            yield ins.span, ins.origin

    calls = any(ins.op is Opcode.CALL for ins in k.instrs())
    if calls:
        return math.inf
    for span, origin in spans():
        if span is not None:
            if span.path != module.path:
                return math.inf
            top = max(top, span.line, span.end_line or 0)
        o = origin
        while o is not None:
            if o.path == module.path:
                top = max(top, o.line)
            elif module.language != "ptx":  # a PTX origin names the CUDA C file, never this one
                return math.inf
            o = o.inlined_at
    return top


_PTX_ENTRY = re.compile(r"^\s*(?:\.(?:visible|weak|extern)\s+)*\.entry\s+([\w$%.]+)")


def kernel_units(module: Module, outline: Sequence[KernelOutline] | None = None
                 ) -> tuple[dict[str, tuple[int, int, str]], list[tuple[int, str]]]:  # fmt: skip
    """The cacheable kernels' text, ``{name: (first line, last line, text)}``,
    and the file's code outside them, ``[(line, text)]`` (see `KernelCache`).
    The kernels are ``outline`` when given, else ``module.kernels``."""
    lines = module.lines()
    if module.language == "ptx":
        spans = _ptx_units(lines)
        marker = "//"
    elif module.language == "python":
        spans = _python_units(module, lines)
        marker = "#"
    else:
        return {}, []
    kernels = module.kernels if outline is None else outline
    count = Counter(k.name for k in kernels)
    inside: set[int] = set()
    units: dict[str, tuple[int, int, str]] = {}
    for k in kernels:
        if k.name not in spans or count[k.name] != 1:
            continue
        first, last, shared, mentions = spans[k.name]
        if any(name in count for name in mentions - {k.name}):
            continue  # it names another kernel (calls it): that kernel's text is part of its result
        if k.span is None or k.span.path != module.path or not first <= k.span.line <= last:
            continue  # not the kernel found there
        units[k.name] = (first, last, "\n".join(lines[first - 1 : last]))
        if not k.host:  # a host function may be inlined by another: its text stays in everyone's key
            inside.update(ln for ln in range(first, last + 1) if ln not in shared)
    context = []
    for ln, text in enumerate(lines, start=1):
        stripped = text.strip()
        if ln in inside or not stripped or stripped.startswith(marker):
            continue
        if marker == "//" and stripped.startswith(".file"):
            continue  # the `.file` table is `module.files`, wherever it sits
        context.append((ln, text))
    return units, context


def _ptx_units(lines: list[str]) -> dict[str, tuple[int, int, set[int], set[str]]]:
    """``.entry`` name -> (first line, last line, lines kept in the
    surroundings, names it mentions): the header through the brace that
    closes the body (entries cannot call entries: no names)."""
    if any("/*" in ln for ln in lines):
        return {}
    out: dict[str, tuple[int, int, set[int], set[str]]] = {}
    seen: set[str] = set()
    i = 0
    while i < len(lines):
        m = _PTX_ENTRY.match(lines[i])
        if not m:
            i += 1
            continue
        name, depth, opened, j = m.group(1), 0, False, i
        while j < len(lines):
            code = lines[j].split("//", 1)[0]
            depth += code.count("{") - code.count("}")
            opened = opened or "{" in code
            if opened and depth <= 0:
                break
            j += 1
        if j >= len(lines) or name in seen:  # unclosed, or a second entry of that name
            seen.add(name)
            out.pop(name, None)
            i = j + 1
            continue
        seen.add(name)
        out[name] = (i + 1, j + 1, set(), set())
        i = j + 1
    return out


def python_reach(module: Module) -> Callable[[str], float]:
    """The last line a Python kernel's IR may come from, by the kernel's
    name, read from the text (`KernelCache.python_keys`): the end of the
    kernel, and of every top-level statement binding a name it reads from
    the module (a device function it inlines, a constant, an alias),
    followed through the names those statements read in turn. A name
    bound twice counts both statements. Over-approximates `ir_reach`."""
    tree = _python_tree(module)
    if tree is None:
        return lambda name: math.inf
    lines = module.lines()
    binders: dict[str, list[tuple[int, frozenset[str]]]] = {}
    for node in tree.body:
        bound, reads = _statement_names(node, lines)
        for name in bound:
            binders.setdefault(name, []).append((node.end_lineno or node.lineno, reads))

    def reach(name: str) -> float:
        top, seen, todo = 0, {name}, [name]
        while todo:
            for last, reads in binders.get(todo.pop(), ()):
                top = max(top, last)
                for n in reads - seen:
                    seen.add(n)
                    todo.append(n)
        return top

    return reach


# What each top-level statement of a Python file binds and reads, remembered
# by its text across the lints of one process (an edit leaves most of them as
# they were; walking them all again was 6 ms of a 1,000-line file's edit).
_STATEMENT_NAMES: dict[tuple[str, int, int | None], tuple[frozenset[str], frozenset[str]]] = {}
_STATEMENT_NAMES_MAX = 8192


def _statement_names(node, lines: list[str]) -> tuple[frozenset[str], frozenset[str]]:
    """(the names the top-level statement ``node`` binds in the module, the
    module names it reads): a function binds its name and reads its
    decorators, defaults and the names its body does not bind itself."""
    key = ("\n".join(lines[node.lineno - 1 : node.end_lineno]), node.col_offset, node.end_col_offset)
    got = _STATEMENT_NAMES.get(key)
    if got is None:
        if len(_STATEMENT_NAMES) >= _STATEMENT_NAMES_MAX:
            _STATEMENT_NAMES.clear()
        got = _STATEMENT_NAMES[key] = _names_of(node)
    return got


def _names_of(node) -> tuple[frozenset[str], frozenset[str]]:
    import ast

    reads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        # its own scope's bindings shadow the module's (not those of scopes nested in it,
        # nor names it declares global): what is left is read from the module
        local: set[str] = set()
        declared: set[str] = set()
        if not isinstance(node, ast.ClassDef):
            a = node.args
            local.update(p.arg for p in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if p is not None)
        todo = list(node.body)
        while todo:
            n = todo.pop()
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                local.add(n.name)
                continue
            if isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                continue
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                local.add(n.id)
            elif isinstance(n, (ast.Global, ast.Nonlocal)):
                declared.update(n.names)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                local.update((a.asname or a.name).split(".")[0] for a in n.names)
            todo.extend(ast.iter_child_nodes(n))
        return frozenset({node.name}), frozenset(reads - (local - declared))
    bound = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    for n in ast.walk(node):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in n.names if a.name != "*")
    return frozenset(bound), frozenset(reads)


def _python_tree(module: Module):
    """The module's `ast` tree, the one the front end parsed (`PYTHON_TREE`); None when it does not parse."""
    import ast

    def parse(_module):
        try:
            return ast.parse(module.source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None

    return module.cached(PYTHON_TREE, parse)


def _python_units(module: Module, lines: list[str]) -> dict[str, tuple[int, int, set[int], set[str]]]:
    """Top-level functions: name -> (first line, last line, the decorator and
    ``def`` lines, which stay in the surroundings since the finder reads them
    for every function, the names its body mentions). A function starts at
    the comment lines right above its decorators (a kernel's launch
    comment). The tree is the one the front end parsed (`PYTHON_TREE`)."""
    import ast

    tree = _python_tree(module)
    if tree is None:
        return {}
    out: dict[str, tuple[int, int, set[int], set[str]]] = {}
    seen: set[str] = set()
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if node.name in seen:  # defined twice: which one is the kernel is not ours to guess
            out.pop(node.name, None)
            continue
        seen.add(node.name)
        header = min([d.lineno for d in node.decorator_list] + [node.lineno])
        first = header
        while first > 1 and lines[first - 2].strip().startswith("#"):
            first -= 1
        last = node.end_lineno or node.lineno
        mentions = set(_statement_names(node, lines)[1])
        out[node.name] = (first, last, set(range(header, node.lineno + 1)), mentions)
    return out
