"""TL302 synchronous-staging

A tile copied global -> registers -> shared at every trip of a loop, then a barrier: a two-stage cp.async pipeline fits.

## What it does
Finds a loop that, at every trip, copies a tile into a shared array by plain
copies (the value stored to shared memory is the value just loaded from
global memory, `sA[ty][tx] = A[...]`), then reaches a barrier and reads the
tile back. On a target that copies asynchronously (`cp.async`, sm_80 and
later) and where two stages of the loop's tiles fit the shared budget beside
the kernel's other shared memory, the copy of trip k + 1 can overlap the
math of trip k (depth 2). One diagnostic per staged buffer, at
the line of its copy; `data.depth` is 2 and `data.tile_bytes` the bytes of
the buffer a second stage doubles. Where the budget holds the depth below 2,
TL303 is reported instead; on a target without `cp.async` (sm_75) the
synchronous copy is already what the target allows, and nothing is reported.

## Why is this bad?
Every trip waits for its own tile: the loads go global -> registers, the
stores registers -> shared, then the whole workgroup stops at the barrier
before any math starts. The latency of global memory is paid in full at
every trip, and the copy ties up registers.

## Example
```cuda
for (int k0 = 0; k0 < K; k0 += TILE) {
    sA[ty][tx] = A[row * K + k0 + tx];
    sB[ty][tx] = B[(k0 + ty) * N + col];
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += sA[ty][k] * sB[k][tx];
    __syncthreads();
}
```

## How to fix
Double the shared arrays and pipeline the copies (Form A of
docs/analyses.md#cpasync-pipelines-forms-a-b-and-c, one barrier per trip):
before the loop copy tile 0 into slot 0 with `cp.async` and commit; at trip k
wait for the group (`cp.async.wait_group 0`), barrier, issue the copy of tile
k + 1 into slot (k + 1) mod 2 if there is a trip k + 1, commit (on every
trip), then compute on slot k mod 2; drain with a last wait after the loop. `tolk-lint fix --unsafe-fixes` (or the editor's "Pipeline this
loop with cp.async") writes exactly that, and `tolk-lint validate` checks the
result (docs/fixer.md).

## Fix safety
The fix is unsafe (`--unsafe-fixes`): it doubles the staged shared arrays,
which changes how many blocks fit on a multiprocessor (occupancy) and can
make the kernel slower, and it changes the kernel's shared-memory layout,
which host code that sizes dynamic shared memory or reads the arrays by
name may depend on. It never changes what the kernel computes: `cp.async`
moves the same bytes the load and store moved, a guarded copy becomes a
zero-fill copy (only where the guard stored zero), and the fix is offered
only when the rewritten text passes the static proof (no TL1xx/TL2xx error,
TL204 proved for every trip, TL302 gone). Where the rewrite would not be
exact or does not pass the proof, the diagnostic says why in a note and
carries no fix.

The proof is a second lint of the rewritten file, so `tolk-lint check`
works it out only when asked (`check --unsafe-fixes`, or `unsafe-fixes =
true` in the configuration); otherwise a note says that `fix
--unsafe-fixes` pipelines the loop where the rewrite is proved. `tolk-lint
fix --unsafe-fixes` always works it out; the language server works it out
for a kernel when the editor asks for the diagnostic's quick fixes. The
second lint analyses the rewritten kernel alone.

## See also
docs/fixer.md: the fix, `tolk-lint validate` and the launch spec;
docs/analyses.md#tile-copies-tl302-tl303: tile copies, depth, and the cp.async
pipeline forms.
"""

from tolk_lint.diagnostics import Fix, Related, Severity
from tolk_lint.registry import Invalid, Rule, Valid


UNSAFE_HINT = ("`tolk-lint fix --unsafe-fixes` pipelines this loop with cp.async where it proves the rewrite "
               "(`check --unsafe-fixes` shows whether it can)")


def _bytes(n: int) -> str:
    return f"{n // 1024} KiB" if n >= 1024 and n % 1024 == 0 else f"{n} B"


