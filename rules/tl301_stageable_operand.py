"""TL301 stageable-operand

An operand read from global memory through a dense box of threads, at every trip of its sum: stage it through shared memory.

## What it does
Finds each operand of a tensor core (`wmma.mma`, `mma.sync`) and each
factor of a sum of products (`acc += A[i, k] * B[k, j]` in a loop over `k`
in Numba; in PTX the chain of `fma` nvcc unrolls `sum += A[row * N + k] *
B[k * N + col]` to, each factor named by the pointer it reads: `A[...]`)
that is loaded from global memory (or through a pointer argument with a
generic load, as numba-cuda's PTX reads arrays) at every trip of the sum's
loop through an index whose thread and lane terms form a dense box: every
element of a tile read once, none of those terms reading another range. It
reports the tile (shape, dtype and bytes a trip), how many times each
element is read today by the workgroup, and the depth staging would have on
the target: 2 where the target copies asynchronously (`cp.async`, sm_80 and
later) and two stages fit the 48 KiB of static shared memory a block may
declare, 1 where one does. Kernels that already hold shared memory or
reduce across threads are left alone. `tolk-lint stage` prints the same
facts as a table, with the box's dimensions and the reason for every
operand not staged.

## Why is this bad?
Unstaged, every warp loads its own fragments a few bytes at a time, and warps
that share a tile load it again: the same bytes cross the memory system once
per reading warp. Staged, the workgroup copies the tile into shared memory
once a trip, 16 bytes a thread, and the cores read their fragments back from
there; at depth 2 the copy of the next trip's tile overlaps this trip's
cores. Staging moves values and never rounds them: the staged kernel computes
the same bits.

## Example
```cuda
for (int k = 0; k < K; k += 16) {
    wmma::load_matrix_sync(fa, A + (size_t)row0 * K + k, K);   // from global
    wmma::load_matrix_sync(fb, B + (size_t)k * N + col0, N);
    wmma::mma_sync(acc, fa, fb, acc);
}
```

## How to fix
Copy the workgroup's tile of each operand into a `__shared__` array at the
start of each trip (16 bytes a thread, rows padded or swizzled), barrier, and
load the fragments from shared memory; on sm_80 and later use a two-stage
`cp.async` pipeline (see TL302).

## Fix safety
No automatic fix: staging changes the kernel's structure (its shared memory
and barriers).

## Options
`shared-budget = "optin"` measures the depth against the opt-in maximum of
the target instead of the static 48 KiB; `stage = false` turns staging off.

## See also
docs/analyses.md#staging: what "stageable at depth d" means.
"""

from tolk_lint.diagnostics import Severity
from tolk_lint.registry import Invalid, Rule, Valid


def _shape(shape) -> str:
    return "×".join(str(x) for x in shape)


def _bytes(n: int) -> str:
    return f"{n // 1024} KiB" if n >= 1024 and n % 1024 == 0 else f"{n} B"


