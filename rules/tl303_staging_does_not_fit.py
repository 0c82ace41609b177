"""TL303 staging-does-not-fit

The staged tiles exceed the shared budget: depth falls below 2, so the copies cannot be pipelined.

## What it does
Reports, on a target that copies asynchronously (`cp.async`, sm_80 and
later), a loop that copies its tiles global -> registers -> shared at every
trip (as TL302 does), or an operand TL301 would stage, when two stages of
the tiles do not fit the shared budget beside the kernel's other shared
memory: the staging depth is then 1 (one stage fits) or 0 (none does).
The budget is the 48 KiB of static shared memory a block may declare (ptxas
rejects more than 0xC000 bytes of `.shared`): a fix that doubles the staged
arrays must stay within it. When the target's opt-in maximum (dynamic shared
memory raised with `cudaFuncSetAttribute(..., MaxDynamicSharedMemorySize,
...)`) would hold two stages, the message says so. TL303 replaces TL302 for
that loop; one diagnostic per staged buffer, at the line of its copy, with
`data.depth` and `data.tile_bytes`.

## Why is this bad?
Nothing is wrong with the kernel as it is; but the pipeline TL302 would
suggest does not fit, so the copies of the next tile cannot overlap this
trip's math with these tile sizes.

## Example
```cuda
__shared__ float sA[8][256];    //  8 KiB
__shared__ float sB[256][32];   // 32 KiB: one stage is 40 KiB, two are 80 KiB
for (int k0 = 0; k0 < K; k0 += 256) { /* copy, barrier, math, barrier */ }
```

## How to fix
Shrink the tile along K (two stages of 128-deep tiles take 40 KiB), or move
the tiles to dynamic shared memory and opt in to the larger limit on the
host, then pipeline as TL302 describes.

## Fix safety
No fix.

## Options
`shared-budget = "optin"` measures against the opt-in maximum instead.

## See also
docs/analyses.md#tile-copies-tl302-tl303: tile copies and the shared budget.
"""

from tolk_lint.diagnostics import Severity
from tolk_lint.registry import Invalid, Rule, Valid


def _bytes(n: int) -> str:
    return f"{n // 1024} KiB" if n >= 1024 and n % 1024 == 0 else f"{n} B"


class StagingDoesNotFit(Rule):
    code = "TL303"
    name = "staging-does-not-fit"
    analyses = ("tolk_lint.analysis.stage",)
    severity = Severity.INFO

    def check(self, ctx):
        from tolk_lint.analysis.stage import group_by_line

        target = ctx.target
        if not target.async_copy:
            return
        facts = ctx.staging()
        optin_note = (
            f"; the opt-in limit of {_bytes(target.shared_optin)} (dynamic shared memory raised with "
            f"cudaFuncSetAttribute on the host) would allow depth "
        )
        for tc in facts.copies:
            if tc.reason is not None or not tc.budget_limited:
                continue
            msg = (
                f"`{tc.buffer}` ({_bytes(tc.tile_bytes)}) is copied global -> registers -> shared at every trip, "
                f"but {tc.depth_why}: staging falls to depth {tc.depth} and the copies cannot be pipelined"
            )
            if tc.optin_depth > tc.depth:
                msg += optin_note + str(tc.optin_depth)
            for line in tc.lines:
                yield self.diagnostic(tc.at_line(line), msg, kernel=ctx.kernel, data=tc.data())
        for v, copies in group_by_line(facts.operands):
            # an operand TL301 would stage, for which not even one stage fits
            if v.box is None or v.depth != 0 or not v.budget_limited or not v.box.dense:
                continue
            msg = (
                f"`{v.operand}` of `{v.op_desc}` could be staged ({v.tile_bytes} B a trip), but {v.depth_why}: "
                f"depth 0"
            )
            if v.optin_depth > v.depth:
                msg += optin_note + str(v.optin_depth)
            yield self.diagnostic(v.load or v.op, msg, kernel=ctx.kernel, data=v.data(copies))

    VALID = [
        Valid(
            "python",
            """
            from numba import cuda, float32

            BM = 8
            BN = 32
            BK = 128


            # launch: block=(32,8,1)
            @cuda.jit
            def sgemm_k128(A, B, C):  # expect-clean
                sA = cuda.shared.array((BM, BK), float32)
                sB = cuda.shared.array((BK, BN), float32)
                tx = cuda.threadIdx.x
                ty = cuda.threadIdx.y
                t = ty * BN + tx
                row0 = cuda.blockIdx.y * BM
                col0 = cuda.blockIdx.x * BN
                acc = float32(0.0)
                for k0 in range(0, A.shape[1], BK):
                    for c in range(BM):
                        if t < BK:
                            sA[c, t] = A[row0 + c, k0 + t]
                    for c in range(BK // 8):
                        sB[c * 8 + ty, tx] = B[k0 + c * 8 + ty, col0 + tx]
                    cuda.syncthreads()
                    for k in range(BK):
                        acc += sA[ty, k] * sB[k, tx]
                    cuda.syncthreads()
                C[row0 + ty, col0 + tx] = acc
            """,
            flags="--select TL303",
            title="K tiles of 128: two stages (2 x 20 KiB) fit, so this is TL302's finding, not TL303's",
        ),
    ]
    INVALID = [
        Invalid(
            "cuda",
            """
            #define BM 8
            #define BN 32
            #define BK 256

            extern "C" __global__ void __launch_bounds__(256)
            sgemm_deep_k(const float* A, const float* B, float* C, int N, int K)
            {
                __shared__ float sA[BM][BK];
                __shared__ float sB[BK][BN];
                const int tx = threadIdx.x, ty = threadIdx.y, t = ty * BN + tx;
                const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
                float acc = 0.0f;
                for (int k0 = 0; k0 < K; k0 += BK) {
                    for (int c = 0; c < BM; ++c)
                        sA[c][t] = A[(size_t)(row0 + c) * K + k0 + t];  // expect: TL303
                    for (int c = 0; c < BK / 8; ++c)
                        sB[c * 8 + ty][tx] = B[(size_t)(k0 + c * 8 + ty) * N + col0 + tx];  // expect: TL303
                    __syncthreads();
                    for (int k = 0; k < BK; ++k)
                        acc += sA[ty][k] * sB[k][tx];
                    __syncthreads();
                }
                C[(size_t)(row0 + ty) * N + col0 + tx] = acc;
            }
            """,
            flags="--target sm_80 --block 32,8,1",
        ),
        Invalid(
            "python",
            """
            from numba import cuda, float32

            BM = 8
            BN = 32
            BK = 256


            # launch: block=(32,8,1)
            @cuda.jit
            def sgemm_deep_k(A, B, C):
                sA = cuda.shared.array((BM, BK), float32)
                sB = cuda.shared.array((BK, BN), float32)
                tx = cuda.threadIdx.x
                ty = cuda.threadIdx.y
                t = ty * BN + tx
                row0 = cuda.blockIdx.y * BM
                col0 = cuda.blockIdx.x * BN
                acc = float32(0.0)
                for k0 in range(0, A.shape[1], BK):
                    for c in range(BM):
                        sA[c, t] = A[row0 + c, k0 + t]  # expect: TL303
                    for c in range(BK // 8):
                        sB[c * 8 + ty, tx] = B[k0 + c * 8 + ty, col0 + tx]  # expect: TL303
                    cuda.syncthreads()
                    for k in range(BK):
                        acc += sA[ty, k] * sB[k, tx]
                    cuda.syncthreads()
                C[row0 + ty, col0 + tx] = acc
            """,
        ),
    ]
