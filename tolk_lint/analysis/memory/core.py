"""What every search over one kernel's shared memory shares (`MemoryCore`).

The accesses and the values their addresses are built from, the loop
shapes, the uniformity facts, the barrier phases, the program order, the
concrete pass's evaluators (one per assignment of loop trips), the kernel's
one Z3 context, and the counters the searches keep. The searches
(`races`, `bounds`, `banks`) take it; `facts.MemoryFacts` is it with the
searches' results on top.
"""

from __future__ import annotations

from typing import Any

from tolk_lint.analysis import smt
from tolk_lint.analysis.memory.accesses import Canon, collect_accesses
from tolk_lint.analysis.memory.dead_edges import DeadEdges
from tolk_lint.analysis.memory.evaluator import ThreadEval
from tolk_lint.analysis.memory.invariants import LoopInvariants
from tolk_lint.analysis.memory.loops import (
    constant_trip_count,
    geometric_counters,
    latch_selected_ivs,
    ring_counters,
    shifted_ivs,
    trip_period,
)
from tolk_lint.analysis.memory.order import ProgramOrder
from tolk_lint.analysis.memory.phases import Phases
from tolk_lint.analysis.memory.query import Query, solve_bv
from tolk_lint.analysis.memory.ranks import RankReader, ResidueReader, rank_only_dims
from tolk_lint.analysis.smt.shrink import witness_symbols
from tolk_lint.ir.cfg import Loop, cfg_of
from tolk_lint.ir.nodes import Block, Instr, Kernel, Module, Value
from tolk_lint.ir.opcodes import Opcode

O = Opcode

STATS = {"kernels": 0, "queries": 0, "seconds": 0.0, "pairs": 0}  # of this process, over every kernel


