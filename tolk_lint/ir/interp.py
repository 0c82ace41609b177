"""A reference interpreter of the IR: one workgroup, on the CPU.

`run` executes a kernel for the threads of one workgroup (``block``), one
thread at a time, and returns what every thread computed, whether the
workgroup would hang, and the shared-memory races and ``cp.async`` hazards it
observed. It is the ground truth of the property tests (uniformity soundness,
race completeness): slow, simple, and written from the PTX semantics, not
from the analyses.

    r = run(kernel, block=(64, 1, 1), params={"n": 40}, global_mem={"x": [1.0] * 64})
    r.hang                  # None, or a `Hang`: which barrier/collective, who arrived, who is elsewhere
    r.partial               # `PartialArrival`s: barriers/collectives completed while some threads had exited
    r.ok                    # no hang and no partial arrival
    r.values[v][tid]        # the last value thread tid computed for Value v
    r.history[v][tid]       # all of them, in order
    r.instances[v][trips]   # per dynamic instance (the trips of the loops around v): tid -> value
    r.differs(v, by="instance")   # what a uniformity soundness test compares
    r.barrier_counts[bar]   # tid -> how many times it ran that BARRIER
    r.races, r.async_hazards, r.oob, r.memory, r.local_memory, r.steps, r.notes

Scheduling
    Threads run one after another (linear-id order unless ``schedule`` says
    otherwise), each until it blocks or ends. A thread blocks at a BARRIER (``kind`` ``sync``/``red``; ``arrive`` does not
    block), at a warp collective (WARP_SYNC, SHUFFLE, VOTE, MATCH, REDUX) and
    at ACTIVEMASK. When no thread can run:

    - a collective runs once every non-exited lane its mask names (and that
      exists in the block) waits at the *same instruction* with the same
      mask; if some lanes of the mask had exited, it still runs and the run
      records a `PartialArrival` (``kind="collective"``);
    - ACTIVEMASK returns the lanes of the warp waiting at the same ACTIVEMASK
      instruction (the lanes that reconverged there);
    - a barrier completes when every non-exited thread waits at the same
      BARRIER instruction (`bar.sync` / `.aligned` semantics: barriers are
      keyed by instruction, ids and thread counts are ignored). Exited
      threads do not count (a barrier waits for non-exited threads), but the
      run records a `PartialArrival` (``kind="barrier"``): the early-return
      case of TL101;
    - otherwise the workgroup hangs: `RunResult.hang` says which barrier or
      collective, which threads arrived, where the others wait, which exited.

    A thread that runs more than ``max_steps`` instructions stops the run
    with a ``step-limit`` hang.

Values
    Integers are Python ints wrapped to their type's width (signed types in
    two's complement, held as negative ints); floats are Python floats
    rounded to f32/f16/bf16 where the type says so; predicates are bools;
    packed types (``f16x2``, ``e4m3x2``) are their bits. An operand whose
    representation differs from what its op computes in (``add.f32`` of a
    ``.b32`` register) is reinterpreted bit for bit in PTX; in Python
    kernels int <-> float is a numeric conversion. Division by zero gives 0
    and a note. ``attrs["floor"]`` selects Python's floor division/modulo.

Memory
    One flat byte-addressed space. Shared buffers sit at 0x0, 0x10000, ...
    (shared by the workgroup), local and register buffers at 0x1000000+ (one
    copy per thread), kernel parameters at 0x2000000 (``ld.param``), const
    buffers at 0x3000000, and each global array at 0x1_0000_0000 +
    k * 0x1000_0000. A pointer parameter's value is its array's base. Loads
    and stores are little-endian with the width of ``attrs["dtype"]``; a
    vector access reads consecutive elements, one result per lane. Accesses
    outside every buffer are recorded in `RunResult.oob` (a load gives 0, a
    store is dropped).

cp.async
    A copy reads its source when issued and lands (writes its destination)
    at the latest legal moment, the CP_ASYNC_WAIT that retires its group
    (``cp_async_policy="latest"``), or at once (``"earliest"``). Copies still
    in flight when their thread exits land then and are reported
    (``never-retired``).

Race detector (shared memory only)
    Per byte (grouped by 4-byte word and instruction), the accesses of the
    current barrier epoch: two accesses by
    different threads, at least one a write and not both atomic, with no
    barrier between them and no WARP_SYNC that both lanes executed after the
    first, are a `Race` (one per pair of instructions). A cp.async lands as a
    write by its issuing thread (``Race.async_copy``). `AsyncHazard` records
    the cp.async hazards of TL204: a read of a destination whose copy is not
    retired (``read-before-wait``), retired by another thread with no barrier
    since (``read-before-barrier``), a copy into bytes another thread reads
    in the same epoch before it reaches that copy (``copy-into-read``), a copy
    or store over a copy still in flight (``copy-over-inflight``,
    ``write-over-inflight``), and copies never retired (``never-retired``).
    Whether a read wanted another thread's copy (RAW) or the slot's previous
    contents (WAR) is told by program order, so the kinds do not depend on
    the schedule: a reader that has itself run that copy instruction as often
    wanted its data (``read-before-wait``, or ``read-before-barrier`` when its
    own copy is already retired, i.e. its program waits but has no barrier).

Limits: named barriers with thread counts (producer/consumer ``bar.arrive``
patterns) are modelled as workgroup barriers; the order of memory accesses
between barriers is the schedule's (a racy kernel may compute other values
on a GPU); shuffles from lanes that do not take part return the lane's own
value (undefined in PTX) with a note.

Not executed (`NotSupported`): CALL, OPAQUE, MMA and the other tensor-core
ops. Unknown special registers also raise.
"""

from __future__ import annotations

import ctypes
import gc
import math
import re
import struct
import weakref
import zlib
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tolk_lint.ir.cfg import cfg_of
from tolk_lint.ir.nodes import Instr, Kernel, Value, is_signed, type_bits
from tolk_lint.ir.opcodes import Opcode

O = Opcode
WARP_SIZE = 32

SHARED_BASE = 0x0
LOCAL_BASE = 0x0100_0000
PARAM_BASE = 0x0200_0000
CONST_BASE = 0x0300_0000
GLOBAL_BASE = 0x1_0000_0000
GLOBAL_STRIDE = 0x1000_0000
DEFAULT_DYNAMIC_SHARED = 48 * 1024
DEFAULT_GLOBAL_BYTES = 64 * 1024


class NotSupported(Exception):
    """An operation the interpreter does not execute."""

    def __init__(self, message: str, instr: Instr | None = None):
        super().__init__(message)
        self.instr = instr


class InterpError(Exception):
    """The IR is malformed in a way that stops execution (a value used
    before it is defined, a PHI without an operand for its predecessor)."""


# ---------------------------------------------------------------------------
# results


@dataclass(eq=False)
class Hang:
    """Why the workgroup cannot go on.

    ``kind``: ``barrier`` (live threads wait at different barriers, or some
    at a barrier and others at a collective that cannot complete),
    ``collective`` (a warp collective whose mask names lanes that wait
    elsewhere), ``step-limit`` (``thread`` ran more than ``max_steps``).
    ``instr``: the barrier/collective the lowest waiting thread is at (for
    ``step-limit``, the instruction the thread was about to run).
    ``arrived``: threads waiting at ``instr``; ``elsewhere``: every other live
    thread and the instruction it waits at; ``exited``: threads that ended."""

    kind: str
    instr: Instr | None
    arrived: tuple[int, ...]
    elsewhere: dict[int, Instr | None]
    exited: tuple[int, ...]
    thread: int | None = None
    message: str = ""

    def __str__(self) -> str:
        return self.message


@dataclass(eq=False)
class PartialArrival:
    """A barrier (or collective) that completed although some threads (lanes
    of its mask) had exited before reaching it: an early return.
    ``count``: how many times it happened in the run."""

    kind: str  # "barrier" | "collective"
    instr: Instr
    arrived: tuple[int, ...]
    exited: tuple[int, ...]
    count: int = 1


@dataclass(eq=False)
class Race:
    """Two unordered accesses of one shared byte by different threads.
    ``first``/``second`` in the order the interpreter ran them; ``threads``
    likewise. ``same_value``: both orders of the two accesses give the same
    bytes (for write-write: both wrote the same value) over every byte and
    every occurrence seen. ``async_copy``: one side is a cp.async landing
    (TL204's business, not TL201's)."""

    kind: str  # "read-write" | "write-write"
    first: Instr
    second: Instr
    threads: tuple[int, int]
    address: int
    same_value: bool
    buffer: str | None = None
    offset: int | None = None
    async_copy: bool = False
    count: int = 1


@dataclass(eq=False)
class AsyncHazard:
    """A cp.async hazard (see the module docstring for the kinds).
    ``threads``: (the copy's thread, the accessing thread)."""

    kind: str
    copy: Instr
    access: Instr | None
    threads: tuple[int, int]
    address: int
    buffer: str | None = None
    count: int = 1


@dataclass(eq=False)
class OutOfBounds:
    instr: Instr
    thread: int
    address: int
    space: str
    write: bool


@dataclass(eq=False)
class RunResult:
    """What one run showed. ``values``: Value -> thread -> the last value
    that thread computed for it; ``history``: every value, in order;
    ``memory``: final global arrays (in the form given) and shared buffers
    (bytearrays) by name; ``local_memory``: local/register buffers by name,
    then thread. ``values`` and ``memory`` are built on first use."""

    kernel: Kernel
    block: tuple[int, int, int]
    hang: Hang | None
    barrier_counts: dict[Instr, dict[int, int]]
    races: list[Race]
    async_hazards: list[AsyncHazard]
    steps: int
    partial: list[PartialArrival] = field(default_factory=list)
    local_memory: dict[str, dict[int, bytearray]] = field(default_factory=dict)
    thread_steps: dict[int, int] = field(default_factory=dict)
    exits: dict[int, Instr] = field(default_factory=dict)  # thread -> the RET/EXIT it ended at
    oob: list[OutOfBounds] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    _logs: dict[int, list] | None = field(default=None, repr=False)
    _history: dict[Value, dict[int, list]] | None = field(default=None, repr=False)
    _envs: dict[int, dict] = field(default_factory=dict, repr=False)
    _values: dict[Value, dict[int, Any]] | None = field(default=None, repr=False)
    _memory_fn: Any = field(default=None, repr=False)
    _memory: dict[str, Any] | None = field(default=None, repr=False)
    _instances: dict | None = field(default=None, repr=False)

    @property
    def values(self) -> dict[Value, dict[int, Any]]:
        if self._values is None:
            values: dict[Value, dict[int, Any]] = {}
            for tid, env in self._envs.items():
                for v, x in env.items():
                    d = values.get(v)
                    if d is None:
                        values[v] = {tid: x}
                    else:
                        d[tid] = x
            self._values = values
        return self._values

    @property
    def memory(self) -> dict[str, Any]:
        if self._memory is None:
            self._memory = self._memory_fn() if self._memory_fn is not None else {}
        return self._memory

    @property
    def history(self) -> dict[Value, dict[int, list]]:
        """Value -> thread -> every value it computed, in order (needs
        ``record_history=True``, the default)."""
        if self._history is None:
            h: dict[Value, dict[int, list]] = {}
            for tid, log in (self._logs or {}).items():
                for v, x in log:
                    if v is None:
                        continue
                    d = h.get(v)
                    if d is None:
                        d = h[v] = {}
                    lst = d.get(tid)
                    if lst is None:
                        d[tid] = [x]
                    else:
                        lst.append(x)
            self._history = h
        return self._history

    @property
    def instances(self) -> dict[Value, dict[tuple, dict[int, Any]]]:
        """Value -> dynamic instance -> thread -> value. A dynamic instance
        is the trip of every natural loop holding the value's block
        (outermost first; ``()`` outside loops): two threads computing the
        same instance of a uniform value (in LLVM's sense) agree, whatever
        other trips each ran. A value read after a loop whose trips differ
        has one instance, so temporal divergence shows. Needs
        ``record_history=True``."""
        if self._instances is None:
            out: dict[Value, dict[tuple, dict[int, Any]]] = {}
            for tid, log in (self._logs or {}).items():
                ctx: tuple = ()
                for v, x in log:
                    if v is None:
                        ctx = x
                        continue
                    d = out.get(v)
                    if d is None:
                        d = out[v] = {}
                    e = d.get(ctx)
                    if e is None:
                        d[ctx] = {tid: x}
                    else:
                        e[tid] = x
            self._instances = out
        return self._instances

    @property
    def ok(self) -> bool:
        """No hang and no barrier or collective that some threads skipped."""
        return self.hang is None and not self.partial

    @property
    def divergent_barriers(self) -> set[Instr]:
        """Barriers and collectives this run showed not all threads reach: in
        the hang, with a partial arrival, or run a different number of times
        by two threads that both reached the end of the kernel."""
        out = {p.instr for p in self.partial}
        if self.hang is not None:
            if self.hang.instr is not None and self.hang.kind != "step-limit":
                out.add(self.hang.instr)
            out |= {i for i in self.hang.elsewhere.values() if i is not None}
        if self.hang is None:
            for ins, counts in self.barrier_counts.items():
                n = len({counts.get(t, 0) for t in self.exits})
                if n > 1:
                    out.add(ins)
        return out

    def differs(self, v: Value, history: bool = False, by: str | None = None) -> bool:
        """Whether threads computed different values for ``v``, compared
        ``by``: ``"last"`` (each thread's last value; the default),
        ``"history"`` (the k-th value of any two threads that computed it at
        least k+1 times; also ``history=True``) or ``"instance"`` (the same
        dynamic instance, see `instances`: the comparison a uniformity
        soundness test wants). After a hang threads stopped at different
        points: compare by instance."""
        by = by or ("history" if history else "last")
        if by == "instance":
            for per in self.instances.get(v, {}).values():
                it = iter(per.values())
                first = next(it)
                if any(not _same(first, x) for x in it):
                    return True
            return False
        if by == "last":
            d = self.values.get(v)
            if not d:
                return False
            it = iter(d.values())
            first = next(it)
            return any(not _same(first, x) for x in it)
        d = self.history.get(v)
        if not d:
            return False
        lists = list(d.values())
        longest = max(len(x) for x in lists)
        for k in range(longest):
            seen = [x[k] for x in lists if len(x) > k]
            if any(not _same(seen[0], y) for y in seen[1:]):
                return True
        return False

    def summary(self) -> str:
        lines = [f"run {self.kernel.name} block={self.block} steps={self.steps}"]
        if self.hang:
            lines.append(f"  hang: {self.hang.message}")
        for p in self.partial:
            lines.append(
                f"  partial {p.kind} {_where(p.instr)}: {len(p.arrived)} arrived, exited {list(p.exited)[:8]}"
            )
        for r in self.races:
            lines.append(
                f"  race {r.kind} {_where(r.first)} / {_where(r.second)} threads {r.threads} "
                f"addr {r.address:#x} same_value={r.same_value}{' async' if r.async_copy else ''}"
            )
        for h in self.async_hazards:
            lines.append(
                f"  async {h.kind} copy {_where(h.copy)} access {_where(h.access)} threads {h.threads}"
            )
        for o in self.oob[:5]:
            lines.append(f"  oob {_where(o.instr)} thread {o.thread} addr {o.address:#x}")
        for n in self.notes:
            lines.append(f"  note: {n}")
        return "\n".join(lines)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _where(ins: Instr | None) -> str:
    if ins is None:
        return "-"
    loc = f"{ins.block.name if ins.block else '?'}#{ins.id}"
    if ins.span is not None:
        loc += f"@{ins.span.line}"
    return f"{ins.op.value}({loc})"


