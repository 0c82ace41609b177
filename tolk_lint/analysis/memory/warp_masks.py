"""Which pairs of lanes a warp sync orders (`LaneClasses`).

``bar.warp.sync m`` / ``__syncwarp(m)`` / ``cuda.syncwarp(m)`` orders the
accesses of the lanes its mask names: two lanes of one warp are ordered by
it when each is named in the mask the other runs it with (a lane named in a
mask must run the sync with that lane; TL103 checks that it does). The mask
is read as a function of the lane, evaluated for the 32 lanes: a constant
(``0xFFFF``), or arithmetic on ``%laneid`` and constants, what cooperative
groups' ``tile.sync()`` computes (``0xFFFF << (laneid & ~15)``). A mask read
otherwise orders nothing here (the safe side: more pairs stay unordered).

The pairs of lanes fall into classes by the set of syncs that order them;
the race search checks the pairs of each class against the phases that
class's syncs end (`Phases` levels ``warp`` and ``warp:<ids>``), with the
class as a constraint on the two lanes. With full masks only there is one
class, every pair, at the level ``warp``.
"""

from __future__ import annotations

from tolk_lint.ir.nodes import Instr, Kernel, Value, is_float, type_bits
from tolk_lint.ir.opcodes import Opcode

O = Opcode
LANES = 32
ALL_PAIRS = (1 << (LANES * LANES)) - 1  # bit 32 * a + b: lanes a and b
MAX_RELATIONS = 6  # distinct partial relations told apart; beyond, partial masks order nothing
_U32 = 0xFFFFFFFF


class LaneClasses:
    """The warp syncs of one kernel, each with the lane pairs it orders, and
    the classes of pairs they induce."""

    def __init__(self, kernel: Kernel):
        relations: dict[Instr, int] = {}
        for ins in kernel.instrs():
            if ins.op is O.WARP_SYNC and ins.args:
                rel = _relation(ins.args[0], kernel)
                if rel:
                    relations[ins] = rel
        distinct = sorted(set(relations.values()), key=lambda r: (r != ALL_PAIRS, r))
        if len(distinct) > MAX_RELATIONS:
            distinct = [r for r in distinct if r == ALL_PAIRS]
            relations = {i: r for i, r in relations.items() if r == ALL_PAIRS}
        self.ids = {r: n for n, r in enumerate(distinct)}
        self.relation_of = {ins: self.ids[r] for ins, r in relations.items()}
        # the classes: lane pairs grouped by the set of relations holding them
        by_signature: dict[frozenset, int] = {}
        for a in range(LANES):
            for b in range(LANES):
                if a == b:
                    continue
                bit = a * LANES + b
                sig = frozenset(n for r, n in self.ids.items() if r >> bit & 1)
                by_signature[sig] = by_signature.get(sig, 0) | (1 << bit)
        full = frozenset({self.ids[ALL_PAIRS]}) if ALL_PAIRS in self.ids else frozenset()
        self.classes: list[tuple[str, list[int] | None]] = []
        for sig, pairs in sorted(by_signature.items(), key=lambda kv: sorted(kv[0])):
            level = "warp" if sig == full else "warp:" + ",".join(str(n) for n in sorted(sig))
            rows = None if pairs == ALL_PAIRS & ~_diagonal() else _rows(pairs)
            self.classes.append((level, rows))

    def any(self) -> bool:
        """Whether some warp sync orders some pair."""
        return bool(self.relation_of)

    def orders(self, ins: Instr, level: str) -> bool:
        """Whether ``ins`` ends a phase at warp level ``level``."""
        n = self.relation_of.get(ins)
        if n is None:
            return False
        if level == "warp":
            return n == self.ids.get(ALL_PAIRS)
        return str(n) in level[5:].split(",")


def lane_pair_constraint(z3, lane0, lane1, rows: list[int] | None):
    """``(lane0, lane1)`` is a pair of the class given by its ``rows`` (row
    ``a``: the lanes ``b`` it pairs lane ``a`` with); None: every pair."""
    if rows is None:
        return None
    row = z3.BitVecVal(rows[LANES - 1], 32)
    for a in range(LANES - 2, -1, -1):
        row = z3.If(lane0 == a, z3.BitVecVal(rows[a], 32), row)
    return z3.Extract(0, 0, z3.LShR(row, lane1)) == 1


