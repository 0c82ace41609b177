"""``--output-format json``: one JSON array of diagnostics (the contract of docs/integrations.md).

With ``--show-suppressed`` the diagnostics a noqa silenced are included too,
each with ``"suppressed": true`` (the key is absent otherwise)."""

from __future__ import annotations

import json

from tolk_lint.engine import LintResult


def render(results: list[LintResult], show_suppressed: bool = False) -> str:
    items = []
    for r in results:
        pairs = [(d, False) for d in r.diagnostics]
        if show_suppressed:
            pairs = sorted(pairs + [(d, True) for d in r.suppressed], key=lambda x: x[0].sort_key())
        for d, sup in pairs:
            j = d.to_json()
            if sup:
                j["suppressed"] = True
            items.append(j)
    return json.dumps(items, indent=2) + "\n"
