"""``--output-format sarif``: SARIF 2.1.0 for GitHub code scanning and other viewers.

One run. ``tool.driver.rules`` lists every rule of the catalog in code order
(so ``ruleIndex`` is stable), each with ``shortDescription`` (the doc's
summary line), ``fullDescription`` (its "What it does", cut to GitHub's 1024
characters), ``help`` (the whole doc as text and markdown), ``helpUri`` and
``defaultConfiguration.level``. Each result has ``ruleId``, ``ruleIndex``,
``level``, the message, one location (repository-relative ``uri`` under
``%SRCROOT%``, which ``originalUriBaseIds`` defines, and the full region),
the kernel as a logical location, ``relatedLocations`` for the chain of
reasons (and, for PTX, the CUDA C line a ``.loc`` points to), and the fix as
``artifactChanges``.

Diagnostics a noqa suppressed are left out, because GitHub ignores
``suppressions`` and would open alerts for them; with ``--show-suppressed``
they are written with ``suppressions: [{kind: inSource}]``.

Levels: error -> error, warning -> warning, info -> note. Columns count code
points (``columnKind: unicodeCodePoints``); ``endColumn`` is exclusive.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tolk_lint import __version__
from tolk_lint.diagnostics import Diagnostic, Fix, report_frame
from tolk_lint.engine import LintResult
from tolk_lint.ir.nodes import Origin, Span
from tolk_lint.outputs import (INFORMATION_URL, relative_path, repo_root, rule_markdown, rule_url, section,
                               source_location)

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}
PROBLEM_SEVERITY = {"error": "error", "warning": "warning", "info": "recommendation"}
TAGS = {"0": ["tool"], "1": ["correctness", "divergence"], "2": ["correctness", "shared-memory"],
        "3": ["performance", "staging"], "4": ["performance", "host"]}  # fmt: skip
SRCROOT = "%SRCROOT%"


def _text(s: str, limit: int = 1024) -> str:
    s = s.strip()
    return s if len(s) <= limit else s[: limit - 1] + "…"


def rule_descriptor(rule) -> dict[str, Any]:
    doc = rule.doc()
    level = LEVELS[rule.severity.value]
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": _text(rule.summary())},
        "fullDescription": {"text": _text(section(doc, "What it does") or rule.summary())},
        "help": {"text": doc, "markdown": rule_markdown(rule)},
        "helpUri": rule_url(rule.code),
        "defaultConfiguration": {"level": level},
        "properties": {
            "tags": TAGS.get(rule.code[2:3], []),
            "problem.severity": PROBLEM_SEVERITY[rule.severity.value],
        },
    }


def _bare_descriptor(d: Diagnostic) -> dict[str, Any]:
    """A code the catalog does not hold (a rule added after this build)."""
    return {"id": d.code, "name": d.name or d.code, "shortDescription": {"text": d.code},
            "fullDescription": {"text": d.code}, "help": {"text": d.code},
            "defaultConfiguration": {"level": LEVELS[d.severity.value]}}  # fmt: skip


class _Locations:
    def __init__(self, root: str):
        self.root = root

    def artifact(self, path: str) -> dict[str, Any]:
        rel = relative_path(path, self.root)
        if rel is not None:
            return {"uri": quote(rel, safe="/"), "uriBaseId": SRCROOT}
        return {"uri": Path(os.path.abspath(path)).as_uri()}

    @staticmethod
    def region(span: Span) -> dict[str, Any]:
        line = max(1, span.line)
        col = max(1, span.column or 1)
        end_line = max(line, span.end_line or line)
        end_col = span.end_column or col + 1
        if end_line == line and end_col <= col:
            end_col = col + 1
        return {"startLine": line, "startColumn": col, "endLine": end_line, "endColumn": max(1, end_col)}

    def span(self, span: Span) -> dict[str, Any]:
        return {"artifactLocation": self.artifact(span.path), "region": self.region(span)}

    def origin(self, o: Origin, module_path: str) -> dict[str, Any]:
        from tolk_lint.suppress import origin_path

        region: dict[str, Any] = {"startLine": max(1, o.line)}
        if o.column:
            region["startColumn"] = o.column
        return {"artifactLocation": self.artifact(origin_path(module_path, o.path)), "region": region}


def _related(d: Diagnostic, loc: _Locations, at_source: bool = False) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(physical: dict[str, Any] | None, message: str) -> None:
        item: dict[str, Any] = {"id": len(out) + 1, "message": {"text": message}}
        if physical is not None:
            item["physicalLocation"] = physical
        out.append(item)

    if at_source:  # the result is on the CUDA C line: the PTX instruction linted is related
        add(loc.span(d.span), f"the PTX instruction linted (PTX line {d.span.line})")

    if d.origin is not None:  # the calls it was inlined into are among the related notes
        add(loc.origin(report_frame(d.origin), d.span.path), "the source line this comes from")
    for r in d.related:
        if r.origin is not None:
            add(loc.origin(report_frame(r.origin), d.span.path), r.message)
        elif r.span is not None:
            add(loc.span(r.span), r.message)
        else:
            add(None, r.message)
    for line in d.data.get("also_at", ()) if d.data else ():
        add(loc.span(Span(d.span.path, line, 1, line, 2)),
            f"the same finding at PTX line {line} (a copy of the same source line)")
    return out


def _fix(fix: Fix, loc: _Locations) -> dict[str, Any]:
    by_path: dict[str, list[dict[str, Any]]] = {}
    for e in fix.edits:
        region = loc.region(Span(e.path, e.line, e.column, e.end_line, e.end_column))
        if (e.line, e.column) == (e.end_line, e.end_column):  # a pure insertion: an empty region
            region["endColumn"] = region["startColumn"]
        by_path.setdefault(e.path, []).append(
            {"deletedRegion": region, "insertedContent": {"text": e.content}}
        )
    return {
        "description": {"text": fix.title},
        "artifactChanges": [
            {"artifactLocation": loc.artifact(p), "replacements": reps} for p, reps in by_path.items()
        ],
        "properties": {"applicability": fix.applicability.value},
    }


def _message(d: Diagnostic) -> str:
    text = d.message
    if d.witness:
        desc = d.witness.get("description") or ", ".join(f"{k} = {v}" for k, v in d.witness.items())
        text += f"\nWitness: {desc}"
    return text


def result_object(
    d: Diagnostic, rule_index: int, loc: _Locations, suppressed: bool = False
) -> dict[str, Any]:
    src = source_location(d)
    if src is not None:
        region: dict[str, Any] = {"startLine": src[1]}
        if src[2]:
            region["startColumn"] = src[2]
        physical = {"artifactLocation": loc.artifact(src[0]), "region": region}
    else:
        physical = loc.span(d.span)
    location: dict[str, Any] = {"physicalLocation": physical}
    if d.kernel:
        location["logicalLocations"] = [{"name": d.kernel, "kind": "function"}]
    res: dict[str, Any] = {
        "ruleId": d.code,
        "ruleIndex": rule_index,
        "level": LEVELS[d.severity.value],
        "message": {"text": _message(d)},
        "locations": [location],
    }
    related = _related(d, loc, at_source=src is not None)
    if related:
        res["relatedLocations"] = related
    if d.fix is not None and d.fix.edits:
        res["fixes"] = [_fix(d.fix, loc)]
    props = {k: v for k, v in (("kernel", d.kernel), ("witness", d.witness), ("data", d.data)) if v}
    if props:
        res["properties"] = props
    if suppressed:
        res["suppressions"] = [{"kind": "inSource", "justification": "tolk: noqa"}]
    return res


def sarif_log(
    results: list[LintResult], show_suppressed: bool = False, root: str | None = None
) -> dict[str, Any]:
    from tolk_lint.catalog import all_rules

    root = os.path.abspath(root or repo_root())
    loc = _Locations(root)
    rules = [rule_descriptor(r) for r in all_rules()]
    index = {r["id"]: i for i, r in enumerate(rules)}
    out = []
    for r in results:
        pairs = [(d, False) for d in r.diagnostics]
        if show_suppressed:
            pairs = sorted(pairs + [(d, True) for d in r.suppressed], key=lambda x: x[0].sort_key())
        for d, sup in pairs:
            if d.code not in index:
                index[d.code] = len(rules)
                rules.append(_bare_descriptor(d))
            out.append(result_object(d, index[d.code], loc, sup))
    root_uri = Path(root).as_uri().rstrip("/") + "/"
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "tolk-lint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URL,
                "rules": rules,
            }},
            "originalUriBaseIds": {SRCROOT: {"uri": root_uri}},
            "columnKind": "unicodeCodePoints",
            "results": out,
        }],
    }  # fmt: skip


def render(results: list[LintResult], show_suppressed: bool = False, root: str | None = None) -> str:
    return json.dumps(sarif_log(results, show_suppressed, root), indent=2, ensure_ascii=False) + "\n"
