// f64 CSR mat-vec for the spectral-radius power iteration. The iteration itself
// (normalisation, Arnoldi, Ritz values) is reservoir-core's spectral::spectral_radius, driven
// through this product, so CPU and GPU share one algorithm.
#include "common.cuh"

// y[i] = sum_j W[i, j] x[j]: one warp per row.
extern "C" __global__ void csr_matvec_f64(const int* __restrict__ row_ptr,
                                          const int* __restrict__ col_idx,
                                          const double* __restrict__ values,
                                          const double* __restrict__ x,
                                          double* __restrict__ y, int n) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (warp >= n) return;
    double acc = warp_row_dot(values, col_idx, row_ptr[warp], row_ptr[warp + 1], x, lane);
    if (lane == 0) y[warp] = acc;
}
