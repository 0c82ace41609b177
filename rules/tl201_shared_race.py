"""TL201 shared-race

Two threads of a workgroup access one shared-memory address, at least one of them writing, with no barrier between them.

## What it does
Finds pairs of shared-memory accesses (loads, stores, atomics, tensor-core
fragment loads and stores) that two distinct threads of one block can make
to the same address with no barrier ordering them. Two accesses are ordered
when a barrier (`bar.sync`, `barrier.sync`, `__syncthreads()`,
`cuda.syncthreads()`) lies between them on both threads' paths, including
around a loop's back edge (the read at trip k against the write at trip
k + 1); `__syncwarp()` / `bar.warp.sync` with the full mask orders the lanes
of one warp only. Z3 decides whether the two threads' addresses can be equal
under the launch shape, the loop trips and the conditions under which each
access runs; the diagnostic points at the access that comes later in program
order (the read of a write-then-read race), names the other one, and prints
the two threads, the address and the inputs of the witness. Atomics do not
race with atomics. Races on `cp.async` destinations are TL204's. A pair
whose two addresses are both computed from per-thread values read back from
shared memory (a prefix sum's slots, CUB's radix ranks) is a warning: the
solver takes those values as any values, and the algorithm that keeps them
apart is not followed. So is a write-write race in which every pair of
threads stores the same value (a "not converged" flag that many threads
clear): the word ends with that value whichever store lands last. And so
is a race that needs a loop bounded by a count read from shared memory to
run more trips than a count of the block's threads or of a shared array's
elements allows, and one in a kernel made by a factory (a Numba kernel
nested in a function) that holds only for some values of the factory's
argument, when no call in the file gives that argument. A pair the solver
gave up on (its resource limit) is reported as a warning that says so: the
kernel is not known to be race-free, and no two threads were found either.

## Why is this bad?
Threads of a block run in no guaranteed order. A thread that reads a word
another thread writes, with no barrier between, reads the old or the new
value depending on scheduling: the result changes from run to run, from GPU
to GPU, and often only under load. Two unordered writes of one word leave
either value; CUDA calls both a data race (undefined behaviour), even when
the two writes store the same value (which is why that case is still
reported, as a warning).

## Example
```python
@cuda.jit
def diff(x, out):
    s = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    out[t] = s[(t + 1) % 256] - s[t]   # reads the neighbour's store: no barrier
```

Use instead:
```python
@cuda.jit
def diff(x, out):
    s = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    out[t] = s[(t + 1) % 256] - s[t]
```

## How to fix
Put a barrier between the write and the other thread's access (both sides of
it, in a loop: one before the reads and one before the next trip's writes),
or use `__syncwarp()` when both threads are lanes of one warp, or make the
update an atomic when many threads add into one word.

## Fix safety
No fix: where a barrier belongs depends on the algorithm.

## References
- CUDA C++ Programming Guide, "Shared Memory" and "Synchronization Functions".
- PTX ISA, "Memory Consistency Model": data races.

## See also
docs/analyses.md#shared-memory: what "ordered" means, and how a pair of
accesses is decided.
"""

from __future__ import annotations

import dataclasses

from tolk_lint.diagnostics import Related, Severity
from tolk_lint.registry import Invalid, Rule, RuleContext, Valid

MORE_NOTES = 6  # notes naming the other accesses a line races with, beyond the first


