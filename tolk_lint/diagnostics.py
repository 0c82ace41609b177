"""What the tool says: one `Diagnostic` type that feeds every output.

A diagnostic has a code, a severity, a message, the span it points at in the
linted file, the kernel, the user's source line (`origin`, from PTX ``.loc``),
related locations (the chain of reasons), an optional witness (two threads and
input values Z3 found), rule-specific ``data`` and an optional `Fix`.

Fixes follow ruff: a list of non-overlapping text edits plus an
`Applicability` (safe fixes apply with ``fix``; unsafe ones need
``--unsafe-fixes``; display-only ones are shown, never applied).
"""

from __future__ import annotations

import enum
import os
import re
from dataclasses import dataclass, field
from typing import Any

from tolk_lint.ir.nodes import Origin, Span


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


class Applicability(str, enum.Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


@dataclass(frozen=True)
class Edit:
    """Replace the text between two 1-based (line, column) positions of
    ``path`` (end exclusive) with ``content``."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    content: str

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "content": self.content,
        }


@dataclass(frozen=True)
class Fix:
    title: str
    edits: tuple[Edit, ...]
    applicability: Applicability = Applicability.SAFE

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "applicability": self.applicability.value,
            "edits": [e.to_json() for e in self.edits],
        }


@dataclass(frozen=True)
class Related:
    """A step of the reason chain: a location and what happens there."""

    message: str
    span: Span | None = None
    origin: Origin | None = None

    def to_json(self) -> dict[str, Any]:
        loc = report_frame(self.origin)
        if loc is not None:
            return {"path": loc.path, "line": loc.line, "column": loc.column or 1, "message": self.message,
                    "linted_path": self.span.path if self.span else None,
                    "linted_line": self.span.line if self.span else None}
        return {
            "path": self.span.path if self.span else None,
            "line": self.span.line if self.span else None,
            "column": self.span.column if self.span else None,
            "message": self.message,
        }


# Files of the CUDA toolkit and its libraries: a report goes to the user's
# line that reaches them, not into the headers.
_TOOLKIT = re.compile(r"/cuda[^/]*/(bin/\.\./)?(targets/[^/]+/)?include/"
                      r"|(^|/)(cub|thrust|cuda|cccl|cooperative_groups|crt)/([^/]+/)*[^/]+\.(h|hpp|cuh|inl)$"
                      r"|(^|/)(sm_\d+_intrinsics|sm_\d+_atomic_functions|device_functions|device_atomic_functions"
                      r"|device_double_functions|math_functions|cooperative_groups|cuda_fp16|cuda_bf16|cuda_fp8"
                      r"|cuda_pipeline|cuda_awbarrier|texture_fetch_functions|surface_functions|mma)[^/]*\.(h|hpp)$")  # fmt: skip


def is_toolkit_path(path: str) -> bool:
    """A header of the CUDA toolkit or its libraries (cub, thrust, libcu++, cooperative groups)."""
    return bool(_TOOLKIT.search(path.replace("\\", "/")))


def user_frame(origin: Origin | None) -> Origin | None:
    """The frame of an origin chain a person reads: the innermost one in the
    user's own code, past the toolkit's headers (the line of a
    ``__shfl_down_sync`` in ``sm_30_intrinsics.hpp`` reads as the user's call
    of it), with the calls it was inlined into still chained as its
    ``inlined_at``; None when every frame is the toolkit's.

    A finding inside a device function is placed at its own line there, the
    calls being notes, as clang and mypy report inside the called function.
    Barriers are the exception (acceptance convention 1: at the call in the
    kernel); their rules pass that frame as the origin."""
    o = origin
    while o is not None and is_toolkit_path(o.path):
        o = o.inlined_at
    return o


def report_frame(origin: Origin | None) -> Origin | None:
    """`user_frame`, or the outermost frame when every frame is the toolkit's."""
    if origin is None:
        return None
    return user_frame(origin) or origin.outermost()


def callers(origin: Origin | None) -> list[Origin]:
    """The user's calls the reported frame of ``origin`` was inlined into,
    innermost first, each without the calls around it."""
    frame = report_frame(origin)
    out = []
    o = frame.inlined_at if frame is not None else None
    while o is not None:
        if not is_toolkit_path(o.path):
            out.append(Origin(o.path, o.line, o.column))
        o = o.inlined_at
    return out


def where(ins) -> str:
    """How a message names the line of an instruction (an `Instr`), saying
    which file's line it is: ``line 12`` of a Python kernel; for PTX,
    ``line 88 of matrixMul.cu`` (its ``.loc``, the user's own frame past the
    toolkit's headers) or ``PTX line 57`` when it has none. Inside a function
    inlined into the kernel, the call follows: ``line 5 (in a function called
    at line 17)``."""
    out = where_lines([ins])
    origin = getattr(ins, "origin", None) if ins is not None else None
    calls = callers(origin)
    if not calls:
        return out
    call = calls[-1]
    span = ins.span
    same = call.path == report_frame(origin).path or (span is not None and call.path == span.path)
    label = "" if same else f" of {os.path.basename(call.path)}"
    return f"{out} (in a function called at line {call.line}{label})"


def where_lines(instrs) -> str:
    """`where` of several instructions at once: ``lines 25, 27 of k.cu``,
    ``PTX lines 40, 52``, one group per file (in the order first met)."""
    groups: dict[str, set[int]] = {}
    for ins in instrs:
        label, line = _file_and_line(ins)
        if line:
            groups.setdefault(label, set()).add(line)
    parts = []
    for label, lines in groups.items():
        s = "s" if len(lines) > 1 else ""
        shown = ", ".join(str(n) for n in sorted(lines))
        if label == "PTX":
            parts.append(f"PTX line{s} {shown}")
        elif label:
            parts.append(f"line{s} {shown} of {label}")
        else:
            parts.append(f"line{s} {shown}")
    return " and ".join(parts) or "?"


def _file_and_line(ins) -> tuple[str, int]:
    """(``k.cu``, 88) for a PTX line with ``.loc``, (``PTX``, 57) for one
    without, (``""``, 12) for a line of the linted source itself."""
    span = ins.span if ins is not None else None
    if span is None:
        return "", 0
    if ins.origin is not None:
        o = report_frame(ins.origin)
        if o.path != span.path:
            return os.path.basename(o.path), o.line
        return "", o.line
    block = getattr(ins, "block", None)
    language = block.kernel.language if block is not None and block.kernel is not None else None
    if language == "ptx" or (language is None and span.path.endswith(".ptx")):
        return "PTX", span.line
    return "", span.line


# Codes that mean a file or a kernel was not (completely) analysed: a parse
# error, an internal error, a budget that ran out. They are never selected
# away, ignored or suppressed by a noqa -- a file the tool could not analyse
# must never look clean -- and they make the run exit 2.
NOT_ANALYSED = frozenset({"TL001", "TL004", "TL005"})

# The one line every internal error (TL004) ends with.
REPORT_REQUEST = "this is a bug in tolk-lint: please report it with this file"


@dataclass
class Diagnostic:
    code: str
    severity: Severity
    message: str
    span: Span
    kernel: str | None = None
    origin: Origin | None = None
    related: list[Related] = field(default_factory=list)
    witness: dict[str, Any] | None = None
    data: dict[str, Any] = field(default_factory=dict)
    fix: Fix | None = None
    name: str = ""  # the rule's kebab-case name

    def sort_key(self) -> tuple:
        return (self.span.path, self.span.line, self.span.column, self.code, self.message)

    def to_json(self) -> dict[str, Any]:
        origin = None
        if self.origin is not None:
            o = report_frame(self.origin)
            origin = {"path": o.path, "line": o.line, "column": o.column}
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "message": self.message,
            "path": self.span.path,
            "line": self.span.line,
            "column": self.span.column,
            "end_line": self.span.end_line or self.span.line,
            "end_column": self.span.end_column or self.span.column + 1,
            "kernel": self.kernel,
            "origin": origin,
            "related": [r.to_json() for r in self.related],
            "witness": self.witness,
            "data": self.data,
            "fix": self.fix.to_json() if self.fix else None,
        }


def internal_error(where: str, error: BaseException, span: Span, kernel: str | None = None) -> Diagnostic:
    """TL004: the tool failed ``where`` ("in TL201 (shared-race) on kernel
    `k`", "while reading the file") with ``error``, a bug of ours; it names
    the exception's type and asks for a report. An error, never a warning:
    what it could not analyse must not look clean."""
    return Diagnostic(
        code="TL004",
        severity=Severity.ERROR,
        message=f"internal error {where}: {type(error).__name__}: {error}; {REPORT_REQUEST}",
        span=span,
        kernel=kernel,
        name="internal-error",
    )
