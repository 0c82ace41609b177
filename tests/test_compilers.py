"""PTX that real compilers emit, produced at test time, reads with no TL001
and no exception: nvcc (CUDA C kernels here and every CUDA C fixture),
numba-cuda and Triton where they install (``pip install 'numba-cuda[cu13]'
triton``; none needs a GPU). Which compilers ran is printed at the end of the
run ("compilers exercised"); a missing one is a skip that names it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ACCEPTANCE, FIXTURES

from tolk_lint.config import DEFAULT_SETTINGS, resolve_settings
from tolk_lint.engine import lint_file
from tolk_lint.testing import compile_cuda

BAD = {"TL001", "TL004"}


# Front end only (parse, lower, TL001/TL002) for PTX that other tests lint in
# full anyway (fixtures, acceptance); every rule for fresh compiler output.
FRONT_END_ONLY = DEFAULT_SETTINGS.with_(select=("TL0",))


def lint_ptx(path: Path, full: bool = True) -> list:
    res = lint_file(str(path), DEFAULT_SETTINGS if full else FRONT_END_ONLY)
    bad = [f"{d.code} {d.span}: {d.message}" for d in res.diagnostics if d.code in BAD]
    assert not bad, bad
    assert res.module is not None and res.kernels, f"{path}: no kernel read"
    return res.diagnostics


def record(log: dict, name: str, version: str | None = None, skipped: str | None = None) -> None:
    entry = log.setdefault(name, {"kernels": 0})
    if version:
        entry["version"] = version
    if skipped:
        entry["skipped"] = skipped
    else:
        entry["kernels"] += 1


# -- nvcc ------------------------------------------------------------------------------

CUDA_KERNELS = {
    "reduce_shfl": r"""
