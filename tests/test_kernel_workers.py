"""The kernels of one file linted in forked workers
(`tolk_lint.kernel_workers`): the same findings, in the same order, as
linted one after the other; a kernel a worker cannot read under the budget
is reported alone, the others' findings kept; a worker that fails hands its
kernel back to the parent. Real nvcc output where it is on the machine."""

from __future__ import annotations

import os
import sys
import shutil
from pathlib import Path

import pytest

from tolk_lint import budget, kernel_workers, lint_file
from tolk_lint.config import Settings
from tolk_lint.frontends.ptx.stream import PtxStream
from tolk_lint.testing import compile_cuda

ROOT = Path(__file__).resolve().parent.parent / "fixtures"
FILE = ROOT / "ptx" / "memory_precision" / "bounds_block_stride.ptx"  # four kernels, findings in some
forks = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers fork, on Linux only")


def _seen(result) -> list[tuple]:
    # not the message: which of several equally small witnesses Z3 gives may
    # depend on what the process analysed before (as it may without workers)
    return [(d.code, d.severity.value, d.span.line, d.span.column, d.kernel) for d in result.diagnostics]


def _lint(path, n: int, settings: Settings = Settings()):
    with kernel_workers.using(n):
        return lint_file(str(path), settings)


@pytest.fixture
def small_files(monkeypatch):
    monkeypatch.setattr(kernel_workers, "MIN_LINES", 0)


@forks
def test_workers_report_what_one_process_reports(small_files, monkeypatch):
    shared_out = []
    real = kernel_workers.lint_in_workers

    def spy(*args):
        got = real(*args)
        shared_out.append(len(got))
        return got

    monkeypatch.setattr(kernel_workers, "lint_in_workers", spy)
    serial = _lint(FILE, 1)
    assert serial.diagnostics, "the fixture has findings to compare"
    assert _seen(_lint(FILE, 2)) == _seen(serial)
    assert shared_out == [0, 4], shared_out  # one process: none shared; two: all four kernels
    assert [k.name for k in _lint(FILE, 3).kernels] == [k.name for k in serial.kernels]


@forks
def test_a_kernel_the_budget_stops_before_it_is_read_is_reported_once(small_files, monkeypatch):
    serial = _lint(FILE, 1)
    second = serial.kernels[1].name
    read = PtxStream.read

    def stopped(self, ft):
        if ft.name == second:
            raise budget.BudgetExceeded("parsing the file (line 1)", "the file's time budget of 30 s ran out")
        return read(self, ft)

    monkeypatch.setattr(PtxStream, "read", stopped)
    shared = _lint(FILE, 2)
    [d] = [d for d in shared.diagnostics if d.code == "TL005"]
    assert d.message.startswith("reading the file stopped") and f"1 kernel(s) were not analysed, from `{second}`" \
        in d.message, d.message
    # every other kernel's findings are there, the ones after it too
    others = [x for x in _seen(serial) if x[4] != second]
    assert [x for x in _seen(shared) if x[0] != "TL005"] == others
    assert [k.name for k in shared.kernels] == [k.name for k in serial.kernels if k.name != second]


@forks
def test_a_worker_that_fails_hands_its_kernel_back(small_files, monkeypatch):
    read = PtxStream.read
    parent = os.getpid()

    def broken(self, ft):
        if os.getpid() != parent:
            raise RuntimeError("a worker's bug")
        return read(self, ft)

    monkeypatch.setattr(PtxStream, "read", broken)
    assert _seen(_lint(FILE, 2)) == _seen(_lint(FILE, 1))


@forks
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_workers_on_nvccs_output_of_cub_kernels(tmp_path):
    ptx = compile_cuda(ROOT / "corpus" / "cuda" / "cub_block_reduce.cu", out_dir=str(tmp_path))
    settings = Settings(time_budget=300)
    assert _seen(_lint(ptx, 2, settings)) == _seen(_lint(ptx, 1, settings))


@forks
def test_a_python_files_kernels_checked_in_workers(monkeypatch):
    # a Numba library module in the style of RAPIDS-era factories: seven kernels
    path = ROOT / "corpus" / "numba_real" / "kernel_factory.py"
    monkeypatch.setattr(kernel_workers, "MIN_INSTRUCTIONS", 0)
    shared_out = []
    real = kernel_workers.check_in_workers

    def spy(*args):
        got = real(*args)
        shared_out.append(len(got))
        return got

    monkeypatch.setattr(kernel_workers, "check_in_workers", spy)
    serial = _lint(path, 1)
    assert _seen(_lint(path, 2)) == _seen(serial)
    assert shared_out[0] == 0 and shared_out[1] >= 5, shared_out
