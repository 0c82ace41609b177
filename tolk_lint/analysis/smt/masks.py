"""Does a warp collective's mask name only lanes that run it?

A ``*.sync`` collective (``shfl``, ``vote``, ``match``, ``redux``,
``bar.warp.sync``) under control that splits the warp is correct when every
lane its mask names executes the same instance of it, and the executing lane
is one of them (PTX: undefined otherwise). `mask_names_its_lanes` asks Z3
for two lanes ``t0``, ``t1`` of one warp, at the same trips of the loops
around the op, such that ``t0`` runs it and either ``t0``'s mask lacks its
own lane, or names ``t1``'s lane while ``t1`` does not run it. UNSAT proves
the mask right.

The mask is followed through registers: constants, lane arithmetic (what
cooperative groups' ``tiled_partition<N>`` computes from ``%laneid``), and
the results of the collectives that name the lanes running with them, in
thread ``t0`` and with respect to ``t1``'s lane (`MaskEncoder`):

- ``activemask`` at Q: ``t0``'s own bit is set; ``t1``'s bit only if ``t1``
  runs Q at this instance (``E1[Q]``) -- what ``__activemask()`` and
  ``coalesced_threads()`` return;
- ``vote.ballot p, m`` at Q: ``t0``'s bit is ``p0``; ``t1``'s bit is set
  exactly when ``t1`` runs Q, its lane is in ``m`` and ``p1`` holds;
- ``match.any v, m`` at Q: ``t1``'s bit exactly when ``t1`` runs Q, is in
  ``m`` and ``v1 == v0`` (``binary_partition``, ``labeled_partition``);
  ``match.all``: only when, never if not.

"``t1`` runs P" is a free Boolean ``E1[P]`` bounded from below: it holds
when ``t1`` reaches P from the entry through loops whose trips do not vary
within the warp, or from an anchor Q it runs (``E1[Q]``) along the paths of
one trip (the lanes that ran ``activemask`` together go on to the shuffle).
Every real execution is a model, so UNSAT is a proof; the one assumption is
the tool's own: lanes that meet at an op are at the same trips of the loops
around it. A collective result the encoding does not follow (a shuffled or
loaded mask, a parameter) stays a free value, and the question is SAT.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from tolk_lint.analysis.smt.encoder import MAX_NODES, Encoder
from tolk_lint.analysis.smt.questions import _assume, _carried, loop_trips_uniform, witness_of
from tolk_lint.analysis.smt.solver import DEFAULT_RLIMIT, solve, z3mod
from tolk_lint.analysis.uniformity_info import Proof
from tolk_lint.ir.cfg import Loop, cfg_of
from tolk_lint.ir.nodes import Block, Instr, Kernel, Value
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.uniformity_info import UniformityInfo

log = logging.getLogger("tolk_lint.smt")
O = Opcode


class MaskEncoder(Encoder):
    """An `Encoder` whose thread 0 reads the lane masks collectives return
    with respect to thread 1's lane (see the module docstring); ``anchors``
    collects, per block that holds such a collective, the Boolean "thread 1
    runs it at this instance"."""

    def __init__(self, kernel: Kernel, info: UniformityInfo, point: Block):
        super().__init__(kernel, info, "warp", point=point)
        z3 = self.z3
        self.lanes = [z3.URem(self.linear(t), 32) for t in (0, 1)]
        self.anchors: dict[Block, object] = {}

    def bit(self, mask, t: int):
        """Whether ``mask`` (32 bits) names thread ``t``'s lane."""
        z3 = self.z3
        m = self.fit(self._bv(mask), 32)
        return z3.Extract(0, 0, z3.LShR(m, self.lanes[t])) == 1

    def runs(self, block: Block):
        """``E1[block]``: thread 1 runs ``block`` at the instance thread 0 does."""
        got = self.anchors.get(block)
        if got is None:
            got = self.anchors[block] = self.fresh(f"runs_{block.name}", "pred", 1)
        return got

    def _encode_one(self, v: Value, t: int):
        d = v.defn
        if d is None or d.block is None or v.index != 0 or self.nodes > MAX_NODES:
            return super()._encode_one(v, t)
        if d.op is O.ACTIVEMASK or (d.op is O.VOTE and d.attrs.get("mode") == "ballot") or d.op is O.MATCH:
            if d.attrs.get("sync") is False or not self._same_instance(d.block):
                return super()._encode_one(v, t)
            self.nodes += 1
            return self._lane_mask(d) if t == 0 else self._partner_mask(d)
        return super()._encode_one(v, t)

    def _partner_mask(self, d: Instr):
        """Thread 1's result: the one thread 0 got when the two ran the op
        together (each named in the other's mask: they synchronised, and a
        collective returns one lane mask to the lanes it synchronises; for
        ``match.any``, to the lanes of one group), else a value of its own."""
        z3 = self.z3
        r1 = self.fresh(f"lanes_{d.op.value}", "b32", 1)
        r0 = self.enc(d.results[0], 0)
        if d.op is O.ACTIVEMASK:
            together = self.bit(r0, 1)
        else:
            together = z3.And(self.runs(d.block), self.bit(self.enc(d.args[1], 0), 1))
            if d.op is O.MATCH:
                together = z3.And(together, self.bit(r0, 1))
        self.constraints.append(z3.Implies(together, r1 == self.fit(self._bv(r0), 32)))
        return r1

    def _same_instance(self, block: Block) -> bool:
        """The loops around ``block`` all hold the point: one instance of it
        per trip both threads share."""
        return all(lp in self.trips for lp in self.cfg.loops_around(block))

    def _lane_mask(self, d: Instr):
        z3 = self.z3
        r = self.fresh(f"lanes_{d.op.value}", "b32", 0)
        e1 = self.runs(d.block)
        own, other = self.bit(r, 0), self.bit(r, 1)
        c = self.constraints
        if d.op is O.ACTIVEMASK:
            c += [own, z3.Implies(other, e1)]
            return r
        m0 = self.enc(d.args[1], 0)
        named = z3.And(e1, self.bit(m0, 1))
        if d.op is O.VOTE:
            c += [own == self.as_bool(self.enc(d.args[0], 0)),
                  other == z3.And(named, self.as_bool(self.enc(d.args[0], 1)))]  # fmt: skip
            return r
        a0, a1 = self._bv(self.enc(d.args[0], 0)), self._bv(self.enc(d.args[0], 1))
        same = a0 == a1
        if d.attrs.get("mode") == "any":
            c += [own, other == z3.And(named, same)]
        else:  # match.all: the mask when every named lane agrees, else 0
            c.append(z3.Implies(other, z3.And(named, same)))
        return r


