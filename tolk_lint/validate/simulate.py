"""Stage (d) of `tolk-lint validate`: the original and the fixed Numba kernel
under numba-cuda's CUDA simulator (NUMBA_ENABLE_CUDASIM=1), on the same
random inputs of the launch spec's CPU sizes, outputs compared bit for bit.

Under the simulator `tolk_lint.runtime`'s copies poison their destination
when issued and land only at the wait that retires them, so a pipeline that
reads a tile before its copies landed reads NaN (or 0xDEADBEEF) and differs
(docs/runtime.md). Sizes come from the spec's ``[sizes]``: a few blocks,
several tiles, a ragged last tile where the kernel handles one; the
simulator runs one Python thread per CUDA thread, so keep them small.

Imports `numba_process`, `result` and `spec`.
"""

from __future__ import annotations

from tolk_lint.validate.numba_process import compare, run_pair
from tolk_lint.validate.result import StageResult
from tolk_lint.validate.spec import Launch

TIMEOUT = 600.0  # seconds for both kernels


def run_simulator(original: str, fixed: str, kernel: str | None, launch: Launch,
                  timeout: float = TIMEOUT) -> StageResult:  # fmt: skip
    """Both kernels of the files ``original`` and ``fixed`` under the simulator."""
    run = run_pair("simulate", original, fixed, kernel, launch, timeout)
    figures = {"grid": list(launch.grid), "block": list(launch.block), "sizes": dict(launch.sizes),
               "seconds": dict(run.report.get("seconds") or {})}  # fmt: skip
    return compare("simulator", run, launch, figures)
