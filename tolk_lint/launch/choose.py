"""Which launch shapes each kernel is linted under, in the order of `PRECEDENCE`.

``--block`` for every kernel; else the kernel's entry in
``[tool.tolk-lint.launch]`` (a PTX entry's mangled name or its source name,
``MatrixMulCUDA`` or ``MatrixMulCUDA<32>``); else what the code says, the
first kind of source that gives any shape:

- Python: the module's call sites (several: each is linted), then the
  ``tolk: launch`` comment (both read by the front end into
  ``launch.found``);
- PTX: ``.reqntid``; the host launches in the CUDA source the ``.file``
  table names (or, without one, the ``.cu`` beside the ``.ptx``); a
  ``tolk: launch`` comment above the kernel in that source or above the
  ``.entry``; Triton's ``.maxntid``; a CUB or Thrust kernel's ``.maxntid``
  (`library`).

A shape that no launch can have (more than 1024 threads) is never chosen.
Nothing found leaves the kernel without a shape: the analyses then assume
any block within ``.maxntid`` (or 1024 threads), and TL205 infers the
contract the kernel needs.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from tolk_lint import budget
from tolk_lint.diagnostics import Diagnostic, Severity
from tolk_lint.ir.nodes import Kernel, Module, Origin
from tolk_lint.launch.comments import comment_above, comment_shape
from tolk_lint.launch.library import library_shape
from tolk_lint.launch.mangled import read_entry
from tolk_lint.launch.shapes import PRECEDENCE, UNREAD, LaunchShape, valid_block
from tolk_lint.launch.source_assumptions import attach as attach_assumptions
from tolk_lint.launch.triton import reqntid_words, triton_shape

if TYPE_CHECKING:  # the CUDA C reader is imported when there is a source to read (`cuda_sources`)
    from tolk_lint.launch.cuda_source import CudaSource

_CUDA_SUFFIXES = (".cu", ".cuh")


def launch_shapes(
    module: Module, settings, kernels: list[Kernel] | None = None
) -> dict[int, list[LaunchShape]]:
    """``id(kernel) -> shapes`` for every kernel of ``module``, or for
    ``kernels`` (a module read kernel by kernel); host kernels: none."""
    sources: list[CudaSource] | None = None
    out: dict[int, list[LaunchShape]] = {}
    for k in module.kernels if kernels is None else kernels:
        if k.host:
            continue
        if module.language == "ptx":
            if sources is None:
                sources = cuda_sources(module)
            _source_facts(module, k, sources)  # whatever gives the shape
        if k.assumptions:
            refuse_impossible(k)
        given = _given(k, settings)
        if given is not None:
            out[id(k)] = [given]
            continue
        found = list(k.launch.found)
        if module.language == "ptx":
            found += ptx_shapes(module, k, sources or [])
        out[id(k)] = first_kind([s for s in found if s.block is None or valid_block(s.block)])
        k.launch.found = tuple(found)  # with what the CUDA source gave: TL205 names the launches it could not read
    return out


def _given(k: Kernel, settings) -> LaunchShape | None:
    """The shape the command line or the configuration gives."""
    if settings.block is not None:
        return LaunchShape(tuple(settings.block), "--block", "--block")  # type: ignore[arg-type]
    names = [k.name]
    if k.language == "ptx":
        e = read_entry(k.name)
        names += [str(e), "::".join(e.parts), e.name]
    for name in dict.fromkeys(names):
        for key, shape in settings.launch:
            if key == name:
                return LaunchShape(tuple(shape), f"the configuration (`{key}` in [tool.tolk-lint.launch])",  # type: ignore[arg-type]
                                   "configuration")  # fmt: skip
    return None


def first_kind(found: list[LaunchShape]) -> list[LaunchShape]:
    """The shapes of the most authoritative kind among ``found``, one per launch."""
    for kind in PRECEDENCE:
        of_kind: list[LaunchShape] = []
        for s in found:
            if s.kind == kind and not any(s.same_launch(o) for o in of_kind):
                of_kind.append(s)
        if of_kind:
            return of_kind
    return []


def ptx_shapes(module: Module, k: Kernel, sources: list[CudaSource]) -> list[LaunchShape]:
    """Every shape the PTX and its CUDA sources give the entry ``k``."""
    out: list[LaunchShape] = []
    if k.launch.reqntid:
        block = (tuple(k.launch.reqntid) + (1, 1, 1))[:3]
        out.append(LaunchShape(block, reqntid_words(module, block), ".reqntid", path=module.path,  # type: ignore[arg-type]
                               line=k.span.line if k.span else None))  # fmt: skip
    entry = read_entry(k.name)
    # the kernel's declaration may be in another source than its launches (a `_kernel.cuh`)
    declared = next((got for src in sources if (got := src.kernel_params(entry, len(k.params)))), ())
    for src in sources:
        out += src.shapes_for(entry, len(k.params), declared, k.launch.max_threads)
        c = src.comment_for(entry)
        if c is not None:
            out.append(c)
    if k.span is not None:
        got = comment_above(module.lines(), k.span.line, "//", skip=_ptx_header)
        if got is not None:
            # named by the file, as the CUDA source's lines are: `k.ptx:9`, not a bare line 9
            c = comment_shape(got[0], got[1], module.path, os.path.basename(module.path))
            if c is not None:
                out.append(c)
    t = triton_shape(module, k)
    if t is not None:
        out.append(t)
    lib = library_shape(module, k)
    if lib is not None:
        out.append(lib)
    return out


def refuse_impossible(k: Kernel) -> None:
    """Drop the ``tolk: assume`` facts that no values satisfy, each with a
    TL002 at its line: assumed, one would make every question UNSAT and the
    kernel look clean (``n < 0 and n > 0``). Once per kernel."""
    if k._cache.get("assumptions_checked"):
        return
    k._cache["assumptions_checked"] = True
    from tolk_lint.analysis.smt.questions import never_holds  # the solver: only for a kernel that assumes

    for fact in list(k.assumptions):
        d = fact.defn
        try:
            if d is None or not never_holds(k, fact):
                continue
        except budget.BudgetExceeded:
            return  # the rest stay: the kernel's own lint runs out of time too, and says so (TL005)
        k.assumptions.remove(fact)
        text = d.text if d.text.startswith("tolk: assume") else f"tolk: assume {d.text}"
        k.diagnostics.append(Diagnostic(
            code="TL002", severity=Severity.WARNING, span=d.span or k.span, kernel=k.name, origin=d.origin,
            name="unsupported-construct",
            message=f"`{text}` is not modelled: no values of the parameters satisfy it; it is ignored",
        ))  # fmt: skip


def _source_facts(module: Module, k: Kernel, sources: list[CudaSource]) -> None:
    """What the CUDA source says of a PTX entry besides its launches: its
    parameters' names, for witnesses (`n = 512`, not `_Z4scanPfS_i_param_2 =
    512`), and the `// tolk: assume EXPR` comments in its body."""
    entry = read_entry(k.name)
    for src in sources:
        for p, (name, int_type) in zip(k.params, src.kernel_params(entry, len(k.params))):
            p.label = p.label or name or None
            if p.signed is None and int_type is not None:
                p.signed = int_type.signed  # nvcc declares `int n` and `unsigned n` alike, `.u32`
        attach_assumptions(module, k, src, entry)


