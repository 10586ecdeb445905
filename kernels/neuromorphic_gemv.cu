// Echo-state reservoir kernels, shipped as PTX (kernels/ptx/neuromorphic_gemv.ptx, built by
// kernels/build_ptx.sh) and compiled with NVRTC when a driver rejects that PTX.
//
// Built with --fmad=false: every a*b+c stays a rounded multiply and a rounded add, as in the
// CPU reference (reservoir-core), so the only difference from the CPU is summation order.
// The update is x(t+1) = (1 - a) x(t) + a tanh(W_in u(t) + W x(t) + b + noise(t)).

// tanh as the 13/6 rational approximation of reservoir-core's activation::tanh_f32_in_place,
// with the same constants and operation order (bit-identical to the CPU for the same input).
__device__ __forceinline__ float tanh_rational(float v) {
    const float clamp = 7.905311f;
    const float a1 = 4.8935246e-3f, a3 = 6.3726193e-4f, a5 = 1.4857224e-5f, a7 = 5.122297e-8f;
    const float a9 = -8.604671e-11f, a11 = 2.000188e-13f, a13 = -2.7607685e-16f;
    const float b0 = 4.893525e-3f, b2 = 2.2684346e-3f, b4 = 1.1853471e-4f, b6 = 1.1982584e-6f;
    float x = fminf(fmaxf(v, -clamp), clamp);
    float x2 = x * x;
    float p = x * (a1 + x2 * (a3 + x2 * (a5 + x2 * (a7 + x2 * (a9 + x2 * (a11 + x2 * a13))))));
    float q = b0 + x2 * (b2 + x2 * (b4 + x2 * b6));
    return p / q;
}

// drive[t, i] = b[i] + sum_k W_in[i, k] u[t, k] (+ noise[t, i]) for all T steps at once:
// the input projection does not depend on the state, so it leaves the sequential loop.
// One thread per (t, i); u is T x K, w_in is N x K, drive and noise are T x N (row-major).
extern "C" __global__ void matvec_input_kernel(const float* __restrict__ u,
                                               const float* __restrict__ w_in,
                                               const float* __restrict__ bias,
                                               const float* __restrict__ noise, // may be null
                                               float* __restrict__ drive,
                                               int steps, int n, int k) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)steps * n) return;
    int t = (int)(idx / n);
    int i = (int)(idx % n);
    float acc = bias[i];
    for (int c = 0; c < k; ++c) {
        acc = acc + w_in[(long long)i * k + c] * u[(long long)t * k + c];
    }
    if (noise != nullptr) acc = acc + noise[idx];
    drive[idx] = acc;
}

// pre[i] = sum_j W[i, j] x[j] + drive[i] for a CSR matrix W: one warp per row, lanes stride
// over the row's non-zeros (coalesced reads of col/val), then a butterfly reduction.
extern "C" __global__ void matvec_reservoir_kernel(const int* __restrict__ row_ptr,
                                                   const int* __restrict__ col_idx,
                                                   const float* __restrict__ values,
                                                   const float* __restrict__ x,
                                                   const float* __restrict__ drive,
                                                   float* __restrict__ pre, int n) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (warp >= n) return;
    float acc = 0.0f;
    for (int e = row_ptr[warp] + lane; e < row_ptr[warp + 1]; e += 32) {
        acc = acc + values[e] * x[col_idx[e]];
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        acc = acc + __shfl_xor_sync(0xffffffffu, acc, offset);
    }
    if (lane == 0) pre[warp] = acc + drive[warp];
}

// x_next[i] = (1 - a) x[i] + a f(pre[i]); f = tanh (activation 0) or identity (activation 1).
// x_next may alias nothing else; the caller keeps x (the previous state) intact.
extern "C" __global__ void leaky_integration_kernel(const float* __restrict__ x,
                                                    const float* __restrict__ pre,
                                                    float* __restrict__ x_next, float leak,
                                                    int activation, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float f = activation == 0 ? tanh_rational(pre[i]) : pre[i];
    x_next[i] = (1.0f - leak) * x[i] + leak * f;
}
