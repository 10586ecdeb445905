// Single-sequence echo-state runs without a launch per step: one cooperative launch runs
// many steps, the blocks meeting at a grid barrier between steps.
//
// esn_persistent_csr: each block owns a contiguous range of rows and keeps its slice of W (CSR
// values and columns) in shared memory when it fits; every step it copies x(t) into shared
// memory, computes its rows (a warp per row), writes x(t+1) into the states buffer and meets
// the other blocks at the barrier. A dense W is the CSR with every column.
// esn_persistent_dense (and its f16 and bf16 forms) streams the rows of a dense W that does
// not fit on chip (large N) with 16-byte loads.
//
// Summation order: lanes take every 32nd term of a row, then a butterfly reduction, as in
// matvec_reservoir_kernel; the CPU sums in another order, so results agree to rounding.
#include "common.cuh"

// Grid barrier on a counter that only grows (zeroed before each launch): the arrivals of
// step t bring it to (t + 1) · blocks. Each block's thread 0 adds its arrival with release
// semantics (the block's writes, ordered before it by __syncthreads, become visible to the
// GPU) and polls with acquire loads; no reset and no second counter, so the last arrival is
// one atomic away from releasing everyone. Valid only when every block is resident
// (cooperative launch). release/acquire need sm_70+ (the shipped PTX targets compute_75).
__device__ __forceinline__ void grid_barrier(unsigned long long* arrived, unsigned long long target) {
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("red.release.gpu.global.add.u64 [%0], 1;" ::"l"(arrived) : "memory");
        unsigned long long seen;
        do {
            asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(seen) : "l"(arrived) : "memory");
        } while (seen < target);
    }
    __syncthreads();
}

// xs = x (n floats) by the whole block: 16-byte loads when n % 4 == 0 (x then starts on a
// 16-byte boundary), so a thread has few dependent round trips to L2 per step.
__device__ __forceinline__ void copy_x(float* xs, const float* x, int n) {
    if ((n & 3) == 0) {
        const float4* from = (const float4*)x;
        float4* to = (float4*)xs;
        for (int j = threadIdx.x; j < n / 4; j += blockDim.x) to[j] = from[j];
    } else {
        for (int j = threadIdx.x; j < n; j += blockDim.x) xs[j] = x[j];
    }
}

// states[t, i] = x(t+1)[i] for t < steps, from x0 (n values) and drive (steps x n, the
// precomputed b + W_in u(t) + noise). barrier: one zeroed 64-bit counter. Dynamic shared
// memory: n floats for x, the block's rows_per_block + 1 row offsets, plus the block's W slice
// (nnz floats + nnz ints) when cache_w != 0. A warp's rows are row0 + warp + j·warps; lane j
// loads row j's drive at the start of a step, so the drive is in flight during the copy of x.
extern "C" __global__ void __launch_bounds__(1024, 1) esn_persistent_csr(const int* __restrict__ row_ptr,
                                              const int* __restrict__ col_idx,
                                              const float* __restrict__ values,
                                              const float* __restrict__ drive,
                                              const float* __restrict__ x0,
                                              float* __restrict__ states, int n, int steps,
                                              float leak, int activation, int rows_per_block,
                                              int cache_w, unsigned long long* barrier) {
    extern __shared__ float shared[];
    float* xs = shared;
    int row0 = min(n, (int)blockIdx.x * rows_per_block);
    int row1 = min(n, row0 + rows_per_block);
    int first = row_ptr[row0];
    int count = row_ptr[row1] - first;
    int* rows = (int*)(xs + n);  // row offsets of rows row0..row1, relative to first
    float* wv = (float*)(rows + rows_per_block + 1);
    int* wc = (int*)(wv + count);
    for (int r = threadIdx.x; r <= row1 - row0; r += blockDim.x) rows[r] = row_ptr[row0 + r] - first;
    if (cache_w) {
        for (int e = threadIdx.x; e < count; e += blockDim.x) {
            wv[e] = values[first + e];
            wc[e] = col_idx[first + e];
        }
    }
    const float* vals = cache_w ? wv : values + first;
    const int* cols = cache_w ? wc : col_idx + first;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    const int lane_row = row0 + warp + lane * warps;
    for (int t = 0; t < steps; ++t) {
        const float* x = t == 0 ? x0 : states + (long long)(t - 1) * n;
        const float* drive_t = drive + (long long)t * n;
        float lane_drive = lane_row < row1 ? drive_t[lane_row] : 0.0f;
        copy_x(xs, x, n);
        __syncthreads();
        for (int j = 0, r = row0 + warp; r < row1; ++j, r += warps) {
            float acc = warp_row_dot(vals, cols, rows[r - row0], rows[r - row0 + 1], xs, lane);
            float d = __shfl_sync(0xffffffffu, lane_drive, j & 31);
            if (lane == 0) {
                float pre = acc + (j < 32 ? d : drive_t[r]);
                states[(long long)t * n + r] = leaky(xs[r], pre, leak, activation);
            }
        }
        grid_barrier(barrier, (unsigned long long)(t + 1) * gridDim.x);
    }
}

