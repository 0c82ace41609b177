"""The lint pipeline for one file: read, parse into the IR, prepare, run rules.

    text --front end--> Module --prepare--> kernels with target and launch
         --rules (per kernel, analyses shared through RuleContext)--> Diagnostics
         --suppressions (noqa, per-file ignores, selection)--> what is reported

Nothing here prints: the CLI, the LSP server and the tests render what these
functions return. A rule that raises never takes the run down: it becomes one
TL004 diagnostic naming the rule, and the other rules go on.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import logging
import math
import os
import stat
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

from tolk_lint import budget
from tolk_lint.config import DEFAULT_SETTINGS, Settings
from tolk_lint.copies import merge_copies
from tolk_lint.deep import run_deep
from tolk_lint.diagnostics import NOT_ANALYSED, Diagnostic, Severity, internal_error
from tolk_lint.diagnostics import REPORT_REQUEST as REPORT_REQUEST  # the line every TL004 ends with
from tolk_lint.ir.nodes import Kernel, KernelOutline, Module, Span
from tolk_lint.kernel_cache import KernelCache as KernelCache  # the language server's
from tolk_lint.kernel_cache import PythonReuse, ReadKernel
from tolk_lint.kernel_cache import kernel_units as kernel_units
from tolk_lint.registry import RuleContext, selected
from tolk_lint.suppress import UNUSED_NOQA, apply_suppressions
from tolk_lint.target import DEFAULT_TARGET, Target, parse_target

log = logging.getLogger("tolk_lint")

# Files larger than this are refused with TL001 rather than read.
MAX_FILE_BYTES = 512 * 1024 * 1024

LANGUAGES = {".ptx": "ptx", ".py": "python", ".pyi": None}


def language_of(path: str) -> str | None:
    return LANGUAGES.get(os.path.splitext(path)[1].lower())


@dataclass
class LintResult:
    """What the lint of one file found. ``module`` is what the front end
    read (None when the file could not be read): its text, PTX ``.file``
    table and front-end diagnostics, without the kernels' IR: PTX, linted
    kernel by kernel, lets each go once it is linted, Python all of them at
    the end (`Kernel.release`), so a process that lints many files holds
    none of their IR or solver state. ``kernels``: the kernels linted, by
    name and header span."""

    path: str
    module: Module | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    suppressed: list[Diagnostic] = field(default_factory=list)
    kernels: list[KernelOutline] = field(default_factory=list)


def parse_error(path: str, message: str, line: int = 1, column: int = 1) -> Diagnostic:
    return Diagnostic(
        code="TL001",
        severity=Severity.ERROR,
        message=message,
        span=Span(path, line, column, line, column + 1),
        name="parse-error",
    )


def decode(data: bytes, path: str) -> tuple[str | None, Diagnostic | None]:
    """Bytes to text, or TL001 saying where the first non-text byte is.

    Python files are read as Python reads them: a UTF-8 byte-order mark is
    dropped, and a PEP 263 ``# -*- coding: latin-1 -*-`` line on the first
    two lines names the encoding. Everything else is UTF-8 (a byte-order
    mark is dropped there too)."""
    nul = data.find(b"\x00", 0, 1 << 20)
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        col = nul - (data.rfind(b"\n", 0, nul) + 1) + 1
        return None, parse_error(path, f"not a text file: a NUL byte at offset {nul}", line, col)
    encoding = "utf-8"
    if language_of(path) == "python":
        import io
        import tokenize

        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as e:  # an unknown or contradictory coding declaration
            return None, parse_error(path, f"cannot read the file: {e}")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        what = "UTF-8" if encoding in ("utf-8", "utf-8-sig") else encoding
        return None, parse_error(path, f"not {what} text: byte 0x{data[e.start]:02x} at offset {e.start}", line, col)
    return text.removeprefix("\ufeff"), None


def parse(text: str, path: str, language: str | None = None) -> Module:
    """Run the front end for ``path``'s language (by suffix unless given)."""
    language = language or language_of(path)
    if language == "ptx":
        from tolk_lint.frontends.ptx import parse_ptx

        return parse_ptx(text, path)
    if language == "python":
        from tolk_lint.frontends.python import parse_python

        return parse_python(text, path)
    m = Module(path, language or "unknown", text)
    m.diagnostics.append(parse_error(path, f"cannot lint `{path}`: only .py and .ptx files are linted"))
    return m


