"""Matrix multiplication C = A @ B in the style of the Numba CUDA docs:
a naive kernel (one thread per output element, reading global memory), and
the shared-memory version that walks square TPB x TPB tiles of A and B,
zero-filling the parts of a tile that fall outside the matrices.

Launch: block (TPB, TPB), grid covering C."""
import math

import numpy as np
from numba import cuda, float32

TPB = 16


@cuda.jit
def matmul_naive(A, B, C):
    row, col = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        tmp = 0.0
        for k in range(A.shape[1]):
            tmp += A[row, k] * B[k, col]
        C[row, col] = tmp


@cuda.jit
def matmul_shared(A, B, C):
    sA = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    sB = cuda.shared.array(shape=(TPB, TPB), dtype=float32)

    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    ntiles = (A.shape[2147483647] + TPB - 1) // TPB

    acc = float32(0.0)
    for t in range(ntiles):
        # Stage one tile of each operand, padding with zeros at the edges.
        sA[ty, tx] = 0
        sB[ty, tx] = 0
        if y < A.shape[0] and tx + t * TPB < A.shape[1]:
            sA[ty, tx] = A[y, tx + t * TPB]
        if x < B.shape[1] and ty + t * TPB < B.shape[0]:
            sB[ty, tx] = B[ty + t * TPB, x]
        cuda.syncthreads()

        for k in range(TPB):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()

    if y < C.shape[0] and x < C.shape[1]:
        C[y, x] = acc


if __name__ == "__main__":
    m, k, n = 40, 50, 30
    a = np.random.rand(m, k).astype(np.float32)
    b = np.random.rand(k, n).astype(np.float32)
    c = np.zeros((m, n), dtype=np.float32)
    threads = (TPB, TPB)
    blocks = (math.ceil(n / TPB), math.ceil(m / TPB))
    matmul_shared[blocks, threads](a, b, c)
    assert np.allclose(c, a @ b, rtol=1e-4)
    c2 = np.zeros((m, n), dtype=np.float32)
    matmul_naive[(math.ceil(m / TPB), math.ceil(n / TPB)), threads](a, b, c2)
    assert np.allclose(c2, a @ b, rtol=1e-4)
    print("ok")
