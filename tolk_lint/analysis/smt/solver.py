"""The solver itself: z3 imported once and lazily, one seeded tactic, and
`solve`, which checks a goal under an encoder's constraints within a
deterministic resource limit (``rlimit``, never a wall-clock timeout: the
same answer on every machine), after trying the smallest launch there is
(`_probe`: most threads that differ do so already there)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tolk_lint import budget

if TYPE_CHECKING:
    from tolk_lint.analysis.smt.encoder import Encoder

DEFAULT_RLIMIT = 10_000_000
MAX_SHRINKS = 24  # witnesses made small per kernel (each costs a few more checks: `shrink`)
# the further checks all of a kernel's witnesses may take together: a witness is
# for a person to replay, and on a kernel with many findings over hard formulas
# making every one small took longer than finding them (half of a 3,400-line
# bisection sample's time); past it, witnesses are Z3's first models
MAX_SHRINK_QUERIES = 40

STATS = {"queries": 0, "sat": 0, "unsat": 0, "unknown": 0, "seconds": 0.0, "syntactic": 0}

_z3 = None
_local = threading.local()  # this thread's Z3 context, and the tactics built in it


def _thread_context():
    """Z3's default context, one per thread.

    z3's Python API puts every term built without an explicit ``ctx=`` in
    one process-wide context, and one context must not be used from two
    threads at once. Installed as ``z3.main_ctx`` (which every such call
    goes through), this gives each thread its own: the language server
    lints documents on several threads. `fresh_context` replaces it."""
    ctx = getattr(_local, "ctx", None)
    if ctx is None:
        ctx = _local.ctx = _z3.Context()
        _local.tactics = {}
    return ctx


def tactic(name: str, build):
    """The tactic ``build(z3)`` makes, built once per context."""
    z3 = z3mod()
    ctx = _thread_context()
    tactics = _local.tactics
    got = tactics.get(name)
    if got is None or got[0] is not ctx:
        got = tactics[name] = (ctx, build(z3))
    return got[1]


def _tactic():
    """One preprocessing + bit-vector pipeline."""
    return tactic("uniform", lambda z3: z3.Then("simplify", "propagate-values", "solve-eqs", "simplify",
                                                z3.Tactic("qfufbv")))  # fmt: skip


def fresh_context() -> None:
    """Start a new Z3 context for this thread, if Z3 is loaded at all.
    Called before each kernel: what Z3 answers (its models, and so the
    witnesses printed) depends on the terms it has seen and their order, so
    a kernel's witnesses would otherwise depend on the kernels and files
    linted before it in the same process (a parallel run, the language
    server). The old context is freed with the last term that uses it."""
    fresh_witnesses()
    if _z3 is not None:
        _local.ctx = None


def fresh_witnesses(unsigned: frozenset[str] = frozenset()) -> None:
    """Give the lint run that starts now (one per launch shape) its
    `MAX_SHRINKS` small witnesses (and `MAX_SHRINK_QUERIES` checks for them).
    ``unsigned``: the parameter symbols (``param:NAME``) whose source type is
    unsigned, made small as unsigned numbers (`n = 1`, not `n = -1`)."""
    _local.shrinks = MAX_SHRINKS
    _local.shrink_queries = MAX_SHRINK_QUERIES
    _local.unsigned = unsigned
    _local.hint = {}  # the values of the run's last small witness (`shrink`'s hint)


def z3mod():
    """Import z3 once, on first use: a file whose kernels need no solver
    never loads it. The import happens inside some file's budget, which is
    given its time back (`tolk_lint.budget.not_counted`)."""
    global _z3
    if _z3 is None:
        with budget.not_counted():
            try:
                import z3  # noqa: PLC0415
            except ImportError as e:  # pragma: no cover - z3-solver is a dependency
                raise RuntimeError("tolk-lint needs the `z3-solver` package: pip install z3-solver") from e
            z3.set_param("smt.random_seed", 0)
            z3.set_param("sat.random_seed", 0)
        _z3 = z3
        z3.z3.main_ctx = z3.main_ctx = _thread_context
    return _z3


@dataclass
class Verdict:
    """A solver's answer: ``model`` is Z3's first model of a SAT answer (what
    the analyses decide with); `small_model` is one with small threads,
    trips and inputs (`shrink`), for the witness a person reads. It holds the
    ``solver`` until then, and asks it again only when a witness is shown."""

    status: str  # "unsat" | "sat" | "unknown"
    model: Any = None
    reason: str = ""
    solver: Any = field(default=None, repr=False, compare=False)
    _small: dict = field(default_factory=dict, repr=False, compare=False)

    def small_model(self, *keep):
        """A model as small as `shrink` finds, of the assertions and ``keep``
        (a disjunct the witness is for); the first model without a solver."""
        if self.solver is None or self.model is None:
            return self.model
        key = tuple(k.get_id() for k in keep)
        got = self._small.get(key)
        if got is None:
            left = getattr(_local, "shrinks", MAX_SHRINKS)
            queries = getattr(_local, "shrink_queries", MAX_SHRINK_QUERIES)
            if left <= 0 or queries <= 0:
                return self.model  # the kernel's witnesses past the first few stay as Z3 gave them
            _local.shrinks = left - 1
            from tolk_lint.analysis.smt.shrink import MAX_QUERIES, hint_of, shrink

            base = self.model
            if keep and not all(_z3.is_true(base.eval(k, model_completion=True)) for k in keep):
                return base  # not a model of the disjunct: nothing to start from
            hint = getattr(_local, "hint", {})
            got, asked = shrink(_z3, self.solver, base, keep=keep, max_queries=min(queries, MAX_QUERIES),
                                unsigned=getattr(_local, "unsigned", frozenset()), hint=hint)
            _local.hint = {**hint, **hint_of(_z3, self.solver, got)}
            self._small[key] = got
            _local.shrink_queries = queries - asked
        return got


def check_within_budget(s):
    """``s.check()``, stopped when the lint's budget (`tolk_lint.budget`)
    runs out: the solver gets what is left of it as its timeout, and an
    answer cut short by that raises `BudgetExceeded` instead of passing for
    the solver giving up. (The answer itself is bounded by ``rlimit``,
    which is the same on every machine; the timeout only ends a lint whose
    budget is spent.)"""
    budget.check("asking the solver")
    left = budget.remaining_seconds()
    if left is not None:
        s.set("timeout", max(1, int(left * 1000)))
    within = budget.current()
    cancel = within.cancel if within is not None else None
    if isinstance(cancel, budget.Cancel):  # a cancel interrupts the question (then `check` raises below)
        with cancel.stopping(s.ctx.interrupt):
            r = s.check()
        if cancel.is_set():
            budget.check("asking the solver")
        return r
    r = s.check()
    if left is not None and str(r) == "unknown":
        budget.check("asking the solver")
    return r


PROBE_RLIMIT = 100_000


def _probe(z3, s, rlimit: int):
    """``s``'s answer with its witness symbols pinned to the smallest launch
    there is (threads 0 and 1 of block 0, trip 0 of every loop, every parameter 1) when
    that has a model: SAT then, and a small witness at once. Whatever else
    (no model there, or the solver giving up within `PROBE_RLIMIT`) says
    nothing of the question, which is asked whole after it; ``s`` is left
    as it was. A question over symbolic extents and strides (a grid-stride
    loop's exit, ``i // n``) is a circuit the solver may take seconds on,
    while with its inputs constants propagation alone decides it."""
    from tolk_lint.analysis.smt.shrink import witness_symbols

    pins = []
    for x in witness_symbols(z3, s.assertions()):
        name = x.decl().name()
        if name.startswith("tid."):
            pins.append(x == (1 if name == "tid.x@t1" else 0))
        elif name.startswith(("ctaid.", "k_", "g_", "s_")):  # block 0, trip 0
            pins.append(x == 0)
        elif name.startswith("param:"):
            pins.append(x == 1)
    if not pins:
        return None
    s.push()
    try:
        s.add(*pins)
        s.set("rlimit", PROBE_RLIMIT)
        r = check_within_budget(s)
    except z3.Z3Exception:  # a resource limit surfaces here in some builds
        r = None
    finally:
        s.set("rlimit", rlimit)
    if r == z3.sat:
        return r  # the pins stay: the model is theirs, and `shrink` asks under them too
    s.pop()
    return r


def solve(enc: Encoder, goal, rlimit: int = DEFAULT_RLIMIT) -> Verdict:
    """Check ``goal`` with the encoder's constraints, deterministically."""
    z3 = enc.z3
    STATS["queries"] += 1
    start = time.perf_counter()
    # Preprocess (constants, equalities, solved variables) before the
    # bit-vector core: loop-exit constraints collapse to a few terms there.
    s = _tactic().solver()
    s.set("random_seed", 0)
    s.set("rlimit", rlimit)
    s.add(*enc.constraints)
    s.add(goal)
    try:
        r = _probe(z3, s, rlimit)
        if r != z3.sat:
            r = check_within_budget(s)
    except z3.Z3Exception as e:  # a resource limit surfaces here in some builds
        r = None
        reason = str(e)
    else:
        reason = s.reason_unknown() if r == z3.unknown else ""
    took = time.perf_counter() - start
    STATS["seconds"] += took
    STATS["max_seconds"] = max(STATS.get("max_seconds", 0.0), took)
    if r == z3.unsat:
        STATS["unsat"] += 1
        return Verdict("unsat")
    if r == z3.sat:
        STATS["sat"] += 1
        return Verdict("sat", s.model(), solver=s)
    STATS["unknown"] += 1
    return Verdict("unknown", reason=reason or "resource limit")
