"""The lint pipeline for one file: read, parse into the IR, prepare, run rules.

    text --front end--> Module --prepare--> kernels with target and launch
         --rules (per kernel, analyses shared through RuleContext)--> Diagnostics
         --suppressions (noqa, per-file ignores, selection)--> what is reported

Nothing here prints: the CLI, the LSP server and the tests render what these
functions return. A rule that raises never takes the run down: it becomes one
TL004 diagnostic naming the rule, and the other rules go on.
"""

from __future__ import annotations

import logging
import os
import traceback
from dataclasses import dataclass, field

from tolk_lint.config import DEFAULT_SETTINGS, Settings
from tolk_lint.diagnostics import Diagnostic, Severity
from tolk_lint.ir.nodes import Kernel, Module, Span
from tolk_lint.registry import RuleContext, iter_rules, selected
from tolk_lint.target import DEFAULT_TARGET, Target, parse_target

log = logging.getLogger("tolk_lint")

# Files larger than this are refused with TL001 rather than read.
MAX_FILE_BYTES = 512 * 1024 * 1024

LANGUAGES = {".ptx": "ptx", ".py": "python", ".pyi": None}


def language_of(path: str) -> str | None:
    return LANGUAGES.get(os.path.splitext(path)[1].lower())


@dataclass
class LintResult:
    path: str
    module: Module | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    suppressed: list[Diagnostic] = field(default_factory=list)


def parse_error(path: str, message: str, line: int = 1, column: int = 1) -> Diagnostic:
    return Diagnostic(
        code="TL001",
        severity=Severity.ERROR,
        message=message,
        span=Span(path, line, column, line, column + 1),
        name="parse-error",
    )


def decode(data: bytes, path: str) -> tuple[str | None, Diagnostic | None]:
    """Bytes to text, or TL001 saying where the first non-text byte is."""
    nul = data.find(b"\x00", 0, 1 << 20)
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        col = nul - (data.rfind(b"\n", 0, nul) + 1) + 1
        return None, parse_error(path, f"not a text file: a NUL byte at offset {nul}", line, col)
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        return None, parse_error(path, f"not UTF-8 text: byte 0x{data[e.start]:02x} at offset {e.start}", line, col)


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


def prepare(module: Module, settings: Settings) -> None:
    """Apply the command line and configuration to the kernels: the target and
    the launch shape (``--block`` beats per-kernel configuration beats source
    comments beats ``.reqntid``)."""
    for k in module.all_kernels():
        if settings.target and not k.host:
            k.target = settings.target
        block = settings.block_for(k.name)
        if block is not None:
            k.launch.block = tuple(block)  # type: ignore[assignment]
            k.launch.source = "--block" if settings.block else "configuration"
        elif k.launch.block is None and k.launch.reqntid:
            dims = tuple(k.launch.reqntid) + (1, 1, 1)
            k.launch.block = dims[:3]  # type: ignore[assignment]
            k.launch.source = k.launch.source or ".reqntid"


def check_module(module: Module, settings: Settings = DEFAULT_SETTINGS) -> list[Diagnostic]:
    """Every rule's findings on every kernel of ``module``, unfiltered by noqa."""
    out: list[Diagnostic] = list(module.diagnostics)
    rules = [r() for r in iter_rules(settings.effective_select, settings.ignore) if not r.engine_rule]
    for k in module.kernels:
        if not k.blocks:
            continue
        ctx = RuleContext(module, k, settings, kernel_target(k, module, settings))
        for rule in rules:
            try:
                out.extend(rule.check(ctx))
            except Exception as e:  # noqa: BLE001 - one rule must not take the run down
                log.debug("rule %s failed on %s:\n%s", rule.code, k.name, traceback.format_exc())
                out.append(
                    Diagnostic(
                        code="TL004",
                        severity=Severity.ERROR,
                        message=f"internal error in {rule.code} ({rule.name}) on kernel `{k.name}`: "
                        f"{type(e).__name__}: {e}",
                        span=k.span or Span(module.path, 1, 1),
                        kernel=k.name,
                        name="internal-error",
                    )
                )
    return dedupe(out)


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


def lint_text(text: str, path: str, settings: Settings = DEFAULT_SETTINGS, language: str | None = None) -> LintResult:
    try:
        module = parse(text, path, language)
    except Exception as e:  # noqa: BLE001 - a front end bug is reported, never a traceback
        log.debug("front end failed on %s:\n%s", path, traceback.format_exc())
        d = Diagnostic("TL004", Severity.ERROR, f"internal error while reading the file: {type(e).__name__}: {e}",
                       Span(path, 1, 1), name="internal-error")  # fmt: skip
        return LintResult(path, None, [d])
    prepare(module, settings)
    diags = check_module(module, settings)
    from tolk_lint.suppress import apply_suppressions

    kept, suppressed = apply_suppressions(diags, module, settings)
    kept = [d for d in kept if selected(d.code, settings.effective_select, settings.ignore)]
    kept.sort(key=Diagnostic.sort_key)
    return LintResult(path, module, kept, suppressed)


def lint_file(path: str, settings: Settings = DEFAULT_SETTINGS) -> LintResult:
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            return LintResult(path, None, [parse_error(path, f"file too large to lint ({size} bytes)")])
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return LintResult(path, None, [parse_error(path, f"cannot read `{path}`: {e.strerror or e}")])
    text, err = decode(data, path)
    if err is not None:
        return LintResult(path, None, [err])
    return lint_text(text, path, settings)
