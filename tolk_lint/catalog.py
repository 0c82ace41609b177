"""The catalog: every rule of ``tolk_lint.rules``, found by code or name and
chosen by ``--select``/``--ignore``.

Kept apart from `tolk_lint.registry`, which the rules import for their base
class, so that the rules never import the module that imports them. The
rules themselves are imported on first use; `tolk_lint.codes` knows their
codes without importing them.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from tolk_lint.registry import Rule, selected


def all_rules() -> list[type[Rule]]:
    from tolk_lint.rules import ALL_RULES  # imports every rule and the analyses they read

    return list(ALL_RULES)


def rule_by_code(code: str) -> type[Rule] | None:
    for r in all_rules():
        if r.code == code.upper() or r.name == code.lower():
            return r
    return None


def iter_rules(select: Iterable[str] | None = None, ignore: Iterable[str] | None = None) -> Iterator[type[Rule]]:
    for r in all_rules():
        if selected(r.code, select, ignore):
            yield r
