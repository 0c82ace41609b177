"""How many stages the tiles of one core take on a target: `depth`, the
sentence saying why (`depth_reason`), and whether the shared budget is what
holds it below two (`limited_by_budget`, TL303's condition).

Two stages let the copies of trip k + 1 run while trip k computes; that needs
an asynchronous copy (``cp.async``, sm_80 and later) and room for two copies
of every tile. One stage needs room for one. The budget is the 48 KiB of
static shared memory a block may declare (the opt-in maximum when asked),
minus what the kernel's other shared buffers already take.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from tolk_lint.target import KIB, Target

COPY_BYTES = 16  # one cp.async.cg chunk: the least a staged tile must hold
SIDE_BY_SIDE = ("sm_75", "sm_80", "sm_90")  # the targets every verdict also gives its depth on


def depth(target: Target, tiles: Iterable[int], used: int = 0, stage: bool = True, optin: bool = False) -> int:
    """The number of stages a core whose staged operands' tiles hold ``tiles``
    bytes takes on ``target``, beside ``used`` bytes of shared memory other
    buffers take. See `depth_reason` for why."""
    return depth_reason(target, tiles, used, stage, optin)[0]


def depth_reason(
    target: Target, tiles: Iterable[int], used: int = 0, stage: bool = True, optin: bool = False
) -> tuple[int, str]:
    """`depth` and a sentence saying why it is that."""
    tiles = list(tiles)
    if not stage:
        return 0, "staging is turned off (`stage = false`)"
    if target.is_host or not target.has_local:
        return 0, f"{target.name} has no workgroup threads to copy a tile"
    if not target.has_shared:
        return 0, f"{target.name} has no shared memory"
    if not tiles:
        return 0, "no tile to stage"
    small = [t for t in tiles if t < COPY_BYTES]
    if small:
        return 0, f"a tile of {small[0]} bytes holds less than one {COPY_BYTES}-byte copy"
    budget = target.shared_budget(optin)
    one = sum(tiles)
    kind = "opt-in" if optin else "static"
    if target.async_copy and used + 2 * one <= budget:
        return 2, f"two stages ({kib_str(2 * one)}{_beside(used)}) fit the {kib_str(budget)} {kind} budget"
    if used + one <= budget:
        if target.async_copy:
            return 1, (
                f"two stages ({kib_str(2 * one)}{_beside(used)}) exceed the {kib_str(budget)} {kind} budget; one fits"
            )
        return 1, f"{target.name} has no asynchronous copy, so one stage ({kib_str(one)}{_beside(used)})"
    return 0, f"one stage ({kib_str(one)}{_beside(used)}) exceeds the {kib_str(budget)} {kind} budget"


def _beside(used: int) -> str:
    return f" beside {kib_str(used)} in use" if used else ""


def kib_str(n: int) -> str:
    """``n`` bytes as the diagnostics write them: whole KiB, KiB to one decimal, or bytes."""
    if n % KIB == 0:
        return f"{n // KIB} KiB"
    if n >= KIB:
        return f"{n / KIB:.1f} KiB"
    return f"{n} B"


def limited_by_budget(
    target: Target, tiles: Iterable[int], used: int = 0, stage: bool = True, optin: bool = False
) -> bool:
    """Whether the shared budget, not the target or the tiles, holds the depth
    below 2: with an unbounded budget it would be 2 (TL303's condition)."""
    tiles = list(tiles)
    if depth(target, tiles, used, stage, optin) >= 2:
        return False
    huge = dataclasses.replace(target, shared_static=1 << 40, shared_optin=1 << 40)
    return depth(huge, tiles, used, stage, optin) == 2


def budget_bytes(target: Target, optin: bool = False) -> int:
    return target.shared_budget(optin) if target.has_shared else 0
