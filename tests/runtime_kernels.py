"""Small kernels for tests/test_runtime.py that the SGEMM fixtures do not
cover: a 16-byte copy from an `alignment=16` shared array, and calls that
must be refused at typing time.  Imported only once numba-cuda is known to
be there (it imports tolk_lint.runtime, which needs it)."""

from __future__ import annotations

from numba import cuda, float32, float64

from tolk_lint.runtime import commit_group, cp_async, wait_group


def row_reverse_16_bytes(X, out):
    # 16 threads stage a 64-float row, 4 consecutive floats (16 bytes) each
    row = cuda.shared.array(64, dtype=float32, alignment=16)
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    cp_async(row, 4 * t, X, (r, 4 * t), 16)
    commit_group()
    wait_group(0)
    cuda.syncthreads()
    for k in range(4):
        out[r, 4 * t + k] = row[63 - 4 * t - k]


ROW_REVERSE_SIGNATURE = "void(float32[:, ::1], float32[:, ::1])"


# -- refused at typing time; the signature each is compiled with, and the words the error must contain


def copy_2_bytes(X):
    s = cuda.shared.array(16, dtype=float32)
    cp_async(s, 0, X, 0, 2)


def copy_float64_into_float32(X):
    s = cuda.shared.array(16, dtype=float32)
    cp_async(s, 0, X, 0, 4)


def copy_half_a_float64(X):
    s = cuda.shared.array(16, dtype=float64)
    cp_async(s, 0, X, 0, 4)


def copy_a_computed_size(X, n):
    s = cuda.shared.array(16, dtype=float32)
    cp_async(s, 0, X, 0, n)


def copy_16_bytes_from_a_strided_array(X):
    s = cuda.shared.array((4, 16), dtype=float32, alignment=16)
    cp_async(s, (0, 0), X, (0, 0), 16)


def copy_with_too_few_indices(X):
    s = cuda.shared.array((4, 16), dtype=float32)
    cp_async(s, 0, X, (0, 0), 4)


def wait_a_computed_count(n):
    wait_group(n)


def wait_8():
    wait_group(8)


def wait_minus_1():
    wait_group(-1)


REFUSED = {
    "nbytes 2": (copy_2_bytes, "void(float32[::1])", "nbytes must be one of 4, 8, 16"),
    "dtype mismatch": (
        copy_float64_into_float32,
        "void(float64[::1])",
        "dst and src must have the same dtype",
    ),
    "element larger than the copy": (
        copy_half_a_float64,
        "void(float64[::1])",
        "nbytes=4 is not a whole number of float64 elements",
    ),
    "computed nbytes": (
        copy_a_computed_size,
        "void(float32[::1], int32)",
        "nbytes must be a literal integer",
    ),
    "strided source of a 16-byte copy": (
        copy_16_bytes_from_a_strided_array,
        "void(float32[:, :])",
        "src must be C-contiguous",
    ),
    "index of the wrong rank": (copy_with_too_few_indices, "void(float32[:, ::1])", "its index has 1"),
    "computed wait count": (wait_a_computed_count, "void(int32)", "count must be a literal integer in 0..7"),
    "wait count 8": (wait_8, "void()", "count must be a literal integer in 0..7, got 8"),
    "wait count -1": (wait_minus_1, "void()", "count must be a literal integer in 0..7, got -1"),
}
