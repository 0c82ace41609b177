"""A lint frees what it built: once its result is let go, no IR of the
file is alive. A process that lints many files (the language server, a worker,
this test run) otherwise grows with every file, and its memory budget, which
counts what each lint adds, would not see it. A cache keyed on IR objects
(an unbounded ``lru_cache`` on a `Value`) is the usual cause."""

from __future__ import annotations

import gc

import pytest
from conftest import FIXTURES

from tolk_lint.engine import lint_text, load_tool
from tolk_lint.ir.nodes import Instr, Kernel, Value
from tolk_lint.kernel_cache import KernelCache
from tolk_lint.testing import settings_from_flags

FILES = [  # each reaches the solver: races, bounds, witnesses, uniformity by Z3
    "ptx/memory/shared_race_no_barrier.ptx",
    "numba/memory/race_tile_2d.py",
    "numba/memory/stencil_halo_oob.py",
    "numba/collectives/warp_masks.py",
]


def live_ir() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, (Kernel, Instr, Value)))


@pytest.mark.parametrize("name", FILES)
def test_no_ir_outlives_its_lint(name):
    settings = settings_from_flags([])
    load_tool(settings)
    before = live_ir()
    path = FIXTURES / name
    found = lint_text(path.read_text(), str(path), settings).diagnostics  # the result (its module) let go
    assert found, "the fixture has findings: the analyses ran"
    assert live_ir() == before


@pytest.mark.parametrize("name", FILES[:2])
def test_the_language_servers_kernel_cache_holds_no_ir(name):
    """The language server keeps each kernel's findings between edits, not
    the kernel: what it holds grows with the findings, not with the IR."""
    settings = settings_from_flags([])
    load_tool(settings)
    before = live_ir()
    cache = KernelCache()
    path = FIXTURES / name
    for _ in range(2):  # the second lint is answered from the cache
        assert lint_text(path.read_text(), str(path), settings, kernel_cache=cache).diagnostics
    assert cache.entries
    assert live_ir() == before
