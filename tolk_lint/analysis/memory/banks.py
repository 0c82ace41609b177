"""Bank conflicts (TL203 bank-conflict).

For a warp's access of 16 bytes or less, the addresses of its lanes are
evaluated with the concrete pass's evaluator (`evaluator.ThreadEval`; block
known, or a flat block when the kernel reads only tid.x); when every active
lane's address is one symbolic base plus a lane-specific constant, ways =
the most distinct 4-byte words one bank serves in one phase of the access
(lanes reading one word share it), else the access is not judged.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tolk_lint.analysis.memory.accesses import Access, pretty_buffer
from tolk_lint.analysis.memory.evaluator import Unevaluable, addr_terms
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.core import MemoryCore

O = Opcode


@dataclass(eq=False)
class BankConflict:
    access: Access
    ways: int
    stride_bytes: int | None
    warp: int
    lanes: list[int]
    bank: int
    suggestion: str
    assumed: str = ""


def find_bank_conflicts(mf: MemoryCore) -> list[BankConflict]:
    """The shared accesses whose warps meet a bank more than once, each with
    its worst warp."""
    out: list[BankConflict] = []
    # every warp of the launch's block, or (a kernel that reads only tid.x,
    # with no launch shape) of the largest flat block its bounds allow
    block, flat = mf.concrete_block
    if block is None:
        return out
    assumed = "assuming a one-dimensional block, as the kernel reads only tid.x; the launch shape is not given" \
        if flat else ""  # fmt: skip
    if flat and mf.k.launch.contract is not None:  # `kernel.forall`, or the contract TL205 inferred
        assumed = f"assuming {mf.assumed_launch()}, for its largest block"
    # Unrolled code repeats one lane pattern at many offsets: banks repeat
    # every 128 bytes, so a warp's verdict depends only on its lanes'
    # offsets from the first and on that first address modulo 128.
    memo: dict[tuple, tuple] = {}
    for acc in mf.shared:
        ins = acc.instr
        if ins.op not in (O.LOAD, O.STORE, O.ATOMIC, O.CP_ASYNC):
            continue
        if acc.width > 16 or acc.width <= 0:
            continue
        # the first trip residue of the loops around the access, the
        # evaluator TL202 uses there too (with the warp level's facts)
        loops = mf.phases.loops(ins.block)
        ev = mf.evaluator(tuple((lp, ("free", 0, "o")) for lp in loops), mf.warp_info)
        nwarps = -(-ev.n // 32)
        try:
            _sym, c = addr_terms(ev, acc)
        except Unevaluable:
            continue
        if loops and not ev.decided(ins.block):
            # a guard that depends on the trip (``while (i < 4)``, i = tid +
            # 32 k) is not told at a trip residue, and every lane would count:
            # judge the first trip instead, where it is
            ev0 = mf.evaluator(tuple((lp, ("abs", 0)) for lp in loops), mf.warp_info)
            try:
                _sym0, c0 = addr_terms(ev0, acc)
                if ev0.decided(ins.block):
                    ev, c = ev0, c0
            except Unevaluable:
                pass
        if isinstance(c, int):
            continue  # one address for the whole warp: a broadcast
        act = ev.active(acc.instr.block)
        rel = _warp_offsets(c) if act is None else None
        best: BankConflict | None = None
        for w in range(nwarps):
            lo, hi = w * 32, min(ev.n, w * 32 + 32)
            if act is None:
                lanes, addrs, which = range(lo, hi), c[lo:hi], hi - lo  # every lane: the count says which
            else:
                lanes = [i for i in range(lo, hi) if act[i]]
                addrs, which = [c[i] for i in lanes], tuple(i - lo for i in lanes)
            if len(lanes) < 2:
                continue
            first = addrs[0]
            pattern = rel[w] if rel is not None else tuple(map(first.__rsub__, addrs))
            key = (acc.width, first % 128, which, pattern)
            got = memo.get(key)
            if got is None:
                got = memo[key] = _warp_ways({i - lo: a for i, a in zip(lanes, addrs)}, acc.width)
            ways, worst, bank, stride = got
            if best is None or ways > best.ways:
                best = BankConflict(acc, ways, stride, w, worst, bank, "", assumed)
        if best is not None and best.ways > 1:
            best.suggestion = _padding(mf, acc, best)
            out.append(best)
    return out


def _warp_offsets(c: list[int]) -> list | None:
    """Per warp of ``c`` (one address per thread), its lanes' offsets from
    its first lane as bytes (a memo key), with numpy: a large kernel has
    thousands of accesses of eight warps each. None when an address or a
    difference might not fit in 64 bits (the caller then builds the keys
    itself)."""
    import numpy

    lo, hi = min(c), max(c)
    if lo < -(1 << 62) or hi >= 1 << 62:
        return None  # the differences might not fit either
    arr = numpy.array(c, dtype=numpy.int64)
    n = len(c)
    full = n - n % 32
    out = []
    if full:
        warps = arr[:full].reshape(-1, 32)
        raw = (warps - warps[:, :1]).tobytes()
        out = [raw[i : i + 256] for i in range(0, len(raw), 256)]
    if full < n:
        part = arr[full:]
        out.append((part - part[0]).tobytes())
    return out


def _warp_ways(addrs: dict[int, int], width: int):
    """(ways, lanes of the worst bank, bank, lane stride in bytes): the most
    distinct 4-byte words one bank serves in one phase of the access."""
    words_per_lane = max(1, width // 4)
    lanes_per_phase = 32 if width <= 4 else 32 // words_per_lane
    best = (1, [], 0)
    lanes_sorted = sorted(addrs)
    for ph in range(0, 32, lanes_per_phase):
        group = [ln for ln in lanes_sorted if ph <= ln < ph + lanes_per_phase]
        banks: dict[int, dict[int, list[int]]] = defaultdict(dict)
        for ln in group:
            w0 = addrs[ln] // 4
            for j in range(words_per_lane if width >= 4 else 1):
                word = w0 + j
                banks[word % 32].setdefault(word, []).append(ln)
        for bank, words in banks.items():
            if len(words) > best[0]:
                lanes = sorted({ln for ls in words.values() for ln in ls})
                best = (len(words), lanes, bank)
    stride = None
    if len(lanes_sorted) >= 2:
        l0, l1 = lanes_sorted[0], lanes_sorted[1]
        d = addrs[l1] - addrs[l0]
        if d % (l1 - l0) == 0:
            stride = d // (l1 - l0)
    return best[0], best[1], best[2], stride


MAX_ROW_BYTES = 228 * 1024  # a block's shared memory on the largest GPU: no row is longer


def _padding(mf: MemoryCore, acc: Access, bc: BankConflict) -> str:
    """The padding that puts consecutive lanes in distinct banks."""
    name = pretty_buffer(acc.root)
    stride = bc.stride_bytes
    buf = acc.buffer
    size = buf.bytes if buf is not None else None
    if not stride or stride % 4 or stride >= min(size or MAX_ROW_BYTES, MAX_ROW_BYTES):
        # no row of the array is that long: the lanes' distance is an address
        # that wrapped (a negative stride, unsigned), not a row to pad
        return f"pad the rows of `{name}` by one 4-byte word, or swizzle the index, so the lanes fall in distinct banks"
    words = stride // 4
    if mf.k.language == "python" and buf is not None and buf.shape and all(buf.shape):
        dt = _np_dtype(buf.dtype)
        per = max(1, 4 // max(1, acc.elem))
        if len(buf.shape) == 2 and stride == buf.shape[1] * acc.elem:
            rows, cols = buf.shape
            return (f"pad each row by one element: declare `{name} = cuda.shared.array(({rows}, {cols + per}), {dt})` "
                    "and keep the same indices")  # fmt: skip
        if len(buf.shape) == 1 and stride % acc.elem == 0:
            row = stride // acc.elem
            n = buf.shape[0]
            rows = -(-n // row)
            return (f"lanes are {row} elements apart: pad each row of {row} to {row + per} (allocate "
                    f"{rows * (row + per)} elements and index `{name}[t * {row + per} + k]` instead of "
                    f"`{name}[t * {row} + k]`)")  # fmt: skip
    return (f"lanes are {stride} bytes ({words} words) apart: pad each row of `{name}` by one 4-byte word, to a row "
            f"stride of {stride + 4} bytes (for a {words}x{words} float tile, "
            f"declare it `[{words}][{words + 1}]`)")  # fmt: skip


def _np_dtype(t: str) -> str:
    return {"f32": "float32", "f64": "float64", "s32": "int32", "u32": "uint32", "s64": "int64", "f16": "float16",
            "u8": "uint8", "s8": "int8", "s16": "int16", "u16": "uint16", "u64": "uint64"}.get(t, t)  # fmt: skip