// Weights of a dense W as the streaming kernel reads them: 16 bytes hold COUNT values, which
// decode() widens to f32 (exactly: every f16 and bf16 value is an f32 value).
struct WeightsF32 {
    static constexpr int COUNT = 4;
    __device__ static void decode(uint4 raw, float* w) {
        w[0] = __uint_as_float(raw.x);
        w[1] = __uint_as_float(raw.y);
        w[2] = __uint_as_float(raw.z);
        w[3] = __uint_as_float(raw.w);
    }
};

__device__ __forceinline__ float f16_to_float(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

// bfloat16 is the upper half of an f32.
__device__ __forceinline__ float bf16_to_float(unsigned short h) {
    return __uint_as_float((unsigned int)h << 16);
}

// Eight 16-bit weights in 16 bytes, widened by `widen`.
template <float (*widen)(unsigned short)>
struct Weights16 {
    static constexpr int COUNT = 8;
    __device__ static void decode(uint4 raw, float* w) {
        const unsigned int words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            w[2 * k] = widen((unsigned short)(words[k] & 0xffffu));
            w[2 * k + 1] = widen((unsigned short)(words[k] >> 16));
        }
    }
};

using WeightsF16 = Weights16<f16_to_float>;
using WeightsBf16 = Weights16<bf16_to_float>;

// acc + the 16-byte group `raw` of a row times the matching values of x, in order.
template <typename Format>
__device__ __forceinline__ float dot_group(float acc, uint4 raw, const float4* x) {
    float w[Format::COUNT];
    Format::decode(raw, w);
#pragma unroll
    for (int v = 0; v < Format::COUNT / 4; ++v) {
        const float4 b = x[v];
        acc = acc + w[4 * v] * b.x;
        acc = acc + w[4 * v + 1] * b.y;
        acc = acc + w[4 * v + 2] * b.z;
        acc = acc + w[4 * v + 3] * b.w;
    }
    return acc;
}

// Row `row` (`groups` 16-byte groups) times x (in shared memory), summed over the warp: lane l
// multiplies the groups l, l + 32, ... in order, eight 16-byte loads in flight, then the
// butterfly of warp_sum. Every lane gets the sum.
template <typename Format>
__device__ __forceinline__ float dense_row_dot(const uint4* __restrict__ row, int groups,
                                               const float4* xs4, int lane) {
    constexpr int COUNT = Format::COUNT;
    float acc = 0.0f;
    int q = lane;
    for (; q + 32 * 7 < groups; q += 32 * 8) {
        uint4 raw[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) raw[u] = __ldg(row + q + 32 * u);
#pragma unroll
        for (int u = 0; u < 8; ++u) acc = dot_group<Format>(acc, raw[u], xs4 + (q + 32 * u) * (COUNT / 4));
    }
    for (; q < groups; q += 32) acc = dot_group<Format>(acc, __ldg(row + q), xs4 + q * (COUNT / 4));
    return warp_sum(acc);
}

