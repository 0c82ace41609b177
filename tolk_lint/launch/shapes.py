"""The values the launch package passes around: one shape a kernel is
linted under (`LaunchShape`), and a set of block shapes given by bounds
(`Contract`). Pure data: nothing here imports the rest of tolk_lint.
"""

from __future__ import annotations

from dataclasses import dataclass

DIMS = "xyz"
MAX_THREADS = 1024  # threads per block on every NVIDIA GPU
MAX_DIMS = (1024, 1024, 64)  # per dimension
WARP = 32  # threads per warp


def block_text(block: tuple[int, int, int]) -> str:
    return "({},{},{})".format(*block)


MAX_GRID = (2**31 - 1, 65535, 65535)  # blocks per grid dimension


# A grid as each dimension's range of block counts, ((lo, hi), (lo, hi), (lo, hi)):
# one launch gives lo == hi; several launches of one block, the smallest ranges holding each.
GridRange = tuple[tuple[int, int], tuple[int, int], tuple[int, int]]


def as_grid(v: object) -> GridRange | None:
    """A launch's grid (an int, or a tuple of one to three ints) as a
    `GridRange`; None: not a grid a launch can have (a dimension below 1 or
    over its maximum)."""
    if isinstance(v, int) and not isinstance(v, bool):
        v = (v,)
    if not isinstance(v, tuple) or not 1 <= len(v) <= 3:
        return None
    dims = tuple(v) + (1,) * (3 - len(v))
    if any(not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= m for n, m in zip(dims, MAX_GRID)):
        return None
    return ((dims[0], dims[0]), (dims[1], dims[1]), (dims[2], dims[2]))


def grid_hull(grids: list[GridRange | None]) -> GridRange | None:
    """The smallest ranges holding every launch's grid; None (nothing known
    of the grid) when a launch's grid is not known, or there is none."""
    if not grids or any(g is None for g in grids):
        return None
    known = [g for g in grids if g is not None]
    lo = [min(g[d][0] for g in known) for d in range(3)]
    hi = [max(g[d][1] for g in known) for d in range(3)]
    return ((lo[0], hi[0]), (lo[1], hi[1]), (lo[2], hi[2]))


def grid_text(grid: GridRange) -> str:
    """``(255,1,1)``, ``(1..4,1,1)`` for a range, ``(any,1,1)`` for every
    number of blocks (an integer grid whose value is not known)."""

    def one(d: int, lo: int, hi: int) -> str:
        return str(lo) if lo == hi else ("any" if (lo, hi) == (1, MAX_GRID[d]) else f"{lo}..{hi}")

    return "({})".format(",".join(one(d, lo, hi) for d, (lo, hi) in enumerate(grid)))


def valid_block(block: tuple[int, ...]) -> bool:
    """A block a launch can have: 1 to 1024 threads, each dimension within its maximum."""
    if len(block) != 3 or any(not isinstance(n, int) or isinstance(n, bool) or n < 1 for n in block):
        return False
    return block[0] * block[1] * block[2] <= MAX_THREADS and all(n <= m for n, m in zip(block, MAX_DIMS))


