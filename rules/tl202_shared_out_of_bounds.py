"""TL202 shared-out-of-bounds

A shared- or local-memory index that can leave its buffer for some thread of the launch.

## What it does
Checks every access to a shared array (`__shared__`, `.shared`,
`cuda.shared.array`) or a local array (`.local`, `cuda.local.array`) whose
size is known: Z3 looks for a thread of the block (and loop trips and
inputs) for which the index, or the byte offset from the array's start plus
the access's width, falls outside the array. A Python index is checked
against each dimension (Numba wraps an index from `-n` to `-1` around, so
only indices below `-n` or from `n` up are out of bounds). The diagnostic
prints the thread, the offending index or offset and the inputs. When the
launch shape is not known (no `--block`, no configuration, no call site,
`.reqntid`, host launch or `tolk: launch` comment: see TL205), the check
assumes any block allowed by `.maxntid` (or of at most 1024 threads) and
says what it assumed; an access that is in bounds only for some blocks then
gives the kernel a launch contract (TL205) instead, when a natural one
exists. One finding per source line: the copies nvcc unrolls from one line
are reported (and searched) once, at the first. An index computed from a
value read from memory (a slot a prefix sum computed in shared memory, an
index array's entry, a histogram's sample) is a warning: the solver takes
that value as any value, and the algorithm or the data that keep it in
range are not followed. So is an access that leaves its array only when a
loop bounded by a count read from shared memory runs more trips than a count
of the block's threads or of a shared array's elements allows, and one in
a kernel made by a factory (a Numba kernel nested in a function) that holds
only for some values of the factory's argument, when no call in the file
gives that argument. A PTX access
whose scaled index (`x << 2`, `x * 4`) overflows its 32-bit register is out
of bounds, though the wrapped offset may look small. An index the solver
gave up on (its resource limit) is reported as a warning that says so.

## Why is this bad?
Shared memory is not bounds-checked: a store past the end of one array
silently overwrites the next array (or another block's data on some GPUs),
and a load past it reads garbage. Out-of-range local accesses corrupt the
thread's stack. The kernel may work for the block size it was written for
and break when launched with more threads.

## Example
```python
@cuda.jit
def reverse(x, y):
    s = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x          # launched with 64 threads
    s[t] = x[t]                   # threads 32..63 write past the end
```

Use instead:
```python
@cuda.jit
def reverse(x, y):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
```

## How to fix
Size the array for the block it is launched with, guard the access with the
array's size, or launch with the block the kernel was written for (and say
so with `--block`, `[tool.tolk-lint.launch]`, `.reqntid`, or a
`tolk: launch block=(...)` comment above a Numba kernel).

## Fix safety
No fix: the right size depends on the launch.

## References
- CUDA C++ Programming Guide, "Shared Memory".

## See also
docs/analyses.md#in-bounds-tl202: what "in bounds" means, and
docs/launch-shapes.md for what is assumed without a launch shape.
"""

from __future__ import annotations

import dataclasses

from tolk_lint.diagnostics import Related, Severity
from tolk_lint.registry import Invalid, Rule, RuleContext, Valid