def _ptx_header(text: str) -> bool:
    return text.startswith((".visible", ".weak", ".entry", ".extern"))


def cuda_sources(module: Module) -> list[CudaSource]:
    """The readable CUDA sources the PTX's ``.file`` table names (toolkit
    headers left out), or the ``.cu`` beside the ``.ptx`` when it names none;
    looked for once per module (every kernel of the file asks, and a file
    may hold thousands)."""
    return module.cached("cuda_sources", _read_cuda_sources)


def _read_cuda_sources(module: Module) -> list[CudaSource]:
    paths = _source_files(module)
    if not paths:
        return []
    from tolk_lint.launch.cuda_source import read_source  # the C reader: only when there is C to read

    out = []
    for path in paths:
        src = read_source(path)
        if src is not None:
            out.append(src)
    return out


def source_paths(module: Module) -> list[str]:
    """The CUDA sources `cuda_sources` reads for ``module``, as found on
    disk, and the headers they include whose constants are read (what a
    cached result of the PTX depends on)."""
    found = _source_files(module)
    if not found:
        return found
    from tolk_lint.launch.cuda_source import read_source

    headers = [h for p in found for h, _stamp in getattr(read_source(p), "included", ())]
    return list(dict.fromkeys(found + headers))


def _source_files(module: Module) -> list[str]:
    """The CUDA sources themselves (`source_paths` without the headers)."""
    if module.language != "ptx":
        return []
    here = os.path.dirname(os.path.abspath(module.path))
    named = [str(p) for p in module.files.values()]
    paths = [p for p in named if p.endswith(_CUDA_SUFFIXES) and "/include/" not in p.replace("\\", "/")]
    if not named:
        stem = os.path.basename(module.path)
        stem = stem[: -len(".ptx")] if stem.endswith(".ptx") else stem
        base, dot, tail = stem.rpartition(".")
        stems = [stem] + ([base] if dot and tail.startswith("sm") else [])
        paths = [s + ".cu" for s in stems]
    out = []
    for p in dict.fromkeys(paths):
        for cand in (p if os.path.isabs(p) else os.path.join(here, p), os.path.join(here, os.path.basename(p))):
            if os.path.isfile(cand):
                out.append(cand)
                break
    # kernels kept in a header (`dwtHaar1D_kernel.cuh`, NVIDIA interval's
    # `cuda_interval.h`) are launched by the `.cu` that includes it, which
    # the `.file` table need not name; a C++ header is read too, for its
    # kernels' parameters
    out += [h for h in _kernel_headers(named, here) if h not in out]
    for header in [p for p in out if p.endswith((".cuh",) + _C_HEADER_SUFFIXES)]:
        out += [c for c in _includers(header) if c not in out]
    # and a kernel defined in one `.cu` may be launched from another, which
    # declares it by prototype (NVIDIA's cdpBitonicSort: `big_bitonicsort`
    # is launched only from `cdpAdvancedQuicksort.cu`)
    out += [c for c in _launching_siblings(out) if c not in out]
    return out


