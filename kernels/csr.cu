// A CSR matrix's f32 values from its f64 values scaled on the device (csr_scaled_to_f32, at the
// end), and its transpose built on the device (CPU reference: reservoir-core's
// LifWeights::outgoing_f32, the layout of event-driven delivery): row j of the result lists the
// rows i whose row holds column j, ascending, with the values W[i, j].
//
// Three launches and a host scan: csr_column_counts counts each column's entries;
// the host turns the counts into row pointers; csr_scatter_transpose drops every entry into
// the next free slot of its column's row (the order within a row is the order the atomics
// ran in); csr_sort_rows sorts each row by its column index (distinct within a row), which
// makes the result the same on every run and the same as the CPU's. Indices are below 2^31.
#include "common.cuh"

// counts[j] += the entries of column j (counts zeroed by the caller). Grid-stride.
extern "C" __global__ void csr_column_counts(const unsigned int* __restrict__ col_idx,
                                             long long nnz, unsigned int* __restrict__ counts) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < nnz; e += stride) {
        atomicAdd(&counts[col_idx[e]], 1u);
    }
}

// A warp per row i (grid-stride over rows): each entry (i, j) takes slot cursor[j]++ of the
// transpose, which it fills with i and the entry's value. cursor starts as the transpose's
// row pointers.
extern "C" __global__ void csr_scatter_transpose(
    const unsigned int* __restrict__ row_ptr, const unsigned int* __restrict__ col_idx,
    const float* __restrict__ values, int rows, unsigned int* __restrict__ cursor,
    unsigned int* __restrict__ t_col_idx, float* __restrict__ t_values) {
    int lane = threadIdx.x & 31;
    long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < rows;
         i += warps) {
        unsigned int end = row_ptr[i + 1];
        for (unsigned int e = row_ptr[i] + lane; e < end; e += 32) {
            unsigned int slot = atomicAdd(&cursor[col_idx[e]], 1u);
            t_col_idx[slot] = (unsigned int)i;
            t_values[slot] = values[e];
        }
    }
}

// Most entries of a row csr_sort_rows sorts (its shared memory); the host transposes matrices
// with longer rows itself.
#define CSR_SORT_CAPACITY 4096

// A block per row (grid-stride over rows): a bitonic sort of the row's (column, value) pairs
// by column in shared memory, the row padded to a power of two with columns above every index.
extern "C" __global__ void csr_sort_rows(const unsigned int* __restrict__ row_ptr, int rows,
                                         unsigned int* __restrict__ col_idx,
                                         float* __restrict__ values) {
    __shared__ unsigned int keys[CSR_SORT_CAPACITY];
    __shared__ float payload[CSR_SORT_CAPACITY];
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        unsigned int start = row_ptr[r], len = row_ptr[r + 1] - start;
        if (len < 2) continue;  // the same for the whole block
        unsigned int size = 2;
        while (size < len) size <<= 1;
        for (unsigned int t = threadIdx.x; t < size; t += blockDim.x) {
            keys[t] = t < len ? col_idx[start + t] : 0xffffffffu;
            payload[t] = t < len ? values[start + t] : 0.0f;
        }
        __syncthreads();
        for (unsigned int k = 2; k <= size; k <<= 1) {
            for (unsigned int j = k >> 1; j > 0; j >>= 1) {
                for (unsigned int t = threadIdx.x; t < size; t += blockDim.x) {
                    unsigned int p = t ^ j;
                    if (p > t) {
                        unsigned int a = keys[t], b = keys[p];
                        bool ascending = (t & k) == 0;
                        if ((a > b) == ascending) {
                            keys[t] = b;
                            keys[p] = a;
                            float v = payload[t];
                            payload[t] = payload[p];
                            payload[p] = v;
                        }
                    }
                }
                __syncthreads();
            }
        }
        for (unsigned int t = threadIdx.x; t < len; t += blockDim.x) {
            col_idx[start + t] = keys[t];
            values[start + t] = payload[t];
        }
        __syncthreads();
    }
}

// out[e] = f32(in[e] * factor): a CSR matrix's f64 values scaled and rounded on the device, with
// the host's bits (reservoir-core scales in f64, then the upload rounds to f32; both round to
// nearest). Grid-stride.
extern "C" __global__ void csr_scaled_to_f32(const double* __restrict__ in, double factor,
                                             long long nnz, float* __restrict__ out) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < nnz; e += stride) {
        out[e] = __double2float_rn(__dmul_rn(in[e], factor));
    }
}
