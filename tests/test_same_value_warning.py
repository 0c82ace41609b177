"""A write-write race in which every pair of threads stores one value (a
"not converged" flag many threads clear) is a TL201 warning, not an error;
two threads storing different values stay an error. Both languages, on the
convergence-flag fixtures (the CUDA one compiled by nvcc)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tolk_lint import lint_file, lint_text
from tolk_lint.config import Settings
from tolk_lint.testing import compile_cuda

ROOT = Path(__file__).resolve().parent.parent / "fixtures"
BLOCK = Settings(block=(256, 1, 1))


def _races(diags, text):
    """(the source line's code, severity, same_value) of each TL201."""
    lines = text.splitlines()
    out = set()
    for d in diags:
        if d.code == "TL201":
            line = lines[(d.origin.line if d.origin else d.span.line) - 1]
            out.add((line.split("//")[0].split("#")[0].strip().rstrip(";"), d.severity.value, d.data["same_value"]))
    return out


def _check(found):
    assert ("converged[0] = 0" if any("[0]" in s for s, _v, _x in found) else "converged = 0", "warning", True) in found
    worst = [(v, x) for s, v, x in found if "s_worst" in s and "= t" in s]
    assert worst == [("error", False)], found
    assert not any(v == "error" for s, v, _x in found if "converged" in s)


def test_numba_flag_cleared_by_many_threads_is_a_warning():
    path = ROOT / "numba" / "memory" / "convergence_flag_same_value.py"
    res = lint_file(str(path), BLOCK)
    _check(_races(res.diagnostics, path.read_text()))
    warn = next(d for d in res.diagnostics if d.code == "TL201" and d.severity.value == "warning")
    assert "both threads store the same value" in warn.message and "a warning, not an error" in warn.message


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_cuda_flag_cleared_by_many_threads_is_a_warning(tmp_path):
    cu = ROOT / "cuda" / "memory" / "convergence_flag_same_value.cu"
    ptx = compile_cuda(cu, out_dir=str(tmp_path))
    res = lint_file(str(ptx), BLOCK)
    _check(_races(res.diagnostics, cu.read_text()))


def test_stores_of_one_value_on_one_line_with_different_values_elsewhere_stay_an_error():
    # line 12 stores 0 from many threads (same value among themselves), but line 14
    # stores each thread's index into the same word: the pair (12, 14) stores two values
    text = '''
from numba import cuda, int32

@cuda.jit
def k(x, out):
    flag = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    if t == 0:
        flag[0] = 1
    cuda.syncthreads()
    if x[t] > 0:
        flag[0] = 0
    if x[t] < -1:
        flag[0] = t
    cuda.syncthreads()
    out[t] = flag[0]
'''
    diags = [d for d in lint_text(text, "k.py", BLOCK).diagnostics if d.code == "TL201"]
    assert diags and any(d.severity.value == "error" for d in diags)
    assert all(d.severity.value == "error" for d in diags if d.span.line == 14)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_an_exchange_whose_old_value_is_unread_stores_like_a_plain_store(tmp_path):
    """`atomicExch(&flag, 1)` beside `flag = 1` (the eigenvalue sample's
    split flag): a warning. A different value, or an exchange whose old value
    is read, stays an error."""
    cu = ROOT / "cuda" / "memory" / "split_flag_atomic_exchange.cu"
    ptx = compile_cuda(cu, out_dir=str(tmp_path))
    res = lint_file(str(ptx), BLOCK)
    by_kernel = {}
    for d in res.diagnostics:
        if d.code == "TL201":
            name = next(k for k in ("mixed_values", "old_value_read", "split_flag") if k in d.message)
            by_kernel.setdefault(name, set()).add(d.severity.value)
    assert by_kernel == {"split_flag": {"warning"}, "mixed_values": {"error"}, "old_value_read": {"error"}}
