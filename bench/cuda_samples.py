#!/usr/bin/env python3
"""Benchmark: tolk-lint on NVIDIA's CUDA samples, shipped and tested code.

    python bench/cuda_samples.py SAMPLES_DIR [--include DIR ...] [--time-budget 120] [--json OUT] [NAME ...]

``SAMPLES_DIR`` is a checkout of NVIDIA's ``cuda-samples`` (or any folder of
``.cu`` files): not part of this repository, so the script never runs in CI.
Every ``.cu`` under it (or under the sample folders ``NAME ...`` names) is
compiled with ``nvcc -ptx -lineinfo -arch=sm_80`` (with the checkout's
``Common/`` and every ``--include`` on the include path; a file that does not
compile is listed and skipped), then, one file after the other, linted in a
fresh ``tolk-lint check --no-cache --output-format json --exit-zero``
process and assembled by ``ptxas -arch=sm_80``, both timed.

Every error-level report on these files is presumed a false alarm until
shown otherwise (they are shipped, tested code): the table gives them per
file and code, with TL005 (the budget ran out) apart, the lint's and ptxas's
seconds and their ratio. ``--json`` writes the same numbers.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

CODES = ("TL101", "TL102", "TL103", "TL201", "TL202", "TL204")


def _compile(cu: Path, out: Path, includes: list[Path]) -> Path | None:
    ptx = out / (cu.parent.name + "__" + cu.stem + ".ptx")
    cmd = ["nvcc", "-ptx", "-lineinfo", "-arch=sm_80", "-o", str(ptx), str(cu)]
    for inc in includes:
        cmd[1:1] = ["-I", str(inc)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=cu.parent)
    return ptx if done.returncode == 0 and ptx.exists() else None


def _timed(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    return time.perf_counter() - start, done


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("samples", type=Path)
    ap.add_argument("names", nargs="*", help="sample folders to take (default: every .cu)")
    ap.add_argument("--include", type=Path, action="append", default=[])
    ap.add_argument("--time-budget", type=float, default=120)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if shutil.which("nvcc") is None or shutil.which("ptxas") is None:
        print("nvcc and ptxas are needed", file=sys.stderr)
        return 2
    root = args.samples
    files = sorted(root.rglob("*.cu"))
    if args.names:
        files = [f for f in files if any(n in f.parts for n in args.names)]
    includes = [p for p in [root / "Common", *args.include] if p.is_dir()]
    lint = [sys.executable, "-m", "tolk_lint", "check", "--no-cache", "--output-format", "json", "--exit-zero",
            "--time-budget", str(args.time_budget)]  # fmt: skip
    rows, failed = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for cu in files:
            ptx = _compile(cu, Path(tmp), includes)
            if ptx is None:
                failed.append(str(cu))
                continue
            lint_s, done = _timed([*lint, str(ptx)])
            ptxas_s, _ = _timed(["ptxas", "-arch=sm_80", "-o", "/dev/null", str(ptx)])
            try:
                found = json.loads(done.stdout or "[]")
            except json.JSONDecodeError:
                found = []
            errors = Counter(d["code"] for d in found if d.get("severity") == "error")
            rows.append({"file": str(cu.relative_to(root)), "lines": ptx.read_text().count("\n"),
                         "errors": dict(errors), "lint_s": round(lint_s, 2), "ptxas_s": round(ptxas_s, 3)})  # fmt: skip
    total: Counter = Counter()
    print(f"{'file':44} {'lines':>7} " + " ".join(f"{c:>5}" for c in (*CODES, "TL005")) + "  lint s  ptxas s  ratio")
    for r in rows:
        total.update(r["errors"])
        cells = " ".join(f"{r['errors'].get(c, 0):>5}" for c in (*CODES, "TL005"))
        ratio = r["lint_s"] / max(r["ptxas_s"], 1e-3)
        print(f"{r['file'][-44:]:44} {r['lines']:>7} {cells} {r['lint_s']:>7.1f} {r['ptxas_s']:>8.2f} {ratio:>6.0f}x")
    print(f"{'TOTAL':44} {'':>7} " + " ".join(f"{total.get(c, 0):>5}" for c in (*CODES, "TL005")))
    other = {c: n for c, n in total.items() if c not in (*CODES, "TL005")}
    if other:
        print("other error-level codes:", other)
    if failed:
        print(f"{len(failed)} files did not compile (headers or flags this script does not give):", *failed, sep="\n  ")
    if args.json:
        args.json.write_text(json.dumps({"files": rows, "total": dict(total), "not_compiled": failed}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