# ---------------------------------------------------------------------------
# types and representations


def _kind(t: str) -> str:
    """``pred``, ``float`` or ``int`` (packed types are their bits)."""
    if t == "pred":
        return "pred"
    if "x" in t:
        return "int"
    if t.startswith(("f", "bf", "tf")):
        return "float"
    if t.startswith(("e4", "e5", "e2", "e3")):
        return "int"
    return "int"


def _mask(bits: int) -> int:
    return (1 << bits) - 1


def _f32(x: float) -> float:
    return ctypes.c_float(x).value


_F16 = struct.Struct("<e")
_F32S = struct.Struct("<f")
_F64S = struct.Struct("<d")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


def _f16(x: float) -> float:
    try:
        return _F16.unpack(_F16.pack(x))[0]
    except (OverflowError, struct.error):
        return math.copysign(math.inf, x) if not math.isnan(x) else x


def _f32_bits(x: float) -> int:
    return _U32.unpack(_F32S.pack(_f32(x)))[0]


def _bf16_bits(x: float) -> int:
    b = _f32_bits(x)
    if (b & 0x7F800000) == 0x7F800000 and (b & 0x7FFFFF):
        return 0x7FC0
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def _bf16(x: float) -> float:
    return _F32S.unpack(_U32.pack(_bf16_bits(x) << 16))[0]


def _float_round(t: str) -> Callable[[float], float]:
    if t in ("f32", "tf32"):
        return _f32
    if t == "f16":
        return _f16
    if t == "bf16":
        return _bf16
    return float


def _to_bits(t: str) -> Callable[[Any], int]:
    """Value of type ``t`` -> its bits."""
    k = _kind(t)
    if k == "pred":
        return lambda x: 1 if x else 0
    if k == "int":
        m = _mask(type_bits(t))
        return lambda x: x & m
    if t in ("f32", "tf32"):
        return _f32_bits
    if t == "f16":
        return lambda x: _U16.unpack(_F16.pack(_f16(x)))[0]
    if t == "bf16":
        return _bf16_bits
    return lambda x: _U64.unpack(_F64S.pack(x))[0]


def _from_bits(t: str) -> Callable[[int], Any]:
    """Bits -> value of type ``t``."""
    k = _kind(t)
    if k == "pred":
        return lambda b: b != 0
    if k == "int":
        return _canon(t)
    if t in ("f32", "tf32"):
        return lambda b: _F32S.unpack(_U32.pack(b & 0xFFFFFFFF))[0]
    if t == "f16":
        return lambda b: _F16.unpack(_U16.pack(b & 0xFFFF))[0]
    if t == "bf16":
        return lambda b: _F32S.unpack(_U32.pack((b & 0xFFFF) << 16))[0]
    return lambda b: _F64S.unpack(_U64.pack(b & 0xFFFFFFFFFFFFFFFF))[0]


_CANON: dict[str, Callable[[Any], Any]] = {}


def _canon(t: str) -> Callable[[Any], Any]:
    """The canonical representation of type ``t``."""
    f = _CANON.get(t)
    if f is not None:
        return f
    k = _kind(t)
    if k == "pred":
        f = bool
    elif k == "float":
        rnd = _float_round(t)

        def f(x, rnd=rnd):
            return rnd(float(x))

    else:
        bits = type_bits(t)
        m = _mask(bits)
        if is_signed(t):
            h = 1 << (bits - 1)
            f = eval(f"lambda x: ((int(x) + {h}) & {m}) - {h}")
        else:
            f = eval(f"lambda x: int(x) & {m}")
    _CANON[t] = f
    return f


def _signed_view(bits: int) -> Callable[[int], int]:
    h, m = 1 << (bits - 1), _mask(bits)
    return lambda x: ((x + h) & m) - h


def _unsigned_view(bits: int) -> Callable[[int], int]:
    m = _mask(bits)
    return lambda x: x & m


def _coercer(src: str, dst: str, numeric: bool) -> Callable[[Any], Any] | None:
    """A function from the representation of ``src`` to that of ``dst``, or
    None when they are the same. PTX reinterprets bits between ints and
    floats; Python (``numeric``) converts the number."""
    if src == dst:
        return None
    ks, kd = _kind(src), _kind(dst)
    if ks == kd == "int":
        if type_bits(src) == type_bits(dst) and is_signed(src) == is_signed(dst):
            return None
        return _canon(dst)
    if kd == "pred":
        return lambda x: x != 0
    if ks == "pred":
        return (lambda x: 1.0 if x else 0.0) if kd == "float" else (lambda x: 1 if x else 0)
    if ks == kd == "float":
        return _canon(dst)
    if ks == "float":  # float -> int
        c = _canon(dst)
        if numeric:
            return lambda x: c(_float_to_int(x, dst, "rzi"))
        tb = _to_bits(src)
        return lambda x: c(tb(x))
    # int -> float
    if numeric:
        c = _canon(dst)
        sv = _signed_view(type_bits(src)) if is_signed(src) else (lambda x: x)
        return lambda x: c(float(sv(x)))
    fb = _from_bits(dst)
    m = _mask(type_bits(dst))
    return lambda x: fb(x & m)


def _float_to_int(x: float, t: str, rnd: str | None) -> int:
    """PTX float -> int conversion: rounded, saturated, NaN -> 0."""
    if math.isnan(x):
        return 0
    bits = type_bits(t)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if is_signed(t) else (0, _mask(bits))
    if math.isinf(x):
        return hi if x > 0 else lo
    r = (rnd or "rzi").rstrip("i")
    if r == "rn":
        v = round(x)  # Python rounds half to even, as PTX .rni
    elif r == "rm":
        v = math.floor(x)
    elif r == "rp":
        v = math.ceil(x)
    else:
        v = math.trunc(x)
    return max(lo, min(hi, v))


def _const_value(value: Any, t: str, numeric: bool) -> Any:
    k = _kind(t)
    if k == "pred":
        return bool(value)
    if k == "float":
        return _canon(t)(float(value))
    if isinstance(value, float):
        if numeric:  # Python: the number, truncated
            return _canon(t)(int(value)) if math.isfinite(value) else 0
        # PTX: the bits of a float literal (the front end already converts them)
        bits = type_bits(t)
        src = "f64" if bits == 64 else ("f16" if bits == 16 else "f32")
        return _canon(t)(_to_bits(src)(value))
    return _canon(t)(int(value))


# encoding of memory elements


