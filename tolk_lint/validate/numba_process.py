"""Running an original and a fixed Numba kernel in a child process
(`numba_child`) and reading back what they wrote: what the simulator stage
(`simulate`) and the GPU stage (`numba_gpu`) share.

The child gets NUMBA_ENABLE_CUDASIM set for its mode (1: the simulator, 0:
the GPU), this package on its PYTHONPATH, and a time limit; its report and
outputs come back as a `PairRun`. Outputs are compared bit for bit
(`compare`).

Imports numpy, `numba_kernels`, `result` and `spec`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tolk_lint.validate.numba_kernels import differences, launch_to_json
from tolk_lint.validate.result import FAIL, PASS, UNAVAILABLE, StageResult
from tolk_lint.validate.spec import Launch

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding tolk_lint/


@dataclass
class PairRun:
    """What the child reported: ``unavailable`` (why the stage could not
    run), ``errors`` (per kernel), ``outputs`` by ``original/<arg>`` and
    ``fixed/<arg>``, and the rest of its report."""

    report: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    unavailable: str | None = None
    errors: dict[str, str] = field(default_factory=dict)


def run_pair(mode: str, original: str, fixed: str, kernel: str | None, launch: Launch, timeout: float,
             runs: int = 20, warmup: int = 3) -> PairRun:  # fmt: skip
    """Run both kernels in one child (``mode``: ``simulate`` or ``gpu``)."""
    with tempfile.TemporaryDirectory(prefix="tolk-validate-") as tmp:
        job = {"mode": mode, "original": os.path.abspath(original), "fixed": os.path.abspath(fixed),
               "kernel": kernel, "launch": launch_to_json(launch), "out": os.path.join(tmp, "outputs.npz"),
               "runs": runs, "warmup": warmup}  # fmt: skip
        job_path = os.path.join(tmp, "job.json")
        with open(job_path, "w", encoding="utf-8") as f:
            json.dump(job, f)
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1" if mode == "simulate" else "0")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, os.environ.get("PYTHONPATH", "")) if p)
        try:
            done = subprocess.run([sys.executable, "-m", "tolk_lint.validate.numba_child", job_path], env=env,
                                  capture_output=True, text=True, timeout=timeout)  # fmt: skip
        except subprocess.TimeoutExpired:
            return PairRun(errors={"both": f"the kernels did not finish in {timeout:g} s"})
        last = done.stdout.strip().splitlines()[-1:] if done.stdout.strip() else []
        try:
            report = json.loads(last[0]) if last else None
        except json.JSONDecodeError:
            report = None
        if not isinstance(report, dict):
            tail = (done.stderr or done.stdout).strip().splitlines()[-6:]
            return PairRun(errors={"both": f"the child process failed (exit {done.returncode}): " + " | ".join(tail)})
        if "unavailable" in report:
            return PairRun(report, unavailable=str(report["unavailable"]))
        outputs = {}
        if os.path.exists(job["out"]):
            with np.load(job["out"]) as saved:
                outputs = {name: saved[name] for name in saved.files}
        return PairRun(report, outputs, errors=dict(report.get("errors") or {}))


def compare(stage: str, run: PairRun, launch: Launch, figures: dict[str, Any]) -> StageResult:
    """The stage's verdict from a pair run: unavailable, failed (a kernel
    raised, or an output differs bit for bit), or passed."""
    if run.unavailable is not None:
        return StageResult(stage, UNAVAILABLE, run.unavailable, figures)
    if run.errors:
        lines = [f"{role}: {msg}" for role, msg in run.errors.items()]
        return StageResult(stage, FAIL, "a kernel failed: " + lines[0], figures, lines)
    details: list[str] = []
    compared = 0
    for a in launch.outputs:
        o, f = run.outputs.get(f"original/{a.name}"), run.outputs.get(f"fixed/{a.name}")
        if o is None or f is None:
            details.append(f"`{a.name}`: no output came back")
            continue
        compared += o.size
        details += differences(a.name, o, f)
    figures = dict(figures, compared_elements=compared)
    if details:
        return StageResult(stage, FAIL, "the outputs differ: " + details[0], figures, details)
    names = ", ".join(f"`{a.name}`" for a in launch.outputs)
    return StageResult(stage, PASS, f"{names}: {compared} elements bit-identical", figures)
