"""Bounded work: every lint runs under a budget of time and memory.

A lint never hangs and never grows without limit, whatever its input: the
engine runs each file under a `Budget` (``time-budget`` seconds and
``memory-budget`` MiB of resident memory grown past what the process held
when the file's lint began; 30 s and 2 GiB on the command line, less in
the language server, which also cancels a lint whose document changed),
and each kernel under a share of it (``kernel-time-budget``).

The analyses check the budget cooperatively: `check(what)` at the points
where work can grow (each pair of accesses a race search examines, each
solver question, each fixpoint round), naming what they are doing. When the
budget is spent, `check` raises `BudgetExceeded`, the engine stops the
kernel's remaining rules and reports TL005 naming what was not finished.
What was found before stays reported, and the kernel is never called clean:
TL005 makes the run exit 2, like a file that could not be parsed.

The budget is per thread (the language server lints several documents at
once), found through `current()`; code outside a lint (tests, the staging
report) runs unbounded unless it opens one with `running`.

What the process pays once, whichever lint comes first, is not the lint's to
pay: Z3 and numpy are imported the first time an analysis needs them, inside
some file's budget, and `not_counted` gives the wall time of such a block
back (`credit`) to the running budget and every budget it is part of, so a
small ``--time-budget`` runs out at the same point of the analysis whether
the process had loaded them already or not.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass, field

MIB = 1 << 20
# How often the memory is looked at, at most: reading it costs a system call.
MEMORY_CHECK_INTERVAL = 0.05


class Cancel(threading.Event):
    """A cancel event (the language server's, for a lint whose document
    changed) that also stops what cannot check it: a solver question under
    way calls `stopping` with its context's interrupt, which `set` calls, so
    a cancelled lint ends within milliseconds instead of at the end of a
    question that may take seconds."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._stops: list = []

    def set(self) -> None:
        super().set()
        with self._lock:
            stops = list(self._stops)
        for stop in stops:
            stop()

    @contextlib.contextmanager
    def stopping(self, stop):
        """Within the block, `set` calls ``stop()`` (at once, if it is set already)."""
        with self._lock:
            self._stops.append(stop)
        try:
            if self.is_set():
                stop()
            yield
        finally:
            with self._lock:
                self._stops.remove(stop)


class BudgetExceeded(BaseException):
    """The budget ran out (or the lint was cancelled) while doing ``what``.

    A `BaseException`, like `KeyboardInterrupt`: the ``except Exception``
    that keeps a solver failure from ending a lint must not swallow it."""

    def __init__(self, what: str, reason: str):
        super().__init__(f"{reason} while {what}" if what else reason)
        self.what = what
        self.reason = reason


def resident_bytes() -> int | None:
    """The process's resident memory now (Linux), or its peak elsewhere."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        pass
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if os.uname().sysname == "Darwin" else peak * 1024
    except (ImportError, OSError, AttributeError):
        return None


@dataclass
class Budget:
    """``seconds`` from now and ``memory_bytes`` of resident memory (None:
    unbounded), and an optional ``cancel`` event that ends it early.
    ``label`` names the budget in messages ("the file's time budget").

    The memory is what the process grew by since the budget was made
    (``memory_base``, read then): a process that lints many files (the
    language server, a test run, a worker) keeps what it loaded and cached
    for earlier ones, and that is not the next file's to pay for. A budget
    made inside another (`child`) shares its base."""

    seconds: float | None = None
    memory_bytes: int | None = None
    cancel: threading.Event | None = None
    label: str = "the time budget"
    deadline: float | None = None  # monotonic time; from ``seconds`` unless given
    # the budget this one was made inside (`child`): a credit extends them both
    parent: Budget | None = field(default=None, repr=False, compare=False)
    memory_base: int | None = None  # resident bytes when made; from `resident_bytes` unless given
    _memory_seen: float = 0.0

    def __post_init__(self) -> None:
        if self.deadline is None and self.seconds is not None:
            self.deadline = time.monotonic() + self.seconds
        if self.memory_base is None and self.memory_bytes is not None:
            self.memory_base = resident_bytes() or 0

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def child(self, seconds: float | None, label: str) -> Budget:
        """A budget inside this one: ``seconds`` from now, never past this
        one's deadline; the same memory bound and cancel event."""
        mine = None if seconds is None else time.monotonic() + seconds
        if mine is None or (self.deadline is not None and self.deadline <= mine):
            return Budget(self.seconds, self.memory_bytes, self.cancel, self.label, self.deadline, parent=self,
                          memory_base=self.memory_base)  # fmt: skip
        return Budget(seconds, self.memory_bytes, self.cancel, label, mine, parent=self, memory_base=self.memory_base)

    def extend(self, seconds: float) -> None:
        """Move the deadline ``seconds`` later, and those of the budgets this
        one is inside: time given back to all of them (`credit`)."""
        b: Budget | None = self
        while b is not None:
            if b.deadline is not None:
                b.deadline += seconds
            b = b.parent

    def spent(self) -> str | None:
        """Why the budget is spent, or None while it is not."""
        if self.cancel is not None and self.cancel.is_set():
            return "cancelled"
        now = time.monotonic()
        d = self.deadline
        if d is not None and now > d:
            return f"{self.label} of {self.seconds:g} s ran out"
        if self.memory_bytes is not None and now - self._memory_seen >= MEMORY_CHECK_INTERVAL:
            self._memory_seen = now
            rss = resident_bytes()
            grown = None if rss is None else rss - (self.memory_base or 0)
            if grown is not None and grown > self.memory_bytes:
                return (f"the memory budget of {self.memory_bytes // MIB} MiB ran out "
                        f"({grown // MIB} MiB more in use than when the file's lint began)")  # fmt: skip
        return None


_local = threading.local()


def current() -> Budget | None:
    """The budget the current thread's lint runs under, if any."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


@contextlib.contextmanager
def running(budget: Budget | None):
    """Run the block under ``budget`` (None: unbounded)."""
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append(budget)
    try:
        yield budget
    finally:
        stack.pop()


def check(what: str, *args: object) -> None:
    """Raise `BudgetExceeded` if the current budget is spent; ``what`` says
    what the caller is doing, for the diagnostic, formatted with ``args``
    (``check("the race search (pair %d of %d)", i, n)``) only then: a
    check at a loop head costs a clock read, not a string."""
    stack = getattr(_local, "stack", None)
    b = stack[-1] if stack else None
    if b is not None:
        why = b.spent()
        if why is not None:
            raise BudgetExceeded(what % args if args else what, why)


def credit(seconds: float) -> None:
    """Give ``seconds`` back to the current thread's budget and the budgets
    it is part of (a kernel's, its file's): time that was spent in the lint
    but not on it."""
    b = current()
    if b is not None and seconds > 0:
        b.extend(seconds)


@contextlib.contextmanager
def not_counted():
    """Run the block without spending the current budget: its wall time is
    credited back (`credit`) when it ends. For what a process does once, in
    whichever lint needs it first: importing Z3 or numpy (a tenth of a second
    or more on a loaded machine), which would otherwise spend the budget of
    that one file and not of the next. Nested blocks are credited once, by
    the outermost."""
    depth = getattr(_local, "not_counted", 0)
    _local.not_counted = depth + 1
    start = time.monotonic()
    try:
        yield
    finally:
        _local.not_counted = depth
        if depth == 0:
            credit(time.monotonic() - start)


def remaining_seconds() -> float | None:
    """Seconds left of the current budget (None: unbounded)."""
    b = current()
    return None if b is None else b.remaining()