def _codec(dtype: str) -> tuple[int, Callable[[Any], bytes], Callable[[bytes], Any]]:
    """(width in bytes, encode, decode) for memory element ``dtype``."""
    width = max(1, type_bits(dtype) // 8)
    k = _kind(dtype)
    if k == "float":
        tb, fb = _to_bits(dtype), _from_bits(dtype)

        def enc(x, tb=tb, w=width):
            return tb(float(x)).to_bytes(w, "little")

        def dec(b, fb=fb):
            return fb(int.from_bytes(b, "little"))

        return width, enc, dec
    if k == "pred":
        return width, (lambda x: b"\x01" if x else b"\x00"), (lambda b: b[0] != 0)
    signed = is_signed(dtype) and "x" not in dtype
    m = _mask(width * 8)

    def ienc(x, m=m, w=width):
        return (int(x) & m).to_bytes(w, "little")

    def idec(b, s=signed):
        return int.from_bytes(b, "little", signed=s)

    return width, ienc, idec


# ---------------------------------------------------------------------------
# memory


class _Region:
    __slots__ = ("base", "data", "dtype", "kind", "name", "per_thread", "size", "space")

    def __init__(
        self, name: str, space: str, base: int, size: int, per_thread: bool = False, dtype: str = "b8"
    ):
        self.name = name
        self.space = space
        self.base = base
        self.size = size
        self.per_thread = per_thread
        self.data: Any = {} if per_thread else bytearray(size)
        self.dtype = dtype
        self.kind = "buffer"

    def storage(self, tid: int) -> bytearray:
        if not self.per_thread:
            return self.data
        d = self.data.get(tid)
        if d is None:
            d = self.data[tid] = bytearray(self.size)
        return d


_BYTEMASK = [sum(0xFF << (8 * i) for i in range(4) if (m >> i) & 1) for m in range(16)]


def _words(addr: int, data: bytes) -> list[tuple[int, int, int]]:
    """The 4-byte words an access of ``data`` at ``addr`` touches: (word,
    byte mask, the bytes as a little-endian int with untouched bytes 0)."""
    n = len(data)
    if not addr & 3 and not n & 3:
        w0 = addr >> 2
        if n == 4:
            return [(w0, 15, int.from_bytes(data, "little"))]
        return [(w0 + i, 15, int.from_bytes(data[4 * i : 4 * i + 4], "little")) for i in range(n >> 2)]
    out: dict[int, list[int]] = {}
    for k in range(n):
        a = addr + k
        e = out.get(a >> 2)
        if e is None:
            e = out[a >> 2] = [0, 0]
        e[0] |= 1 << (a & 3)
        e[1] |= data[k] << (8 * (a & 3))
    return [(w, m, v) for w, (m, v) in out.items()]


def _raw_kind(reader: _Thread, copy_ins: Instr, ordinal: int) -> str:
    """How a read wanted another thread's copy (the reader ran that copy
    instruction too, ``ordinal`` times or more): when the reader's own
    instance of it is retired, its program waits before the read and lacks
    only the barrier that publishes the others' copies; otherwise it reads
    before any wait."""
    own = reader.last_copy.get(copy_ins)
    if own is not None and own.ordinal == ordinal and own.retired:
        return "read-before-barrier"
    return "read-before-wait"


def _first_byte(word: int, mask: int) -> int:
    for i in range(4):
        if (mask >> i) & 1:
            return (word << 2) + i
    return word << 2


class _Copy:
    __slots__ = ("data", "dst", "ins", "landed", "ordinal", "region", "retire_epoch", "retired", "tid")

    def __init__(self, tid, ins, dst, data, ordinal, region):
        self.tid = tid
        self.ins = ins
        self.dst = dst
        self.data = data
        self.landed = False
        self.retired = False
        self.retire_epoch = -1
        self.ordinal = ordinal
        self.region = region


# thread states
_RUNNING, _WAITING, _EXITED, _LIMIT = 0, 1, 2, 3
# what a waiting thread waits for
_W_BAR, _W_COLL, _W_ACTIVE = 0, 1, 2


class _Exit:
    pass


_BLOCK = object()  # returned by a closure whose thread must wait
_EXIT = _Exit()


class _Thread:
    __slots__ = (
        "cblock",
        "copy_count",
        "ctx",
        "ctx_loops",
        "env",
        "exit_instr",
        "groups",
        "idx",
        "items",
        "iters",
        "lane",
        "last_copy",
        "log",
        "m",
        "pc",
        "pending",
        "state",
        "steps",
        "tid",
        "wait",
        "wargs",
        "warp",
        "wkind",
        "wsync",
    )  # fmt: skip

    def __init__(self, tid, idx, machine, log):
        self.tid = tid
        self.idx = idx
        self.lane = tid % WARP_SIZE
        self.warp = tid // WARP_SIZE
        self.env: dict[Value, Any] = {}
        self.log = log
        self.cblock = None
        self.items = None
        self.pc = 0
        self.state = _RUNNING
        self.wait: Instr | None = None
        self.wkind = 0
        self.wargs: tuple = ()
        self.steps = 0
        self.pending: list[_Copy] = []
        self.groups: list[list[_Copy]] = []
        self.wsync: list[int] = []  # participants (bitset of tids) of each WARP_SYNC it ran
        self.m: _Machine = machine
        self.exit_instr: Instr | None = None
        self.copy_count: dict[Instr, int] = {}
        self.last_copy: dict[Instr, _Copy] = {}
        self.iters: dict[Any, int] = {}  # loop -> the trip this thread is in
        self.ctx: tuple = ()
        self.ctx_loops: tuple = ()


# ---------------------------------------------------------------------------
# compilation: every instruction becomes a closure over the thread


class _CBlock:
    __slots__ = ("block", "has_phis", "header_of", "inside", "instrs", "items", "loops", "moves", "size")

    def __init__(self, block):
        self.block = block
        self.items: list[Callable] = []
        self.instrs: list[Instr] = []
        self.moves: dict[Any, tuple] = {}
        self.has_phis = False
        self.size = 0
        self.loops: tuple = ()  # the natural loops holding the block, outermost first
        self.header_of = None  # the loop this block heads
        self.inside: frozenset = frozenset()  # its predecessors inside that loop (back edges)


def _compile(kernel: Kernel) -> dict:
    numeric = kernel.language == "python"
    cblocks = {b: _CBlock(b) for b in kernel.blocks}
    for b in kernel.blocks:
        cb = cblocks[b]
        phis = list(b.phis())
        cb.has_phis = bool(phis)
        for i, pred in enumerate(b.preds):
            res, srcs, convs = [], [], []
            for phi in phis:
                if i >= len(phi.args):
                    raise InterpError(f"PHI {phi.result.name} in {b.name} has no operand for {pred.name}")
                a = phi.args[i]
                res.append(phi.result)
                srcs.append(a)
                convs.append(_coercer(a.type, phi.result.type, numeric))
            cb.moves[cblocks[pred]] = (tuple(res), tuple(srcs), tuple(convs))
        for ins in b.instrs[len(phis) :]:
            cb.items.append(_compile_instr(ins, kernel, cblocks, numeric))
            cb.instrs.append(ins)
        cb.size = len(b.instrs)
        if not b.instrs or not b.instrs[-1].is_terminator:
            ins_name = b.name

            def fall_off(th, name=ins_name):
                raise InterpError(f"block {name} has no terminator")

            cb.items.append(fall_off)
            cb.instrs.append(None)
    try:
        loops = cfg_of(kernel).loops
    except Exception:  # noqa: BLE001 - instance keys are a convenience; run without them
        loops = []
    for lp in loops:
        h = cblocks.get(lp.header)
        if h is not None:
            h.header_of = lp
            h.inside = frozenset(cblocks[p] for p in lp.header.preds if p in lp.blocks and p in cblocks)
    interned: dict[tuple, tuple] = {(): ()}
    for b, cb in cblocks.items():
        holding = [lp for lp in loops if b in lp.blocks]
        holding.sort(key=lambda lp: -len(lp.blocks))
        key = tuple(holding)
        cb.loops = interned.setdefault(key, key)  # one object per loop nest: compared by identity
    return {"blocks": cblocks, "entry": cblocks[kernel.blocks[0]]}


_CODE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _compiled(kernel: Kernel) -> dict:
    """The kernel's closures, cached beside it (not in ``kernel._cache``, so
    a kernel stays picklable) and rebuilt when its blocks change."""
    sig = tuple((id(b), len(b.instrs)) for b in kernel.blocks)
    hit = _CODE.get(kernel)
    if hit is not None and hit[0] == sig:
        return hit[1]
    code = _compile(kernel)
    _CODE[kernel] = (sig, code)
    return code


def _pure(ins: Instr, fn: Callable) -> Callable:
    """A one-result op ``fn(env) -> value``."""
    r = ins.results[0]

    def item(th):
        x = fn(th.env)
        th.env[r] = x
        if th.log is not None:
            th.log.append((r, x))

    return item


_FACTORIES: dict[tuple[str, int], Callable] = {}


def _fast_fn(expr: str, operands: list[Value]) -> Callable:
    """``expr`` over ``env`` and ``a0``, ``a1``, ... as a function of env."""
    ns: dict[str, Any] = {f"a{i}": v for i, v in enumerate(operands)}
    return eval(f"lambda env: {expr}", ns)


def _fast(expr: str, r: Value, *operands: Any) -> Callable:
    """A one-result op whose value is the Python expression ``expr`` over
    ``env`` and the operands ``a0``, ``a1``, ... (compiled once per
    expression text, then bound to each instruction's values)."""
    key = (expr, len(operands))
    make = _FACTORIES.get(key)
    if make is None:
        names = ", ".join(f"a{i}" for i in range(len(operands)))
        src = (
            f"def make(r{', ' if names else ''}{names}):\n"
            "    def item(th):\n"
            "        env = th.env\n"
            f"        x = {expr}\n"
            "        env[r] = x\n"
            "        log = th.log\n"
            "        if log is not None:\n"
            "            log.append((r, x))\n"
            "    return item\n"
        )
        ns: dict[str, Any] = {}
        exec(src, ns)  # noqa: S102 - the source is built here from fixed templates
        make = _FACTORIES[key] = ns["make"]
    return make(r, *operands)


def _wrap_expr(expr: str, t: str) -> str:
    bits = type_bits(t)
    m = _mask(bits)
    if is_signed(t):
        h = 1 << (bits - 1)
        return f"((({expr}) + {h}) & {m}) - {h}"
    return f"({expr}) & {m}"


def _view_expr(v: str, vt: str, bits: int, signed: bool) -> str:
    """``v`` (a value of type ``vt``) seen as a ``bits``-wide signed/unsigned int."""
    if _kind(vt) == "int" and type_bits(vt) == bits and is_signed(vt) == signed:
        return v
    m = _mask(bits)
    if signed:
        h = 1 << (bits - 1)
        return f"((({v}) + {h}) & {m}) - {h}"
    return f"(({v}) & {m})"


def _getter(v: Value, t: str, numeric: bool) -> Callable:
    c = _coercer(v.type, t, numeric)
    if c is None:
        return lambda env: env[v]
    return lambda env: c(env[v])


def _op_type(ins: Instr) -> str:
    t = ins.attrs.get("type")
    if isinstance(t, str):
        return t
    if ins.results:
        return ins.results[0].type
    return ins.args[0].type if ins.args else "b32"


def _is_signed_op(ins: Instr, t: str) -> bool:
    s = ins.attrs.get("signed")
    if s is not None:
        return bool(s)
    if is_signed(t):
        return True
    return t.startswith("b") and any(is_signed(a.type) for a in ins.args)


_INT_TEMPLATES = {
    O.ADD: "x + y",
    O.SUB: "x - y",
    O.NEG: "-x",
    O.AND: "x & y",
    O.OR: "x | y",
    O.XOR: "x ^ y",
    O.NOT: "~x",
}
_LAMBDA_CACHE: dict[str, Callable] = {}


def _int_lambda(expr: str, nargs: int, t: str) -> Callable:
    bits = type_bits(t)
    m = _mask(bits)
    if is_signed(t):
        h = 1 << (bits - 1)
        body = f"((({expr}) + {h}) & {m}) - {h}"
    else:
        body = f"({expr}) & {m}"
    params = "x" if nargs == 1 else ("x, y" if nargs == 2 else "x, y, z")
    src = f"lambda {params}: {body}"
    f = _LAMBDA_CACHE.get(src)
    if f is None:
        f = _LAMBDA_CACHE[src] = eval(src)
    return f


def _note(th: _Thread, msg: str) -> None:
    th.m.note(msg)


def _compile_instr(ins: Instr, kernel: Kernel, cblocks: dict, numeric: bool) -> Callable:
    op = ins.op
    handler = _HANDLERS.get(op)
    if handler is None:
        return _unsupported(ins, f"{op.value} is not executed by the interpreter")
    return handler(ins, kernel, cblocks, numeric)


def _unsupported(ins: Instr, msg: str) -> Callable:
    def item(th):
        raise NotSupported(msg, ins)

    return item


# -- values without operands


def _h_const(ins, kernel, cblocks, numeric):
    v = _const_value(ins.attrs.get("value", 0), ins.results[0].type, numeric)
    return _fast("a0", ins.results[0], v)


def _h_undef(ins, kernel, cblocks, numeric):
    v = _const_value(0, ins.results[0].type, numeric)
    return _pure(ins, lambda env: v)


def _h_param(ins, kernel, cblocks, numeric):
    name = ins.attrs.get("name")
    r = ins.results[0]

    def item(th):
        x = th.m.param_value(name, r.type, numeric)
        th.env[r] = x
        if th.log is not None:
            th.log.append((r, x))

    return item


def _h_special(ins, kernel, cblocks, numeric):
    name = ins.attrs.get("name")
    r = ins.results[0]
    c = _canon(r.type)

    def item(th):
        x = c(th.m.special(th, name, ins))
        th.env[r] = x
        if th.log is not None:
            th.log.append((r, x))

    return item


def _h_addr(ins, kernel, cblocks, numeric):
    buf = ins.attrs.get("buffer")
    name = getattr(buf, "name", buf)
    r = ins.results[0]
    c = _canon(r.type)

    def item(th):
        x = c(th.m.address_of(name, ins))
        th.env[r] = x
        if th.log is not None:
            th.log.append((r, x))

    return item


# -- arithmetic


def _h_arith(ins, kernel, cblocks, numeric):
    op = ins.op
    t = _op_type(ins)
    k = _kind(t)
    args = ins.args
    attrs = ins.attrs
    if k == "float" and op in (O.AND, O.OR, O.XOR, O.NOT, O.SHL, O.SHR):
        # bitwise ops on a float register: work on its bits
        it = f"b{type_bits(t)}"
        inner = _int_arith(ins, op, it, args, attrs, numeric=False)
        if isinstance(inner, tuple):
            inner = _fast_fn(inner[1], inner[2])
        fb = _from_bits(t)
        return _pure(ins, lambda env: fb(inner(env)))
    if k == "float":
        return _pure(ins, _float_arith(ins, op, t, args, attrs, numeric))
    if k == "pred":
        return _pure(ins, _pred_arith(ins, op, args, numeric))
    f = _int_arith(ins, op, t, args, attrs, numeric)
    if isinstance(f, tuple):
        return _fast(f[1], ins.results[0], *f[2])
    return _pure(ins, f)


def _pred_arith(ins, op, args, numeric):
    gs = [_getter(a, "pred", numeric) for a in args]
    if op is O.AND:
        return lambda env: bool(gs[0](env) and gs[1](env))
    if op is O.OR:
        return lambda env: bool(gs[0](env) or gs[1](env))
    if op is O.XOR:
        return lambda env: bool(gs[0](env)) != bool(gs[1](env))
    if op is O.NOT:
        return lambda env: not gs[0](env)
    if op in (O.MIN,):
        return lambda env: bool(gs[0](env) and gs[1](env))
    if op in (O.MAX,):
        return lambda env: bool(gs[0](env) or gs[1](env))
    raise NotSupported(f"{op.value} on predicates", ins)


def _int_arith(ins, op, t, args, attrs, numeric):
    bits = type_bits(t)
    signed = _is_signed_op(ins, t)
    canon = _canon(t)
    view = _signed_view(bits) if signed else _unsigned_view(bits)
    direct = all(_coercer(a.type, t, numeric) is None or _kind(a.type) == "int" for a in args)
    if direct:
        gs = [(lambda env, a=a: env[a]) for a in args]
    else:
        gs = [_getter(a, t, numeric) if _kind(a.type) != "int" else (lambda env, a=a: env[a]) for a in args]
    if direct and op in (O.MUL, O.MAD) and not attrs.get("wide") and not attrs.get("hi"):
        tmpl = "env[a0] * env[a1]" + (" + env[a2]" if op is O.MAD else "")
        return ("fast", _wrap_expr(tmpl, t), args)
    if direct and op in (O.SHL, O.SHR) and args[1].defn is not None and args[1].defn.op is O.CONST:
        amt = min(int(args[1].defn.attrs.get("value", 0)) & 0xFFFFFFFF, bits)
        if op is O.SHL:
            return ("fast", _wrap_expr(f"env[a0] << {amt}", t), args[:1])
        return (
            "fast",
            _wrap_expr(_view_expr("env[a0]", args[0].type, bits, signed) + f" >> {amt}", t),
            args[:1],
        )
    if op in _INT_TEMPLATES and (op not in (O.ADD, O.SUB) or len(args) == 2) and direct:
        tmpl = _INT_TEMPLATES[op].replace("x", "env[a0]").replace("y", "env[a1]")
        return ("fast", _wrap_expr(tmpl, t), args)
    if op in _INT_TEMPLATES and (op not in (O.ADD, O.SUB) or len(args) == 2):
        f = _int_lambda(_INT_TEMPLATES[op], len(args), t)
        if len(args) == 1:
            if direct:
                a0 = args[0]
                return lambda env: f(env[a0])
            g0 = gs[0]
            return lambda env: f(g0(env))
        if direct:
            a0, a1 = args[0], args[1]
            return lambda env: f(env[a0], env[a1])
        g0, g1 = gs
        return lambda env: f(g0(env), g1(env))
    if op is O.MUL or op is O.MAD:
        g0, g1 = gs[0], gs[1]
        g2 = gs[2] if op is O.MAD else (lambda env: 0)
        if attrs.get("wide"):
            ob = type_bits(args[0].type)
            ov = _signed_view(ob) if signed else _unsigned_view(ob)
            return lambda env: canon(ov(g0(env)) * ov(g1(env)) + g2(env))
        if attrs.get("hi"):
            return lambda env: canon(((view(g0(env)) * view(g1(env))) >> bits) + g2(env))
        return lambda env: canon(g0(env) * g1(env) + g2(env))
    if op is O.DIV or op is O.REM:
        g0, g1 = gs
        floor = bool(attrs.get("floor"))
        is_div = op is O.DIV

        def divrem(env):
            a, b = view(g0(env)), view(g1(env))
            if b == 0:
                _note_div0(ins)
                return 0
            if floor:
                return canon(a // b if is_div else a % b)
            q = abs(a) // abs(b)
            if (a < 0) != (b < 0):
                q = -q
            return canon(q if is_div else a - q * b)

        return divrem
    if op is O.ABS:
        g0 = gs[0]
        return lambda env: canon(abs(view(g0(env))))
    if op is O.MIN or op is O.MAX:
        g0, g1 = gs
        mm = min if op is O.MIN else max
        return lambda env: canon(mm(view(g0(env)), view(g1(env))))
    if op is O.SHL or op is O.SHR:
        g0 = gs[0]
        a1 = args[1]
        amt_view = _unsigned_view(min(32, type_bits(a1.type)) if _kind(a1.type) == "int" else 32)
        g1 = (lambda env: amt_view(int(env[a1]))) if _kind(a1.type) != "float" else (lambda env: int(env[a1]))
        if op is O.SHL:
            return lambda env: canon(g0(env) << min(g1(env), bits))
        return lambda env: canon(view(g0(env)) >> min(g1(env), bits))
    if op in (O.ADD, O.SUB):  # n-ary forms
        return lambda env: canon(sum(g(env) for g in gs))
    raise NotSupported(f"{op.value} on {t}", ins)


def _note_div0(ins):
    # division by zero is recorded through the running machine (see _Machine.current)
    m = _Machine.current
    if m is not None:
        m.note(f"division by zero at {_where(ins)} (result 0)")


def _fdiv(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _fmin(a: float, b: float) -> float:
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return min(a, b)


def _fmax(a: float, b: float) -> float:
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return max(a, b)


def _fsafe(f: Callable) -> Callable:
    def g(*xs):
        try:
            return f(*xs)
        except OverflowError:
            return math.inf
        except (ValueError, ZeroDivisionError):
            return math.nan

    return g


def _float_arith(ins, op, t, args, attrs, numeric):
    c = _canon(t)
    gs = [_getter(a, t, numeric) for a in args]
    if op is O.ADD:
        g0, g1 = gs
        return lambda env: c(g0(env) + g1(env))
    if op is O.SUB:
        g0, g1 = gs
        return lambda env: c(g0(env) - g1(env))
    if op is O.MUL:
        g0, g1 = gs
        return lambda env: c(_fsafe(lambda a, b: a * b)(g0(env), g1(env)))
    if op is O.MAD:
        g0, g1, g2 = gs
        return lambda env: c(_fsafe(lambda a, b, d: a * b + d)(g0(env), g1(env), g2(env)))
    if op is O.DIV:
        g0, g1 = gs
        if attrs.get("floor"):
            return lambda env: c(_fsafe(lambda a, b: math.floor(_fdiv(a, b)))(g0(env), g1(env)))
        return lambda env: c(_fdiv(g0(env), g1(env)))
    if op is O.REM:
        g0, g1 = gs
        if attrs.get("floor"):
            return lambda env: c(_fsafe(lambda a, b: a % b)(g0(env), g1(env)))
        return lambda env: c(_fsafe(math.fmod)(g0(env), g1(env)))
    if op is O.NEG:
        g0 = gs[0]
        return lambda env: -g0(env)
    if op is O.ABS:
        g0 = gs[0]
        return lambda env: abs(g0(env))
    if op is O.MIN:
        g0, g1 = gs
        return lambda env: _fmin(g0(env), g1(env))
    if op is O.MAX:
        g0, g1 = gs
        return lambda env: _fmax(g0(env), g1(env))
    raise NotSupported(f"{op.value} on {t}", ins)


_CMP_INT = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
}  # fmt: skip
_CMP_UNSIGNED = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}


def _fcmp(cmp: str) -> Callable[[float, float], bool]:
    nan = math.isnan
    if cmp == "num":
        return lambda a, b: not nan(a) and not nan(b)
    if cmp == "nan":
        return lambda a, b: nan(a) or nan(b)
    if cmp.endswith("u") and cmp[:-1] in _CMP_INT:
        base = _CMP_INT[cmp[:-1]]
        return lambda a, b: nan(a) or nan(b) or base(a, b)
    base = _CMP_INT.get(_CMP_UNSIGNED.get(cmp, cmp))
    if base is None:
        raise NotSupported(f"comparison {cmp}")
    return lambda a, b: not nan(a) and not nan(b) and base(a, b)


def _h_cmp(ins, kernel, cblocks, numeric):
    cmp = str(ins.attrs.get("cmp", "eq"))
    a0, a1 = ins.args[0], ins.args[1]
    t = ins.attrs.get("type")
    if not isinstance(t, str):
        t = a0.type
        if (
            a0.defn is not None
            and a0.defn.op is O.CONST
            and not (a1.defn is not None and a1.defn.op is O.CONST)
        ):
            t = a1.type
        if _kind(a0.type) == "float" or _kind(a1.type) == "float":
            t = a0.type if _kind(a0.type) == "float" else a1.type
    k = _kind(t)
    g0, g1 = _getter(a0, t, numeric), _getter(a1, t, numeric)
    if k == "float":
        f = _fcmp(cmp)
        return _pure(ins, lambda env: f(g0(env), g1(env)))
    if k == "pred":
        f = _CMP_INT[_CMP_UNSIGNED.get(cmp, cmp)]
        return _pure(ins, lambda env: f(bool(g0(env)), bool(g1(env))))
    bits = type_bits(t)
    signed = ins.attrs.get("signed")
    if signed is None:
        signed = is_signed(t)
    if cmp in _CMP_UNSIGNED:
        signed = False
        cmp = _CMP_UNSIGNED[cmp]
    if cmp.endswith("u") and cmp[:-1] in _CMP_INT:
        cmp = cmp[:-1]
    f = _CMP_INT.get(cmp)
    if f is None:
        raise NotSupported(f"integer comparison {cmp}", ins)
    if _kind(a0.type) == "int" and _kind(a1.type) == "int":
        sym = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[cmp]
        e0 = _view_expr("env[a0]", a0.type, bits, bool(signed))
        e1 = _view_expr("env[a1]", a1.type, bits, bool(signed))
        return _fast(f"{e0} {sym} {e1}", ins.results[0], a0, a1)
    view = _signed_view(bits) if signed else _unsigned_view(bits)
    return _pure(ins, lambda env: f(view(g0(env)), view(g1(env))))


def _h_select(ins, kernel, cblocks, numeric):
    t = ins.results[0].type
    c = ins.args[0]
    a, b = ins.args[1], ins.args[2]
    if _coercer(a.type, t, numeric) is None and _coercer(b.type, t, numeric) is None:
        return _fast("env[a1] if env[a0] else env[a2]", ins.results[0], c, a, b)
    ga, gb = _getter(a, t, numeric), _getter(b, t, numeric)
    return _pure(ins, lambda env: ga(env) if env[c] else gb(env))


def _h_cvt(ins, kernel, cblocks, numeric):
    if len(ins.args) > 1:
        return _h_cvt_packed(ins, numeric)
    a = ins.args[0]
    src = ins.attrs.get("from_type") or a.type
    dst = ins.results[0].type
    ks, kd = _kind(src), _kind(dst)
    rnd = ins.attrs.get("rnd") or ins.attrs.get("round") or ins.attrs.get("rounding")
    sat = bool(ins.attrs.get("sat"))
    get = _getter(a, src, numeric) if _kind(a.type) != ks else (lambda env: env[a])
    cd = _canon(dst)
    if ks == "int" and kd == "int":
        sb = type_bits(src)
        view = _signed_view(sb) if is_signed(src) else _unsigned_view(sb)
        if sat:
            db = type_bits(dst)
            lo, hi = (-(1 << (db - 1)), (1 << (db - 1)) - 1) if is_signed(dst) else (0, _mask(db))
            return _pure(ins, lambda env: max(lo, min(hi, view(get(env)))))
        return _pure(ins, lambda env: cd(view(get(env))))
    if ks == "int" and kd == "float":
        sb = type_bits(src)
        view = _signed_view(sb) if is_signed(src) else _unsigned_view(sb)
        return _pure(ins, lambda env: cd(float(view(get(env)))))
    if ks == "float" and kd == "int":
        return _pure(ins, lambda env: cd(_float_to_int(float(get(env)), dst, rnd)))
    if ks == "float" and kd == "float":
        if rnd in ("rzi", "rni", "rmi", "rpi"):
            f = {"rzi": math.trunc, "rni": round, "rmi": math.floor, "rpi": math.ceil}[rnd]

            def integral(env):
                x = get(env)
                return cd(float(f(x))) if math.isfinite(x) else x

            return _pure(ins, integral)
        if sat:
            return _pure(ins, lambda env: cd(min(1.0, max(0.0, get(env)))))
        return _pure(ins, lambda env: cd(get(env)))
    if kd == "pred":
        return _pure(ins, lambda env: get(env) != 0)
    # pred -> int/float
    return _pure(ins, lambda env: cd(1 if get(env) else 0))


def _h_cvt_packed(ins, numeric):
    """``cvt.rn.f16x2.f32 d, a, b``: a converted into the upper half, b into
    the lower. Element types the interpreter cannot encode (fp8) get a
    deterministic stand-in."""
    dst = ins.results[0].type
    head, _, count = dst.partition("x")
    elem = head if head in ("f16", "bf16", "f32") else None
    n = len(ins.args)
    if elem is None or count != str(n):
        fn = f"cvt.{dst}"
        args = list(ins.args)
        return _pure(ins, lambda env: _hash_value(fn, tuple(env[a] for a in args), dst))
    src = ins.attrs.get("from_type") or ins.args[0].type
    gets = [_getter(a, src, numeric) for a in ins.args]
    w = type_bits(elem)
    to_elem = _coercer(src, elem, True) or (lambda x: x)
    tb = _to_bits(elem)

    def pack(env):
        bits = 0
        for g in gets:  # the first operand lands in the highest part
            bits = (bits << w) | (tb(to_elem(g(env))) & _mask(w))
        return bits

    return _pure(ins, pack)


def _hash_value(fn: str, xs: tuple, t: str) -> Any:
    h = zlib.crc32(repr((fn, xs)).encode())
    h = (h << 32) | zlib.crc32(repr((xs, fn)).encode())
    k = _kind(t)
    if k == "pred":
        return bool(h & 1)
    if k == "float":
        return _canon(t)((h % 2000003) / 1000.0 - 1000.0)
    return _canon(t)(h)


def _pure_fn(fn: str, args: list[Value], t: str) -> Callable[..., Any] | None:
    """Real semantics of the PURE functions that are easy to state."""
    bits = type_bits(args[0].type) if args else 32
    m = _mask(bits)
    fl = {
        "sqrt": math.sqrt, "sin": math.sin, "cos": math.cos, "tan": math.tan, "exp": math.exp,
        "log": math.log, "tanh": math.tanh, "floor": math.floor, "ceil": math.ceil, "trunc": math.trunc,
        "fabs": abs, "abs": abs, "erf": math.erf, "atan": math.atan, "log2": math.log2,
        "log10": math.log10, "exp2": lambda x: 2.0**x, "ex2": lambda x: 2.0**x, "lg2": math.log2,
        "rsqrt": lambda x: 1.0 / math.sqrt(x), "rcp": lambda x: 1.0 / x, "round": round,
        "pow": math.pow, "atan2": math.atan2, "copysign": math.copysign, "fmod": math.fmod,
        "hypot": math.hypot, "fma": lambda a, b, c: a * b + c, "min": min, "max": max,
        "fmin": _fmin, "fmax": _fmax, "isnan": math.isnan, "isinf": math.isinf,
    }  # fmt: skip
    if fn in fl and (
        _kind(t) == "float" or fn in ("isnan", "isinf") or any(_kind(a.type) == "float" for a in args)
    ):
        return _fsafe(fl[fn])
    if fn == "popc":
        return lambda x: (x & m).bit_count()
    if fn == "clz":
        return lambda x: bits - (x & m).bit_length()
    if fn == "brev":
        return lambda x: int(format(x & m, f"0{bits}b")[::-1], 2)
    if fn == "bfe":
        signed = is_signed(t)

        def bfe(a, pos, ln):
            pos, ln = pos & 0xFF, ln & 0xFF
            a &= m
            field = (a >> pos) & _mask(ln) if pos < bits else 0
            if signed and ln > 0:
                sb = min(pos + ln - 1, bits - 1)
                if (a >> sb) & 1:
                    field |= ~_mask(ln)
            return field

        return bfe
    if fn == "bfi":

        def bfi(a, b, pos, ln):
            pos, ln = pos & 0xFF, ln & 0xFF
            fm = _mask(ln) << pos
            return (b & ~fm) | ((a << pos) & fm)

        return bfi
    if fn == "prmt":

        def prmt(a, b, c):
            src = ((b & 0xFFFFFFFF) << 32) | (a & 0xFFFFFFFF)
            out = 0
            for i in range(4):
                sel = (c >> (4 * i)) & 0xF
                byte = (src >> (8 * (sel & 7))) & 0xFF
                if sel & 8 and byte & 0x80:
                    byte = 0xFF
                elif sel & 8:
                    byte = 0
                out |= byte << (8 * i)
            return out

        return prmt
    if fn == "sad":
        return lambda a, b, c: abs(a - b) + c
    if fn in ("min", "max"):
        return min if fn == "min" else max
    if fn in ("abs",):
        return abs
    return None


def _h_pure(ins, kernel, cblocks, numeric):
    fn = str(ins.attrs.get("fn", "?"))
    rs = ins.results
    t = rs[0].type if rs else "b32"
    args = list(ins.args)
    real = _pure_fn(fn, args, t)
    gets = [(lambda env, a=a: env[a]) for a in args]
    cs = [_canon(r.type) for r in rs]

    def item(th):
        env = th.env
        xs = tuple(g(env) for g in gets)
        if real is not None and len(rs) == 1:
            try:
                x = cs[0](real(*xs))
            except (TypeError, ValueError, OverflowError, ZeroDivisionError):
                x = _hash_value(fn, xs, rs[0].type)
            outs = [x]
        else:
            outs = [_hash_value(f"{fn}#{i}", xs, r.type) for i, r in enumerate(rs)]
        for r, x in zip(rs, outs):
            env[r] = x
            if th.log is not None:
                th.log.append((r, x))

    return item


def _h_pack(ins, kernel, cblocks, numeric):
    t = ins.results[0].type
    parts = [(a, _to_bits(a.type), max(1, type_bits(a.type))) for a in ins.args]
    fb = _from_bits(t)
    m = _mask(type_bits(t))

    def pack(env):
        bits, off = 0, 0
        for a, tb, w in parts:
            bits |= (tb(env[a]) & _mask(w)) << off
            off += w
        return fb(bits & m)

    return _pure(ins, pack)


def _h_extract(ins, kernel, cblocks, numeric):
    a = ins.args[0]
    t = ins.results[0].type
    w = type_bits(t)
    idx = int(ins.attrs.get("index", 0))
    tb, fb = _to_bits(a.type), _from_bits(t)
    m = _mask(w)
    return _pure(ins, lambda env: fb((tb(env[a]) >> (idx * w)) & m))


# -- memory


def _elem_type(ins: Instr) -> str:
    dt = ins.attrs.get("dtype")
    if isinstance(dt, str):
        return dt
    if ins.results:
        return ins.results[0].type
    if len(ins.args) > 1:
        return ins.args[1].type
    return "b32"


def _h_load(ins, kernel, cblocks, numeric):
    space = ins.attrs.get("space", "generic")
    dtype = _elem_type(ins)
    width, _enc, dec = _codec(dtype)
    addr_v = ins.args[0]
    gate = ins.args[1] if len(ins.args) > 1 else None
    rs = ins.results
    convs = [_coercer(dtype, r.type, numeric) for r in rs]
    zeros = [_const_value(0, r.type, numeric) for r in rs]

    def item(th):
        env = th.env
        log = th.log
        if gate is not None and not env[gate]:
            for r, z in zip(rs, zeros):
                env[r] = z
                if log is not None:
                    log.append((r, z))
            return
        addr = int(env[addr_v])
        m = th.m
        for i, r in enumerate(rs):
            x = dec(m.read(th, ins, space, addr + i * width, width))
            c = convs[i]
            if c is not None:
                x = c(x)
            env[r] = x
            if log is not None:
                log.append((r, x))

    return item


def _h_store(ins, kernel, cblocks, numeric):
    space = ins.attrs.get("space", "generic")
    dtype = _elem_type(ins)
    width, enc, _dec = _codec(dtype)
    addr_v = ins.args[0]
    vals = list(ins.args[1:])
    gate = None
    if ins.attrs.get("gate") is True or ins.attrs.get("gated") is True:
        gate = vals.pop()
    convs = [_coercer(v.type, dtype, numeric) for v in vals]

    def item(th):
        env = th.env
        if gate is not None and not env[gate]:
            return
        addr = int(env[addr_v])
        m = th.m
        for i, v in enumerate(vals):
            x = env[v]
            c = convs[i]
            if c is not None:
                x = c(x)
            m.write(th, ins, space, addr + i * width, enc(x))

    return item


def _h_atomic(ins, kernel, cblocks, numeric):
    space = ins.attrs.get("space", "generic")
    aop = str(ins.attrs.get("op", "add"))
    dtype = ins.attrs.get("dtype")
    if not isinstance(dtype, str):
        dtype = ins.results[0].type if ins.results else (ins.args[1].type if len(ins.args) > 1 else "b32")
    width, enc, dec = _codec(dtype)
    k = _kind(dtype)
    canon = _canon(dtype)
    bits = type_bits(dtype)
    view = _signed_view(bits) if is_signed(dtype) else _unsigned_view(bits)
    addr_v = ins.args[0]
    vals = list(ins.args[1:])
    convs = [_coercer(v.type, dtype, numeric) for v in vals]
    rs = ins.results
    rconv = _coercer(dtype, rs[0].type, numeric) if rs else None

    def combine(old, xs):
        if aop == "cas":
            return xs[1] if old == xs[0] else old
        if aop in ("exch", "xchg", "exchange"):
            return xs[0]
        x = xs[0] if xs else 0
        if k == "float":
            if aop == "add":
                return canon(old + x)
            if aop == "sub":
                return canon(old - x)
            if aop == "min":
                return _fmin(old, x)
            if aop == "max":
                return _fmax(old, x)
            raise NotSupported(f"atomic {aop} on {dtype}", ins)
        if aop == "add":
            return canon(old + x)
        if aop == "sub":
            return canon(old - x)
        if aop == "min":
            return canon(min(view(old), view(x)))
        if aop == "max":
            return canon(max(view(old), view(x)))
        if aop == "and":
            return canon(old & x)
        if aop == "or":
            return canon(old | x)
        if aop == "xor":
            return canon(old ^ x)
        if aop == "inc":
            return 0 if (old & _mask(bits)) >= (x & _mask(bits)) else canon(old + 1)
        if aop == "dec":
            o, xx = old & _mask(bits), x & _mask(bits)
            return canon(x) if (o == 0 or o > xx) else canon(old - 1)
        raise NotSupported(f"atomic {aop}", ins)

    def item(th):
        env = th.env
        addr = int(env[addr_v])
        xs = []
        for v, c in zip(vals, convs):
            x = env[v]
            xs.append(c(x) if c is not None else x)
        m = th.m
        old = dec(m.read(th, ins, space, addr, width, atomic=True, check=False))
        new = combine(old, xs)
        m.write(th, ins, space, addr, enc(new), atomic=True)
        if rs:
            x = rconv(old) if rconv is not None else old
            env[rs[0]] = x
            if th.log is not None:
                th.log.append((rs[0], x))

    return item


def _h_cp_async(ins, kernel, cblocks, numeric):
    nbytes = ins.attrs.get("bytes") or ins.attrs.get("size") or 16
    nbytes = int(nbytes)
    dst_v, src_v = ins.args[0], ins.args[1]
    size_v = ins.args[2] if len(ins.args) > 2 else None

    def item(th):
        env = th.env
        src_size = nbytes if size_v is None else int(env[size_v])
        th.m.cp_async(th, ins, int(env[dst_v]), int(env[src_v]), nbytes, max(0, min(src_size, nbytes)))

    return item


def _h_commit(ins, kernel, cblocks, numeric):
    def item(th):
        th.groups.append(th.pending)
        th.pending = []

    return item


def _h_wait(ins, kernel, cblocks, numeric):
    n = int(ins.attrs.get("n", 0) or 0)
    wait_all = bool(ins.attrs.get("all"))

    def item(th):
        if wait_all:
            th.groups.append(th.pending)
            th.pending = []
        groups = th.groups
        keep = 0 if wait_all else n
        done = groups[: max(0, len(groups) - keep)]
        th.groups = groups[len(done) :]
        m = th.m
        for g in done:
            for cp in g:
                m.retire(th, cp)

    return item


def _h_nop(ins, kernel, cblocks, numeric):
    def item(th):
        return None

    return item


# -- synchronisation


def _h_barrier(ins, kernel, cblocks, numeric):
    kind = ins.attrs.get("kind", "sync")
    if kind == "arrive":

        def arrive(th):
            th.m.count_barrier(ins, th.tid)

        return arrive
    pred_v = ins.args[-1] if (kind == "red" and ins.args) else None

    def item(th):
        th.state = _WAITING
        th.wait = ins
        th.wkind = _W_BAR
        th.wargs = (th.env[pred_v],) if pred_v is not None else ()
        return _BLOCK

    return item


def _h_collective(ins, kernel, cblocks, numeric):
    op = ins.op
    mask_v = ins.args[-1] if ins.args else None
    if op is O.ACTIVEMASK:

        def active(th):
            th.state = _WAITING
            th.wait = ins
            th.wkind = _W_ACTIVE
            th.wargs = ()
            return _BLOCK

        return active
    argv = list(ins.args[:-1]) if mask_v is not None else []

    def item(th):
        env = th.env
        th.state = _WAITING
        th.wait = ins
        th.wkind = _W_COLL
        mask = int(env[mask_v]) & 0xFFFFFFFF if mask_v is not None else 0xFFFFFFFF
        th.wargs = (mask, tuple(env[a] for a in argv))
        return _BLOCK

    return item


# -- control


def _h_phi(ins, kernel, cblocks, numeric):
    def item(th):
        raise InterpError(f"PHI {ins.result.name} after a non-PHI instruction in {ins.block.name}")

    return item


def _h_branch(ins, kernel, cblocks, numeric):
    c = ins.args[0]
    t, f = ins.attrs["targets"]
    ct, cf = cblocks[t], cblocks[f]
    return lambda th: ct if th.env[c] else cf


def _h_jump(ins, kernel, cblocks, numeric):
    t = cblocks[ins.attrs["target"]]
    return lambda th: t


def _h_exit(ins, kernel, cblocks, numeric):
    def item(th):
        th.exit_instr = ins
        return _EXIT

    return item


_HANDLERS: dict[Opcode, Callable] = {
    O.CONST: _h_const,
    O.PARAM: _h_param,
    O.SPECIAL: _h_special,
    O.ADDR: _h_addr,
    O.UNDEF: _h_undef,
    O.CMP: _h_cmp,
    O.SELECT: _h_select,
    O.CVT: _h_cvt,
    O.PURE: _h_pure,
    O.PACK: _h_pack,
    O.EXTRACT: _h_extract,
    O.LOAD: _h_load,
    O.STORE: _h_store,
    O.ATOMIC: _h_atomic,
    O.CP_ASYNC: _h_cp_async,
    O.CP_ASYNC_COMMIT: _h_commit,
    O.CP_ASYNC_WAIT: _h_wait,
    O.FENCE: _h_nop,
    O.BARRIER: _h_barrier,
    O.WARP_SYNC: _h_collective,
    O.SHUFFLE: _h_collective,
    O.VOTE: _h_collective,
    O.MATCH: _h_collective,
    O.REDUX: _h_collective,
    O.ACTIVEMASK: _h_collective,
    O.PHI: _h_phi,
    O.BRANCH: _h_branch,
    O.JUMP: _h_jump,
    O.RET: _h_exit,
    O.EXIT: _h_exit,
}
for _op in (
    O.ADD, O.SUB, O.MUL, O.MAD, O.DIV, O.REM, O.NEG, O.ABS, O.MIN, O.MAX,
    O.AND, O.OR, O.XOR, O.NOT, O.SHL, O.SHR,
):  # fmt: skip
    _HANDLERS[_op] = _h_arith


# ---------------------------------------------------------------------------
# the machine


_SHAPE_RE = re.compile(r"^(\w+)\.(shape)\[(\d+)\]$")
_SPECIAL_CONST = {"nsmid": 1, "smid": 0, "gridid": 0, "warpsize": WARP_SIZE, "cluster_nctarank": 1}


class _Machine:
    current: _Machine | None = None

    def __init__(
        self,
        kernel: Kernel,
        block: tuple[int, int, int],
        params: dict[str, Any],
        global_mem: dict[str, Any],
        global_dtypes: dict[str, str],
        ctaid: tuple[int, int, int],
        grid: tuple[int, int, int],
        max_steps: int,
        policy: str,
        detect_races: bool,
        record_history: bool,
        dynamic_shared: int,
    ):
        if policy not in ("latest", "earliest"):
            raise ValueError(f"cp_async_policy must be 'latest' or 'earliest', not {policy!r}")
        self.kernel = kernel
        self.block = block
        self.ctaid = ctaid
        self.grid = grid
        self.max_steps = max_steps
        self.policy = policy
        self.detect = detect_races
        self.nthreads = block[0] * block[1] * block[2]
        if self.nthreads <= 0:
            raise ValueError(f"empty block {block}")
        self.nwarps = (self.nthreads + WARP_SIZE - 1) // WARP_SIZE
        self._notes: dict[str, None] = {}
        self.regions: list[_Region] = []
        self.by_name: dict[str, _Region] = {}
        self.param_slots: dict[str, int] = {}
        self._pcache: dict[tuple, Any] = {}
        self.params_in = dict(params)
        self.param_values: dict[str, Any] = {}
        self.global_in: dict[str, Any] = {}
        self.global_dtypes = dict(global_dtypes)
        self.oob: list[OutOfBounds] = []
        self._oob_seen: set = set()
        self.epoch = 0
        self.sh_w: dict[int, dict[int, tuple]] = {}
        self.sh_r: dict[int, dict[int, tuple]] = {}
        self.inflight: dict[int, _Copy] = {}  # shared word -> the latest cp.async into it
        self.any_wsync = False
        self.races: dict[tuple, Race] = {}
        self.hazards: dict[tuple, AsyncHazard] = {}
        self.partial: dict[tuple, PartialArrival] = {}
        self.barrier_counts: dict[Instr, dict[int, int]] = {}
        self.hang: Hang | None = None
        self._layout(global_mem, dynamic_shared)
        code = _compiled(kernel)
        self.code = code
        X, Y, _Z = block
        self.threads: list[_Thread] = []
        for tid in range(self.nthreads):
            idx = (tid % X, (tid // X) % Y, tid // (X * Y))
            th = _Thread(tid, idx, self, [] if record_history else None)
            th.cblock = code["entry"]
            th.items = code["entry"].items
            th.steps = code["entry"].size
            self.threads.append(th)
        self.exited_mask = [0] * self.nwarps
        self.exists_mask = [0] * self.nwarps
        for tid in range(self.nthreads):
            self.exists_mask[tid // WARP_SIZE] |= 1 << (tid % WARP_SIZE)

    # -- notes and layout -------------------------------------------------------

    def note(self, msg: str) -> None:
        if len(self._notes) < 200:
            self._notes.setdefault(msg, None)

    def _add_region(self, reg: _Region) -> _Region:
        self.regions.append(reg)
        self.by_name.setdefault(reg.name, reg)
        return reg

    def _layout(self, global_mem: dict[str, Any], dynamic_shared: int) -> None:
        k = self.kernel
        nxt = {"shared": SHARED_BASE, "local": LOCAL_BASE, "const": CONST_BASE}
        g_index = 0
        for name, buf in k.buffers.items():
            size = buf.bytes
            if buf.dynamic or size is None or size == 0:
                size = dynamic_shared if buf.space == "shared" else DEFAULT_GLOBAL_BYTES
            space = buf.space
            if space in ("shared",):
                base = nxt["shared"]
                nxt["shared"] = base + max(0x10000, (size + 0xFFFF) & ~0xFFFF)
                reg = _Region(name, "shared", base, size, dtype=buf.dtype)
            elif space in ("local", "reg", "param"):
                base = nxt["local"]
                nxt["local"] = base + max(0x1000, (size + 0xFFF) & ~0xFFF)
                reg = _Region(name, space, base, size, per_thread=True, dtype=buf.dtype)
            elif space == "const":
                base = nxt["const"]
                nxt["const"] = base + max(0x10000, (size + 0xFFFF) & ~0xFFFF)
                reg = _Region(name, "const", base, size, dtype=buf.dtype)
            else:  # global (module-level arrays) and anything else
                base = GLOBAL_BASE + g_index * GLOBAL_STRIDE
                g_index += 1
                reg = _Region(name, space, base, size, dtype=buf.dtype)
            if buf.init:
                width, enc, _ = _codec(buf.dtype)
                data = reg.data if not reg.per_thread else None
                if data is not None:
                    for i, x in enumerate(buf.init):
                        if (i + 1) * width <= size:
                            data[i * width : (i + 1) * width] = enc(x)
            self._add_region(reg)
        # global arrays passed by parameter name (and any others given)
        pnames = [p.name for p in k.params]
        for name in list(pnames) + [n for n in global_mem if n not in pnames]:
            if name not in global_mem:
                continue
            arr = global_mem[name]
            raw, form = self._to_bytes(name, arr)
            reg = self.by_name.get(name)
            if reg is not None and not reg.per_thread and reg.space != "shared":
                if len(raw) > reg.size:
                    reg.data.extend(bytes(len(raw) - reg.size))
                    reg.size = len(raw)
                reg.data[: len(raw)] = raw
            else:
                base = GLOBAL_BASE + g_index * GLOBAL_STRIDE
                g_index += 1
                reg = _Region(name, "global", base, max(len(raw), 1), dtype=form[1])
                reg.data[: len(raw)] = raw
                self._add_region(reg)
            reg.kind = "array"
            self.global_in[name] = form
            if name not in self.params_in:
                self.param_values[name] = reg.base
        for p in k.params:
            if p.name in self.params_in or p.name in self.param_values:
                continue
            if (
                p.kind == "pointer"
                or p.dtype == "ptr"
                or p.ndim
                or (k.language == "ptx" and p.dtype in ("u64", "b64"))
            ):
                base = GLOBAL_BASE + g_index * GLOBAL_STRIDE
                g_index += 1
                reg = _Region(p.name, "global", base, DEFAULT_GLOBAL_BYTES)
                reg.kind = "array"
                self._add_region(reg)
                self.param_values[p.name] = base
                self.note(f"parameter {p.name}: no array given, using {DEFAULT_GLOBAL_BYTES} zero bytes")
        # kernel parameters in the param space (ld.param)
        pbase = PARAM_BASE
        preg = _Region("<params>", "param", pbase, max(8, 8 * len(k.params)))
        preg.kind = "params"
        for i, p in enumerate(k.params):
            val = self.param_value(p.name, p.dtype if p.dtype != "ptr" else "u64", k.language == "python")
            t = p.dtype if p.dtype not in ("ptr",) else "u64"
            width, enc, _ = _codec(t)
            width = min(width, 8)
            try:
                preg.data[8 * i : 8 * i + width] = enc(val)[:width]
            except (TypeError, ValueError, OverflowError):
                pass
            self.param_slots[p.name] = pbase + 8 * i
        self.regions.append(preg)
        self.regions.sort(key=lambda r: r.base)
        self.bases = [r.base for r in self.regions]

    def _to_bytes(self, name: str, arr: Any) -> tuple[bytes, tuple]:
        """Raw bytes of a global array and how to give it back."""
        if isinstance(arr, (bytes, bytearray, memoryview)):
            return bytes(arr), ("bytes", "b8", None)
        if hasattr(arr, "tobytes") and hasattr(arr, "dtype"):  # numpy
            dt = _numpy_type(arr.dtype)
            return arr.tobytes(), ("numpy", dt, arr)
        data = list(arr)
        dt = self.global_dtypes.get(name)
        if dt is None:
            p = self.kernel.param(name)
            if p is not None and p.dtype not in ("ptr", "u64", "b64") and _kind(p.dtype) != "pred":
                dt = p.dtype
            else:
                dt = "f32" if any(isinstance(x, float) for x in data) else "s32"
        return _pack_list(dt, data), ("list", dt, len(data))

    def param_value(self, name: str, t: str, numeric: bool) -> Any:
        key = (name, t)
        v = self._pcache.get(key)
        if v is None:
            v = self._pcache[key] = self._param_value(name, t, numeric)
        return v

    def _param_value(self, name: str, t: str, numeric: bool) -> Any:
        if name in self.params_in:
            v = self.params_in[name]
            if isinstance(v, (list, tuple)) and not isinstance(v, str):
                raise NotSupported(f"parameter {name}: pass arrays in global_mem")
            return (
                _const_value(v, t, numeric) if not isinstance(v, bool) or t == "pred" else _canon(t)(int(v))
            )
        if name in self.param_values:
            return _canon(t)(self.param_values[name])
        shape = _SHAPE_RE.match(name)
        if shape is not None and shape.group(1) in self.global_in:
            arr, axis = self.global_in[shape.group(1)], int(shape.group(3))
            dims = arr[2].shape if arr[0] == "numpy" else ((arr[2],) if arr[0] == "list" else (None,))
            if axis < len(dims) and dims[axis] is not None:
                return _canon(t)(dims[axis])
        self.note(f"parameter {name} not given: 0")
        return _const_value(0, t, numeric)

    # -- addresses ------------------------------------------------------------

    def address_of(self, name: str, ins: Instr) -> int:
        reg = self.by_name.get(name) if name in self.kernel.buffers else None
        if reg is None and name in self.param_slots:
            return self.param_slots[name]
        if reg is None:
            reg = self.by_name.get(name)
        if reg is None:
            # an unknown symbol (module-level array not in kernel.buffers)
            base = GLOBAL_BASE + (len(self.regions) + 8) * GLOBAL_STRIDE
            reg = _Region(name, "global", base, DEFAULT_GLOBAL_BYTES)
            self._add_region(reg)
            self.regions.sort(key=lambda r: r.base)
            self.bases = [r.base for r in self.regions]
            self.note(f"address of unknown symbol {name}: a fresh {DEFAULT_GLOBAL_BYTES}-byte global region")
        return reg.base

    def find(self, addr: int) -> _Region | None:
        i = bisect_right(self.bases, addr) - 1
        if i < 0:
            return None
        reg = self.regions[i]
        if addr - reg.base < reg.size:
            return reg
        return None

    def _oob(self, th, ins, addr, space, write):
        key = (ins, write)
        if key not in self._oob_seen:
            self._oob_seen.add(key)
            self.oob.append(OutOfBounds(ins, th.tid, addr, space, write))

    def read(self, th, ins, space, addr, n, atomic=False, check=True) -> bytes:
        reg = self.find(addr)
        if reg is None or addr + n - reg.base > reg.size:
            self._oob(th, ins, addr, space, False)
            return bytes(n)
        off = addr - reg.base
        data = reg.storage(th.tid)
        out = bytes(data[off : off + n])
        if reg.space == "shared" and self.detect:
            if atomic:
                pass  # checked as a write by the atomic's store
            else:
                self._shared_read(th, ins, addr, out)
        return out

    def write(self, th, ins, space, addr, raw: bytes, atomic=False, is_async=False, copy=None) -> None:
        n = len(raw)
        reg = self.find(addr)
        if reg is None or addr + n - reg.base > reg.size:
            self._oob(th, ins, addr, space, True)
            return
        if reg.space == "const":
            self.note(f"store to const memory at {_where(ins)}")
        off = addr - reg.base
        data = reg.storage(th.tid)
        old = bytes(data[off : off + n])
        data[off : off + n] = raw
        if reg.space == "shared" and self.detect:
            self._shared_write(th, ins, addr, raw, old, atomic, is_async, copy)

    # -- race detection -----------------------------------------------------------
    #
    # Shadow state of the current barrier epoch, per 4-byte word of shared
    # memory: sh_w[word] / sh_r[word] map (instruction, byte mask) to a group
    # [threads {tid: number of WARP_SYNCs it had run}, first value, all values
    # the same, (writes:) every write left the bytes unchanged, atomic, async].
    # Grouping by instruction keeps a broadcast (every thread at one word)
    # linear instead of quadratic.

    def _ordered(self, t1: int, n1: int, t2: int) -> bool:
        """Whether a WARP_SYNC that t1 ran after its n1-th, and t2 ran too, orders them."""
        ev = self.threads[t1].wsync
        if len(ev) <= n1:
            return False
        for mset in ev[n1:]:
            if (mset >> t2) & 1:
                return True
        return False

    def _other(self, tids: dict[int, int], tid: int) -> int | None:
        """A thread of ``tids`` other than ``tid`` whose access is not ordered before tid's now."""
        if not self.any_wsync:
            for t2 in tids:
                if t2 != tid:
                    return t2
            return None
        for t2, n2 in tids.items():
            if t2 != tid and not self._ordered(t2, n2, tid):
                return t2
        return None

    def _race(self, kind, first, second, threads, addr, same, is_async):
        a, b = (first, second) if id(first) <= id(second) else (second, first)
        key = (kind, id(a), id(b))
        r = self.races.get(key)
        if r is None:
            reg = self.find(addr)
            self.races[key] = Race(
                kind, first, second, threads, addr, same,
                reg.name if reg else None, addr - reg.base if reg else None, is_async,
            )  # fmt: skip
        else:
            r.count += 1
            if not same:
                r.same_value = False
            if is_async:
                r.async_copy = True

    def _hazard(self, kind, copy_ins, access, threads, addr):
        key = (kind, id(copy_ins), id(access))
        h = self.hazards.get(key)
        if h is None:
            reg = self.find(addr)
            self.hazards[key] = AsyncHazard(kind, copy_ins, access, threads, addr, reg.name if reg else None)
        else:
            h.count += 1

    def _shared_read(self, th, ins, addr, seen: bytes) -> None:
        tid = th.tid
        nsync = len(th.wsync)
        sh_w, sh_r = self.sh_w, self.sh_r
        for w, mask, val in _words(addr, seen):
            ws = sh_w.get(w)
            if ws:
                for (wi, wm), g in ws.items():
                    if wm & mask:
                        t2 = self._other(g[0], tid)
                        if t2 is not None:
                            self._race(
                                "read-write", wi, ins, (t2, tid), _first_byte(w, wm & mask), g[3], g[5]
                            )
            rs = sh_r.get(w)
            if rs is None:
                rs = sh_r[w] = {}
            g = rs.get((ins, mask))
            if g is None:
                rs[(ins, mask)] = [{tid: nsync}, val, True]
            else:
                g[0][tid] = nsync
                if val != g[1]:
                    g[2] = False
            if self.inflight:
                cp = self.inflight.get(w)
                if cp is not None:
                    self._check_inflight_read(th, ins, w << 2, cp)

    def _check_inflight_read(self, th, ins, a, cp: _Copy) -> None:
        tid = th.tid
        if not cp.retired:
            if tid == cp.tid:
                kind = "read-before-wait"
            elif th.copy_count.get(cp.ins, 0) >= cp.ordinal:
                kind = _raw_kind(th, cp.ins, cp.ordinal)
            else:
                kind = "copy-into-read"
            self._hazard(kind, cp.ins, ins, (cp.tid, tid), a)
        elif cp.tid != tid and cp.retire_epoch == self.epoch:
            self._hazard("read-before-barrier", cp.ins, ins, (cp.tid, tid), a)
        elif cp.retire_epoch < self.epoch:
            self.inflight.pop(a >> 2, None)

    def _shared_write(self, th, ins, addr, raw, old, atomic, is_async, copy) -> None:
        tid = th.tid
        nsync = len(th.wsync)
        sh_w, sh_r = self.sh_w, self.sh_r
        olds = {w: v for w, _m, v in _words(addr, old)}
        for w, mask, nv in _words(addr, raw):
            ws = sh_w.get(w)
            if ws:
                for (wi, wm), g in ws.items():
                    both = wm & mask
                    if both and not (atomic and g[4]):
                        t2 = self._other(g[0], tid)
                        if t2 is not None:
                            same = g[2] and not ((g[1] ^ nv) & _BYTEMASK[both])
                            self._race(
                                "write-write",
                                wi,
                                ins,
                                (t2, tid),
                                _first_byte(w, both),
                                same,
                                g[5] or is_async,
                            )
            else:
                ws = sh_w[w] = {}
            rs = sh_r.get(w)
            if rs:
                for (ri, rm), g in rs.items():
                    both = rm & mask
                    if both:
                        t2 = self._other(g[0], tid)
                        if t2 is not None:
                            same = g[2] and not ((g[1] ^ nv) & _BYTEMASK[mask & rm])
                            self._race("read-write", ri, ins, (t2, tid), _first_byte(w, both), same, is_async)
            ov = olds[w]
            g = ws.get((ins, mask))
            if g is None:
                ws[(ins, mask)] = [{tid: nsync}, nv, True, nv == ov, atomic, is_async]
            else:
                g[0][tid] = nsync
                if nv != g[1]:
                    g[2] = False
                if nv != ov:
                    g[3] = False
            if self.inflight:
                cp = self.inflight.get(w)
                if cp is not None:
                    if not is_async and not cp.retired:
                        self._hazard("write-over-inflight", cp.ins, ins, (cp.tid, tid), w << 2)
                    if atomic:
                        self._check_inflight_read(th, ins, w << 2, cp)

    # -- cp.async ------------------------------------------------------------------

    def cp_async(self, th, ins, dst, src, nbytes, src_size) -> None:
        data = (
            self.read(th, ins, "global", src, src_size) + bytes(nbytes - src_size)
            if src_size
            else bytes(nbytes)
        )
        n = th.copy_count.get(ins, 0) + 1
        th.copy_count[ins] = n
        reg = self.find(dst)
        cp = _Copy(th.tid, ins, dst, data, n, reg)
        th.last_copy[ins] = cp
        th.pending.append(cp)
        if reg is None or dst + nbytes - reg.base > reg.size:
            self._oob(th, ins, dst, "shared", True)
            cp.landed = True
            return
        if reg.space == "shared" and self.detect:
            tid = th.tid
            for w, mask, _v in _words(dst, data):
                old = self.inflight.get(w)
                if old is not None and not old.retired:
                    self._hazard("copy-over-inflight", old.ins, ins, (old.tid, tid), w << 2)
                rs = self.sh_r.get(w)
                if rs:
                    for (ri, rm), g in rs.items():
                        if rm & mask:
                            t2 = self._other(g[0], tid)
                            if t2 is not None:
                                # a reader already past this copy in its own program wanted its
                                # data (RAW); one before it read the slot's previous contents (WAR)
                                reader = self.threads[t2]
                                if reader.copy_count.get(ins, 0) >= n:
                                    self._hazard(_raw_kind(reader, ins, n), ins, ri, (tid, t2), w << 2)
                                else:
                                    self._hazard("copy-into-read", ins, ri, (tid, t2), w << 2)
                self.inflight[w] = cp
        if self.policy == "earliest":
            self._land(th, cp)

    def _land(self, th, cp: _Copy) -> None:
        if cp.landed:
            return
        cp.landed = True
        self.write(th, cp.ins, "shared", cp.dst, cp.data, is_async=True, copy=cp)

    def retire(self, th, cp: _Copy) -> None:
        self._land(th, cp)
        cp.retired = True
        cp.retire_epoch = self.epoch

    def _drain(self, th) -> None:
        """A thread ends: its copies still in flight land now."""
        left = list(th.pending)
        for g in th.groups:
            left.extend(g)
        th.pending, th.groups = [], []
        for cp in left:
            if not cp.retired:
                self._land(th, cp)
                self._hazard("never-retired", cp.ins, None, (th.tid, th.tid), cp.dst)

    # -- specials ------------------------------------------------------------------

    def special(self, th: _Thread, name: str, ins: Instr) -> int:
        axis = {"x": 0, "y": 1, "z": 2}
        if name.startswith("tid."):
            return th.idx[axis[name[4:]]]
        if name.startswith("ntid."):
            return self.block[axis[name[5:]]]
        if name.startswith("ctaid."):
            return self.ctaid[axis[name[6:]]]
        if name.startswith("nctaid."):
            return self.grid[axis[name[7:]]]
        if name == "laneid":
            return th.lane
        if name == "warpid":
            return th.warp
        if name == "nwarpid":
            return self.nwarps
        if name.startswith("lanemask_"):
            lane, rel = th.lane, name[9:]
            return {
                "eq": 1 << lane, "lt": (1 << lane) - 1, "le": (1 << (lane + 1)) - 1,
                "gt": 0xFFFFFFFF & ~((1 << (lane + 1)) - 1), "ge": 0xFFFFFFFF & ~((1 << lane) - 1),
            }[rel]  # fmt: skip
        if name in ("clock", "clock64", "globaltimer"):
            return th.steps * 4 + th.tid
        if name in _SPECIAL_CONST:
            return _SPECIAL_CONST[name]
        if name.startswith("clusterid.") or name == "cluster_ctarank":
            return 0
        if name in ("dynamic_smem_size", "total_smem_size"):
            return sum(r.size for r in self.regions if r.space == "shared")
        raise NotSupported(f"special register {name}", ins)

    # -- barriers and collectives ----------------------------------------------------

    def count_barrier(self, ins: Instr, tid: int) -> None:
        d = self.barrier_counts.get(ins)
        if d is None:
            d = self.barrier_counts[ins] = {}
        d[tid] = d.get(tid, 0) + 1

    def _record_partial(self, kind, ins, arrived, exited) -> None:
        key = (kind, ins)
        p = self.partial.get(key)
        if p is None:
            self.partial[key] = PartialArrival(kind, ins, tuple(arrived), tuple(exited))
        else:
            p.count += 1

    def _set_result(self, th: _Thread, ins: Instr, outs: list) -> None:
        env, log = th.env, th.log
        for r, x in zip(ins.results, outs):
            x = _canon(r.type)(x)
            env[r] = x
            if log is not None:
                log.append((r, x))

    def _release_barrier(self, ins: Instr, live: list[_Thread]) -> None:
        for th in live:
            self.count_barrier(ins, th.tid)
        if ins.results:
            preds = [bool(th.wargs[0]) if th.wargs else False for th in live]
            rt = ins.results[0].type
            op = str(ins.attrs.get("op") or ins.attrs.get("mode") or ins.attrs.get("red") or "")
            if op in ("popc", "count"):
                res = sum(preds)
            elif op == "and" or op == "all":
                res = all(preds)
            elif op in ("or", "any"):
                res = any(preds)
            else:
                res = sum(preds) if rt != "pred" else any(preds)
            for th in live:
                self._set_result(th, ins, [res])
        exited = [th.tid for th in self.threads if th.state == _EXITED]
        if exited:
            self._record_partial("barrier", ins, [th.tid for th in live], exited)
        # a barrier orders every access before it with every access after it
        self.epoch += 1
        self.sh_w.clear()
        self.sh_r.clear()
        for th in live:
            th.state = _RUNNING
            th.wait = None

    def _resolve_collectives(self) -> bool:
        groups: dict[tuple, list[_Thread]] = {}
        for th in self.threads:
            if th.state == _WAITING and th.wkind == _W_COLL:
                groups.setdefault((th.warp, id(th.wait), th.wargs[0]), []).append(th)
        progressed = False
        for (w, _iid, mask), ths in groups.items():
            here = 0
            for th in ths:
                here |= 1 << th.lane
            live = self.exists_mask[w] & ~self.exited_mask[w]
            required = mask & live
            if required & ~here:
                continue
            ins = ths[0].wait
            missing = mask & self.exists_mask[w] & self.exited_mask[w]
            if missing:
                base = w * WARP_SIZE
                self._record_partial(
                    "collective", ins, [th.tid for th in ths],
                    [base + i for i in range(WARP_SIZE) if (missing >> i) & 1],
                )  # fmt: skip
            for th in ths:
                if not (mask >> th.lane) & 1:
                    self.note(f"{_where(ins)}: thread {th.tid} is not in the mask {mask:#x} it passes")
            self._run_collective(ins, ths, here)
            for th in ths:
                th.state = _RUNNING
                th.wait = None
            progressed = True
        return progressed

    def _resolve_activemask(self) -> bool:
        groups: dict[tuple, list[_Thread]] = {}
        for th in self.threads:
            if th.state == _WAITING and th.wkind == _W_ACTIVE:
                groups.setdefault((th.warp, id(th.wait)), []).append(th)
        for ths in groups.values():
            here = 0
            for th in ths:
                here |= 1 << th.lane
            for th in ths:
                self._set_result(th, th.wait, [here])
                th.state = _RUNNING
                th.wait = None
        return bool(groups)

    def _run_collective(self, ins: Instr, ths: list[_Thread], here: int) -> None:
        op = ins.op
        by_lane = {th.lane: th for th in ths}
        if op is O.WARP_SYNC:
            members = 0
            for th in ths:
                members |= 1 << th.tid
            for th in ths:
                th.wsync.append(members)
            self.any_wsync = True
            return
        if op is O.SHUFFLE:
            mode = str(ins.attrs.get("mode", "idx"))
            python = self.kernel.language == "python"
            for th in ths:
                args = th.wargs[1]
                a = args[0]
                b = int(args[1]) & 0xFFFFFFFF if len(args) > 1 else 0
                c = int(args[2]) & 0xFFFFFFFF if len(args) > 2 else 0x1F
                if python:  # CUDA's width-32 semantics whatever the clamp operand says
                    c = 0 if mode == "up" else 0x1F
                lane = th.lane
                seg = (c >> 8) & 0x1F
                maxlane = (lane & seg) | (c & 0x1F & ~seg)
                minlane = lane & seg
                if mode == "up":
                    j = lane - b
                    ok = j >= maxlane
                elif mode == "down":
                    j = lane + b
                    ok = j <= maxlane
                elif mode == "bfly":
                    j = lane ^ b
                    ok = j <= maxlane
                else:
                    j = minlane | (b & ~seg & 0x1F)
                    ok = j <= maxlane
                if not ok:
                    j = lane
                src = by_lane.get(j)
                if src is None:
                    self.note(
                        f"{_where(ins)}: lane {lane} reads lane {j}, which does not take part (undefined)"
                    )
                    val = a
                else:
                    val = src.wargs[1][0]
                self._set_result(th, ins, [val, ok])
            return
        if op is O.VOTE:
            mode = str(ins.attrs.get("mode", "all"))
            votes = {th.lane: bool(th.wargs[1][0]) if th.wargs[1] else False for th in ths}
            ballot = 0
            for lane, v in votes.items():
                if v:
                    ballot |= 1 << lane
            vals = list(votes.values())
            for th in ths:
                if mode == "ballot":
                    res = ballot
                elif mode == "any":
                    res = any(vals)
                elif mode == "uni":
                    res = all(vals) or not any(vals)
                else:
                    res = all(vals)
                self._set_result(th, ins, [res])
            return
        if op is O.MATCH:
            mode = str(ins.attrs.get("mode", "any"))
            vals = {th.lane: th.wargs[1][0] for th in ths}
            for th in ths:
                mine = vals[th.lane]
                same = 0
                for lane, v in vals.items():
                    if _same(v, mine):
                        same |= 1 << lane
                if mode == "all":
                    allsame = same == here
                    self._set_result(th, ins, [here if allsame else 0, allsame])
                else:
                    self._set_result(th, ins, [same])
            return
        if op is O.REDUX:
            rop = str(ins.attrs.get("op") or ins.attrs.get("mode") or "add")
            t = ins.args[0].type
            k = _kind(t)
            bits = type_bits(t)
            view = (
                (lambda x: x)
                if k != "int"
                else (_signed_view(bits) if is_signed(t) else _unsigned_view(bits))
            )
            xs = [view(th.wargs[1][0]) for th in ths]
            if rop == "add":
                res = sum(xs)
            elif rop == "min":
                res = min(xs)
            elif rop == "max":
                res = max(xs)
            elif rop == "and":
                res = -1
                for x in xs:
                    res &= x
            elif rop == "or":
                res = 0
                for x in xs:
                    res |= x
            elif rop == "xor":
                res = 0
                for x in xs:
                    res ^= x
            else:
                raise NotSupported(f"redux {rop}", ins)
            for th in ths:
                self._set_result(th, ins, [res])
            return
        raise NotSupported(f"{op.value}", ins)

    # -- the scheduler ---------------------------------------------------------------

    def _run_thread(self, th: _Thread) -> None:
        limit = self.max_steps
        items = th.items
        pc = th.pc
        env = th.env
        try:
            while True:
                sig = items[pc](th)
                pc += 1
                if sig is None:
                    continue
                if sig is _BLOCK:
                    th.items, th.pc = items, pc
                    return
                if sig is _EXIT:
                    th.state = _EXITED
                    th.items, th.pc = items, pc
                    self.exited_mask[th.warp] |= 1 << th.lane
                    self._drain(th)
                    return
                # entering a block
                log = th.log
                if log is not None:
                    lp = sig.header_of
                    if lp is not None:
                        th.iters[lp] = th.iters.get(lp, -1) + 1 if th.cblock in sig.inside else 0
                    if lp is not None or sig.loops is not th.ctx_loops:
                        th.ctx_loops = sig.loops
                        ctx = tuple([th.iters.get(x, 0) for x in sig.loops]) if sig.loops else ()
                        if ctx != th.ctx:
                            th.ctx = ctx
                            log.append((None, ctx))
                if sig.has_phis:
                    mv = sig.moves.get(th.cblock)
                    if mv is None:
                        raise InterpError(
                            f"{sig.block.name} entered from {th.cblock.block.name}, not a predecessor"
                        )
                    res, srcs, convs = mv
                    vals = [env[s] if c is None else c(env[s]) for s, c in zip(srcs, convs)]
                    log = th.log
                    for r, x in zip(res, vals):
                        env[r] = x
                        if log is not None:
                            log.append((r, x))
                th.cblock = sig
                items = sig.items
                pc = 0
                th.steps += sig.size
                if th.steps > limit:
                    th.state = _LIMIT
                    th.items, th.pc = items, pc
                    return
        except KeyError as e:
            ins = th.cblock.instrs[pc] if pc < len(th.cblock.instrs) else None
            v = e.args[0] if e.args else None
            if isinstance(v, Value):
                raise InterpError(
                    f"thread {th.tid}: {v.name} used before it is defined, at {_where(ins)}"
                ) from None
            raise

    def run(self, schedule: Any = "forward") -> None:
        threads = self.threads
        if schedule == "forward":
            order = list(threads)
        elif schedule == "reverse":
            order = threads[::-1]
        elif isinstance(schedule, int) and not isinstance(schedule, bool):
            import random

            order = list(threads)
            random.Random(schedule).shuffle(order)
        else:
            raise ValueError(f"schedule must be 'forward', 'reverse' or an int seed, not {schedule!r}")
        while True:
            for th in order:
                if th.state == _RUNNING:
                    self._run_thread(th)
                    if th.state == _LIMIT:
                        ins = th.cblock.instrs[th.pc] if th.pc < len(th.cblock.instrs) else None
                        self.hang = Hang(
                            "step-limit", ins, (), {}, tuple(t.tid for t in threads if t.state == _EXITED),
                            thread=th.tid,
                            message=f"thread {th.tid} ran more than {self.max_steps} steps (at {_where(ins)})",
                        )  # fmt: skip
                        return
            if self._resolve_collectives():
                continue
            if self._resolve_activemask():
                continue
            live = [th for th in threads if th.state != _EXITED]
            if not live:
                return
            first = live[0].wait
            if all(th.wkind == _W_BAR and th.wait is first for th in live):
                self._release_barrier(first, live)
                continue
            self.hang = self._make_hang(live)
            return

    def _make_hang(self, live: list[_Thread]) -> Hang:
        coll = [th for th in live if th.wkind == _W_COLL]
        anchor = coll[0] if coll else live[0]
        ins = anchor.wait
        arrived = tuple(th.tid for th in live if th.wait is ins)
        elsewhere = {th.tid: th.wait for th in live if th.wait is not ins}
        exited = tuple(th.tid for th in self.threads if th.state == _EXITED)
        kind = "collective" if coll else "barrier"
        others = sorted({_where(i) for i in elsewhere.values()})
        msg = (
            f"{kind} hang at {_where(ins)}: threads {_ranges(arrived)} wait there"
            + (f"; {_ranges(tuple(elsewhere))} wait at {', '.join(others)}" if elsewhere else "")
            + (f"; {_ranges(exited)} exited" if exited else "")
        )
        return Hang(kind, ins, arrived, elsewhere, exited, message=msg)

    def _final_memory(self) -> dict[str, Any]:
        memory: dict[str, Any] = {}
        for reg in self.regions:
            if reg.kind == "params" or reg.per_thread:
                continue
            if reg.kind == "array" and reg.name in self.global_in:
                memory[reg.name] = _from_region(reg, self.global_in[reg.name])
            else:
                memory[reg.name] = bytearray(reg.data)
        return memory

    def result(self) -> RunResult:
        local: dict[str, dict[int, bytearray]] = {}
        for reg in self.regions:
            if reg.per_thread:
                local[reg.name] = dict(reg.data)
        return RunResult(
            kernel=self.kernel,
            block=self.block,
            hang=self.hang,
            barrier_counts=self.barrier_counts,
            races=list(self.races.values()),
            async_hazards=list(self.hazards.values()),
            _envs={th.tid: th.env for th in self.threads},
            _memory_fn=self._final_memory,
            steps=sum(th.steps for th in self.threads),
            partial=list(self.partial.values()),
            local_memory=local,
            thread_steps={th.tid: th.steps for th in self.threads},
            exits={th.tid: th.exit_instr for th in self.threads if th.state == _EXITED},
            oob=self.oob,
            notes=list(self._notes),
            _logs={th.tid: th.log for th in self.threads} if self.threads[0].log is not None else None,
        )


_STRUCT_CODES = {
    "s8": "b", "u8": "B", "b8": "B", "s16": "h", "u16": "H", "b16": "H", "s32": "i", "u32": "I",
    "b32": "I", "s64": "q", "u64": "Q", "b64": "Q", "f32": "f", "f64": "d", "f16": "e",
}  # fmt: skip


def _pack_list(dt: str, data: list) -> bytes:
    code = _STRUCT_CODES.get(dt)
    if code is not None:
        try:
            return struct.pack(f"<{len(data)}{code}", *data)
        except (struct.error, OverflowError, TypeError):
            pass
    _w, enc, _ = _codec(dt)
    return b"".join(enc(x) for x in data)


def _unpack_list(dt: str, raw: bytes, n: int) -> list:
    code = _STRUCT_CODES.get(dt)
    width, _enc, dec = _codec(dt)
    if code is not None and dt != "f32":
        return list(struct.unpack_from(f"<{n}{code}", raw))
    if dt == "f32":
        return [float(x) for x in struct.unpack_from(f"<{n}f", raw)]
    return [dec(raw[i * width : (i + 1) * width]) for i in range(n)]


def _numpy_type(dt: Any) -> str:
    kind, size = dt.kind, dt.itemsize * 8
    if kind == "f":
        return f"f{size}"
    if kind == "i":
        return f"s{size}"
    if kind == "u":
        return f"u{size}"
    if kind == "b":
        return "u8"
    return f"b{size}"


def _from_region(reg: _Region, form: tuple) -> Any:
    how, dt, extra = form
    raw = bytes(reg.data)
    if how == "bytes":
        return bytearray(raw)
    if how == "numpy":
        import numpy as np

        arr = extra
        return np.frombuffer(raw[: arr.nbytes], dtype=arr.dtype).reshape(arr.shape).copy()
    return _unpack_list(dt, raw, extra)


def _ranges(tids: tuple[int, ...]) -> str:
    """0-15,32 style."""
    if not tids:
        return "none"
    s = sorted(tids)
    out, start, prev = [], s[0], s[0]
    for t in s[1:] + [None]:
        if t is not None and t == prev + 1:
            prev = t
            continue
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
        if t is not None:
            start = prev = t
    return ",".join(out)


# ---------------------------------------------------------------------------
# the entry point


def run(
    kernel: Kernel,
    block: tuple[int, int, int] | None = None,
    params: dict[str, Any] | None = None,
    global_mem: dict[str, Any] | None = None,
    ctaid: tuple[int, int, int] = (0, 0, 0),
    grid: tuple[int, int, int] = (1, 1, 1),
    max_steps: int = 100_000,
    cp_async_policy: str = "latest",
    detect_races: bool = True,
    record_history: bool = True,
    global_dtypes: dict[str, str] | None = None,
    dynamic_shared: int = DEFAULT_DYNAMIC_SHARED,
    schedule: Any = "forward",
) -> RunResult:
    """Run ``kernel`` for the workgroup ``ctaid`` of a launch with ``block``
    threads per workgroup (default: ``kernel.launch.block``).

    ``params``: scalar parameters by name (a pointer parameter may be given
    an address here, otherwise it points at its ``global_mem`` array or at a
    fresh zeroed one). ``global_mem``: arrays by parameter name, as lists
    (element type from ``global_dtypes``, else the parameter's dtype, else
    f32/s32 from the values), bytes/bytearrays, or numpy arrays; the result's
    ``memory`` gives them back in the same form, with the shared buffers as
    bytearrays. ``schedule``: the order threads run in between barriers
    (``"forward"``, ``"reverse"`` or an int seed for a random order): a
    racy kernel computes different values under different orders, while
    the race detector reports the same races. ``record_history=False``
    saves memory and time when ``history`` is not needed. See the module
    docstring for the semantics."""
    if block is None:
        block = kernel.launch.block
        if block is None:
            raise ValueError(f"kernel {kernel.name}: no block shape given and none in its launch bounds")
    block = tuple(int(x) for x in block)  # type: ignore[assignment]
    if len(block) == 1:
        block = (block[0], 1, 1)
    # the run allocates many small objects and frees none: the cyclic
    # collector would rescan them over and over (it doubled the run time)
    gc_was = gc.isenabled()
    gc.disable()
    prev = _Machine.current
    try:
        m = _Machine(
            kernel, block, params or {}, global_mem or {}, global_dtypes or {}, tuple(ctaid), tuple(grid),
            max_steps, cp_async_policy, detect_races, record_history, dynamic_shared,
        )  # fmt: skip
        _Machine.current = m
        m.run(schedule)
        return m.result()
    finally:
        _Machine.current = prev
        if gc_was:
            gc.enable()


__all__ = [
    "AsyncHazard", "Hang", "InterpError", "NotSupported", "OutOfBounds", "PartialArrival", "Race",
    "RunResult", "run",
]  # fmt: skip
