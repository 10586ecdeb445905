// f64 CSR mat-vec for the spectral-radius estimate. The estimate itself (power steps, Arnoldi,
// Ritz values) is reservoir-core's spectral::spectral_radius, driven through this product, so
// CPU and GPU share one algorithm and, with the CPU's summation order below, one result.
#include "common.cuh"

// y[i] = sum_j W[i, j] x[j] as the CPU sums it (reservoir-core's real::spmv): the chain
// acc <- fma(W[i, j], x[j], acc) over the row's entries in increasing column order, from
// acc = 0. The product, and with it the whole estimate, is then the CPU's bit for bit.
// The chain leaves no parallelism inside a row, so a thread takes a row; but a thread reading
// its own row reads memory far from its neighbours'. So the block's 256 rows go through shared
// memory MATVEC_CHUNK entries at a time: the block loads the next entries of all its rows
// together (a warp reads 4 rows' consecutive entries, and gathers their x), then each thread
// runs its row's chain over them. Launched with MATVEC_ROWS threads a block
// (reservoir_kernels::spectral::PRODUCT_ROWS).
#define MATVEC_ROWS 256
#define MATVEC_CHUNK 8
extern "C" __global__ void __launch_bounds__(MATVEC_ROWS)
csr_matvec_f64(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
               const double* __restrict__ values, const double* __restrict__ x,
               double* __restrict__ y, int n) {
    // One spare column: a row's entries are 72 bytes apart, so the 16 threads of a half-warp
    // reading their rows' k-th entries hit distinct banks.
    __shared__ double w[MATVEC_ROWS][MATVEC_CHUNK + 1];
    __shared__ double xs[MATVEC_ROWS][MATVEC_CHUNK + 1];
    __shared__ int begin[MATVEC_ROWS], length[MATVEC_ROWS];
    __shared__ int longest;
    const int t = threadIdx.x;
    const int row = blockIdx.x * MATVEC_ROWS + t;
    int b = 0, e = 0;
    if (row < n) {
        b = row_ptr[row];
        e = row_ptr[row + 1];
    }
    begin[t] = b;
    length[t] = e - b;
    if (t == 0) longest = 0;
    __syncthreads();
    atomicMax(&longest, e - b);
    __syncthreads();
    const int rows_longest = longest;
    double acc = 0.0;
    for (int k0 = 0; k0 < rows_longest; k0 += MATVEC_CHUNK) {
        for (int s = t; s < MATVEC_ROWS * MATVEC_CHUNK; s += MATVEC_ROWS) {
            const int r = s / MATVEC_CHUNK, j = s % MATVEC_CHUNK;
            if (k0 + j < length[r]) {
                const int at = begin[r] + k0 + j;
                w[r][j] = values[at];
                xs[r][j] = x[col_idx[at]];
            }
        }
        __syncthreads();
        const int count = min(MATVEC_CHUNK, e - b - k0);
        for (int j = 0; j < count; ++j) acc = __fma_rn(w[t][j], xs[t][j], acc);
        // The tile is read before the next one overwrites it.
        __syncthreads();
    }
    if (row < n) y[row] = acc;
}
