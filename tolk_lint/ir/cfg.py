"""Structural facts of a kernel's CFG: order, dominance, loops, control dependence.

- ``rpo``: reverse post-order from the entry.
- ``idom`` / ``ipdom``: immediate (post-)dominators, by Cooper, Harvey and
  Kennedy's "A Simple, Fast Dominance Algorithm". Post-dominance is computed
  on the reversed CFG with one virtual exit that every RET/EXIT block (and
  every block of an infinite loop, so none is left out) flows into.
- ``loops``: natural loops, one per header (the union of its back edges'
  bodies), nested by containment; a back edge whose target does not dominate
  its source makes the CFG irreducible (``irreducible`` lists those blocks,
  which the analyses treat as divergent cycles).
- Induction variables: a header PHI whose value from outside the loop is the
  start and whose value along every back edge is ``phi + c`` / ``phi - c``
  with ``c`` a constant. Each exit branch that compares an induction
  variable (or its next value) with a loop-invariant bound is recorded as a
  `LoopExit`. Python ``for ... in range`` loops and compiler-emitted PTX loops
  (rotated, exit test at the latch) both land here.
- ``control_deps(block)``: the branches a block is control dependent on
  (Ferrante, Ottenstein and Warren, via the post-dominance frontier).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tolk_lint.ir.nodes import Block, Instr, Kernel, Value, type_bits
from tolk_lint.ir.opcodes import Opcode


@dataclass(eq=False)
class InductionVariable:
    """``phi`` starts at ``start`` and grows by ``step`` each trip: a constant
    (``step``) or a loop-invariant value (``step_value``, e.g. ``blockDim.x``)."""

    phi: Value
    start: Value
    step: int | None
    next: Value  # the value along the back edge(s): phi + step
    step_value: Value | None = None
    negated: bool = False  # phi - step_value


@dataclass(eq=False)
class LoopExit:
    branch: Instr  # the exiting BRANCH
    exits_when: bool  # the condition value that leaves the loop
    cond: Value
    iv: InductionVariable | None = None
    bound: Value | None = None
    cmp: str | None = None  # comparison as written: iv CMP bound (operands swapped if needed)
    uses_next: bool = False  # compares iv.next rather than iv


class BlockSet(set):
    """A set of blocks (membership, subset tests, size) that iterates in a
    fixed order, the CFG's reverse post-order. A plain set of blocks iterates
    by identity hash, which differs from one process to the next: anything
    built by walking a loop's blocks (its exits, the order of the terms Z3
    is given, which value a reason is attached to first) would differ too."""

    def __init__(self, blocks=(), key=None):
        blocks = list(blocks)
        super().__init__(blocks)
        self._order = sorted(set(blocks), key=key) if key is not None else blocks

    def __iter__(self):
        return iter(self._order)


@dataclass(eq=False)
class Loop:
    header: Block
    blocks: set[Block]
    latches: list[Block]
    parent: Loop | None = None
    children: list[Loop] = field(default_factory=list)
    ivs: list[InductionVariable] = field(default_factory=list)
    exits: list[LoopExit] = field(default_factory=list)  # exiting branches
    exit_blocks: list[Block] = field(default_factory=list)  # outside targets

    @property
    def depth(self) -> int:
        d, p = 1, self.parent
        while p is not None:
            d, p = d + 1, p.parent
        return d

    def contains(self, b: Block) -> bool:
        return b in self.blocks

    def preheader_preds(self) -> list[Block]:
        return [p for p in self.header.preds if p not in self.blocks]


class CFG:
    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.entry = kernel.blocks[0]
        self.rpo = self._rpo()
        self.order = {b: i for i, b in enumerate(self.rpo)}
        self._users: dict[Value, list[Instr]] | None = None  # `_rewidened`, built on first use
        self.idom = self._dominators()
        self.ipdom, self._pdom_exit = self._post_dominators()
        self.irreducible: set[Block] = set()
        self.loops: list[Loop] = self._loops()
        self._loop_of: dict[Block, Loop] = {}
        for lp in sorted(self.loops, key=lambda lp: -len(lp.blocks)):
            for b in lp.blocks:
                self._loop_of[b] = lp  # innermost wins (smaller loops come later)
        for lp in self.loops:
            self._induction(lp)
        self._cdeps: dict[Block, list[Block]] | None = None

    # -- order ------------------------------------------------------------------

    def _rpo(self) -> list[Block]:
        seen: set[Block] = set()
        post: list[Block] = []
        stack: list[tuple[Block, int]] = [(self.entry, 0)]
        seen.add(self.entry)
        while stack:
            b, i = stack.pop()
            if i < len(b.succs):
                stack.append((b, i + 1))
                s = b.succs[i]
                if s not in seen:
                    seen.add(s)
                    stack.append((s, 0))
            else:
                post.append(b)
        return post[::-1]

    # -- dominance ------------------------------------------------------------------

    def _dominators(self) -> dict[Block, Block]:
        order = self.order
        idom: dict[Block, Block] = {self.entry: self.entry}
        changed = True
        while changed:
            changed = False
            for b in self.rpo[1:]:
                preds = [p for p in b.preds if p in idom]
                if not preds:
                    continue
                new = preds[0]
                for p in preds[1:]:
                    new = _intersect(idom, order, p, new)
                if idom.get(b) is not new:
                    idom[b] = new
                    changed = True
        return idom

    def dominates(self, a: Block, b: Block) -> bool:
        """Whether every path from the entry to ``b`` passes ``a``."""
        while True:
            if a is b:
                return True
            nb = self.idom.get(b)
            if nb is None or nb is b:
                return False
            b = nb

    def _post_dominators(self) -> tuple[dict[Block, Block | None], Block]:
        exit_ = Block("<exit>")
        blocks = self.rpo
        succs: dict[Block, list[Block]] = {b: list(b.succs) for b in blocks}
        for b in blocks:
            t = b.terminator
            if t is None or t.op in (Opcode.RET, Opcode.EXIT) or not b.succs:
                succs[b].append(exit_)
        # blocks that cannot reach the exit (infinite loops) also flow into it
        reach = _reaches(blocks, succs, exit_)
        for b in blocks:
            if b not in reach:
                succs[b].append(exit_)
                reach = _reaches(blocks, succs, exit_)
        preds: dict[Block, list[Block]] = {b: [] for b in blocks}
        preds[exit_] = []
        for b in blocks:
            for s in succs[b]:
                preds[s].append(b)
        # reverse CFG: successors become predecessors
        rorder_list = _postorder_from(exit_, preds)[::-1]
        rorder = {b: i for i, b in enumerate(rorder_list)}
        aborts = _aborting(blocks)
        ipdom: dict[Block, Block] = {exit_: exit_}
        changed = True
        while changed:
            changed = False
            for b in rorder_list[1:]:
                # a path that ends in `trap` aborts the launch: threads that
                # take it are not waited for, so it does not keep the other
                # paths' meeting point from post-dominating the branch
                cands = [s for s in succs[b] if s in ipdom and (s not in aborts or b in aborts)]
                if not cands:
                    continue
                new = cands[0]
                for s in cands[1:]:
                    new = _intersect(ipdom, rorder, s, new)
                if ipdom.get(b) is not new:
                    ipdom[b] = new
                    changed = True
        out: dict[Block, Block | None] = {b: (None if ipdom.get(b) is exit_ else ipdom.get(b)) for b in blocks}
        self._rsuccs = succs
        return out, exit_

    def post_dominates(self, a: Block, b: Block) -> bool:
        """Whether every path from ``b`` to the kernel's end passes ``a``."""
        while True:
            if a is b:
                return True
            nb = self.ipdom.get(b)
            if nb is None or nb is b:
                return False
            b = nb

    # -- control dependence ------------------------------------------------------------

    def control_deps(self, block: Block) -> list[Block]:
        """The blocks whose branch decides whether ``block`` runs."""
        if self._cdeps is None:
            self._cdeps = {b: [] for b in self.rpo}
            for a in self.rpo:
                if len(a.succs) < 2:
                    continue
                for s in a.succs:
                    # walk up the post-dominator tree from s to ipdom(a)
                    stop = self.ipdom.get(a)
                    runner: Block | None = s
                    while runner is not None and runner is not stop:
                        if a not in self._cdeps[runner]:
                            self._cdeps[runner].append(a)
                        runner = self.ipdom.get(runner)
        return self._cdeps.get(block, [])

    # -- loops -----------------------------------------------------------------------------

    def _loops(self) -> list[Loop]:
        by_header: dict[Block, Loop] = {}
        for b in self.rpo:
            for s in b.succs:
                if self.order.get(s, -1) > self.order[b]:
                    continue  # forward edge
                if not self.dominates(s, b):
                    # retreating edge into a block that does not dominate it
                    self.irreducible.add(s)
                    self.irreducible.add(b)
                    continue
                body = {s}
                stack = [b]
                while stack:
                    x = stack.pop()
                    if x in body:
                        continue
                    body.add(x)
                    stack.extend(p for p in x.preds if p in self.order)
                lp = by_header.get(s)
                if lp is None:
                    lp = by_header[s] = Loop(s, body, [b])
                else:
                    lp.blocks |= body
                    lp.latches.append(b)
        loops = sorted(by_header.values(), key=lambda lp: self.order[lp.header])
        for lp in loops:
            best = None
            for other in loops:
                if other is not lp and lp.header in other.blocks and lp.blocks <= other.blocks:
                    if best is None or len(other.blocks) < len(best.blocks):
                        best = other
            lp.parent = best
            if best is not None:
                best.children.append(lp)
        rank = self._rank
        for lp in loops:
            lp.blocks = BlockSet(lp.blocks, rank)
            for b in lp.blocks:
                for s in b.succs:
                    if s not in lp.blocks and s not in lp.exit_blocks:
                        lp.exit_blocks.append(s)
        if self.irreducible:
            # an irreducible region is a cycle too: grow it to its SCC
            self.irreducible = BlockSet(_scc_closure(self.irreducible, self.rpo), rank)
        return loops

    def _rank(self, b: Block) -> tuple[int, int]:
        """Where a block comes in reverse post-order (then in the kernel)."""
        return (self.order.get(b, len(self.order)), b.id)

    def loop_of(self, block: Block) -> Loop | None:
        """The innermost loop holding ``block``."""
        return self._loop_of.get(block)

    def loops_around(self, block: Block) -> list[Loop]:
        """Every loop holding ``block``, innermost first."""
        out, lp = [], self.loop_of(block)
        while lp is not None:
            out.append(lp)
            lp = lp.parent
        return out

    def _induction(self, lp: Loop) -> None:
        for phi in lp.header.phis():
            outside = [a for p, a in zip(lp.header.preds, phi.args) if p not in lp.blocks]
            inside = [a for p, a in zip(lp.header.preds, phi.args) if p in lp.blocks]
            if len(set(outside)) != 1 or not inside or len(set(inside)) != 1:
                continue
            nxt = inside[0]
            step = _step_of(nxt, phi.result)
            if step is not None:
                lp.ivs.append(InductionVariable(phi.result, outside[0], step, nxt))
                continue
            inv = self._invariant_step(nxt, phi.result, lp)
            if inv is not None:
                lp.ivs.append(InductionVariable(phi.result, outside[0], None, nxt, inv[0], inv[1]))
        ivs = {iv.phi: iv for iv in lp.ivs}
        nexts = {iv.next: iv for iv in lp.ivs}
        for b in lp.blocks:
            t = b.terminator
            if t is None or t.op is not Opcode.BRANCH:
                continue
            tgt_true, tgt_false = t.targets()
            in_t, in_f = tgt_true in lp.blocks, tgt_false in lp.blocks
            if in_t and in_f:
                continue
            ex = LoopExit(t, exits_when=not in_t, cond=t.args[0])
            cmp = t.args[0].defn
            if cmp is not None and cmp.op is Opcode.CMP and len(cmp.args) == 2:
                a, c = cmp.args
                op = cmp.attrs.get("cmp")
                for x, y, swapped in ((a, c, False), (c, a, True)):
                    iv = ivs.get(x) or nexts.get(x)
                    if iv is not None and self.invariant(y, lp):
                        ex.iv, ex.bound, ex.uses_next = iv, y, x is iv.next
                        ex.cmp = _swap_cmp(op) if swapped else op
                        break
            lp.exits.append(ex)

    def _invariant_step(self, nxt: Value, phi: Value, lp: Loop) -> tuple[Value, bool] | None:
        """``phi + s`` or ``phi - s`` with ``s`` defined outside the loop;
        ``phi`` may be re-widened from its low 32 bits first (`_rewidened`)."""
        d = nxt.defn
        if d is None or d.op not in (Opcode.ADD, Opcode.SUB) or len(d.args) != 2:
            return None
        a, b = d.args
        if self._rewidened(a, phi):
            a = phi
        if d.op is Opcode.ADD and self._rewidened(b, phi):
            b = phi
        if a is phi and self.invariant(b, lp):
            return b, d.op is Opcode.SUB
        if d.op is Opcode.ADD and b is phi and self.invariant(a, lp):
            return a, False
        return None

    def _rewidened(self, x: Value, phi: Value) -> bool:
        """``x`` is ``phi``'s low ``n`` bits widened again, and nothing reads
        more of ``phi`` than its low ``n`` bits: a 32-bit ``int`` counter
        kept in a 64-bit register (``cvt.s64.s32 %rd9, %rd28``, as nvcc
        steps ``for (int i = grid.thread_rank(); ...; i += grid.size())``),
        or a ``short`` counter in a 32-bit one (``cvt.s32.s16 %r12, %r16``,
        read as ``(ib << 16) >> 14`` for ``4 * ib`` and as a 16-bit compare;
        NVIDIA's SobelFilter). Then ``phi + s`` is a counter for every use:
        its high bits, which differ from the re-widened sum's, are never
        read."""
        d = x.defn
        if d is None or d.op is not Opcode.CVT or not d.args or d.args[0] is not phi:
            return False
        src = str(d.attrs.get("from_type") or "")
        n, width = type_bits(src) if src else 0, type_bits(phi.type)
        if not 8 <= n < width or src.startswith("f") or str(phi.type).startswith("f"):
            return False
        if self._users is None:
            self._users = {}
            for ins in self.kernel.instrs():
                for a in ins.args:
                    self._users.setdefault(a, []).append(ins)
        for u in self._users.get(phi, ()):
            narrow_from = u.attrs.get("from_type") is not None and type_bits(str(u.attrs["from_type"])) <= n
            if u.op is Opcode.CVT and (narrow_from or all(type_bits(r.type) <= n for r in u.results)):
                continue
            if u.op is Opcode.SHL and len(u.args) == 2 and u.args[0] is phi:
                c = u.args[1].defn.attrs.get("value") if u.args[1].defn is not None else None
                if isinstance(c, int) and not isinstance(c, bool) and c >= width - n:
                    continue
            if u.op is Opcode.PHI and u.result is phi:
                continue
            return False
        return True

    def invariant(self, v: Value, lp: Loop) -> bool:
        """Whether ``v`` is defined outside ``lp``, or is a constant, a
        parameter or a special register fixed for the launch (the Numba
        front end reads ``cuda.blockDim.x`` where it is written: ``i +=
        cuda.blockDim.x`` in a ``while`` body), so the same at every trip."""
        d = v.defn
        if d is None or d.block is None:
            return True
        if d.block not in lp.blocks:
            return True
        if d.op is Opcode.SPECIAL:
            return str(d.attrs.get("name", "")).startswith(_FIXED_SPECIALS)
        return d.op in (Opcode.CONST, Opcode.PARAM)


