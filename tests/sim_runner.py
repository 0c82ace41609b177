"""Run the SGEMM kernels of fixtures/fixer/numba under the Numba CUDA
simulator and save their outputs, for tests/test_runtime.py (run in a
subprocess there, because NUMBA_ENABLE_CUDASIM is read once, when numba.cuda
is first imported).

    NUMBA_ENABLE_CUDASIM=1 python tests/sim_runner.py OUT.npz NAME=FILE:GX,GY:N ...

Each case launches `fast_matmul` from FILE on a (GX, GY) grid of 16x16
blocks with A and B random N x N float32 matrices (the same for every case
of one N) and C zero.  OUT.npz holds each case's C under NAME; the seconds
each case took are printed as one JSON object.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time

import numpy as np

TPB = 16


def load_kernel(path: str):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.fast_matmul


def inputs(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(20260706 + n)
    return (rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32))


def run_case(path: str, grid: tuple[int, int], n: int) -> np.ndarray:
    a, b = inputs(n)
    c = np.zeros((n, n), dtype=np.float32)
    load_kernel(path)[grid, (TPB, TPB)](a, b, c)
    return c


def main(argv: list[str]) -> None:
    from numba.cuda import config

    assert config.ENABLE_CUDASIM, "run with NUMBA_ENABLE_CUDASIM=1"
    out, cases = argv[0], argv[1:]
    results: dict[str, np.ndarray] = {}
    seconds: dict[str, float] = {}
    for case in cases:
        name, rest = case.split("=", 1)
        path, grid, n = rest.rsplit(":", 2)
        start = time.perf_counter()
        results[name] = run_case(path, tuple(int(g) for g in grid.split(",")), int(n))
        seconds[name] = round(time.perf_counter() - start, 2)
    np.savez(out, **results)
    print(json.dumps(seconds))


if __name__ == "__main__":
    main(sys.argv[1:])
