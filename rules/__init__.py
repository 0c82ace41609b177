"""The rule catalog, installed as ``tolk_lint.rules`` (setuptools maps this
folder there: see ``[tool.setuptools.package-dir]`` in pyproject.toml).

One module per rule, named ``tl<code>_<snake_name>.py``, so sorting the folder
gives the catalog in code order; ``ALL_RULES`` is that list. Each module holds
one `tolk_lint.registry.Rule` subclass whose module docstring is the rule's
documentation.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from tolk_lint.registry import Rule


def _discover() -> tuple[type[Rule], ...]:
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if not info.name.startswith("tl"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        for obj in vars(mod).values():
            if inspect.isclass(obj) and issubclass(obj, Rule) and obj is not Rule and obj.__module__ == mod.__name__:
                found.append(obj)
    return tuple(sorted(found, key=lambda r: r.code))


ALL_RULES: tuple[type[Rule], ...] = _discover()
