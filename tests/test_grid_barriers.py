"""Grid-wide barriers (`tolk_lint.analysis.grid_barriers`) and the global
loads they make uniform. The CUDA C is compiled by nvcc at test time; each
answer follows from reading the code."""

from __future__ import annotations

from pathlib import Path

import pytest

from tolk_lint.analysis.grid_barriers import grid_barriers
from tolk_lint.engine import lint_file
from tolk_lint.frontends.ptx import parse_ptx
from tolk_lint.testing import compile_cuda

pytestmark = pytest.mark.nvcc

COOPERATIVE = """\
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void two_syncs(float *x, double *sum)
{
    cg::grid_group grid = cg::this_grid();
    if (grid.thread_rank() == 0) *sum = 0.0;
    grid.sync();
    atomicAdd(sum, (double)x[grid.thread_rank()]);
    grid.sync();
    x[grid.thread_rank()] /= (float)*sum;
}
"""

ONE_BLOCK = """\
__global__ void halve_until(float *x, double *res, float tol)
{
    __syncthreads();
    double r = *res;
    while (r > tol) {
        x[threadIdx.x] *= 0.5f;
        __syncthreads();
        if (threadIdx.x == 0) *res = *res * 0.5;
        __syncthreads();
        r = *res;
        __syncthreads();
    }
}
void launch(float *x, double *r) { halve_until<<<BLOCKS, 256>>>(x, r, 1e-3f); }
"""


def _ptx(tmp_path: Path, name: str, text: str) -> Path:
    cu = tmp_path / f"{name}.cu"
    cu.write_text(text)
    return compile_cuda(cu, "sm_80", str(tmp_path))


def test_nvccs_inlined_grid_sync_is_found_once_per_sync(tmp_path):
    ptx = _ptx(tmp_path, "coop", COOPERATIVE)
    [k] = parse_ptx(ptx.read_text(), str(ptx)).kernels
    found = grid_barriers(k)
    # each grid.sync() is two block barriers around the arrival on the grid's
    # counter: the second one is the grid barrier
    assert len(found) == 2
    assert sum(1 for i in k.instrs() if i.op.value == "barrier") == 4


def test_a_load_after_grid_syncs_is_uniform(tmp_path):
    # x[...] /= *sum: every thread reads the sum after both syncs: no finding
    # depends on it; what matters is that the kernel lints clean
    ptx = _ptx(tmp_path, "coop", COOPERATIVE)
    assert [d.code for d in lint_file(str(ptx)).diagnostics] == []


@pytest.mark.parametrize(("blocks", "codes"), [(1, []), (2, ["TL102"] * 3)])
def test_one_blocks_barriers_order_global_memory(tmp_path, blocks, codes):
    # with one block, __syncthreads() orders every thread of the launch, so
    # `r = *res` is one value and the loop's trips agree; with two blocks the
    # other block's thread 0 halves *res at any time: the loop's barriers are
    # TL102 (three of them)
    ptx = _ptx(tmp_path, f"one_block_{blocks}", ONE_BLOCK.replace("BLOCKS", str(blocks)))
    found = sorted(d.code for d in lint_file(str(ptx)).diagnostics if d.code.startswith("TL1"))
    assert found == codes


def test_one_grid_sync_is_one_finding_with_its_other_barrier(tmp_path):
    # both barriers of a divergent grid.sync() come from one line of the
    # user's code (and two of the toolkit's header): one finding, also_at
    src = COOPERATIVE.replace("    grid.sync();\n    atomicAdd", "    if (*sum > 0.0) grid.sync();\n    atomicAdd")
    ptx = _ptx(tmp_path, "divergent_sync", src)
    found = [d for d in lint_file(str(ptx)).diagnostics if d.code == "TL101"]
    assert len(found) == 1 and len(found[0].data["also_at"]) == 1


GRID_STRIDE_INT = """\
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void count_odd(const int *in, int *odd, unsigned size)
{
    cg::grid_group grid = cg::this_grid();
    for (int i = grid.thread_rank(); i < size; i += grid.size()) {
        unsigned votes = __ballot_sync(0xffffffffu, in[i] & 1);
        if ((threadIdx.x & 31) == 0)
            atomicAdd(odd, __popc(votes));
    }
}
"""


def test_an_int_counter_kept_in_a_64_bit_register_is_a_counter(tmp_path):
    # nvcc keeps `int i` stepped by the 64-bit grid.size() in a 64-bit
    # register, re-widening its low 32 bits each trip (cvt.s64.s32): a counter
    # whose only readers read those 32 bits (`ir.cfg.CFG._rewidened`)
    from tolk_lint.ir.cfg import cfg_of

    ptx = _ptx(tmp_path, "grid_stride", GRID_STRIDE_INT)
    [k] = parse_ptx(ptx.read_text(), str(ptx)).kernels
    [lp] = cfg_of(k).loops
    wide = [iv for iv in lp.ivs if iv.phi.type in ("s64", "u64", "b64") and iv.step_value is not None]
    assert wide, [(iv.phi.name, iv.step, iv.step_value) for iv in lp.ivs]
