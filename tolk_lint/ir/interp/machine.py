"""The machine of one run, and `run`, the entry point.

`_Machine` assembles the parts (`memory`, `races`, `async_copy`,
`collectives`, `scheduler`), sets up the launch (every thread, its ids, its
warp, at the kernel's entry), answers the special registers and builds the
`RunResult`. `run` sets the launch up from its arguments, runs it and
returns what it showed."""

from __future__ import annotations

import gc
from typing import Any

from tolk_lint.ir.interp.async_copy import _AsyncCopies, _Copy
from tolk_lint.ir.interp.collectives import _Collectives
from tolk_lint.ir.interp.compiler import _compiled
from tolk_lint.ir.interp.memory import DEFAULT_DYNAMIC_SHARED, _Memory, _Region
from tolk_lint.ir.interp.ops_tensor import _TensorCores
from tolk_lint.ir.interp.races import _RaceDetector
from tolk_lint.ir.interp.results import (
    AsyncHazard,
    Hang,
    NotSupported,
    OutOfBounds,
    PartialArrival,
    Race,
    RunResult,
)
from tolk_lint.ir.interp.scheduler import _Scheduler
from tolk_lint.ir.interp.state import _EXITED, WARP_SIZE, _CurrentRun, _Thread
from tolk_lint.ir.nodes import Instr, Kernel

_SPECIAL_CONST = {"nsmid": 1, "smid": 0, "gridid": 0, "warpsize": WARP_SIZE, "cluster_nctarank": 1}


class _Machine(_Memory, _RaceDetector, _AsyncCopies, _Collectives, _TensorCores, _Scheduler):
    """One workgroup's run: the launch, the memory, the threads."""

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

    # -- notes, special registers, the result ---------------------------------------

    def note(self, msg: str) -> None:
        if len(self._notes) < 200:
            self._notes.setdefault(msg, None)

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
    saves memory and time when ``history`` is not needed. The semantics are
    described in the package's modules (`tolk_lint.ir.interp`)."""
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
    prev = _CurrentRun.machine
    try:
        m = _Machine(
            kernel, block, params or {}, global_mem or {}, global_dtypes or {}, tuple(ctaid), tuple(grid),
            max_steps, cp_async_policy, detect_races, record_history, dynamic_shared,
        )  # fmt: skip
        _CurrentRun.machine = m
        m.run(schedule)
        return m.result()
    finally:
        _CurrentRun.machine = prev
        if gc_was:
            gc.enable()
