"""Stage (e) of `tolk-lint validate` for PTX: both kernels on a GPU, on the
same random inputs (the spec's GPU sizes, larger than the L2 cache), compared
bit for bit and timed.

The PTX is loaded with the CUDA driver API of ``cuda.bindings.driver``
(``cuModuleLoadData``, ``cuLaunchKernel``); nothing of the analyses is
imported, so the GPU machine needs only numpy and cuda-bindings:

    python -m tolk_lint.validate.gpu_ptx ORIGINAL.ptx FIXED.ptx --launch SPEC.toml [--kernel NAME] [--json]

Each kernel runs once on fresh copies of the inputs, and the outputs are
compared; then each runs ``WARMUP`` times, and ``RUNS`` times between CUDA
events, alternating, and the medians give the speed-up (original / fixed).
Where ``compute-sanitizer`` is on PATH, the fixed kernel also runs once,
at the spec's CPU sizes, under its racecheck and synccheck tools. Without a
driver or a device the stage is unavailable, never a pass.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from tolk_lint.validate.inputs import first_difference, make_arguments
from tolk_lint.validate.result import FAIL, PASS, UNAVAILABLE, StageResult, exit_status
from tolk_lint.validate.spec import Launch, SpecError, load_spec

WARMUP = 3
RUNS = 21


class DriverError(RuntimeError):
    """A CUDA driver call failed; the message names the call and the error."""


@dataclass
class _Cuda:
    cu: Any

    def check(self, what: str, result) -> Any:
        """``result`` of a ``cuda.bindings.driver`` call: (error, values...) -> the values."""
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            _e, name = self.cu.cuGetErrorName(err)
            raise DriverError(f"{what}: {name.decode() if isinstance(name, bytes) else name}")
        return rest[0] if len(rest) == 1 else tuple(rest)


def open_device() -> tuple[_Cuda | None, str]:
    """The driver, with device 0's primary context current, or None and why not."""
    try:
        from cuda.bindings import driver as cu  # type: ignore[import-not-found]
    except ImportError as e:
        return None, f"cuda-bindings is not installed ({e})"
    c = _Cuda(cu)
    try:
        c.check("cuInit", cu.cuInit(0))
        n = c.check("cuDeviceGetCount", cu.cuDeviceGetCount())
        if n < 1:
            return None, "no CUDA device"
        dev = c.check("cuDeviceGet", cu.cuDeviceGet(0))
        ctx = c.check("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(dev))
        c.check("cuCtxSetCurrent", cu.cuCtxSetCurrent(ctx))
        name = c.check("cuDeviceGetName", cu.cuDeviceGetName(256, dev))
        c.device = name.split(b"\0")[0].decode() if isinstance(name, bytes) else str(name)  # type: ignore[attr-defined]
    except (RuntimeError, OSError) as e:  # DynamicLibNotFoundError is a RuntimeError: no driver at all
        return None, f"no CUDA driver or device: {e}"
    return c, ""


class _Kernel:
    def __init__(self, c: _Cuda, ptx: str, name: str):
        self.c = c
        self.module = c.check("cuModuleLoadData", c.cu.cuModuleLoadData(ptx.encode() + b"\0"))
        self.function = c.check("cuModuleGetFunction", c.cu.cuModuleGetFunction(self.module, name.encode()))

    def launch(self, launch: Launch, storage: list[np.ndarray]) -> None:
        params = np.array([s.ctypes.data for s in storage], dtype=np.uint64)
        gx, gy, gz = launch.grid
        bx, by, bz = launch.block
        self.c.check("cuLaunchKernel", self.c.cu.cuLaunchKernel(self.function, gx, gy, gz, bx, by, bz, 0, 0,
                                                                params.ctypes.data, 0))  # fmt: skip


class _Buffers:
    """Device copies of the arguments, and the parameter storage a launch points at."""

    def __init__(self, c: _Cuda, launch: Launch, args: list):
        self.c = c
        self.host = args
        self.device: list[int | None] = []
        self.storage: list[np.ndarray] = []
        for a, v in zip(launch.args, args):
            if a.is_array:
                ptr = c.check("cuMemAlloc", c.cu.cuMemAlloc(max(1, v.nbytes)))
                self.device.append(ptr)
                self.storage.append(np.array([int(ptr)], dtype=np.uint64))
            else:
                self.device.append(None)
                self.storage.append(np.array([v], dtype=np.dtype(a.dtype)))
        self.reset()

    def reset(self) -> None:
        for d, v in zip(self.device, self.host):
            if d is not None:
                self.c.check("cuMemcpyHtoD", self.c.cu.cuMemcpyHtoD(d, v.ctypes.data, v.nbytes))

    def read(self, i: int) -> np.ndarray:
        v = self.host[i]
        out = np.empty_like(v)
        self.c.check("cuMemcpyDtoH", self.c.cu.cuMemcpyDtoH(out.ctypes.data, self.device[i], v.nbytes))
        return out

    def free(self) -> None:
        for d in self.device:
            if d is not None:
                self.c.cu.cuMemFree(d)


def _time(c: _Cuda, k: _Kernel, launch: Launch, bufs: _Buffers) -> float:
    cu = c.cu
    e0 = c.check("cuEventCreate", cu.cuEventCreate(0))
    e1 = c.check("cuEventCreate", cu.cuEventCreate(0))
    c.check("cuEventRecord", cu.cuEventRecord(e0, 0))
    k.launch(launch, bufs.storage)
    c.check("cuEventRecord", cu.cuEventRecord(e1, 0))
    c.check("cuEventSynchronize", cu.cuEventSynchronize(e1))
    ms = c.check("cuEventElapsedTime", cu.cuEventElapsedTime(e0, e1))
    cu.cuEventDestroy(e0)
    cu.cuEventDestroy(e1)
    return float(ms)


def run_gpu_ptx(original: str, fixed: str, kernel: str, launch: Launch, cpu_launch: Launch | None = None,
                runs: int = RUNS, sanitize: bool = True) -> StageResult:  # fmt: skip
    c, why = open_device()
    if c is None:
        return StageResult("gpu", UNAVAILABLE, f"no GPU: {why}")
    figures: dict[str, Any] = {"device": getattr(c, "device", "?"), "sizes": dict(launch.sizes), "runs": runs}
    try:
        k0 = _Kernel(c, original, kernel)
        k1 = _Kernel(c, fixed, kernel)
        args = make_arguments(launch)
        b0, b1 = _Buffers(c, launch, args), _Buffers(c, launch, args)
        k0.launch(launch, b0.storage)
        k1.launch(launch, b1.storage)
        c.check("cuCtxSynchronize", c.cu.cuCtxSynchronize())
        differ = []
        for i, a in enumerate(launch.args):
            if a.output:
                same = first_difference(b0.read(i), b1.read(i))
                if same != "identical":
                    differ.append(f"`{a.name}`: {same}")
        for _ in range(WARMUP):
            _time(c, k0, launch, b0)
            _time(c, k1, launch, b1)
        t0, t1 = [], []
        for _ in range(runs):
            t0.append(_time(c, k0, launch, b0))
            t1.append(_time(c, k1, launch, b1))
        b0.free()
        b1.free()
    except DriverError as e:
        return StageResult("gpu", FAIL, str(e), figures)
    m0, m1 = statistics.median(t0), statistics.median(t1)
    figures.update({"original_ms": round(m0, 4), "fixed_ms": round(m1, 4), "speedup": round(m0 / m1, 3) if m1 else None})
    details = [f"median of {runs} runs: original {m0:.4f} ms, fixed {m1:.4f} ms, speed-up {m0 / m1:.3f}x"]
    if sanitize and cpu_launch is not None:
        details += _sanitize(fixed, kernel, cpu_launch, figures)
    if differ:
        return StageResult("gpu", FAIL, f"outputs differ: {differ[0]}", figures, differ + details)
    if any(v for k, v in figures.items() if k.endswith("_errors")):
        return StageResult("gpu", FAIL, "compute-sanitizer reports errors", figures, details)
    return StageResult("gpu", PASS, f"bit-identical on {figures['device']}; speed-up {m0 / m1:.3f}x "
                       f"({m0:.3f} -> {m1:.3f} ms)", figures, details)  # fmt: skip


def _sanitize(fixed: str, kernel: str, launch: Launch, figures: dict) -> list[str]:
    """The fixed kernel once under compute-sanitizer's racecheck and synccheck (where it is installed)."""
    tool = shutil.which("compute-sanitizer")
    if tool is None:
        return ["compute-sanitizer: not installed, racecheck and synccheck not run"]
    import tempfile

    out = []
    with tempfile.TemporaryDirectory(prefix="tolk-sanitize-") as tmp:
        ptx = os.path.join(tmp, "fixed.ptx")
        spec = os.path.join(tmp, "launch.json")
        with open(ptx, "w", encoding="utf-8") as f:
            f.write(fixed)
        with open(spec, "w", encoding="utf-8") as f:
            json.dump(_launch_json(launch), f)
        for check in ("racecheck", "synccheck"):
            cmd = [tool, "--tool", check, "--error-exitcode", "99", sys.executable, "-m", __name__, "--once", ptx,
                   "--launch-json", spec, "--kernel", kernel]  # fmt: skip
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            except (OSError, subprocess.TimeoutExpired) as e:
                out.append(f"compute-sanitizer {check}: did not run: {e}")
                figures[f"{check}_errors"] = None
                continue
            m = re.search(r"ERROR SUMMARY:\s*(\d+)", p.stdout + p.stderr)
            errors = int(m.group(1)) if m else (0 if p.returncode == 0 else None)
            figures[f"{check}_errors"] = errors
            out.append(f"compute-sanitizer {check}: "
                       + ("no report (exit status %d)" % p.returncode if errors is None else f"{errors} error(s)"))
    return out


def _launch_json(launch: Launch) -> dict:
    return {"kernel": launch.kernel, "grid": list(launch.grid), "block": list(launch.block), "sizes": launch.sizes,
            "args": [{"name": a.name, "dtype": a.dtype, "shape": list(a.shape) if a.shape else None,
                      "value": a.value, "init": a.init, "output": a.output} for a in launch.args]}  # fmt: skip


def _launch_from_json(d: dict) -> Launch:
    from tolk_lint.validate.spec import Arg

    args = tuple(Arg(a["name"], a["dtype"], tuple(a["shape"]) if a["shape"] is not None else None, a["value"],
                     a["init"], a["output"]) for a in d["args"])  # fmt: skip
    return Launch(d["kernel"], tuple(d["grid"]), tuple(d["block"]), args, dict(d["sizes"]))


def _run_once(ptx: str, kernel: str, launch: Launch) -> int:
    """One launch of one kernel (what compute-sanitizer watches)."""
    c, why = open_device()
    if c is None:
        print(f"no GPU: {why}", file=sys.stderr)
        return 3
    k = _Kernel(c, ptx, kernel)
    b = _Buffers(c, launch, make_arguments(launch))
    k.launch(launch, b.storage)
    c.check("cuCtxSynchronize", c.cu.cuCtxSynchronize())
    b.free()
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tolk_lint.validate.gpu_ptx", description=__doc__.split("\n\n")[0])
    ap.add_argument("original")
    ap.add_argument("fixed", nargs="?")
    ap.add_argument("--launch", help="the launch spec (TOML)")
    ap.add_argument("--launch-json", help=argparse.SUPPRESS)
    ap.add_argument("--kernel")
    ap.add_argument("--once", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--runs", type=int, default=RUNS)
    ap.add_argument("--json", action="store_true")
    ns = ap.parse_args(argv)
    try:
        with open(ns.original, encoding="utf-8") as f:
            original = f.read()
        if ns.once:
            with open(ns.launch_json, encoding="utf-8") as f:
                launch = _launch_from_json(json.load(f))
            return _run_once(original, ns.kernel or launch.kernel, launch)
        with open(ns.fixed, encoding="utf-8") as f:
            fixed = f.read()
        spec = load_spec(ns.launch)
        launch, cpu = spec.resolve(gpu=True), spec.resolve()
    except (OSError, SpecError, TypeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    kernel = ns.kernel or launch.kernel
    if not kernel:
        print("error: name the kernel (--kernel or `kernel =` in the spec)", file=sys.stderr)
        return 2
    r = run_gpu_ptx(original, fixed, kernel, launch, cpu, ns.runs)
    if ns.json:
        print(json.dumps(r.to_json(), indent=2))
    else:
        print(f"gpu: {r.verdict}: {r.summary}")
        for d in r.details:
            print(f"  {d}")
    return exit_status([r])


if __name__ == "__main__":
    sys.exit(main())
