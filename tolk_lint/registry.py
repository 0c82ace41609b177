"""Rules: the base class, examples, statuses, and selection by code prefix.

A rule is one module in ``rules/`` (installed as ``tolk_lint.rules``) holding
one `Rule` subclass. Its module docstring is its documentation, under fixed
headings (``## What it does``, ``## Why is this bad?``, ``## Example``,
``## How to fix``, ``## Fix safety``...), which the ``rule`` command, SARIF,
and LSP hover all print. Its ``VALID`` and ``INVALID`` examples are complete
little files whose ``expect:`` comments the tests check, so the docs can never
drift from the behaviour (Fixit's idea, with our fixture syntax).

``rules/__init__.py`` lists every rule in code order: one explicit registry,
which `tolk_lint.catalog` reads.
"""

from __future__ import annotations

import inspect
import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable

from tolk_lint.diagnostics import Diagnostic, Fix, Related, Severity, callers, is_toolkit_path, report_frame
from tolk_lint.ir.nodes import Instr, Kernel, Module, Origin, Span

if TYPE_CHECKING:
    from tolk_lint.config import Settings
    from tolk_lint.target import Target


@dataclass(frozen=True)
class Status:
    kind: str  # "stable" | "preview" | "removed"
    since: str

    @staticmethod
    def stable(since: str) -> Status:
        return Status("stable", since)

    @staticmethod
    def preview(since: str) -> Status:
        return Status("preview", since)


@dataclass(frozen=True)
class Example:
    """A complete little file: ``language`` is ``ptx``, ``python`` or ``cuda``.
    ``flags`` are command-line flags (``--block 256,1,1``)."""

    language: str
    source: str
    flags: str = ""
    title: str = ""

    @property
    def suffix(self) -> str:
        return {"ptx": ".ptx", "python": ".py", "cuda": ".cu"}[self.language]


def Valid(language: str, source: str, flags: str = "", title: str = "") -> Example:
    return Example(language, inspect.cleandoc(source) + "\n", flags, title)


def Invalid(language: str, source: str, flags: str = "", title: str = "") -> Example:
    return Example(language, inspect.cleandoc(source) + "\n", flags, title)


@dataclass
class RuleContext:
    """What a rule sees for one kernel: the kernel, its module, the settings,
    the target, and lazily computed analyses (each computed once per kernel,
    shared by every rule that asks)."""

    module: Module
    kernel: Kernel
    settings: Settings
    target: Target
    _facts: dict[str, Any] = field(default_factory=dict)
    # Lints a rewritten text of this file and gives every finding of the
    # selected rules (``relint(text, select, kernel)``, on that kernel only
    # when named): how a fix proves itself.
    # The engine sets it; None inside such a lint (no fix proves itself twice).
    relint: Callable[..., list[Diagnostic]] | None = None

    def uniformity(self):
        from tolk_lint.analysis.uniform import uniformity

        return self.kernel.cached("uniformity", lambda k: uniformity(k, self.module, self.settings))

    def memory(self):
        from tolk_lint.analysis.memory import memory_facts

        return self.kernel.cached("memory", lambda k: memory_facts(k, self.module, self.settings, self.target))

    def staging(self):
        from tolk_lint.analysis.stage import staging_facts

        return self.kernel.cached("staging", lambda k: staging_facts(k, self.module, self.settings, self.target))


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    status: ClassVar[Status] = Status.stable("0.1.0")
    fixable: ClassVar[bool] = False
    # its fixes are unsafe and proved by a second lint (``--unsafe-fixes``):
    # the language server works one out when the editor asks for it
    fixes_when_asked: ClassVar[bool] = False
    # a rule reported by the front ends or the engine, not by `check`
    engine_rule: ClassVar[bool] = False
    # The analysis modules `check` imports. A rule module imports no analysis
    # at its top (listing the rules, ``tolk-lint rule``, the docs stay cheap);
    # `tolk_lint.engine.load_tool` imports these for the rules selected, once,
    # before a file's budget starts.
    analyses: ClassVar[tuple[str, ...]] = ()
    VALID: ClassVar[list[Example]] = []
    INVALID: ClassVar[list[Example]] = []

    @classmethod
    def doc(cls) -> str:
        mod = sys.modules[cls.__module__]
        return inspect.cleandoc(mod.__doc__ or "")

    @classmethod
    def summary(cls) -> str:
        """One line: the first line of the doc after the title."""
        for line in cls.doc().splitlines()[1:]:
            line = line.strip()
            if line and not line.startswith("#"):
                return line
        return cls.name

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        return ()

    def diagnostic(
        self,
        at: Instr | Span,
        message: str,
        kernel: Kernel | None = None,
        related: list[Related] | None = None,
        witness: dict[str, Any] | None = None,
        data: dict[str, Any] | None = None,
        fix: Fix | None = None,
        origin: Origin | None = None,
    ) -> Diagnostic:
        if isinstance(at, Instr):
            span, origin = at.span, origin or at.origin
        else:
            span = at
        # a finding inside a device function is at its own line there: the
        # calls it was inlined into are notes, innermost first; a line of the
        # toolkit's headers (a shuffle inside `__shfl_down_sync`) is placed at
        # the user's call of it and is a note too
        notes = [Related("called from here", None, o) for o in callers(origin)]
        if origin is not None and origin.inlined_at is not None and is_toolkit_path(origin.path):
            notes.insert(0, Related(f"inside {os.path.basename(origin.path)}, inlined here", None,
                                    Origin(origin.path, origin.line, origin.column)))  # fmt: skip
        if notes:
            related = notes + list(related or [])
        origin = report_frame(origin)
        return Diagnostic(
            code=self.code,
            severity=self.severity,
            message=message,
            span=span,
            kernel=kernel.name if kernel else None,
            origin=origin,
            related=related or [],
            witness=witness,
            data=data or {},
            fix=fix,
            name=self.name,
        )


def matches(code: str, prefixes: Iterable[str]) -> bool:
    return any(code.startswith(p) for p in prefixes)


def selected(code: str, select: Iterable[str] | None, ignore: Iterable[str] | None) -> bool:
    """ruff's rule: the longest matching prefix wins; ``ALL`` selects all."""
    sel = [("" if p == "ALL" else p) for p in (select or ["TL"])]
    ign = [("" if p == "ALL" else p) for p in (ignore or [])]
    best_sel = max((len(p) for p in sel if code.startswith(p)), default=-1)
    best_ign = max((len(p) for p in ign if code.startswith(p)), default=-1)
    return best_sel >= 0 and best_sel > best_ign
