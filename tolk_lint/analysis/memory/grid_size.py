"""Findings that hold only for a grid of 2**31 threads or more along x.

A grid-stride loop's stride, ``gridDim.x * blockDim.x``, is an ``int`` in
CUDA C (and 32 bits in PTX): a grid of 2**26 blocks of 64 threads makes it
wrap to 0, and ``__ffs(stride) - 1`` then reads element -1 (NVIDIA's
SobolQRNG sample, whose host rounds its grid to a power of two of at most
2**25 blocks). The solver takes a grid it cannot read from the host as any
grid CUDA launches, up to 2**31 - 1 blocks along x. Code that indexes its
threads with a 32-bit ``int`` assumes fewer than 2**31 of them.

So a race or an out-of-bounds access in a PTX kernel that reads
``gridDim.x`` is asked once more with ``gridDim.x * blockDim.x`` below
2**31 (Numba's integers are 64 bits wide: its strides do not wrap there).
When it no longer holds, it needs a grid whose thread count along x does
not fit an ``int``: a warning, not an error. When it still holds, it stays an error.
One more solver question, only for findings in kernels that read the grid.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.core import MemoryCore
    from tolk_lint.analysis.memory.query import Query

INT_THREADS = 1 << 31  # threads along x a 32-bit `int` index counts
CAP_BUDGET = 4  # the capped question is asked with rlimit / this


def reads_grid_x(mf: MemoryCore) -> bool:
    """Whether the kernel reads ``gridDim.x`` (``%nctaid.x``)."""
    return mf.k.cached("reads_grid_x", lambda k: any(
        i.op is Opcode.SPECIAL and i.attrs.get("name") == "nctaid.x" for i in k.instrs()))  # fmt: skip


def needs_huge_grid(mf: MemoryCore, q: Query, goal) -> bool:
    """Whether a finding (``goal``, its question in ``q``) needs a grid of at
    least `INT_THREADS` threads along x: it has no model once
    ``gridDim.x * blockDim.x`` is below that."""
    if goal is None or mf.k.language != "ptx" or not reads_grid_x(mf):
        return False
    z3 = q.z3
    enc = q.enc
    try:
        threads = z3.ZeroExt(32, enc.nctaid[0]) * z3.ZeroExt(32, enc.ntid[0])
        capped = z3.And(goal, z3.ULT(threads, INT_THREADS))
        v = mf.solve(q, capped, mf.rlimit // CAP_BUDGET, fallback=False)
    except Exception:  # noqa: BLE001 - only the severity depends on it: an error it stays
        return False
    return v.status == "unsat"
