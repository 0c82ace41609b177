"""Hopper's warpgroup MMA group queue: reads of accumulators still pending.

``wgmma.mma_async`` writes its accumulator registers asynchronously: the
PTX ISA leaves them undefined until a ``wgmma.wait_group N`` has retired the
group the MMA was committed in (``wgmma.commit_group``; ``wait_group N``
retires every committed group but the newest ``N``). Another
``wgmma.mma_async`` may use them as its accumulators before that (the tensor
cores order the MMAs of one warpgroup), which is how Triton chains the MMAs
of a tile; anything else that reads them -- arithmetic, a store, a move --
must come after the retiring wait.

`pending_reads` follows each ``mma_async`` along every path of its thread,
counting commits, until a wait retires it, and returns each instruction met
on the way that reads one of its results (or a PHI of one). The operands
the MMA reads from shared memory through its descriptors are not modelled
(the descriptors' addresses are opaque 64-bit values). Where the four warps
of a warpgroup must run these ops together is `placements`' business
(level ``warpgroup``).

Imports only the IR.
"""

from __future__ import annotations

from tolk_lint.ir.nodes import Block, Instr, Kernel, Value
from tolk_lint.ir.opcodes import Opcode

O = Opcode


def pending_reads(kernel: Kernel) -> list[tuple[Instr, Instr]]:
    """``(reader, mma)`` for every read of an ``mma_async``'s accumulators
    that may run before a wait retires it (cached per kernel)."""
    return kernel.cached("wgmma_pending_reads", _pending_reads)


def _pending_reads(kernel: Kernel) -> list[tuple[Instr, Instr]]:
    mmas = [i for i in kernel.instrs() if i.op is O.WGMMA and i.attrs.get("kind") == "mma"]
    if not mmas:
        return []
    waits = [int(i.attrs.get("n", 0) or 0) for i in kernel.instrs() if i.op is O.WGMMA and i.attrs.get("kind") == "wait"]
    cap = (max(waits) if waits else 0) + 2
    out: list[tuple[Instr, Instr]] = []
    for m in mmas:
        for reader in _walk(m, cap):
            out.append((reader, m))
    return out


def _walk(m: Instr, cap: int) -> list[Instr]:
    tracked: set[Value] = set(m.results)
    readers: list[Instr] = []
    seen: set[tuple[Block, int]] = set()
    b0 = m.block
    work: list[tuple[Block, int, int]] = [(b0, b0.instrs.index(m) + 1, 0)]
    while work:
        b, i, commits = work.pop()
        key = (b, commits) if i == 0 else (b, -1 - i, commits)
        if key in seen:
            continue
        seen.add(key)
        retired = False
        for ins in b.instrs[i:]:
            if ins.op is O.WGMMA:
                kind = ins.attrs.get("kind")
                if kind == "commit":
                    commits = min(commits + 1, cap)
                elif kind == "wait" and commits >= int(ins.attrs.get("n", 0) or 0) + 1:
                    retired = True
                    break
                continue  # another MMA may take them as its accumulators
            if ins.op is O.PHI:
                if any(a in tracked for a in ins.args):
                    tracked.add(ins.result)
                continue
            if any(a in tracked for a in ins.args) and ins not in readers:
                readers.append(ins)
        if retired:
            continue
        for s in b.succs:
            work.append((s, 0, commits))
    return readers
