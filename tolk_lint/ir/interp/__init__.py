"""A reference interpreter of the IR: one workgroup, on the CPU.

`run` executes a kernel for the threads of one workgroup (``block``), one
thread at a time, and returns what every thread computed, whether the
workgroup would hang, and the shared-memory races and ``cp.async`` hazards it
observed. It is the ground truth of the property tests (uniformity soundness,
race completeness): slow, simple, and written from the PTX semantics, not
from the analyses.

    r = run(kernel, block=(64, 1, 1), params={"n": 40}, global_mem={"x": [1.0] * 64})
    r.hang                  # None, or a `Hang`: which barrier/collective, who arrived, who is elsewhere
    r.partial               # `PartialArrival`s: barriers/collectives completed while some threads had exited
    r.ok                    # no hang and no partial arrival
    r.values[v][tid]        # the last value thread tid computed for Value v
    r.history[v][tid]       # all of them, in order
    r.instances[v][trips]   # per dynamic instance (the trips of the loops around v): tid -> value
    r.differs(v, by="instance")   # what a uniformity soundness test compares
    r.barrier_counts[bar]   # tid -> how many times it ran that BARRIER
    r.races, r.async_hazards, r.oob, r.memory, r.local_memory, r.steps, r.notes

Not executed (`NotSupported`): CALL, OPAQUE, LDMATRIX, STMATRIX, MOVMATRIX
and sparse MMA. Unknown special registers also raise. WMMA_LOAD, MMA and
WMMA_STORE run warp-wide with a fragment layout of the interpreter's own
(`ops_tensor`).

The modules, in reading order:

- `results`: what a run gives back (`RunResult`, `Hang`, `PartialArrival`,
  `Race`, `AsyncHazard`, `OutOfBounds`) and the errors it raises
  (`NotSupported`, `InterpError`);
- `values`: how values are represented (ints wrapped, floats rounded,
  packed types as bits), converted, and encoded in memory;
- `state`: one thread's state and the signals its closures return;
- `closures`: how an instruction becomes a closure over its thread;
- `ops_arith`, `ops_convert`, `ops_memory`, `ops_control`: the semantics of
  each instruction family (values and arithmetic; conversions and bit
  ops; memory and cp.async; barriers, collectives and control flow);
- `compiler`: a kernel compiled to those closures, block by block;
- `memory`: the address space, where each buffer lives, loads and stores;
- `races`: the shared-memory race detector and the cp.async hazard kinds;
- `async_copy`: cp.async copies in flight and when they land;
- `collectives`: what a completed barrier or warp collective computes;
- `ops_tensor`: the tensor-core ops (wmma.load, mma, wmma.store) of a warp;
- `scheduler`: how threads advance, when barriers and collectives
  complete, hangs;
- `machine`: the machine of one run, assembled from the parts above, and
  `run`.

Imports: of tolk_lint, only the IR (`tolk_lint.ir.nodes`, `opcodes`, `cfg`),
never the analyses it judges.
"""

from __future__ import annotations

from tolk_lint.ir.interp.machine import run
from tolk_lint.ir.interp.results import (
    AsyncHazard,
    Hang,
    InterpError,
    NotSupported,
    OutOfBounds,
    PartialArrival,
    Race,
    RunResult,
)

__all__ = [
    "AsyncHazard", "Hang", "InterpError", "NotSupported", "OutOfBounds", "PartialArrival", "Race",
    "RunResult", "run",
]  # fmt: skip
