"""``--output-format github``: GitHub Actions workflow-command annotations.

    ::error file=k.py,line=3,endLine=3,col=9,endColumn=27,title=TL101 divergent-barrier::message

Escaping follows the runner (actions/toolkit ``command.ts``): ``%``, CR and LF
in the message become ``%25``, ``%0D``, ``%0A`` (``%`` first); property values
also escape ``:`` and ``,`` (``%3A``, ``%2C``). The runner drops ``col`` and
``endColumn`` from a range over several lines, so they are only written for
one-line ranges. ``file`` is relative to the repository root.

Order: errors, then warnings, then notices (info), each in file order.
GitHub shows at most 10 annotations of each kind per step and silently drops
the rest, so only the first ten of each are written as commands; the others
are printed as plain log lines (still in the log, not lost), and one final
``::notice::`` says how many were not annotated (a notice slot is kept free
for it). SARIF upload has no such cap.
"""

from __future__ import annotations

from tolk_lint.copies import also_at_text
from tolk_lint.diagnostics import Diagnostic, report_frame
from tolk_lint.engine import LintResult
from tolk_lint.outputs import relative_path, repo_root, source_location

LEVELS = {"error": "error", "warning": "warning", "info": "notice"}
PER_STEP = 10  # annotations of each kind GitHub shows per step


def escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s: str) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def _message(d: Diagnostic) -> str:
    lines = [d.message]
    if d.origin is not None:
        o = report_frame(d.origin)
        lines.append(f"  = in source: {o.path}:{o.line}")
    for r in d.related:
        loc = report_frame(r.origin)
        where = f"{loc.path}:{loc.line}" if loc else (f"{r.span.path}:{r.span.line}" if r.span else "")
        lines.append(f"  = note: {where + ': ' if where else ''}{r.message}")
    also = also_at_text(d)
    if also:
        lines.append(f"  = note: {also}")
    if d.witness:
        desc = d.witness.get("description") or ", ".join(f"{k} = {v}" for k, v in d.witness.items())
        lines.append(f"  = witness: {desc}")
    if d.fix is not None:
        lines.append(f"  = help: {d.fix.title}")
    return "\n".join(lines)


def annotation(d: Diagnostic, root: str) -> str:
    s = d.span
    src = source_location(d)
    if src is not None:  # PTX with line info: on the user's CUDA C line (the PTX line is in the message)
        path = relative_path(src[0], root) or src[0]
        props = [f"file={escape_property(path)}", f"line={src[1]}", f"endLine={src[1]}"]
        if src[2]:
            props.insert(2, f"col={src[2]}")
        title = f"{d.code} {d.name}".strip()
        props.append(f"title={escape_property(title)}")
        linted = relative_path(s.path, root) or s.path
        message = _message(d) + f"\n  = linted at: {linted}:{s.line}:{s.column} (PTX)"
        return f"::{LEVELS[d.severity.value]} {','.join(props)}::{escape_data(message)}"
    path = relative_path(s.path, root) or s.path
    end_line = s.end_line or s.line
    props = [f"file={escape_property(path)}", f"line={s.line}"]
    if end_line == s.line:
        props += [f"col={s.column}", f"endLine={end_line}", f"endColumn={s.end_column or s.column + 1}"]
    else:
        props.append(f"endLine={end_line}")
    title = f"{d.code} {d.name}".strip()
    props.append(f"title={escape_property(title)}")
    return f"::{LEVELS[d.severity.value]} {','.join(props)}::{escape_data(_message(d))}"


def plain(d: Diagnostic) -> str:
    return f"{d.span.path}:{d.span.line}:{d.span.column}: {d.code} {d.message}"


def render(results: list[LintResult], root: str | None = None, per_step: int = PER_STEP) -> str:
    root = root or repo_root()
    diags = [d for r in results for d in r.diagnostics]
    diags.sort(key=lambda d: (d.severity.rank,) + d.sort_key())
    by_level: dict[str, list[Diagnostic]] = {"error": [], "warning": [], "notice": []}
    for d in diags:
        by_level[LEVELS[d.severity.value]].append(d)
    overflow = any(len(v) > per_step for v in by_level.values())
    lines: list[str] = []
    rest: list[Diagnostic] = []
    for level, ds in by_level.items():
        cap = per_step - 1 if (overflow and level == "notice") else per_step
        lines += [annotation(d, root) for d in ds[:cap]]
        rest += ds[cap:]
    if rest:
        lines += [plain(d) for d in rest]
        n = len(rest)
        note = (
            f"{n} more diagnostic{'s' if n != 1 else ''} not annotated (GitHub shows at most "
            f"{per_step} annotations of each kind per step): see the lines above, or upload SARIF"
        )
        lines.append(f"::notice::{escape_data(note)}")
    return "\n".join(lines) + ("\n" if lines else "")
