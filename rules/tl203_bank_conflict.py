"""TL203 bank-conflict

A warp's shared-memory access that serialises on banks: the number of ways is reported.

## What it does
Shared memory is split into 32 banks of 4-byte words; in one request a bank
serves one word (any number of lanes reading that same word share it). For
each shared load, store, atomic or `cp.async` of 16 bytes or less, the
addresses of the 32 lanes of every warp of the launch are evaluated lane by
lane (thread indices from the launch shape, everything the warp shares left
symbolic: block indices, parameters, the loop trip). When every lane's
address is one shared base plus a lane-specific constant, the count is exact:
*ways* is the largest number of distinct words one bank must serve (for
8- and 16-byte accesses, per half- or quarter-warp phase). A diagnostic is
reported when it is more than 1, with `ways` in its data, the lanes that
collide, and the padding that removes the conflict. Accesses whose lane
addresses cannot be told apart this way (data-dependent indices) are not
judged.

## Why is this bad?
An n-way conflict splits the warp's request into n serial ones: a column
read of an unpadded 32x32 float tile is 32 times slower than a row read, and
often dominates a transpose or a reduction.

## Example
```python
tile = cuda.shared.array((32, 32), float32)
out[i] = tile[cuda.threadIdx.x, cuda.threadIdx.y]   # a column: 32-way
```

Use instead:
```python
tile = cuda.shared.array((32, 33), float32)         # one padding word per row
out[i] = tile[cuda.threadIdx.x, cuda.threadIdx.y]   # conflict-free
```

## How to fix
Pad the rows of the array by one word (so consecutive rows start in
consecutive banks), or swizzle the index (`col ^ row`), or change which
thread reads which element.

## Fix safety
No fix: padding changes the array's layout for every access to it.

## References
- CUDA C++ Best Practices Guide, "Shared Memory and Memory Banks".
- CUDA C++ Programming Guide, compute capability 5.x+ "Shared Memory".

## See also
docs/analyses.md#bank-ways-tl203: how ways are counted.
"""

from __future__ import annotations

from tolk_lint.diagnostics import Severity
from tolk_lint.registry import Invalid, Rule, RuleContext, Valid


class BankConflict(Rule):
    code = "TL203"
    name = "bank-conflict"
    analyses = ("tolk_lint.analysis.memory",)
    severity = Severity.INFO

    VALID = [
        Valid("python", """
            from numba import cuda, float32

            @cuda.jit
            def transpose_padded(x, y):  # expect-clean
                tile = cuda.shared.array((32, 33), float32)
                tx = cuda.threadIdx.x
                ty = cuda.threadIdx.y
                tile[ty, tx] = x[ty * 32 + tx]
                cuda.syncthreads()
                y[ty * 32 + tx] = tile[tx, ty]
        """, flags="--block 32,32,1"),
        Valid("python", """
            from numba import cuda, float32

            @cuda.jit
            def broadcast(x, y):  # expect-clean
                s = cuda.shared.array(32, float32)
                t = cuda.threadIdx.x
                if t == 0:
                    s[0] = x[0]
                cuda.syncthreads()
                y[t] = s[0]
        """, flags="--block 64,1,1"),
    ]
    INVALID = [
        Invalid("python", """
            from numba import cuda, float32

            @cuda.jit
            def transpose_unpadded(x, y):
                tile = cuda.shared.array((32, 32), float32)
                tx = cuda.threadIdx.x
                ty = cuda.threadIdx.y
                tile[ty, tx] = x[ty * 32 + tx]
                cuda.syncthreads()
                y[ty * 32 + tx] = tile[tx, ty]  # expect: TL203
        """, flags="--block 32,32,1"),
        Invalid("ptx", """
            .version 8.0
            .target sm_80
            .address_size 64
            .visible .entry stride2()
            {
                .shared .align 4 .b8 s[256];
                .reg .b32 %r<5>;
                mov.u32 %r1, %tid.x;
                shl.b32 %r2, %r1, 3;
                mov.u32 %r3, s;
                add.s32 %r4, %r3, %r2;
                st.shared.u32 [%r4], %r1; // expect: TL203
                ret;
            }
        """, flags="--block 32,1,1"),
    ]

    def check(self, ctx: RuleContext):
        from tolk_lint.analysis.memory import access_text, pretty_buffer, source_key

        facts = ctx.memory()
        best: dict = {}
        for c in facts.bank_conflicts():
            ins = c.access.instr
            key = source_key(ins)
            if key not in best or c.ways > best[key].ways:
                best[key] = c
        for c in best.values():
            acc = c.access
            name = pretty_buffer(acc.root)
            lanes = c.lanes
            lane_txt = ", ".join(str(x) for x in lanes[:4]) + (", ..." if len(lanes) > 4 else "")
            stride = f" (lanes are {c.stride_bytes} bytes apart)" if c.stride_bytes else ""
            msg = (f"{c.ways}-way shared-memory bank conflict: {access_text(acc)} on `{name}` makes lanes "
                   f"{lane_txt} of warp {c.warp} hit bank {c.bank} at {c.ways} different words{stride}, so the "
                   f"warp's request is split into {c.ways}; {c.suggestion}")  # fmt: skip
            if c.assumed:
                msg += f" ({c.assumed})"
            data = {"ways": c.ways, "buffer": name, "bank": c.bank, "warp": c.warp, "lanes": lanes}
            if c.stride_bytes is not None:
                data["stride_bytes"] = c.stride_bytes
            yield self.diagnostic(acc.instr, msg, kernel=ctx.kernel, data=data)
