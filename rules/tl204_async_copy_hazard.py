"""TL204 async-copy-hazard

A read of a cp.async destination before the wait that retires it, a copy into a slot other threads may still read, or a copy into a slot whose earlier copy may still be in flight.

## What it does
Models each `cp.async` (`__pipeline_memcpy_async`, `cuda::memcpy_async`)
the way the PTX memory model states it: the copy's write lands at an unknown
moment between the copy and the `cp.async.wait_group N` / `wait_all` that
retires its group *on the copying thread* (`wait_group N` retires every
group but the newest N committed ones; copies not yet committed are not
covered), and other threads see it only after a barrier that follows that
wait. It then finds, with Z3 over both threads' addresses and every trip of
the loop (trip k, slot k mod S, proved symbolically, not by unrolling):

- a read of the destination before the wait that retires the copy, or
  after it but with no barrier between another thread's wait and the read
  (points at the read);
- a copy into a slot that other threads may still be reading (no barrier
  since their last read: points at the copy);
- a copy (or store) into a slot whose earlier copy may still be in flight —
  no wait orders two copies, so the older data can land on top of the newer
  (points at the later copy).

A wrong `wait_group` count, a commit skipped on some path, or copies never
committed show up as one of these. Hazards on a `cp.async` destination are
reported here, not again as TL201.

Hopper's `wgmma.mma_async` has a group queue of its own
(`wgmma.commit_group`, `wgmma.wait_group N`): a read of its accumulator
registers by anything but another `wgmma.mma_async` before the wait that
retires its group is reported here too (points at the read).

## Why is this bad?
`cp.async` is asynchronous and weak: a `__syncthreads()` alone does not
wait for it, and a wait only covers the thread's own committed groups. A
pipeline with the wrong wait, a missing barrier or one slot too few reads
stale or half-written tiles, usually only on some GPUs or some inputs.

## Example
```cuda
__pipeline_memcpy_async(&buf[t], &x[i], sizeof(float));
__pipeline_commit();
__syncthreads();                       // does not wait for the copy
y[i] = buf[(t + 1) & 255];             // may read before it lands
```

Use instead:
```cuda
__pipeline_memcpy_async(&buf[t], &x[i], sizeof(float));
__pipeline_commit();
__pipeline_wait_prior(0);              // this thread's copies have landed
__syncthreads();                       // ... and every thread's
y[i] = buf[(t + 1) & 255];
```

## How to fix
Before reading a slot, wait for the group that filled it
(`cp.async.wait_group` with the number of groups allowed to stay in flight,
counting the commits between the copy and the wait) and then barrier; before
refilling a slot, barrier after the last reads of it; keep every commit
unconditional so the group count stays the same on every trip.

## Fix safety
No fix: the right wait count depends on the pipeline's depth.

## References
- PTX ISA, "cp.async", "cp.async.commit_group", "cp.async.wait_group".
- CUDA C++ Programming Guide, "Asynchronous Data Copies".

## See also
docs/analyses.md#the-cpasync-group-queue-tl204: the group queue, and the
pipeline forms that are correct.
"""

from __future__ import annotations

from tolk_lint.diagnostics import Related, Severity
from tolk_lint.registry import Invalid, Rule, RuleContext, Valid

_HEAD = """\
.version 8.0
.target sm_80
.address_size 64
"""


