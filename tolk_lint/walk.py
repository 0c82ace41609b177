"""Which files a run lints: the paths given, and folders walked for *.py and *.ptx."""

from __future__ import annotations

import os
from typing import Iterable, Iterator

from tolk_lint.config import Settings

SUFFIXES = (".py", ".ptx")
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".nox", "node_modules",
             ".mypy_cache", ".ruff_cache", ".pytest_cache", ".tolk_lint_cache", "build", "dist"}  # fmt: skip


def iter_files(paths: Iterable[str], settings: Settings) -> Iterator[str]:
    """Files named on the command line are linted whatever their suffix (the
    engine says when it cannot); folders are walked in sorted order."""
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
                for f in sorted(files):
                    if f.endswith(SUFFIXES):
                        yield os.path.join(root, f)
        else:
            yield p