def kernel_target(kernel: Kernel, module: Module, settings: Settings) -> Target:
    name = settings.target or (None if kernel.language == "python" and not kernel.host else module.target)
    if kernel.host:
        name = "cpu"
    try:
        return parse_target(name or DEFAULT_TARGET)
    except ValueError:
        return parse_target(DEFAULT_TARGET)


def prepare(module: Module, settings: Settings, kernels: list[Kernel] | None = None) -> None:
    """Apply the command line and configuration to the kernels: the target
    and the launch shapes, chosen by `tolk_lint.launch.choose` (``--block``
    beats the configuration, which beats what the code says: call sites,
    ``.reqntid``, host launches in the CUDA source, ``tolk: launch``
    comments, Triton's ``.maxntid``). A kernel with several shapes is
    linted under each (`check_kernel`); the first is the one the other
    commands use. ``kernels``: only these (a kernel read on its own, by
    `_check_by_kernel`), else every kernel and device function of the
    module."""
    from tolk_lint.launch.choose import launch_shapes, use

    shapes = launch_shapes(module, settings, kernels)
    for k in module.all_kernels() if kernels is None else kernels:
        if settings.target and not k.host:
            k.target = settings.target
        if id(k) in shapes:
            k.launch.shapes = tuple(shapes[id(k)])
            use(k, k.launch.shapes[0] if k.launch.shapes else None)


def check_module(
    module: Module, settings: Settings = DEFAULT_SETTINGS, kernel_cache: KernelCache | None = None,
    progress: Callable[[list[Diagnostic]], None] | None = None,
) -> list[Diagnostic]:
    """Every rule's findings on every kernel of ``module``, unfiltered by noqa.

    With ``kernel_cache``, a kernel whose text, position and surroundings did
    not change since a lint that stored it reuses its findings (see
    `KernelCache`). ``progress`` is called after each kernel but the last
    with the findings so far."""
    from tolk_lint.kernel_workers import check_in_workers

    checker = KernelChecker(module, settings, kernel_cache)
    # the command line, few files: the kernels shared out to forked workers
    shared = check_in_workers(module.kernels, checker.analyse) if kernel_cache is None and progress is None else {}
    found: list[Diagnostic] = []
    for n, k in enumerate(module.kernels, start=1):
        if n - 1 in shared:
            found += shared[n - 1][0]
            continue
        found += checker.check(k)
        if progress is not None and n < len(module.kernels):  # after the last, the lint's own result
            progress(found)
    checker.done()
    return dedupe(list(module.diagnostics) + found)


