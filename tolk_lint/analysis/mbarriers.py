"""Which ``mbarrier`` arrives order memory like a block barrier.

``cuda::barrier<thread_scope_block>`` and its ``arrive``/``wait``,
``arrive_and_wait`` and ``memcpy_async(..., barrier)`` compile to an
mbarrier object in shared memory: ``mbarrier.init [b], count`` by one
thread, then in every thread ``mbarrier.arrive state, [b]`` and a loop of
``mbarrier.test_wait``/``try_wait p, [b], state`` until ``p``: a wait on a
phase returns true once ``count`` arrivals completed that phase.

What is modelled (`barrier_arrives`): an arrive A acts as a block barrier
(``bar.sync`` at A) when

1. its object is one named shared buffer that the kernel initialises
   once (outside any loop), with a count that is the block's size (the product of
   ``%ntid``, or that number for a known launch), and never drops,
   invalidates, or arrives on with a count, ``.noComplete``, a transaction
   count, or a ``cp.async.mbarrier.arrive.noinc`` -- so a phase completes
   only once every thread of the block has arrived; and
2. on every path from A, the thread crosses the success edge of a wait on
   the state A returned (the edge taken when the wait says the phase is
   complete) before any shared (or generic) memory access, call, opaque op,
   barrier or other arrive -- so everything the thread does after A that the analyses
   care about happens after every thread's arrive; and so does every other
   arrive on that object, so that no thread arrives twice in one phase.

Then accesses before any thread's A are ordered before accesses after any
thread's wait, which is the barrier's meaning, and nothing between A and the
wait needs ordering. Any other arrive orders nothing: a split arrive/wait
with shared accesses between them, parity waits (``try_wait.parity``, whose
phase is not tied to an arrive's state), transaction-count barriers (TMA),
partial counts (producer/consumer warps) -- the safe side, where races are
reported rather than hidden. ``cp.async.mbarrier.arrive`` (without
``.noinc``) makes the arrive that follows it in the thread also retire the
thread's earlier copies (see `memory.copies`). A barrier arrive under a
branch that splits the block is TL101 like ``__syncthreads()``: the waiters
never see the phase complete.

Imports only the IR.
"""

from __future__ import annotations

from tolk_lint.ir.cfg import cfg_of
from tolk_lint.ir.nodes import Block, Instr, Kernel, Value
from tolk_lint.ir.opcodes import MEMORY_READS, MEMORY_WRITES, Opcode

O = Opcode

_UNSAFE_KINDS = ("arrive_drop", "expect_tx", "complete_tx", "inval")
_ACCESSES = MEMORY_READS | MEMORY_WRITES
_STOPS = _ACCESSES | {O.CALL, O.OPAQUE, O.BARRIER, O.WARP_SYNC}


def acts_as_barrier(ins: Instr) -> bool:
    """Whether MBARRIER ``ins`` is an arrive that orders like ``bar.sync``."""
    k = ins.block.kernel if ins.block is not None else None
    return k is not None and ins in k.cached("mbarrier_barriers", barrier_arrives)


def object_of(ins: Instr) -> str | None:
    """The shared buffer an MBARRIER names (None: not known)."""
    name = ins.attrs.get("buffer")
    if isinstance(name, str) and name:
        return name
    v: Value | None = ins.args[0] if ins.args else None
    for _ in range(16):
        d = v.defn if v is not None else None
        if d is None:
            return None
        if d.op is O.ADDR:
            return d.attrs.get("buffer")
        if d.op is O.CVT and d.args:
            v = d.args[0]
            continue
        return None
    return None


def barrier_arrives(kernel: Kernel) -> frozenset[Instr]:
    """The arrives of ``kernel`` that act as block barriers (module docstring)."""
    ops = [i for i in kernel.instrs() if i.op is O.MBARRIER]
    if not ops:
        return frozenset()
    by_object: dict[str, list[Instr]] = {}
    for ins in ops:
        name = object_of(ins)
        if name is None and ins.attrs.get("kind") != "pending_count":
            return frozenset()  # an op on an object we cannot name may be on any of them
        if name is not None:
            by_object.setdefault(name, []).append(ins)
    out: set[Instr] = set()
    for name, group in by_object.items():
        buf = kernel.buffers.get(name)
        if buf is None or buf.space != "shared":
            continue
        kinds = [i.attrs.get("kind") for i in group]
        inits = [i for i in group if i.attrs.get("kind") == "init"]
        if len(inits) != 1 or len(inits[0].args) != 2 or any(k in _UNSAFE_KINDS for k in kinds):
            continue
        if any(i.attrs.get("kind") == "cp_async_arrive" and i.attrs.get("noinc") for i in group):
            continue
        arrives = [i for i in group if i.attrs.get("kind") == "arrive"]
        if any(i.attrs.get("has_count") or i.attrs.get("no_complete") or i.attrs.get("tx") or i.attrs.get("cluster")
               for i in arrives):  # fmt: skip
            continue
        if not is_block_size(inits[0].args[1], kernel) or cfg_of(kernel).loop_of(inits[0].block) is not None:
            continue
        # every arrive waits for its phase before the thread arrives again, so
        # no thread counts twice toward one phase
        if arrives and all(a.results and _waits_before_use(a, name) for a in arrives):
            out.update(arrives)
    return frozenset(out)


