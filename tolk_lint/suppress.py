"""Suppressions: ``tolk: noqa`` comments in either language.

``# tolk: noqa`` / ``# tolk: noqa: TL101, TL203`` (Python) and
``// tolk: noqa: TL101`` (PTX, CUDA C) on the line a diagnostic points at
silence it. A diagnostic whose origin is a line of a CUDA C (or Triton,
Python) file the PTX came from honours a noqa on that line too, when that
file is readable.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

from tolk_lint.config import Settings
from tolk_lint.diagnostics import Diagnostic
from tolk_lint.ir.nodes import Module

NOQA = re.compile(r"(?:#|//)\s*tolk:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:\s*,\s*[A-Z]+[0-9]*)*))?", re.I)


def noqa_codes(line: str) -> frozenset[str] | None:
    """None: no noqa; empty set: a blanket noqa; else the codes named."""
    m = NOQA.search(line)
    if not m:
        return None
    codes = m.group("codes")
    if not codes:
        return frozenset()
    return frozenset(c.strip().upper() for c in codes.split(","))


@lru_cache(maxsize=64)
def _file_lines(path: str, mtime: float) -> tuple[str, ...]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return tuple(f.read().splitlines())
    except OSError:
        return ()


def _lines_of(path: str) -> tuple[str, ...]:
    try:
        return _file_lines(path, os.path.getmtime(path))
    except OSError:
        return ()


def _suppressed_at(lines, line: int, code: str) -> bool:
    if not (1 <= line <= len(lines)):
        return False
    codes = noqa_codes(lines[line - 1])
    return codes is not None and (not codes or any(code.startswith(c) for c in codes))


def _origin_path(module: Module, origin_path: str) -> str:
    if os.path.isabs(origin_path):
        return origin_path
    return os.path.join(os.path.dirname(os.path.abspath(module.path)), origin_path)


def apply_suppressions(
    diags: list[Diagnostic], module: Module, settings: Settings
) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """Split ``diags`` into (kept, suppressed)."""
    own = tuple(module.source.splitlines()) if module is not None else ()
    kept, suppressed = [], []
    for d in diags:
        hit = _suppressed_at(own, d.span.line, d.code)
        if not hit and d.origin is not None and module is not None:
            for o in d.origin.chain():
                if _suppressed_at(_lines_of(_origin_path(module, o.path)), o.line, d.code):
                    hit = True
                    break
        (suppressed if hit else kept).append(d)
    return kept, suppressed
