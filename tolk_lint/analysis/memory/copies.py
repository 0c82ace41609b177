"""The cp.async group queue: where a copy is still pending.

By the PTX ISA's rules for ``cp.async``, a copy's write lands at an unknown
moment between the copy and the CP_ASYNC_WAIT that retires its group *on
the copying thread* (``wait_group N`` retires every group but the newest N
committed ones; uncommitted copies are never covered; ``wait_all`` covers
everything), and it is visible to other threads only after a barrier that
follows that wait. For each copy a walk from it (`copy_walk`) follows the
thread's own group queue (commits counted along the path) until the
retiring wait and the barrier after it: the barriers crossed before that
are the phases in which the copy is still *pending* for other threads, the
accesses met before the wait are the copying thread's own hazards. Trips
are kept relative to the copy (trip k; a slot ``k mod S`` is then a function
of ``k``), so the verdict holds for every trip, not for a few unrolled ones.
A ``cp.async.mbarrier.arrive`` followed by an arrive on that mbarrier that
acts as a barrier (`tolk_lint.analysis.mbarriers`) retires and publishes
the copies at once: the wait after it completes only when they have landed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tolk_lint import budget
from tolk_lint.analysis.mbarriers import object_of
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from collections.abc import Callable

    from tolk_lint.analysis.memory.accesses import Access
    from tolk_lint.ir.nodes import Block
    from tolk_lint.analysis.memory.phases import Phases, Vec

O = Opcode


@dataclass(frozen=True)
class PendingWalk:
    """What the walk from one cp.async found."""

    bars: frozenset  # (barrier instr, Vec relative to the copy): phases where the copy is pending
    own: frozenset  # (Access, Vec relative to the copy): the copying thread's accesses before retirement
    retiring: frozenset  # CP_ASYNC_WAIT instrs that retire it on some path
    short_waits: frozenset  # (wait instr, commits seen) that left it pending
    uncommitted_waits: frozenset  # waits reached with the copy not committed yet
    never_retired: bool  # some path ends the kernel with it pending


# The walk's states are (block, position, trip relations, commits, retired,
# armed mbarriers); the trip relations of nested loops multiply (a 3-stage
# `cuda::pipeline` with a shared state: 1.7 million states). Past this many
# the walk forgets how many trips separate the copy from what it meets
# (`_any_trip`): a superset of the exact relations, so it may find more
# hazards, never fewer, in a bounded number of states.
EXACT_STATES = 20_000


def _any_trip(vec: Vec) -> Vec:
    """``vec`` with every loop's trip relative to the copy made "any trip"
    (``free``, ``xfree`` once the loop is left)."""
    return tuple((lp, k[0] + "free" if k[0] in "xh" else "free", 0) for lp, k, _n in vec)


def copy_walk(phases: Phases, c: Access, level: str = "workgroup",
              dead: Callable[[Block, Block], bool] | None = None) -> PendingWalk:  # fmt: skip
    """Follow the copying thread from ``c`` until a wait retires it and a
    boundary publishes it (see the module docstring). ``dead(b, s)``: an
    edge no thread takes (`dead_edges`), not followed while the copy is
    pending (``cuda::pipeline``'s switch over ``wait_group`` counts)."""
    waits = [i.attrs.get("n", 0) for i in phases.k.instrs() if i.op is O.CP_ASYNC_WAIT]
    capc = (max(waits) if waits else 0) + 2
    b0 = c.instr.block
    i0 = b0.instrs.index(c.instr) + 1
    bars: set = set()
    own: set = set()
    retiring: set = set()
    short: set = set()
    uncommitted: set = set()
    never = False
    seen: set = set()
    work = [(b0, i0, phases.vec0(b0), 0, False, frozenset())]
    while work:
        b, i, vec, cm, ret, armed = work.pop()
        if len(seen) >= EXACT_STATES:
            vec = _any_trip(vec)
        key = (b, i, vec, cm, ret, armed)
        if key in seen:
            continue
        seen.add(key)
        if len(seen) % 256 == 0:
            budget.check("following a cp.async copy to its wait (%d states)", len(seen))
        stopped = False
        for ins in b.instrs[i:]:
            op = ins.op
            if not ret and op is O.MBARRIER:
                # cp.async.mbarrier.arrive: the copies so far arrive on that
                # mbarrier when they land; an arrive on it that acts as a
                # barrier (`mbarriers`) then also retires them
                name = object_of(ins)
                if ins.attrs.get("kind") == "cp_async_arrive" and not ins.attrs.get("noinc") and name:
                    armed = armed | {name}
                elif name in armed and phases.boundary(ins, level):
                    retiring.add(ins)
                    stopped = True
                    break
                continue
            if not ret:
                if op is O.CP_ASYNC_COMMIT:
                    cm = min(cm + 1, capc)
                    continue
                if op is O.CP_ASYNC_WAIT:
                    n = int(ins.attrs.get("n", 0) or 0)
                    if ins.attrs.get("all") or cm >= n + 1:
                        ret = True
                        retiring.add(ins)
                    elif cm == 0:
                        uncommitted.add(ins)
                    else:
                        short.add((ins, cm))
                    continue
            if phases.boundary(ins, level):
                if ret:
                    stopped = True
                    break
                bars.add((ins, vec))
                continue
            if not ret:
                acc = phases.by_instr.get(ins)
                if acc is not None:
                    own.add((acc, vec))
        if stopped:
            continue
        t = b.terminator
        if not b.succs or (t is not None and t.op in (O.RET, O.EXIT)):
            if not ret:
                never = True
            continue
        for s in b.succs:
            if not ret and dead is not None and len(b.succs) == 2 and dead(b, s):
                continue
            work.append((s, 0, phases.step(vec, b, s), cm, ret, armed))
    return PendingWalk(frozenset(bars), frozenset(own), frozenset(retiring), frozenset(short),
                       frozenset(uncommitted), never)  # fmt: skip


def compose(walk_vec: Vec, phase_vec: Vec) -> Vec:
    """An access's trips relative to a copy, from the barrier's trips relative
    to the copy (``walk_vec``) and the access's relative to the barrier."""
    w = {lp: (k, n) for lp, k, n in walk_vec}
    out = []
    seen = set()
    for lp, k, n in phase_vec:
        seen.add(lp)
        base = k[1:] if k[0] in "xh" else k
        pre = k[0] if k[0] in "xh" else ""
        if base in ("rel", "relge"):
            k2, n2 = w.get(lp, ("free", 0))
            k2 = k2[1:] if k2[0] in "xh" else k2
            if k2 == "free":
                out.append((lp, pre + "free", 0))
            else:
                ge = base.endswith("ge") or k2.endswith("ge")
                out.append((lp, pre + k2.replace("ge", "") + ("ge" if ge else ""), n + n2))
        else:
            out.append((lp, k, n))
    # loops the copying thread left before the barrier: the access comes after
    for lp, k, n in walk_vec:
        if k[0] in "xh" and lp not in seen:
            out.append((lp, k, n))
    return tuple(out)
