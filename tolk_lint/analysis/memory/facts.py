"""`MemoryFacts`: the memory facts of one kernel, each kind computed on first use.

The facade the rules read (through `RuleContext.memory()`, which calls
`memory_facts` once per kernel and caches it): `races` (TL201 and TL204),
`out_of_bounds` (TL202) and `bank_conflicts` (TL203) run their searches
over the shared `MemoryCore` the first time they are asked, and time them.
"""

from __future__ import annotations

import time

from tolk_lint.analysis.memory.banks import BankConflict, find_bank_conflicts
from tolk_lint.analysis.memory.bounds import OutOfBounds, find_out_of_bounds
from tolk_lint.analysis.memory.core import STATS, MemoryCore
from tolk_lint.analysis.memory.race_findings import Race
from tolk_lint.analysis.memory.races import find_races
from tolk_lint.ir.nodes import Kernel, Module


class MemoryFacts(MemoryCore):
    """Memory facts of one kernel, computed on first use."""

    def __init__(self, kernel: Kernel, module: Module | None, settings=None, target=None):
        super().__init__(kernel, module, settings, target)
        self._races: list[Race] | None = None
        self._oob: list[OutOfBounds] | None = None
        self._conflicts: list[BankConflict] | None = None

    def races(self) -> list[Race]:
        """The races (TL201) and cp.async hazards (TL204) of the kernel."""
        if self._races is None:
            t0 = time.perf_counter()
            try:
                self._races = find_races(self)
            finally:
                self.seconds += time.perf_counter() - t0
                STATS["seconds"] += time.perf_counter() - t0
                STATS["kernels"] += 1
        return self._races

    def out_of_bounds(self) -> list[OutOfBounds]:
        """The accesses that may leave their array, in program order: the
        first of each source line (`source_key`; the solver is not asked
        about the others, unrolled copies of the same line)."""
        if self._oob is None:
            t0 = time.perf_counter()
            try:
                self._oob = find_out_of_bounds(self)
            finally:
                self.seconds += time.perf_counter() - t0
        return self._oob

    def bank_conflicts(self) -> list[BankConflict]:
        """The shared accesses whose warps meet a bank more than once."""
        if self._conflicts is None:
            t0 = time.perf_counter()
            try:
                self._conflicts = find_bank_conflicts(self)
            finally:
                self.seconds += time.perf_counter() - t0
        return self._conflicts


def memory_facts(kernel: Kernel, module: Module | None = None, settings=None, target=None) -> MemoryFacts:
    """The memory facts of ``kernel`` (cached by `RuleContext.memory`)."""
    return MemoryFacts(kernel, module, settings, target)
