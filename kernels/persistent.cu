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

// The same run for a dense row-major W (n x n, n a multiple of 4) read from global memory
// every step with float4 loads: for W larger than the chips' shared memory. The step is bound
// by HBM bandwidth, so each lane keeps eight independent 16-byte loads in flight (a block of
// 1024 threads has 128 KB of W in flight per SM).
extern "C" __global__ void __launch_bounds__(1024, 1)
esn_persistent_dense(const float* __restrict__ w, const float* __restrict__ drive,
                     const float* __restrict__ x0, float* __restrict__ states, int n,
                     int steps, float leak, int activation, unsigned long long* barrier) {
    extern __shared__ float xs[];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    int global_warp = blockIdx.x * warps + warp, total_warps = gridDim.x * warps;
    const float4* xs4 = (const float4*)xs;
    const int n4 = n / 4;
    for (int t = 0; t < steps; ++t) {
        const float* x = t == 0 ? x0 : states + (long long)(t - 1) * n;
        copy_x(xs, x, n);
        __syncthreads();
        for (int r = global_warp; r < n; r += total_warps) {
            const float4* row = (const float4*)(w + (long long)r * n);
            float acc = 0.0f;
            int q = lane;
            for (; q + 32 * 7 < n4; q += 32 * 8) {
                float4 a[8];
#pragma unroll
                for (int u = 0; u < 8; ++u) a[u] = __ldg(row + q + 32 * u);
#pragma unroll
                for (int u = 0; u < 8; ++u) {
                    float4 b = xs4[q + 32 * u];
                    acc = acc + a[u].x * b.x;
                    acc = acc + a[u].y * b.y;
                    acc = acc + a[u].z * b.z;
                    acc = acc + a[u].w * b.w;
                }
            }
            for (; q < n4; q += 32) {
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
        grid_barrier(barrier, (unsigned long long)(t + 1) * gridDim.x);
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

// ---------------------------------------------------------------------------------------------
// esn_cluster: the whole run in one thread-block cluster (sm_90+, N <= 1024). The C blocks of
// the cluster (C = gridDim.x, one cluster) hold all of W on chip: in every block each of the
// 32 warps keeps one row in registers (lane l holds columns l, l + 32, ...) and, when the block
// has more than 32 rows, a second row in shared memory. Every block keeps the whole x(t) in
// shared memory, twice (x(t) is read while x(t+1) arrives). Block c owns rows
// [c·R, c·R + R) (R a multiple of 4): its warps write their new values into its own copy of
// x(t+1), then one bulk copy per peer (cp.async.bulk, distributed shared memory) sends that
// slice to the peer and counts its bytes on the peer's transaction barrier (mbarrier) for the
// buffer. A block's warps wait until every peer's slice of x(t+1) has arrived. No cluster-wide
// barrier and no memory fence per step, so the states written to global memory never stall.
// A block that receives nothing (a cluster of one) skips the barriers: its __syncthreads
// publishes x(t+1), and a phase expecting zero bytes would complete on arrival, before a slow
// warp had seen the previous one.
// Buffer reuse is safe without more synchronisation: a block sends into buffer (t+1) % 2 only
// after all of x(t) arrived, and every block computed its part of x(t) after its last read of
// that buffer. Summation: a lane sums its 32 columns in order, then the butterfly of warp_sum.

#define CLUSTER_X 1024

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

__device__ __forceinline__ void cluster_sync_all() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;"
                 ::: "memory");
}

// Bytes of the x slice block `rank` sends: its rows, rounded up to 4 (16 bytes).
__device__ __forceinline__ unsigned int slice_bytes(int rank, int rows_per_block, int n) {
    int rows = max(0, min(rows_per_block, n - rank * rows_per_block));
    return 4u * (unsigned int)((rows + 3) & ~3);
}

// w: dense row-major n x n. rows_per_block is a multiple of 4, <= 32 (registers only) or
// <= 64 with shared_rows. Dynamic shared memory: 2 * CLUSTER_X floats, plus 32 * CLUSTER_X
// floats when shared_rows.
extern "C" __global__ void __launch_bounds__(1024, 1)
esn_cluster(const float* __restrict__ w, const float* __restrict__ drive,
            const float* __restrict__ x0, float* __restrict__ states, int n, int steps,
            float leak, int activation, int rows_per_block, int shared_rows) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) float shared[];
    __shared__ __align__(8) unsigned long long arrived[2];
    float* xs = shared;
    const int blocks = (int)gridDim.x;
    const int rank = (int)cluster_rank();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int row0 = rank * rows_per_block;
    const int row1 = min(n, row0 + rows_per_block);
    const int reg_row = row0 + warp, smem_row = row0 + 32 + warp;
    const bool has_reg = reg_row < row1;
    const bool has_smem = shared_rows != 0 && smem_row < row1;
    float wr[32];
#pragma unroll
    for (int k = 0; k < 32; ++k) {
        int j = lane + 32 * k;
        wr[k] = has_reg && j < n ? w[(long long)reg_row * n + j] : 0.0f;
    }
    float* wrow = shared + 2 * CLUSTER_X + warp * CLUSTER_X;
    if (shared_rows) {
        for (int j = lane; j < CLUSTER_X; j += 32)
            wrow[j] = has_smem && j < n ? w[(long long)smem_row * n + j] : 0.0f;
    }
    for (int j = threadIdx.x; j < CLUSTER_X; j += blockDim.x) {
        xs[j] = j < n ? x0[j] : 0.0f;
        xs[CLUSTER_X + j] = 0.0f;
    }
    // Bytes a block receives per step: every other block's slice.
    unsigned int incoming = 0;
    for (int c = 0; c < blocks; ++c)
        if (c != rank) incoming += slice_bytes(c, rows_per_block, n);
    const unsigned int bar0 = shared_address(&arrived[0]), bar1 = shared_address(&arrived[1]);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar0) : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar1) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        expect_bytes(bar1, incoming);  // x(1)
        expect_bytes(bar0, incoming);  // x(2)
    }
    // Thread p < blocks (p != rank) sends this block's slice to block p.
    const bool sender = (int)threadIdx.x < blocks && (int)threadIdx.x != rank;
    const unsigned int target = sender ? threadIdx.x : (unsigned int)rank;
    const unsigned int my_slice = shared_address(xs + row0);
    const unsigned int peer_slice = peer_address(my_slice, target);
    const unsigned int peer_bar0 = peer_address(bar0, target);
    const unsigned int peer_bar1 = peer_address(bar1, target);
    const unsigned int my_bytes = slice_bytes(rank, rows_per_block, n);
    // Every block has its x(0) and armed barriers before any block sends.
    cluster_sync_all();
    float drive_reg = has_reg ? drive[reg_row] : 0.0f;
    float drive_smem = has_smem ? drive[smem_row] : 0.0f;
    for (int t = 0; t < steps; ++t) {
        const int cur = (t & 1) * CLUSTER_X, next = CLUSTER_X - cur;
        if (t > 0 && incoming > 0) {
            const unsigned int bar = (t & 1) ? bar1 : bar0;
            wait_phase(bar, (unsigned int)((t - 1) >> 1) & 1u);
            if (threadIdx.x == 0) expect_bytes(bar, incoming);  // x(t + 2)
        }
        const float* x = xs + cur;
        float acc_reg = 0.0f, acc_smem = 0.0f;
#pragma unroll
        for (int k = 0; k < 32; ++k) {
            float xv = x[lane + 32 * k];
            acc_reg = acc_reg + wr[k] * xv;
            if (shared_rows) acc_smem = acc_smem + wrow[lane + 32 * k] * xv;
        }
        acc_reg = warp_sum(acc_reg);
        if (has_reg && lane == 0) {
            float v = leaky(x[reg_row], acc_reg + drive_reg, leak, activation);
            xs[next + reg_row] = v;
            states[(long long)t * n + reg_row] = v;
        }
        if (shared_rows) {
            acc_smem = warp_sum(acc_smem);
            if (has_smem && lane == 0) {
                float v = leaky(x[smem_row], acc_smem + drive_smem, leak, activation);
                xs[next + smem_row] = v;
                states[(long long)t * n + smem_row] = v;
            }
        }
        if (t + 1 < steps) {
            if (has_reg) drive_reg = drive[(long long)(t + 1) * n + reg_row];
            if (has_smem) drive_smem = drive[(long long)(t + 1) * n + smem_row];
        }
        // The block's slice of x(t+1) is complete and visible to the bulk copies.
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        if (sender && my_bytes > 0) {
            const unsigned int offset = 4u * (unsigned int)next;
            asm volatile(
                "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes "
                "[%0], [%1], %2, [%3];"
                ::"r"(peer_slice + offset), "r"(my_slice + offset), "r"(my_bytes),
                  "r"((t & 1) ? peer_bar0 : peer_bar1)
                : "memory");
        }
    }
    // x(steps) is still in flight between the blocks: no block leaves (and frees the shared
    // memory a copy reads or writes) before every block has received all of it.
    if (steps > 0 && incoming > 0) {
        wait_phase((steps & 1) ? bar1 : bar0, (unsigned int)((steps - 1) >> 1) & 1u);
    }
    cluster_sync_all();
#endif
}