class StageableOperand(Rule):
    code = "TL301"
    name = "stageable-operand"
    analyses = ("tolk_lint.analysis.stage",)
    severity = Severity.INFO

    def check(self, ctx):
        from tolk_lint.analysis.stage import group_by_line

        facts = ctx.staging()
        for v, copies in group_by_line(facts.operands):
            if not v.stageable or v.depth < 1 or v.box is None:
                continue
            box = v.box
            op = f"operand {v.operand} of `{v.op_desc}`" if v.op.op.value == "mma" else f"`{v.operand}` in the sum"
            reread = f"each element is read {box.rereads} times a trip today" if box.rereads > 1 else (
                "each element is read once a trip")
            msg = (
                f"{op} is read from global memory at every trip through a dense box of threads "
                f"({', '.join(str(d) for d in box.dims) or 'one element'}): stage its "
                f"{_shape(box.shape)} {v.dtype} tile ({_bytes(v.tile_bytes)} a trip) through shared memory "
                f"at depth {v.depth}; {reread}"
            )
            if v.k_unrolled_shape and tuple(v.k_unrolled_shape) != tuple(box.shape):
                msg += f"; with K unrolled to 32 the tile is {_shape(v.k_unrolled_shape)}"
            if v.depth < 2 and ctx.target.async_copy:
                msg += f" ({v.depth_why})"
                if v.optin_depth > v.depth:
                    msg += f"; the opt-in limit of {_bytes(ctx.target.shared_optin)} would allow depth {v.optin_depth}"
            if v.gated:
                msg += "; its gate copies 0 where it fails"
            data = v.data(copies)
            yield self.diagnostic(v.load or v.op, msg, kernel=ctx.kernel, data=data)

    VALID = [
        Valid(
            "python",
            """
            from numba import cuda, float32

            TILE = 16


            # launch: block=(16,16,1)
            @cuda.jit
            def matmul_shared(A, B, C):  # expect-clean
                sA = cuda.shared.array((TILE, TILE), float32)
                sB = cuda.shared.array((TILE, TILE), float32)
                tx = cuda.threadIdx.x
                ty = cuda.threadIdx.y
                row = cuda.blockIdx.y * TILE + ty
                col = cuda.blockIdx.x * TILE + tx
                acc = float32(0.0)
                for k0 in range(0, A.shape[1], TILE):
                    cuda.syncthreads()
                    if k0 + tx < A.shape[1]:
                        sA[ty, tx] = A[row, k0 + tx]
                    if k0 + ty < A.shape[1]:
                        sB[ty, tx] = B[k0 + ty, col]
                    cuda.syncthreads()
                    for k in range(TILE):
                        acc += sA[ty, k] * sB[k, tx]
                C[row, col] = acc
            """,
            title="already staged (guarded copies: not a plain copy every trip, so no TL302 either)",
        ),
        Valid(
            "python",
            """
            from numba import cuda, float32


            # launch: block=(64,1,1)
            @cuda.jit
            def rotated_dot(x, w, y):  # expect-clean
                t = cuda.threadIdx.x
                acc = float32(0.0)
                for k in range(64):
                    acc += x[(k + t) % 64] * w[(k + t) % 64]
                y[cuda.blockIdx.x * 64 + t] = acc
            """,
            title="thread terms that mix with the loop's range (a rotation) form no box of their own",
        ),
    ]
    INVALID = [
        Invalid(
            "python",
            """
            from numba import cuda, float32


            # launch: block=(16,16,1)
            @cuda.jit
            def matmul_global(A, B, C):
                i = cuda.blockIdx.y * 16 + cuda.threadIdx.y
                j = cuda.blockIdx.x * 16 + cuda.threadIdx.x
                acc = float32(0.0)
                for k in range(A.shape[1]):
                    acc += A[i, k] * B[k, j]  # expect: TL301
                C[i, j] = acc
            """,
        ),
        Invalid(
            "cuda",
            """
            #include <mma.h>
            #include <cuda_fp16.h>
            using namespace nvcuda;

            extern "C" __global__ void __launch_bounds__(128)
            wmma_global(const __half* A, const __half* B, float* C, int N, int K)
            {
                const int warp = threadIdx.x / 32;
                const int row0 = blockIdx.y * 32 + (warp / 2) * 16;
                const int col0 = blockIdx.x * 32 + (warp % 2) * 16;
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
                wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
                wmma::fill_fragment(acc, 0.0f);
                for (int k = 0; k < K; k += 16) {
                    wmma::load_matrix_sync(fa, A + (size_t)row0 * K + k, K);  // expect: TL301
                    wmma::load_matrix_sync(fb, B + (size_t)k * N + col0, N);  // expect: TL301
                    wmma::mma_sync(acc, fa, fb, acc);
                }
                wmma::store_matrix_sync(C + (size_t)row0 * N + col0, acc, N, wmma::mem_row_major);
            }
            """,
            flags="--target sm_80 --block 128,1,1",
        ),
    ]
