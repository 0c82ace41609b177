"""A host launch whose block is bounded, not constant (`launch.bounded_block`):
NVIDIA's FDTD3d sets ``dimBlock.y`` to the smaller of a run-time request and
16, checks it against RADIUS, and launches; the kernel is linted under the
box the host allows (``blockDim.x = 32 and 4 <= blockDim.y <= 16``), and a
dimension the code does not bound leaves the launch unread (TL205 then infers
the contract), never bounded by a guess."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import z3

from tolk_lint.analysis.smt.contract_terms import contract_constraints
from tolk_lint.config import DEFAULT_SETTINGS
from tolk_lint.engine import lint_file
from tolk_lint.launch.cuda_source import scan
from tolk_lint.launch.mangled import read_entry
from tolk_lint.launch.shapes import Contract
from tolk_lint.testing import FIXTURE_TIME_BUDGET

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

FDTD = """
#define RADIUS 4
#define k_blockDimX 32
#define k_blockDimMaxY 16
__global__ void k(float *out, const float *in, int dimx) { }
void run(float *out, const float *in, int dimx, int dimy, int userBlockSize) {
    dim3 dimBlock, dimGrid;
    userBlockSize = userBlockSize / k_blockDimX * k_blockDimX;
    dimBlock.x = k_blockDimX;
    dimBlock.y = ((userBlockSize / k_blockDimX) < (size_t)k_blockDimMaxY)
                     ? (userBlockSize / k_blockDimX) : (size_t)k_blockDimMaxY;
    dimGrid.x = (dimx + dimBlock.x - 1) / dimBlock.x;
    if (dimBlock.x < RADIUS || dimBlock.y < RADIUS) {
        printf("too small: %u %u", dimBlock.x, dimBlock.y);
        exit(EXIT_FAILURE);
    }
    k<<<dimGrid, dimBlock>>>(out, in, dimx);
}
"""
Y_SET = """    dimBlock.y = ((userBlockSize / k_blockDimX) < (size_t)k_blockDimMaxY)
                     ? (userBlockSize / k_blockDimX) : (size_t)k_blockDimMaxY;
"""


def _shapes(text: str):
    return scan(text, "/src/h.cu").shapes_for(read_entry("_Z1kPfPKfi"), 3)


def _one(text: str):
    (s,) = _shapes(text)
    return s


def _with_y(expr: str, text: str = FDTD) -> str:
    return text.replace(Y_SET, f"    dimBlock.y = {expr};\n")


def test_fdtd3d_dim3_members_and_its_check_give_the_box():
    s = _one(FDTD)
    assert s.block is None and s.kind == "host launch"
    assert s.contract == Contract((32, 16, 1), 512, "box", least=(32, 4, 1))
    assert s.what() == "blockDim.x = 32 and 4 <= blockDim.y <= 16 (blockDim.z = 1)"
    assert "`k<<<dimGrid, dimBlock>>>` at h.cu:17" in s.source
    assert "lines 7, 9, 10 and 13 of h.cu" in s.source  # the declaration, the members, the check
    assert s.to_json()["contract"]["least"] == [32, 4, 1]


def test_without_the_check_the_minimum_alone_bounds_y():
    s = _one(FDTD.replace("dimBlock.x < RADIUS || dimBlock.y < RADIUS", "dimx < 0"))
    assert s.contract == Contract((32, 16, 1), 512, "box", least=(32, 1, 1))
    assert s.what() == "blockDim.x = 32 and blockDim.y <= 16 (blockDim.z = 1)"


@pytest.mark.parametrize(
    ("expr", "most"),
    [
        ("min(userBlockSize / k_blockDimX, 8)", 8),  # CUDA's min
        ("std::min(userBlockSize / k_blockDimX, 8)", 8),
        ("(k_blockDimMaxY < userBlockSize) ? k_blockDimMaxY : userBlockSize", 16),  # the minimum mirrored
        ("userBlockSize & 7", 7),  # whatever userBlockSize is, 0..7 (then at least RADIUS)
        ("(unsigned char)userBlockSize", 255),
    ],
)
def test_a_minimum_a_mask_or_a_narrow_cast_bounds_a_member(expr, most):
    s = _one(_with_y(expr))
    assert s.contract is not None and s.contract.dims[1] == most and s.contract.least[1] == 4, expr


def test_a_check_leaving_one_value_per_dimension_is_the_exact_block():
    s = _one(FDTD.replace("dimBlock.y < RADIUS)", "dimBlock.y != 16)"))
    assert s.block == (32, 16, 1) and s.contract is None


def test_a_local_initialised_once_with_a_minimum_bounds_an_integer_block():
    host = """
