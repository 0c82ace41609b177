"""Between tolk_lint's diagnostics and the LSP's.

tolk_lint counts lines and columns from 1, in code points, end exclusive; the
LSP counts from 0, in the client's units (UTF-16 unless negotiated), end
exclusive. Every conversion goes through `Positions`, built on the document's
own lines, so a kernel with non-ASCII comments still gets the right ranges.

The LSP diagnostic carries in ``data`` what the code-action handler needs
without linting again (ruff's pattern): ``{"code", "fix": {"title",
"applicability", "edits": [{"uri", "range", "newText"}]} | None, "kernel",
"when_asked"}``; ``when_asked``: a fix the lint did not work out (an
unsafe one, proved by a second lint) that the server works out when the
editor asks for the diagnostic's code actions.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from lsprotocol import types

from tolk_lint.diagnostics import Diagnostic, Severity, report_frame
from tolk_lint.ir.nodes import Origin, Span
from tolk_lint.outputs import rule_url

SOURCE = "tolk-lint"
SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}


def path_to_uri(path: str) -> str:
    from pygls.uris import from_fs_path

    return from_fs_path(os.path.abspath(path)) or path


class Positions:
    """Converts positions of one document (its ``lines``) with ``codec``."""

    def __init__(self, lines: Sequence[str], codec: Any = None):
        self.lines = [ln.rstrip("\r\n") for ln in lines]
        self.codec = codec

    def units(self, text: str) -> int:
        return self.codec.client_num_units(text) if self.codec is not None else len(text)

    def to_client(self, line: int, column: int) -> types.Position:
        """1-based line and code-point column -> an LSP position."""
        line0, col0 = max(0, line - 1), max(0, column - 1)
        if line0 < len(self.lines):
            text = self.lines[line0]
            return types.Position(line=line0, character=self.units(text[: min(col0, len(text))]))
        return types.Position(line=line0, character=col0)

    def from_client(self, pos: types.Position) -> tuple[int, int]:
        """An LSP position -> 0-based line and code-point column."""
        if pos.line >= len(self.lines):
            return pos.line, 0
        text, units, i = self.lines[pos.line], 0, 0
        while i < len(text) and units < pos.character:
            units += self.units(text[i])
            i += 1
        return pos.line, i

    def span(self, s: Span) -> types.Range:
        start = self.to_client(s.line, s.column or 1)
        end_line = s.end_line or s.line
        end_col = s.end_column if s.end_column is not None else (s.column or 1) + 1
        end = self.to_client(end_line, end_col)
        if (end.line, end.character) <= (start.line, start.character):
            end = types.Position(line=start.line, character=start.character + 1)
        return types.Range(start=start, end=end)

    def edit_range(self, line: int, column: int, end_line: int, end_column: int) -> types.Range:
        return types.Range(start=self.to_client(line, column), end=self.to_client(end_line, end_column))


def _origin_location(o: Origin, module_path: str) -> types.Location:
    from tolk_lint.suppress import origin_path

    line0 = max(0, o.line - 1)
    col0 = max(0, (o.column or 1) - 1)
    rng = types.Range(start=types.Position(line=line0, character=col0),
                      end=types.Position(line=line0, character=col0 + 1))  # fmt: skip
    return types.Location(uri=path_to_uri(origin_path(module_path, o.path)), range=rng)


def related_information(d: Diagnostic, uri: str, pos: Positions) -> list[types.DiagnosticRelatedInformation]:
    here = types.Location(uri=uri, range=pos.span(d.span))
    out = []
    if d.origin is not None:  # the calls it was inlined into are among the related notes
        out.append(types.DiagnosticRelatedInformation(_origin_location(report_frame(d.origin), d.span.path),
                                                      "the source line this comes from"))  # fmt: skip
    for r in d.related:
        if r.origin is not None:
            loc = _origin_location(report_frame(r.origin), d.span.path)
        elif r.span is not None and os.path.abspath(r.span.path) == os.path.abspath(d.span.path):
            loc = types.Location(uri=uri, range=pos.span(r.span))
        elif r.span is not None:
            loc = types.Location(uri=path_to_uri(r.span.path), range=Positions([]).span(r.span))
        else:
            loc = here
        out.append(types.DiagnosticRelatedInformation(loc, r.message))
    return out


def fix_data(d: Diagnostic, uri: str, pos: Positions) -> dict[str, Any] | None:
    if d.fix is None or not d.fix.edits:
        return None
    edits = []
    for e in d.fix.edits:
        same = os.path.abspath(e.path) == os.path.abspath(d.span.path)
        p = pos if same else Positions([])
        rng = p.edit_range(e.line, e.column, e.end_line, e.end_column)
        edits.append({"uri": uri if same else path_to_uri(e.path),
                      "range": {"start": {"line": rng.start.line, "character": rng.start.character},
                                "end": {"line": rng.end.line, "character": rng.end.character}},
                      "newText": e.content})  # fmt: skip
    return {"title": d.fix.title, "applicability": d.fix.applicability.value, "edits": edits}


def to_lsp(d: Diagnostic, uri: str, pos: Positions) -> types.Diagnostic:
    message = d.message
    if d.witness:
        desc = d.witness.get("description") or ", ".join(f"{k} = {v}" for k, v in d.witness.items())
        message += f"\nwitness: {desc}"
    tags = [types.DiagnosticTag.Unnecessary] if d.code == "TL003" else None
    return types.Diagnostic(
        range=pos.span(d.span),
        message=message,
        severity=SEVERITY[d.severity],
        code=d.code,
        code_description=types.CodeDescription(href=rule_url(d.code)),
        source=SOURCE,
        related_information=related_information(d, uri, pos) or None,
        tags=tags,
        data={"code": d.code, "name": d.name, "fix": fix_data(d, uri, pos), "kernel": d.kernel,
              "when_asked": fix_when_asked(d)},
    )


def fix_when_asked(d: Diagnostic) -> bool:
    """Whether ``d`` may have a fix its lint left out: its rule works unsafe
    fixes out only when asked (`Rule.fixes_when_asked`) and this lint did not."""
    from tolk_lint.catalog import rule_by_code

    rule = rule_by_code(d.code)
    return bool(d.fix is None and d.kernel and rule is not None and rule.fixes_when_asked
                and "fixable" not in (d.data or {}))  # fmt: skip


def text_edits(fix: dict[str, Any]) -> dict[str, list[types.TextEdit]]:
    """A fix from a diagnostic's ``data`` as LSP text edits, by URI."""
    out: dict[str, list[types.TextEdit]] = {}
    for e in fix.get("edits", []):
        r = e["range"]
        rng = types.Range(start=types.Position(line=r["start"]["line"], character=r["start"]["character"]),
                          end=types.Position(line=r["end"]["line"], character=r["end"]["character"]))  # fmt: skip
        out.setdefault(e["uri"], []).append(types.TextEdit(range=rng, new_text=e["newText"]))
    return out


def _key(r: types.Range) -> tuple[int, int, int, int]:
    return (r.start.line, r.start.character, r.end.line, r.end.character)


def non_overlapping(edits: list[types.TextEdit]) -> list[types.TextEdit]:
    """The edits in order, dropping any that overlaps one kept before it
    (fixes are applied together only when they do not touch)."""
    kept: list[types.TextEdit] = []
    for e in sorted(edits, key=lambda e: _key(e.range)):
        if kept:
            last = kept[-1].range.end
            if (e.range.start.line, e.range.start.character) < (last.line, last.character):
                continue
        kept.append(e)
    return kept