# special registers that keep their value for the whole launch (not %clock, %globaltimer,
# %warpid or %smid, which may change while a thread runs)
_FIXED_SPECIALS = ("tid", "ntid", "ctaid", "nctaid", "laneid", "warpsize", "lanemask", "envreg", "gridid",
                   "clusterid", "nclusterid", "cluster_ctaid", "cluster_nctaid", "cluster_ctarank",
                   "cluster_nctarank", "is_explicit_cluster", "dynamic_smem_size", "total_smem_size")  # fmt: skip


def cfg_of(kernel: Kernel) -> CFG:
    """``kernel``'s CFG facts, computed once and cached on the kernel."""
    return kernel.cached("cfg", CFG)


def _step_of(nxt: Value, phi: Value) -> int | None:
    d = nxt.defn
    if d is None or d.op not in (Opcode.ADD, Opcode.SUB) or len(d.args) != 2:
        return None
    a, b = d.args
    for x, y in ((a, b), (b, a)) if d.op is Opcode.ADD else ((a, b),):
        if x is phi and y.defn is not None and y.defn.op is Opcode.CONST:
            c = y.defn.attrs.get("value")
            if isinstance(c, int) and not isinstance(c, bool):
                return c if d.op is Opcode.ADD else -c
    return None


_SWAP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne",
         "lo": "hi", "ls": "hs", "hi": "lo", "hs": "ls"}  # fmt: skip


