"""TL205 implicit-launch-contract

A kernel that is race-free and in bounds only for some block shapes, with no launch shape given: the contract it needs is reported, and the kernel is linted under it.

## What it does
When nothing gives a kernel's launch shape (no `--block`, no
`[tool.tolk-lint.launch]` entry, no call site in the module, no host launch
in the CUDA source the PTX came from, no `.reqntid`, no
`tolk: launch block=(X,Y,Z)` comment), the memory analyses assume any block
within `.maxntid` (else 1024 threads). A tiled kernel indexed by
`threadIdx` is then out of bounds for a block of 1x1024x1, a block it was
never written for. Instead of reporting those TL201/TL202 errors, the tool
infers the kernel's *launch contract*: the block shapes under which its
shared and local accesses are race-free and in bounds, when a natural one
exists:

- each dimension bounded: `blockDim.x <= 16 and blockDim.y <= 16`;
- the threads bounded: `blockDim.x * blockDim.y <= 256`;
- one-dimensional kernels: `blockDim.x <= 256`, `blockDim.x is a power of
  two <= 1024`, or an exact size, `blockDim.x == 256`.

Each bound is found by asking Z3 the findings' own questions again with
the block bounded (a binary search over natural sizes: powers of two,
multiples of 32 and the kernel's array dimensions), and is taken only when
it is the exact limit: a kernel that goes out of bounds at 32 threads gets
`blockDim.x <= 31`, which is no natural contract, and keeps its errors. A
contract must admit a block of at least 32 threads. The kernel is then
linted again, every rule, with the contract as the launch constraint: that
lint is the proof, so **a kernel reported clean under a contract is clean
for every block that satisfies it**. A finding that holds for every block
(it holds with two threads already, as a missing barrier does) is no
matter of shape: it stays an error, reported under the contract. So does
a race of the block a one-dimensional kernel's shared array is sized for:
when its out-of-bounds findings alone give `blockDim.x <= TPB` with `TPB`
one of its array sizes (`sm = cuda.shared.array(TPB)` indexed by the
thread), a race that would need a smaller contract (a tree reduction
without its first barrier is race-free only up to `TPB / 2` threads) is a
bug of that block, and the contract stays `blockDim.x <= TPB`. A kernel
with no natural contract keeps the errors of the lint without a shape,
and so does one whose search runs out of the time budget: each of
those errors then says so in a note.

This diagnostic, one per kernel at its header, names the contract, the
accesses that need it (their lines, saying which file's: `lines 25, 27 of
k.cu` for PTX compiled with `-lineinfo`, `PTX lines ...` without; each
access as a note with a small block outside the contract that breaks it,
the first one past a bound where that one does, such as `129x1x1` for
`blockDim.x <= 128`) and how to declare it. The messages of the lint under the contract say
they assume it. A kernel launched with `kernel.forall(n)` is not given a
contract: Numba picks its block size (any one-dimensional size up to 1024
threads), so it is linted under all of them. TL205 is inferred only while
it is selected: with `--ignore TL205` the findings without a shape are
reported as errors.

## Why is this bad?
A kernel whose correctness depends on its launch, with nothing in the code
saying which launch, breaks the day someone launches it with a block that
seemed reasonable: 32x32 instead of 16x16, 512 threads instead of 256. The
contract is real, and it should be written down where the tool (and the
next reader) can see it.

## Example
```python
TPB = 16

@cuda.jit
def matmul(A, B, C):  # blockDim.x <= 16 and blockDim.y <= 16
    sA = cuda.shared.array((TPB, TPB), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    sA[ty, tx] = A[ty, tx]
    ...
```

Use instead (any one of):
```python
# tolk: launch block=(16,16,1)
@cuda.jit
def matmul(A, B, C):
    ...

matmul[grid, (TPB, TPB)](a, b, c)   # a call site in the same module
```

## How to fix
Say how the kernel is launched: a call site in the same module
(a call `kernel[grid, (16, 16)]`, or a host launch `kernel<<<grid,
dim3(16, 16)>>>` in the CUDA source), a `tolk: launch block=(16,16,1)`
comment above the kernel (Python, CUDA C or PTX), an entry
`kernel = [16, 16, 1]` in `[tool.tolk-lint.launch]`, or `--block`. In CUDA C,
`__launch_bounds__(N)` (PTX `.maxntid`) bounds the threads per block: it
declares a one-dimensional contract `blockDim.x <= N` completely (and so a
kernel indexed by `threadIdx.x` alone that is wrong for some block within
it gets its TL201/TL202, not TL205). If the
kernel is meant for every block, guard its accesses (`if tid < N:`) and
size its arrays from the block.

## Fix safety
No fix: the launch is the caller's to say.

## References
- CUDA C++ Programming Guide, "Thread Hierarchy" and "Launch Bounds".
- Numba documentation, "Kernel invocation" (`kernel[griddim, blockdim]`, `forall`).

## See also
docs/launch-shapes.md: where launch shapes come from, and how the contract
is inferred.
"""

