"""The analyses: per-kernel facts the rules query, computed on the IR.

- `uniform` (with `uniformity_info`, `buffers`): which values are the same
  in every thread of a workgroup, a warpgroup or a warp, which branches
  diverge, which loops' trips may differ; `placements`: where each barrier,
  collective and tensor-core op may run without the threads it needs
  (TL1xx);
- `mbarriers`: which ``mbarrier`` arrives order memory like a barrier;
  `wgmma`: the warpgroup MMA group queue (accumulators read too early);
- `memory`: shared- and local-memory accesses, what orders them, races,
  bounds, bank conflicts and cp.async hazards (TL2xx);
- `stage`: which operands could be staged through shared memory, at what
  depth, and decoded panels on the host (TL3xx, TL4xx);
- `smt`: the one package that talks to Z3, used by the others.

The analyses import the IR, the targets and the configuration, never the
rules, the engine or the outputs; none of them prints.
"""
