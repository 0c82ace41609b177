"""The solver itself: z3 imported once and lazily, one seeded tactic, and
`solve`, which checks a goal under an encoder's constraints within a
deterministic resource limit (``rlimit``, never a wall-clock timeout: the
same answer on every machine)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tolk_lint.analysis.smt.encoder import Encoder

DEFAULT_RLIMIT = 10_000_000

STATS = {"queries": 0, "sat": 0, "unsat": 0, "unknown": 0, "seconds": 0.0, "syntactic": 0}

_z3 = None
_TACTIC = None


def _tactic():
    """One preprocessing + bit-vector pipeline, built once."""
    global _TACTIC
    if _TACTIC is None:
        z3 = z3mod()
        _TACTIC = z3.Then("simplify", "propagate-values", "solve-eqs", "simplify", z3.Tactic("qfufbv"))
    return _TACTIC


def z3mod():
    """Import z3 once, on first use (the CLI starts without it)."""
    global _z3
    if _z3 is None:
        try:
            import z3  # noqa: PLC0415
        except ImportError as e:  # pragma: no cover - z3-solver is a dependency
            raise RuntimeError("tolk-lint needs the `z3-solver` package: pip install z3-solver") from e
        z3.set_param("smt.random_seed", 0)
        z3.set_param("sat.random_seed", 0)
        _z3 = z3
    return _z3


@dataclass
class Verdict:
    status: str  # "unsat" | "sat" | "unknown"
    model: Any = None
    reason: str = ""


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
        r = s.check()
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
        return Verdict("sat", s.model())
    STATS["unknown"] += 1
    return Verdict("unknown", reason=reason or "resource limit")
