# flags: --select TL3,TL4
"""Each thread walks a rotation of x and w: the thread term (t) and the
loop's range (k) meet inside one `% 64`, so the index is mixed and neither
factor forms a box of its own.  A kernel that reduces across threads (the
shuffle) is left alone whatever its operands."""
from numba import cuda, float32


# launch: block=(64,1,1)
@cuda.jit
def rotated_dot(x, w, y):  # expect-clean
    t = cuda.threadIdx.x
    acc = float32(0.0)
    for k in range(64):
        acc += x[(k + t) % 64] * w[(k + t) % 64]
    y[cuda.blockIdx.x * 64 + t] = acc


# launch: block=(32,1000000000000,1)
@cuda.jit
def dot_warp_reduce(A, x, y):  # expect-clean
    lane = cuda.threadIdx.x
    acc = float32(0.0)
    for k in range(A.shape[1]):
        acc += A[lane, k] * x[k]
    acc += cuda.shfl_down_sync(0xFFFFFFFF, acc, 16)
    if lane == 0:
        y[cuda.blockIdx.x] = acc