class MemoryCore:
    """One kernel's accesses, phases, evaluators and solver context: what the
    searches for races, out-of-bounds accesses and bank conflicts share."""

    def __init__(self, kernel: Kernel, module: Module | None, settings=None, target=None):
        self.k = kernel
        self.module = module
        self.settings = settings
        self.target = target
        self.cfg = cfg_of(kernel)
        self.canon = Canon(kernel)
        self.accesses = collect_accesses(kernel, self.canon)
        self.shared = [a for a in self.accesses if a.space == "shared"]
        self.addr_values: dict[str, Value] = {}
        for ins in kernel.instrs():
            if ins.op is O.ADDR and ins.attrs.get("buffer") not in self.addr_values:
                self.addr_values[ins.attrs.get("buffer")] = ins.result
        self.rlimit = getattr(settings, "solver_rlimit", None) or smt.DEFAULT_RLIMIT
        self.ivs: dict[Value, tuple[Loop, Any]] = {}
        for lp in self.cfg.loops:
            for iv in lp.ivs:
                if iv.step is not None:  # constant steps only: the address algebra needs them
                    self.ivs[iv.phi] = (lp, iv)
        # numba-cuda's range counters: a step the latch selects on its own branch condition
        self.selected_ivs = latch_selected_ivs(self.cfg)
        self.ivs.update(self.selected_ivs)
        self.shifted = shifted_ivs(self.cfg, self.ivs)
        self._evals: dict[tuple, ThreadEval] = {}
        self._same: dict[int, bool] = {}  # `_same_facts`, by id of the facts
        self._q: Query | None = None
        self._q_exact: Query | None = None
        self.order = ProgramOrder(kernel, self.cfg)
        self.geo = geometric_counters(kernel, self.canon)
        self.rings = ring_counters(kernel, self.canon)  # rotating slots: (start + k) mod S
        self.invariants = LoopInvariants(self)  # facts of the loops' header values, proved on first use
        self._const_trips: dict[Loop, int | None] = {}
        self.tid_dims = set(kernel.tid_dims())
        self.period = trip_period(kernel)
        self.concrete_cleared = 0  # pairs and accesses the concrete pass cleared without the solver
        self._info = None
        self._phases: Phases | None = None
        self._dead_edges: DeadEdges | None = None
        # a kernel that reads tid.y / tid.z only for its linear rank (cooperative
        # groups' thread_rank()) is indexed by tid.x: flat, like one that never reads them
        self.ranks = RankReader(self)  # the address polynomials the race and bounds searches read too
        self.rank_only = rank_only_dims(self.ranks, kernel) if self.tid_dims & {"y", "z"} else set()
        self.tid_dims -= self.rank_only
        self.residues = ResidueReader(self)  # the same, reading what it cannot as per-thread unknowns
        self.queries = 0  # questions asked of the solver
        self.seconds = 0.0  # spent computing the facts
        self.unknown = 0  # questions the solver gave up on
        self.truncated = False  # more candidate pairs than the race search asks about

    @property
    def info(self):
        """The workgroup level's uniformity facts (the kernel's cached analysis)."""
        if self._info is None:
            from tolk_lint.analysis.uniform import uniformity

            u = self.k.cached("uniformity", lambda k: uniformity(k, self.module, self.settings))
            self._info = u.workgroup
            self._warp_info = u.warp
        return self._info

    @property
    def warp_info(self):
        """The warp level's uniformity facts."""
        self.info  # noqa: B018
        return self._warp_info

    @property
    def phases(self) -> Phases:
        """The barrier phases, knowing the uniform two-way branches outside loops."""
        if self._phases is None:
            self._phases = Phases(self.k, self.module, self.shared)
            info = self.info
            self._phases.uniform_branches = {
                b for b in self.k.blocks
                if b.terminator is not None and b.terminator.op is O.BRANCH and not self.cfg.loops_around(b)
                and b not in info.divergent_branches and b in self.cfg.order
            }  # fmt: skip
            if self.k.launch.arguments:
                self._phases.dead_edge = self._dead_under_arguments
        return self._phases

    @property
    def dead_edges(self) -> DeadEdges:
        """The branch edges no thread takes (one query context per kernel)."""
        if self._dead_edges is None:
            self._dead_edges = DeadEdges(self)
        return self._dead_edges

    def _dead_under_arguments(self, b: Block, s: Block) -> bool:
        """A dead edge of a uniform branch whose condition reads a parameter
        the launch's arguments fix (only those: a question per branch)."""
        facts = self.k.launch.arguments
        stack, seen = list(b.terminator.args[:1]), set()
        while stack and len(seen) < 64:
            v = stack.pop()
            if v in seen or v.defn is None:
                continue
            seen.add(v)
            d = v.defn
            if d.op is O.PARAM and d.attrs.get("name") in facts:
                return self.dead_edges(b, s)
            if d.op is not O.PHI and d.op is not O.LOAD:
                stack.extend(d.args)
        return False

    @property
    def concrete_block(self) -> tuple[tuple[int, int, int] | None, bool]:
        """The block the concrete pass evaluates every thread of, and whether
        it is an assumption. Without a launch shape, a kernel that reads only
        tid.x is run as the largest flat block its bounds allow: each smaller
        flat block's threads are among its threads and compute the same
        addresses under the same conditions (ntid stays symbolic), so a pair
        cleared there is cleared for every allowed block."""
        block = self.k.launch.block
        if block is not None:
            return (block, False) if block[0] * block[1] * block[2] <= 1024 else (None, False)
        if self.tid_dims & {"y", "z"}:
            return None, False
        n = self.k.launch.threads or 1024  # .maxntid, or the launch contract's bound
        return ((n, 1, 1), True) if 0 < n <= 1024 else (None, False)

    def evaluator(self, ctx: tuple, info=None) -> ThreadEval | None:
        """The concrete pass's evaluator for the loop trips ``ctx``, over the
        uniformity facts ``info`` (the workgroup level's by default), shared
        by every rule that asks for the same."""
        block, assumed = self.concrete_block
        if block is None:
            return None
        if info is None or self._same_facts(info):
            info = self.info
        key = (info is self.info,) + tuple((id(lp),) + r for lp, r in ctx)
        ev = self._evals.get(key)
        if ev is None:
            ev = self._evals[key] = ThreadEval(self, block, info, dict(ctx), assumed=assumed)
        return ev

    def _same_facts(self, info) -> bool:
        """Whether ``info`` holds the facts an evaluator reads (varying values,
        divergent loops) exactly as the workgroup level does: then the two
        levels share evaluators (most kernels, before any Z3 proof)."""
        if info is self.info:
            return True
        got = self._same.get(id(info))
        if got is None:
            got = self._same[id(info)] = (info.varying == self.info.varying
                                          and info.divergent_loops == self.info.divergent_loops)  # fmt: skip
        return got

    def const_trips(self, lp: Loop) -> int | None:
        """The trip count of a loop with a constant start, step and bound (cached)."""
        got = self._const_trips.get(lp)
        if got is not None or lp in self._const_trips:
            return got
        count = self._const_trips[lp] = constant_trip_count(self.cfg, lp)
        return count

    def query(self, exact: bool = False) -> Query:
        """The kernel's one Z3 context (encoder, memo, trip symbols); with
        ``exact``, a second one whose counters' products are not abstracted
        (`MemoryEncoder._strided`), to confirm what the first found."""
        if exact:
            if self._q_exact is None:
                self._q_exact = Query(self, exact=True)
            return self._q_exact
        if self._q is None:
            self._q = Query(self)
        return self._q

    def solve(self, q: Query, goal, rlimit: int | None = None, fallback: bool = True) -> smt.Verdict:
        """`solve_bv` on the query's context, counted."""
        self.queries += 1
        STATS["queries"] += 1
        v = solve_bv(q.enc, goal, rlimit or self.rlimit, fallback)
        if v.status == "unknown":
            self.unknown += 1
        return v

    def model_of(self, q: Query, goal, *models):
        """A model of ``goal`` under the query's constraints, from ``models``
        (models of another question over the same symbols, the one to show
        first): the first when it evaluates to true, with no solver asked
        (every symbol a model lacks is completed, so one that passes is a
        total assignment satisfying the question); else the solver's, with
        the launch and the two threads fixed to the first model's values,
        where the products of the block and grid sizes and the trips are
        linear and cheap (the parameters, trips and loads are left free: a
        loop the pair does not need exits at its own trip, its bound chosen
        to fit), or when that has no run, with the grid one block, made
        small; else the first of the other models that evaluates to true.
        None when none of these holds: the caller asks the question whole."""
        z3 = q.z3
        models = [m for m in models if m is not None]
        if not models:
            return None
        try:
            f = z3.And(*q.enc.constraints, goal)
            if z3.is_true(models[0].eval(f, model_completion=True)):
                return models[0]
            syms = _launch_symbols(z3, f)
            pins = [x == models[0].eval(x, model_completion=True) for x in syms]
            v = self.solve(q, z3.And(goal, *pins), self.rlimit // 4)
            if v.status == "unsat":
                # the model's grid may admit no exact run (a grid of 2^32 blocks, a start
                # past every bound): the first block of a one-block grid instead
                grid = [x == (1 if x.decl().name().startswith("nctaid.") else 0)
                        for x in syms if x.decl().name().startswith(_GRID)]  # fmt: skip
                pins = [p for x, p in zip(syms, pins) if not x.decl().name().startswith(_GRID)] + grid
                v = self.solve(q, z3.And(goal, *pins), self.rlimit // 4)
            if v.status == "sat":  # made small under the fixed values (the parameters and trips a person replays)
                return v.small_model()
            return next((m for m in models[1:] if z3.is_true(m.eval(f, model_completion=True))), None)
        except z3.Z3Exception:
            return None

    def assumed_launch(self) -> str:
        """The launch shape a finding assumes, in words ("" when the launch gives it)."""
        return self.k.launch.assumed(self.tid_dims, self.rank_only)

    def shared_data_of(self, acc, varying: bool = False, any_space: bool = False) -> Instr | None:
        """A load from shared memory that ``acc``'s address is computed from
        (``varying``: only one whose value differs between threads;
        ``any_space``: a load from any memory, an input array's too), or None.
        The solver takes such a value as any value: a rank, an offset or a
        count other threads computed (a prefix sum, CUB's radix ranks), or an
        index array's entries, is constrained by the algorithm or the data,
        not by anything the analysis reads."""
        stack = [acc.addr] if acc.addr is not None else [v for v in acc.index or () if v is not None]
        seen: set = set()
        while stack and len(seen) < _SLICE:
            v = stack.pop()
            if not isinstance(v, Value) or v in seen or v.defn is None:
                continue
            seen.add(v)
            d = v.defn
            if d.op in (O.LOAD, O.ATOMIC) and (any_space or d.attrs.get("space") == "shared") and d is not acc.instr:
                if not varying or v in self.info.varying:
                    return d
            if d.op not in (O.LOAD, O.ATOMIC):
                stack.extend(d.args)
        return None


_SLICE = 256  # values an address's slice is followed through, looking for a shared load
_PINNED = ("ntid.", "tid.", "nctaid.", "ctaid.")
_GRID = ("nctaid.", "ctaid.")


def _launch_symbols(z3, e) -> list:
    """The block, grid and thread constants ``e`` mentions."""
    return witness_symbols(z3, [e], _PINNED)
