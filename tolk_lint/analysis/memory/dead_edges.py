"""Branch edges no thread ever takes (`DeadEdges`), for the cp.async walk.

The group-queue walk (`copies.copy_walk`) follows every path of the CFG from
a copy. ``cuda::pipeline``'s ``consumer_wait`` compiles to a switch on the
number of groups in flight, ``(head - tail) & 255``, with one
``cp.async.wait_group N`` per case and a jump past all of them when nothing
is in flight (``head == tail``). In a single-stage pipeline (commit, then
wait, each trip) only ``wait_group 0`` ever runs; the other cases, and the
jump past them, would leave the trip's copy in flight and make every copy a
TL204. The two counters are loop-carried 16-bit values; the loop's proved
invariants (`invariants`: the tail moves with the head) tie them, and with
them the other edges are unsatisfiable.

An edge ``b -> s`` is dead when no thread that runs ``b`` -- at any trips of
the loops around it that it reaches, with what it must have done to get
there (`Query.reach`) and the loops' proved invariants -- has the branch
condition that goes to ``s``: UNSAT of a necessary condition, so a dead
edge is never taken in a real execution. Unknown keeps the edge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tolk_lint import budget
from tolk_lint.analysis.memory.loops import TRIP_BOUND
from tolk_lint.analysis.memory.query import Query, solve_bv
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.core import MemoryCore
    from tolk_lint.ir.nodes import Block

O = Opcode


class DeadEdges:
    """``dead(b, s)``: whether no thread ever goes from ``b`` to ``s``
    (cached per edge; one query context per kernel)."""

    def __init__(self, mf: MemoryCore):
        self.mf = mf
        self._query: Query | None = None
        self._memo: dict[tuple[Block, Block], bool] = {}

    def __call__(self, b: Block, s: Block) -> bool:
        key = (b, s)
        got = self._memo.get(key)
        if got is None:
            got = self._memo[key] = self._dead(b, s)
        return got

    def _dead(self, b: Block, s: Block) -> bool:
        t = b.terminator
        if t is None or t.op is not O.BRANCH or not t.args or len(set(b.succs)) != 2:
            return False
        budget.check("the cp.async walk (is a branch edge ever taken)")
        try:
            if self._query is None:
                self._query = Query(self.mf)
            q = self._query
            z3 = q.z3
            enc = q.enc
            n = len(self._memo)
            trips = {lp: z3.BitVec(f"edge{n}_k_{lp.header.name}", enc._trip_width)
                     for lp in self.mf.cfg.loops_around(b)}  # fmt: skip
            q.context(trips)
            conds = []
            for lp, k in trips.items():
                conds += [k >= 0, k < TRIP_BOUND]
                prev = enc.exits_at(lp, 0, k - 1)
                if prev is not None:
                    conds.append(z3.Or(k == 0, z3.Not(prev)))
                conds += q.counted(lp, 0, k, b) + q.loop_facts(lp, 0, k)
            conds += q.reach(b, 0)
            goal = z3.And(*conds, enc._edge(b, s, 0))
            return solve_bv(enc, goal, max(1, self.mf.rlimit // 4), fallback=False).status == "unsat"
        except budget.BudgetExceeded:
            raise
        except Exception:  # noqa: BLE001 - an edge we cannot decide is kept
            return False