def _swap_cmp(op: str | None) -> str | None:
    return _SWAP.get(op or "", op)


def _aborting(blocks: list[Block]) -> set[Block]:
    """The blocks from which every path ends in a ``trap`` (an EXIT marked
    ``trap``), which aborts the whole launch."""
    out: set[Block] = set()
    changed = True
    while changed:
        changed = False
        for b in blocks:
            if b in out:
                continue
            t = b.terminator
            if (t is not None and t.op is Opcode.EXIT and t.attrs.get("trap")) or (
                b.succs and all(s in out for s in b.succs)
            ):
                out.add(b)
                changed = True
    return out


def _intersect(dom: dict[Block, Block], order: dict[Block, int], a: Block, b: Block) -> Block:
    while a is not b:
        while order[a] > order[b]:
            a = dom[a]
        while order[b] > order[a]:
            b = dom[b]
    return a


def _reaches(blocks: list[Block], succs: dict[Block, list[Block]], target: Block) -> set[Block]:
    preds: dict[Block, list[Block]] = {}
    for b in blocks:
        for s in succs[b]:
            preds.setdefault(s, []).append(b)
    seen = {target}
    stack = [target]
    while stack:
        x = stack.pop()
        for p in preds.get(x, []):
            if p not in seen:
                seen.add(p)
                stack.append(p)
    return seen


def _postorder_from(start: Block, nexts: dict[Block, list[Block]]) -> list[Block]:
    seen = {start}
    post: list[Block] = []
    stack: list[tuple[Block, int]] = [(start, 0)]
    while stack:
        b, i = stack.pop()
        ns = nexts.get(b, [])
        if i < len(ns):
            stack.append((b, i + 1))
            s = ns[i]
            if s not in seen:
                seen.add(s)
                stack.append((s, 0))
        else:
            post.append(b)
    return post


def _scc_closure(seeds: set[Block], blocks: list[Block]) -> set[Block]:
    """Every block on a cycle through a seed block."""
    out = set()
    for s in seeds:
        fwd = _walk(s, lambda b: b.succs)
        bwd = _walk(s, lambda b: b.preds)
        out |= fwd & bwd
    return out


def _walk(start: Block, nexts) -> set[Block]:
    seen = {start}
    stack = [start]
    while stack:
        x = stack.pop()
        for n in nexts(x):
            if n not in seen:
                seen.add(n)
                stack.append(n)
    return seen
