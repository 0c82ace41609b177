#!/usr/bin/env python3
"""Benchmark: tolk-lint on large real PTX, beside ptxas on the same file.

    python bench/bench_ptx.py [--ptx FILE] [--arch sm_80] [--repeat 3] [--unroll 6] [--select/--ignore CODES] [--json OUT]
    python bench/bench_ptx.py --corpus [DIR] [--time-budget 120] [--largest 3] [--repeat 3] [--json OUT]
    python bench/bench_ptx.py --numba [DIR ...] [--time-budget 60] [--repeat 3] [--json OUT]

1. Writes a register-tiled sgemm kernel (128x128 block tile, 8x8 per thread,
   k-tile 32 fully unrolled, k loop unrolled 6 times, barriers and a shuffle
   epilogue) and compiles it with ``nvcc -ptx -lineinfo -arch=sm_80``: about
   31,000 lines of real compiler output. ``--ptx FILE`` benchmarks a given file
   instead.
2. Times tolk-lint end to end (``tolk_lint.engine.lint_file``: read, parse,
   lower, every analysis and rule, suppressions) and ``ptxas -arch=sm_80`` on
   the same file, their runs interleaved, best of ``--repeat`` each; prints
   lines/s and the ratio tolk-lint time / ptxas time.
3. Linearity: the same for the file doubled (two copies of every kernel,
   renamed); the time ratio should be about 2.
4. Where the time goes, on one run: parse (lark), lower (to SSA IR), prepare,
   CFG, each analysis (uniformity, memory, staging; Z3's share from
   ``tolk_lint.analysis.smt.STATS``), each rule, suppressions.

``--corpus`` and ``--numba`` measure the real corpus instead, each file in a
fresh process as a user runs it (bench/corpus_bench.py says how).

A script, not a test: the numbers depend on the machine. bench/README.md
keeps the last ones.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corpus_bench import renamed_copies  # bench/, the script's own folder, is on sys.path

CUDA_CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus" / "cuda"

KERNEL = r"""// A register-tiled sgemm micro-kernel, unrolled over its k-tile and its k loop:
// large, real nvcc output for the tolk-lint benchmark (bench/bench_ptx.py).
#define BM 128
#define BN 128
#define BK 32
#define TM 8
#define TN 8

