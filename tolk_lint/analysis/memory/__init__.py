"""Shared memory: accesses, barrier phases, happens-before, and the cp.async
group queue; the facts behind TL201 (shared-race), TL202
(shared-out-of-bounds), TL203 (bank-conflict) and TL204 (async-copy-hazard).

They are computed once per kernel by `memory_facts` (what
`RuleContext.memory()` calls and caches); each kind of fact is computed on
first use (`MemoryFacts.races`, `out_of_bounds`, `bank_conflicts`). Each
module's docstring explains its part of the analysis.

The modules, in reading order (at run time each imports only modules above
it):

- `accesses`: every shared or local access (`Access`): its kind, its
  buffer, its footprint; how findings name instructions, buffers and lines.
- `loops`: loop shapes read off the IR: constant trip counts, shifted,
  geometric and rotating (ring) counters, compilers' magic divisions, the
  trip period.
- `narrow_counters`: a `short`/`char` loop counter nvcc keeps in several
  forms (`ib << 16`, `(int) ib`), each a form of one `start + k * step`.
- `warp_masks`: which pairs of lanes each warp sync orders (`LaneClasses`).
- `phases`: barrier phases (`Phases`): which accesses a barrier-free stretch
  reaches, at which loop trips relative to its start.
- `copies`: the cp.async group queue: the phases a copy is still pending in.
- `order`: program order of two accesses of one thread.
- `encoder`: the Z3 encoder of the memory queries (two threads): closed
  forms of counters, loads of one word that read one value.
- `query`: one Z3 context per kernel: trips, paths, footprints and bounds of
  accesses as terms; the bit-blasting solver they are asked through.
- `invariants`: the ranges a loop's header values keep (and counters that
  move together), proved by induction; assumed by the queries.
- `evaluator`: the concrete pass's evaluator: a value for every thread of
  the block at once.
- `core`: `MemoryCore`, what every search over one kernel shares.
- `concrete`: the concrete pass over a pair of accesses.
- `race_findings`: `Race`, and how a race's witness and kind are found.
- `races`: the race search (TL201, TL204).
- `bounds`: the out-of-bounds search (TL202).
- `banks`: bank conflicts (TL203).
- `phrases`: phrases the memory rules share.
- `facts`: `MemoryFacts`, the facade the rules read.

Imports: the IR (`tolk_lint.ir`), `tolk_lint.analysis.buffers`,
`uniform`, `uniformity_info` and `smt`, and `tolk_lint.diagnostics.where`
(how messages name a line); never the rules, the registry or the engine.
"""

from __future__ import annotations

from tolk_lint.analysis.memory.accesses import Access, collect_accesses, pretty_buffer, source_key
from tolk_lint.analysis.memory.banks import BankConflict
from tolk_lint.analysis.memory.bounds import OutOfBounds
from tolk_lint.analysis.memory.copies import PendingWalk
from tolk_lint.analysis.memory.core import STATS
from tolk_lint.analysis.memory.facts import MemoryFacts, memory_facts
from tolk_lint.analysis.memory.phases import Phases
from tolk_lint.analysis.memory.phrases import access_at, access_text, solver_note, verb
from tolk_lint.analysis.memory.race_findings import Race, races_by_line

__all__ = [
    "STATS", "Access", "BankConflict", "MemoryFacts", "OutOfBounds", "PendingWalk", "Phases", "Race",
    "access_at", "access_text", "collect_accesses", "memory_facts", "pretty_buffer", "races_by_line", "solver_note",
    "source_key", "verb",
]  # fmt: skip
