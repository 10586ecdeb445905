// Spike encoding on the GPU. The CPU reference is reservoir-core's encoding::rate_sequence /
// rate and random::counter: the same counter-based generator and the same f32 probability, so
// both produce identical spikes for a seed.
#include "common.cuh"

// encoding::rate_probability: clamp((x as f32) * gain + offset, 0, 1), two rounded operations;
// a NaN gives 0.
__device__ __forceinline__ float rate_probability(double x, float gain, float offset) {
    float p = __fadd_rn(__fmul_rn(__double2float_rn(x), gain), offset);
    if (p >= 1.0f) return 1.0f;
    if (p > 0.0f) return p;
    return 0.0f;
}

// out[t, i] = 1 if keyed_f32(key, t * k + i) < rate_probability(x[t / repeat, i]) else 0,
// for t < rows * repeat: row r of x (rows x k intensities) is held for `repeat` steps.
// key = counter_rng::stream_key(seed, STREAM_RATE), computed on the host.
extern "C" __global__ void rate_encode_kernel(const double* __restrict__ x, int rows, int k,
                                              int repeat, float gain, float offset,
                                              unsigned long long key, float* __restrict__ out) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long total = (long long)rows * repeat * k;
    if (idx >= total) return;
    long long t = idx / k;
    int i = (int)(idx % k);
    float p = rate_probability(x[(t / repeat) * k + i], gain, offset);
    out[idx] = keyed_f32(key, (unsigned long long)idx) < p ? 1.0f : 0.0f;
}
