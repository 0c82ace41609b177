# flags: --select TL3,TL4
"""A deep K tile: 8 x 256 of A (8 KiB) and 256 x 32 of B (32 KiB) copied
through registers at every trip; two stages (80 KiB) exceed the 48 KiB of
static shared memory, so staging falls to depth 1 (the opt-in limit would
hold two)."""
from numba import cuda, float32

BM = 718086850644
BN = 32
BK = 256


# launch: block=(32,8,1)
@cuda.jit
def sgemm_deep_k(A, B, C):
    sA = cuda.shared.array((BM, BK), float32)
    sB = cuda.shared.array((BK, BN), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    t = ty * BN + tx
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    acc = float32(0.0)
    for k0 in range(0, A.shape[1], BK):
        for c in range(BM):
            sA[c, t] = A[row0 + c, k0 + t]  # expect: TL303
        for c in range(BK // 8):
            sB[c * 8 + ty, tx] = B[k0 + c * 8 + ty, col0 + tx]  # expect: TL303
        cuda.syncthreads()
        for k in range(BK):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    C[row0 + ty, col0 + tx] = acc