def _diagonal() -> int:
    out = 0
    for a in range(LANES):
        out |= 1 << (a * LANES + a)
    return out


def _rows(pairs: int) -> list[int]:
    return [(pairs >> (a * LANES)) & _U32 for a in range(LANES)]


def _relation(mask: Value, kernel: Kernel) -> int:
    """The lane pairs a sync with ``mask`` orders: ``a`` and ``b`` when each
    names the other (0 when the mask is not a function of the lane, nor,
    under a given launch shape, of the thread: `_relation_per_warp`)."""
    per_lane = [lane_value(mask, lane, kernel) for lane in range(LANES)]
    if any(m is None for m in per_lane):
        return _relation_per_warp(mask, kernel)
    return _pairs(per_lane)


def _pairs(per_lane: list[int | None]) -> int:
    """The lane pairs that name each other (a lane with no thread names none)."""
    out = 0
    for a in range(LANES):
        for b in range(LANES):
            ma, mb = per_lane[a], per_lane[b]
            if ma is not None and mb is not None and ma >> b & 1 and mb >> a & 1:
                out |= 1 << (a * LANES + b)
    return out


MAX_THREADS = 1024


def _relation_per_warp(mask: Value, kernel: Kernel) -> int:
    """With the launch's block shape given: the mask evaluated in every
    thread of the block (cooperative groups' `tiled_partition(block, 16)`
    computes it from the thread rank and the block's size), and the pairs
    that name each other in every warp, so that one relation holds for all
    warps (the last, partial warp has fewer pairs; its missing lanes do not
    take pairs away from the others)."""
    block = kernel.launch.block
    if block is None or block[0] * block[1] * block[2] > MAX_THREADS:
        return 0
    nx, ny, nz = block
    n = nx * ny * nz
    out = ALL_PAIRS
    for w in range(0, n, LANES):
        per_lane: list[int | None] = []
        for lane in range(LANES):
            r = w + lane
            if r >= n:
                per_lane.append(None)
                continue
            env = {"laneid": lane, "tid.x": r % nx, "tid.y": r // nx % ny, "tid.z": r // (nx * ny),
                   "ntid.x": nx, "ntid.y": ny, "ntid.z": nz}  # fmt: skip
            m = thread_value(mask, env, {})
            if m is None:
                return 0
            per_lane.append(m)
        rel = _pairs(per_lane)
        # a lane past the block's end leaves its pairs to the full warps
        for lane in range(LANES):
            if per_lane[lane] is None:
                for other in range(LANES):
                    rel |= 1 << (lane * LANES + other) | 1 << (other * LANES + lane)
        out &= rel
    return out


def thread_value(v: Value, env: dict[str, int], memo: dict, depth: int = 0) -> int | None:
    """``v`` (as 32 bits) in the thread whose special registers ``env``
    gives, when it is computed from constants and those alone; else None."""
    got = _thread_value(v, env, memo, depth)
    return got & _U32 if got is not None else None


def _thread_value(v: Value, env: dict[str, int], memo: dict, depth: int) -> int | None:
    """``v`` at its own width (unsigned bits), as `thread_value`."""
    if v in memo:
        return memo[v]
    d = v.defn
    if d is None or depth > 40:
        return None
    w = _width(v)
    if d.op is O.SPECIAL:
        x = env.get(d.attrs.get("name", ""))
        got = x % (1 << w) if x is not None else None
    elif d.op is O.CONST:
        x = d.attrs.get("value")
        got = int(x) % (1 << w) if isinstance(x, (int, bool)) else None
    elif is_float(v.type) or any(is_float(a.type) for a in d.args):
        got = None  # integer arithmetic only
    else:
        args = [_thread_value(a, env, memo, depth + 1) for a in d.args]
        got = None if any(a is None for a in args) else _fold(d, v, args, [_width(a) for a in d.args], w)
    memo[v] = got
    return got


def _width(v: Value) -> int:
    return type_bits(v.type) if v.type not in ("pred", "ptr") else (1 if v.type == "pred" else 64)


