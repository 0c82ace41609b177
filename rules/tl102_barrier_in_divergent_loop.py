"""TL102 barrier-in-divergent-loop

A barrier or tensor-core op in a loop whose trip count may differ between threads.

## What it does
Finds a workgroup barrier, a call to a function holding one, or a warp-wide
tensor-core op (`mma.sync`, `wmma.*.sync`, `ldmatrix`; Hopper's `wgmma.*`,
which the four warps of a warpgroup run together), inside a loop whose
number of trips may differ between the threads that must run it together: a
bound computed from the thread index (`for (i = tid; i < n; i += blockDim.x)`),
an exit test on per-thread data (`while (delta > tol)`), or a `break` on a
varying condition. Loops whose bound names the thread index but not its value
(`i = tid; i < n + tid`) are proved uniform by Z3 and not reported.

## Why is this bad?
Threads that leave the loop early stop arriving at the barrier while the
others still wait there: the block hangs, or barriers pair up across
different trips. A tensor-core op computes with the registers of every lane
of the warp; lanes that have left the loop leave it undefined.

## Example
```python
@cuda.jit
def k(a, n):
    i = cuda.threadIdx.x
    while i < n:
        cuda.syncthreads()
        i += cuda.blockDim.x
```

Use instead: loop a uniform number of trips and guard the work:
```python
@cuda.jit
def k(a, n):
    for base in range(0, n, cuda.blockDim.x):
        i = base + cuda.threadIdx.x
        if i < n:
            a[i] += 1.0
        cuda.syncthreads()
```

## How to fix
Make the trip count the same in every thread (loop over tiles, not elements)
and guard the per-thread work inside.

## Fix safety
No fix.

## See also
docs/analyses.md#uniformity: temporal divergence, and when Z3 proves a loop's
trips the same.
"""

from __future__ import annotations

from tolk_lint.diagnostics import Severity
from tolk_lint.registry import Invalid, Rule, RuleContext, Valid

from ._sync_messages import describe, diagnostic, op_text, where


class BarrierInDivergentLoop(Rule):
    code = "TL102"
    name = "barrier-in-divergent-loop"
    analyses = ("tolk_lint.analysis.placements",)
    severity = Severity.ERROR

    VALID = [
        Valid("python", """
            from numba import cuda

            @cuda.jit
            def shifted(a, n):  # expect-clean
                t = cuda.threadIdx.x
                for i in range(t, n + t):
                    cuda.syncthreads()
        """, flags="--block 128,1,1"),
    ]
    INVALID = [
        Invalid("python", """
            from numba import cuda

            @cuda.jit
            def block_stride(a, n):
                i = cuda.threadIdx.x
                while i < n:
                    cuda.syncthreads()  # expect: TL102
                    i += cuda.blockDim.x
        """, flags="--block 128,1,1"),
    ]

    def check(self, ctx: RuleContext):
        from tolk_lint.analysis.placements import placements

        for p in placements(ctx.kernel, ctx.module, ctx.settings):
            if p.code != self.code:
                continue
            header = p.loop.header if p.loop is not None else None
            first = next((i for i in header.instrs if i.span is not None), None) if header else None
            what = "barrier" if p.level == "workgroup" else "tensor-core op"
            who = {"workgroup": "threads", "warpgroup": "the threads of a warpgroup"}.get(p.level, "lanes of a warp")
            cause = f" (its exit depends on {describe(p.cause)})" if p.cause is not None else ""
            msg = (f"{what} {op_text(p.op)} in kernel `{ctx.kernel.name}` is in the loop at {where(first)} whose "
                   f"trip count may differ between {who}{cause}")  # fmt: skip
            yield diagnostic(self, ctx, p, msg)
