"""The staged tile of a tensor core: the splits (upcasts, local splits, the
unroll of K) that make a core's own shape into a workgroup's tile (`tile`,
`tile_of_splits`), and the threads a kernel must keep in flight for them
(`core_threads`)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from tolk_lint.target import Target

WARP_TILE = 64  # outputs a warp holds on each of M and N (by upcasts)
WARP_TILE_MIN = 32  # halving stops here
K_UNROLL = 32  # elements of K a trip, where K divides by it
SCHEDULERS = 4  # warp schedulers (and tensor-core partitions) of an SM since Volta
WARPS_PER_SCHEDULER = 2  # warps a scheduler keeps so one's loads hide behind another's cores
# SMs of the flagship data-centre part of each architecture (what `core_threads`
# assumes when the device is not named): T4, A100, A10/RTX 3090, Orin, L40S,
# H100 SXM, B200, RTX 5090.
TYPICAL_SMS = {75: 40, 80: 108, 86: 84, 87: 16, 89: 142, 90: 132, 100: 148, 120: 170}

UPCAST, LOCAL, UNROLL = "upcast", "local", "unroll"  # split kinds (Opt.target)


def core_threads(target: Target, sms: int | None = None) -> int:
    """The threads a kernel must keep in flight to keep every tensor core of
    the device busy without a pipeline: ``sms`` (the streaming
    multiprocessors; by default the flagship part of the architecture, see
    ``TYPICAL_SMS``) x 4 schedulers x 2 warps a scheduler x the warp size.

    Two warps a scheduler is the least that lets one warp's global loads hide
    behind the other's ``mma``; a two-stage pipeline overlaps a warp's copies
    with its own cores, so `tile` asks for ``core_threads / stages``."""
    if target.is_host:
        return 1
    if sms is None:
        cc = target.compute_capability
        known = max((k for k in TYPICAL_SMS if k <= cc), default=min(TYPICAL_SMS))
        sms = TYPICAL_SMS[known]
    return sms * SCHEDULERS * WARPS_PER_SCHEDULER * target.warp_size


@dataclass(frozen=True)
class CoreShape:
    """A tensor core's own tile: N, M, K elements (``mma.m16n8k16``: 8, 16, 16)."""

    n: int
    m: int
    k: int

    @staticmethod
    def parse(shape: str) -> CoreShape | None:
        mt = re.search(r"m(\d+)n(\d+)k(\d+)", shape or "")
        return CoreShape(int(mt.group(2)), int(mt.group(1)), int(mt.group(3))) if mt else None


def _pow2_upcast(side: int, own: int, size: int) -> int:
    """The largest power of two u with own * u <= side and own * u dividing size (0: unknown)."""
    u = 1
    while own * u * 2 <= side and (size == 0 or size % (own * u * 2) == 0):
        u *= 2
    return u


def tile(
    target: Target,
    core: CoreShape,
    *,
    core_threads: int,
    workgroups: int | None,
    sizes: tuple[int, int, int],
    in_run: Callable[[int], bool] = lambda u: True,
    stages: int,
    admitted: bool = True,
) -> tuple[list[tuple[int, int, str]], bool] | None:
    """The splits of a tensor core's staged tile, as ``(axis, amount, kind)``
    with axis 0, 1, 2 for the core's N, M, K and kind ``upcast``, ``local`` or
    ``unroll``, in the order to apply them; and whether the core has two
    stages and the kernel keeps ``core_threads / 2`` threads on the tile
    (unknowable, so False, when ``workgroups`` is None). None unless the core
    is ``admitted`` (`admits`) and ``stages`` (`depth`) is positive.

    - A warp holds 64x64 outputs by upcasts of powers of two of the core's own
      N and M, each as far as the size (``sizes = (n, m, k)``, 0 for unknown)
      divides.
    - A workgroup takes 2x2 warps (a local split of 2 on N and on M) where N
      and M divide by 2 after the upcasts: one warp on each of an SM's four
      schedulers.
    - K is unrolled to 32 elements a trip where it divides.
    - While the kernel keeps fewer than ``core_threads / stages`` threads
      (``workgroups`` x the workgroups the tile makes x the workgroup's
      threads), the warp tile halves, M then N, down to 32 a side.
    - While ``in_run(u)`` does not hold for the ``u`` row tiles of M that
      would read one value of an operand, M's upcast halves and M's local
      split is left out.
    """
    if not admitted or stages <= 0 or target.is_host:
        return None
    n, m, k = sizes
    up_n = _pow2_upcast(WARP_TILE, core.n, n)
    up_m = _pow2_upcast(WARP_TILE, core.m, m)
    loc_n = 2 if (n == 0 or (n // (core.n * up_n)) % 2 == 0) else 1
    loc_m = 2 if (m == 0 or (m // (core.m * up_m)) % 2 == 0) else 1
    unroll = 1
    if core.k < K_UNROLL and K_UNROLL % core.k == 0 and (k == 0 or k % K_UNROLL == 0):
        unroll = K_UNROLL // core.k
    while not in_run(up_m * loc_m):
        if loc_m > 1:
            loc_m = 1
        elif up_m > 1:
            up_m //= 2
        else:
            break

    def kept(un: int, um: int) -> int | None:
        if workgroups is None or n == 0 or m == 0:
            return None
        tn, tm = core.n * un * loc_n, core.m * um * loc_m
        wgs = workgroups * math.ceil(n / tn) * math.ceil(m / tm)
        return wgs * loc_n * loc_m * target.warp_size

    need = core_threads // max(1, stages)
    while True:
        have = kept(up_n, up_m)
        if have is None or have >= need:
            break
        if core.m * up_m > WARP_TILE_MIN and up_m > 1:
            up_m //= 2
        elif core.n * up_n > WARP_TILE_MIN and up_n > 1:
            up_n //= 2
        else:
            break
    splits: list[tuple[int, int, str]] = []
    if up_m > 1:
        splits.append((1, up_m, UPCAST))
    if up_n > 1:
        splits.append((0, up_n, UPCAST))
    if loc_m > 1:
        splits.append((1, loc_m, LOCAL))
    if loc_n > 1:
        splits.append((0, loc_n, LOCAL))
    if unroll > 1:
        splits.append((2, unroll, UNROLL))
    have = kept(up_n, up_m)
    return splits, bool(stages == 2 and have is not None and have >= core_threads // 2)


def tile_of_splits(core: CoreShape, splits: list[tuple[int, int, str]]) -> tuple[int, int, int]:
    """The workgroup's (N, M, K) tile a list of splits makes of ``core``."""
    size = [core.n, core.m, core.k]
    for axis, amount, _ in splits:
        size[axis] *= amount
    return size[0], size[1], size[2]
