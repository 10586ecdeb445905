// esn_cluster: a whole single-sequence run in one thread-block cluster (sm_90+, N <= 1024).
// The C blocks of the cluster (C = gridDim.x, one cluster) hold all of W on chip. Block c owns
// the rows [c·R, c·R + R), R = rows_per_block <= 64 and a multiple of 4; lane l of every warp
// owns the block's rows l and l + 32, and warp w the columns [64w, 64w + 64). So a lane
// multiplies 2 rows by 64 columns:
// the first CLUSTER_REG_COLS columns of both rows from registers, the rest from shared memory
// (16-byte loads, consecutive across the warp), while the 64 values of x a warp needs are
// read once per step as broadcasts. Reading x per row instead (a warp per row) costs as many
// shared-memory bytes as W itself; this split reads ~1/3 of W and almost none of x.
// The 16 warps' partial sums meet in shared memory; the row owners (threads 0..R-1) add them
// in warp order, apply the leaky update and store x(t+1)[r] into their own x buffer; every
// fourth owner then stores its group of 4 rows (16 bytes) into every peer's x buffer by
// st.async, each store counting its bytes on the peer's transaction barrier (mbarrier) for
// that buffer. A block sends its rows rounded up to 4 (zeros past N, where W's columns are
// zero too). A block waits until every peer's slice has arrived: no cluster-wide barrier and
// no fence per step. Every block keeps the whole x(t) in shared
// memory, twice (x(t) is read while x(t+1) arrives).
// The products are fused multiply-adds (__fmaf_rn, kept under --fmad=false): half the
// instructions of a multiply and an add, and one rounding per term instead of two.
// Buffer reuse is safe: a block stores into a peer's buffer (t+1) % 2 only after all of x(t)
// arrived, and every block sends its part of x(t) after all its warps last read x(t-1) from
// that buffer. Summation: a lane sums its 64 columns in order, the warps' sums are added in
// warp order; the CPU sums in another order (rounding apart).
#include "common.cuh"
#include "cluster.cuh"

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


// w: dense row-major n x n; gridDim.x · rows_per_block >= n, rows_per_block <= 64 and a
// multiple of 4. Dynamic shared memory: CLUSTER_SHARED_FLOATS floats (two copies of x, the warps' partial sums and
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
