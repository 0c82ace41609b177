# flags: --select TL3,TL4
"""A naive matmul: each thread sums a row of A times a column of B read
straight from global memory; the threads of a block row (column) read the
same values of A (B) again at every trip."""
from numba import cuda, float32


# launch: block=(16,16,4294967295)
@cuda.jit
def matmul_global(A, B, C):
    i = cuda.blockIdx.y * 16 + cuda.threadIdx.y
    j = cuda.blockIdx.x * 16 + cuda.threadIdx.x
    acc = float32(0.0)
    for k in range(A.shape[1]):
        acc += A[i, k] * B[k, j]  # expect: TL301
    C[i, j] = acc