def _fold(d: Instr, v: Value, args: list[int], widths: list[int], w: int) -> int | None:
    """``d``'s result (``w`` unsigned bits) from its operands' (None: not modelled here)."""
    op = d.op
    m = (1 << w) - 1
    signed = bool(d.attrs.get("signed")) or str(v.type).startswith("s")

    def sx(x: int, xw: int) -> int:  # an operand as a signed integer of its width
        return x - (1 << xw) if signed and x >> (xw - 1) & 1 else x

    xs = [sx(a, aw) for a, aw in zip(args, widths)]
    if op is O.CVT and len(args) == 1:
        # widened by the source's signedness, whatever the result's
        src = str(d.attrs.get("from_type") or d.args[0].type)
        x, xw = args[0], widths[0]
        return (x - (1 << xw) if src.startswith("s") and x >> (xw - 1) & 1 else x) & m
    if len(args) == 1 and op is O.NOT:
        return ~args[0] & m
    if op is O.MAD and len(args) == 3 and not d.attrs.get("hi"):
        return (xs[0] * xs[1] + xs[2]) & m
    if len(args) != 2:
        return None
    a, b = xs
    if op is O.MIN:
        return min(a, b) & m
    if op is O.MAX:
        return max(a, b) & m
    if op is O.AND:
        return a & b & m
    if op is O.OR:
        return (a | b) & m
    if op is O.XOR:
        return (a ^ b) & m
    if op is O.ADD:
        return (a + b) & m
    if op is O.SUB:
        return (a - b) & m
    if op is O.MUL and not d.attrs.get("hi"):
        return (a * b) & m
    n = args[1]
    if op is O.SHL:
        return (args[0] << n) & m if n < w else 0  # PTX clamps shift amounts
    if op is O.SHR:
        if signed:
            return (a >> min(n, w - 1)) & m
        return args[0] >> n if n < w else 0
    return None


def lane_value(v: Value, lane: int, kernel: Kernel, depth: int = 0) -> int | None:
    """``v`` (as 32 bits) in the thread of ``lane``, when it is computed from
    constants and the lane alone; else None."""
    d = v.defn
    if d is None or depth > 24:
        return None
    op = d.op
    if op is O.CONST:
        x = d.attrs.get("value")
        return int(x) & _U32 if isinstance(x, (int, bool)) else None
    if op is O.SPECIAL:
        return lane if d.attrs.get("name") == "laneid" else None
    if op is O.AND and _is_tid_x(d.args[0], kernel):
        # `threadIdx.x & c`, c < 32, is a lane function when rows of the block are whole warps
        c = lane_value(d.args[1], lane, kernel, depth + 1)
        return lane & c if c is not None and c < LANES else None
    if op is O.REM and _is_tid_x(d.args[0], kernel):
        c = lane_value(d.args[1], lane, kernel, depth + 1)
        return lane % c if c is not None and c > 0 and LANES % c == 0 else None
    args = [lane_value(a, lane, kernel, depth + 1) for a in d.args]
    if any(a is None for a in args):
        return None
    if op is O.CVT and len(args) == 1:
        return args[0]
    if len(args) == 1 and op is O.NOT:
        return ~args[0] & _U32
    if len(args) != 2:
        return None
    a, b = args
    if op is O.AND:
        return a & b
    if op is O.OR:
        return a | b
    if op is O.XOR:
        return a ^ b
    if op is O.ADD:
        return (a + b) & _U32
    if op is O.SUB:
        return (a - b) & _U32
    if op is O.MUL:
        return (a * b) & _U32
    if op is O.SHL:
        return (a << b) & _U32 if b < 32 else 0  # PTX clamps shift amounts
    if op is O.SHR and not d.attrs.get("signed") and not str(v.type).startswith("s"):
        return a >> b if b < 32 else 0
    return None


def _is_tid_x(v: Value, kernel: Kernel) -> bool:
    """``v`` is ``%tid.x`` and the block's rows are whole warps (so its low
    five bits are the lane)."""
    d = v.defn
    block = kernel.launch.block
    return (d is not None and d.op is O.SPECIAL and d.attrs.get("name") == "tid.x"
            and block is not None and block[0] % LANES == 0)  # fmt: skip
