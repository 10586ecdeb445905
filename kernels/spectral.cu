// f64 CSR mat-vec for the spectral-radius estimate. The estimate itself (power steps, Arnoldi,
// Ritz values) is reservoir-core's spectral::spectral_radius, driven through this product, so
// CPU and GPU share one algorithm and, with the CPU's summation order below, one result.
#include "common.cuh"

// y[i] = sum_j W[i, j] x[j] as the CPU sums it (reservoir-core's real::spmv): the chain
// acc <- fma(W[i, j], x[j], acc) over the row's entries in increasing column order, from
// acc = 0. The product, and with it the whole estimate, is then the CPU's bit for bit. A thread
// per row: the chain leaves no parallelism inside a row.
extern "C" __global__ void csr_matvec_f64(const int* __restrict__ row_ptr,
                                          const int* __restrict__ col_idx,
                                          const double* __restrict__ values,
                                          const double* __restrict__ x,
                                          double* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double acc = 0.0;
    for (int e = row_ptr[i], end = row_ptr[i + 1]; e < end; ++e) {
        acc = __fma_rn(values[e], x[col_idx[e]], acc);
    }
    y[i] = acc;
}
