"""The state of one thread of the workgroup, and the signals its closures
return.

A `_Thread` holds its registers (``env``: Value -> value), where it is (the
compiled block ``cblock``, its closures ``items`` and ``pc``), whether it
runs, waits (at which instruction, for what, with which operands) or has
ended, its cp.async copies (``pending``, then committed ``groups``), the
WARP_SYNCs it ran (for the race detector's ordering), and, when history is
recorded, its log and its loop trips (the dynamic-instance keys).

A closure returns None to go on, `_BLOCK` when its thread must wait,
`_EXIT` when it ends, or the compiled block to enter. `_CurrentRun` holds
the machine of the run in progress for the closures that see only the
registers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tolk_lint.ir.nodes import Instr, Value

if TYPE_CHECKING:
    from tolk_lint.ir.interp.async_copy import _Copy
    from tolk_lint.ir.interp.machine import _Machine


WARP_SIZE = 32


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


class _CurrentRun:
    """The machine of the run in progress (None between runs): an integer
    division's closure sees only the registers, and notes a division by
    zero through it."""

    machine: _Machine | None = None