def mask_names_its_lanes(kernel: Kernel, ins: Instr, mask: Value, info: UniformityInfo,
                         rlimit: int = DEFAULT_RLIMIT) -> Proof:  # fmt: skip
    """Whether ``mask``, the mask operand of collective ``ins``, names only
    lanes that run ``ins`` with the lane that does ("uniform": proved;
    "varying" with the two lanes as witness; "unknown")."""
    try:
        z3 = z3mod()
        enc = MaskEncoder(kernel, info, ins.block)
        _assume(enc)
        here = ins.block
        reach0 = _reaches(enc, here, 0)
        if reach0 is not None:
            enc.constraints.append(reach0)
        m0 = enc.enc(mask, 0)
        e1 = z3.Bool("runs_op@t1")
        enc.per_thread_symbols.add("runs_op@t1")
        _bound_anchors(enc, here)
        # lower bounds of E1[P]: from the entry, and from each anchor
        starts = [(enc.cfg.entry, z3.BoolVal(True))] + list(enc.anchors.items())
        named = _named_loops(kernel, ins, mask, info, rlimit)
        for start, runs_start in starts:
            path = _path_from(enc, start, here, 1, named, enc.bit(m0, 1), runs_start)
            if path is not None:
                enc.constraints.append(z3.Implies(z3.And(runs_start, path), e1))
        goal = z3.Or(z3.Not(enc.bit(m0, 0)), z3.And(enc.bit(m0, 1), z3.Not(e1)))
        verdict = solve(enc, goal, rlimit)
        if verdict.status == "unsat":
            return Proof("uniform", None, "the mask names only lanes that run it")
        if verdict.status == "sat":
            model = verdict.small_model()
            lanes = [model.eval(x, model_completion=True).as_long() for x in enc.lanes]
            own = z3.is_false(model.eval(enc.bit(m0, 0), model_completion=True))
            value = model.eval(enc.fit(enc._bv(m0), 32), model_completion=True).as_long()
            w = witness_of(enc, model, {"lanes": lanes, "mask": value, "own_lane_missing": own})
            block = [model.eval(c, model_completion=True).as_long() for c in enc.ctaid]
            if any(block):
                # lane arithmetic on a global index wraps in far blocks: say which
                w["ctaid"] = block
                head, sep, tail = w["description"].partition(" when ")
                w["description"] = f"{head} of block ({block[0]},{block[1]},{block[2]}){sep}{tail}"
            w["description"] += f", mask 0x{value:08x}"
            return Proof("varying", w)
        return Proof("unknown", None, f"the solver gave up ({verdict.reason})")
    except Exception as e:  # noqa: BLE001 - never let the solver crash a lint
        log.debug("smt: mask query failed: %r", e, exc_info=True)
        return Proof("unknown", None, f"the solver could not encode it ({type(e).__name__})")


