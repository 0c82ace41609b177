"""Applying fixes: text edits by (line, column) ranges, conflicts left out.

Edits of different fixes may overlap; like ruff, a fix applies whole or not at
all, in order of position, and a fix that overlaps one already applied waits
for the next pass (``apply_fixes`` runs passes until nothing changes, with a
bound, re-linting in between is the caller's business).
"""

from __future__ import annotations

from tolk_lint.diagnostics import Applicability, Diagnostic, Edit, Fix


def _offset(line_starts: list[int], text: str, line: int, column: int) -> int:
    if line - 1 >= len(line_starts):
        return len(text)
    return min(line_starts[line - 1] + column - 1, len(text))


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def apply_edits(text: str, fixes: list[Fix]) -> tuple[str, int]:
    """Apply each fix's edits if none overlaps an edit applied before.
    Returns the new text and how many fixes applied."""
    starts = _line_starts(text)
    spans: list[tuple[int, int, str]] = []
    applied = 0
    taken: list[tuple[int, int]] = []
    for fix in sorted(fixes, key=lambda f: min((e.line, e.column) for e in f.edits) if f.edits else (0, 0)):
        mine = [
            (_offset(starts, text, e.line, e.column), _offset(starts, text, e.end_line, e.end_column), e.content)
            for e in fix.edits
        ]
        if any(a < y and x < b or (a == b == x == y) for a, b, _ in mine for x, y in taken):
            continue
        spans += mine
        taken += [(a, b) for a, b, _ in mine]
        applied += 1
    out = text
    for a, b, content in sorted(spans, key=lambda s: s[0], reverse=True):
        out = out[:a] + content + out[b:]
    return out, applied


def fixes_for(diags: list[Diagnostic], path: str, unsafe: bool = False) -> list[Fix]:
    """The fixes that may apply to ``path``: safe ones, and unsafe ones when asked."""
    ok = {Applicability.SAFE} | ({Applicability.UNSAFE} if unsafe else set())
    out = []
    for d in diags:
        f = d.fix
        if f is None or f.applicability not in ok or not f.edits:
            continue
        if all(e.path == path for e in f.edits):
            out.append(f)
    return out


__all__ = ["Edit", "apply_edits", "fixes_for"]