class SharedOutOfBounds(Rule):
    code = "TL202"
    name = "shared-out-of-bounds"
    analyses = ("tolk_lint.analysis.memory",)
    severity = Severity.ERROR

    VALID = [
        Valid("python", """
            from numba import cuda, float32

            @cuda.jit
            def reverse_guarded(x, y):  # expect-clean
                s = cuda.shared.array(32, float32)
                t = cuda.threadIdx.x
                if t < 32:
                    s[t] = x[t]
                cuda.syncthreads()
                if t < 32:
                    y[t] = s[31 - t]
        """, flags="--block 64,1,1"),
        Valid("ptx", """
            .version 8.0
            .target sm_80
            .address_size 64
            .visible .entry in_bounds() // expect-clean
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
        """, flags="--block 128,1,1"),
    ]
    INVALID = [
        Invalid("python", """
            from numba import cuda, float32

            @cuda.jit
            def reverse_oob(x, y):
                s = cuda.shared.array(32, float32)
                t = cuda.threadIdx.x
                s[t] = x[t]  # expect: TL202
                cuda.syncthreads()
                if t < 32:
                    y[t] = s[31 - t]
        """, flags="--block 64,1,1"),
        Invalid("python", """
            from numba import cuda, float32

            @cuda.jit
            def tile_rows(x):
                tile = cuda.shared.array((16, 16), float32)
                tx = cuda.threadIdx.x
                ty = cuda.threadIdx.y
                tile[ty, tx] = x[ty * 16 + tx]  # expect: TL202
        """, flags="--block 16,32,1"),
        Invalid("ptx", """
            .version 8.0
            .target sm_80
            .address_size 64
            .visible .entry past_end()
            .reqntid 256, 1, 1
            {
                .shared .align 4 .b8 s[512];
                .reg .b32 %r<5>;
                mov.u32 %r1, %tid.x;
                shl.b32 %r2, %r1, 2;
                mov.u32 %r3, s;
                add.s32 %r4, %r3, %r2;
                st.shared.u32 [%r4], %r1; // expect: TL202
                ret;
            }
        """),
    ]

    def check(self, ctx: RuleContext):
        from tolk_lint.analysis.memory import access_text, pretty_buffer, source_key
        from tolk_lint.analysis.memory.factory_values import needs_factory_value
        from tolk_lint.analysis.memory.grid_size import needs_huge_grid
        from tolk_lint.analysis.memory.loaded_counts import needs_large_count
        from tolk_lint.analysis.memory.phrases import (
            factory_value_note,
            huge_grid_note,
            large_count_note,
            shared_data_note,
        )
        from tolk_lint.launch.choose import shared_declaration

        facts = ctx.memory()
        seen: set = set()
        for f in facts.out_of_bounds():
            acc = f.access
            ins = acc.instr
            key = source_key(ins)
            if key in seen:
                continue
            seen.add(key)
            buf = acc.buffer
            size = f"{buf.bytes} bytes" if buf is not None and buf.bytes is not None else "its size"
            if buf is not None and ctx.kernel.language == "python":
                size = "shape (" + ", ".join(str(d) for d in buf.shape) + (",)" if len(buf.shape) == 1 else ")")
            name = pretty_buffer(acc.root)
            where = "shared" if acc.space == "shared" else "local"
            verb = "writes" if acc.writes and not acc.reads else "reads" if not acc.writes else "updates"
            if f.solver == "unknown":
                msg = (f"{access_text(acc)} {verb} the {where} array `{name}` ({size}) at an index the solver could "
                       "neither prove in bounds nor show out of bounds (it gave up), so it is reported as a "
                       "warning: the access is not known to stay in bounds")  # fmt: skip
            else:
                msg = (f"{access_text(acc)} {verb} the {where} array `{name}` ({size}) out of bounds: "
                       f"{f.detail}")  # fmt: skip
                if f.witness and f.witness.get("description"):
                    msg += f" for {f.witness['description']}"
            if f.assumed:
                msg += f" (assuming {f.assumed}; pass --block to give the exact shape)"
            related = []
            if buf is not None and (buf.span is not None or buf.origin is not None):
                declared = shared_declaration(ctx.module, ctx.kernel, name) if acc.space == "shared" else None
                related.append(Related(f"`{name}` is declared here", buf.span, declared or buf.origin))
            data = {"buffer": name, "space": acc.space, "solver": f.solver}
            if f.assumed:
                data["assumed"] = f.assumed
            load = facts.shared_data_of(acc, any_space=True)  # an index read from memory: taken as any value
            if load is not None:
                msg += shared_data_note(load, both=False)
                data["shared_data"] = True
            elif f.solver == "sat" and f.goal is not None:
                # it needs a loop bounded by a count read from shared memory to run long
                load = needs_large_count(facts, f.goal[0], f.goal[1], [f.trips], [ins.block])
                if load is not None:
                    msg += large_count_note(load)
                    data["shared_data"] = True
                elif needs := needs_factory_value(facts, f.goal[0], f.goal[1], 1):
                    msg += factory_value_note(needs)
                    data["factory_value"] = True
                elif needs_huge_grid(facts, f.goal[0], f.goal[1]):
                    msg += huge_grid_note()
                    data["huge_grid"] = True
            d = self.diagnostic(ins, msg, kernel=ctx.kernel, related=related, witness=f.witness, data=data)
            warning = data.get("shared_data") or data.get("factory_value") or data.get("huge_grid") \
                or f.solver == "unknown"  # fmt: skip
            yield dataclasses.replace(d, severity=Severity.WARNING) if warning else d