def _bound_anchors(enc: MaskEncoder, here: Block, limit: int = 64) -> None:
    """Bound each anchor's ``E1`` from below as the op's is: thread 1 runs
    an anchor when it runs the entry or another anchor and takes a path of
    one trip from there to it; and from above by what running it implies
    (`_reaches`). Without it, the collective a mask went
    through (the first ballot of ``coalesced_group::ballot``, whose result
    the second is guarded by) could be taken as run by thread 0 alone, its
    result in thread 1 free. Encoding a path may meet new anchors: they are
    bounded in turn, up to ``limit``."""
    z3 = enc.z3
    done: set[Block] = set()
    while len(done) < limit:
        pending = [a for a in enc.anchors if a not in done and a is not here]
        if not pending:
            return
        for a in pending:
            done.add(a)
            reach = _reaches(enc, a, 1)  # and from above: what running it implies (a witness's lanes ran it)
            if reach is not None:
                enc.constraints.append(z3.Implies(enc.runs(a), reach))
            starts = [(enc.cfg.entry, z3.BoolVal(True))] + [(b, e) for b, e in list(enc.anchors.items()) if b is not a]
            for start, runs_start in starts:
                path = _path_from(enc, start, a, 1, runs_start=runs_start)
                if path is not None:
                    enc.constraints.append(z3.Implies(z3.And(runs_start, path), enc.runs(a)))


def _reaches(enc: Encoder, block: Block, t: int):
    """What thread ``t`` running ``block`` at the shared trips implies: it
    entered each loop around it and had not left it a trip before, and took
    a path to ``block`` in the innermost one (None: nothing known)."""
    z3 = enc.z3
    terms = []
    for lp in enc.cfg.loops_around(block):
        ent = enc.loop_entry_condition(lp, t)
        if ent is not None:
            terms.append(ent)
        k = enc.trips[lp][t]
        prev = enc.exits_at(lp, t, k - 1)
        if prev is not None:
            terms.append(z3.Or(k == 0, z3.Not(prev)))
    pc = enc.path_condition(block, t)
    if pc is not None:
        terms.append(pc)
    return z3.And(*terms) if terms else None


def _named_loops(kernel: Kernel, ins: Instr, mask: Value, info: UniformityInfo, rlimit: int) -> set[Loop]:
    """The loops around ``ins`` whose trips may differ within the warp but
    not between two lanes its ``mask`` names: a mask fixed before the loop
    (``tiled_partition(block, 16)`` of a block that ends in a partial tile,
    whose loop over ``g.size()`` runs fewer trips in the short tile). For
    each, `loop_trips_uniform` under the hypothesis that thread 0's mask
    names thread 1's lane; cached per loop and mask."""
    cfg = cfg_of(kernel)
    d = mask.defn
    cache = kernel.cached("named_loop_proofs", lambda k: {})
    out = set()
    for lp in cfg.loops_around(ins.block):
        if lp not in info.divergent_loops or d is None or d.block is None or d.block in lp.blocks:
            continue
        key = (lp, mask, id(info))
        if key not in cache:
            def names_t1(enc: Encoder, m=mask):
                z3 = enc.z3
                lane1 = z3.URem(enc.linear(1), 32)
                return z3.Extract(0, 0, z3.LShR(enc.fit(enc._bv(enc.enc(m, 0)), 32), lane1)) == 1

            cache[key] = loop_trips_uniform(kernel, lp, info, "warp", rlimit, hypothesis=names_t1).verdict
        if cache[key] == "uniform":
            out.add(lp)
    return out


def _path_from(enc: Encoder, start: Block, block: Block, t: int, named: set[Loop] = frozenset(), names_t=None,
               runs_start=True):  # fmt: skip
    """A condition under which thread ``t``, having run ``start`` at this
    instance, runs ``block`` at it too: the paths of one trip from ``start``
    into ``block``, through loops entered on the way whose trips do not vary
    within the warp, or (``named``) do not vary between two lanes the mask
    names, when it names thread ``t`` (``names_t``; ``runs_start``: the
    condition that thread ``t`` ran ``start``). None when there is none we
    can tell."""
    z3 = enc.z3
    cfg = enc.cfg
    around_start = cfg.loops_around(start)
    around = cfg.loops_around(block)
    if not set(around_start) <= set(around):
        return None
    entered: list[Loop] = [lp for lp in reversed(around) if lp not in around_start]
    if any(lp in enc.info.divergent_loops and lp not in named for lp in entered):
        return None
    terms = [names_t] if any(lp in enc.info.divergent_loops for lp in entered) else []
    cur = start
    for lp in entered:
        c = enc.enters(cur, lp, t)
        if c is None:
            return None
        terms.append(c)
        cur = lp.header
        if lp in enc.info.divergent_loops:
            # what `_named_loops` proved by induction: a named lane that
            # entered the loop with this one carries the values its exits
            # read equal at every trip (its path into the op at trip k
            # reads them: a `while` loop's test at the header)
            same = [enc.enc(v, 0) == enc.enc(v, t) for v, _, _ in _carried(lp, enc.info)]
            if same:
                enc.constraints.append(z3.Implies(z3.And(runs_start, *terms), z3.And(*same)))
    if cur is not block:
        conds = enc._incoming_conditions(cur, block, t)
        if conds is None:
            return None
        terms.append(z3.Or(*conds) if len(conds) > 1 else (conds[0] if conds else z3.BoolVal(False)))
    return z3.And(*terms) if terms else z3.BoolVal(True)


