// Device helpers shared by every kernel module, and the codes Rust passes to kernels
// (reservoir-kernels names them; a CPU test checks that both agree).
//
// Every module is compiled with --fmad=false: each a*b+c stays a rounded multiply and a
// rounded add, as in the CPU reference (reservoir-core), so where a kernel differs from the
// CPU it is by summation order only. A kernel that wants a fused multiply-add says so
// (__fmaf_rn).
#pragma once

// The nonlinearity of an echo-state reservoir (reservoir_core::Activation).
enum Activation { ACTIVATION_TANH = 0, ACTIVATION_IDENTITY = 1 };

// What a LIF reservoir reports per neuron (reservoir_core::lif::LifFeatures).
enum LifFeature { LIF_FEATURE_TRACE = 0, LIF_FEATURE_MEMBRANE = 1, LIF_FEATURE_COUNTS = 2 };

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

// The leaky update of one unit: (1 - a) x + a f(pre).
__device__ __forceinline__ float leaky(float x, float pre, float leak, int activation) {
    float f = activation == ACTIVATION_TANH ? tanh_rational(pre) : pre;
    return (1.0f - leak) * x + leak * f;
}

// The f16 bits of v, rounded to nearest even.
__device__ __forceinline__ unsigned short to_half(float v) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    return h;
}

// The sum of `acc` over the 32 lanes of a warp, by butterfly (every lane gets it).
template <typename T>
__device__ __forceinline__ T warp_sum(T acc) {
    for (int offset = 16; offset > 0; offset >>= 1) acc = acc + __shfl_xor_sync(0xffffffffu, acc, offset);
    return acc;
}

// One row of a CSR product by a warp: lane l takes the non-zeros begin + l, begin + l + 32, ...
// of `values`/`cols`, then the butterfly of warp_sum; every lane returns the row's sum.
template <typename T>
__device__ __forceinline__ T warp_row_dot(const T* values, const int* cols, int begin, int end,
                                          const T* x, int lane) {
    T acc = 0;
    for (int e = begin + lane; e < end; e += 32) acc = acc + values[e] * x[cols[e]];
    return warp_sum(acc);
}

// The SplitMix64 finaliser of reservoir_core::random::counter.
__device__ __forceinline__ unsigned long long mix64(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// counter::keyed_f32: the top 24 bits of mix64(key + (counter + 1) * GAMMA) in [0, 1).
__device__ __forceinline__ float keyed_f32(unsigned long long key, unsigned long long counter) {
    const unsigned long long gamma = 0x9E3779B97F4A7C15ull;
    unsigned int bits = (unsigned int)(mix64(key + (counter + 1ull) * gamma) >> 32);
    return (float)(bits >> 8) * (1.0f / 16777216.0f);
}
