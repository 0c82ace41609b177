"""Which buffer a memory instruction touches, and what a barrier orders.

The facts the uniformity seeds and the memory analysis both need, below
both of them: the buffer an address points into (`address_root`,
`mem_root`), an access's address space (`space_of`), which instructions
write memory (`is_write`) or are workgroup barriers (`is_barrier`), which
shared-memory writes a barrier orders before which loads (`MemoryOrder`),
and the bytes of its buffer a PTX access may touch (`byte_range`).

Imports only the IR (and `mbarriers`, which does too).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

from tolk_lint.analysis.mbarriers import acts_as_barrier
from tolk_lint.ir.nodes import Block, Instr, Kernel, Value
from tolk_lint.ir.opcodes import MEMORY_WRITES, Opcode

O = Opcode


def address_root(v: Value, depth: int = 64) -> tuple[str, str] | None:
    """The buffer an address points into: ``("buffer", name)`` for a named
    buffer (ADDR), ``("param", name)`` for memory reached through a pointer
    parameter, or None when it cannot be told."""
    seen = 0
    while v is not None and seen < depth:
        seen += 1
        d = v.defn
        if d is None:
            return None
        if d.op is O.ADDR:
            return ("buffer", d.attrs.get("buffer"))
        if d.op is O.PARAM:
            return ("param", d.attrs.get("name"))
        if d.op in (O.ADD, O.SUB) and d.args:
            # the pointer is the operand that is itself an address
            cands = [a for a in d.args if _is_pointerish(a)]
            v = cands[0] if len(cands) == 1 else (d.args[0] if d.op is O.SUB else None)
            if v is None:
                return None
            continue
        if d.op is O.MAD and len(d.args) == 3:
            v = d.args[2]
            continue
        if d.op is O.CVT and d.args:
            v = d.args[0]
            continue
        return None
    return None


def _is_pointerish(v: Value, depth: int = 32) -> bool:
    for _ in range(depth):
        d = v.defn
        if d is None:
            return False
        if d.op in (O.ADDR, O.PARAM):
            return d.op is O.ADDR or v.type in ("b64", "u64", "s64", "ptr")
        if d.op is O.CVT and d.args:
            v = d.args[0]
            continue
        if d.op in (O.ADD, O.SUB) and d.args:
            return any(_is_pointerish(a, 8) for a in d.args[:1]) or (
                d.op is O.ADD and any(_is_pointerish(a, 8) for a in d.args[1:])
            )
        if d.op is O.MAD and len(d.args) == 3:
            v = d.args[2]
            continue
        return False
    return False


def mem_root(ins: Instr) -> tuple[str, str] | None:
    """The buffer a memory instruction touches (its first address operand)."""
    name = ins.attrs.get("buffer")
    if isinstance(name, str) and name:
        k = ins.block.kernel if ins.block else None
        if k is not None and k.param(name) is not None:
            return ("param", name)
        return ("buffer", name)
    if ins.args:
        return address_root(ins.args[0])
    return None


def space_of(ins: Instr) -> str:
    sp = ins.attrs.get("space")
    if sp:
        return sp
    if ins.op in (O.CP_ASYNC,):
        return "shared"
    return "generic"


def is_write(ins: Instr) -> bool:
    return ins.op in MEMORY_WRITES or ins.op is O.OPAQUE or (ins.op is O.CALL)


def is_barrier(ins: Instr) -> bool:
    """A workgroup barrier: ``bar.sync``-like, or an ``mbarrier.arrive`` that
    orders like one (`tolk_lint.analysis.mbarriers`)."""
    if ins.op is O.BARRIER:
        return ins.attrs.get("kind", "sync") in ("sync", "red", "grid", "")
    return ins.op is O.MBARRIER and ins.attrs.get("kind") == "arrive" and acts_as_barrier(ins)


class MemoryOrder:
    """Which shared-memory writes a barrier orders before which loads.

    A write W and a load R are unordered when some path runs from W to R (or
    from R to W) with no barrier on it, across loop back edges too: trip k's
    write against trip k+1's read. Per list of writes, one forward and one
    backward bit-set dataflow over the blocks (`unordered_sets`) answers
    that for every write at once; positions and each block's barrier
    indices are computed once."""

    def __init__(self, kernel: Kernel, barrier: Callable[[Instr], bool] = is_barrier):
        """``barrier``: which instructions order (the workgroup's barriers;
        `grid_barriers` for global memory across blocks)."""
        self.kernel = kernel
        self._flows: dict[int, tuple] = {}
        self.pos: dict[Instr, int] = {}
        self.barriers: dict[Block, list[int]] = {}
        for b in kernel.blocks:
            idx = []
            for i, ins in enumerate(b.instrs):
                self.pos[ins] = i
                if barrier(ins):
                    idx.append(i)
            self.barriers[b] = idx

    def unordered_sets(self, r: Instr, writes: list[Instr]) -> tuple[int, int]:
        """``(before, after)``: bit i of ``before`` is set when ``writes[i]``
        reaches ``r`` on a path with no barrier,
        of ``after`` when ``r`` reaches ``writes[i]`` so. One forward and one
        backward bit-set dataflow per list of writes, so a load costs two
        lookups instead of a question per write."""
        flow = self._flows.get(id(writes))
        if flow is None or flow[0] is not writes:
            flow = self._flows[id(writes)] = (writes, *self._flow(writes))
        _w, into, out_of, bits_in = flow
        b, i = r.block, self.pos[r]
        idx = self.barriers[b]
        k = bisect.bisect_right(idx, i)
        lo = idx[k - 1] if k else -1  # the last barrier before r
        hi = idx[k] if k < len(idx) else len(b.instrs)  # the first one after it
        before = after = 0
        for j, bit in bits_in.get(b, ()):
            if lo < j < i:
                before |= bit
            elif i < j < hi:
                after |= bit
        if lo < 0:
            before |= into[b]
        if hi == len(b.instrs):
            after |= out_of[b]
        return before, after

    def _flow(self, writes: list[Instr]):
        """Per block: the writes that reach its entry with no barrier on the
        way (forward), and those its exit reaches so (backward)."""
        bits_in: dict[Block, list[tuple[int, int]]] = {}
        for n, w in enumerate(writes):
            bits_in.setdefault(w.block, []).append((self.pos[w], 1 << n))
        blocks = self.kernel.blocks
        preds: dict[Block, list[Block]] = {b: [] for b in blocks}
        for b in blocks:
            for s in b.succs:
                preds.setdefault(s, []).append(b)
        tail: dict[Block, int] = {}  # writes after the block's last barrier
        head: dict[Block, int] = {}  # writes before its first barrier
        for b in blocks:
            idx = self.barriers[b]
            t = h = 0
            for j, bit in bits_in.get(b, ()):
                if not idx or j > idx[-1]:
                    t |= bit
                if not idx or j < idx[0]:
                    h |= bit
            tail[b], head[b] = t, h

        def solve(edges_in, gen):
            val = {b: 0 for b in blocks}
            changed = True
            while changed:
                changed = False
                for b in blocks:
                    new = 0
                    for p in edges_in(b):
                        new |= gen[p] | (val[p] if not self.barriers[p] else 0)
                    if new != val[b]:
                        val[b] = new
                        changed = True
            return val

        into = solve(lambda b: preds.get(b, ()), tail)
        out_of = solve(lambda b: b.succs, head)
        return into, out_of, bits_in


def _lowest_bit(x: int) -> int:
    return (x & -x).bit_length() - 1


def _roots_may_alias(a: tuple[str, str] | None, b: tuple[str, str] | None) -> bool:
    return a is None or b is None or a == b


# ---------------------------------------------------------------------------
# Byte ranges: which bytes of its buffer an access may touch.

_RANGE_LIMIT = 1 << 31  # offsets stay far from wrapping around


def byte_range(ins: Instr, kernel: Kernel) -> tuple[int, int] | None:
    """The bytes ``[lo, hi)`` of its buffer that memory instruction ``ins``
    may touch, offsets from the buffer's start: its address read as an
    interval (constants, thread indices within the launch, shifts, masks,
    remainders...), widened by its access size; None when the address is not
    an offset from a named buffer or cannot be bounded. Sound for every
    thread and trip: an interval, never a guess."""
    if not ins.args or kernel.language != "ptx":  # Python accesses carry element indices, not byte addresses
        return None
    size = _access_bytes(ins)
    if size is None:
        return None
    got = _interval(ins.args[0], kernel, 0)
    if got is None:
        return None
    lo, hi = got
    return lo, hi + size


def ranges_disjoint(a: Instr, b: Instr, kernel: Kernel) -> bool:
    """Whether two accesses of one buffer provably touch disjoint bytes."""
    ra, rb = byte_range(a, kernel), byte_range(b, kernel)
    return ra is not None and rb is not None and (ra[1] <= rb[0] or rb[1] <= ra[0])


def _access_bytes(ins: Instr) -> int | None:
    if ins.op is O.LOAD:
        vals = ins.results
    elif ins.op in (O.STORE, O.ATOMIC):
        vals = ins.args[1:]
    else:
        return None
    if not vals:
        return None
    from tolk_lint.ir.nodes import type_bits

    bits = [type_bits(v.type) for v in vals if v.type != "pred"]
    return max(1, sum(bits) // 8) if bits and all(bits) else None


def _interval(v: Value, kernel: Kernel, depth: int) -> tuple[int, int] | None:
    d = v.defn
    if d is None or depth > 24:
        return None
    op = d.op
    if op is O.ADDR:
        return (0, 0)
    if op is O.CONST:
        x = d.attrs.get("value")
        return (x, x) if isinstance(x, int) and not isinstance(x, bool) else None
    if op is O.SPECIAL:
        return _special_range(str(d.attrs.get("name", "")), kernel)
    if op is O.CVT and d.args:
        inner = _interval(d.args[0], kernel, depth + 1)
        return inner if inner is not None and inner[0] >= 0 else None  # a negative one may be zero-extended
    args = [_interval(a, kernel, depth + 1) for a in d.args] if op in _RANGED else None
    if args is None or any(a is None for a in args):
        if op is O.AND and len(d.args) == 2:
            c = _interval(d.args[1], kernel, depth + 1)
            if c is not None and c[0] == c[1] and c[0] >= 0:
                return (0, c[0])
        if op is O.REM and len(d.args) == 2 and not d.attrs.get("signed"):
            c = _interval(d.args[1], kernel, depth + 1)
            if c is not None and c[0] == c[1] and c[0] > 0:
                return (0, c[0] - 1)
        return None
    out = _apply_range(op, args, d)
    if out is None or out[0] < -_RANGE_LIMIT or out[1] >= _RANGE_LIMIT:
        return None
    return out


_RANGED = frozenset({O.ADD, O.SUB, O.MUL, O.MAD, O.SHL, O.SHR, O.AND, O.REM, O.MIN, O.MAX, O.SELECT, O.DIV})


def _apply_range(op, args, d: Instr) -> tuple[int, int] | None:
    if op is O.ADD and len(args) == 2:
        return args[0][0] + args[1][0], args[0][1] + args[1][1]
    if op is O.SUB and len(args) == 2:
        return args[0][0] - args[1][1], args[0][1] - args[1][0]
    if op in (O.MUL, O.MAD) and len(args) >= 2 and not d.attrs.get("hi"):
        (a0, a1), (b0, b1) = args[0], args[1]
        prods = [a0 * b0, a0 * b1, a1 * b0, a1 * b1]
        lo, hi = min(prods), max(prods)
        if op is O.MAD:
            if len(args) != 3:
                return None
            lo, hi = lo + args[2][0], hi + args[2][1]
        return lo, hi
    if op is O.SHL and len(args) == 2 and args[1][0] == args[1][1] and 0 <= args[1][0] < 31 and args[0][0] >= 0:
        return args[0][0] << args[1][0], args[0][1] << args[1][0]
    if op is O.SHR and len(args) == 2 and args[1][0] == args[1][1] and 0 <= args[1][0] < 64 and args[0][0] >= 0:
        return args[0][0] >> args[1][0], args[0][1] >> args[1][0]
    if op is O.DIV and len(args) == 2 and args[1][0] == args[1][1] and args[1][0] > 0 and args[0][0] >= 0:
        return args[0][0] // args[1][0], args[0][1] // args[1][0]
    if op is O.AND and len(args) == 2 and args[1][0] == args[1][1] and args[1][0] >= 0 and args[0][0] >= 0:
        return 0, min(args[0][1], args[1][0])
    if op is O.REM and len(args) == 2 and args[1][0] == args[1][1] and args[1][0] > 0 and args[0][0] >= 0:
        return 0, min(args[0][1], args[1][0] - 1)
    if op is O.MIN and len(args) == 2:
        return min(args[0][0], args[1][0]), min(args[0][1], args[1][1])
    if op is O.MAX and len(args) == 2:
        return max(args[0][0], args[1][0]), max(args[0][1], args[1][1])
    if op is O.SELECT and len(args) == 3:
        return min(args[1][0], args[2][0]), max(args[1][1], args[2][1])
    return None


def _special_range(name: str, kernel: Kernel) -> tuple[int, int] | None:
    base, _, dim = name.partition(".")
    block = kernel.launch.block
    if base == "tid" and dim in ("x", "y", "z"):
        n = block["xyz".index(dim)] if block is not None else (kernel.launch.threads or 1024)
        return (0, max(0, n - 1))
    if base == "ntid" and dim in ("x", "y", "z"):
        return (block["xyz".index(dim)],) * 2 if block is not None else (1, kernel.launch.threads or 1024)
    if name == "laneid":
        return (0, 31)
    if name == "warpid":
        return (0, 31)
    return None
