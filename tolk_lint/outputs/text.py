"""Human output, like ruff and rustc: ``path:line:col: CODE message``, the source
line with a caret under the span, then the user's source line (PTX ``.loc``),
the related notes (the chain of reasons) and the witness."""

from __future__ import annotations

import os

from tolk_lint.diagnostics import Diagnostic
from tolk_lint.engine import LintResult

_COLORS = {"error": "\x1b[31m", "warning": "\x1b[33m", "info": "\x1b[36m"}
_BOLD, _DIM, _RESET = "\x1b[1m", "\x1b[2m", "\x1b[0m"


def _line(source_lines: list[str], n: int) -> str | None:
    if 1 <= n <= len(source_lines):
        return source_lines[n - 1]
    return None


def _origin_text(d: Diagnostic, module_path: str) -> str | None:
    if d.origin is None:
        return None
    o = d.origin.outermost()
    path = o.path if os.path.isabs(o.path) else os.path.join(os.path.dirname(module_path), o.path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        return _line(lines, o.line)
    except OSError:
        return None


def render_one(d: Diagnostic, source_lines: list[str], color: bool = False) -> str:
    c = (lambda code, s: f"{code}{s}{_RESET}") if color else (lambda code, s: s)
    sev = d.severity.value
    head = f"{c(_BOLD, f'{d.span.path}:{d.span.line}:{d.span.column}:')} {c(_COLORS[sev] + _BOLD, d.code)} {d.message}"
    out = [head]
    src = _line(source_lines, d.span.line)
    if src is not None:
        gutter = f"{d.span.line:>5} | "
        out.append(gutter + src.rstrip())
        start = max(1, d.span.column)
        end = d.span.end_column if d.span.end_line in (None, d.span.line) and d.span.end_column else start + 1
        width = max(1, min(end, len(src) + 1) - start)
        out.append(" " * (len(gutter) - 2) + "| " + " " * (start - 1) + c(_COLORS[sev], "^" * width))
    if d.origin is not None:
        o = d.origin.outermost()
        note = f"  = in source: {o.path}:{o.line}"
        text = _origin_text(d, d.span.path)
        if text is not None:
            note += f": {text.strip()}"
        out.append(note)
    for r in d.related:
        loc = r.origin.outermost() if r.origin is not None else None
        where = f"{loc.path}:{loc.line}" if loc else (f"{r.span.path}:{r.span.line}" if r.span else "")
        out.append(f"  = note: {where + ': ' if where else ''}{r.message}")
    if d.witness:
        desc = d.witness.get("description") or ", ".join(f"{k} = {v}" for k, v in d.witness.items())
        out.append(f"  = witness: {desc}")
    if d.fix is not None:
        out.append(f"  = help: {d.fix.title}")
    return "\n".join(out)


def render(results: list[LintResult], color: bool = False, show_source: bool = True) -> str:
    blocks = []
    for r in results:
        lines = r.module.source.splitlines() if (r.module is not None and show_source) else []
        for d in r.diagnostics:
            blocks.append(render_one(d, lines, color))
    return "\n\n".join(blocks) + ("\n" if blocks else "")


def summary(results: list[LintResult], fixable: int = 0) -> str:
    n = sum(len(r.diagnostics) for r in results)
    if n == 0:
        return "All checks passed!"
    s = f"Found {n} diagnostic{'s' if n != 1 else ''}."
    if fixable:
        s += f"\n[*] {fixable} fixable with `tolk-lint fix`."
    return s
