"""What a valid cp.async call is, shared by the GPU intrinsics and the
simulator's fallbacks so that both refuse the same calls with the same words.

PTX's limits, not this module's choices: a copy moves 4, 8 or 16 bytes (ptxas
rejects anything else); `.ca` (cache in L1 and L2) is allowed only for 4 and
8 bytes, `.cg` (L2 only) only for 16; and `cp.async.wait_group N` takes an
immediate N, which ptxas silently clamps when it is negative or large, so the
count is held to NVIDIA's own bound (`__pipeline_wait_prior` handles 0..7).
"""

from __future__ import annotations

COPY_SIZES = (4, 8, 16)
MAX_WAIT_COUNT = 7


def cache_operator(nbytes: int) -> str:
    """The cp.async cache operator for a copy of `nbytes`: `.cg` is the only
    one ptxas accepts for 16 bytes, and it is not allowed below 16."""
    return "cg" if nbytes == 16 else "ca"


def bad_copy_size(fn: str, nbytes: object) -> str:
    sizes = ", ".join(map(str, COPY_SIZES))
    return f"{fn}: nbytes must be one of {sizes} (the sizes cp.async copies), got {nbytes}"


def not_literal(fn: str, what: str, got: object) -> str:
    return (
        f"{fn}: {what} must be a literal integer written in the kernel (PTX needs an immediate), "
        f"got a value of type {got}"
    )


def dtype_mismatch(fn: str, dst_dtype: object, src_dtype: object) -> str:
    return (
        f"{fn}: dst and src must have the same dtype (cp.async copies bytes, it does not convert); "
        f"dst is {dst_dtype}, src is {src_dtype}"
    )


def size_not_whole_elements(fn: str, nbytes: int, dtype: object, itemsize: int) -> str:
    return (
        f"{fn}: nbytes={nbytes} is not a whole number of {dtype} elements ({itemsize} bytes each); "
        f"the element size must divide the copy size"
    )


def bad_wait_count(n: object) -> str:
    return (
        f"wait_group: the count must be a literal integer in 0..{MAX_WAIT_COUNT}, got {n} "
        f"(ptxas silently clamps a negative or large count into a wait for almost nothing)"
    )
