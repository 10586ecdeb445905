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
            float acc = 0.0f;
            int end = rows[r - row0 + 1];
            for (int e = rows[r - row0] + lane; e < end; e += 32) acc = acc + vals[e] * xs[cols[e]];
            acc = warp_sum(acc);
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
            const uint4* row = w + (long long)r * groups;
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
            acc = warp_sum(acc);
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

// The f16 bits of v, rounded to nearest even.
__device__ __forceinline__ unsigned short to_half(float v) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    return h;
}

// x_next = (1 - a) x + a f(pre + drive_t) after a cuBLAS GEMV or GEMM wrote pre (the GEMV
// baseline, the batched step). When x_half is not null it also receives x_next in f16: the
// next step's operand of an f16 GEMM.
extern "C" __global__ void esn_elementwise(const float* __restrict__ pre,
                                           const float* __restrict__ drive_t,
                                           const float* __restrict__ x, float* __restrict__ x_next,
                                           unsigned short* __restrict__ x_half, int n, float leak,
                                           int activation) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = leaky(x[i], pre[i] + drive_t[i], leak, activation);
        x_next[i] = v;
        if (x_half != nullptr) x_half[i] = to_half(v);
    }
}

// half[i] = f16(x[i]): the f16 operand of the first step of a batched f16 run.
extern "C" __global__ void f32_to_f16(const float* __restrict__ x, unsigned short* __restrict__ half,
                                      int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) half[i] = to_half(x[i]);
}

// ---------------------------------------------------------------------------------------------
// esn_cluster: the whole run in one thread-block cluster (sm_90+, N <= 1024). The C blocks of
// the cluster (C = gridDim.x, one cluster) hold all of W on chip. Block c owns the rows
// [c·R, c·R + R), R = rows_per_block <= 64 and a multiple of 4; lane l of every warp owns the block's rows l and
// l + 32, and warp w the columns [64w, 64w + 64). So a lane multiplies 2 rows by 64 columns:
// the first CLUSTER_REG_COLS columns of both rows from registers, the rest from shared memory
// (16-byte loads, consecutive across the warp), while the 64 values of x a warp needs are
// read once per step as broadcasts. Reading x per row instead (a warp per row) costs as many
// shared-memory bytes as W itself; this split reads ~1/3 of W and almost none of x.
// The 16 warps' partial sums meet in shared memory; the row owners (threads 0..R-1) add them
// in warp order, apply the leaky update and store x(t+1)[r] into their own x buffer; every
// fourth owner then stores its group of 4 rows (16 bytes) into every peer's x buffer by
// st.async, each store counting its bytes on the peer's transaction barrier (mbarrier) for
// that buffer. A block sends its rows rounded up to 4 (zeros past N, where W's columns are
// zero too). A block waits until every peer's slice has arrived: no
// cluster-wide barrier and no fence per step. Every block keeps the whole x(t) in shared
// memory, twice (x(t) is read while x(t+1) arrives).
// The products are fused multiply-adds (__fmaf_rn, kept under --fmad=false): half the
// instructions of a multiply and an add, and one rounding per term instead of two.
// Buffer reuse is safe: a block stores into a peer's buffer (t+1) % 2 only after all of x(t)
// arrived, and every block sends its part of x(t) after all its warps last read x(t-1) from
// that buffer. Summation: a lane sums its 64 columns in order, the warps' sums are added in
// warp order; the CPU sums in another order (rounding apart).

#define CLUSTER_X 1024           // padded columns: the largest N
#define CLUSTER_ROWS 64          // most rows per block: two per lane
#define CLUSTER_WARPS 16         // column slices per block
#define CLUSTER_SLICE 64         // columns per warp
#define CLUSTER_REG_COLS 40      // columns of a lane's two rows held in registers
#define CLUSTER_SMEM_QUADS ((CLUSTER_SLICE - CLUSTER_REG_COLS) / 4)

__device__ __forceinline__ unsigned int cluster_rank() {
    unsigned int rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
}

__device__ __forceinline__ unsigned int shared_address(const void* p) {
    return (unsigned int)__cvta_generic_to_shared(p);
}

// The address of this block's shared `address` in block `rank`'s shared memory.
__device__ __forceinline__ unsigned int peer_address(unsigned int address, unsigned int rank) {
    unsigned int theirs;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(theirs) : "r"(address), "r"(rank));
    return theirs;
}

