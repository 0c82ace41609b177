"""``--output-format json``: one JSON array of diagnostics (DESIGN.md's contract)."""

from __future__ import annotations

import json

from tolk_lint.engine import LintResult


def render(results: list[LintResult]) -> str:
    items = [d.to_json() for r in results for d in r.diagnostics]
    return json.dumps(items, indent=2) + "\n"
