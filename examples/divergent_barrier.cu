// A barrier only some threads reach: tolk-lint reports TL101 at line 14.
// (examples/divergent_barrier.ptx is this file compiled with
//  nvcc -ptx -lineinfo -arch=sm_80, so its diagnostics name these lines.)

// tolk: launch block=(256,1,1)
extern "C" __global__ void __launch_bounds__(256)
scale_first_half_warp(const float* __restrict__ x, float* __restrict__ y)
{
    __shared__ float s[256];
    const int t = threadIdx.x;
    float v = x[blockIdx.x * 256 + t];
    if (threadIdx.x < 16) {
        s[t] = 2.0f * v;
        __syncthreads();  // only threads 0-15 arrive: the block hangs
        v = s[15 - t];
    }
    y[blockIdx.x * 256 + t] = v;
}