class KernelChecker:
    """The rules run on the kernels of ``module``, one kernel at a time
    (whether the module holds them all or they are read one by one), each
    kernel's findings reused from ``kernel_cache`` when its key is there;
    `done` stores the findings of this lint in the cache. ``outline``: the
    kernels when they are read one by one (the cache keys each kernel by
    where the others are)."""

    def __init__(self, module: Module, settings: Settings, kernel_cache: KernelCache | None = None,
                 outline: list[KernelOutline] | None = None):  # fmt: skip
        from tolk_lint.catalog import iter_rules  # the rules import the analyses: only when linting

        self.module, self.settings, self.cache = module, settings, kernel_cache
        chosen = iter_rules(settings.effective_select, settings.ignore)
        self.rules = [r() for r in chosen if not r.engine_rule]
        self.key = kernel_cache.keys(module, settings, outline) if kernel_cache is not None else None
        self.kept: dict[str, list[Diagnostic] | ReadKernel] = {}

    def check(self, k: Kernel) -> list[Diagnostic]:
        """The findings on ``k`` (nothing for a kernel without a body)."""
        if not k.blocks:
            return []
        key = self.key(k) if self.key is not None else None
        found = self.cache.get(self.module.path, key) if key is not None else None  # type: ignore[union-attr]
        if isinstance(found, list):
            self.kept[key] = found  # type: ignore[index]
            return found
        found, keep = self.analyse(k)
        if key is not None and keep:
            self.kept[key] = found
        return found

    def analyse(self, k: Kernel) -> tuple[list[Diagnostic], bool]:
        """The rules' findings on ``k``, analysed now, and whether they may
        be reused while ``k`` does not change (`keepable`)."""
        if not k.blocks:
            return [], True
        whole = _whole_budget(self.settings)
        found = check_kernel(self.module, k, self.settings, self.rules)
        return found, keepable(found, whole)

    def done(self, complete: bool = True) -> None:
        """Store this lint's findings; ``complete`` false: it did not reach
        every kernel, or the file did not parse (an edit half typed: the
        kernels keep what the lint before it stored)."""
        if self.cache is not None:
            self.cache.store(self.module.path, self.kept, complete and readable(self.module))


def readable(module: Module) -> bool:
    """Whether the front end read the whole file (no TL001): a lint of a file
    that does not parse, an edit half typed, leaves the kernel cache's
    entries of that file as they were."""
    return not any(d.code == "TL001" for d in module.diagnostics)


def _whole_budget(settings: Settings) -> bool:
    """Whether a kernel starting now has most of the time any lint would
    give it: at least half of the kernel's time budget, or of the whole
    file's when that is smaller (the rest may go to reading the file and
    the kernels before it, more so on a loaded machine)."""
    outer = budget.current()
    left = outer.remaining() if outer is not None else None
    if left is None:
        return True
    full = outer.seconds if outer.seconds is not None else math.inf  # type: ignore[union-attr]
    if settings.kernel_time_budget is not None:
        full = min(full, settings.kernel_time_budget)
    return left >= 0.5 * full


def keepable(found: list[Diagnostic], whole_budget: bool) -> bool:
    """Whether a kernel's fresh findings may be reused while it does not
    change. Never a crash (TL004). A TL005 only when the kernel's own time
    ran out while it had most of the time a later lint would give it
    (``whole_budget``): analysing it again would most likely stop again, so
    the language server does not spend every edit on it (a save retries it,
    `KernelCache.forget_stops`); one cut short by a cancel, by the memory
    budget or by kernels before it spending the file's time is analysed
    again by the next lint. Either way the kernel is not called clean."""
    for d in found:
        if d.code == "TL004":
            return False
        if d.code == "TL005":
            reason = str((d.data or {}).get("reason", ""))
            if not (whole_budget and reason.endswith(" s ran out")):
                return False
    return True


def check_kernel(module: Module, k: Kernel, settings: Settings, rules: list) -> list[Diagnostic]:
    """The rules' findings on one kernel, under a share of the file's budget.

    A rule that raises becomes TL004; a budget that runs out stops the
    kernel's remaining rules and becomes TL005 (what was found so far
    stays)."""
    from tolk_lint.analysis.smt.solver import fresh_context  # does not import z3
    from tolk_lint.launch.library import library_findings
    from tolk_lint.launch.variants import lint_under_launches

    fresh_context()  # the kernel's witnesses depend on the kernel alone
    outer = budget.current()
    kernel_budget = outer.child(settings.kernel_time_budget, "the kernel's time budget") if outer else None
    with budget.running(kernel_budget):
        found = lint_under_launches(module, k, settings, lambda: run_rules(module, k, settings, rules))
    # what preparing it found (`launch.source_assumptions`); a CUB kernel's own findings are warnings
    return list(k.diagnostics) + library_findings(k, found)


