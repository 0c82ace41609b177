"""Stage (e) of `tolk-lint validate` for Numba kernels: the original and the
fixed kernel launched by numba-cuda on a GPU, on the same random inputs of
the launch spec's GPU sizes (``[gpu.sizes]``: larger than the L2 cache),
outputs compared bit for bit, and each timed with CUDA events: a launch for
the outputs, warm-up launches, then at least 20 timed ones; the medians and
the speed-up (original / fixed) are the stage's figures.

Without a GPU (or without numba-cuda) the stage is unavailable, never a
pass. ``min_speedup`` makes a slower fixed kernel a failure.

Imports `numba_process`, `result` and `spec`.
"""

from __future__ import annotations

from tolk_lint.validate.numba_process import compare, run_pair
from tolk_lint.validate.result import FAIL, PASS, StageResult
from tolk_lint.validate.spec import Launch

TIMEOUT = 600.0
MIN_RUNS = 20


def run_gpu(original: str, fixed: str, kernel: str | None, launch: Launch, runs: int = MIN_RUNS,
            warmup: int = 3, min_speedup: float | None = None, timeout: float = TIMEOUT) -> StageResult:  # fmt: skip
    """Both kernels on the GPU; ``launch`` is the spec resolved for the GPU
    (``spec.resolve(gpu=True)``)."""
    run = run_pair("gpu", original, fixed, kernel, launch, timeout, max(runs, MIN_RUNS), warmup)
    ms = run.report.get("ms") or {}
    figures = {"grid": list(launch.grid), "block": list(launch.block), "sizes": dict(launch.sizes),
               "device": run.report.get("device")}  # fmt: skip
    if "original" in ms and "fixed" in ms:
        o, f = ms["original"]["median"], ms["fixed"]["median"]
        figures.update(original_ms=round(o, 4), fixed_ms=round(f, 4), runs=ms["fixed"]["runs"],
                       speedup=round(o / f, 3) if f > 0 else None)  # fmt: skip
    result = compare("gpu", run, launch, figures)
    if result.verdict != PASS or "speedup" not in figures:
        return result
    speed = f"median {figures['original_ms']} ms -> {figures['fixed_ms']} ms, {figures['speedup']}x"
    if min_speedup is not None and (figures["speedup"] or 0) < min_speedup:
        return StageResult("gpu", FAIL, f"slower than allowed ({speed}; at least {min_speedup}x asked)", figures)
    return StageResult("gpu", PASS, f"{result.summary}; {speed}", figures, result.details)
