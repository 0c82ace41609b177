"""The fixer's validation benchmark: every TL302 kernel, original vs fixed, on a GPU.

    python bench/bench_fixer.py prepare [--out bench/out/fixer]     # here: compile, fix, validate (a)-(c)
    python bench/bench_fixer.py run [--pairs bench/out/fixer] [--out DIR] [--runs 21]   # on the GPU

``prepare`` (no GPU needed) takes every TL302 kernel of the fixer fixtures
(fixtures/fixer/cuda, compiled with nvcc at sm_80) and of the acceptance set
when it lies beside the repository, fixes it with ``tolk-lint fix
--unsafe-fixes``, checks stages (a)-(c) of ``tolk-lint validate``, and writes
each pair (``NAME.orig.ptx``, ``NAME.fixed.ptx``, ``NAME.toml``) and
``prepared.json`` under ``--out``.

``run`` loads each pair on the GPU with `tolk_lint.validate.gpu_ptx` (numpy
and cuda-bindings only), at the spec's GPU sizes (above the 60 MB L2 of an
H200), checks bit identity, takes CUDA-event medians, and, where the spec's
``[bench] matmul`` names the GEMM's sizes, times CuPy's matmul (cuBLAS) of
the same sizes and dtype as the ceiling. It writes ``fixer_bench.json``, a
Markdown table ``fixer_bench.md`` and a before/after bar chart
``fixer_bench.png`` (matplotlib when installed, else a small PNG writer of
its own) under ``--out`` (default: $OUT, else bench/out/fixer). Without a GPU
every kernel is reported unavailable and the script exits 3.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXER = ROOT / "fixtures" / "fixer"
ACCEPTANCE = ROOT.parent / "shared" / "acceptance" / "cuda"
# acceptance kernels with TL302: (ptx, block, spec in fixtures/fixer/acceptance)
ACCEPTED = [("sgemm_tiled.sm80.ptx", "16,16,1", "sgemm_tiled16.toml"),
            ("wmma_staged_sync.sm80.ptx", "128,1,1", "wmma_gemm_staged_sync.toml")]  # fmt: skip


def _tolk(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tolk_lint", *args], capture_output=True, text=True, cwd=ROOT)


def _flags(cu: Path) -> str:
    first = cu.read_text().splitlines()[0]
    return first.split("--block", 1)[1].split()[0] if "--block" in first else "256,1,1"


def prepare(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    items = []
    for cu in sorted((FIXER / "cuda").glob("*.cu")):
        spec = cu.with_suffix(".toml")
        if "expect: TL302" not in cu.read_text() or not spec.exists():
            continue
        ptx = out / f"{cu.stem}.orig.ptx"
        p = subprocess.run(["nvcc", "-ptx", "-lineinfo", "-arch=sm_80", "-o", str(ptx), cu.name], cwd=cu.parent,
                           capture_output=True, text=True)  # fmt: skip
        if p.returncode != 0:
            print(f"skip {cu.name}: nvcc failed: {p.stderr.strip()[:200]}")
            continue
        items.append((cu.stem, ptx, _flags(cu), spec))
    for name, block, spec in ACCEPTED:
        src = ACCEPTANCE / name
        if src.exists() and (FIXER / "acceptance" / spec).exists():
            stem = "acceptance_" + name.split(".")[0]
            shutil.copyfile(src, out / f"{stem}.orig.ptx")
            items.append((stem, out / f"{stem}.orig.ptx", block, FIXER / "acceptance" / spec))
    prepared = []
    for stem, ptx, block, spec in items:
        fixed = out / f"{stem}.fixed.ptx"
        shutil.copyfile(ptx, fixed)
        # the fix's proof shares the file's budget: give it its time on a loaded machine
        _tolk("fix", "--unsafe-fixes", "--block", block, "--time-budget", "600", str(fixed))
        shutil.copyfile(spec, out / f"{stem}.toml")
        if fixed.read_text() == ptx.read_text():
            print(f"{stem}: no fix offered")
            prepared.append({"name": stem, "fixed": False})
            continue
        r = _tolk("validate", str(ptx), str(fixed), "--launch", str(spec), "--output-format", "json")
        report = json.loads(r.stdout)
        verdicts = {s["stage"]: s["verdict"] for s in report["stages"]}
        print(f"{stem}: fixed; {verdicts}")
        prepared.append({"name": stem, "fixed": True, "stages": verdicts,
                         "assembler": next(s["figures"] for s in report["stages"] if s["stage"] == "assembler")})  # fmt: skip
    (out / "prepared.json").write_text(json.dumps(prepared, indent=2))
    return 0 if all(p.get("stages", {}).get("interpreter", "pass") == "pass" for p in prepared) else 1


def _matmul_ms(spec, runs: int) -> float | None:
    """CuPy's matmul (cuBLAS) of the spec's ``[bench] matmul`` sizes, median ms; None where it does not apply."""
    sizes = spec.raw.get("bench", {}).get("matmul")
    if not sizes:
        return None
    try:
        import cupy as cp  # type: ignore[import-not-found]
    except ImportError:
        return None
    from tolk_lint.validate.spec import evaluate

    launch = spec.resolve(gpu=True)
    m, n, k = (evaluate(s, launch.sizes) for s in sizes)
    dtype = launch.args[0].dtype
    if dtype not in ("float32", "float16", "float64"):
        return None
    a = cp.random.standard_normal((m, k), dtype="float32").astype(dtype)
    b = cp.random.standard_normal((k, n), dtype="float32").astype(dtype)
    for _ in range(3):
        cp.matmul(a, b)
    times = []
    for _ in range(runs):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        cp.matmul(a, b)
        e1.record()
        e1.synchronize()
        times.append(cp.cuda.get_elapsed_time(e0, e1))
    return statistics.median(times)


def run(pairs: Path, out: Path, runs: int) -> int:
    from tolk_lint.validate.gpu_ptx import run_gpu_ptx
    from tolk_lint.validate.spec import load_spec

    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for orig in sorted(pairs.glob("*.orig.ptx")):
        stem = orig.name[: -len(".orig.ptx")]
        fixed = pairs / f"{stem}.fixed.ptx"
        if not fixed.exists() or fixed.read_text() == orig.read_text():
            continue
        spec = load_spec(str(pairs / f"{stem}.toml"))
        kernel = spec.raw.get("kernel")
        r = run_gpu_ptx(orig.read_text(), fixed.read_text(), kernel, spec.resolve(gpu=True), spec.resolve(), runs)
        row = {"name": stem, "kernel": kernel, "verdict": r.verdict, "summary": r.summary, **r.figures}
        if r.verdict != "unavailable":
            try:
                row["cublas_ms"] = _matmul_ms(spec, runs)
            except Exception as e:  # noqa: BLE001 - the ceiling is optional; say why it is missing
                row["cublas_error"] = str(e)
        rows.append(row)
        print(f"{stem}: {r.verdict}: {r.summary}")
    (out / "fixer_bench.json").write_text(json.dumps(rows, indent=2))
    (out / "fixer_bench.md").write_text(_table(rows))
    _chart(rows, out / "fixer_bench.png")
    if any(r["verdict"] == "fail" for r in rows):
        return 1
    return 3 if any(r["verdict"] == "unavailable" for r in rows) or not rows else 0


def _table(rows: list[dict]) -> str:
    out = ["| kernel | verdict | original ms | fixed ms | speed-up | cuBLAS ms |", "|---|---|---|---|---|---|"]
    for r in rows:
        cells = [r["name"], r["verdict"]] + [_num(r.get(k)) for k in ("original_ms", "fixed_ms", "speedup", "cublas_ms")]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _num(x) -> str:
    return "-" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)


def _chart(rows: list[dict], path: Path) -> None:
    timed = [r for r in rows if r.get("original_ms")]
    try:
        import matplotlib  # type: ignore[import-not-found]

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found]
    except ImportError:
        _bar_png(timed, path)
        return
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(timed)), 4))
    xs = range(len(timed))
    ax.bar([x - 0.2 for x in xs], [r["original_ms"] for r in timed], 0.4, label="original (synchronous)")
    ax.bar([x + 0.2 for x in xs], [r["fixed_ms"] for r in timed], 0.4, label="fixed (cp.async, Form A)")
    ax.set_xticks(list(xs), [r["name"] for r in timed], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("median ms")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _bar_png(rows: list[dict], path: Path, height: int = 240) -> None:
    """A bar chart without matplotlib: pairs of bars (original dark, fixed light), one pair per kernel."""
    width = max(64, 40 * len(rows) + 16)
    img = [[255] * width for _ in range(height)]
    top = max([r["original_ms"] for r in rows] + [r["fixed_ms"] for r in rows] + [1e-9])
    for i, r in enumerate(rows):
        for j, (key, shade) in enumerate((("original_ms", 60), ("fixed_ms", 170))):
            h = int((height - 8) * r[key] / top)
            x0 = 8 + 40 * i + 14 * j
            for y in range(height - h, height):
                for x in range(x0, x0 + 12):
                    img[y][x] = shade
    raw = b"".join(b"\0" + bytes(row) for row in img)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    path.write_bytes(png)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", default=str(ROOT / "bench" / "out" / "fixer"))
    r = sub.add_parser("run")
    r.add_argument("--pairs", default=str(ROOT / "bench" / "out" / "fixer"))
    r.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "bench" / "out" / "fixer"))
    r.add_argument("--runs", type=int, default=21)
    ns = ap.parse_args(argv)
    if ns.what == "prepare":
        return prepare(Path(ns.out))
    return run(Path(ns.pairs), Path(ns.out), ns.runs)


if __name__ == "__main__":
    sys.exit(main())