extern "C" __global__ void __launch_bounds__(256)
bench_sgemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
            int M, int N, int K, float alpha, float beta)
{
    __shared__ float As[BK][BM + 4];
    __shared__ float Bs[BK][BN + 4];
    const int tid = threadIdx.x;
    const int tx = tid % 16, ty = tid / 16;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN];
    #pragma unroll
    for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = 0.0f;

    #pragma unroll UNROLL
    for (int k0 = 0; k0 < K; k0 += BK) {
        #pragma unroll
        for (int l = 0; l < (BM * BK) / 256; ++l) {
            int e = l * 256 + tid;
            int r = e / BK, c = e % BK;
            As[c][r] = (row0 + r < M && k0 + c < K) ? A[(row0 + r) * K + k0 + c] : 0.0f;
            int rb = e / BN, cb = e % BN;
            Bs[rb][cb] = (k0 + rb < K && col0 + cb < N) ? B[(k0 + rb) * N + col0 + cb] : 0.0f;
        }
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float a[TM], b[TN];
            #pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[kk][ty * TM + i];
            #pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tx * TN + j];
            #pragma unroll
            for (int i = 0; i < TM; ++i)
                #pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }

    const unsigned lane = tid & 31;
    #pragma unroll
    for (int i = 0; i < TM; ++i) {
        #pragma unroll
        for (int j = 0; j < TN; ++j) {
            int r = row0 + ty * TM + i, c = col0 + tx * TN + j;
            float v = alpha * acc[i][j];
            float nb = __shfl_xor_sync(0xffffffffu, v, 1);
            v = (lane & 1) ? v : 0.5f * (v + nb) + 0.5f * (v - nb);
            if (r < M && c < N)
                C[r * N + c] = v + beta * C[r * N + c];
        }
    }
}
"""


def compile_kernel(folder: Path, arch: str, unroll: int) -> Path:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        sys.exit("bench_ptx: nvcc is not on PATH (or pass --ptx FILE)")
    src = folder / "bench_sgemm.cu"
    src.write_text(KERNEL.replace("UNROLL", str(unroll)))
    out = folder / "bench_sgemm.ptx"
    t = time.perf_counter()
    subprocess.run(
        [nvcc, "-ptx", "-lineinfo", f"-arch={arch}", "-o", out.name, src.name], cwd=folder, check=True
    )
    print(f"nvcc -ptx -lineinfo -arch={arch}: {time.perf_counter() - t:.2f} s")
    return out


def doubled(text: str) -> str:
    """The module with a second, renamed copy of every kernel and device
    function (bench/corpus_bench.py's ``renamed_copies``)."""
    try:
        return renamed_copies(text, 2)
    except ValueError as e:
        raise SystemExit(f"bench_ptx: {e}") from None


def best_of_interleaved(fns: list, repeat: int) -> list[tuple[float, object]]:
    """The best time (and last result) of each function, run in turn
    (a, b, a, b, ...): on a shared machine a slow spell then slows both sides
    of a ratio alike."""
    times: list[list[float]] = [[] for _ in fns]
    results: list[object] = [None] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            results[i] = fn()
            times[i].append(time.perf_counter() - t)
    return [(min(ts), r) for ts, r in zip(times, results)]


def lint_and_ptxas(path: Path, arch: str, repeat: int, cli: bool = False):
    """(tolk-lint seconds, its result, ptxas seconds or None, command-line
    seconds or None), their runs interleaved. ``cli``: also time
    ``tolk-lint check --no-cache FILE`` in a new process (start-up, imports
    and output included), as a user runs it."""
    ptxas = ptxas_runner(path, arch)

    def command_line():
        subprocess.run([sys.executable, "-m", "tolk_lint", "check", "--no-cache", "--isolated", "--exit-zero", *CLI_FLAGS, str(path)],
                       check=True, capture_output=True)  # fmt: skip

    fns = [lambda: lint_once(path)] + ([ptxas] if ptxas else []) + ([command_line] if cli else [])
    got = best_of_interleaved(fns, repeat)
    return got[0][0], got[0][1], (got[1][0] if ptxas else None), (got[-1][0] if cli else None)


CLI_FLAGS: list[str] = []  # set by main(): --select/--ignore for the command-line run


def ptxas_runner(path: Path, arch: str):
    """A function that runs ``ptxas -arch`` on ``path``, or None without ptxas."""
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        return None
    text = path.read_text()
    m = re.search(r"^\.version\s+(\d+)\.(\d+)", text, re.MULTILINE)
    target = path
    if m and (int(m.group(1)), int(m.group(2))) > (9, 0):  # newer ISA than the local ptxas (Numba, Triton)
        target = path.with_suffix(".v90.ptx")
        target.write_text(text[: m.start()] + ".version 9.0" + text[m.end() :])

    def run():
        subprocess.run(
            [ptxas, f"-arch={arch}", str(target), "-o", os.devnull], check=True, capture_output=True
        )

    return run


SETTINGS = None  # set by main(): --select/--ignore


def settings():
    from tolk_lint.config import DEFAULT_SETTINGS

    return SETTINGS or DEFAULT_SETTINGS


def lint_once(path: Path):
    from tolk_lint.engine import lint_file

    return lint_file(str(path), settings())


class _Rows(list):
    """Rows of the breakdown, each also printed to stderr as it comes (the run is long)."""

    def append(self, row: tuple[str, float]) -> None:
        super().append(row)
        print(f"    ... {row[0]}: {row[1]:.3f} s", file=sys.stderr, flush=True)


def breakdown(path: Path) -> list[tuple[str, float]]:
    """One instrumented run, stage by stage (the stages the installed
    tolk_lint has; a missing analysis is reported as such), under the
    collector thresholds `lint_text` sets."""
    import contextlib

    from tolk_lint import engine

    with getattr(engine, "fewer_collections", contextlib.nullcontext)():
        return _breakdown(path)


def _breakdown(path: Path) -> list[tuple[str, float]]:
    from tolk_lint.catalog import iter_rules
    from tolk_lint.engine import decode, prepare
    from tolk_lint.registry import RuleContext
    from tolk_lint.suppress import apply_suppressions

    rows: list[tuple[str, float]] = _Rows()
    settings_ = settings()
    t = time.perf_counter()
    text, err = decode(path.read_bytes(), str(path))
    rows.append(("read + decode", time.perf_counter() - t))
    assert err is None, err

    from tolk_lint.frontends import ptx as ptx_frontend

    parse_tree = getattr(ptx_frontend, "parse_tree", None)
    if parse_tree is None:
        from tolk_lint.frontends.ptx.parser import parse_tree
    t = time.perf_counter()
    parse_tree(text)
    t_parse = time.perf_counter() - t
    t = time.perf_counter()
    module = ptx_frontend.parse_ptx(text, str(path))
    t_both = time.perf_counter() - t
    rows.append(("parse (lark LALR -> tuples)", t_parse))
    rows.append(("lower (tuples -> SSA IR)", max(0.0, t_both - t_parse)))

    t = time.perf_counter()
    prepare(module, settings_)
    rows.append(("prepare (target, launch)", time.perf_counter() - t))

    kernels = [k for k in module.kernels if k.blocks]
    from tolk_lint.engine import kernel_target
    from tolk_lint.ir.cfg import cfg_of

    ctxs = [RuleContext(module, k, settings_, kernel_target(k, module, settings_)) for k in kernels]
    t = time.perf_counter()
    for k in kernels:
        cfg_of(k)
    rows.append(("CFG (dominators, loops, control dependence)", time.perf_counter() - t))

    smt_stats = _smt_stats()
    z3_before = dict(smt_stats) if smt_stats is not None else None
    for name in ("uniformity", "memory", "staging"):
        t = time.perf_counter()
        try:
            for ctx in ctxs:
                getattr(ctx, name)()
        except ImportError as e:
            rows.append((f"analysis: {name} (not built: {e.name})", 0.0))
            continue
        rows.append((f"analysis: {name}", time.perf_counter() - t))
    if smt_stats is not None:
        z3 = smt_stats.get("seconds", 0.0) - z3_before.get("seconds", 0.0)
        q = smt_stats.get("queries", 0) - z3_before.get("queries", 0)
        rows.append((f"  of which Z3 ({q} queries, inside the analyses above)", z3))

    diags = list(module.diagnostics)
    for rule_cls in iter_rules(settings_.effective_select, settings_.ignore):
        if rule_cls.engine_rule:
            continue
        rule = rule_cls()
        t = time.perf_counter()
        for ctx in ctxs:
            try:
                diags.extend(rule.check(ctx))
            except Exception as e:  # noqa: BLE001 - the engine turns this into TL004
                print(f"  ({rule.code} raised {type(e).__name__}: {e})")
        rows.append((f"rule {rule.code} {rule.name}", time.perf_counter() - t))
    if smt_stats is not None:
        z3_all = smt_stats.get("seconds", 0.0) - z3_before.get("seconds", 0.0)
        rows.append(("Z3 in total (analyses + rules)", z3_all))

    t = time.perf_counter()
    apply_suppressions(diags, module, settings_)
    rows.append(("suppressions", time.perf_counter() - t))
    return rows


def _smt_stats() -> dict | None:
    try:
        from tolk_lint.analysis import smt
    except ImportError:
        return None
    return getattr(smt, "STATS", None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ptx", type=Path, help="benchmark this PTX file instead of compiling the sgemm kernel")
    ap.add_argument(
        "--arch",
        default="sm_80",
        help="the target of nvcc and ptxas (default sm_80; --corpus always compiles for sm_80)",
    )
    ap.add_argument(
        "--unroll",
        type=int,
        default=6,
        help="unroll factor of the k loop (6: ~31,000 lines; nvcc declines 7 and 8)",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs per measurement (default 3): the best is kept; --corpus/--numba: the median",
    )
    ap.add_argument("--no-breakdown", action="store_true", help="skip the instrumented run, stage by stage")
    ap.add_argument("--select", help="rule codes or prefixes to run (as on the command line)")
    ap.add_argument("--ignore", help="rule codes or prefixes to leave out")
    ap.add_argument("--json", type=Path, help="also write the numbers to this file")
    modes = ap.add_argument_group("the real corpus (bench/corpus_bench.py), instead of the sgemm")
    modes.add_argument("--corpus", nargs="?", const=str(CUDA_CORPUS), metavar="DIR",
                       help="compile every .cu of DIR (default fixtures/corpus/cuda) and time "
                            "`tolk-lint check` on each beside ptxas, median of --repeat rounds")  # fmt: skip
    modes.add_argument("--numba", nargs="*", metavar="DIR",
                       help="time `tolk-lint check` on every .py of the DIRs (default "
                            "fixtures/corpus/numba_real and fixtures/corpus/numba)")  # fmt: skip
    modes.add_argument("--time-budget", type=float, default=120.0, metavar="S",
                       help="tolk-lint's --time-budget per file in those modes (default 120; wall time, "
                            "so a loaded machine ends more kernels in TL005)")  # fmt: skip
    modes.add_argument(
        "--largest",
        type=int,
        default=3,
        metavar="N",
        help="--corpus: the scaling runs (x2, x4 copies) on the N largest files (default 3; 0: none)",
    )
    modes.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="--corpus: nvcc compiles at once (the timed runs are always one at a time)",
    )
    modes.add_argument("--lint-jobs", type=int, metavar="N",
                       help="--corpus/--numba: pass -j N to tolk-lint (default: its own, one worker per CPU)")
    a = ap.parse_args()
    if a.corpus is not None or a.numba is not None:
        if a.select or a.ignore or a.ptx:
            ap.error(
                "--select, --ignore and --ptx belong to the default mode; --corpus/--numba run every rule"
            )
        import corpus_bench

        return corpus_bench.main(a)
    global SETTINGS
    if a.select or a.ignore:
        from tolk_lint.config import resolve_settings

        def codes(v):
            return tuple(c.strip().upper() for c in v.split(",") if c.strip()) if v else None

        SETTINGS = resolve_settings(select=codes(a.select), ignore=codes(a.ignore))
        CLI_FLAGS.extend([f"--select={a.select}"] if a.select else [])
        CLI_FLAGS.extend([f"--ignore={a.ignore}"] if a.ignore else [])
        print(f"rules: --select {a.select or 'all'} --ignore {a.ignore or 'none'}")

    tmp = Path(tempfile.mkdtemp(prefix="tolk-bench-"))
    path = a.ptx.resolve() if a.ptx else compile_kernel(tmp, a.arch, a.unroll)
    text = path.read_text()
    n_lines = len(text.splitlines())
    print(f"file: {path} ({n_lines:,} lines, {len(text) / 1e6:.2f} MB)")
    if n_lines < 30_000 and not a.ptx:
        print(f"warning: only {n_lines:,} lines; raise --unroll for a file of 30,000 or more")

    rows = []
    if not a.no_breakdown:  # first: it also warms up imports and the grammar tables
        print()
        print("where the time goes (one instrumented run):", flush=True)
        rows = breakdown(path)
        total = sum(t for name, t in rows if not name.startswith(("  of which", "Z3 in total")))
        for name, t in rows:
            share = f"{100 * t / total:5.1f}%" if total else ""
            print(f"  {name:<58} {t:8.3f} s {share}")
        print(f"  {'total':<58} {total:8.3f} s", flush=True)
    else:
        lint_once(path)  # warm-up: imports, grammar tables

    t_lint, res, t_ptxas, t_cli = lint_and_ptxas(path, a.arch, a.repeat, cli=True)
    codes: dict[str, int] = {}
    for d in res.diagnostics:
        codes[d.code] = codes.get(d.code, 0) + 1
    print()
    print(f"tolk-lint (lint_file, best of {a.repeat}, runs interleaved with ptxas's): "
          f"{t_lint:.3f} s = {n_lines / t_lint:,.0f} lines/s")  # fmt: skip
    print(f"  diagnostics: {dict(sorted(codes.items())) or 'none'}")
    if t_ptxas is not None:
        print(
            f"ptxas -arch={a.arch} (best of {a.repeat}): {t_ptxas:.3f} s = {n_lines / t_ptxas:,.0f} lines/s"
        )
        print(f"ratio tolk-lint / ptxas: {t_lint / t_ptxas:.2f}  (target: <= 1.00)", flush=True)
    else:
        print("ptxas: not on PATH", flush=True)
    print(f"tolk-lint check --no-cache FILE (a new process: start-up, imports, output; best of {a.repeat}): "
          f"{t_cli:.3f} s" + (f", ratio to ptxas {t_cli / t_ptxas:.2f}" if t_ptxas else ""), flush=True)  # fmt: skip

    big = tmp / (path.stem + ".x2.ptx")
    big.write_text(doubled(text))
    n_big = len(big.read_text().splitlines())
    t_lint2, _, t_ptxas2, _ = lint_and_ptxas(big, a.arch, a.repeat)
    print()
    print(
        f"linearity: doubled file {n_big:,} lines: tolk-lint {t_lint2:.3f} s, ratio x2 / x1 = {t_lint2 / t_lint:.2f}"
    )
    if t_ptxas2 is not None:
        print(f"           ptxas {t_ptxas2:.3f} s, ratio x2 / x1 = {t_ptxas2 / t_ptxas:.2f}")

    if a.json:
        a.json.write_text(json.dumps({
            "file": str(path), "lines": n_lines, "tolk_lint_s": t_lint, "ptxas_s": t_ptxas,
            "ratio": (t_lint / t_ptxas) if t_ptxas else None, "lines_per_s": n_lines / t_lint,
            "command_line_s": t_cli,
            "doubled_lines": n_big, "doubled_s": t_lint2, "linearity": t_lint2 / t_lint,
            "breakdown": rows, "diagnostics": codes,
        }, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