def is_block_size(v: Value, kernel: Kernel) -> bool:
    """``v`` is the number of threads of the block: the product of
    ``%ntid.x/y/z`` (a dimension the launch fixes at 1 may be left out), or
    the number a known launch gives."""
    block = kernel.launch.block
    factors = _factors(v, 0)
    if factors is None:
        return False
    const = 1
    dims: list[str] = []
    for f in factors:
        if isinstance(f, int):
            const *= f
        else:
            dims.append(f)
    if block is not None:
        n = const
        for d in dims:
            n *= block["xyz".index(d)]
        return n == block[0] * block[1] * block[2]
    if const != 1 or len(set(dims)) != len(dims):
        return False
    return set(dims) == {"x", "y", "z"}


def _factors(v: Value, depth: int) -> list | None:
    d = v.defn
    if d is None or depth > 12:
        return None
    if d.op is O.CONST and isinstance(d.attrs.get("value"), int):
        return [d.attrs["value"]]
    if d.op is O.SPECIAL and str(d.attrs.get("name", "")).startswith("ntid."):
        return [d.attrs["name"][5:]]
    if d.op is O.CVT and d.args:
        return _factors(d.args[0], depth + 1)
    if d.op is O.MUL and len(d.args) == 2 and not d.attrs.get("hi"):
        a, b = _factors(d.args[0], depth + 1), _factors(d.args[1], depth + 1)
        return None if a is None or b is None else a + b
    return None


def _waits_before_use(arrive: Instr, name: str) -> bool:
    """Every path from ``arrive`` crosses the success edge of a wait on its
    state before anything the analyses order (condition 2)."""
    state = arrive.results[0]
    block = arrive.block
    start = block.instrs.index(arrive) + 1
    waits: set[Value] = set()
    seen: set[Block] = set()
    work: list[tuple[Block, int]] = [(block, start)]
    while work:
        b, i = work.pop()
        if i == 0:
            if b in seen:
                continue
            seen.add(b)
        for ins in b.instrs[i:]:
            if ins is arrive:
                return False  # around again without a completed wait
            if ins.op is O.MBARRIER:
                kind = ins.attrs.get("kind")
                if kind in ("test_wait", "try_wait") and not ins.attrs.get("parity") and ins.results \
                        and len(ins.args) >= 2 and ins.args[1] is state and object_of(ins) == name:  # fmt: skip
                    waits.add(ins.results[0])
                    continue
                if kind == "pending_count":
                    continue
                return False
            if ins.op in _STOPS and (ins.op not in _ACCESSES or ins.attrs.get("space", "shared") in ("shared", "generic")):
                return False
        t = b.terminator
        if t is None or t.op in (O.RET, O.EXIT):
            continue
        if t.op is O.BRANCH and t.args:
            succ, fail = t.attrs["targets"]
            taken = _success_edge(t.args[0], waits)
            if taken is True:
                work.append((fail, 0))  # the true edge is the completed wait
                continue
            if taken is False:
                work.append((succ, 0))
                continue
        for s in b.succs:
            work.append((s, 0))
    return True


def _success_edge(cond: Value, waits: set[Value]) -> bool | None:
    """Which way a branch on ``cond`` goes once a wait in ``waits`` has said
    the phase is complete: True for its true edge, False for its false edge,
    None when ``cond`` is not a function of one such wait alone."""
    for w in waits:
        done, pending = _eval(cond, w, True, {}), _eval(cond, w, False, {})
        if done is not None and pending is not None and done != pending:
            return bool(done)
    return None


_EVALUATED = frozenset({O.CONST, O.SELECT, O.CVT, O.NOT, O.CMP, O.AND, O.OR, O.XOR})


def _eval(v: Value, wait: Value, value: bool, memo: dict, depth: int = 0):
    """``v`` when ``wait`` is ``value``, from constants and ``wait`` alone."""
    if v is wait:
        return value
    if v in memo:
        return memo[v]
    d = v.defn
    out = None
    if d is not None and depth <= 12 and d.op in _EVALUATED:
        if d.op is O.CONST:
            x = d.attrs.get("value")
            out = x if isinstance(x, (bool, int)) else None
        else:
            args = []
            for a in d.args:
                x = _eval(a, wait, value, memo, depth + 1)
                if x is None:
                    break
                args.append(x)
            else:
                out = _apply(d, v, args)
    memo[v] = out
    return out


def _apply(d: Instr, v: Value, args: list):
    if d.op is O.SELECT and len(args) == 3:
        return args[1] if args[0] else args[2]
    if d.op is O.CVT and args:
        return args[0]
    if d.op is O.NOT and args:
        return (not args[0]) if v.type == "pred" else ~int(args[0])
    if d.op is O.CMP and len(args) == 2:
        a, b = int(args[0]), int(args[1])
        return {"eq": a == b, "ne": a != b}.get(d.attrs.get("cmp", ""))
    if d.op in (O.AND, O.OR, O.XOR) and len(args) == 2:
        a, b = int(args[0]), int(args[1])
        r = a & b if d.op is O.AND else a | b if d.op is O.OR else a ^ b
        return bool(r) if v.type == "pred" else r
    return None
