"""Two host patterns NVIDIA's samples use: a block the occupancy API chose
(`launch.occupancy`: a contract of warp multiples), and a grid variable the
loop around its launch changes only on the way out (`cuda_source._never_back`)."""

from __future__ import annotations

import z3

from tolk_lint.analysis.smt.contract_terms import contract_constraints
from tolk_lint.launch.cuda_source import scan
from tolk_lint.launch.mangled import read_entry
from tolk_lint.launch.shapes import Contract

OCCUPANCY = """
__global__ void k(int *x, unsigned n) { }
void chosen(int *x) {
    int minGridSize = 0, blockSize = 0;
    checkCudaErrors(cudaOccupancyMaxPotentialBlockSize(&minGridSize, &blockSize, k, 0, 0));
    k<<<minGridSize, blockSize>>>(x, 1024);
}
"""


def _shapes(text: str, max_threads=None):
    return scan(text, "/src/h.cu").shapes_for(read_entry("_Z1kPij"), 2, (), max_threads)


def test_the_occupancy_apis_block_is_a_warp_multiple_contract():
    (s,) = _shapes(OCCUPANCY)
    assert s.block is None and s.kind == "host launch"
    assert s.contract == Contract((1024, 1, 1), 1024, "flat", warp_multiple=True)
    assert "cudaOccupancyMaxPotentialBlockSize` at h.cu:5" in s.source
    assert s.what() == "blockDim.x is a multiple of 32, at most 1024 (blockDim.y = blockDim.z = 1)"
    assert s.to_json()["contract"]["warp_multiple"] is True


def test_the_kernels_bound_and_the_calls_limit_cap_the_contract():
    (s,) = _shapes(OCCUPANCY, max_threads=256)
    assert s.contract == Contract((256, 1, 1), 256, "flat", warp_multiple=True)
    (s,) = _shapes(OCCUPANCY.replace("k, 0, 0)", "k, 0, 512)"))
    assert s.contract.threads == 512 and s.contract.warp_multiple
    # a limit that is not a multiple of 32 may itself be the block: the bound alone
    (s,) = _shapes(OCCUPANCY.replace("k, 0, 0)", "k, 0, 100)"))
    assert s.contract == Contract((100, 1, 1), 100, "flat")


def test_a_block_changed_otherwise_or_not_written_on_every_path_is_unread():
    for bad in (
        OCCUPANCY.replace("k<<<", "blockSize = blockSize / 2;\n    k<<<"),
        OCCUPANCY.replace("k<<<", "blockSize += 32;\n    k<<<"),
        OCCUPANCY.replace("checkCudaErrors(", "if (x) checkCudaErrors("),
        OCCUPANCY.replace("&blockSize, k,", "&blockSize, other,"),  # another kernel's limit
        OCCUPANCY.replace("k, 0, 0)", "k, 0, limit)"),  # a limit not known
        OCCUPANCY.replace("k<<<", "clamp(&blockSize);\n    k<<<"),
    ):
        (s,) = _shapes(bad)
        assert s.contract is None and s.kind == "unread", bad


def test_contract_admits_largest_and_constraints_agree():
    c = Contract((1024, 1, 1), 1024, "flat", warp_multiple=True)
    assert c.admits((64, 1, 1)) and not c.admits((48, 1, 1)) and not c.admits((32, 2, 1))
    assert c.largest() == (1024, 1, 1)
    ntid = [z3.BitVec(f"n{d}", 32) for d in "xyz"]
    s = z3.Solver()
    s.add(*contract_constraints(z3, ntid, c), z3.UGE(ntid[0], 1))
    s.push()
    s.add(ntid[0] == 48)
    assert s.check() == z3.unsat
    s.pop()
    s.add(z3.Or(ntid[1] != 1, ntid[2] != 1))
    assert s.check() == z3.unsat


LOOP = """
__global__ void k(int *x, unsigned n) { }
__global__ void tail(int *x) { }
void iterate(int *x, int max_iter, float *sum) {
    dim3 threads(256, 1, 1);
    dim3 blocks(514, 1, 1);
    for (int it = 0; it < max_iter; it++) {
        k<<<blocks, threads>>>(x, 1024);
        if (*sum < 1.0f) {
            blocks.x = 2048 / threads.x + 1;
            tail<<<blocks, threads>>>(x);
            sync();
            break;
        }
    }
}
"""


def _grid(text: str):
    (s,) = [s for s in scan(text, "/src/h.cu").shapes_for(read_entry("_Z1kPij"), 2) if s.block is not None]
    return s.grid


def test_a_change_that_leaves_the_loop_does_not_reach_the_launch():
    assert _grid(LOOP) == ((514, 514), (1, 1), (1, 1))
    assert _grid(LOOP.replace("break;", "return;")) == ((514, 514), (1, 1), (1, 1))


def test_a_change_that_comes_back_to_the_launch_gives_no_grid():
    assert _grid(LOOP.replace("break;", "")) is None  # the next trip launches with 9 blocks
    assert _grid(LOOP.replace("sync();", "if (it > 2) continue;")) is None
    # the break leaves only an inner loop: the outer one comes back
    nested = LOOP.replace("for (int it = 0; it < max_iter; it++) {",
                          "for (int r = 0; r < 2; r++) for (int it = 0; it < max_iter; it++) {")
    assert _grid(nested) is None
    inner = LOOP.replace("if (*sum < 1.0f) {", "while (*sum < 1.0f) {")  # its break leaves the while
    assert _grid(inner) is None
    in_switch = LOOP.replace("if (*sum < 1.0f) {", "switch (max_iter) { case 1: {").replace(
        "break;\n        }", "break;\n        } }")  # a switch's break stays in the loop
    assert _grid(in_switch) is None
