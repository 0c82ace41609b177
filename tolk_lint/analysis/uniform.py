"""Uniformity: which values are the same for every thread of a workgroup (or warp).

The uniformity semantics of docs/analyses.md ("Uniformity"), restated for a CFG in
SSA form, in the shape of LLVM's uniformity analysis
(``GenericUniformityImpl.h``): start optimistic (everything uniform), seed
from the sources of divergence, push data divergence to users, and handle
control divergence through sync dependence.

Seeds of variance (`_seed`): thread indices and lanes (``tid.*``,
``laneid``...), the parameters of a called body, atomics' returns,
collectives' and tensor cores' results, opaque ops and calls, and loads

  - at a varying address (data propagation) ;
  - of a global buffer the kernel writes, or a volatile one ;
  - of shared memory, unless every write to that buffer is ordered before
    the load by a barrier on every path (`MemoryOrder`) ;
  - of a local/register buffer one of whose writes leaves it varying: a
    varying value or address, a store under divergent control or in a loop
    whose trips vary (a fixpoint, from no buffer marked).

Control divergence. A BRANCH on a varying condition is divergent::

        B: br %div_c            threads split at B
        /          \\
      T             F           %x.1 = 1       %x.2 = 2
        \\          /
        J: %x.3 = phi(%x.1, %x.2)   <- varying: threads arrive from both sides

Every PHI in a block where paths from a divergent branch meet before (or at)
its immediate post-dominator is varying (*sync dependence*; `join_blocks`:
the blocks reached from two of its successors, a safe superset of LLVM's
exact join set -- a loop inside one side of the branch is no join). A loop
whose exit branch is divergent, or that holds a divergent branch whose
post-dominator lies outside it (threads may leave before they meet again),
runs different trip counts in different threads: its values used after the
loop are varying (*temporal divergence*), and so is every block of an
irreducible cycle.

Two levels. ``workgroup`` (for barriers) and ``warp`` (for warp collectives
and tensor cores), and a third, ``warpgroup``, for kernels with Hopper's
``wgmma`` (the workgroup's taint, Z3 asked about two threads of one
warpgroup): at the warp level the results of ``vote``/``redux`` over the
full mask are uniform (those of other masks, and ``activemask``, only for
the lanes that run them together), and Z3 is asked about two threads of one
warp.

Z3. The taint rules are sound and incomplete: ``(tid & 0) + n`` is called
varying. For the values that decide a diagnostic -- the conditions of
divergent branches that guard a barrier or collective, and the exits of loops
that hold one -- `tolk_lint.analysis.smt` builds the expression for two
threads and asks whether they can differ. UNSAT proves the value uniform; it
is then forced uniform and the propagation runs again. SAT gives a witness;
UNKNOWN keeps the value varying and says the solver gave up.

Known imprecision (safe direction): join sets are supersets; header PHIs of a
loop with a divergent exit are varying; buffers are told apart only by their
base symbol or parameter; an OPAQUE op may write any memory.

Reference: Rosemann, Moll and Hack, "An Abstract Interpretation for SPMD
Divergence on Reducible Control Flow Graphs", POPL 2021.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Iterable

from tolk_lint import budget
from tolk_lint.analysis.buffers import (
    MemoryOrder,
    _lowest_bit,
    _roots_may_alias,
    byte_range,
    is_barrier,
    mem_root,
    ranges_disjoint,
    space_of,
)
from tolk_lint.analysis.trip_difference import exact_trips_proof
from tolk_lint.analysis.uniformity_info import Proof, Reason, UniformityInfo
from tolk_lint.diagnostics import report_frame
from tolk_lint.ir.cfg import CFG, Loop, cfg_of
from tolk_lint.ir.nodes import Block, Instr, Kernel, Module, Value
from tolk_lint.ir.opcodes import (
    DIVERGENCE_SOURCES,
    MEMORY_WRITES,
    TENSOR_CORE_OPS,
    WARP_COLLECTIVES,
    WARP_UNIFORM_RESULTS,
    WARPGROUP_OPS,
    Opcode,
    special_varies,
)

log = logging.getLogger("tolk_lint.uniform")

O = Opcode
LEVELS = ("workgroup", "warp")



class _Propagator:
    """The worklist: one run from the seeds to the fixpoint, given the values
    Z3 has already proved uniform."""

    def __init__(self, kernel: Kernel, level: str, forced: set[Value], uniform_loops: set[Loop],
                 memory: MemoryOrder, facts: _KernelFacts):  # fmt: skip
        self.k = kernel
        self.level = level
        self.cfg: CFG = cfg_of(kernel)
        self.forced = forced
        self.uniform_loops = uniform_loops
        self.memory = memory
        self.facts = facts
        self.info = UniformityInfo(kernel, None, level)
        self.work: list[Value] = []

    # marking -----------------------------------------------------------------
    def mark(self, v: Value, reason: Reason) -> None:
        if v in self.info.varying or v in self.forced:
            return
        self.info.varying.add(v)
        self.info.reasons[v] = reason
        self.work.append(v)

    def mark_results(self, ins: Instr, reason: Reason) -> None:
        for r in ins.results:
            self.mark(r, reason)

    def mark_buffer(self, root, why: Reason) -> None:
        if root in self.info.varying_buffers:
            return
        self.info.varying_buffers.add(root)
        for ld in self.facts.local_loads:
            if _roots_may_alias(mem_root(ld), root) or root is None:
                self.mark_results(ld, Reason(f"loaded from a local buffer that {why.message}", ld, why.source))

    def mark_branch(self, block: Block, reason: Reason) -> None:
        if block in self.info.divergent_branches:
            return
        self.info.divergent_branches.add(block)
        self.info.branch_reasons[block] = reason
        term = block.terminator
        cfg = self.cfg
        # sync dependence: the blocks where threads that split here meet again
        stop = cfg.ipdom.get(block)
        for x in join_blocks(block, stop):
            for phi in x.phis():
                self.mark(phi.result, Reason(f"merged where threads that split at line {_line(term)} meet",
                                             phi, term.args[0] if term and term.args else None))  # fmt: skip
        # stores under this branch leave their local buffers varying
        for x in self.facts.controlled(block):
            for ins in x.instrs:
                if ins in self.facts.local_store_set:
                    self.mark_buffer(mem_root(ins), Reason(f"is written under a divergent branch (line {_line(ins)})",
                                                           ins, term.args[0] if term and term.args else None))  # fmt: skip
        # a divergent exit makes the loop's trips vary, and so does a branch
        # whose threads may leave the loop before they meet again (its
        # post-dominator lies outside: `if (c) { ...; break; }`)
        for lp in cfg.loops_around(block):
            if stop is None or stop not in lp.blocks or any(s not in lp.blocks for s in block.succs):
                self.mark_loop(lp, Reason(f"its exit at line {_line(term)} depends on a varying value", term,
                                          term.args[0] if term and term.args else None))  # fmt: skip

    def mark_loop(self, lp: Loop, reason: Reason) -> None:
        if lp in self.info.divergent_loops or lp in self.uniform_loops:
            return
        self.info.divergent_loops.add(lp)
        self.info.loop_reasons[lp] = reason
        # temporal divergence: values defined in the loop, used outside it
        for b in lp.blocks:
            for ins in b.instrs:
                for r in ins.results:
                    for user in self.facts.users.get(r, ()):
                        if user.block not in lp.blocks:
                            self.mark_results(user, Reason(
                                f"uses {describe(r)}, carried out of the loop at line {_line_block(lp.header)} "
                                "whose trips vary", user, r))  # fmt: skip
                if ins in self.facts.local_store_set:
                    self.mark_buffer(mem_root(ins), Reason(
                        f"is written in a loop whose trips vary (line {_line(ins)})", ins, None))  # fmt: skip
        # header phis: threads at different trips
        for phi in lp.header.phis():
            self.mark(phi.result, Reason(f"loop-carried in the loop at line {_line_block(lp.header)} whose trips vary",
                                         phi, None))  # fmt: skip

    # seeds ---------------------------------------------------------------------
    def seed(self) -> None:
        k, level = self.k, self.level
        for p in k.params:
            if p.value is not None and (not k.is_entry):
                self.mark(p.value, Reason(f"parameter `{p.name}` of a called body: each caller passes its own", None))
        for ins in k.instrs():
            op = ins.op
            if op is O.SPECIAL:
                name = ins.attrs.get("name", "")
                if special_varies(name, level):
                    self.mark_results(ins, Reason(f"`%{name}` differs between threads", ins))
            elif op is O.PARAM:
                if not k.is_entry:
                    self.mark_results(ins, Reason(f"parameter `{ins.attrs.get('name')}` of a called body", ins))
            elif op in WARP_UNIFORM_RESULTS:
                if level != "warp":
                    self.mark_results(ins, Reason(f"`{ins.text or op.value}` is the same only within a warp", ins))
                elif not _whole_warp(ins):
                    self.mark_results(ins, Reason(f"`{ins.text or op.value}` is the same only for the lanes that run "
                                                  "it together", ins))  # fmt: skip
            elif op is O.SHUFFLE and level == "warp" and _warp_broadcast(ins):
                pass  # every lane reads one lane's value: as uniform as the lane it names (`visit`)
            elif op in DIVERGENCE_SOURCES:
                self.mark_results(ins, Reason(f"`{ins.text or op.value}` returns a per-thread value", ins))
            elif op is O.LOAD:
                why = self.facts.load_seed(ins)
                if why:
                    self.mark_results(ins, Reason(why, ins))
            elif op is O.BARRIER and ins.results:
                pass  # a block-wide reduction: the same in every thread
        for b in self.cfg.irreducible:
            for phi in b.phis():
                self.mark(phi.result, Reason("merged in an irreducible cycle", phi))
        for ins in self.facts.local_stores_unknown:
            self.mark_buffer(mem_root(ins), Reason(f"may be written by `{ins.text or ins.op.value}`", ins))

    # propagation -----------------------------------------------------------
    def run(self) -> UniformityInfo:
        self.seed()
        users = self.facts.users
        varying, forced, reasons, work = self.info.varying, self.forced, self.info.reasons, self.work
        while work:
            v = work.pop()
            for ins in users.get(v, ()):
                if ins.op in _VISIT_OPS:
                    self.visit(ins, v)
                    continue
                # the common case, `visit`'s last one inlined: a result
                # computed from a varying operand varies
                reason = None
                for r in ins.results:
                    if r not in varying and r not in forced:
                        if reason is None:
                            reason = Reason((_derive_message, ins, v), ins, v)
                        varying.add(r)
                        reasons[r] = reason
                        work.append(r)
        return self.info

    def visit(self, ins: Instr, v: Value) -> None:
        op = ins.op
        if op is O.BRANCH:
            if ins.args and ins.args[0] is v and v not in self.forced:
                self.mark_branch(ins.block, Reason(f"branch on {describe(v)}", ins, v))
            return
        if op is O.PHI:
            self.mark_results(ins, Reason((_merges_message, v), ins, v))
            return
        if op is O.STORE or (op in MEMORY_WRITES and ins in self.facts.local_store_set):
            if ins in self.facts.local_store_set:
                self.mark_buffer(mem_root(ins), Reason(f"is written with the varying {describe(v)} at line "
                                                       f"{_line(ins)}", ins, v))  # fmt: skip
            return
        if op is O.BARRIER:
            return  # bar.red / syncthreads_count: a reduction over the workgroup
        if op in WARP_UNIFORM_RESULTS and self.level == "warp":
            return
        if op is O.SHUFFLE and self.level == "warp" and v is ins.args[0] and _warp_broadcast(ins):
            return  # the value shuffled varies, the lane it is read from does not
        varying = self.info.varying
        if any(r not in varying for r in ins.results):
            self.mark_results(ins, Reason((_derive_message, ins, v), ins, v))


# The ops `_Propagator.visit` treats otherwise than "a varying operand makes
# the results vary"; `run` handles every other op inline.
_VISIT_OPS = frozenset({O.BRANCH, O.PHI, O.STORE, O.BARRIER, O.SHUFFLE}) | MEMORY_WRITES | WARP_UNIFORM_RESULTS


def join_blocks(branch: Block, stop: Block | None) -> list[Block]:
    """The blocks where threads that split at ``branch`` may meet again
    before ``stop`` (its immediate post-dominator; None: they may never):
    those reached from two different successors of the branch on paths that
    neither pass ``stop`` nor come back to the branch. LLVM's join blocks,
    a superset of its exact set; a loop header inside one side of the branch
    is reached from that side alone, so its phis stay as they are."""
    reached_from: dict[Block, int] = {}
    joins: list[Block] = []
    for side, s in enumerate(dict.fromkeys(branch.succs)):
        seen: set[Block] = set()
        stack = [s]
        while stack:
            x = stack.pop()
            if x in seen:
                continue
            seen.add(x)
            first = reached_from.setdefault(x, side)
            if first != side and first >= 0:
                reached_from[x] = -1  # reached from two sides: a join
                joins.append(x)
            if x is stop or x is branch:
                continue
            stack.extend(x.succs)
    return joins


def _whole_warp(ins: Instr) -> bool:
    """A vote or reduction over the full constant mask: every lane of the
    warp runs it together (a lane that does not is TL103's finding), so all
    get one result. With another mask only the lanes it names agree, and
    ``activemask`` returns whichever lanes happen to run with the caller."""
    if ins.op is O.ACTIVEMASK or len(ins.args) < 2 or ins.attrs.get("sync") is False:
        return False
    d = ins.args[1].defn
    v = d.attrs.get("value") if d is not None and d.op is O.CONST else None
    return isinstance(v, int) and (v & 0xFFFFFFFF) == 0xFFFFFFFF


def _constant(v: Value) -> int | None:
    d = v.defn
    c = d.attrs.get("value") if d is not None and d.op is O.CONST else None
    return c if isinstance(c, int) and not isinstance(c, bool) else None


def _warp_broadcast(ins: Instr) -> bool:
    """``shfl.sync.idx`` over the whole warp: the full constant mask (every
    lane runs it together, or TL103 says otherwise) and a clamp operand of
    31 with no segment mask (``c`` = 0x1f: the warp is one segment), so every
    lane reads the lane its ``b`` operand names, ``b & 31``. When ``b`` is
    the same in every lane of the warp (lane 0, ``__shfl_sync(~0u, v, 0)``),
    so is the result, and the valid-lane predicate is true everywhere. PTX
    ISA, ``shfl.sync``: ``lane = (b & ~segmask) | (laneid & segmask)``."""
    if ins.attrs.get("mode") != "idx" or ins.attrs.get("sync") is False or len(ins.args) < 4:
        return False
    mask, clamp = _constant(ins.args[3]), _constant(ins.args[2])
    return (mask is not None and mask & 0xFFFFFFFF == 0xFFFFFFFF and clamp is not None
            and clamp & 0x1F1F == 0x1F)  # fmt: skip


def describe(v: Value | None) -> str:
    """A readable name for a value, in backticks: the user's variable, else
    the source text of the expression that computed it."""
    if v is None:
        return "a varying value"
    name = v.source_name or v.name
    if name and not name.startswith(("%v", "$")):
        return f"`{name[1:] if name.startswith('%tid') else name}`"
    d = v.defn
    if d is not None and d.text and len(d.text) <= 60:
        return f"`{d.text.strip().rstrip(';')}`"
    return f"`{v.name}`"


def _merges_message(v: Value) -> str:
    return f"merges {describe(v)}"


def _derive_message(ins: Instr, v: Value) -> str:
    if ins.op is O.LOAD:
        return f"loaded at an address computed from {describe(v)}"
    return f"computed from {describe(v)}"


def _line(ins: Instr | None) -> int | str:
    if ins is None or ins.span is None:
        return "?"
    if ins.origin is not None:
        return report_frame(ins.origin).line
    return ins.span.line


def _line_block(b: Block) -> int | str:
    for ins in b.instrs:
        if ins.span is not None:
            return _line(ins)
    return "?"


class _KernelFacts:
    """Per-kernel facts that do not depend on the level: use lists, memory
    instructions by kind, and which loads are seeds of variance."""

    def __init__(self, kernel: Kernel, memory: MemoryOrder):
        self.k = kernel
        self.memory = memory
        self.users: dict[Value, list[Instr]] = {}
        for ins in kernel.instrs():
            for a in ins.args:
                lst = self.users.setdefault(a, [])
                if not lst or lst[-1] is not ins:
                    lst.append(ins)
        self.shared_writes: list[Instr] = []
        self.global_writes: list[Instr] = []
        self.local_stores: list[Instr] = []
        self.local_loads: list[Instr] = []
        self.local_stores_unknown: list[Instr] = []
        self.unknown_writers: list[Instr] = []
        for ins in kernel.instrs():
            if ins.op in (O.OPAQUE, O.CALL):
                self.unknown_writers.append(ins)
                self.local_stores_unknown.append(ins)
                continue
            if ins.op in MEMORY_WRITES:
                sp = space_of(ins)
                if ins.op is O.CP_ASYNC:
                    sp = "shared"
                if sp in ("shared",):
                    self.shared_writes.append(ins)
                elif sp in ("local", "reg"):
                    self.local_stores.append(ins)
                elif sp == "generic":
                    self.shared_writes.append(ins)
                    self.global_writes.append(ins)
                    self.local_stores.append(ins)
                else:
                    self.global_writes.append(ins)
            elif ins.op is O.LOAD and space_of(ins) in ("local", "reg"):
                self.local_loads.append(ins)
        self.local_store_set = set(self.local_stores)
        self._controlled: dict[Block, list[Block]] | None = None
        self._roots: dict[Instr, tuple[str, str] | None] = {}
        self._seeds: dict[Instr, str | None] = {}
        self._alias_masks: dict[tuple[str, str] | None, int] = {}
        self._global_roots = {self.root(w) for w in self.global_writes}
        self._grid_order: MemoryOrder | bool | None = None  # `_grid_ordered`, built on first use

    @functools.cached_property
    def _shared_writers(self) -> list[Instr]:
        return self.shared_writes + self.unknown_writers

    def _alias_mask(self, root: tuple[str, str] | None) -> int:
        """The writers of `_shared_writers` that may write ``root`` (bit i: writer i)."""
        got = self._alias_masks.get(root)
        if got is None:
            got = 0
            for i, w in enumerate(self._shared_writers):
                if w.op in (O.OPAQUE, O.CALL) or _roots_may_alias(self.root(w), root):
                    got |= 1 << i
            self._alias_masks[root] = got
        return got

    def root(self, ins: Instr) -> tuple[str, str] | None:
        if ins not in self._roots:
            self._roots[ins] = mem_root(ins)
        return self._roots[ins]

    def controlled(self, branch_block: Block) -> list[Block]:
        """Blocks whose execution ``branch_block``'s branch decides, transitively."""
        if self._controlled is None:
            cfg = cfg_of(self.k)
            direct: dict[Block, list[Block]] = {}
            for b in cfg.rpo:
                for d in cfg.control_deps(b):
                    direct.setdefault(d, []).append(b)
            self._controlled = direct
        out, seen, stack = [], set(), [branch_block]
        while stack:
            x = stack.pop()
            for y in self._controlled.get(x, ()):
                if y not in seen:
                    seen.add(y)
                    out.append(y)
                    stack.append(y)
        return out

    def _drop_disjoint(self, ld: Instr, hits: int, writes: list[Instr]) -> int:
        """``hits`` without the writers of ``ld``'s buffer whose bytes provably
        miss the bytes it reads (a flag field after a histogram: one struct
        of TempStorage, told apart by offsets)."""
        if byte_range(ld, self.k) is None:
            return hits
        out, rest = hits, hits
        while rest:
            i = _lowest_bit(rest)
            rest &= ~(1 << i)
            w = writes[i]
            if w.op in (O.STORE, O.ATOMIC) and self.root(w) == self.root(ld) and ranges_disjoint(ld, w, self.k):
                out &= ~(1 << i)
        return out

    def _on_grid_counter(self, w: Instr) -> bool:
        """A cooperative launch's grid-barrier arrival: not a kernel buffer (`grid_barriers`)."""
        if self.k.language != "ptx" or w.op is not O.ATOMIC:
            return False
        from tolk_lint.analysis.grid_barriers import on_grid_counter

        return on_grid_counter(w)

    def _grid_ordered(self, ld: Instr, hits: list[int]) -> bool:
        """Every write of ``global_writes`` numbered in ``hits`` is ordered
        with the load by a grid-wide barrier on every path, both ways
        (`grid_barriers`): every thread of the launch reads one value."""
        if self._grid_order is None:
            from tolk_lint.analysis.grid_barriers import grid_barriers

            gb = grid_barriers(self.k)
            self._grid_order = MemoryOrder(self.k, barrier=gb.__contains__) if gb else False
        if self._grid_order is False:
            return False
        before, after = self._grid_order.unordered_sets(ld, self.global_writes)
        return not any((before | after) >> i & 1 for i in hits)

    def load_seed(self, ld: Instr) -> str | None:
        """Why a load varies whatever its address, or None (cached)."""
        if ld not in self._seeds:
            self._seeds[ld] = self._load_seed(ld)
        return self._seeds[ld]

    def _load_seed(self, ld: Instr) -> str | None:
        if ld.attrs.get("volatile"):
            return f"`{ld.text or 'load'}` is volatile: the host or other threads may change it"
        sp = space_of(ld)
        root = self.root(ld)
        if sp in ("const", "param", "texture"):
            if sp == "param" and root is None:
                return "read from a call's parameter slot"
            return None
        if sp == "surface":
            return None if not self.global_writes else "read from a surface the kernel may write"
        if sp in ("local", "reg"):
            return None  # the buffer fixpoint decides
        if sp == "global" or sp == "generic":
            if ld.attrs.get("nc") or ld.attrs.get("cache") == "nc":
                return None
            if self.unknown_writers or root is None or None in self._global_roots or root in self._global_roots:
                for w in self.unknown_writers:
                    return f"read from global memory the kernel writes (line {_line(w)})"
                hits = [i for i, w in enumerate(self.global_writes)
                        if _roots_may_alias(self.root(w), root) and not self._on_grid_counter(w)]
                if hits:
                    ordered = self._grid_ordered(ld, hits)
                    if not ordered:
                        return f"read from global memory the kernel writes (line {_line(self.global_writes[hits[0]])})"
            if sp == "generic":
                before, _after = self.memory.unordered_sets(ld, self.shared_writes)
                if before:
                    w = self.shared_writes[_lowest_bit(before)]
                    return f"read through a generic pointer with no barrier after the write at line {_line(w)}"
            return None
        if sp == "shared":
            writes = self._shared_writers
            before, after = self.memory.unordered_sets(ld, writes)
            hits = (before | after) & self._alias_mask(root)
            hits = self._drop_disjoint(ld, hits, writes)
            if not hits:
                return None
            i = _lowest_bit(hits)  # the first writer in program order, as a reader reads the message
            w = writes[i]
            name = root[1] if root else "shared memory"
            if before >> i & 1:
                return (f"read from `{name}` with no barrier after its write at line {_line(w)}: "
                        "other threads may not have written it yet")  # fmt: skip
            # threads are not in lockstep: one that runs ahead may
            # write before another reads, unless a barrier lies between
            return (f"read from `{name}`, which other threads may already overwrite at line {_line(w)} "
                    "with no barrier in between")  # fmt: skip
        return f"read from {sp} memory"


def compute(
    kernel: Kernel,
    level: str = "workgroup",
    forced: set[Value] | None = None,
    uniform_loops: set[Loop] | None = None,
) -> UniformityInfo:
    """The taint analysis alone (no Z3), for a level.

    Before Z3 has proved anything, the warp level's taint is the workgroup
    level's whenever the two start from the same seeds (no special register
    that one level calls uniform and the other varying, no vote/redux/
    activemask, no warp broadcast): then it is computed once and copied."""
    if not forced and not uniform_loops:
        # the warpgroup level seeds what the workgroup level does (several warps)
        key = "workgroup" if level == "warpgroup" or (level == "warp" and _levels_agree(kernel)) else level
        return kernel.cached(f"uniform_taint:{key}", lambda k: _compute(k, key, set(), set())).copy(level)
    return _compute(kernel, level, forced or set(), uniform_loops or set())


def _levels_agree(kernel: Kernel) -> bool:
    """Whether the two levels seed the same values (`_Propagator.seed`,
    `_Propagator.visit`: only special registers and warp-uniform results
    depend on the level)."""
    for ins in kernel.instrs():
        if ins.op in WARP_UNIFORM_RESULTS or (ins.op is O.SHUFFLE and _warp_broadcast(ins)):
            return False
        if ins.op is O.SPECIAL:
            name = ins.attrs.get("name", "")
            if special_varies(name, "workgroup") != special_varies(name, "warp"):
                return False
    return True


def _compute(kernel: Kernel, level: str, forced: set[Value], uniform_loops: set[Loop]) -> UniformityInfo:
    memory = kernel.cached("memory_order", MemoryOrder)
    facts = kernel.cached("uniform_facts", lambda k: _KernelFacts(k, memory))
    prop = _Propagator(kernel, level, forced, uniform_loops, memory, facts)
    prop.info.forced_uniform = set(forced)
    prop.info.uniform_loops = set(uniform_loops)
    exits = {ex.cond for lp in uniform_loops for ex in lp.exits}
    prop.info.proved_values = prop.info.forced_uniform - exits
    # stores of a varying value or under varying control are marked during
    # the run; a store in a loop found divergent later, by mark_loop
    return prop.run()


# ---------------------------------------------------------------------------
# The analysis with Z3: which ops need uniform control, then prove what can be.


def sync_ops(kernel: Kernel, module: Module | None) -> list[Instr]:
    """Ops that need every thread (barriers, calls holding one) or every lane
    (collectives, tensor cores) to run them together."""
    holders = barrier_functions(module) if module is not None else set()
    out = []
    for ins in kernel.instrs():
        if is_barrier(ins) or ins.op in WARP_COLLECTIVES:
            out.append(ins)
        elif ins.op is O.CALL and ins.attrs.get("callee") in holders:
            out.append(ins)
    return out


def needs_level(ins: Instr, holders: set[str] | None = None) -> str:
    """The threads ``ins`` needs together: the workgroup (barriers, calls
    holding one), the warpgroup (``wgmma``) or the warp."""
    if ins.op is O.CALL or is_barrier(ins):
        return "workgroup"
    if ins.op in WARPGROUP_OPS:
        return "warpgroup"
    return "warp"


def barrier_functions(module: Module | None) -> set[str]:
    """Names of the module's functions whose bodies (transitively) hold a barrier."""
    if module is None:
        return set()
    if "_barrier_functions" in module.__dict__:
        return module.__dict__["_barrier_functions"]
    holders: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, f in module.functions.items():
            if name in holders:
                continue
            for ins in f.instrs():
                if is_barrier(ins) or (ins.op is O.CALL and ins.attrs.get("callee") in holders):
                    holders.add(name)
                    changed = True
                    break
    module.__dict__["_barrier_functions"] = holders
    return holders


@dataclass
class Uniformity:
    """Both levels, refined by Z3; and the warpgroup level for a kernel with
    ``wgmma`` (the workgroup's taint, refined for two threads of one
    warpgroup: ``warpid`` varies there, a branch on ``tid.x / 128`` does not)."""

    kernel: Kernel
    workgroup: UniformityInfo
    warp: UniformityInfo
    warpgroup: UniformityInfo | None = None

    def at(self, level: str) -> UniformityInfo:
        if level == "warpgroup":
            return self.warpgroup or self.workgroup
        return self.workgroup if level == "workgroup" else self.warp


def uniformity(kernel: Kernel, module: Module | None = None, settings=None) -> Uniformity:
    """The uniformity of ``kernel`` at both levels, with Z3 refinement for the
    branches and loops that decide where its barriers and collectives run."""
    from tolk_lint.analysis import smt

    rlimit = getattr(settings, "solver_rlimit", None) or smt.DEFAULT_RLIMIT
    ops = sync_ops(kernel, module)
    infos = {}
    levels = LEVELS + (("warpgroup",) if any(i.op in WARPGROUP_OPS for i in ops) else ())
    for level in levels:
        relevant = [i for i in ops if needs_level(i) == level
                    or (level == "warp" and i.op in TENSOR_CORE_OPS and i.op not in WARPGROUP_OPS)]  # fmt: skip
        infos[level] = refine(kernel, level, relevant, rlimit)
        infos[level].module = module
    return Uniformity(kernel, infos["workgroup"], infos["warp"], infos.get("warpgroup"))


def refine(kernel: Kernel, level: str, ops: list[Instr], rlimit: int) -> UniformityInfo:
    """Taint, then ask Z3 about the divergent loops and branches that hold
    ``ops``, one at a time in program order: each proof forces its value
    uniform and the propagation runs again, so later questions build on it
    (a loop proved to run the same trips everywhere leaves the same exit
    values in every thread)."""
    from tolk_lint.analysis import smt

    cfg = cfg_of(kernel)
    forced: set[Value] = set()
    uniform_loops: set[Loop] = set()
    proofs: dict[Value, Proof] = {}
    loop_proofs: dict[Loop, Proof] = {}
    asked: set[object] = set()
    queries = proved = 0
    info = compute(kernel, level, forced, uniform_loops)
    while True:
        budget.check("the uniformity refinement (%s level, round %d)", level, proved + 1)
        candidates: list[tuple[int, object]] = []
        for ins in ops:
            for lp in cfg.loops_around(ins.block):
                if lp in info.divergent_loops and lp not in asked:
                    candidates.append((cfg.order.get(lp.header, 0), lp))
            for d in _controlling_branches(cfg, ins.block, info):
                cond = d.terminator.args[0]
                if cond not in asked:
                    candidates.append((cfg.order.get(d, 0), cond))
        if not candidates:
            break
        candidates.sort(key=lambda c: c[0])
        progress = False
        for _, item in candidates:
            if item in asked:
                continue
            budget.check("the uniformity refinement (%s level, Z3 question %d)", level, queries + 1)
            asked.add(item)
            queries += 1
            if isinstance(item, Loop):
                p = exact_trips_proof(kernel, cfg, item, info) or smt.loop_trips_uniform(kernel, item, info, level, rlimit)
                loop_proofs[item] = p
                if p.verdict == "uniform":
                    uniform_loops.add(item)
                    forced.update(ex.cond for ex in item.exits)
            else:
                owner = item.defn if item.defn is not None else None
                at = next((b.terminator for b in cfg.rpo if b.terminator is not None and b.terminator.args
                           and b.terminator.args[0] is item and b.terminator.op is O.BRANCH), owner)  # fmt: skip
                p = smt.value_uniform(kernel, item, at, info, level, rlimit)
                proofs[item] = p
                if p.verdict == "uniform":
                    forced.add(item)
            if p.verdict == "uniform":
                proved += 1
                progress = True
                info = compute(kernel, level, forced, uniform_loops)
                break  # re-derive the candidates from the new facts
        if not progress:
            break
    info.proofs = proofs
    info.loop_proofs = loop_proofs
    info.z3_queries = queries
    info.z3_proved = proved
    return info


def _controlling_branches(cfg: CFG, block: Block, info: UniformityInfo) -> list[Block]:
    """Divergent branch blocks that decide, transitively, whether ``block`` runs."""
    out: list[Block] = []
    seen: set[Block] = set()
    stack = [block]
    while stack:
        x = stack.pop()
        for d in cfg.control_deps(x):
            if d in seen:
                continue
            seen.add(d)
            if d in info.divergent_branches:
                out.append(d)
            stack.append(d)
    return out


def controlling_branches(cfg: CFG, block: Block, info: UniformityInfo) -> list[Block]:
    return _controlling_branches(cfg, block, info)


def dump_uniformity(u: Uniformity) -> str:
    """LLVM's ``print<uniformity>`` dump, for lit-style tests."""
    lines = []
    for level in LEVELS:
        info = u.at(level)
        lines.append(f"uniformity of kernel '{u.kernel.name}' ({level}):")
        any_div = False
        for ins in u.kernel.instrs():
            for r in ins.results:
                if r in info.varying:
                    lines.append(f"DIVERGENT: {r.name}")
                    any_div = True
        for b in u.kernel.blocks:
            if b in info.divergent_branches:
                lines.append(f"DIVERGENT BRANCH: {b.name}")
        for lp in info.divergent_loops:
            lines.append(f"DIVERGENT LOOP: {lp.header.name}")
        for lp in info.uniform_loops:
            lines.append(f"UNIFORM LOOP BY Z3: {lp.header.name}")
        for v in info.forced_uniform:
            lines.append(f"UNIFORM BY Z3: {v.name}")
        if not any_div:
            lines.append("ALL VALUES UNIFORM")
    return "\n".join(lines) + "\n"


def iter_varying(info: UniformityInfo, values: Iterable[Value]) -> list[Value]:
    return [v for v in values if v in info.varying]