// The next phase of `barrier` completes once `bytes` more bytes have arrived.
__device__ __forceinline__ void expect_bytes(unsigned int barrier, unsigned int bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 ::"r"(barrier), "r"(bytes) : "memory");
}

__device__ __forceinline__ void wait_phase(unsigned int barrier, unsigned int parity) {
    unsigned int done = 0;
    while (!done) {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(barrier), "r"(parity) : "memory");
    }
}

// Stores `v` at the peer's (16-byte aligned) shared address and counts 16 bytes on the peer's
// barrier.
__device__ __forceinline__ void store_to_peer(unsigned int address, float4 v, unsigned int barrier) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];"
                 ::"r"(address), "r"(__float_as_uint(v.x)), "r"(__float_as_uint(v.y)),
                   "r"(__float_as_uint(v.z)), "r"(__float_as_uint(v.w)), "r"(barrier) : "memory");
}

// Bytes of the x slice block `rank` sends: its rows, rounded up to 4 (16 bytes).
__device__ __forceinline__ unsigned int slice_bytes(int rank, int rows_per_block, int n) {
    int rows = max(0, min(rows_per_block, n - rank * rows_per_block));
    return 4u * (unsigned int)((rows + 3) & ~3);
}

__device__ __forceinline__ void cluster_sync_all() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;"
                 ::: "memory");
}

// w: dense row-major n x n; gridDim.x · rows_per_block >= n, rows_per_block <= 64 and a
// multiple of 4. Dynamic
// shared memory: CLUSTER_SHARED_FLOATS floats (two copies of x, the warps' partial sums and
// the shared-memory part of W).
#define CLUSTER_SHARED_FLOATS \
    (2 * CLUSTER_X + CLUSTER_WARPS * CLUSTER_ROWS + CLUSTER_WARPS * CLUSTER_SMEM_QUADS * 2 * 32 * 4)

extern "C" __global__ void __launch_bounds__(CLUSTER_WARPS * 32, 1)
esn_cluster(const float* __restrict__ w, const float* __restrict__ drive,
            const float* __restrict__ x0, float* __restrict__ states, int n, int steps,
            float leak, int activation, int rows_per_block) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) float shared[];
    __shared__ __align__(8) unsigned long long arrived[2];
    float* xs = shared;
    float* partial = xs + 2 * CLUSTER_X;
    float4* ws = (float4*)(partial + CLUSTER_WARPS * CLUSTER_ROWS);
    const int blocks = (int)gridDim.x;
    const int rank = (int)cluster_rank();
    const int tid = (int)threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int row0 = rank * rows_per_block;
    const int rows = max(0, min(rows_per_block, n - row0));
    const int col0 = warp * CLUSTER_SLICE;
    const bool active = col0 < n;  // warp-uniform: a warp past N only writes zero sums

    // This lane's two rows of this warp's columns: registers, then shared memory.
    float wr[2][CLUSTER_REG_COLS];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int r = lane + 32 * h;
        const float* row = w + (long long)(row0 + r) * n;