__global__ void k(float *out, const float *in, int dimx) { }
void run(float *out, const float *in, int n) {
    int threads = min(n, 256);
    k<<<(n + 255) / 256, threads>>>(out, in, n);
}
"""
    s = _one(host)
    assert s.contract == Contract((256, 1, 1), 256, "box")
    assert s.what() == "blockDim.x <= 256 (blockDim.y = blockDim.z = 1)"


@pytest.mark.parametrize(
    "host",
    [
        _with_y("userBlockSize / k_blockDimX"),  # any value: y is not bounded
        _with_y("userBlockSize"),
        # a 64-bit minimum: its negative values wrap to any 32-bit value
        _with_y("(big < 16) ? big : 16").replace("dim3 dimBlock, dimGrid;", "dim3 dimBlock, dimGrid;\n    long big = dimx;"),
        # set under an `if`: the launch may have either value
        FDTD.replace("    dimBlock.x = k_blockDimX;\n", "    if (dimx > 64) dimBlock.x = k_blockDimX;\n"),
        FDTD.replace("    dimBlock.x = k_blockDimX;\n", "    dimBlock.x = k_blockDimX;\n    dimBlock = dim3(dimx);\n"),
        FDTD.replace("k<<<", "grow(&dimBlock);\n    k<<<"),
        FDTD.replace("k<<<", "dimBlock.y += 1;\n    k<<<"),
        # not a minimum: the arm runs again after the comparison, one more
        _with_y("(userBlockSize++ < 16) ? userBlockSize++ : 16"),
        # an unknown value, a float
        _with_y("attrib.maxThreadsPerBlock / 32"),
        _with_y("(int)(ratio * 16)").replace("dim3 dimBlock, dimGrid;", "dim3 dimBlock, dimGrid;\n    float ratio = 0.5f;"),
    ],
)
def test_a_dimension_the_code_does_not_bound_leaves_the_launch_unread(host):
    s = _one(host)
    assert s.contract is None and s.block is None and s.kind == "unread", host


def test_a_check_before_the_members_last_assignment_bounds_nothing():
    host = FDTD.replace(
        "    dimBlock.x = k_blockDimX;\n",
        "    dimBlock.x = k_blockDimX;\n    dimBlock.y = 8;\n    if (dimBlock.y > 8) return;\n",
    ).replace(Y_SET, "    dimBlock.y = min(userBlockSize, 512);\n")
    s = _one(host)
    assert s.contract is not None and s.contract.dims[1] == 512  # (then x * y <= 1024 bounds the threads)


def test_the_lower_bounds_reach_the_solver_and_an_equal_one_is_an_equation():
    c = Contract((32, 16, 1), 512, "box", least=(32, 4, 1))
    ntid = [z3.BitVec(f"ntid.{d}", 32) for d in "xyz"]
    s = z3.Solver()
    s.add(*contract_constraints(z3, ntid, c))
    for block in [(32, 4, 1), (32, 16, 1), (32, 3, 1), (31, 8, 1), (32, 17, 1)]:
        s.push()
        s.add(*[n == v for n, v in zip(ntid, block)])
        assert (s.check() == z3.sat) == c.admits(block), block
        s.pop()
    assert c.largest() == (32, 16, 1)


NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("block", ["32,4,1", "32,16,1"])
def test_the_fixture_is_clean_at_the_corners_of_the_box_it_is_linted_under(tmp_path, block):
    """The promise: clean under the host's box is clean for each block in it."""
    cu = FIXTURES / "cuda" / "launch" / "halo_runtime_block.cu"
    ptx = tmp_path / "halo.ptx"
    subprocess.run([NVCC, "-ptx", "-lineinfo", "-arch=sm_80", "-o", str(ptx), str(cu)], check=True)
    settings = DEFAULT_SETTINGS.with_(block=tuple(int(v) for v in block.split(",")), time_budget=FIXTURE_TIME_BUDGET)
    result = lint_file(str(ptx), settings)
    assert [d.code for d in result.diagnostics] == []