// The same run for a dense row-major W (n x n, n a multiple of Format::COUNT) read from
// global memory every step with 16-byte loads: for W larger than the chips' shared memory.
// The step is bound by HBM bandwidth, so each lane keeps eight independent 16-byte loads in
// flight (a block of 1024 threads has 128 KB of W in flight per SM); W in 16-bit formats
// (f16, bf16) halves the bytes per step. Lane l multiplies the 16-byte groups l, l + 32, ...
// of its row, each in order, then the butterfly of warp_sum.
template <typename Format>
__device__ void persistent_dense(const uint4* __restrict__ w, const float* __restrict__ drive,
                                 const float* __restrict__ x0, float* __restrict__ states, int n,
                                 int steps, float leak, int activation,
                                 unsigned long long* barrier) {
    extern __shared__ float xs[];
    constexpr int COUNT = Format::COUNT;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    int global_warp = blockIdx.x * warps + warp, total_warps = gridDim.x * warps;
    const float4* xs4 = (const float4*)xs;
    const int groups = n / COUNT;  // 16-byte groups per row
    for (int t = 0; t < steps; ++t) {
        const float* x = t == 0 ? x0 : states + (long long)(t - 1) * n;
        copy_x(xs, x, n);
        __syncthreads();
        for (int r = global_warp; r < n; r += total_warps) {
            float acc = dense_row_dot<Format>(w + (long long)r * groups, groups, xs4, lane);
            if (lane == 0) {
                float pre = acc + drive[(long long)t * n + r];
                states[(long long)t * n + r] = leaky(xs[r], pre, leak, activation);
            }
        }
        grid_barrier(barrier, (unsigned long long)(t + 1) * gridDim.x);
    }
}

// The dense run with W in f32, f16 and bf16 (barrier: one zeroed 64-bit counter; dynamic
// shared memory: n floats for x).
extern "C" __global__ void __launch_bounds__(1024, 1)
esn_persistent_dense(const uint4* __restrict__ w, const float* __restrict__ drive,
                     const float* __restrict__ x0, float* __restrict__ states, int n,
                     int steps, float leak, int activation, unsigned long long* barrier) {
    persistent_dense<WeightsF32>(w, drive, x0, states, n, steps, leak, activation, barrier);
}

extern "C" __global__ void __launch_bounds__(1024, 1)
esn_persistent_dense_f16(const uint4* __restrict__ w, const float* __restrict__ drive,
                         const float* __restrict__ x0, float* __restrict__ states, int n,
                         int steps, float leak, int activation, unsigned long long* barrier) {
    persistent_dense<WeightsF16>(w, drive, x0, states, n, steps, leak, activation, barrier);
}

extern "C" __global__ void __launch_bounds__(1024, 1)
esn_persistent_dense_bf16(const uint4* __restrict__ w, const float* __restrict__ drive,
                          const float* __restrict__ x0, float* __restrict__ states, int n,
                          int steps, float leak, int activation, unsigned long long* barrier) {
    persistent_dense<WeightsBf16>(w, drive, x0, states, n, steps, leak, activation, barrier);
}

// One step of one shard of a dense W split by rows over GPUs: w holds the shard's `rows` rows
// of all n columns (row-major, f32, n a multiple of 4), x the whole state, drive_t the shard's
// drive of this step; own[r] = leaky(x[first + r], W[r]·x + drive_t[r]). The rows are read as
// esn_persistent_dense reads them, so a shard streams W at that kernel's rate. Dynamic shared
// memory: n floats for x.
extern "C" __global__ void __launch_bounds__(1024, 1)
esn_shard_dense_step(const uint4* __restrict__ w, const float* __restrict__ drive_t,
                     const float* __restrict__ x, float* __restrict__ own, int rows, int n,
                     int first, float leak, int activation) {
    extern __shared__ float xs[];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    int global_warp = blockIdx.x * warps + warp, total_warps = gridDim.x * warps;
    const int groups = n / WeightsF32::COUNT;
    copy_x(xs, x, n);
    __syncthreads();
    for (int r = global_warp; r < rows; r += total_warps) {
        float acc = dense_row_dot<WeightsF32>(w + (long long)r * groups, groups, (const float4*)xs, lane);
        if (lane == 0) own[r] = leaky(xs[first + r], acc + drive_t[r], leak, activation);
    }
}
