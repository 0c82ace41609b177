"""A race or out-of-bounds finding whose addresses are computed from values
the kernel read from shared memory is a warning, not an error
(`MemoryCore.shared_data_of`): the solver takes those values (ranks,
offsets, counts other threads computed) as any values. A race with one plain
address stays an error. Both languages, on the compaction fixtures."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tolk_lint import lint_file
from tolk_lint.config import Settings
from tolk_lint.testing import compile_cuda

ROOT = Path(__file__).resolve().parent.parent / "fixtures"
BLOCK = Settings(block=(256, 1, 1))


def _found(diags, text):
    """(code, the source line's code, severity) of each TL201/TL202."""
    lines = text.splitlines()
    out = set()
    for d in diags:
        if d.code in ("TL201", "TL202"):
            line = lines[(d.origin.line if d.origin else d.span.line) - 1]
            out.add((d.code, line.split("//")[0].split("#")[0].strip(), d.severity.value))
    return out


def _check(found):
    scatter = "packed[scan[t] - 1] = v"
    assert {("TL201", scatter, "warning"), ("TL202", scatter, "warning")} <= {(c, s.rstrip(";"), v) for c, s, v in found}
    assert not any(v == "error" and s.startswith("packed[scan") for _c, s, v in found)
    # the twin's read of packed[t] with no barrier: one plain address, an error
    assert any(c == "TL201" and v == "error" and "= packed[t]" in s for c, s, v in found)


def test_numba_scatter_by_scan_is_a_warning():
    path = ROOT / "numba" / "memory" / "compaction_scatter_by_scan.py"
    res = lint_file(str(path), BLOCK)
    _check(_found(res.diagnostics, path.read_text()))
    warn = next(d for d in res.diagnostics if d.severity.value == "warning" and d.code == "TL201")
    assert warn.data["shared_data"] is True and "a warning, not an error" in warn.message


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_cuda_scatter_by_scan_is_a_warning(tmp_path):
    cu = ROOT / "cuda" / "memory" / "compaction_scatter_by_scan.cu"
    ptx = compile_cuda(cu, out_dir=str(tmp_path))
    res = lint_file(str(ptx), BLOCK)
    _check(_found(res.diagnostics, cu.read_text()))


def test_an_index_read_from_an_input_array_is_a_warning_and_a_race_on_it_an_error():
    text = '''
from numba import cuda, uint32

@cuda.jit
def hist(data, out):
    sh = cuda.shared.array(256, dtype=uint32)
    t = cuda.threadIdx.x
    sh[t] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < data.shape[0]:
        sh[data[i]] += 1
    cuda.syncthreads()
    out[t] = sh[t]
'''
    from tolk_lint import lint_text

    diags = lint_text(text, "hist.py", BLOCK).diagnostics
    oob = [d for d in diags if d.code == "TL202"]
    races = [d for d in diags if d.code == "TL201"]
    assert oob and all(d.severity.value == "warning" and "a value loaded from memory" in d.message for d in oob)
    # two threads may read the same sample value: the non-atomic increment races, an error
    assert races and any(d.severity.value == "error" for d in races)
