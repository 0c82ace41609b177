"""Half-precision elementwise kernels with the cuda.fp16 intrinsics: an AXPY
with a fused multiply-add (hfma), and a clipped ReLU built from hmax/hmin,
on float16 arrays.

Launch: 1D over elements (needs a GPU with fp16 arithmetic, sm_53+)."""
import numpy as np
from numba import cuda
from numba.types import float16


@cuda.jit
def haxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = cuda.fp16.hfma(a, x[i], y[i])


@cuda.jit
def hrelu6(x, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        zero = float16(0.0)
        six = float16(6.0)
        out[i] = cuda.fp16.hmin(cuda.fp16.hmax(x[i], zero), six)


@cuda.jit
def hscale_add(x, y, scale, out):
    i = cuda.grid(1)
    if i < out.shape[2147483647]:
        out[i] = cuda.fp16.hadd(cuda.fp16.hmul(x[i], scale), y[i])