class AsyncCopyHazard(Rule):
    code = "TL204"
    name = "async-copy-hazard"
    analyses = ("tolk_lint.analysis.memory", "tolk_lint.analysis.wgmma")
    severity = Severity.ERROR

    VALID = [
        Valid("ptx", _HEAD + """
            .visible .entry waited(.param .u64 x) // expect-clean
            {
                .shared .align 4 .b8 buf[1024];
                .reg .b32 %r<9>;
                .reg .b64 %rd<4>;
                .reg .f32 %f<2>;
                ld.param.u64 %rd1, [x];
                mov.u32 %r1, %tid.x;
                shl.b32 %r2, %r1, 2;
                mov.u32 %r3, buf;
                add.s32 %r4, %r3, %r2;
                mul.wide.u32 %rd2, %r1, 4;
                add.s64 %rd3, %rd1, %rd2;
                cp.async.ca.shared.global [%r4], [%rd3], 4;
                cp.async.commit_group;
                cp.async.wait_group 0;
                bar.sync 0;
                add.s32 %r5, %r2, 4;
                and.b32 %r6, %r5, 1020;
                add.s32 %r7, %r3, %r6;
                ld.shared.f32 %f1, [%r7];
                ret;
            }
        """, flags="--block 256,1,1"),
    ]
    INVALID = [
        Invalid("ptx", _HEAD + """
            .visible .entry barrier_only(.param .u64 x)
            {
                .shared .align 4 .b8 buf[1024];
                .reg .b32 %r<9>;
                .reg .b64 %rd<4>;
                .reg .f32 %f<2>;
                ld.param.u64 %rd1, [x];
                mov.u32 %r1, %tid.x;
                shl.b32 %r2, %r1, 2;
                mov.u32 %r3, buf;
                add.s32 %r4, %r3, %r2;
                mul.wide.u32 %rd2, %r1, 4;
                add.s64 %rd3, %rd1, %rd2;
                cp.async.ca.shared.global [%r4], [%rd3], 4;
                cp.async.commit_group;
                bar.sync 0;
                add.s32 %r5, %r2, 4;
                and.b32 %r6, %r5, 1020;
                add.s32 %r7, %r3, %r6;
                ld.shared.f32 %f1, [%r7]; // expect: TL204
                ret;
            }
        """, flags="--block 256,1,1"),
        Invalid("ptx", _HEAD + """
            .visible .entry same_slot_twice(.param .u64 x)
            {
                .shared .align 4 .b8 buf[1024];
                .reg .b32 %r<9>;
                .reg .b64 %rd<5>;
                ld.param.u64 %rd1, [x];
                mov.u32 %r1, %tid.x;
                shl.b32 %r2, %r1, 2;
                mov.u32 %r3, buf;
                add.s32 %r4, %r3, %r2;
                mul.wide.u32 %rd2, %r1, 4;
                add.s64 %rd3, %rd1, %rd2;
                add.s64 %rd4, %rd3, 1024;
                cp.async.ca.shared.global [%r4], [%rd3], 4;
                cp.async.commit_group;
                cp.async.ca.shared.global [%r4], [%rd4], 4; // expect: TL204
                cp.async.commit_group;
                cp.async.wait_group 0;
                bar.sync 0;
                ret;
            }
        """, flags="--block 256,1,1"),
    ]

    def check(self, ctx: RuleContext):
        from tolk_lint.analysis.memory import access_text, pretty_buffer, races_by_line, solver_note

        facts = ctx.memory()
        for _where, group in races_by_line(facts.races(), self.code).items():
            r = next((g for g in group if g.solver == "sat"), group[0])
            later, other = r.later, r.other
            copy = r.copy or (later if later.kind == "copy" else other)
            x = other if later is copy else later
            buf = f"`{pretty_buffer(copy.root or x.root)}`"
            who = "its own" if r.same_thread else "another thread's"
            if r.kind in ("read-before-wait", "read-before-barrier"):
                msg = (f"{access_text(later)} reads {buf} where {who} cp.async at line {copy.line} may still be "
                       f"landing: {self._why_pending(r)}")  # fmt: skip
            elif r.kind == "copy-into-read":
                msg = (f"{access_text(later)} copies into {buf} while another thread may still be reading it "
                       f"(line {x.line}): no barrier lies between that read and this copy")  # fmt: skip
            elif r.kind == "copy-over-inflight":
                msg = (f"{access_text(later)} copies into {buf} while {who} earlier cp.async into the same bytes "
                       f"(line {other.line}) may still be in flight: no wait retires it first, and two copies are "
                       "not ordered, so the older data may land on top of the newer")  # fmt: skip
            elif r.kind == "write-over-inflight":
                msg = (f"{access_text(later)} writes {buf} while {who} cp.async at line {copy.line} into the same "
                       f"bytes may still be in flight, so the copy may land after it: "
                       f"{self._why_pending(r)}")  # fmt: skip
            else:  # copy-over-write
                msg = (f"{access_text(later)} copies into {buf} bytes that another thread writes at line {x.line} "
                       "with no barrier between them")  # fmt: skip
            msg += solver_note(r)
            assumed = facts.assumed_launch()
            if assumed and r.solver == "sat" and not r.same_thread:
                msg += f" (assuming {assumed}; pass --block to give the exact shape)"
            related = [Related(f"the other access: {access_text(other)}", other.instr.span, other.instr.origin)]
            if r.walk is not None:
                for w in sorted(r.walk.retiring, key=lambda i: (i.span.line if i.span else 0)):
                    related.append(Related("this wait retires the copy's group on the copying thread",
                                           w.span, w.origin))  # fmt: skip
                    break
            data = {"kind": r.kind, "buffer": pretty_buffer(copy.root or x.root), "solver": r.solver,
                    "copy_line": copy.line, "other_line": other.line, "same_thread": r.same_thread}  # fmt: skip
            yield self.diagnostic(later.instr, msg, kernel=ctx.kernel, related=related, witness=r.witness, data=data)
        yield from self._wgmma_reads(ctx)

    def _wgmma_reads(self, ctx: RuleContext):
        """Reads of a ``wgmma.mma_async``'s accumulators before the
        ``wgmma.wait_group`` that retires its group (`analysis.wgmma`), one
        per source line."""
        from tolk_lint.analysis.memory import source_key
        from tolk_lint.analysis.wgmma import pending_reads

        lines: set = set()
        for reader, mma in pending_reads(ctx.kernel):
            key = source_key(reader)
            if key in lines:
                continue
            lines.add(key)
            text = (reader.text or reader.op.value).strip()
            msg = (f"`{text}` reads an accumulator of `wgmma.mma_async` (line {mma.span.line if mma.span else '?'}) "
                   "that may still be being written: no `wgmma.wait_group` retires its group first (commit it "
                   "with `wgmma.commit_group`, then wait with a count that leaves it out of the groups in flight)")
            related = [Related("the warpgroup MMA", mma.span, mma.origin)]
            yield self.diagnostic(reader, msg, kernel=ctx.kernel, related=related, data={"kind": "wgmma-pending"})

    @staticmethod
    def _why_pending(r) -> str:
        w = r.walk
        if w is None:
            return "no wait retires it first"
        if not w.retiring:
            if w.uncommitted_waits and not w.short_waits:
                return ("the copy is never committed (no cp.async.commit_group follows it), and "
                        "cp.async.wait_group only waits for committed groups")  # fmt: skip
            if w.short_waits:
                n = sorted({i.attrs.get('n', 0) for i, _c in w.short_waits})
                return (f"cp.async.wait_group {n[0]} leaves the copy's group pending (it allows the newest "
                        f"{n[0]} groups to stay in flight)")  # fmt: skip
            return "no cp.async.wait_group / wait_all retires it before this access (a barrier does not wait for it)"
        if r.same_thread:
            return "the wait that retires its group comes later"
        return ("the copying thread's wait may come later, or it is not followed by a barrier before this access "
                "(a wait publishes a copy only to the thread that waits)")  # fmt: skip
