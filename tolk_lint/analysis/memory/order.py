"""Program order: whether one access comes after another in a thread.

At the same trips of the loops around both, by the forward edges of the
CFG (a loop around one of them but not the other taken as a whole), else by
the source line (`ProgramOrder.program_after`); at given trips, by the
outermost loop whose trips differ first (`ProgramOrder.after_at_trips`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tolk_lint.analysis.buffers import MemoryOrder

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.accesses import Access
    from tolk_lint.ir.cfg import CFG
    from tolk_lint.ir.nodes import Block, Kernel


class ProgramOrder:
    """The program order of one kernel's accesses (one thread's view)."""

    def __init__(self, kernel: Kernel, cfg: CFG):
        self.k = kernel
        self.cfg = cfg
        self._fwd: dict[Block, int] = {}  # `forward_reaches`: block -> bits of the blocks it reaches
        self._fwd_bit: dict[Block, int] = {}

    def program_after(self, a: Access, b: Access) -> bool:
        """Whether ``b`` comes after ``a`` at the same trips of the loops
        around both: by the forward edges of the CFG (each loop around one of
        them but not the other taken as a whole), else by the source line."""
        if a.instr.block is b.instr.block:
            pos = self.k.cached("memory_order", MemoryOrder).pos  # index in the block
            return pos[b.instr] > pos[a.instr]
        cfg = self.cfg
        la, lb = cfg.loops_around(a.instr.block), cfg.loops_around(b.instr.block)
        xa = next((lp.header for lp in reversed(la) if lp not in lb), a.instr.block)
        xb = next((lp.header for lp in reversed(lb) if lp not in la), b.instr.block)
        if xa is not xb:
            if self.forward_reaches(xa, xb):
                return True
            if self.forward_reaches(xb, xa):
                return False
        return _static_key(b) > _static_key(a)

    def after_at_trips(self, b: Access, tb: dict, a: Access, ta: dict) -> bool:
        """Whether ``b`` at trips ``tb`` runs after ``a`` at ``ta``."""
        keys = [lp for lp in self.cfg.loops if lp in ta and lp in tb]
        keys.sort(key=lambda lp: lp.depth)
        for lp in keys:
            x, y = ta[lp], tb[lp]
            if isinstance(x, int) and isinstance(y, int) and x != y:
                return y > x
        return self.program_after(a, b) if a is not b else True

    def forward_reaches(self, x: Block, y: Block) -> bool:
        """Whether ``y`` is ``x`` or follows it by forward edges (those that
        go up in the CFG's order: no back edge)."""
        if not self._fwd:
            # one pass from the last block up: a block's bit set is its own
            # bit and those of its forward successors
            order = self.cfg.order
            bit = {b: 1 << i for i, b in enumerate(self.k.blocks)}
            for z in sorted(self.k.blocks, key=lambda b: order.get(b, -1), reverse=True):
                got = bit[z]
                oz = order.get(z, -1)
                for s2 in z.succs:
                    if order.get(s2, -1) > oz:
                        got |= self._fwd[s2]
                self._fwd[z] = got
            self._fwd_bit = bit
        return bool(self._fwd[x] & self._fwd_bit[y])


def _static_key(a: Access) -> tuple:
    """Program order when the trips agree: the user's line (PTX ``.loc``:
    a compiler may lay out two sibling branches in either order), then the
    position in the linted file."""
    ins = a.instr
    sp = ins.span
    first = ins.origin.outermost().line if ins.origin is not None else (sp.line if sp else 0)
    return (first, sp.line if sp else 0, sp.column if sp else 0, a.order)