@dataclass(frozen=True)
class Contract:
    """The block shapes whose dimensions stay within ``dims`` (a dimension
    of 1 is exactly 1), whose threads are at most ``threads``, and, with
    ``pow2``, whose ``blockDim.x`` is a power of two, and, with
    ``warp_multiple``, whose ``blockDim.x`` is a multiple of the warp size
    (32). ``family`` says how it is worded: ``box`` (each dimension
    bounded), ``product`` (the thread count bounded), ``pow2``, or ``flat``
    (any one-dimensional block: ``kernel.forall``; with ``warp_multiple``,
    the block ``cudaOccupancyMaxPotentialBlockSize`` returns). ``least``:
    each dimension's smallest value, for a box a host launch bounds from
    below too (FDTD3d's ``dimBlock.x = 32`` and ``4 <= dimBlock.y <= 16``,
    `bounded_block`); TL205's contracts keep it at 1."""

    dims: tuple[int, int, int]
    threads: int
    family: str = "box"
    pow2: bool = False
    warp_multiple: bool = False
    least: tuple[int, int, int] = (1, 1, 1)

    def admits(self, block: tuple[int, int, int]) -> bool:
        if any(n < lo or n > m for n, lo, m in zip(block, self.least, self.dims)):
            return False
        if block[0] * block[1] * block[2] > self.threads:
            return False
        if self.warp_multiple and block[0] % WARP != 0:
            return False
        return not self.pow2 or block[0] & (block[0] - 1) == 0

    def largest(self) -> tuple[int, int, int]:
        """A block of the contract with the most threads (the one to suggest declaring)."""
        x, y, z = self.dims
        if self.family == "product":
            free = [d for d in range(3) if self.dims[d] > 1]
            out = [1, 1, 1]
            left = self.threads
            for d in free[:-1]:  # square-ish: the first dimensions share the square root
                side = 1
                while side * 2 * side * 2 <= left and side * 2 <= self.dims[d]:
                    side *= 2
                out[d] = side
                left //= side
            if free:
                out[free[-1]] = min(left, self.dims[free[-1]])
            return (out[0], out[1], out[2])
        if self.pow2:
            p = 1
            while p * 2 <= min(x, self.threads):
                p *= 2
            return (p, 1, 1)
        z = min(z, max(1, self.threads // max(1, x * y)))
        y = min(y, max(1, self.threads // max(1, x)))
        x = min(x, self.threads)
        if self.warp_multiple:  # (a contract of fewer than 32 threads is never made one)
            x = max(WARP, x - x % WARP)
        return (x, y, z)

    def describe(self) -> str:
        """The contract in words: ``blockDim.x <= 16 and blockDim.y <= 16``."""
        free = [d for d in range(3) if self.dims[d] > 1]
        if self.family == "flat" and self.warp_multiple:
            top = min(self.dims[0], self.threads)
            return f"blockDim.x is a multiple of {WARP}, at most {top - top % WARP} (blockDim.y = blockDim.z = 1)"
        if self.family == "flat":
            return f"a one-dimensional block of at most {self.threads} threads"
        if self.pow2:
            head = f"blockDim.x is a power of two <= {self.dims[0]}"
        elif self.family == "product":
            head = " * ".join(f"blockDim.{DIMS[d]}" for d in free) + f" <= {self.threads}"
        else:
            parts = [_dimension_words(d, self.least[d], self.dims[d]) for d in free
                     if self.dims[d] < self.threads or self.least[d] > 1]  # fmt: skip
            if not parts:
                parts = [" * ".join(f"blockDim.{DIMS[d]}" for d in free or [0]) + f" <= {self.threads}"]
            head = " and ".join(parts)
        ones = [DIMS[d] for d in range(3) if self.dims[d] == 1]
        if ones and free:
            head += " (" + " = ".join(f"blockDim.{d}" for d in ones) + " = 1)"
        elif not free:
            head = "a block of one thread"
        return head

    def to_json(self) -> dict:
        out = {"family": self.family, "dims": list(self.dims), "threads": self.threads, "pow2": self.pow2,
               "warp_multiple": self.warp_multiple, "text": self.describe()}  # fmt: skip
        if self.least != (1, 1, 1):
            out["least"] = list(self.least)
        return out


def _dimension_words(d: int, least: int, most: int) -> str:
    """``blockDim.y <= 16``, ``4 <= blockDim.y <= 16`` or ``blockDim.x = 32``."""
    if least == most:
        return f"blockDim.{DIMS[d]} = {most}"
    return f"{least} <= blockDim.{DIMS[d]} <= {most}" if least > 1 else f"blockDim.{DIMS[d]} <= {most}"


# What a shape can come from, most authoritative first: the first kind of
# this list a kernel has shapes of is the one it is linted under.
PRECEDENCE = ("--block", "configuration", "call site", ".reqntid", "host launch", "comment", "triton", "library")
# A launch found whose block is not a constant: never linted under, only named.
UNREAD = "unread"


@dataclass(frozen=True)
class LaunchShape:
    """One launch a kernel is linted under: an exact ``block``, or a
    ``contract`` (a set of blocks: ``kernel.forall``, or the one TL205
    infers), with where it came from in words (``source``: "the call site
    at line 88") and what kind of source that is (one of `PRECEDENCE`, or
    ``inferred``). ``path`` and ``line`` point at it, when it is a place in
    a file."""

    block: tuple[int, int, int] | None
    source: str
    kind: str
    contract: Contract | None = None
    path: str | None = None
    line: int | None = None
    arguments: tuple = ()  # what the launches' arguments fix (`arguments.ArgFact`)
    grid: GridRange | None = None  # the launches' grids, when each is a constant

    def grid_told(self) -> bool:
        """Whether the grid is worth naming: not only an integer's form
        (``(any,1,1)``, every dimension either 1 or any number of blocks,
        x not 1), which the launch's own text already shows."""
        if self.grid is None:
            return False
        return self.grid[0] == (1, 1) or any(lo > 1 or 1 < hi < MAX_GRID[d] for d, (lo, hi) in enumerate(self.grid))

    def what(self) -> str:
        """The shape alone: ``block=(16,16,1)`` (``grid=(255,1,1), block=(256,1,1)``
        when the grid is known), or the contract's words."""
        if self.block is not None:
            grid = f"grid={grid_text(self.grid)}, " if self.grid_told() else ""
            return f"{grid}block={block_text(self.block)}"
        return self.contract.describe() if self.contract is not None else "any block"

    def words(self) -> str:
        """``block=(16,16,1) from the call site at line 88``, and what its
        arguments fix (``, with n = 512``)."""
        out = f"{self.what()} from {self.source}" if self.source else self.what()
        if self.arguments:
            out += ", with " + ", ".join(f.words() for f in self.arguments)
        return out

    def same_launch(self, other: LaunchShape) -> bool:
        return (self.block == other.block and self.contract == other.contract and self.arguments == other.arguments
                and self.grid == other.grid)  # fmt: skip

    def to_json(self) -> dict:
        out: dict = {"block": list(self.block) if self.block else None, "source": self.source, "kind": self.kind}
        if self.contract is not None:
            out["contract"] = self.contract.to_json()
        if self.grid is not None:  # [x, y, z], or each dimension's range when launches differ
            exact = all(lo == hi for lo, hi in self.grid)
            out["grid"] = [lo for lo, _hi in self.grid] if exact else None
            if not exact:
                out["grid_range"] = {"min": [lo for lo, _ in self.grid], "max": [hi for _, hi in self.grid]}
        if self.arguments:
            out["arguments"] = [f.to_json() for f in self.arguments]
        if self.line is not None:
            out["path"], out["line"] = self.path, self.line
        return out
