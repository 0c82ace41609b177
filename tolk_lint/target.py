"""What a GPU can do, as data (tinygrad's Renderer idea): rules ask a `Target`,
never compare architecture strings.

Sources for the numbers: the CUDA C++ Programming Guide, "Compute
Capabilities" tables (technical specifications per compute capability) and the
PTX ISA (cp.async from sm_80, cp.async.bulk / TMA from sm_90, mma shapes per
architecture).

- ``shared_static``: the most ``.shared`` memory a kernel may declare
  statically: 48 KiB on every architecture (ptxas rejects more than 0xC000).
- ``shared_optin``: the most a block may use with
  ``cudaFuncAttributeMaxDynamicSharedMemorySize`` (dynamic, opt-in).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

KIB = 1024

# compute capability -> (max threads per block, opt-in shared bytes per block, regs per thread)
_SM_TABLE: dict[int, tuple[int, int]] = {
    70: (1024, 96 * KIB),
    72: (1024, 96 * KIB),
    75: (1024, 64 * KIB),
    80: (1024, 163 * KIB),
    86: (1024, 99 * KIB),
    87: (1024, 163 * KIB),
    89: (1024, 99 * KIB),
    90: (1024, 227 * KIB),
    100: (1024, 227 * KIB),
    101: (1024, 227 * KIB),
    103: (1024, 227 * KIB),
    110: (1024, 227 * KIB),
    120: (1024, 99 * KIB),
    121: (1024, 99 * KIB),
}


@dataclass(frozen=True)
class TensorCoreShape:
    """One mma/wmma shape: m, n, k and the input/accumulator dtypes."""

    m: int
    n: int
    k: int
    dtype_in: str
    dtype_acc: str


def _tensor_cores(cc: int) -> tuple[TensorCoreShape, ...]:
    out: list[TensorCoreShape] = []
    if cc >= 70:
        out += [TensorCoreShape(16, 16, 16, "f16", "f32"), TensorCoreShape(16, 16, 16, "f16", "f16")]
    if cc >= 75:
        out += [TensorCoreShape(16, 8, 8, "f16", "f32"), TensorCoreShape(8, 8, 32, "s4", "s32"),
                TensorCoreShape(8, 8, 16, "s8", "s32")]  # fmt: skip
    if cc >= 80:
        out += [TensorCoreShape(16, 8, 16, "f16", "f32"), TensorCoreShape(16, 8, 16, "bf16", "f32"),
                TensorCoreShape(16, 8, 8, "tf32", "f32"), TensorCoreShape(8, 8, 4, "f64", "f64"),
                TensorCoreShape(16, 8, 32, "s8", "s32")]  # fmt: skip
    if cc >= 89:
        out += [TensorCoreShape(16, 8, 32, "e4m3", "f32"), TensorCoreShape(16, 8, 32, "e5m2", "f32")]
    return tuple(out)


@dataclass(frozen=True)
class Target:
    name: str  # "sm_80", "sm_90a", "cpu"
    compute_capability: int  # 80; 0 for the host
    warp_size: int = 32
    max_threads_per_block: int = 1024
    shared_static: int = 48 * KIB
    shared_optin: int = 48 * KIB
    async_copy: bool = False  # cp.async (sm_80+)
    bulk_copy: bool = False  # cp.async.bulk / TMA (sm_90+)
    has_local: bool = True  # threads that share a workgroup
    has_shared: bool = True  # workgroup shared memory
    tensor_cores: tuple[TensorCoreShape, ...] = field(default=())
    shared_banks: int = 32
    bank_bytes: int = 4

    @property
    def is_host(self) -> bool:
        return self.compute_capability == 0

    def shared_budget(self, optin: bool = False) -> int:
        """The bytes of shared memory staging may use: the static limit by
        default, the opt-in maximum when the configuration says so."""
        return self.shared_optin if optin else self.shared_static


def parse_target(name: str) -> Target:
    """``sm_80``, ``sm_90a``, ``sm_100f``, ``compute_80``, ``80``, or ``cpu``/``host``."""
    name = name.strip().lower()
    if name in ("cpu", "host"):
        return Target("cpu", 0, warp_size=1, max_threads_per_block=1, shared_static=0, shared_optin=0,
                      has_local=False, has_shared=False)  # fmt: skip
    m = re.fullmatch(r"(?:sm_|compute_)?(\d{2,3})([a-z]?)", name)
    if not m:
        raise ValueError(f"unknown target `{name}` (expected sm_XX, e.g. sm_80, or cpu)")
    cc = int(m.group(1))
    known = max((k for k in _SM_TABLE if k <= cc), default=None)
    if known is None:
        raise ValueError(f"unsupported target `{name}`: tolk-lint knows sm_70 and later")
    max_threads, optin = _SM_TABLE[known]
    return Target(
        name=f"sm_{cc}{m.group(2)}",
        compute_capability=cc,
        max_threads_per_block=max_threads,
        shared_optin=optin,
        async_copy=cc >= 80,
        bulk_copy=cc >= 90,
        tensor_cores=_tensor_cores(cc),
    )


DEFAULT_TARGET = "sm_80"