class SharedRace(Rule):
    code = "TL201"
    name = "shared-race"
    analyses = ("tolk_lint.analysis.memory",)
    severity = Severity.ERROR

    VALID = [
        Valid("python", """
            from numba import cuda, float32

            @cuda.jit
            def neighbour_synced(x, out):  # expect-clean
                s = cuda.shared.array(128, float32)
                t = cuda.threadIdx.x
                s[t] = x[t]
                cuda.syncthreads()
                out[t] = s[(t + 1) % 128] - s[t]
        """, flags="--block 128,1,1"),
        Valid("python", """
            from numba import cuda, int32

            @cuda.jit
            def histogram(x, out):  # expect-clean
                h = cuda.shared.array(16, int32)
                t = cuda.threadIdx.x
                if t < 16:
                    h[t] = 0
                cuda.syncthreads()
                cuda.atomic.add(h, t % 16, 1)
                cuda.syncthreads()
                if t < 16:
                    out[t] = h[t]
        """, flags="--block 128,1,1"),
        Valid("ptx", """
            .version 8.0
            .target sm_80
            .address_size 64
            .visible .entry own_slot(.param .u64 out) // expect-clean
            {
                .shared .align 4 .b8 s[512];
                .reg .b32 %r<6>;
                .reg .f32 %f<2>;
                mov.u32 %r1, %tid.x;
                shl.b32 %r2, %r1, 2;
                mov.u32 %r3, s;
                add.s32 %r4, %r3, %r2;
                st.shared.u32 [%r4], %r1;
                ld.shared.u32 %r5, [%r4];
                ret;
            }
        """, flags="--block 128,1,1"),
    ]
    INVALID = [
        Invalid("python", """
            from numba import cuda, float32

            @cuda.jit
            def neighbour_race(x, out):
                s = cuda.shared.array(128, float32)
                t = cuda.threadIdx.x
                s[t] = x[t]
                out[t] = s[(t + 1) % 128] - s[t]  # expect: TL201
        """, flags="--block 128,1,1"),
        Invalid("python", """
            from numba import cuda, float32

            @cuda.jit
            def loop_war(x, out, n):
                s = cuda.shared.array(128, float32)
                t = cuda.threadIdx.x
                acc = float32(0.0)
                for k in range(n):
                    s[t] = 2.0 * x[k * 128 + t]  # expect: TL201
                    cuda.syncthreads()
                    acc += s[127 - t]
                out[t] = acc
        """, flags="--block 128,1,1"),
        Invalid("ptx", """
            .version 8.0
            .target sm_80
            .address_size 64
            .visible .entry one_word(.param .u64 out)
            {
                .shared .align 4 .b32 flag;
                .reg .b32 %r<3>;
                mov.u32 %r1, %tid.x;
                st.shared.u32 [flag], %r1; // expect: TL201
                bar.sync 0;
                ret;
            }
        """, flags="--block 64,1,1"),
    ]

    def check(self, ctx: RuleContext):
        from tolk_lint.analysis.memory import (
            access_at,
            access_text,
            pretty_buffer,
            races_by_line,
            solver_note,
            verb,
        )
        from tolk_lint.analysis.memory.factory_values import needs_factory_value
        from tolk_lint.analysis.memory.grid_size import needs_huge_grid
        from tolk_lint.analysis.memory.loaded_counts import needs_large_count
        from tolk_lint.analysis.memory.phrases import (
            factory_value_note,
            huge_grid_note,
            large_count_note,
            same_value_note,
            shared_data_note,
        )

        facts = ctx.memory()
        for _where, group in races_by_line(facts.races(), self.code).items():
            r = next((g for g in group if g.solver == "sat"), group[0])
            # a pair no solver answer showed to collide: not known race-free, not a race found
            unproved = all(g.solver != "sat" for g in group)
            race = "possible shared-memory race" if unproved else "shared-memory race"
            later, other = r.later, r.other
            buf = f"`{pretty_buffer(later.root or other.root)}`"
            if later.instr is other.instr:
                what = f"{access_text(later)} {verb(later)} {buf}"
                if r.kind == "write-write":
                    msg = (f"{race} in kernel `{ctx.kernel.name}`: two threads store to the same word of "
                           f"{buf} here with no barrier between them ({what})")  # fmt: skip
                else:
                    msg = (f"{race} in kernel `{ctx.kernel.name}`: one thread reads a word of {buf} "
                           f"that another thread writes here, with no barrier between them ({what})")  # fmt: skip
            else:
                verb_later = "reads" if not later.writes else ("writes" if later.kind == "write" else "updates")
                verb_other = "writes" if other.writes and other.kind == "write" else (
                    "atomically updates" if other.kind == "atomic" else "reads")  # fmt: skip
                msg = (f"{race} in kernel `{ctx.kernel.name}`: {access_text(later)} {verb_later} a word "
                       f"of {buf} that another thread {verb_other} with {access_at(other)}, with no barrier between "
                       "them")  # fmt: skip
            # every pair of the line stores one value into the word: whichever store lands
            # last, the word ends with that value (a convergence flag, "some thread found one")
            same_value = all(g.same_value and g.kind == "write-write" for g in group)
            if same_value:
                msg += same_value_note()
            elif r.same_value:
                msg += " (these two threads store the same value, which is still a data race in CUDA's memory model)"
            if r.kind == "read-write" and later.reads and other.writes and later.instr is not other.instr:
                msg += "; the read may see the old or the new value"
            msg += solver_note(r)
            assumed = facts.assumed_launch()
            if assumed and r.solver == "sat":
                msg += f" (assuming {assumed}; pass --block to give the exact shape)"
            related = [Related(f"the other access: {access_text(other)} {verb(other)} {buf} here",
                               other.instr.span, other.instr.origin)]  # fmt: skip
            # the other accesses it races with, one note each (with its span) per source line
            more = {g.other.line: g.other for g in group if g.other.line != other.line}
            for line in sorted(more)[:MORE_NOTES]:
                o = more[line]
                related.append(Related(f"it also races with {access_at(o)}, which {verb(o)} {buf}",
                                       o.instr.span, o.instr.origin))  # fmt: skip
            if len(more) > MORE_NOTES:
                related.append(Related(f"and with {len(more) - MORE_NOTES} more accesses of {buf}"))
            data = {"kind": r.kind, "buffer": pretty_buffer(later.root or other.root), "solver": r.solver,
                    "other_line": other.line, "same_value": same_value}  # fmt: skip
            # both addresses computed from per-thread values read from shared memory
            # (ranks, offsets): the witness picks those values freely, so it is a warning
            load = facts.shared_data_of(later, varying=True)
            if load is not None and facts.shared_data_of(other, varying=True) is not None:
                msg += shared_data_note(load, both=True)
                data["shared_data"] = True
            elif not same_value and r.solver == "sat" and r.goal is not None:
                count = needs_large_count(facts, r.goal[0], r.goal[1], list(r.trips),
                                          [later.instr.block, other.instr.block])  # fmt: skip
                if count is not None:
                    msg += large_count_note(count)
                    data["shared_data"] = True
                elif needs := needs_factory_value(facts, r.goal[0], r.goal[1], 2):
                    msg += factory_value_note(needs)
                    data["factory_value"] = True
                elif needs_huge_grid(facts, r.goal[0], r.goal[1]):
                    msg += huge_grid_note()
                    data["huge_grid"] = True
            d = self.diagnostic(later.instr, msg, kernel=ctx.kernel, related=related, witness=r.witness, data=data)
            warning = data.get("shared_data") or data.get("factory_value") or data.get("huge_grid") or same_value \
                or unproved  # fmt: skip
            yield dataclasses.replace(d, severity=Severity.WARNING) if warning else d
