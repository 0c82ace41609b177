#!/usr/bin/env python3
"""What the staging analysis adds to a lint of a large PTX file.

Compiles (with the machine's nvcc) a CUDA C file of several heavily unrolled
wmma GEMM kernels that read their fragments straight from global memory, so
that every ``wmma.mma`` operand is analysed (TL301), and a tiled SGEMM whose
copies are unrolled (TL302); then times, on the PTX:

- parse + lower (the front end),
- the staging analysis alone (``staging_facts`` on every kernel),
- ``check`` with the staging rules only (--select TL3),

and prints seconds, lines and the share the staging analysis takes.

    python bench/bench_stage.py [--kernels N] [--unroll U] [--arch sm_80]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

KERNEL = r"""
extern "C" __global__ void __launch_bounds__(256)
wmma_unrolled_{i}(const __half* __restrict__ A, const __half* __restrict__ B, float* __restrict__ C, int N, int K)
{{
    const int warp = threadIdx.x / 32;
    const int row0 = blockIdx.y * 128 + (warp / 2) * 32;
    const int col0 = blockIdx.x * 64 + (warp % 2) * 32;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[2];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb[2];
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            wmma::fill_fragment(acc[i][j], 0.0f);
    for (int k0 = 0; k0 < K; k0 += 16 * {unroll}) {{
#pragma unroll
        for (int kk = 0; kk < {unroll}; ++kk) {{
            const int k = k0 + kk * 16;
            for (int i = 0; i < 2; ++i)
                wmma::load_matrix_sync(fa[i], A + (size_t)(row0 + 16 * i) * K + k, K);
            for (int j = 0; j < 2; ++j)
                wmma::load_matrix_sync(fb[j], B + (size_t)k * N + col0 + 16 * j, N);
            for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 2; ++j)
                    wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }}
    }}
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(C + (size_t)(row0 + 16 * i) * N + col0 + 16 * j, acc[i][j], N,
                                    wmma::mem_row_major);
}}
"""

SGEMM = r"""
extern "C" __global__ void __launch_bounds__(256)
sgemm_tiled_{i}(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int N, int K)
{{
    __shared__ float sA[64][32];
    __shared__ float sB[32][64];
    const int t = threadIdx.x, tx = t % 16, ty = t / 16;
    const int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
    float acc[4][4] = {{}};
    for (int k0 = 0; k0 < K; k0 += 32) {{
#pragma unroll
        for (int c = 0; c < 8; ++c) {{
            const int e = c * 256 + t;
            sA[e / 32][e % 32] = A[(size_t)(row0 + e / 32) * K + k0 + e % 32];
            sB[e / 64][e % 64] = B[(size_t)(k0 + e / 64) * N + col0 + e % 64];
        }}
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 32; ++k)
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j)
                    acc[i][j] += sA[ty * 4 + i][k] * sB[k][tx * 4 + j];
        __syncthreads();
    }}
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            C[(size_t)(row0 + ty * 4 + i) * N + col0 + tx * 4 + j] = acc[i][j];
}}
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", type=int, default=8, help="wmma kernels in the file (default 8)")
    ap.add_argument("--unroll", type=int, default=32, help="k-steps unrolled a trip (default 32)")
    ap.add_argument("--arch", default="sm_80")
    a = ap.parse_args()
    if shutil.which("nvcc") is None:
        print("bench_stage: nvcc is not on PATH; nothing to measure", file=sys.stderr)
        return 2

    from tolk_lint.analysis.stage import staging_facts
    from tolk_lint.config import DEFAULT_SETTINGS
    from tolk_lint.engine import check_module, kernel_target, parse, prepare

    tmp = tempfile.mkdtemp(prefix="bench-stage-")
    cu = os.path.join(tmp, "big.cu")
    with open(cu, "w") as f:
        f.write("#include <mma.h>\n#include <cuda_fp16.h>\nusing namespace nvcuda;\n")
        for i in range(a.kernels):
            f.write(KERNEL.format(i=i, unroll=a.unroll))
        for i in range(max(1, a.kernels // 4)):
            f.write(SGEMM.format(i=i))
    ptx = os.path.join(tmp, "big.ptx")
    t0 = time.perf_counter()
    subprocess.run(["nvcc", "-ptx", "-lineinfo", f"-arch={a.arch}", "-o", ptx, cu], check=True)
    t_nvcc = time.perf_counter() - t0
    text = open(ptx).read()
    lines = text.count("\n")

    settings = DEFAULT_SETTINGS.with_(block=(256, 1, 1))
    t0 = time.perf_counter()
    module = parse(text, ptx)
    prepare(module, settings)
    t_parse = time.perf_counter() - t0

    import numpy  # noqa: F401  (imported once here, not charged to the analysis)
    import z3  # noqa: F401

    t0 = time.perf_counter()
    operands = copies = staged = 0
    for k in module.kernels:
        if not k.blocks:
            continue
        facts = staging_facts(k, module, settings, kernel_target(k, module, settings))
        k._cache["staging"] = facts
        operands += len(facts.operands)
        staged += sum(v.stageable for v in facts.operands)
        copies += len(facts.copies)
    t_stage = time.perf_counter() - t0

    module2 = parse(text, ptx)
    prepare(module2, settings)
    t0 = time.perf_counter()
    diags = check_module(module2, settings.with_(select=("TL3",)))
    t_rules = time.perf_counter() - t0

    print(f"PTX: {lines} lines, {len(module.kernels)} kernels ({a.arch}, nvcc {t_nvcc:.1f} s)")
    print(f"parse + lower:               {t_parse:8.3f} s")
    print(f"staging analysis:            {t_stage:8.3f} s  ({operands} operands, {staged} stageable, "
          f"{copies} tile copies)")  # fmt: skip
    print(f"check --select TL3 (rules):  {t_rules:8.3f} s  ({len(diags)} diagnostics)")
    print(f"staging adds {t_stage:.3f} s = {100 * t_stage / max(t_parse, 1e-9):.0f}% of the front end's time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