def run_rules(module: Module, k: Kernel, settings: Settings, rules: list) -> list[Diagnostic]:
    """The rules' findings on ``k`` under the launch it has now."""
    from tolk_lint.analysis.smt.solver import fresh_witnesses  # does not import z3

    fresh_witnesses(unsigned=frozenset(f"param:{p.name}" for p in k.params if p.signed is False))
    out: list[Diagnostic] = []
    ctx = RuleContext(module, k, settings, kernel_target(k, module, settings), relint=_relinter(module, settings))
    for n, rule in enumerate(rules):
        try:
            budget.check(f"starting {rule.code} ({rule.name})")
            out.extend(rule.check(ctx))
        except budget.BudgetExceeded as e:
            out.append(budget_diagnostic(module, k, rule, rules[n + 1 :], e))
            break
        except Exception as e:  # noqa: BLE001 - one rule must not take the run down
            log.debug("rule %s failed on %s:\n%s", rule.code, k.name, traceback.format_exc())
            where = f"in {rule.code} ({rule.name}) on kernel `{k.name}`"
            out.append(internal_error(where, e, k.span or Span(module.path, 1, 1), k.name))
    return out


_proving = threading.local()  # set on the thread of a lint that proves a rewrite


def _relinter(module: Module, settings: Settings):
    """The ``relint`` a rule proves its rewrite with (None inside such a proof)."""
    if getattr(_proving, "active", False):
        return None
    return lambda text, select, kernel=None: relint_text(text, module.path, settings, select, kernel)


def parse_for(text: str, path: str, language: str | None = None, kernel: str | None = None) -> Module:
    """`parse`, or with ``kernel`` the module with that kernel alone in
    ``Module.kernels``: in Python only it is lowered (with the device
    functions, whose own front-end diagnostics stay)."""
    if kernel is None:
        return parse(text, path, language)
    if (language or language_of(path)) == "python":
        from tolk_lint.frontends.python import parse_python

        module = parse_python(text, path, lambda _m, outline: {o.name: [] for o in outline if o.name != kernel})
    else:
        module = parse(text, path, language)
    module.kernels = [k for k in module.kernels if k.name == kernel]
    return module


def relint_text(text: str, path: str, settings: Settings, select: tuple[str, ...], kernel: str | None = None
                ) -> list[Diagnostic]:  # fmt: skip
    """Every finding of the rules ``select`` names on ``text`` (as the file
    ``path``), with no noqa, per-file ignore or selection of the user's
    hiding any: what a rewrite is proved by. It runs on a thread of its own,
    so its Z3 context is its own (the caller's analyses keep theirs), under
    the caller's budget; rules there offer no fixes. With ``kernel``, only
    that kernel is analysed (the one rewritten: the others' findings do not
    prove it), and in Python only it is lowered, with the device functions
    (what reading the file reports stays whole)."""
    from concurrent.futures import ThreadPoolExecutor

    outer = budget.current()
    left = outer.remaining() if outer is not None else None
    # the proof may take half of what is left: the caller's remaining rules need the rest
    inner = outer.child(left / 2, "the time budget of the fix's proof") if outer is not None and left else outer
    judged = settings.with_(select=tuple(select), extend_select=(), ignore=(), per_file_ignores=())

    def work() -> list[Diagnostic]:
        _proving.active = True
        with budget.running(inner), fewer_collections():
            module = parse_for(text, path, None, kernel)
            prepare(module, judged)
            return check_module(module, judged)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tolk-lint-proof") as pool:
        return pool.submit(work).result()


def budget_diagnostic(module: Module, k: Kernel, rule, later: list, e: budget.BudgetExceeded) -> Diagnostic:
    """TL005 for kernel ``k``: the budget ran out in ``rule`` (while doing
    ``e.what``, or before it started); the rules of ``later`` did not run."""
    started = not e.what.startswith("starting ")
    not_run = [r.code for r in later] if started else [rule.code] + [r.code for r in later]
    parts = [f"{rule.code} ({rule.name}) did not finish ({e.what})"] if started else []
    if not_run:
        parts.append(f"{', '.join(not_run)} did not run")
    return Diagnostic(
        code="TL005",
        severity=Severity.ERROR,
        message=f"the analysis of kernel `{k.name}` stopped: {e.reason}; {'; '.join(parts)}. "
        "The kernel is not known to be clean (raise `time-budget` / `memory-budget`, or give its launch shape)",
        span=k.span or Span(module.path, 1, 1),
        kernel=k.name,
        data={"reason": e.reason, "unfinished": rule.code if started else None, "not_run": not_run},
        name="budget-exceeded",
    )


