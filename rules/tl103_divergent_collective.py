"""TL103 divergent-collective

A warp collective under control that varies within the warp while its mask names every lane.

## What it does
Finds a warp-synchronous operation -- `shfl.sync`, `vote.sync`, `match.sync`,
`redux.sync`, `bar.warp.sync`, `cuda.shfl_*_sync`, `cuda.syncwarp`, and the
`.aligned` tensor-core ops `mma.sync`/`ldmatrix`, and Hopper's `wgmma.*`
(run by the four warps of a warpgroup together) -- that only some lanes of a
warp (of a warpgroup) reach (a branch on the lane, on per-thread data), while its mask names
every lane (`0xffffffff`) or lanes that do not reach it. A partial mask that
names exactly the lanes of its branch is fine, and so is a branch that is the
same for every lane of a warp (`threadIdx.x / 32`), even if it differs across
the block.

## Why is this bad?
Every lane named in the mask must execute the same collective; a lane that
never arrives makes the result undefined (and hangs on some architectures).

## Example
```python
@cuda.jit
def k(a):
    v = a[cuda.threadIdx.x]
    if cuda.laneid % 2:
        v += cuda.shfl_xor_sync(0xFFFFFFFF, v, 1)
```

Use instead: run the collective in every lane and select afterwards:
```python
@cuda.jit
def k(a):
    v = a[cuda.threadIdx.x]
    w = cuda.shfl_xor_sync(0xFFFFFFFF, v, 1)
    if cuda.laneid % 2:
        v += w
```

## How to fix
Hoist the collective out of the branch, or give it the mask of the lanes that
really take the branch.

## Fix safety
No fix.

## See also
docs/analyses.md#uniformity: the warp level, and which masks are accepted.
"""

from __future__ import annotations

from tolk_lint.diagnostics import Severity
from tolk_lint.registry import Invalid, Rule, RuleContext, Valid

from ._sync_messages import describe, diagnostic, op_text, where


class DivergentCollective(Rule):
    code = "TL103"
    name = "divergent-collective"
    analyses = ("tolk_lint.analysis.placements",)
    severity = Severity.ERROR

    VALID = [
        Valid("python", """
            from numba import cuda

            @cuda.jit
            def warp_sum(a):  # expect-clean
                v = a[cuda.threadIdx.x]
                for d in (16, 8, 4, 2, 1):
                    v += cuda.shfl_down_sync(0xFFFFFFFF, v, d)
                if cuda.threadIdx.x // 32 == 0:
                    v += cuda.shfl_xor_sync(0xFFFFFFFF, v, 1)
                a[cuda.threadIdx.x] = v
        """, flags="--block 128,1,1"),
    ]
    INVALID = [
        Invalid("python", """
            from numba import cuda

            @cuda.jit
            def odd_lanes(a):
                v = a[cuda.threadIdx.x]
                if cuda.laneid % 2:
                    v += cuda.shfl_xor_sync(0xFFFFFFFF, v, 1)  # expect: TL103
                a[cuda.threadIdx.x] = v
        """, flags="--block 128,1,1"),
    ]

    def check(self, ctx: RuleContext):
        from tolk_lint.analysis.placements import placements

        for p in placements(ctx.kernel, ctx.module, ctx.settings):
            if p.code != self.code:
                continue
            named = _mask_names_others(p, ctx.kernel.name)
            if named is not None:
                yield diagnostic(self, ctx, p, named)
                continue
            if p.loop is not None:
                first = next((i for i in p.loop.header.instrs if i.span is not None), None)
                msg = (f"warp collective {op_text(p.op)} in kernel `{ctx.kernel.name}` is in the loop at "
                       f"{where(first)} whose trip count may differ between lanes of a warp")  # fmt: skip
            elif p.level == "warpgroup":
                term = p.branch.terminator if p.branch is not None else None
                msg = (f"warpgroup tensor-core op {op_text(p.op)} in kernel `{ctx.kernel.name}` must be run by the "
                       f"four warps of its warpgroup together, but runs under the branch at {where(term)} on "
                       f"{describe(p.cause)}, which differs within the warpgroup")  # fmt: skip
            else:
                term = p.branch.terminator if p.branch is not None else None
                cause = describe(p.cause)
                msg = (f"warp collective {op_text(p.op)} in kernel `{ctx.kernel.name}` names every lane in its mask "
                       f"but runs under the branch at {where(term)} on {cause}, which differs within the warp")  # fmt: skip
            yield diagnostic(self, ctx, p, msg)


def _mask_names_others(p, kernel: str) -> str | None:
    """The message for a collective whose mask is not the full constant one
    and names a lane that does not run it (or leaves out the lane that does),
    from the two lanes Z3 found; None for the full mask."""
    w = p.mask_proof.witness if p.mask_proof is not None else None
    if not w or "lanes" not in w:
        return None
    mask = w.get("mask")
    if mask == 0xFFFFFFFF and not w.get("own_lane_missing"):
        return None
    where_ = (f"the loop at {where(next((i for i in p.loop.header.instrs if i.span is not None), None))} whose "
              "trip count may differ between lanes of a warp" if p.loop is not None else
              f"the branch at {where(p.branch.terminator if p.branch is not None else None)} on "
              f"{describe(p.cause)}, which differs within the warp")  # fmt: skip
    lane0, lane1 = w["lanes"]
    op = f"warp collective {op_text(p.op)} in kernel `{kernel}`"
    if w.get("own_lane_missing"):
        return f"{op} runs in lane {lane0}, which its mask does not name (it runs in {where_})"
    return (f"{op} has a mask that names lane {lane1}, which does not run it with lane {lane0}: it runs in "
            f"{where_}")
