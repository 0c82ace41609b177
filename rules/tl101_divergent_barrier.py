"""TL101 divergent-barrier

A barrier reachable by only some threads of a workgroup.

## What it does
Finds a workgroup barrier (`bar.sync`, `barrier.sync`, `__syncthreads()`,
`cuda.syncthreads()`), or a call to a function that holds one, under a branch
whose condition differs between the threads of a block, or after an early
`return` that only some threads take. The message names the branch, the
varying value at its root (with the chain of reasons as notes) and, when Z3
found one, two threads and the inputs that split them.

## Why is this bad?
A barrier waits for every thread of the block. Threads that skip it leave the
others waiting at a different barrier or past the end of the kernel: the block
hangs, or the barrier pairs up with the wrong one and orders nothing. CUDA
calls it undefined behaviour.

## Example
```python
@cuda.jit
def k(a):
    if cuda.threadIdx.x < 16:
        cuda.syncthreads()
```

Use instead:
```python
@cuda.jit
def k(a):
    if cuda.threadIdx.x < 16:
        a[cuda.threadIdx.x] = 0.0
    cuda.syncthreads()
```

## How to fix
Move the barrier out of the branch so every thread reaches it; guard only the
work. Replace an early `return` by a flag that skips the work.

## Fix safety
No fix: moving a barrier changes which memory operations it orders.

## References
- CUDA C++ Programming Guide, "Synchronization Functions" (`__syncthreads`).
- PTX ISA, `bar.sync`: "all threads in the CTA" must execute it.

## See also
docs/analyses.md#uniformity: what "uniform" means, and how divergence is found
and proved.
"""

from __future__ import annotations

from tolk_lint.diagnostics import Severity
from tolk_lint.registry import Invalid, Rule, RuleContext, Valid

from ._sync_messages import describe, diagnostic, op_text, where


class DivergentBarrier(Rule):
    code = "TL101"
    name = "divergent-barrier"
    analyses = ("tolk_lint.analysis.placements",)
    severity = Severity.ERROR

    VALID = [
        Valid("python", """
            from numba import cuda

            @cuda.jit
            def uniform_guard(a, n):  # expect-clean
                if n > 0:
                    cuda.syncthreads()
                if (cuda.threadIdx.x & 0) == 0:
                    cuda.syncthreads()
        """, flags="--block 128,1,1"),
        Valid("ptx", """
            .version 8.0
            .target sm_80
            .address_size 64
            .visible .entry uniform_param(.param .u32 n) // expect-clean
            {
                .reg .pred %p<2>;
                .reg .b32 %r<2>;
                ld.param.u32 %r1, [n];
                setp.gt.u32 %p1, %r1, 0;
                @%p1 bar.sync 0;
                ret;
            }
        """),
    ]
    INVALID = [
        Invalid("python", """
            from numba import cuda

            @cuda.jit
            def tid_guard(a):
                if cuda.threadIdx.x < 16:
                    cuda.syncthreads()  # expect: TL101
        """, flags="--block 128,1,1"),
        Invalid("python", """
            from numba import cuda

            @cuda.jit
            def early_return(a, n):
                i = cuda.grid(1)
                if i >= n:
                    return
                cuda.syncthreads()  # expect: TL101
                a[i] = 0.0
        """, flags="--block 128,1,1"),
        Invalid("ptx", """
            .version 8.0
            .target sm_80
            .address_size 64
            .visible .entry tid_guard()
            {
                .reg .pred %p<2>;
                .reg .b32 %r<2>;
                mov.u32 %r1, %tid.x;
                setp.lt.u32 %p1, %r1, 16;
                @%p1 bar.sync 0; // expect: TL101
                ret;
            }
        """, flags="--block 128,1,1"),
    ]

    def check(self, ctx: RuleContext):
        from tolk_lint.analysis.placements import placements

        for p in placements(ctx.kernel, ctx.module, ctx.settings):
            if p.code != self.code:
                continue
            term = p.branch.terminator if p.branch is not None else None
            cause = describe(p.cause)
            if p.exits_early is not None:
                msg = (f"barrier {op_text(p.op)} in kernel `{ctx.kernel.name}` is not reached by the threads that "
                       f"leave at {where(p.exits_early)}: the branch at {where(term)} on {cause} differs between threads")  # fmt: skip
            else:
                msg = (f"barrier {op_text(p.op)} in kernel `{ctx.kernel.name}` is reached only by some threads: "
                       f"it runs under the branch at {where(term)} on {cause}, which differs between threads")  # fmt: skip
            yield diagnostic(self, ctx, p, msg)