class SynchronousStaging(Rule):
    code = "TL302"
    name = "synchronous-staging"
    analyses = ("tolk_lint.analysis.stage",)
    severity = Severity.INFO

    fixable = True
    fixes_when_asked = True

    def check(self, ctx):
        if not ctx.target.async_copy:
            return
        staged = [tc for tc in ctx.staging().copies if tc.reason is None and tc.depth == 2]
        outcomes = self._fixes(ctx, staged)
        for tc in staged:
            loop = f" of the loop at line {tc.loop_line}" if tc.loop_line else ""
            msg = (
                f"`{tc.buffer}` ({_bytes(tc.tile_bytes)}) is copied global -> registers -> shared at every trip"
                f"{loop}, then a barrier: {tc.depth_why}, so a {tc.depth}-stage cp.async pipeline can overlap "
                f"the copy of the next tile with this trip's math"
            )
            outcome = outcomes.get(id(tc.loop))
            fix = outcome if isinstance(outcome, Fix) else None
            related = [] if fix or outcome is None else [Related(f"no fix: {outcome.reason}")]
            data = tc.data()
            if ctx.settings.unsafe_fixes:
                data["fixable"] = fix is not None
            else:  # not worked out: the proof is a second lint of the file
                related.append(Related(UNSAFE_HINT))
            if outcome is not None and fix is None:
                data["not_fixable"] = outcome.reason
            for line in tc.lines:
                yield self.diagnostic(tc.at_line(line), msg, kernel=ctx.kernel, data=data, fix=fix,
                                      related=list(related))  # fmt: skip

    @staticmethod
    def _fixes(ctx, staged: list) -> dict:
        """One fix (or the reason there is none) per loop: its arrays are pipelined together."""
        if ctx.relint is None or not staged or not ctx.settings.unsafe_fixes:
            return {}
        from tolk_lint.fix.pipeline import pipeline_fix

        loops: dict[int, list] = {}
        for tc in staged:
            loops.setdefault(id(tc.loop), []).append(tc)
        return {key: pipeline_fix(ctx, group) for key, group in loops.items()}

    VALID = [
        Valid(
            "python",
            """
            from numba import cuda, float32


            # launch: block=(256,1,1)
            @cuda.jit
            def scaled_neighbours(x, y, gain, n):  # expect-clean
                s = cuda.shared.array(256, float32)
                t = cuda.threadIdx.x
                for i0 in range(0, n, 256):
                    s[t] = gain * x[i0 + t]
                    cuda.syncthreads()
                    y[i0 + t] = s[t] + s[(t + 1) % 256]
                    cuda.syncthreads()
            """,
            title="the value stored is computed (gain * x), not a plain copy",
        ),
        Valid(
            "python",
            """
            from numba import cuda, float32

            TILE = 16


            # launch: block=(16,16,1)
            @cuda.jit
            def sgemm_tiled16(A, B, C):  # expect-clean
                sA = cuda.shared.array((TILE, TILE), float32)
                sB = cuda.shared.array((TILE, TILE), float32)
                tx = cuda.threadIdx.x
                ty = cuda.threadIdx.y
                row = cuda.blockIdx.y * TILE + ty
                col = cuda.blockIdx.x * TILE + tx
                acc = float32(0.0)
                for k0 in range(0, A.shape[1], TILE):
                    sA[ty, tx] = A[row, k0 + tx]
                    sB[ty, tx] = B[k0 + ty, col]
                    cuda.syncthreads()
                    for k in range(TILE):
                        acc += sA[ty, k] * sB[k, tx]
                    cuda.syncthreads()
                C[row, col] = acc
            """,
            flags="--target sm_75",
            title="sm_75 has no cp.async: the synchronous copy is what the target allows",
        ),
    ]
    INVALID = [
        Invalid(
            "python",
            """
            from numba import cuda, float32

            TILE = 16


            # launch: block=(16,16,1)
            @cuda.jit
            def sgemm_tiled16(A, B, C):
                sA = cuda.shared.array((TILE, TILE), float32)
                sB = cuda.shared.array((TILE, TILE), float32)
                tx = cuda.threadIdx.x
                ty = cuda.threadIdx.y
                row = cuda.blockIdx.y * TILE + ty
                col = cuda.blockIdx.x * TILE + tx
                acc = float32(0.0)
                for k0 in range(0, A.shape[1], TILE):
                    sA[ty, tx] = A[row, k0 + tx]  # expect: TL302
                    sB[ty, tx] = B[k0 + ty, col]  # expect: TL302
                    cuda.syncthreads()
                    for k in range(TILE):
                        acc += sA[ty, k] * sB[k, tx]
                    cuda.syncthreads()
                C[row, col] = acc
            """,
        ),
        Invalid(
            "cuda",
            """
            #define TILE 16

            extern "C" __global__ void __launch_bounds__(256)
            sgemm_tiled16(const float* A, const float* B, float* C, int N, int K)
            {
                __shared__ float sA[TILE][TILE];
                __shared__ float sB[TILE][TILE];
                const int tx = threadIdx.x, ty = threadIdx.y;
                const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
                float acc = 0.0f;
                for (int k0 = 0; k0 < K; k0 += TILE) {
                    sA[ty][tx] = A[row * K + k0 + tx];  // expect: TL302
                    sB[ty][tx] = B[(k0 + ty) * N + col];  // expect: TL302
                    __syncthreads();
                    for (int k = 0; k < TILE; ++k)
                        acc += sA[ty][k] * sB[k][tx];
                    __syncthreads();
                }
                C[row * N + col] = acc;
            }
            """,
            flags="--target sm_80 --block 16,16,1",
        ),
    ]
