"""Where each synchronising op runs: the verdicts TL101, TL102 and TL103 report.

For every barrier, warp collective and tensor-core op of a kernel
(`uniform.sync_ops`), `placements` reads the uniformity at the level the op
needs -- the workgroup for barriers, the warp for collectives and
``mma``/``wmma``/``ldmatrix``, the warpgroup for Hopper's ``wgmma`` -- and
says whether some of the threads it needs may not run it with the others:
in a loop whose trips may differ (TL102; TL103 for a collective), under a
branch that splits them (TL101; TL103). A collective whose mask is not the
full constant one, or that runs in a kernel that computes lane masks, is
passed when Z3 proves its mask names only lanes that run it
(`smt.mask_names_its_lanes`).

Imports the IR, `uniform`, `uniformity_info` and (lazily) `smt`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tolk_lint.analysis.uniform import controlling_branches, sync_ops, uniformity
from tolk_lint.analysis.uniformity_info import Proof, Reason, UniformityInfo
from tolk_lint.ir.cfg import CFG, Loop, cfg_of
from tolk_lint.ir.nodes import Block, Instr, Kernel, Module, Value
from tolk_lint.ir.opcodes import TENSOR_CORE_OPS, WARP_COLLECTIVES, WARPGROUP_OPS, Opcode

O = Opcode

@dataclass
class Placement:
    """Why an op that needs its threads together may not have them.

    ``code`` follows the acceptance conventions: TL102 for a barrier or a
    tensor-core op in a loop whose trips may differ (or any collective in a
    loop whose trips differ within the warp: TL103), TL101 for a barrier
    under a varying branch, TL103 for a warp collective under control that
    varies within the warp while its mask names every lane."""

    code: str
    op: Instr
    level: str
    loop: Loop | None = None
    branch: Block | None = None
    cause: Value | None = None
    reasons: list[Reason] = field(default_factory=list)
    proof: Proof | None = None
    exits_early: Instr | None = None  # a RET/EXIT some threads take instead
    mask_proof: Proof | None = None  # a collective's partial or computed mask: what Z3 said of it


def _full_mask(ins: Instr) -> Value | None:
    """The mask operand of a collective, or None for ops that have none
    (tensor cores: every lane, always)."""
    idx = {O.SHUFFLE: 3, O.VOTE: 1, O.MATCH: 1, O.REDUX: 1, O.WARP_SYNC: 0}.get(ins.op)
    if idx is None or idx >= len(ins.args):
        return None
    return ins.args[idx]


def _const_value(v: Value | None):
    if v is not None and v.defn is not None and v.defn.op is O.CONST:
        return v.defn.attrs.get("value")
    return None


def placements(kernel: Kernel, module: Module | None = None, settings=None) -> list[Placement]:
    """Every barrier, collective and tensor-core op of ``kernel`` that may run
    without all the threads it needs (cached per kernel)."""
    return kernel.cached("placements", lambda k: _placements(k, module, settings))


def _placements(kernel: Kernel, module: Module | None, settings) -> list[Placement]:
    u = kernel.cached("uniformity", lambda k: uniformity(k, module, settings))
    cfg = cfg_of(kernel)
    out: list[Placement] = []
    for ins in sync_ops(kernel, module):
        if ins.op in (O.SHUFFLE, O.VOTE, O.MATCH, O.REDUX) and ins.attrs.get("sync") is False:
            continue
        tensor = ins.op in TENSOR_CORE_OPS
        collective = ins.op in WARP_COLLECTIVES and not tensor
        level = "warpgroup" if ins.op in WARPGROUP_OPS else "warp" if (tensor or collective) else "workgroup"
        info = u.at(level)
        # loops first: a barrier in a loop whose trips vary is TL102 only
        loop = next((lp for lp in cfg.loops_around(ins.block) if lp in info.divergent_loops), None)
        if loop is not None:
            mask_proof = _mask_proof(kernel, ins, info, settings) if collective else None
            if mask_proof is not None and mask_proof.verdict == "uniform":
                continue
            cause = info.loop_reasons.get(loop)
            code = "TL103" if collective else "TL102"
            out.append(Placement(code, ins, level, loop=loop, cause=cause.source if cause else None,
                                 reasons=([cause] if cause else []) + (info.why(cause.source) if cause and cause.source else []),
                                 proof=mask_proof or info.loop_proofs.get(loop), mask_proof=mask_proof))  # fmt: skip
            continue
        branches = controlling_branches(cfg, ins.block, info)
        # a loop's own exit branches are the loop rule's business
        branches = [b for b in branches if not any(
            lp.contains(b) and any(s not in lp.blocks for s in b.succs) for lp in cfg.loops_around(ins.block))]  # fmt: skip
        if not branches:
            continue
        mask_proof = _mask_proof(kernel, ins, info, settings) if collective else None
        if mask_proof is not None and mask_proof.verdict == "uniform":
            continue
        if mask_proof is not None:
            # the lanes a mask names took alike the branches on what they share: not those
            splitting = [b for b in branches if not _lane_mask_derived(b, info)]
            branches = splitting or branches
        b = _nearest(cfg, ins.block, branches)
        term = b.terminator
        cause = term.args[0] if term is not None and term.args else None
        reasons = [info.branch_reasons[b]] if b in info.branch_reasons else []
        if cause is not None:
            reasons += info.why(cause)
        code = "TL101" if level == "workgroup" else "TL103"
        out.append(Placement(code, ins, level, branch=b, cause=cause, reasons=reasons,
                             proof=mask_proof or info.proofs.get(cause), exits_early=_early_exit(cfg, b, ins.block),
                             mask_proof=mask_proof))  # fmt: skip
    return out


def _mask_proof(kernel: Kernel, ins: Instr, info: UniformityInfo, settings) -> Proof | None:
    """What Z3 says of the mask of collective ``ins``, which runs under
    control that splits the warp: whether it names only lanes that run it
    (`smt.mask_names_its_lanes`). None for ops without a mask, and for the
    full constant mask in a kernel with no collective that tells which lanes
    run together (`activemask`, `ballot`, `match`): every lane is named, and
    the control alone decides. Cached per mask and block: one answer for the
    collectives of a block that share it."""
    mask = _full_mask(ins)
    if mask is None:
        return None
    const = _const_value(mask)
    if isinstance(const, int) and (const & 0xFFFFFFFF) == 0xFFFFFFFF and not _has_lane_masks(kernel):
        return None
    from tolk_lint.analysis import smt

    cache = kernel.cached("mask_proofs", lambda k: {})
    key = (mask, ins.block)
    if key not in cache:
        rlimit = getattr(settings, "solver_rlimit", None) or smt.DEFAULT_RLIMIT
        cache[key] = smt.mask_names_its_lanes(kernel, ins, mask, info, rlimit)
    return cache[key]


def _has_lane_masks(kernel: Kernel) -> bool:
    """Whether ``kernel`` computes a lane mask of the lanes that run with it
    (``__activemask()``, ``__ballot_sync``, ``__match_any_sync``)."""
    return kernel.cached("has_lane_masks", lambda k: any(
        i.op in (O.ACTIVEMASK, O.MATCH) or (i.op is O.VOTE and i.attrs.get("mode") == "ballot")
        for i in k.instrs()))  # fmt: skip


def _lane_mask_derived(branch: Block, info: UniformityInfo, limit: int = 256) -> bool:
    """Whether ``branch``'s condition is computed from uniform values and lane
    masks alone (``activemask``, ``ballot``, ``match`` results): every lane a
    mask names holds the same mask, so those lanes decide it alike (inside
    cooperative groups' ``ballot``, its test of whether the group is the
    whole warp). Such a branch is not what splits a collective's lanes."""
    term = branch.terminator
    if term is None or not term.args:
        return False
    seen: set[Value] = set()
    stack = [term.args[0]]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if len(seen) > limit:
            return False
        d = v.defn
        if info.is_uniform(v):
            continue
        if d is None or d.op in (O.LOAD, O.ATOMIC, O.PHI, O.CALL, O.OPAQUE, O.SPECIAL, O.SHUFFLE):
            return False
        if d.op in (O.ACTIVEMASK, O.MATCH) or (d.op is O.VOTE and d.attrs.get("mode") == "ballot"):
            continue
        stack.extend(d.args)
    return True


def _nearest(cfg: CFG, block: Block, branches: list[Block]) -> Block:
    """The controlling branch closest to ``block`` (latest in dominance order)."""
    return max(branches, key=lambda b: cfg.order.get(b, 0))


def _early_exit(cfg: CFG, branch: Block, target: Block) -> Instr | None:
    """A RET/EXIT some threads take at ``branch`` instead of reaching
    ``target``: reachable from the branch without passing ``target``, and not
    reachable from ``target`` (so not the kernel's common end)."""
    after: set[Block] = set()
    stack = [target]
    while stack:
        x = stack.pop()
        if x in after:
            continue
        after.add(x)
        stack.extend(x.succs)
    seen: set[Block] = set()
    stack = list(branch.succs)
    while stack:
        x = stack.pop()
        if x in seen or x is target:
            continue
        seen.add(x)
        t = x.terminator
        if t is not None and t.op in (O.RET, O.EXIT) and x not in after and not t.attrs.get("trap"):
            return t  # (a `trap` aborts the launch: nobody is left waiting)
        stack.extend(x.succs)
    return None