_MAX_SIBLINGS_SCANNED = 32  # `.cu` files of a kernel's folder looked into for its launches
_KERNEL_NAME = re.compile(r"__global__\s+(?:[\w:<>,\s*&]*?\s)?(\w+)\s*\(")


def _launching_siblings(sources: list[str]) -> list[str]:
    """The ``.cu`` files beside ``sources`` that launch (``name<<<``) a
    kernel one of them defines and they only declare (a prototype, no body
    of their own: a folder of separate programs, each with its own
    ``reduce`` kernel, does not lend one program's launches to another)."""
    names: set[str] = set()
    folders: list[str] = []
    for path in sources:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                names.update(_KERNEL_NAME.findall(fh.read(1 << 20)))
        except OSError:
            continue
        folder = os.path.dirname(os.path.abspath(path))
        if folder not in folders:
            folders.append(folder)
    if not names:
        return []
    launch = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names))) + r")\s*(?:<[^<>;]*>\s*)?<<<")
    mine = {os.path.abspath(p) for p in sources}
    out = []
    for folder in folders:
        try:
            cands = sorted(f for f in os.listdir(folder) if f.endswith(".cu"))[:_MAX_SIBLINGS_SCANNED]
        except OSError:
            continue
        for f in cands:
            path = os.path.join(folder, f)
            if os.path.abspath(path) in mine:
                continue
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read(1 << 20)
            except OSError:
                continue
            if any(_declared_only(text, m.group(1)) for m in launch.finditer(text)):
                out.append(path)
    return out


def _declared_only(text: str, name: str) -> bool:
    """Whether ``text`` declares the kernel ``name`` by a prototype and has no body for it."""
    head = r"__global__[^;{}]*\b" + re.escape(name) + r"\s*\([^;{}]*\)\s*"
    return re.search(head + ";", text) is not None and re.search(head + r"\{", text) is None


_MAX_INCLUDERS_SCANNED = 64  # `.cu` files of a header's folder looked into
_C_HEADER_SUFFIXES = (".h", ".hpp", ".hxx", ".inl")


def _kernel_headers(named: list[str], here: str) -> list[str]:
    """The C++ headers (``.h``, ``.hpp``) the ``.file`` table names that
    define a kernel (``__global__``), outside the toolkit's and the
    system's include folders."""
    out = []
    for p in named:
        unix = p.replace("\\", "/")
        if not p.endswith(_C_HEADER_SUFFIXES) or "/include/" in unix or unix.startswith("/usr/"):
            continue
        path = p if os.path.isabs(p) else os.path.join(here, p)
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                if "__global__" in fh.read(1 << 20):
                    out.append(path)
        except OSError:
            continue
    return out


