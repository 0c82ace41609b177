"""A finding that needs a grid of 2**31 threads or more along x (where
`gridDim.x * blockDim.x` wraps a 32-bit int) is a warning; one that holds
for a one-block grid stays an error (`analysis.memory.grid_size`). The CUDA
fixture compiled by nvcc, in the style of NVIDIA's SobolQRNG."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tolk_lint import lint_file
from tolk_lint.testing import compile_cuda

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "cuda" / "memory_precision" / "grid_stride_wrap.cu"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_a_stride_that_wraps_only_for_a_huge_grid_is_a_warning(tmp_path):
    ptx = compile_cuda(FIXTURE, out_dir=str(tmp_path))
    diags = [d for d in lint_file(str(ptx)).diagnostics if d.code == "TL202"]
    table = [d for d in diags if "gray_code_table" in (d.kernel or "")]
    offset = [d for d in diags if "gray_code_offset" in (d.kernel or "")]
    assert [d.severity.value for d in table] == ["warning"], table
    assert "2**31 threads or more along x" in table[0].message
    assert [d.severity.value for d in offset] == ["error"], offset
