"""A race or out-of-bounds access that needs a loop bounded by a count read
from shared memory to run more trips than a count of the block's threads (or
of a shared array's elements) allows is a warning; one that holds at small
counts stays an error (`analysis.memory.loaded_counts`). And a scaled index
that overflows 32 bits is out of bounds, not an in-bounds race
(`Query.scaled_overflows`). Both languages; the CUDA fixture compiled by
nvcc, NVIDIA's bisection sample from the real corpus."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tolk_lint import lint_file
from tolk_lint.config import Settings
from tolk_lint.testing import compile_cuda

ROOT = Path(__file__).resolve().parent.parent / "fixtures"
BLOCK = Settings(block=(256, 1, 1))
nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


def _by_kernel(diags):
    out: dict = {}
    for d in diags:
        if d.code in ("TL201", "TL202"):
            out.setdefault((d.kernel or "").split("PKi")[0].lstrip("_Z0123456789"), set()).add((d.code, d.severity.value))
    return out


def _check(found):
    clean = next(v for k, v in found.items() if k.endswith("sweep_positive"))
    twin = next(v for k, v in found.items() if k.endswith("no_sync"))
    assert clean == {("TL202", "warning")}, found
    assert ("TL201", "error") in twin and ("TL202", "error") not in twin, found


def test_numba_sweep_over_a_loaded_count():
    path = ROOT / "numba" / "memory" / "scan_over_loaded_count.py"
    res = lint_file(str(path), BLOCK)
    _check(_by_kernel(res.diagnostics))
    warn = next(d for d in res.diagnostics if d.code == "TL202")
    assert "bound is read from shared memory" in warn.message and warn.data["shared_data"] is True


@nvcc
def test_cuda_sweep_over_a_loaded_count(tmp_path):
    ptx = compile_cuda(ROOT / "cuda" / "memory" / "scan_over_loaded_count.cu", out_dir=str(tmp_path))
    _check(_by_kernel(lint_file(str(ptx), BLOCK).diagnostics))


@pytest.mark.slow
@nvcc
def test_nvidias_bisection_kernel_has_no_error_level_memory_report(tmp_path):
    # its scan runs over `num_threads_compaction`, which thread 0 stores; its
    # convergence flags are cleared by many threads with one value
    cu = ROOT / "corpus" / "cuda" / "eigenvalues_bisect.cu"
    ptx = compile_cuda(cu, out_dir=str(tmp_path))
    diags = lint_file(str(ptx), Settings(time_budget=300, select=("TL201", "TL202"))).diagnostics
    bisect = [d for d in diags if "bisectKernel" in (d.kernel or "")]
    assert bisect and all(d.severity.value == "warning" for d in bisect), [d.message for d in bisect]


@pytest.mark.parametrize("block", [4, 64])
def test_a_scaled_index_that_overflows_is_out_of_bounds_not_a_race(block):
    # ((t << 30) * 4 wraps to 0: in CUDA C the pointer is gigabytes past `buf`
    # for every thread but 0. Out of bounds (TL202, saying why the offset looks
    # small); with 4 threads no race "at byte offset 0" (the concrete pass and
    # the solver alike). With 64 threads, t << 30 itself wraps (as unsigned C
    # arithmetic does): threads 0 and 4 store to buf[0], a real race.
    from tolk_lint import lint_text

    text = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry wrap(.param .u64 out)
{
    .shared .align 4 .b8 buf[1024];
    .reg .b32 %r<8>;
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 30;
    shl.b32 %r3, %r2, 2;
    mov.u32 %r4, buf;
    add.s32 %r5, %r4, %r3;
    st.shared.u32 [%r5], %r1;
    bar.sync 0;
    ret;
}
"""
    diags = lint_text(text, "wrap.ptx", Settings(block=(block, 1, 1))).diagnostics
    races = [d for d in diags if d.code == "TL201"]
    assert bool(races) == (block == 64), [d.message for d in diags]
    [oob] = [d for d in diags if d.code == "TL202"]
    assert "overflows 32 bits" in oob.message and oob.severity.value == "error"