def _includers(header: str) -> list[str]:
    """The ``.cu`` files beside ``header`` that ``#include "header"``."""
    folder, name = os.path.split(header)
    try:
        sources = sorted(f for f in os.listdir(folder) if f.endswith(".cu"))[:_MAX_INCLUDERS_SCANNED]
    except OSError:
        return []
    out = []
    needle = f'"{name}"'
    for f in sources:
        path = os.path.join(folder, f)
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read(1 << 20)
        except OSError:
            continue
        if any(line.lstrip().startswith("#") and "include" in line and needle in line for line in text.splitlines()):
            out.append(path)
    return out


def use(k: Kernel, shape: LaunchShape | None) -> None:
    """Analyse ``k`` under ``shape`` (None: no shape)."""
    k.launch.block = shape.block if shape is not None else None
    k.launch.contract = shape.contract if shape is not None else None
    k.launch.source = shape.source if shape is not None else ""
    k.launch.grid = shape.grid if shape is not None else None
    # parameter name -> what the launch's arguments fix of it (`arguments.ArgFact`), for the solver
    facts = shape.arguments if shape is not None else ()
    if not facts and (shape is None or shape.block is None):
        facts = _unread_launches_facts(k)
    # (an array's extent is keyed by its PARAM's name, `data.shape[0]`: a negative index)
    k.launch.arguments = {(f.name if f.index < 0 else k.params[f.index].name): f for f in facts
                          if f.index < len(k.params)}  # fmt: skip


def _unread_launches_facts(k: Kernel) -> tuple:
    """With no block known (every launch's block computed at run time), what
    every launch's arguments fix all the same: ``dwt<<<grid, block>>>(...,
    block.x)`` passes the block's width whatever it is."""
    unread = [s for s in k.launch.found if s.kind == UNREAD]
    if not unread or len(unread) != len(k.launch.found) or not all(s.arguments for s in unread):
        return ()
    from tolk_lint.launch.arguments import hull

    return hull([{f.index: f for f in s.arguments} for s in unread])


# What a kernel's analyses cache that the block shape does not change.
SHAPE_FREE = frozenset({"cfg", "memory_order"})
# ... and what stays true when the block is narrowed from "any": facts proved for every block.
FOR_EVERY_BLOCK = SHAPE_FREE | {"uniformity", "placements", "uniform_facts", "loop_facts_every_block"}


def forget(k: Kernel, keep: frozenset[str]) -> None:
    """Drop the kernel's cached analyses but ``keep``: a new launch is being analysed."""
    for key in [key for key in k._cache if key not in keep]:
        del k._cache[key]


def definition_origin(module: Module, k: Kernel) -> Origin | None:
    """Where the CUDA source defines the PTX entry ``k`` (the line of its name)."""
    if module.language != "ptx":
        return None
    entry = read_entry(k.name)
    for src in cuda_sources(module):
        for kd in src.kernels:
            if kd.parts[-len(entry.parts) :] == entry.parts[-len(kd.parts) :] and kd.name == entry.name:
                return Origin(src.path, kd.name_line)
    return None


def shared_declaration(module: Module, k: Kernel, name: str) -> Origin | None:
    """Where the CUDA source declares the ``__shared__`` array ``name`` (its
    C name: ``tile`` for ``_ZZ3oobPfPKfE4tile``) of the PTX entry ``k``: the
    first ``__shared__`` declaration of that name in the kernel's body (from
    the line of its name to the next kernel's), else one at file scope. The
    PTX has no ``.loc`` for a ``.shared`` variable, so without this the
    declaration could only be placed at the kernel's signature."""
    import re

    if module.language != "ptx" or not re.fullmatch(r"[A-Za-z_]\w*", name):
        return None
    decl = re.compile(rf"\b__shared__\b[^;{{}}]*?\b({name})\s*\[")
    entry = read_entry(k.name)
    for src in cuda_sources(module):
        starts = sorted(kd.name_line for kd in src.kernels)
        mine = [kd.name_line for kd in src.kernels
                if kd.name == entry.name and kd.parts[-len(entry.parts):] == entry.parts[-len(kd.parts):]]  # fmt: skip
        spans = [(s, next((t for t in starts if t > s), len(src.lines) + 1)) for s in mine]
        for lo, hi in spans + [(1, len(src.lines) + 1)]:
            for n in range(lo, hi):
                m = decl.search(src.lines[n - 1])
                if m:
                    return Origin(src.path, n, m.start(1) + 1)
    return None
