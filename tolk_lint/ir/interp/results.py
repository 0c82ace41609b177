"""What a run gives back: `RunResult` (what every thread computed, the
final memory, the run's findings) and the findings themselves (`Hang`,
`PartialArrival`, `Race`, `AsyncHazard`, `OutOfBounds`); the two errors a
run raises (`NotSupported`, `InterpError`); and how messages name an
instruction (`_where`) and a set of threads (`_ranges`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from tolk_lint.ir.nodes import Instr, Kernel, Value


class NotSupported(Exception):
    """An operation the interpreter does not execute."""

    def __init__(self, message: str, instr: Instr | None = None):
        super().__init__(message)
        self.instr = instr


class InterpError(Exception):
    """The IR is malformed in a way that stops execution (a value used
    before it is defined, a PHI without an operand for its predecessor)."""


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
    """A cp.async hazard (see `tolk_lint.ir.interp.races` for the kinds).
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