def dedupe(diags: list[Diagnostic]) -> list[Diagnostic]:
    """One diagnostic per (code, linted position, message): unrolled copies of a
    source line reported at the same PTX line collapse."""
    seen = set()
    out = []
    for d in diags:
        key = (d.code, d.span.path, d.span.line, d.span.column, d.message)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


# The IR is a graph of many small objects with cycles (an instruction knows
# its block, a value its definition), built and dropped per file. With the
# interpreter's default thresholds the cyclic collector scans the whole heap
# every few hundred thousand allocations: a fifth of a large PTX file's lint
# time (bench/bench_ptx.py: 2.6 s -> 2.2 s). Collect in larger steps while a
# file is linted, as mypy does for its whole run.
LINT_GC_THRESHOLD = (50_000, 20, 20)


_gc_lock = threading.Lock()
_gc_depth = 0  # lints running (nested, or in the language server's threads)
_gc_saved: tuple[int, ...] = ()


@contextlib.contextmanager
def fewer_collections():
    """Raise the cyclic collector's thresholds for the block; the first to
    enter saves the caller's, the last to leave restores them."""
    global _gc_depth, _gc_saved
    with _gc_lock:
        if _gc_depth == 0:
            _gc_saved = gc.get_threshold()
            gc.set_threshold(*(max(a, b) for a, b in zip(LINT_GC_THRESHOLD, _gc_saved)))
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0:
                gc.set_threshold(*_gc_saved)


def lint_text(
    text: str,
    path: str,
    settings: Settings = DEFAULT_SETTINGS,
    language: str | None = None,
    kernel_cache: KernelCache | None = None,
    within: budget.Budget | None = None,
    progress: Callable[[Callable[[], list[Diagnostic]]], None] | None = None,
    kernel: str | None = None,
) -> LintResult:
    """Lint ``text`` as the file ``path``; ``kernel_cache`` (the language
    server's) lets unchanged kernels reuse their findings. The lint runs
    under ``within``, or else under the settings' per-file budget.
    ``progress`` is called after each kernel but the last with a function
    that gives what the lint would report so far (`partial_report`), on the lint's
    thread: the language server publishes a long first lint as it goes.
    ``kernel``: that kernel alone is analysed (`parse_for`; not through
    the cache), as the language server works out a fix when asked."""
    load_tool(settings, language or language_of(path))
    if within is None:
        within = file_budget(settings)
    if kernel is not None:
        kernel_cache = progress = None
    return run_deep(_lint_within, text, path, settings, language, kernel_cache, within, progress, kernel)


_loaded: set[str] = set()

# What the lint of every kernel imports, whichever rules run: the launch
# shapes (`prepare`, `lint_under_launches`) and the solver's per-kernel state.
KERNEL_MODULES = ("tolk_lint.launch.choose", "tolk_lint.launch.variants", "tolk_lint.analysis.smt.solver")


def load_tool(settings: Settings, language: str | None = None) -> None:
    """Load, before a file's budget starts, what its lint imports: the
    front end of ``language`` (the PTX grammar's parse tables come from
    lark's cache, `tolk_lint.frontends.ptx.lark_cache`), the modules every
    kernel's lint needs, and the analyses of the rules selected
    (`Rule.analyses`); each once per process. Start-up is the process's
    cost, not the first file's, and must not spend a small
    ``--time-budget``.

    Z3 and numpy are not loaded here: the analyses import them the first
    time a kernel needs them (most small files need no numpy, and a file
    with no question for the solver no Z3), and that import's time is given
    back to the budget it falls in (`tolk_lint.budget.not_counted`)."""
    if language in ("ptx", "python") and language not in _loaded:
        parse(".version 8.0\n" if language == "ptx" else "import numba\n", "load", language)
        if language == "ptx":
            importlib.import_module("tolk_lint.frontends.ptx.stream")  # how the lint reads PTX
        _loaded.add(language)
    from tolk_lint.catalog import iter_rules

    wanted = set(KERNEL_MODULES)
    for r in iter_rules(settings.effective_select, settings.ignore):
        wanted.update(r.analyses)
    for name in sorted(wanted - _loaded):
        importlib.import_module(name)
        _loaded.add(name)


