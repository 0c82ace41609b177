"""The catalog: every rule of ``tolk_lint.rules``, found by code or name and
chosen by ``--select``/``--ignore``.

Kept apart from `tolk_lint.registry`, which the rules import for their base
class, so that the rules never import the module that imports them. The
rules themselves are imported on first use: `known_codes` reads their
module names (``tl101_divergent_barrier.py``), which is all a command line
or a configuration needs to be checked.
"""

from __future__ import annotations

import importlib.util
import pkgutil
import re
from functools import lru_cache
from typing import Iterable, Iterator

from tolk_lint.registry import Rule, selected

_RULE_MODULE = re.compile(r"^tl(\d{3})_")


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


@lru_cache(maxsize=1)
def known_codes() -> tuple[str, ...]:
    """Every rule's code, from the rules' module names, without importing them."""
    spec = importlib.util.find_spec("tolk_lint.rules")
    where = list(spec.submodule_search_locations or []) if spec is not None else []
    codes = {f"TL{m.group(1)}" for info in pkgutil.iter_modules(where) if (m := _RULE_MODULE.match(info.name))}
    return tuple(sorted(codes))


def unknown_selectors(selectors: Iterable[str]) -> list[str]:
    """The selectors (``TL1``, ``TL101``, ``ALL``) that name no rule."""
    codes = known_codes()
    return [s for s in selectors if s != "ALL" and not any(c.startswith(s) for c in codes)]