from __future__ import annotations

from tolk_lint.diagnostics import Severity
from tolk_lint.registry import Invalid, Rule, Valid


class ImplicitLaunchContract(Rule):
    code = "TL205"
    name = "implicit-launch-contract"
    severity = Severity.WARNING
    engine_rule = True  # reported by the engine's launch handling (tolk_lint.launch.inference)

    VALID = [
        Valid("python", """
            from numba import cuda, float32

            TPB = 16

            @cuda.jit
            def mirror_rows(a, out):  # expect-clean
                tile = cuda.shared.array((TPB, TPB), float32)
                tx = cuda.threadIdx.x
                ty = cuda.threadIdx.y
                tile[ty, tx] = a[ty, tx]
                cuda.syncthreads()
                out[ty, tx] = tile[ty, TPB - 1 - tx]

            def run(a, out):
                threadsperblock = (TPB, TPB)
                mirror_rows[(1, 1), threadsperblock](a, out)
        """, title="the call site gives the shape"),
        Valid("python", """
            from numba import cuda, float32

            @cuda.jit
            def guarded(x, y):  # expect-clean
                s = cuda.shared.array(128, float32)
                t = cuda.threadIdx.x
                if t < 128:
                    s[t] = x[t]
                cuda.syncthreads()
                if t < 128:
                    y[t] = s[127 - t]
        """, title="right for every block: no contract"),
    ]
    INVALID = [
        Invalid("python", """
            from numba import cuda, float32

            TPB = 16

            @cuda.jit
            def mirror_rows(a, out):  # expect: TL205 "blockDim.x <= 16 and blockDim.y <= 16"
                tile = cuda.shared.array((TPB, TPB), float32)
                tx = cuda.threadIdx.x
                ty = cuda.threadIdx.y
                tile[ty, tx] = a[ty, tx]
                cuda.syncthreads()
                out[ty, tx] = tile[ty, TPB - 1 - tx]
        """, title="no launch shape: the contract is inferred"),
        Invalid("python", """
            from numba import cuda, float32

            @cuda.jit
            def reverse(x, y):  # expect: TL205 "blockDim.x <= 128"
                s = cuda.shared.array(128, float32)
                t = cuda.threadIdx.x
                s[t] = x[t]
                cuda.syncthreads()
                y[t] = s[127 - t]
        """),
        Invalid("ptx", """
            .version 8.0
            .target sm_80
            .address_size 64
            .visible .entry own_word() // expect: TL205 "blockDim.x <= 128"
            {
                .shared .align 4 .b8 s[512];
                .reg .b32 %r<5>;
                mov.u32 %r1, %tid.x;
                shl.b32 %r2, %r1, 2;
                mov.u32 %r3, s;
                add.s32 %r4, %r3, %r2;
                st.shared.u32 [%r4], %r1;
                ret;
            }
        """),
    ]