def _lint_within(text: str, path: str, settings: Settings, language: str | None,
                 kernel_cache: KernelCache | None, within: budget.Budget, progress=None,
                 kernel: str | None = None) -> LintResult:  # fmt: skip
    """The lint, on the deep-stack thread (`tolk_lint.deep`), under its budget."""
    with fewer_collections(), budget.running(within):
        return _lint_text(text, path, settings, language, kernel_cache, progress, kernel)


def file_budget(settings: Settings) -> budget.Budget:
    return budget.Budget(settings.time_budget, settings.memory_budget * budget.MIB, label="the file's time budget")


def _lint_text(
    text: str, path: str, settings: Settings, language: str | None, kernel_cache: KernelCache | None,
    progress=None, kernel: str | None = None,
) -> LintResult:
    got = None
    language = language or language_of(path)
    if language == "ptx" and kernel is None:
        got = _check_by_kernel(text, path, settings, kernel_cache, progress)
    if got is None:
        reuse = PythonReuse(kernel_cache, path, settings) if kernel_cache is not None and language == "python" else None
        try:
            if reuse is not None:
                from tolk_lint.frontends.python import parse_python

                module = parse_python(text, path, reuse)
            else:
                module = parse_for(text, path, language, kernel)
        except budget.BudgetExceeded as e:
            return LintResult(path, None, [_reading_stopped(path, e)])
        except Exception as e:  # noqa: BLE001 - a front end bug is reported, never a traceback
            log.debug("front end failed on %s:\n%s", path, traceback.format_exc())
            return LintResult(path, None, [internal_error("while reading the file", e, Span(path, 1, 1))])
        prepare(module, settings)
        if reuse is not None:
            got = _check_reusing(module, settings, reuse, progress)
        else:
            diags = check_module(module, settings, kernel_cache, partial_report(progress, module, settings))
            got = module, diags, [KernelOutline.of(k) for k in module.kernels]
    module, diags, kernels = got  # type: ignore[assignment]
    if module is None:
        return LintResult(path, None, diags)
    kept, suppressed = reported(diags, module, settings)
    for k in module.all_kernels():  # PTX kernels were let go one by one, as they were linted
        k.release()  # the IR and the analyses' solver state: freed now, not at the collector's next full pass
    return LintResult(path, module, kept, suppressed, kernels)


def reported(diags: list[Diagnostic], module: Module, settings: Settings) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """``diags`` as the lint reports them, and those suppressed: after noqa,
    per-file ignores and the selection, copies merged, in order."""
    kept, suppressed = apply_suppressions(diags, module, settings)
    kept = [d for d in kept if d.code in NOT_ANALYSED or selected(d.code, settings.effective_select, settings.ignore)]
    kept = merge_copies(kept)  # one finding per source line and rule, after the noqa of each copy
    kept.sort(key=Diagnostic.sort_key)
    return kept, suppressed


def partial_report(progress, module: Module, settings: Settings) -> Callable[[list[Diagnostic]], None] | None:
    """What a lint calls after each kernel with its findings so far: it
    hands ``progress`` a function giving what `reported` would make of them
    and of the front end's diagnostics so far, without TL003 (a noqa in a
    kernel not linted yet has not been used yet). Worked out only when
    ``progress`` calls it."""
    if progress is None:
        return None

    def step(found: list[Diagnostic]) -> None:
        def so_far() -> list[Diagnostic]:
            kept, _ = reported(dedupe(module.diagnostics + found), module, settings)
            return [d for d in kept if d.code != UNUSED_NOQA]

        progress(so_far)

    return step


