"""A barrier only some threads reach: tolk-lint reports TL101 at line 18.

Threads 0-15 of the block wait at cuda.syncthreads() for threads that never
come: on a GPU the block hangs (or the result is undefined).
"""
from numba import cuda, float32


# tolk: launch block=(256,1,1)
@cuda.jit
def scale_first_half_warp(x, y):
    s = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * 256 + t
    v = x[i]
    if cuda.threadIdx.x < 16:
        s[t] = 2.0 * v
        cuda.syncthreads()  # only threads 0-15 arrive: the block hangs
        v = s[15 - t]
    y[i] = v
