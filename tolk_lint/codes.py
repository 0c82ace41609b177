"""The rule codes there are, known without importing a rule.

A rule lives in ``rules/tl<code>_<name>.py`` (installed as
``tolk_lint.rules``), so the module names are the catalog's codes: enough to
check a command line's or a configuration's ``select``/``ignore`` before
anything is linted, without importing the rules and the analyses they read.
"""

from __future__ import annotations

import importlib.util
import pkgutil
import re
from functools import lru_cache
from typing import Iterable

_RULE_MODULE = re.compile(r"^tl(\d{3})_")


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
