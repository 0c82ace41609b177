"""Z3: the one package that talks to the solver (imported lazily).

The question it answers: *can this value differ between two threads of one
workgroup (or one warp), given the same uniform inputs?* It encodes the IR
for two threads (``t = 0, 1``) as bit-vectors with the wrap-around semantics
of PTX (Python integers get a 128-bit domain, so their arithmetic does not
wrap: ``range(a, b)`` runs ``b - a`` trips), asserts what is known of the
launch, and asks for a model where the two copies differ.

- UNSAT: the value is the same in both threads: *proved uniform*.
- SAT: a **witness** -- the two threads, the inputs, the trip.
- UNKNOWN: the deterministic resource limit (``rlimit``, fixed seed; never a
  wall-clock timeout, so CI is not flaky) ran out: the caller keeps the
  conservative verdict and says the solver gave up.

How values are encoded (`Encoder.enc`):

- constants are literals; kernel parameters, block and grid sizes, block
  indices are *shared* symbols (the same in both threads); ``tid.*`` are
  per-thread symbols with ``0 <= tid.d < ntid.d``, ``laneid`` and linear ids
  derived from them;
- pure arithmetic is encoded structurally; floating-point operations and
  ``PURE`` functions are uninterpreted functions (equal inputs, equal
  outputs: sound, and cheap);
- a loop's induction variable at trip ``k`` is ``start + step * k``, where
  ``k`` is one trip index both threads share (the question is asked at the
  same trip in both); after the loop, it is ``start + step * T_t`` with
  ``T_t`` the thread's own exit trip, pinned by the exit test;
- a PHI at a join is an if-then-else over the path conditions of its
  incoming edges, computed over the region from the join's dominator;
- a load whose memory no thread changes under it (a read-only buffer, or
  shared memory every write to which a barrier orders before the load) is
  an uninterpreted function of its address: two threads reading one address
  read one value (`s[tid & 0]` is uniform);
- anything else the uniformity analysis calls uniform is one shared symbol;
  anything it calls varying, one symbol per thread.

Cheap checks come first: a value with no per-thread symbol in its encoding
is uniform without asking Z3 (`_syntactically_shared`).

Modules, in reading order: `solver` (z3, the seeded tactic, `solve`,
`Verdict`, the statistics), `float_compare` (one free predicate per float
relation), `bit_ops` (`clz`, `brev`, `bfind`, `ffs` as exact terms),
`lane_ranks` (the facts about a lane's rank among the set bits below it),
`paths` (`PathConditions`: path conditions and joins, mixed into the
encoder), `encoder` (`Encoder`), `questions` (what the
uniformity analysis asks, and witnesses), `masks` (whether a warp
collective's mask names only lanes that run it). The package imports the IR and
the analysis's shared types (`tolk_lint.analysis.buffers`,
`tolk_lint.analysis.uniformity_info`); nothing imports it but the analyses.
"""

from tolk_lint.analysis.smt.encoder import MAX_NODES, Encoder
from tolk_lint.analysis.smt.masks import mask_names_its_lanes
from tolk_lint.analysis.smt.paths import REGION_LIMIT
from tolk_lint.analysis.smt.questions import (
    _assume,
    inputs_text,
    loop_trips_uniform,
    value_uniform,
    witness_of,
)
from tolk_lint.analysis.smt.solver import (
    DEFAULT_RLIMIT,
    STATS,
    Verdict,
    check_within_budget,
    fresh_context,
    solve,
    tactic,
    z3mod,
)

__all__ = [
    "DEFAULT_RLIMIT", "MAX_NODES", "check_within_budget", "REGION_LIMIT", "STATS", "Encoder", "Verdict", "_assume",
    "fresh_context", "inputs_text", "loop_trips_uniform", "tactic", "mask_names_its_lanes", "solve", "value_uniform", "witness_of", "z3mod",
]  # fmt: skip
