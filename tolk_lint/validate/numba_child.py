"""The child process the Numba stages of `tolk-lint validate` run kernels in:

    python -m tolk_lint.validate.numba_child JOB.json

numba-cuda picks the simulator or the GPU when numba.cuda is first imported
(NUMBA_ENABLE_CUDASIM), so each stage runs its two kernels in a fresh
process with the variable set for it. The job (JSON) names the original and
the fixed file, the kernel, the launch (`numba_kernels.launch_to_json`),
the mode (``simulate`` or ``gpu``), the timing runs, and where to write the
outputs: an ``.npz`` with ``original/<arg>`` and ``fixed/<arg>`` for each
output argument. The report (one JSON object on stdout) gives the seconds
each kernel took, the GPU medians, and what went wrong:

- ``{"unavailable": why}``: numba-cuda is missing, or (gpu) no GPU is found;
- ``{"errors": {"original"|"fixed": message}}``: a kernel that could not be
  imported or raised (the simulator's runtime raises on an out-of-bounds or
  misaligned copy, a race on a copy's source).

Both kernels get the same inputs (`numba_kernels.make_inputs`), each its own
copy of them.

Imports numpy and `numba_kernels`; numba-cuda once the job is read.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import traceback
from typing import Any

import numpy as np

from tolk_lint.validate.numba_kernels import launch_from_json, load_kernel, make_inputs


def main(argv: list[str]) -> int:
    with open(argv[0], encoding="utf-8") as f:
        job = json.load(f)
    try:
        from numba import cuda
    except ImportError as exc:
        return _report({"unavailable": f"numba-cuda is not installed ({exc}): install the 'validate' extra"})
    simulate = job["mode"] == "simulate"
    if bool(cuda.config.ENABLE_CUDASIM) != simulate:
        return _report({"unavailable": f"NUMBA_ENABLE_CUDASIM is {'off' if simulate else 'on'} in the child"})
    if not simulate and not cuda.is_available():
        return _report({"unavailable": "no CUDA GPU (or driver) is available"})
    launch = launch_from_json(job["launch"])
    inputs = make_inputs(launch)
    outputs: dict[str, np.ndarray] = {}
    report: dict[str, Any] = {"seconds": {}, "errors": {}}
    if not simulate:
        report["ms"] = {}
        name = cuda.get_current_device().name
        report["device"] = name.decode() if isinstance(name, bytes) else str(name)
    for role in ("original", "fixed"):
        start = time.perf_counter()
        try:
            kernel = load_kernel(job[role], job.get("kernel") or launch.kernel)
            args = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
            if simulate:
                kernel[launch.grid, launch.block](*args)
                results = args
            else:
                results, times = _on_gpu(cuda, kernel, launch, args, job.get("runs", 20), job.get("warmup", 3))
                report["ms"][role] = times
        except Exception as exc:  # noqa: BLE001 - the kernel's failure is the stage's finding
            report["errors"][role] = f"{type(exc).__name__}: {exc}"
            report.setdefault("tracebacks", {})[role] = traceback.format_exc(limit=8)
            continue
        report["seconds"][role] = round(time.perf_counter() - start, 3)
        for a, value in zip(launch.args, results):
            if a.output:
                outputs[f"{role}/{a.name}"] = np.asarray(value)
    np.savez(job["out"], **outputs)
    return _report(report)


def _on_gpu(cuda, kernel, launch, args: list[Any], runs: int, warmup: int):
    """Launch once for the outputs, then ``warmup`` untimed and ``runs``
    timed launches (CUDA events around each): the outputs and the times in ms."""
    device = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    configured = kernel[launch.grid, launch.block]
    configured(*device)
    cuda.synchronize()
    results = [d.copy_to_host() if hasattr(d, "copy_to_host") else d for d in device]
    for _ in range(warmup):
        configured(*device)
    cuda.synchronize()
    times = []
    for _ in range(runs):
        start, stop = cuda.event(timing=True), cuda.event(timing=True)
        start.record()
        configured(*device)
        stop.record()
        stop.synchronize()
        times.append(cuda.event_elapsed_time(start, stop))
    return results, {"median": statistics.median(times), "min": min(times), "max": max(times), "runs": runs}


def _report(data: dict[str, Any]) -> int:
    print(json.dumps(data))
    sys.stdout.flush()
    return 3 if "unavailable" in data else 0


if __name__ == "__main__":
    os.environ.setdefault("NUMBA_DISABLE_PERFORMANCE_WARNINGS", "1")
    sys.exit(main(sys.argv[1:]))
