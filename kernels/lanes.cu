// One step of B lanes (the reservoirs of a sweep) that share one random W, W_in and b.
//
// Lane b is the echo-state reservoir with W scaled to spectral radius rho_b, W_in scaled by
// s_b and leak rate a_b. W1 and W_in1 are the draws at spectral radius 1 and input scaling 1,
// so lane b's W is rho_b W1 and its W_in is s_b W_in1 (reservoir-core draws them that way,
// equal to rounding). With P = W1 X (one cuBLAS GEMM over all lanes, in f32 or with f16
// operands) and v_t = W_in1 u(t):
//   x_b(t+1) = (1 - a_b) x_b(t) + a_b f(rho_b P_b + b + s_b v_t + noise(t)),
// in the CPU reservoir's order (W x, then + b, + W_in u, + noise).
#include "common.cuh"

// product: W1 X (n x lanes, column-major: lane b at [b n, (b + 1) n)); input_t: v_t (n);
// bias: b (n); noise_t: this step's noise (n) or null; radius, scaling, leak: per lane;
// x: X(t), x_next: X(t + 1) (n x lanes, not overlapping x); x_half: null, or X(t + 1) in f16
// (the next step's operand of an f16 GEMM).
extern "C" __global__ void sweep_lane_step(const float* __restrict__ product,
                                           const float* __restrict__ input_t,
                                           const float* __restrict__ bias,
                                           const float* __restrict__ noise_t,
                                           const float* __restrict__ radius,
                                           const float* __restrict__ scaling,
                                           const float* __restrict__ leak,
                                           const float* __restrict__ x,
                                           float* __restrict__ x_next,
                                           unsigned short* __restrict__ x_half, int n,
                                           int lanes, int activation) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)n * lanes) return;
    int lane = (int)(idx / n);
    int i = (int)(idx % n);
    float pre = radius[lane] * product[idx] + bias[i];
    pre = pre + scaling[lane] * input_t[i];
    if (noise_t != nullptr) pre = pre + noise_t[i];
    float v = leaky(x[idx], pre, leak[lane], activation);
    x_next[idx] = v;
    if (x_half != nullptr) x_half[idx] = to_half(v);
}
