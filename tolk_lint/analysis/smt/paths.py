"""Path conditions: when thread ``t`` reaches a block, and which way a join
(``phi``) chose: the control half of `Encoder`.

A join's value is an if-then-else over the conditions of its incoming
edges, computed over the region between its immediate dominator and the
join (at most `REGION_LIMIT` blocks; past that it is a fresh symbol, a
superset). A block inside a loop nested in the region is reached through
that loop's entry; a loop's trips are the encoder's trip symbols."""

from __future__ import annotations

from typing import Any

from tolk_lint.ir.cfg import Loop
from tolk_lint.ir.nodes import Block, Instr, Value
from tolk_lint.ir.opcodes import Opcode

O = Opcode

REGION_LIMIT = 400  # blocks in a join region encoded as if-then-else


class PathConditions:
    """Mixed into `Encoder`: uses its ``z3``, ``cfg``, ``memo``, ``trips``,
    ``enc``, ``fit`` and ``as_bool``."""

    def _join(self, d: Instr, v: Value, t: int):
        """A PHI at a join as if-then-else over its incoming edges' conditions."""
        z3 = self.z3
        J = d.block
        D = self.cfg.idom.get(J)
        if D is None or D is J:
            return None
        conds = self._incoming_conditions(D, J, t)
        if conds is None:
            return None
        vals = [self.enc(a, t) for a in d.args]
        if any(z3.is_bool(x) != z3.is_bool(vals[0]) for x in vals):
            return None
        if not z3.is_bool(vals[0]):
            w = max(x.size() for x in vals)
            vals = [self.fit(x, w) for x in vals]
        out = vals[-1]
        for c, x in zip(reversed(conds[:-1]), reversed(vals[:-1])):
            out = z3.If(c, x, out)
        return out

    def _incoming_conditions(self, D: Block, J: Block, t: int, over: bool = False) -> list | None:
        """For each predecessor of ``J``: the condition that a thread which
        reached ``D`` arrives at ``J`` through it. None when it cannot be told
        (``over``: a condition it implies, see `path_condition`)."""
        z3 = self.z3
        key = ("reach", D, J, t, over, tuple(sorted((id(lp), e[t].get_id()) for lp, e in self.trips.items())))
        if key in self.memo:
            return self.memo[key]
        reach = self._reach_map(D, J, t, over)
        out = None
        if reach is not None:
            out = []
            for p in J.preds:
                e = self._edge_from(p, J, t, D, over)
                if p not in reach or e is None:
                    out = None
                    break
                out.append(z3.And(reach[p], e))
        self.memo[key] = out
        return out

    def _inner_loop(self, b: Block, D: Block) -> Loop | None:
        """The outermost loop holding ``b`` but not ``D``."""
        best = None
        for lp in self.cfg.loops_around(b):
            if D not in lp.blocks:
                best = lp
        return best

    def _reach_map(self, D: Block, J: Block, t: int, over: bool = False) -> dict[Block, Any] | None:
        """Reach conditions, from ``D``, of the blocks on forward paths to
        ``J``. An inner loop counts as one node: its blocks are reached when
        its header is, and a loop with a single exit edge is left through it."""
        z3 = self.z3
        cfg = self.cfg
        if not set(cfg.loops_around(D)) <= set(cfg.loops_around(J)):
            return None  # J lies past an exit of D's loop: other trips would count
        order = cfg.order
        fwd: set[Block] = set()
        stack = [D]
        while stack:
            x = stack.pop()
            if x in fwd or x is J:
                continue
            fwd.add(x)
            if len(fwd) > REGION_LIMIT:
                return None
            for s in x.succs:
                if order.get(s, -1) > order[x]:
                    stack.append(s)
        # only the blocks on a forward path to J matter: the others (past a
        # loop's exit, when J is inside it) must not make the map fail
        useful: set[Block] = {p for p in J.preds if p in fwd}
        stack = [J, *useful]
        while stack:
            x = stack.pop()
            for p in x.preds:
                if p in fwd and p not in useful and order.get(p, -1) < order.get(x, -1):
                    useful.add(p)
                    stack.append(p)
        reach: dict[Block, Any] = {D: z3.BoolVal(True)}
        for b in sorted(fwd, key=lambda b: order[b]):
            if b is D or b not in useful:
                continue
            lp = self._inner_loop(b, D)
            if lp is not None and lp.header is not b:
                if lp.header not in reach:
                    return None
                reach[b] = reach[lp.header]
                continue
            terms = []
            for p in b.preds:
                if p not in reach or order.get(p, -1) > order[b]:
                    continue  # not on a forward path from D, or a back edge
                e = self._edge_from(p, b, t, D, over)
                if e is None:
                    return None
                terms.append(z3.And(reach[p], e))
            if not terms:
                continue  # not reachable from D on a forward path
            reach[b] = z3.Or(*terms) if len(terms) > 1 else terms[0]
        return reach

    def _edge_from(self, p: Block, s: Block, t: int, D: Block, over: bool = False):
        """The condition of edge p -> s; an edge leaving an inner loop counts
        as always taken when it is that loop's only exit, and (``over``) as
        possibly taken when the loop has several: which one a thread leaves
        by depends on its exit trip."""
        lp = self._inner_loop(p, D)
        if lp is not None and s not in lp.blocks:
            exits = [(b, x) for b in lp.blocks for x in b.succs if x not in lp.blocks]
            return self.z3.BoolVal(True) if len(exits) == 1 or over else None
        return self._edge(p, s, t)

    def _edge(self, p: Block, s: Block, t: int):
        """The branch condition under which control goes from ``p`` to ``s``."""
        z3 = self.z3
        term = p.terminator
        if term is None or term.op is not O.BRANCH:
            return z3.BoolVal(True)
        tt, ff = term.targets()
        if tt is ff:
            return z3.BoolVal(True)
        c = self.as_bool(self.enc(term.args[0], t))
        return c if s is tt else z3.Not(c)

    def loop_entry_condition(self, lp: Loop, t: int):
        """Whether thread ``t`` enters ``lp``, given it reached the header of
        the loop around ``lp`` (or the kernel's entry); None when unknown."""
        start = lp.parent.header if lp.parent is not None else self.cfg.entry
        if start is lp.header:
            return None
        return self.enters(start, lp, t)

    def enters(self, start: Block, lp: Loop, t: int):
        """Whether thread ``t``, at ``start`` (outside ``lp``), enters ``lp``;
        None when unknown."""
        z3 = self.z3
        reach = self._reach_map(start, lp.header, t)
        if reach is None:
            return None
        terms = []
        for p in lp.header.preds:
            if p in lp.blocks:
                continue
            e = self._edge_from(p, lp.header, t, start)
            if p not in reach or e is None:
                return None
            terms.append(z3.And(reach[p], e))
        if not terms:
            return None
        return z3.Or(*terms) if len(terms) > 1 else terms[0]

    def path_condition(self, block: Block, t: int, limit: int = REGION_LIMIT, over: bool = False):
        """Whether thread ``t`` reaches ``block``, given it reached its
        innermost loop's header (or the entry); None when it cannot be told.
        ``over``: a condition that reaching it implies, not one that implies
        reaching it (a loop left by one of several exits may have been left
        by any): only for assuming that a thread that runs ``block`` met it,
        never for its negation or as a cause."""
        lp = self.cfg.loop_of(block)
        start = lp.header if lp is not None else self.cfg.entry
        if start is block:
            return self.z3.BoolVal(True)
        conds = self._incoming_conditions(start, block, t, over)
        if conds is None:
            return None
        return self.z3.Or(*conds) if len(conds) > 1 else (conds[0] if conds else self.z3.BoolVal(False))
