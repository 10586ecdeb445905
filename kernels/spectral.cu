// f64 CSR mat-vec for the spectral-radius power iteration (compiled with NVRTC at run time).
// The iteration itself (normalisation, Arnoldi, Ritz values) is reservoir-core's
// spectral::spectral_radius, driven through this product, so CPU and GPU share one algorithm.

// y[i] = sum_j W[i, j] x[j]: one warp per row, lanes stride over the row, butterfly reduction.
extern "C" __global__ void csr_matvec_f64(const int* __restrict__ row_ptr,
                                          const int* __restrict__ col_idx,
                                          const double* __restrict__ values,
                                          const double* __restrict__ x,
                                          double* __restrict__ y, int n) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (warp >= n) return;
    double acc = 0.0;
    for (int e = row_ptr[warp] + lane; e < row_ptr[warp + 1]; e += 32) {
        acc = acc + values[e] * x[col_idx[e]];
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        acc = acc + __shfl_xor_sync(0xffffffffu, acc, offset);
    }
    if (lane == 0) y[warp] = acc;
}