#pragma unroll
        for (int c = 0; c < CLUSTER_REG_COLS; ++c) {
            wr[h][c] = r < rows && col0 + c < n ? row[col0 + c] : 0.0f;
        }
        for (int q = 0; q < CLUSTER_SMEM_QUADS; ++q) {
            float v[4];
            for (int k = 0; k < 4; ++k) {
                const int col = col0 + CLUSTER_REG_COLS + 4 * q + k;
                v[k] = r < rows && col < n ? row[col] : 0.0f;
            }
            ws[((warp * CLUSTER_SMEM_QUADS + q) * 2 + h) * 32 + lane] = make_float4(v[0], v[1], v[2], v[3]);
        }
    }
    for (int j = tid; j < CLUSTER_X; j += blockDim.x) {
        xs[j] = j < n ? x0[j] : 0.0f;
        xs[CLUSTER_X + j] = 0.0f;
    }
    // Bytes a block receives per step: every other block's slice.
    unsigned int incoming = 0;
    for (int c = 0; c < blocks; ++c)
        if (c != rank) incoming += slice_bytes(c, rows_per_block, n);
    const unsigned int bar0 = shared_address(&arrived[0]), bar1 = shared_address(&arrived[1]);
    if (tid == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar0) : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar1) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        if (incoming > 0) {
            expect_bytes(bar1, incoming);  // x(1)
            expect_bytes(bar0, incoming);  // x(2)
        }
    }
    const bool owner = tid < rows;
    const int my_row = row0 + tid;
    float my_drive = owner && steps > 0 ? drive[my_row] : 0.0f;
    // Every block has its x(0) and armed barriers before any block sends.
    cluster_sync_all();
    for (int t = 0; t < steps; ++t) {
        const int cur = (t & 1) * CLUSTER_X, next = CLUSTER_X - cur;
        if (t > 0 && incoming > 0) {
            const unsigned int bar = (t & 1) ? bar1 : bar0;
            wait_phase(bar, (unsigned int)((t - 1) >> 1) & 1u);
            if (tid == 0) expect_bytes(bar, incoming);  // x(t + 2)
        }
        float sum0 = 0.0f, sum1 = 0.0f;
        if (active) {
            const float4* x4 = (const float4*)(xs + cur + col0);
#pragma unroll
            for (int q = 0; q < CLUSTER_REG_COLS / 4; ++q) {
                const float4 x = x4[q];
                sum0 = __fmaf_rn(wr[0][4 * q], x.x, sum0);
                sum0 = __fmaf_rn(wr[0][4 * q + 1], x.y, sum0);
                sum0 = __fmaf_rn(wr[0][4 * q + 2], x.z, sum0);
                sum0 = __fmaf_rn(wr[0][4 * q + 3], x.w, sum0);
                sum1 = __fmaf_rn(wr[1][4 * q], x.x, sum1);
                sum1 = __fmaf_rn(wr[1][4 * q + 1], x.y, sum1);
                sum1 = __fmaf_rn(wr[1][4 * q + 2], x.z, sum1);
                sum1 = __fmaf_rn(wr[1][4 * q + 3], x.w, sum1);
            }
            const float4* wq = ws + warp * CLUSTER_SMEM_QUADS * 64 + lane;
#pragma unroll
            for (int q = 0; q < CLUSTER_SMEM_QUADS; ++q) {
                const float4 x = x4[CLUSTER_REG_COLS / 4 + q];
                const float4 u = wq[q * 64], v = wq[q * 64 + 32];
                sum0 = __fmaf_rn(u.x, x.x, sum0);
                sum0 = __fmaf_rn(u.y, x.y, sum0);
                sum0 = __fmaf_rn(u.z, x.z, sum0);
                sum0 = __fmaf_rn(u.w, x.w, sum0);
                sum1 = __fmaf_rn(v.x, x.x, sum1);
                sum1 = __fmaf_rn(v.y, x.y, sum1);
                sum1 = __fmaf_rn(v.z, x.z, sum1);
                sum1 = __fmaf_rn(v.w, x.w, sum1);
            }
        }
        partial[warp * CLUSTER_ROWS + lane] = sum0;
        partial[warp * CLUSTER_ROWS + lane + 32] = sum1;
        __syncthreads();
        if (tid < CLUSTER_ROWS) {  // warps 0 and 1, whole warps for the shuffles
            float v = 0.0f;
            if (owner) {
                float acc = 0.0f;
#pragma unroll
                for (int k = 0; k < CLUSTER_WARPS; ++k) acc = acc + partial[k * CLUSTER_ROWS + tid];
                v = leaky(xs[cur + my_row], acc + my_drive, leak, activation);
                xs[next + my_row] = v;
                states[(long long)t * n + my_row] = v;
                if (t + 1 < steps) my_drive = drive[(long long)(t + 1) * n + my_row];
            }
            // Only x(1)..x(steps-1) travel: x(steps) is needed by no block.
            const float4 group = make_float4(v, __shfl_down_sync(0xffffffffu, v, 1),
                                             __shfl_down_sync(0xffffffffu, v, 2),
                                             __shfl_down_sync(0xffffffffu, v, 3));
            if (t + 1 < steps && (tid & 3) == 0 && tid < rows) {
                const unsigned int address = shared_address(xs + next + my_row);
                const unsigned int bar = (t & 1) ? bar0 : bar1;
                for (int p = 0; p < blocks; ++p) {
                    if (p != rank) store_to_peer(peer_address(address, p), group, peer_address(bar, p));
                }
            }
        }
        // x(t+1)'s own slice is visible to every warp, and the partial sums may be reused.
        __syncthreads();
    }
    // Every store into a block arrives before that block's last step, so no block's shared
    // memory is written after it exits; the cluster barrier keeps the exit orderly anyway.
    cluster_sync_all();
#endif
}