def _check_reusing(module: Module, settings: Settings, reuse: PythonReuse, progress=None
                   ) -> tuple[Module, list[Diagnostic], list[KernelOutline]]:  # fmt: skip
    """`check_module`'s findings on a Python module read with ``reuse``
    (`KernelCache.python_keys`): the kernels it lowered are checked and
    kept, with their front-end diagnostics, under their text keys; the
    others' findings come from the cache."""
    checker = KernelChecker(module, settings, None)  # keyed by text here, not by its IR
    step = partial_report(progress, module, settings)
    found: list[Diagnostic] = [d for got in reuse.hits.values() for d in got.findings]
    for n, k in enumerate(module.kernels, start=1):
        findings, keep = checker.analyse(k)
        found += findings
        key = reuse.keys.get(k.name)
        if key is not None and keep:
            front_end = [d for d in module.diagnostics if d.kernel == k.name]
            reuse.kept[key] = ReadKernel(findings, front_end, KernelOutline.of(k))
        if step is not None and n < len(module.kernels):
            step(found)
    reuse.cache.store(module.path, reuse.kept, complete=readable(module))
    lowered = {k.name: KernelOutline.of(k) for k in module.kernels}
    kernels = [got.outline if (got := reuse.hits.get(o.name)) is not None and got.outline else lowered.get(o.name)
               for o in reuse.outline]  # fmt: skip
    return module, dedupe(list(module.diagnostics) + found), [o for o in kernels if o is not None]


def _check_by_kernel(text: str, path: str, settings: Settings, kernel_cache: KernelCache | None, progress=None
                     ) -> tuple[Module | None, list[Diagnostic], list[KernelOutline]] | None:  # fmt: skip
    """`check_module`'s findings on the PTX ``text``, with the file read
    kernel by kernel (`tolk_lint.frontends.ptx.stream`): each kernel is
    read, prepared and checked, and let go before the next is read, so the
    lint holds one kernel's IR however many the file has. With
    ``kernel_cache``, an entry whose text key (`KernelCache.ptx_keys`) is
    there is not read at all: its record gives what reading and checking it
    gave. Returns the module (None when the budget ran out before any
    kernel was checked), the findings and the kernels checked; None when
    the file must be read whole (a syntax error anywhere, which means no
    kernel is analysed, or a file the kernel-by-kernel reading does not
    split): the findings of the kernels checked so far are dropped, and
    `parse` reports why."""
    from tolk_lint.frontends.ptx.stream import open_ptx
    from tolk_lint.kernel_workers import lint_in_workers

    try:
        stream = open_ptx(text, path)
    except budget.BudgetExceeded as e:
        return None, [_reading_stopped(path, e)], []
    except Exception:  # noqa: BLE001 - NotStreamable, or what reading the whole file reports in its words
        return None
    module = stream.module
    prepare(module, settings)  # the device functions' targets
    checker = KernelChecker(module, settings, None)  # keyed by text here, not by its IR
    text_key = kernel_cache.ptx_keys(stream, settings) if kernel_cache is not None else None
    step = partial_report(progress, module, settings)
    found: list[Diagnostic] = []
    linted: list[KernelOutline] = []
    complete = True
    keys = [text_key(ft) if text_key is not None else None for ft in stream.entries]
    cached = [kernel_cache.get(path, key) if key is not None else None for key in keys]  # type: ignore[union-attr]
    shared: dict = {}
    if progress is None:  # the language server lints in its own process, kernel by kernel
        def check(k: Kernel) -> tuple[list[Diagnostic], bool]:
            prepare(module, settings, [k])
            return checker.analyse(k)

        todo = [i for i, got in enumerate(cached) if not isinstance(got, ReadKernel)]
        shared = lint_in_workers(stream, todo, check)
    unread: list = []  # with workers: the entries the budget stopped before they were read
    for n, ft in enumerate(stream.entries, start=1):
        key = keys[n - 1]
        got = cached[n - 1]
        if n - 1 in shared:  # a worker read and checked it: taken as a cached kernel is
            got, keep = shared[n - 1]
            key = key if keep else None
        if isinstance(got, ReadKernel):
            stream.reuse(ft, got.front_end)
            found += got.findings
            if got.outline is not None:
                linted.append(got.outline)
            if key is not None:
                checker.kept[key] = got
            continue
        try:
            k = stream.read(ft)
        except budget.BudgetExceeded as e:
            if not linted and not shared:
                return None, [_reading_stopped(path, e)], []
            complete = False
            if shared:  # the workers read later entries: theirs stand, and one TL005 names the rest
                unread.append((ft, e))
                continue
            found.append(_reading_stopped(path, e, ft))
            break
        except Exception:  # noqa: BLE001 - as above: the whole file is read again
            return None
        front_end = stream.front_end_of(ft)
        findings: list[Diagnostic] = []
        keep, outline = True, None
        if k is not None:
            prepare(module, settings, [k])
            findings, keep = checker.analyse(k)
            outline = KernelOutline.of(k)
            linted.append(outline)
            k.release()  # freed now, not at the cyclic collector's next pass
            del k  # before the next kernel is read
        found += findings
        if key is not None and keep:
            checker.kept[key] = ReadKernel(findings, front_end, outline)
        if step is not None and n < len(stream.entries):  # after the last, the lint's own result
            step(found)
    if unread:
        found.append(_reading_stopped(path, unread[0][1], unread[0][0], unread=len(unread)))
    stream.reading = None
    if kernel_cache is not None:
        kernel_cache.store(path, checker.kept, complete)
    module = stream.finish()
    return module, dedupe(module.diagnostics + found), linted


