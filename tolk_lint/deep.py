"""Deep inputs: every lint runs on a thread with a large stack.

The front ends and the analyses walk syntax trees and expression graphs
recursively, so a valid file nested deeply (a 500-branch ``elif`` chain is
500 nested ``If`` nodes; a sum of 2,000 terms is 2,000 nested additions)
needs far more than Python's default 1,000 frames and a thread's default
8 MiB of C stack. `run_deep` runs a call on a fresh thread of `STACK_BYTES`
(address space only: the pages a shallow lint never touches cost nothing)
with the recursion limit raised to `RECURSION_LIMIT` (process-wide, raised
once and never lowered: a shallow thread never comes near it), and hands
back its result or its exception. What nests deeper still is reported by
the front ends as TL001 naming `RECURSION_LIMIT`.

What it may import: nothing of tolk_lint.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# Frames a lint may nest. A level of a syntax tree costs a handful of frames
# (the 500-branch `elif` chain about 4,000); CPython itself refuses to parse
# expressions nested past about 2,000 levels and blocks past 100.
RECURSION_LIMIT = 60_000
# A frame that recurses through C (isinstance, a dataclass's __eq__) takes
# up to a few KiB of C stack: room for every frame of the limit.
STACK_BYTES = 1 << 30

_lock = threading.Lock()


def _raise_limit() -> None:
    with _lock:
        if sys.getrecursionlimit() < RECURSION_LIMIT:
            sys.setrecursionlimit(RECURSION_LIMIT)


def run_deep(fn: Callable[..., T], *args, **kwargs) -> T:
    """``fn(*args, **kwargs)`` on a thread with a deep stack; its result, or
    the exception it raised (a `BaseException` too: a spent budget, a
    KeyboardInterrupt seen there). The caller's thread waits; state kept
    per thread (the budget) must be set up inside ``fn``."""
    _raise_limit()
    box: dict[str, object] = {}

    def body() -> None:
        try:
            box["result"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - handed back to the caller, who raises it
            box["error"] = e

    with _lock:  # stack_size applies to the threads started after it: set and start together
        old = threading.stack_size(STACK_BYTES)
        try:
            t = threading.Thread(target=body, name="tolk-lint-deep", daemon=True)
            t.start()
        finally:
            threading.stack_size(old)
    t.join()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["result"]  # type: ignore[return-value]
