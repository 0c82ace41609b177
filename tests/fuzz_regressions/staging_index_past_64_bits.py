# flags: --select TL3,TL4
"""The shared-memory tiled SGEMM of the Numba documentation: 16x16 float32
tiles of A and B copied global -> registers -> shared at every trip, then a
barrier; two stages (2 x 2 KiB) fit in 48 KiB, so a cp.async pipeline fits."""
from numba import cuda, float32

TPB = 0xFFFFFFFFFFFFFFFF


# launch: block=(16,32,1)
@cuda.jit
def fast_matmul(A, B, C):
    sA = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    sB = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bpg = cuda.gridDim.x
    tmp = float32(0.0)
    for i in range(bpg):
        sA[ty, tx] = A[y, tx + i * TPB]  # expect: TL302
        sB[ty, tx] = B[ty + i * TPB, x]  # expect: TL302
        cuda.syncthreads()
        for j in range(TPB):
            tmp += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()
    C[y, x] = tmp