def _reading_stopped(path: str, e: budget.BudgetExceeded, at=None, unread: int | None = None) -> Diagnostic:
    """TL005: the budget ran out while the file was read, before any kernel
    was checked, or, reading kernel by kernel, at the entry ``at``
    (a `split.FunctionText`): it and the kernels after it were not analysed
    (with workers, ``unread`` kernels from it on, the others read)."""
    if at is None:
        what, span = "nothing in it was analysed", Span(path, 1, 1)
    else:
        what = (f"the kernels from `{at.name}` (line {at.line}) on were not analysed" if unread is None else
                f"{unread} kernel(s) were not analysed, from `{at.name}` (line {at.line}) on")  # fmt: skip
        span = Span(path, at.line, at.column, at.name_line, at.name_end_column)
    message = f"reading the file stopped ({e.what}): {e.reason}; {what}"
    return Diagnostic("TL005", Severity.ERROR, message, span, data={"reason": e.reason, "unfinished": e.what},
                      name="budget-exceeded")  # fmt: skip


def read_source(path: str) -> tuple[bytes | None, Diagnostic | None]:
    """The bytes of the file ``path``, or TL001 saying why it cannot be
    read: missing, unreadable, too large, or not a regular file (a FIFO
    named ``k.ptx`` would block the read forever; a device never ends)."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            what = "a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device"
            if stat.S_ISSOCK(st.st_mode):
                what = "a socket"
            return None, parse_error(path, f"cannot read `{path}`: it is {what}, not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            return None, parse_error(path, f"file too large to lint ({st.st_size} bytes)")
        with open(path, "rb") as f:
            return f.read(), None
    except OSError as e:
        return None, parse_error(path, f"cannot read `{path}`: {e.strerror or e}")


def lint_file(path: str, settings: Settings = DEFAULT_SETTINGS) -> LintResult:
    data, err = read_source(path)
    if data is None:
        return LintResult(path, None, [err])  # type: ignore[list-item]
    text, err = decode(data, path)
    if err is not None:
        return LintResult(path, None, [err])
    return lint_text(text, path, settings)