extern "C" __global__ void reduce_shfl(const float* x, float* out, int n) {
    __shared__ float warp_sums[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < (blockDim.x >> 5) ? warp_sums[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (threadIdx.x == 0) atomicAdd(out, v);
    }
}
""",
    "cp_async_copy": r"""
#include <cuda_pipeline.h>
extern "C" __global__ void cp_async_copy(const float4* src, float4* dst, int tiles) {
    __shared__ float4 buf[2][128];
    for (int t = 0; t < tiles; ++t) {
        __pipeline_memcpy_async(&buf[t & 1][threadIdx.x], &src[t * 128 + threadIdx.x], sizeof(float4));
        __pipeline_commit();
        __pipeline_wait_prior(0);
        __syncthreads();
        dst[t * 128 + threadIdx.x] = buf[t & 1][127 - threadIdx.x];
        __syncthreads();
    }
}
""",
    "wmma_tile": r"""
#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void wmma_tile(const half* a, const half* b, float* c) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
""",
    "device_calls": r"""
__device__ __noinline__ float helper(float* s, int t) { s[t] = t; __syncthreads(); return s[(t + 1) & 127]; }
__device__ float slow_math(float x) { return sinf(x) * expf(-x) + sqrtf(fabsf(x)); }
extern "C" __global__ void device_calls(float* y, const int* __restrict__ idx, int n) {
    __shared__ float s[128];
    int t = threadIdx.x;
    float v = helper(s, t);
    switch (idx[t] & 3) { case 0: v += 1; break; case 1: v *= 2; break; default: v = slow_math(v); }
    unsigned ballot = __ballot_sync(0xffffffffu, v > 0);
    if (t < n) y[t] = v + __popc(ballot) + __ldg(&y[n + t]);
    atomicMax((int*)&y[0], __float_as_int(v));
    printf("%f\n", v);
}
""",
}


@pytest.fixture(scope="module")
def nvcc_version() -> str:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH: no nvcc-produced PTX exercised")
    out = (
        subprocess.run([nvcc, "--version"], check=False, capture_output=True, text=True)
        .stdout.strip()
        .splitlines()
    )
    return out[-1].split(",")[0] if out else "?"


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", sorted(CUDA_KERNELS))
def test_nvcc_kernels(tmp_path, name, arch, nvcc_version, compiler_log):
    src = tmp_path / f"{name}.cu"
    src.write_text(CUDA_KERNELS[name])
    ptx = compile_cuda(src, arch, str(tmp_path))
    lint_ptx(ptx)
    record(compiler_log, "nvcc", nvcc_version)


def _cuda_fixtures() -> list[Path]:
    return sorted((FIXTURES / "cuda").rglob("*.cu")) if (FIXTURES / "cuda").is_dir() else []


@pytest.mark.nvcc
@pytest.mark.parametrize("src", _cuda_fixtures(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_nvcc_on_cuda_fixtures(tmp_path, src, nvcc_version, compiler_log):
    lint_ptx(compile_cuda(src, "sm_80", str(tmp_path)), full=False)
    record(compiler_log, "nvcc", nvcc_version)


def _acceptance_ptx() -> list[Path]:
    return sorted((ACCEPTANCE / "cuda").glob("*.ptx")) if (ACCEPTANCE / "cuda").is_dir() else []


@pytest.mark.parametrize("ptx", _acceptance_ptx(), ids=lambda p: p.name)
def test_acceptance_ptx_reads(ptx):
    lint_ptx(ptx, full=False)


# -- numba-cuda -------------------------------------------------------------------------


def _numba_kernels():
    from numba import cuda, float32, int32

    def tiled_matmul(A, B, C):
        TILE = 16
        sA = cuda.shared.array((16, 16), float32)
        sB = cuda.shared.array((16, 16), float32)
        x, y = cuda.grid(2)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        acc = float32(0.0)
        for t in range((A.shape[1] + TILE - 1) // TILE):
            sA[ty, tx] = A[y, t * TILE + tx] if y < A.shape[0] and t * TILE + tx < A.shape[1] else 0.0
            sB[ty, tx] = B[t * TILE + ty, x] if x < B.shape[1] and t * TILE + ty < B.shape[0] else 0.0
            cuda.syncthreads()
            for k in range(TILE):
                acc += sA[ty, k] * sB[k, tx]
            cuda.syncthreads()
        if y < C.shape[0] and x < C.shape[1]:
            C[y, x] = acc

    def warp_reduce(x, out):
        i = cuda.grid(1)
        v = x[i] if i < x.size else float32(0.0)
        off = 16
        while off > 0:
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, off)
            off //= 2
        if cuda.laneid == 0:
            cuda.atomic.add(out, 0, v)

    def histogram(data, bins):
        h = cuda.shared.array(64, int32)
        t = cuda.threadIdx.x
        if t < 64:
            h[t] = 0
        cuda.syncthreads()
        i = cuda.grid(1)
        if i < data.size:
            cuda.atomic.add(h, data[i] & 63, 1)
        cuda.syncthreads()
        if t < 64:
            cuda.atomic.add(bins, t, h[t])
        local = cuda.local.array(4, int32)
        for j in range(4):
            local[j] = cuda.ballot_sync(0xFFFFFFFF, j < t)
        cuda.syncwarp(0xFFFFFFFF)

    return [
        (tiled_matmul, "void(float32[:,:], float32[:,:], float32[:,:])"),
        (warp_reduce, "void(float32[:], float32[:])"),
        (histogram, "void(int32[:], int32[:])"),
    ]


@pytest.fixture(scope="module")
def numba_cuda(compiler_log):
    try:
        import numba
        from numba import cuda

        cuda.compile_ptx  # noqa: B018 - the API this test needs
    except Exception as e:  # noqa: BLE001 - any import failure means: not installed here
        record(compiler_log, "numba-cuda", skipped=f"not importable: {type(e).__name__}: {e}")
        pytest.skip(f"numba-cuda is not installed (pip install 'numba-cuda[cu13]'): {e}")
    try:
        import importlib.metadata as md

        version = f"{md.version('numba-cuda')} (numba {numba.__version__})"
    except Exception:  # noqa: BLE001
        version = numba.__version__
    return cuda, version


@pytest.mark.parametrize("cc", [(8, 0), (9, 0)])
@pytest.mark.parametrize("index", range(3))
def test_numba_cuda_ptx(tmp_path, numba_cuda, compiler_log, index, cc):
    cuda, version = numba_cuda
    fn, sig = _numba_kernels()[index]
    try:
        ptx, _ = cuda.compile_ptx(fn, sig, cc=cc, lineinfo=True)
    except Exception as e:  # noqa: BLE001 - e.g. NVRTC missing without the [cu13] extra
        record(compiler_log, "numba-cuda", version, skipped=f"compile_ptx failed: {type(e).__name__}")
        pytest.skip(f"numba-cuda cannot compile to PTX here ({type(e).__name__}: {str(e)[:200]})")
    f = tmp_path / f"{fn.__name__}.sm{cc[0]}{cc[1]}.ptx"
    f.write_text(ptx)
    lint_ptx(f)
    record(compiler_log, "numba-cuda", version)


def test_numba_cuda_naive_matmul_gets_tl301_for_both_factors(tmp_path, numba_cuda):
    # numba-cuda reads arrays with generic `ld.f32` through each array's data
    # pointer (a kernel argument: global memory); the unrolled `fma` chain is
    # one sum of products, and both factors are stageable
    cuda, _version = numba_cuda
    from numba import float32

    def matmul(A, B, C):
        i, j = cuda.grid(2)
        if i < C.shape[0] and j < C.shape[1]:
            tmp = float32(0.0)
            for k in range(A.shape[1]):
                tmp += A[i, k] * B[k, j]
            C[i, j] = tmp

    try:
        ptx, _ = cuda.compile_ptx(matmul, "void(float32[:,:], float32[:,:], float32[:,:])", cc=(8, 0), lineinfo=True)
    except Exception as e:  # noqa: BLE001 - e.g. NVRTC missing without the [cu13] extra
        pytest.skip(f"numba-cuda cannot compile to PTX here ({type(e).__name__}: {str(e)[:200]})")
    f = tmp_path / "matmul.ptx"
    f.write_text(ptx)
    res = lint_file(str(f), resolve_settings(block=(16, 16, 1)))
    tl301 = [d for d in res.diagnostics if d.code == "TL301"]
    assert len(tl301) == 2 and len({d.data["buffer"] for d in tl301}) == 2, [d.message for d in tl301]
    assert {tuple(d.data["tile_shape"]) for d in tl301} == {(16, 1), (1, 16)}


# -- Triton ---------------------------------------------------------------------------------

TRITON_SOURCE = """
import triton
import triton.language as tl


@triton.jit
def vec_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def softmax_rows(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sbk, scm,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :]
    b = b_ptr + rk[:, None] * sbk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(a), tl.load(b))
        a += BK
        b += BK * sbk
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :], acc)
"""

TRITON_CASES = {
    "vec_add": ({"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                {"BLOCK": 1024}, {}),
    "softmax_rows": ({"out_ptr": "*fp32", "in_ptr": "*fp32", "stride": "i32", "n_cols": "i32",
                      "BLOCK": "constexpr"}, {"BLOCK": 256}, {}),
    "matmul": ({"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
                "sam": "i32", "sbk": "i32", "scm": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"},
               {"BM": 64, "BN": 64, "BK": 32},
               {(i,): [["tt.divisibility", 16]] for i in range(9)}),
}  # fmt: skip


@pytest.fixture(scope="module")
def triton_module(tmp_path_factory, compiler_log):
    try:
        import triton
        from triton.backends.compiler import GPUTarget  # noqa: F401
        from triton.compiler import ASTSource  # noqa: F401
    except Exception as e:  # noqa: BLE001
        record(compiler_log, "triton", skipped=f"not importable: {type(e).__name__}")
        pytest.skip(f"Triton is not installed (pip install triton): {e}")
    folder = tmp_path_factory.mktemp("triton")
    os.environ.setdefault("TRITON_CACHE_DIR", str(folder / "cache"))
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    (folder / "tolk_triton_kernels.py").write_text(TRITON_SOURCE)
    sys.path.insert(0, str(folder))
    try:
        import tolk_triton_kernels as mod
    finally:
        sys.path.remove(str(folder))
    return mod, triton.__version__


@pytest.mark.parametrize("cc", [80, 90])
@pytest.mark.parametrize("name", sorted(TRITON_CASES))
def test_triton_ptx(tmp_path, triton_module, compiler_log, name, cc):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    mod, version = triton_module
    signature, constexprs, attrs = TRITON_CASES[name]
    src = ASTSource(getattr(mod, name), signature, constexprs, attrs)
    try:
        compiled = triton.compile(
            src, target=GPUTarget("cuda", cc, 32), options={"num_warps": 4, "num_stages": 3}
        )
    except Exception as e:  # noqa: BLE001 - a Triton that cannot compile here is a skip, not our failure
        record(compiler_log, "triton", version, skipped=f"compile failed: {type(e).__name__}")
        pytest.skip(f"Triton cannot compile {name} for sm_{cc} here: {type(e).__name__}: {str(e)[:300]}")
    f = tmp_path / f"{name}.sm{cc}.ptx"
    f.write_text(compiled.asm["ptx"])
    lint_ptx(f)
    record(compiler_log, "triton", version)
