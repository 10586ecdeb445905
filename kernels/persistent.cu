// Single-sequence echo-state runs without a launch per step (NVRTC, --fmad=false).
//
// esn_persistent_csr: one cooperative launch runs many steps. Each block owns a contiguous
// range of rows and keeps its slice of W (CSR values and columns) in shared memory when it
// fits; every step it copies x(t) into shared memory, computes its rows (a warp per row), writes
// x(t+1) into the states buffer and meets the other blocks at a grid barrier. A dense W is the
// CSR with every column. esn_persistent_dense streams the rows of a dense W that does not fit
// on chip (large N) with 16-byte loads. esn_step_fused is the one-launch-per-step kernel: the
// baseline of the benchmarks and the fallback where cooperative launch is unavailable.
//
// Summation order: lanes take every 32nd term of a row, then a butterfly reduction, as in
// matvec_reservoir_kernel; the CPU sums in another order, so results agree to rounding.
//
// NVRTC compiles this file after neuromorphic_gemv.cu as one unit (gpu-reservoir's
// kernels::PERSISTENT), so tanh_rational has one definition, shared with the shipped kernels.

__device__ __forceinline__ float warp_sum(float acc) {
    for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
    return acc;
}

__device__ __forceinline__ float leaky(float x, float pre, float leak, int activation) {
    float f = activation == 0 ? tanh_rational(pre) : pre;
    return (1.0f - leak) * x + leak * f;
}

// Sense-reversing grid barrier: the last block to arrive resets the counter and bumps the
// generation the others spin on. Valid only when every block is resident (cooperative launch).
__device__ __forceinline__ void grid_barrier(unsigned int* count, volatile unsigned int* generation,
                                             unsigned int blocks) {
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned int seen = *generation;
        __threadfence();
        if (atomicAdd(count, 1u) == blocks - 1u) {
            atomicExch(count, 0u);
            __threadfence();
            atomicAdd((unsigned int*)generation, 1u);
        } else {
            while (*generation == seen) { }
        }
        __threadfence();
    }
    __syncthreads();
}

// states[t, i] = x(t+1)[i] for t < steps, from x0 (n values) and drive (steps x n, the
// precomputed b + W_in u(t) + noise). barrier: two zeroed unsigned ints. Dynamic shared memory:
// n floats for x, plus the block's W slice (nnz floats + nnz ints) when cache_w != 0.
extern "C" __global__ void esn_persistent_csr(const int* __restrict__ row_ptr,
                                              const int* __restrict__ col_idx,
                                              const float* __restrict__ values,
                                              const float* __restrict__ drive,
                                              const float* __restrict__ x0,
                                              float* __restrict__ states, int n, int steps,
                                              float leak, int activation, int rows_per_block,
                                              int cache_w, unsigned int* barrier) {
    extern __shared__ float shared[];
    float* xs = shared;
    int row0 = min(n, (int)blockIdx.x * rows_per_block);
    int row1 = min(n, row0 + rows_per_block);
    int first = row_ptr[row0];
    int count = row_ptr[row1] - first;
    float* wv = xs + n;
    int* wc = (int*)(wv + count);
    if (cache_w) {
        for (int e = threadIdx.x; e < count; e += blockDim.x) {
            wv[e] = values[first + e];
            wc[e] = col_idx[first + e];
        }
    }
    const float* vals = cache_w ? wv : values + first;
    const int* cols = cache_w ? wc : col_idx + first;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    for (int t = 0; t < steps; ++t) {
        const float* x = t == 0 ? x0 : states + (long long)(t - 1) * n;
        for (int j = threadIdx.x; j < n; j += blockDim.x) xs[j] = x[j];
        __syncthreads();
        for (int r = row0 + warp; r < row1; r += warps) {
            float acc = 0.0f;
            int end = row_ptr[r + 1] - first;
            for (int e = row_ptr[r] - first + lane; e < end; e += 32) acc = acc + vals[e] * xs[cols[e]];
            acc = warp_sum(acc);
            if (lane == 0) {
                float pre = acc + drive[(long long)t * n + r];
                states[(long long)t * n + r] = leaky(xs[r], pre, leak, activation);
            }
        }
        grid_barrier(barrier, barrier + 1, gridDim.x);
    }
}

// The same run for a dense row-major W (n x n, n a multiple of 4) read from global memory
// every step with float4 loads: for W larger than the chips' shared memory.
extern "C" __global__ void esn_persistent_dense(const float* __restrict__ w,
                                                const float* __restrict__ drive,
                                                const float* __restrict__ x0,
                                                float* __restrict__ states, int n, int steps,
                                                float leak, int activation, unsigned int* barrier) {
    extern __shared__ float xs[];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    int global_warp = blockIdx.x * warps + warp, total_warps = gridDim.x * warps;
    const float4* xs4 = (const float4*)xs;
    for (int t = 0; t < steps; ++t) {
        const float* x = t == 0 ? x0 : states + (long long)(t - 1) * n;
        for (int j = threadIdx.x; j < n; j += blockDim.x) xs[j] = x[j];
        __syncthreads();
        for (int r = global_warp; r < n; r += total_warps) {
            const float4* row = (const float4*)(w + (long long)r * n);
            float acc = 0.0f;
            for (int q = lane; q < n / 4; q += 32) {
                float4 a = __ldg(row + q);
                float4 b = xs4[q];
                acc = acc + a.x * b.x;
                acc = acc + a.y * b.y;
                acc = acc + a.z * b.z;
                acc = acc + a.w * b.w;
            }
            acc = warp_sum(acc);
            if (lane == 0) {
                float pre = acc + drive[(long long)t * n + r];
                states[(long long)t * n + r] = leaky(xs[r], pre, leak, activation);
            }
        }
        grid_barrier(barrier, barrier + 1, gridDim.x);
    }
}

// One step, one launch: x_next = (1 - a) x + a f(W x + drive_t), a warp per row (CSR).
extern "C" __global__ void esn_step_fused(const int* __restrict__ row_ptr,
                                          const int* __restrict__ col_idx,
                                          const float* __restrict__ values,
                                          const float* __restrict__ drive_t,
                                          const float* __restrict__ x, float* __restrict__ x_next,
                                          int n, float leak, int activation) {
    int r = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (r >= n) return;
    float acc = 0.0f;
    for (int e = row_ptr[r] + lane; e < row_ptr[r + 1]; e += 32) acc = acc + values[e] * x[col_idx[e]];
    acc = warp_sum(acc);
    if (lane == 0) x_next[r] = leaky(x[r], acc + drive_t[r], leak, activation);
}

// Baseline helper: x_next = (1 - a) x + a f(pre + drive_t) after a cuBLAS GEMV wrote pre.
extern "C" __global__ void esn_elementwise(const float* __restrict__ pre,
                                           const float* __restrict__ drive_t,
                                           const float* __restrict__ x, float* __restrict__ x_next,
                                           int n, float leak, int activation) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x_next[i] = leaky(x[i], pre[i] + drive_t[i], leak, activation);
}
