// Ridge sums on the device: the f32 states are widened to f64 here, then
// cuBLAS adds XᵀX and Xᵀ[Y, 1] (DGEMMs) in f64, as reservoir-core's RidgeAccumulator
// does on the CPU with the same f32 states widened to f64.

// dst[i] = (double)src[i] for i < count (exact); a grid-stride loop, so any grid covers it.
extern "C" __global__ void widen_f32_to_f64(const float* __restrict__ src,
                                            double* __restrict__ dst, long long count) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        dst[i] = (double)src[i];
    }
}
