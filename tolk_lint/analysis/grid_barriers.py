"""Grid-wide barriers: the points after which every thread of the launch sees
what every thread wrote to global memory before, and before which every
thread's reads are done.

Three forms:

- Numba's ``cuda.cg.this_grid().sync()``: a BARRIER of kind ``grid``;
- any barrier of a launch of one block (the grid is known to be (1,1,1):
  the block is the whole launch);
- cooperative groups' ``grid.sync()`` in PTX, which nvcc inlines as a
  block barrier, one thread of each block arriving on the grid's counter
  and spinning until every block has, and a second block barrier::

      B1: barrier.sync 0
          @!master bra B2
          atom.add.release.gpu.u32 %old, [%bar], %inc     %bar from %envreg1/2
      spin: ld.acquire.gpu.u32 %now, [%bar]  ...  @%p bra spin
      B2: barrier.sync 0

  B2 is the grid barrier: no block passes it before every block has
  passed B1. It counts only when nothing between B1 and B2 touches memory
  but the grid's counter (whose address comes from the ``%envreg``
  registers the launch sets for a cooperative kernel): a store or a load
  of other memory there would sit on neither side.

`grid_barriers` returns the set (cached on the kernel); `uniform` uses it to
call a load of global memory uniform when every write that may reach it is
ordered by one of them (a convergence test every thread reads after
``grid.sync()``).
"""

from __future__ import annotations

from tolk_lint.analysis.buffers import is_barrier
from tolk_lint.ir.cfg import CFG, cfg_of
from tolk_lint.ir.nodes import Block, Instr, Kernel, Value
from tolk_lint.ir.opcodes import MEMORY_WRITES, Opcode

O = Opcode

_ADDRESS_WALK = 16  # definitions followed from an address to the registers it comes from


def grid_barriers(kernel: Kernel) -> frozenset[Instr]:
    """The kernel's barriers that order global memory across the whole grid."""
    return kernel.cached("grid_barriers", _find)


def _find(kernel: Kernel) -> frozenset[Instr]:
    barriers = [ins for ins in kernel.instrs() if is_barrier(ins) and ins.op is O.BARRIER]
    if not barriers:
        return frozenset()
    grid = getattr(kernel.launch, "grid", None)
    if grid is not None and all(r is not None and tuple(r) == (1, 1) for r in grid):
        return frozenset(barriers)  # one block: its barriers are the launch's
    out = {ins for ins in barriers if ins.attrs.get("kind") == "grid"}
    if kernel.language == "ptx":
        cfg = cfg_of(kernel)
        for ins in kernel.instrs():
            if ins.op is O.ATOMIC and on_grid_counter(ins):
                b2 = _inlined_grid_sync(cfg, ins)
                if b2 is not None:
                    out.add(b2)
    return frozenset(out)


def on_grid_counter(ins: Instr) -> bool:
    """A memory access to the grid barrier's own counter (its address from
    the ``%envreg`` registers): memory the driver sets aside for the
    cooperative launch, never one of the kernel's buffers."""
    return bool(ins.args) and _from_grid_workspace(ins.args[0])


def _from_grid_workspace(addr: Value) -> bool:
    """The address is computed from ``%envreg`` registers (the cooperative
    launch's grid workspace) and constants only."""
    seen = 0
    stack = [addr]
    found = False
    while stack:
        v = stack.pop()
        seen += 1
        if seen > _ADDRESS_WALK:
            return False
        d = v.defn
        if d is None:
            return False
        if d.op is O.SPECIAL:
            if not str(d.attrs.get("name", "")).startswith("envreg"):
                return False
            found = True
        elif d.op is not O.CONST:
            if d.op in MEMORY_WRITES or d.op in (O.LOAD, O.PHI, O.CALL, O.OPAQUE, O.PARAM):
                return False
            stack.extend(d.args)
    return found


def _inlined_grid_sync(cfg: CFG, arrive: Instr) -> Instr | None:
    """B2 of the pattern around ``arrive`` (module docstring), or None."""
    b1 = _barrier_before(cfg, arrive)
    b2 = _barrier_after(cfg, arrive)
    if b1 is None or b2 is None or not _only_the_counter_between(b1, b2):
        return None
    return b2


def _barrier_before(cfg: CFG, ins: Instr) -> Instr | None:
    """The last barrier every path to ``ins`` passes: up the dominator tree."""
    b: Block | None = ins.block
    upto = b.instrs.index(ins)
    while b is not None:
        for x in reversed(b.instrs[:upto]):
            if is_barrier(x):
                return x if x.op is O.BARRIER else None
        nb = cfg.idom.get(b)
        if nb is None or nb is b:
            return None
        b, upto = nb, len(nb.instrs)
    return None


def _barrier_after(cfg: CFG, ins: Instr) -> Instr | None:
    """The first barrier every path from ``ins`` passes: down the post-dominator tree."""
    b: Block | None = ins.block
    start = b.instrs.index(ins) + 1
    while b is not None:
        for x in b.instrs[start:]:
            if is_barrier(x):
                return x if x.op is O.BARRIER else None
        nb = cfg.ipdom.get(b)
        if nb is None or nb is b:
            return None
        b, start = nb, 0
    return None


def _only_the_counter_between(b1: Instr, b2: Instr) -> bool:
    """Every instruction on a path from ``b1`` to ``b2`` leaves memory alone
    but the grid workspace, and no path leaves the kernel or meets another
    barrier on the way."""
    seen: set[Block] = set()
    work = [(b1.block, b1.block.instrs.index(b1) + 1)]
    while work:
        b, start = work.pop()
        for x in b.instrs[start:]:
            if x is b2:
                break
            if is_barrier(x) or x.op in (O.RET, O.EXIT, O.CALL, O.OPAQUE):
                return False
            if (x.op in MEMORY_WRITES or x.op is O.LOAD) and not on_grid_counter(x):
                return False
        else:
            if not b.succs:
                return False
            for s in b.succs:
                if s not in seen:
                    seen.add(s)
                    work.append((s, 0))
            continue
    return True
