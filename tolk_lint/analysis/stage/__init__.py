"""Staging: which operands of a kernel could be read through shared memory,
and at what depth.

This package owns the staging analysis behind TL301 (stageable-operand),
TL302 (synchronous-staging), TL303 (staging-does-not-fit) and TL401
(redecoded-operand), and the facts the ``tolk-lint stage`` report prints.
Its public functions are pure functions of a kernel (its IR), a `Target`
and the settings.

What "stageable at depth d" means
---------------------------------
A staged kernel copies, at every trip of its loop, the tile of global memory
an operand reads into shared memory, once for the whole workgroup and 16
bytes a thread a copy; its cores then read their fragments from there.
Staging never rounds: a staged kernel computes the same bits as the kernel
it stages, only reading each element of the tile once instead of once a warp.
An operand is stageable at depth d, the number of stages its core's tiles take:

- 2 where the target copies asynchronously (``cp.async``, sm_80 and later)
  and two stages of the core's tiles fit the shared budget beside what the
  kernel's other shared buffers already use: the copies of trip k + 1 run
  while trip k computes;
- 1 where one stage fits (and the target has no asynchronous copy, or two
  stages do not fit);
- 0 where neither fits, where there is no tile, where a tile holds less than
  one 16-byte copy, where the target has no workgroup threads or no shared
  memory, or where staging is turned off (``Settings.stage``).

The budget is the 48 KiB of static shared memory a block may declare (a
staged kernel declares its stages as static shared arrays, and the assembler
refuses more than that), or the opt-in maximum when
``Settings.shared_budget`` is ``"optin"``.

An operand has a tile only when it reads global memory at every trip of its
loop, and the terms of its index that read the workgroup's threads and the
thread's lanes form a dense box of strided dimensions (every element read
exactly once) that no other range mixes into; every verdict that is not
stageable says why.

The public functions
--------------------
- `depth`, `depth_reason`, `limited_by_budget`: the depth of a core's tiles
  on a target, why, and whether the budget is what holds it below 2.
- `tile`, `tile_of_splits`, `core_threads`, `CoreShape`: the splits that give
  a core its staged tile (warp tile 64x64, 2x2 warps, K unrolled to 32,
  halving while too few threads are kept).
- `operands` (kernel, target): one `OperandVerdict` per operand of each
  tensor core (PTX ``mma``/``wmma.mma``) and of each sum of products (Python
  ``acc += A[i, k] * B[k, j]``, or the chain of ``fma`` nvcc unrolls
  ``sum += A[row * N + k] * B[k * N + col]`` to, each PTX factor named by
  the pointer parameter it reads); `admits`: every such operand is stageable;
  `group_by_line`: one verdict per source line.
- `tile_copies` (kernel, target): loops that copy a tile global -> registers
  -> shared at every trip, then barrier and read it (TL302, TL303).
- `decodes` (kernel, target): host kernels whose decoded operand is decoded
  again in every trip of an output loop that does not read it (TL401).
- `staging_facts` (kernel, module, settings, target): all of the above for
  one kernel, computed once (``RuleContext.staging()`` caches it).

Modules, in reading order
-------------------------
- `stages`: how many stages fit (`depth`), and why.
- `tiles`: the splits of a core's staged tile (`tile`).
- `polynomials`: thread functions and the polynomials over atoms addresses
  are read as.
- `index`: `IndexEval`, from IR values to those polynomials.
- `box`: the box a set of loads spans over the threads and lanes, and whether
  it is injective and dense.
- `source`: the user's view (source lines, loop trip counts, buffer names).
- `trace`: from a core or a sum of products back to the loads it reads.
- `stageable`: the verdict of every operand (`operands`, TL301).
- `copies`: the tile copies a kernel already makes (`tile_copies`, TL302, TL303).
- `panels`: decoded panels on the host (`decodes`, TL401).
- `facts`: `staging_facts`, everything above for one kernel.

Imports: the IR (``tolk_lint.ir``), the targets (``tolk_lint.target``) and
the settings (``tolk_lint.config``); never the rules or the engine.
"""

from __future__ import annotations

from tolk_lint.analysis.stage.box import Box, Dim, Leaf, box_of
from tolk_lint.analysis.stage.copies import TileCopy, tile_copies
from tolk_lint.analysis.stage.facts import StagingFacts, staging_facts
from tolk_lint.analysis.stage.index import IndexEval, launch_block, thread_env
from tolk_lint.analysis.stage.panels import DecodeVerdict, decodes
from tolk_lint.analysis.stage.polynomials import Atom, Poly, Unstageable, p_str, p_tf, tf, tf_str
from tolk_lint.analysis.stage.source import display_name, loop_line, loop_trips, source_line
from tolk_lint.analysis.stage.stageable import OperandVerdict, admits, group_by_line, operands
from tolk_lint.analysis.stage.stages import (
    COPY_BYTES,
    SIDE_BY_SIDE,
    budget_bytes,
    depth,
    depth_reason,
    limited_by_budget,
)
from tolk_lint.analysis.stage.tiles import CoreShape, core_threads, tile, tile_of_splits

__all__ = [
    "COPY_BYTES",
    "SIDE_BY_SIDE",
    "Atom",
    "Box",
    "CoreShape",
    "DecodeVerdict",
    "Dim",
    "IndexEval",
    "Leaf",
    "OperandVerdict",
    "Poly",
    "StagingFacts",
    "TileCopy",
    "Unstageable",
    "admits",
    "box_of",
    "budget_bytes",
    "core_threads",
    "decodes",
    "depth",
    "depth_reason",
    "display_name",
    "group_by_line",
    "launch_block",
    "limited_by_budget",
    "loop_line",
    "loop_trips",
    "operands",
    "p_str",
    "p_tf",
    "source_line",
    "staging_facts",
    "tf",
    "tf_str",
    "thread_env",
    "tile",
    "tile_copies",
    "tile_of_splits",
]
