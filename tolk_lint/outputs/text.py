"""Human output, like ruff and rustc: ``path:line:col: CODE message``, the source
line with a caret under the span, then the user's source line (PTX ``.loc``),
the related notes (the chain of reasons) and the witness.

Colour is the caller's decision (`use_color`): only on a terminal, never with
``NO_COLOR`` set, always with ``FORCE_COLOR`` set (https://no-color.org,
https://force-color.org), unless ``--color`` says otherwise.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import TextIO

from tolk_lint.copies import also_at_text
from tolk_lint.diagnostics import Applicability, Diagnostic, report_frame
from tolk_lint.engine import LintResult

_COLORS = {"error": "\x1b[31m", "warning": "\x1b[33m", "info": "\x1b[36m"}
_BOLD, _DIM, _RESET = "\x1b[1m", "\x1b[2m", "\x1b[0m"


def use_color(stream: TextIO, choice: str = "auto") -> bool:
    if choice in ("always", "never"):
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _line(source_lines: list[str], n: int) -> str | None:
    if 1 <= n <= len(source_lines):
        return source_lines[n - 1]
    return None


def _read_lines(path: str) -> list[str]:
    """The file's lines as the linter read them (its encoding, no byte-order mark)."""
    from tolk_lint.engine import decode, read_source

    data, _err = read_source(path)  # never a FIFO (it would block)
    if data is None:
        return []
    text, _err = decode(data, path)
    return (text if text is not None else data.decode("utf-8", errors="replace")).splitlines()


def _origin_text(d: Diagnostic, module_path: str) -> str | None:
    if d.origin is None:
        return None
    from tolk_lint.suppress import origin_path

    o = report_frame(d.origin)
    return _line(_read_lines(origin_path(module_path, o.path)), o.line)


def render_one(d: Diagnostic, source_lines: list[str], color: bool = False, suppressed: bool = False) -> str:
    c = (lambda code, s: f"{code}{s}{_RESET}") if color else (lambda code, s: s)
    sev = d.severity.value
    fixable = " [*]" if d.fix is not None and d.fix.applicability == Applicability.SAFE else ""
    tag = " (suppressed)" if suppressed else ""
    head = (f"{c(_BOLD, f'{d.span.path}:{d.span.line}:{d.span.column}:')} "
            f"{c(_COLORS[sev] + _BOLD, d.code)}{fixable} {d.message}{c(_DIM, tag) if tag else ''}")  # fmt: skip
    out = [head]
    src = _line(source_lines, d.span.line)
    if src is not None:
        gutter = f"{d.span.line:>5} | "
        out.append(gutter + src.rstrip())
        start = max(1, d.span.column)
        end = d.span.end_column if d.span.end_line in (None, d.span.line) and d.span.end_column else start + 1
        width = max(1, min(end, len(src) + 1) - start)
        out.append(" " * (len(gutter) - 2) + "| " + " " * (start - 1) + c(_COLORS[sev], "^" * width))
    o = report_frame(d.origin)
    if o is not None and (o.path, o.line) != (d.span.path, d.span.line):  # a Python line needs no "in source"
        note = f"  = in source: {o.path}:{o.line}"
        text = _origin_text(d, d.span.path)
        if text is not None:
            note += f": {text.strip()}"
        out.append(note)
    for r in d.related:
        loc = report_frame(r.origin)
        where = f"{loc.path}:{loc.line}" if loc else (f"{r.span.path}:{r.span.line}" if r.span else "")
        if loc and r.span is not None and r.span.path != loc.path:  # a PTX line with `.loc`: both lines
            where += f" (PTX line {r.span.line})" if r.span.path.endswith(".ptx") else \
                f" ({os.path.basename(r.span.path)}:{r.span.line})"  # fmt: skip
        out.append(f"  = note: {where + ': ' if where else ''}{r.message}")
    also = also_at_text(d)
    if also:
        out.append(f"  = note: {also}")
    if d.witness:
        desc = d.witness.get("description") or ", ".join(f"{k} = {v}" for k, v in d.witness.items())
        out.append(f"  = witness: {desc}")
    if d.fix is not None:
        out.append(f"  = help: {d.fix.title}")
    return "\n".join(out)


def render(results: list[LintResult], color: bool = False, show_source: bool = True,
           show_suppressed: bool = False) -> str:  # fmt: skip
    """Every diagnostic, in the results' order; a result answered from the
    cache has no module, so its source lines are read from the file."""
    blocks = []
    for r in results:
        items = [(d, False) for d in r.diagnostics]
        if show_suppressed:
            items = sorted(items + [(d, True) for d in r.suppressed], key=lambda x: x[0].sort_key())
        if not items:
            continue
        lines: list[str] = []
        if show_source:
            lines = r.module.lines() if r.module is not None else _read_lines(r.path)
        for d, sup in items:
            blocks.append(render_one(d, lines, color, sup))
    return "\n\n".join(blocks) + ("\n" if blocks else "")


def fixable_count(results: list[LintResult]) -> int:
    return sum(1 for r in results for d in r.diagnostics
               if d.fix is not None and d.fix.applicability == Applicability.SAFE)  # fmt: skip


def summary(results: list[LintResult], fixable: int | None = None) -> str:
    n = sum(len(r.diagnostics) for r in results)
    if n == 0:
        return "All checks passed!"
    s = f"Found {n} diagnostic{'s' if n != 1 else ''}."
    fixable = fixable_count(results) if fixable is None else fixable
    if fixable:
        s += f"\n[*] {fixable} fixable with `tolk-lint fix`."
    return s


def statistics(results: list[LintResult]) -> str:
    """ruff's ``--statistics``: one line per code, most frequent first:
    ``count<TAB>code<TAB>[*] name`` (``[*]``: a safe fix exists for some)."""
    counts: Counter[str] = Counter()
    names: dict[str, str] = {}
    fixable: set[str] = set()
    for r in results:
        for d in r.diagnostics:
            counts[d.code] += 1
            names[d.code] = d.name
            if d.fix is not None and d.fix.applicability == Applicability.SAFE:
                fixable.add(d.code)
    if not counts:
        return ""
    width = len(str(max(counts.values())))
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return "\n".join(f"{n:>{width}}\t{code}\t{'[*]' if code in fixable else '[ ]'} {names[code]}"
                     for code, n in rows) + "\n"  # fmt: skip
