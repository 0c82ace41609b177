"""Stage (b) of `tolk-lint validate`: ``ptxas -v`` on both kernels, for
each architecture asked (sm_80 and sm_90), with the resources side by side.

Each PTX is assembled with ``ptxas -v -arch=ARCH``; the stage passes when
the fixed kernel assembles wherever the original does and its static shared
memory stays within the 48 KiB a block may declare. Registers, shared bytes
and spills come from ptxas's own report. An architecture below the file's
``.target`` is left out (ptxas cannot lower a target), and so is the stage
where no ptxas is found (on PATH, under $CUDA_HOME/bin, or in the
``nvidia-cuda-nvcc`` wheel).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

from tolk_lint.validate.result import FAIL, PASS, UNAVAILABLE, StageResult

ARCHS = ("sm_80", "sm_90")
STATIC_SHARED_LIMIT = 48 * 1024


def find_ptxas() -> str | None:
    found = shutil.which("ptxas")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.path.isfile(os.path.join(root, "bin", "ptxas")):
            return os.path.join(root, "bin", "ptxas")
    try:
        import nvidia  # type: ignore[import-not-found]

        for base in getattr(nvidia, "__path__", []):
            for sub in ("cu13", "cuda_nvcc"):
                p = os.path.join(base, sub, "bin", "ptxas")
                if os.path.isfile(p):
                    return p
    except ImportError:
        pass
    return None


def assemble(ptxas: str, ptx: str, arch: str, kernel: str) -> dict:
    """ptxas's verdict and resource report for ``kernel`` in ``ptx`` on ``arch``."""
    with tempfile.TemporaryDirectory(prefix="tolk-ptxas-") as tmp:
        src = os.path.join(tmp, "k.ptx")
        with open(src, "w", encoding="utf-8") as f:
            f.write(ptx)
        try:
            p = subprocess.run([ptxas, "-v", f"-arch={arch}", src, "-o", os.path.join(tmp, "k.cubin")],
                               capture_output=True, text=True, timeout=300)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as e:
            return {"ok": False, "error": str(e)}
    out = p.stdout + p.stderr
    if p.returncode != 0:
        err = next((ln for ln in out.splitlines() if "error" in ln.lower()), out.strip()[-300:])
        return {"ok": False, "error": err.strip()}
    return {"ok": True, **_resources(out, kernel)}


def _resources(out: str, kernel: str) -> dict:
    """The figures of ``kernel``'s section of a ``ptxas -v`` report."""
    lines = out.splitlines()
    start = next((i for i, ln in enumerate(lines) if f"'{kernel}'" in ln and "Compiling" in ln), 0)
    got: dict = {"registers": None, "shared_bytes": 0, "spill_stores": 0, "spill_loads": 0, "barriers": 0}
    for ln in lines[start:]:
        if "Compiling" in ln and f"'{kernel}'" not in ln and got["registers"] is not None:
            break
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", ln)
        if m:
            got["spill_stores"], got["spill_loads"] = int(m.group(1)), int(m.group(2))
        m = re.search(r"Used (\d+) registers", ln)
        if m:
            got["registers"] = int(m.group(1))
            b = re.search(r"used (\d+) barriers", ln)
            s = re.search(r"(\d+) bytes smem", ln)
            got["barriers"] = int(b.group(1)) if b else 0
            got["shared_bytes"] = int(s.group(1)) if s else 0
    return got


def _target(ptx: str) -> int:
    m = re.search(r"^\s*\.target\s+sm_(\d+)", ptx, re.M)
    return int(m.group(1)) if m else 0


def run_assembler(original: str, fixed: str, kernel: str, archs: tuple[str, ...] = ARCHS) -> StageResult:
    ptxas = find_ptxas()
    if ptxas is None:
        return StageResult("assembler", UNAVAILABLE, "no ptxas found (install the CUDA toolkit or nvidia-cuda-nvcc)")
    figures: dict = {}
    details: list[str] = []
    failed: list[str] = []
    lowest = max(_target(original), _target(fixed))
    ran = 0
    for arch in archs:
        if int(arch[3:]) < lowest:
            details.append(f"{arch}: left out, below the PTX's .target sm_{lowest}")
            continue
        a = assemble(ptxas, original, arch, kernel)
        b = assemble(ptxas, fixed, arch, kernel)
        figures[arch] = {"original": a, "fixed": b}
        ran += 1
        if not b["ok"] and a["ok"]:
            failed.append(f"{arch}: the fixed kernel does not assemble: {b['error']}")
        elif b["ok"] and b.get("shared_bytes", 0) > STATIC_SHARED_LIMIT:
            failed.append(f"{arch}: the fixed kernel declares {b['shared_bytes']} bytes of shared memory")
        if a["ok"] and b["ok"]:
            details.append(f"{arch}: registers {a['registers']} -> {b['registers']}, shared "
                           f"{a['shared_bytes']} -> {b['shared_bytes']} B, spills "
                           f"{a['spill_stores'] + a['spill_loads']} -> {b['spill_stores'] + b['spill_loads']} B")  # fmt: skip
        elif not a["ok"]:
            details.append(f"{arch}: the original does not assemble either: {a['error']}")
    if failed:
        return StageResult("assembler", FAIL, failed[0], figures, failed + details)
    if not ran:
        return StageResult("assembler", UNAVAILABLE, "no asked-for architecture is at or above the PTX's target",
                           figures, details)  # fmt: skip
    return StageResult("assembler", PASS, "; ".join(d for d in details if "->" in d) or "assembled", figures, details)
