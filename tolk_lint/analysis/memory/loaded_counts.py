"""Findings that hold only when a count read back from shared memory is large.

A loop whose exit test reads a value loaded from shared memory (the number
of intervals still active, a scan's size that thread 0 computed and stored)
runs as many trips as that value allows, and the solver takes the value as
any value: four billion active intervals, a doubling counter that wraps to
0 and makes every thread touch element 0. Real counts of that kind count
the block's threads or the elements of a shared array.

So a race or an out-of-bounds access is asked once more, with the trips of
every such loop around its accesses capped at what a count of at least 1 and
at most ``max(threads, largest shared array's elements)`` allows (that many
trips; for a counter that doubles or halves, that many bits). A count of 0
is left out too: a bound ``count - 1`` then wraps to four billion (the
eigenvalue sample's scan over ``num_threads_compaction``, a power of two that
thread 0 stores, halves its offset down to 0 only so), and a loop the
count bounds directly runs no trip at 0. When it no longer
holds, the finding needs a larger count than the kernel's data could give:
a warning, like the other findings computed from loaded values
(`MemoryCore.shared_data_of`), since the algorithm that keeps the count in
range is not followed. When it still holds (a race at the loop's first
trips), it stays an error. One more solver question, only for findings in
such loops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tolk_lint.analysis.memory.loops import exit_tests
from tolk_lint.ir.cfg import Loop
from tolk_lint.ir.nodes import Instr, Value
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.core import MemoryCore
    from tolk_lint.analysis.memory.query import Query

O = Opcode

_SLICE = 128  # values an exit test's slice is followed through, looking for a shared load
CAP_BUDGET = 4  # the capped question is asked with rlimit / this


def loaded_bound_loops(mf: MemoryCore, block) -> dict[Loop, Instr]:
    """The loops around ``block`` whose exit tests read a value loaded from
    shared memory, each with that load."""
    cache = mf.__dict__.setdefault("_loaded_bounds", {})
    out: dict[Loop, Instr] = {}
    for lp in mf.cfg.loops_around(block):
        if lp not in cache:
            cache[lp] = _exit_load(lp)
        if cache[lp] is not None:
            out[lp] = cache[lp]
    return out


def _exit_load(lp: Loop) -> Instr | None:
    """A shared-memory load an exit test of ``lp`` is computed from, or None."""
    stack: list = [ex.cond for ex in lp.exits]
    seen: set = set()
    while stack and len(seen) < _SLICE:
        v = stack.pop()
        if not isinstance(v, Value) or v in seen or v.defn is None:
            continue
        seen.add(v)
        d = v.defn
        if d.op is O.LOAD:
            if d.attrs.get("space") == "shared":
                return d
            continue
        if d.op is not O.ATOMIC:
            stack.extend(d.args)
    return None


def count_cap(mf: MemoryCore) -> int:
    """The largest count the kernel's data could give: its threads, or the
    elements of its largest shared array (for PTX, whose arrays are bytes,
    its 4-byte words)."""
    k = mf.k
    elements = [(b.elements or 0) if k.language == "python" else (b.bytes or 0) // 4
                for b in k.buffers.values() if b.space == "shared"]  # fmt: skip
    return max([k.launch.threads or 1024] + elements)


def _trip_cap(mf: MemoryCore, lp: Loop, cap: int) -> int:
    geometric = any(phi.result in (mf.geo or {}) and exit_tests(mf.cfg, lp, phi, mf.canon)
                    for phi in lp.header.phis())  # fmt: skip
    return cap.bit_length() + 1 if geometric else cap


def needs_large_count(mf: MemoryCore, q: Query, goal, trips: list[dict | None], blocks: list) -> Instr | None:
    """The shared load whose count a finding needs to be large: ``goal``
    (its question in ``q``) has no model once every loaded bound of a loop
    around ``blocks`` is at most `count_cap`, read in each thread's trips
    (``trips``: per thread, loop -> trip term), and those loops' trips are
    capped to match (see the module's docstring). None when there is no such
    loop, or when the finding still holds."""
    loops: dict[Loop, Instr] = {}
    for b in blocks:
        loops.update(loaded_bound_loops(mf, b))
    if not loops or goal is None:
        return None
    z3 = q.z3
    enc = q.enc
    cap = count_cap(mf)
    terms = []
    saved = enc.trips
    try:
        for t, tr in enumerate(trips):
            tr = tr or {}
            for lp, e in tr.items():
                if lp in loops:
                    terms.append(z3.ULE(e, _trip_cap(mf, lp, cap)))
            q.context(tr)
            for load in dict.fromkeys(loops.values()):
                x = enc._bv(enc.enc(load.result, t))
                if x.size() > cap.bit_length():
                    terms.append(z3.ULE(x, cap))
                # and at least 1: a count of 0 runs a `count - 1` bound all the way round
                terms.append(z3.UGE(x, 1))
        if not terms:
            return None
        v = mf.solve(q, z3.And(goal, *terms), mf.rlimit // CAP_BUDGET, fallback=False)
        if v.status == "unknown":  # near the small limit: once more under the full one
            v = mf.solve(q, z3.And(goal, *terms), mf.rlimit, fallback=False)
    except Exception:  # noqa: BLE001 - only the severity depends on it: an error it stays
        return None
    finally:
        enc.trips = saved
    if v.status != "unsat":
        return None
    innermost = max(loops, key=lambda lp: lp.depth)
    return loops[innermost]
