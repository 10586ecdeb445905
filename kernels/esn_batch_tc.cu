// esn_batch_tc: many echo-state sequences through one reservoir on the tensor cores, a whole
// chunk of steps in one cooperative launch (compute capability 9.0, built for sm_90a).
//
// W (f16, zero-padded to npad x npad, npad a multiple of 256 and at most 1024) is split into
// RB = npad / 64 row blocks. The sequences go in tiles of G groups of 16. Block (tile, rb)
// holds W's rows [64 rb, 64 rb + 64) in registers, as mma.sync fragments, for the whole run.
// Its 8 consumer warps are 2 row groups (32 rows) x 4 k quarters (npad / 4 columns each); a
// warp multiplies its rows and quarter by a group's 16 states (f16) into f32 accumulators,
// and the 4 quarters' sums meet in shared memory, where each consumer thread updates 4 rows of
// one sequence:
//   x(t+1) = (1 - a) x(t) + a tanh(W x(t) + d(t)),
// the state kept in f32 in shared memory (and stored to `states` once the rows below are
// published, so that their flag does not wait for those stores). The new rows, in f16, are
// published: stored into the group's global panel for step t + 1 (one slice of 64 rows x
// 16 sequences per row block; 16-byte chunks XOR-swizzled by sequence so that ldmatrix's 8
// rows fall in distinct banks) and announced by a per-slice ready flag (release). A producer
// warp waits for the RB flags of a group's next step (acquire) and brings the whole panel
// (npad rows x 16 sequences) into the group's shared buffer by one bulk copy, counted on the
// group's transaction barrier; the consumers wait on that barrier, and read the panel with
// ldmatrix.
// With G > 1 a block alternates between its groups: while one group's rows travel, it
// multiplies the next group's panel, with the previous group's update between its k-tiles.
// With G = 1 the update and the publication come first, then the wait.
// Buffer reuse: a block overwrites group h's shared buffer (the panel of step t + 1) only
// after its consumers finished the products of step t; it stores step t + 1's rows into the
// global panel of parity (t + 1) % 2 only after every block published step t, hence after
// every block's bulk copy of step t - 1's panel (same parity) completed.
//
// The drive d(t) of sequence j: `drive[(t batch + j) n + i]` (the many-sequence step), or,
// when `radius` is not null (a sweep's lanes, which share W, W_in and b and differ in
// spectral radius rho_j, input scaling s_j and leak a_j):
//   pre = rho_j (W x)_j + b_i + s_j v_t[i] (+ noise_t[i]),   v_t = drive[t n + i],
// in the order of sweep_lane_step (lanes.cu). The block's sequences are [seq0, seq0 + tiles
// G 16); those past `batch` are padding: zero states, never stored.
// Summation: each warp's mma chain over its k quarter in tensor-core order, then the four
// quarters in order; the CPU reference rounds W and x(t) to f16 and sums in f32 in its own
// order (rounding apart).
#include "common.cuh"
#include "cluster.cuh"

#define TC_SEQS 16                      // sequences in a group (the mma's n = 2 x 8)
#define TC_NT (TC_SEQS / 8)             // n-tiles of a group
#define TC_ROWS 64                      // rows of a block
#define TC_KTILES 16                    // most k-tiles (16 columns) of a quarter: npad <= 1024
#define TC_SLICE_BYTES (TC_SEQS * TC_ROWS * 2)
#define TC_STATE_FLOATS (TC_SEQS * TC_ROWS)
#define TC_RED_STRIDE 36                // padded row count of a warp's partial sums
#define TC_RED_FLOATS (2 * 4 * TC_SEQS * TC_RED_STRIDE)
#define TC_ROWS_PER_THREAD 4
#define TC_CONSUMERS 256
#define TC_THREADS (TC_CONSUMERS + 128)

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned pack_halves(float lo, float hi) {
    return (unsigned)to_half(lo) | ((unsigned)to_half(hi) << 16);
}
// Element offset (f16) of row k (0..63) of sequence j in a slice: 128 bytes per sequence, its
// 16-byte chunks XOR-swizzled by j.
__device__ __forceinline__ int slice_at(int j, int k) {
    return j * TC_ROWS + (((k >> 3) ^ (j & 7)) << 3) + (k & 7);
}
// Dynamic shared memory of G groups of RB row blocks (ops/tensor_core.rs computes it):
// G RB TC_SLICE_BYTES (panels) + G TC_STATE_FLOATS 4 (states) + TC_RED_FLOATS 4 (partial sums)
// + 8 G (transaction barriers).

template <int G>
__device__ __forceinline__ void batch_tc(
    const unsigned short* __restrict__ w16, int npad, const float* __restrict__ drive,
    const float* __restrict__ bias, const float* __restrict__ noise,
    const float* __restrict__ radius, const float* __restrict__ scaling,
    const float* __restrict__ leaks, float leak, const float* __restrict__ x0,
    float* __restrict__ states, unsigned short* panel, unsigned* flags, int n, int batch,
    int seq0, int steps) {
    // Units (a group's step) whose panels are in flight: at most G, so that a unit's panel
    // never waits for a buffer this block has not released yet.
    constexpr int DEPTH = G < 3 ? G : 3;
    extern __shared__ __align__(128) unsigned char sm[];
    const int RB = npad / TC_ROWS;
    unsigned short* bufs = (unsigned short*)sm;                        // [G][RB][16 x 64]
    float* xs = (float*)(sm + G * RB * TC_SLICE_BYTES);                // [G][16][64]
    float* red = xs + G * TC_STATE_FLOATS;                             // [2][4][16][36]
    unsigned long long* bars = (unsigned long long*)(red + TC_RED_FLOATS);
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int rb = blockIdx.x % RB, tile = blockIdx.x / RB, tiles = gridDim.x / RB;
    const unsigned full0 = shared_address(bars);
    if (tid == 0) {
        for (int h = 0; h < G; ++h)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(full0 + 8 * h) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    // The update's thread: sequence uj of a group, rows ui0 .. ui0 + 3 of the block.
    const int uj = tid / (TC_ROWS / TC_ROWS_PER_THREAD);
    const int ui0 = (tid % (TC_ROWS / TC_ROWS_PER_THREAD)) * TC_ROWS_PER_THREAD;
    const size_t group_panel = (size_t)RB * TC_STATE_FLOATS;
    const size_t parity_panel = (size_t)tiles * G * group_panel;
    if (tid < TC_CONSUMERS) {
        for (int h = 0; h < G; ++h) {
            const int seq = seq0 + (tile * G + h) * TC_SEQS + uj;
            float v[TC_ROWS_PER_THREAD];
#pragma unroll
            for (int i = 0; i < TC_ROWS_PER_THREAD; ++i) {
                const int row = rb * TC_ROWS + ui0 + i;
                v[i] = row < n && seq < batch ? x0[(size_t)seq * n + row] : 0.0f;
                xs[h * TC_STATE_FLOATS + uj * TC_ROWS + ui0 + i] = v[i];
            }
            unsigned short* dst = panel + (size_t)(tile * G + h) * group_panel +
                                  (size_t)rb * TC_STATE_FLOATS + slice_at(uj, ui0);
            *(uint2*)dst = make_uint2(pack_halves(v[0], v[1]), pack_halves(v[2], v[3]));
        }
        asm volatile("fence.proxy.async.global;" ::: "memory");
    }
    __syncthreads();
    if (tid == 0)
        for (int h = 0; h < G; ++h) st_release(flags + (tile * G + h) * RB + rb, 1);
    const int units = steps * G;
    if (warp >= 8) {
        // The producer warp; the other three extra warps only give their registers away.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (warp != 8) return;
        auto issue = [&](int w) {
            const int t = w / G, h = w % G;
            if (lane < RB) {
                const unsigned* f = flags + (tile * G + h) * RB + lane;
                while (ld_acquire(f) < (unsigned)(t + 1)) {
                }
            }
            __syncwarp();
            if (lane == 0) {
                asm volatile("fence.proxy.async.global;" ::: "memory");
                const unsigned bar = full0 + 8 * h;
                expect_bytes(bar, RB * TC_SLICE_BYTES);
                const unsigned short* src = panel + (size_t)(t & 1) * parity_panel + (size_t)(tile * G + h) * group_panel;
                asm volatile(
                    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                    ::"r"(shared_address(bufs + (size_t)h * RB * TC_STATE_FLOATS)), "l"(src),
                      "r"(RB * TC_SLICE_BYTES), "r"(bar) : "memory");
            }
            __syncwarp();
        };
        for (int w = 0; w < DEPTH && w < units; ++w) issue(w);
        for (int u = 0; u < units; ++u) {
            // After the consumers published unit u.
            asm volatile("bar.sync 2, 288;" ::: "memory");
            const int t = u / G, h = u % G;
            if (lane == 0 && t + 1 < steps) st_release(flags + (tile * G + h) * RB + rb, t + 2);
            if (u + DEPTH < units) issue(u + DEPTH);
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int rg = warp >> 2, ks = warp & 3, g = lane >> 2, q = lane & 3;
    const int kq = RB / 4;             // row blocks of a k quarter
    const int ktiles = 4 * kq;         // k-tiles of a quarter
    unsigned a[2][TC_KTILES][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int kk = 0; kk < TC_KTILES; ++kk) {
            const int row = rb * TC_ROWS + rg * 32 + mt * 16 + g;
            const int k = ks * (npad / 4) + kk * 16 + 2 * q;
            const bool in = kk < ktiles;
            const unsigned short* p = w16 + (size_t)row * npad + k;
            a[mt][kk][0] = in ? *(const unsigned*)p : 0u;
            a[mt][kk][1] = in ? *(const unsigned*)(p + 8 * (size_t)npad) : 0u;
            a[mt][kk][2] = in ? *(const unsigned*)(p + 8) : 0u;
            a[mt][kk][3] = in ? *(const unsigned*)(p + 8 * (size_t)npad + 8) : 0u;
        }
    __syncwarp();
    // The products of unit w's panel into acc (zeroed first), `between(i)` after each k
    // quarter's fourth k-tile; `zero` (0) ties the shared loads to the wait for the panel, so
    // they are not moved above it.
    auto products = [&](int w, unsigned zero, float (&acc)[2][TC_NT][4], auto&& between) {
        const int h = w % G;
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
            for (int nt = 0; nt < TC_NT; ++nt) acc[mt][nt][0] = acc[mt][nt][1] = acc[mt][nt][2] = acc[mt][nt][3] = 0.0f;
        const unsigned base = shared_address(bufs + (size_t)h * RB * TC_STATE_FLOATS) + zero;
#pragma unroll
        for (int kk = 0; kk < TC_KTILES; ++kk) {
            if (kk < ktiles) {
                const int r = ks * kq + kk / 4;
                unsigned b[TC_NT / 2][4];
#pragma unroll
                for (int p = 0; p < TC_NT / 2; ++p) {
                    const int seq = (2 * p + (lane >> 4)) * 8 + (lane & 7);
                    const int chunk = (kk & 3) * 2 + ((lane >> 3) & 1);
                    const unsigned addr = base + 2 * (r * TC_STATE_FLOATS + seq * TC_ROWS + ((chunk ^ (seq & 7)) << 3));
                    asm("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                                 : "=r"(b[p][0]), "=r"(b[p][1]), "=r"(b[p][2]), "=r"(b[p][3]) : "r"(addr));
                }
#pragma unroll
                for (int p = 0; p < TC_NT / 2; ++p)
#pragma unroll
                    for (int mt = 0; mt < 2; ++mt) {
                        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                            : "+f"(acc[mt][2 * p][0]), "+f"(acc[mt][2 * p][1]), "+f"(acc[mt][2 * p][2]), "+f"(acc[mt][2 * p][3])
                            : "r"(a[mt][kk][0]), "r"(a[mt][kk][1]), "r"(a[mt][kk][2]), "r"(a[mt][kk][3]), "r"(b[p][0]), "r"(b[p][1]));
                        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                            : "+f"(acc[mt][2 * p + 1][0]), "+f"(acc[mt][2 * p + 1][1]), "+f"(acc[mt][2 * p + 1][2]), "+f"(acc[mt][2 * p + 1][3])
                            : "r"(a[mt][kk][0]), "r"(a[mt][kk][1]), "r"(a[mt][kk][2]), "r"(a[mt][kk][3]), "r"(b[p][2]), "r"(b[p][3]));
                    }
            }
            if ((kk & 3) == 3) between(kk >> 2);
        }
    };
    auto wait_panel = [&](int w) -> unsigned {
        wait_phase(full0 + 8 * (w % G), (w / G) & 1);
        unsigned zero;
        asm volatile("mov.u32 %0, 0;" : "=r"(zero));
        return zero;
    };
    const bool lanes = radius != nullptr;
    float acc[2][TC_NT][4];
    products(0, wait_panel(0), acc, [](int) {});
    const int urg = ui0 / 32, ii = ui0 % 32;
    for (int u = 0; u < units; ++u) {
        const int t = u / G, h = u % G;
        const int seq = seq0 + (tile * G + h) * TC_SEQS + uj;
        const bool real = seq < batch;
        // This thread's part of the drive: d (the many-sequence step) or v_t, b and noise
        // (lanes), read before the barrier so that the loads overlap it.
        float d[TC_ROWS_PER_THREAD], extra[TC_ROWS_PER_THREAD];
#pragma unroll
        for (int i = 0; i < TC_ROWS_PER_THREAD; ++i) {
            const int row = rb * TC_ROWS + ui0 + i;
            const bool in = row < n && real;
            if (lanes) {
                d[i] = in ? __ldg(drive + (size_t)t * n + row) : 0.0f;
                extra[i] = in && noise != nullptr ? __ldg(noise + (size_t)t * n + row) : 0.0f;
            } else {
                d[i] = in ? __ldg(drive + ((size_t)t * batch + seq) * n + row) : 0.0f;
                extra[i] = 0.0f;
            }
        }
        float* mine = red + ((rg * 4 + ks) * TC_SEQS) * TC_RED_STRIDE;
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
            for (int nt = 0; nt < TC_NT; ++nt) {
                const int i = mt * 16 + g, j = nt * 8 + 2 * q;
                mine[j * TC_RED_STRIDE + i] = acc[mt][nt][0];
                mine[(j + 1) * TC_RED_STRIDE + i] = acc[mt][nt][1];
                mine[j * TC_RED_STRIDE + i + 8] = acc[mt][nt][2];
                mine[(j + 1) * TC_RED_STRIDE + i + 8] = acc[mt][nt][3];
            }
        asm volatile("bar.sync 1, 256;" ::: "memory");
        float v[TC_ROWS_PER_THREAD];
        // The four quarters' sums and the state of this thread's rows, read at the first row
        // as 16-byte loads (8 threads read 128 consecutive bytes: no bank conflict).
        float part[4][TC_ROWS_PER_THREAD], x[TC_ROWS_PER_THREAD];
        float* xrow = xs + h * TC_STATE_FLOATS + uj * TC_ROWS + ui0;
        auto update = [&](int i) {
            if (i == 0) {
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    const float4 q4 = *(const float4*)(red + ((urg * 4 + k) * TC_SEQS + uj) * TC_RED_STRIDE + ii);
                    part[k][0] = q4.x; part[k][1] = q4.y; part[k][2] = q4.z; part[k][3] = q4.w;
                }
                const float4 x4 = *(const float4*)xrow;
                x[0] = x4.x; x[1] = x4.y; x[2] = x4.z; x[3] = x4.w;
            }
            float product = 0.0f;
#pragma unroll
            for (int k = 0; k < 4; ++k) product = product + part[k][i];
            const int row = rb * TC_ROWS + ui0 + i;
            float pre, rate;
            if (lanes) {
                const int lane_index = real ? seq : 0;
                pre = radius[lane_index] * product + (row < n ? bias[row] : 0.0f);
                pre = pre + scaling[lane_index] * d[i];
                if (noise != nullptr) pre = pre + extra[i];
                rate = leaks[lane_index];
            } else {
                pre = product + d[i];
                rate = leak;
            }
            v[i] = row < n && real ? leaky(x[i], pre, rate, ACTIVATION_TANH) : 0.0f;
            if (i == TC_ROWS_PER_THREAD - 1) *(float4*)xrow = make_float4(v[0], v[1], v[2], v[3]);
        };
        auto publish = [&]() {
            if (t + 1 < steps) {
                unsigned short* dst = panel + (size_t)((t + 1) & 1) * parity_panel + (size_t)(tile * G + h) * group_panel +
                                      (size_t)rb * TC_STATE_FLOATS + slice_at(uj, ui0);
                *(uint2*)dst = make_uint2(pack_halves(v[0], v[1]), pack_halves(v[2], v[3]));
                asm volatile("fence.proxy.async.global;" ::: "memory");
            }
            asm volatile("bar.arrive 2, 288;" ::: "memory");
            // The states go out after the publication: the slice's flag need not wait for them.
#pragma unroll
            for (int i = 0; i < TC_ROWS_PER_THREAD; ++i) {
                const int row = rb * TC_ROWS + ui0 + i;
                if (row < n && real) states[((size_t)t * batch + seq) * n + row] = v[i];
            }
            asm volatile("bar.sync 1, 256;" ::: "memory");
        };
        if constexpr (G == 1) {
            // One group: its next panel needs the rows this update makes.
#pragma unroll
            for (int i = 0; i < TC_ROWS_PER_THREAD; ++i) update(i);
            publish();
            if (u + 1 < units) products(u + 1, wait_panel(u + 1), acc, [](int) {});
        } else {
            // The next unit's products, with this unit's update between their k quarters.
            const unsigned zero = u + 1 < units ? wait_panel(u + 1) : 0u;
            products(u + 1 < units ? u + 1 : u, zero, acc, update);
            publish();
        }
    }
}

// One entry point per group count; the arguments are batch_tc's.
extern "C" __global__ void __launch_bounds__(TC_THREADS, 1) esn_batch_tc_1(
    const unsigned short* __restrict__ w16, int npad, const float* __restrict__ drive,
    const float* __restrict__ bias, const float* __restrict__ noise, const float* __restrict__ radius,
    const float* __restrict__ scaling, const float* __restrict__ leaks, float leak,
    const float* __restrict__ x0, float* __restrict__ states, unsigned short* panel, unsigned* flags,
    int n, int batch, int seq0, int steps) {
    batch_tc<1>(w16, npad, drive, bias, noise, radius, scaling, leaks, leak, x0, states, panel, flags, n, batch, seq0, steps);
}
extern "C" __global__ void __launch_bounds__(TC_THREADS, 1) esn_batch_tc_2(
    const unsigned short* __restrict__ w16, int npad, const float* __restrict__ drive,
    const float* __restrict__ bias, const float* __restrict__ noise, const float* __restrict__ radius,
    const float* __restrict__ scaling, const float* __restrict__ leaks, float leak,
    const float* __restrict__ x0, float* __restrict__ states, unsigned short* panel, unsigned* flags,
    int n, int batch, int seq0, int steps) {
    batch_tc<2>(w16, npad, drive, bias, noise, radius, scaling, leaks, leak, x0, states, panel, flags, n, batch, seq0, steps);
}
extern "C" __global__ void __launch_bounds__(TC_THREADS, 1) esn_batch_tc_4(
    const unsigned short* __restrict__ w16, int npad, const float* __restrict__ drive,
    const float* __restrict__ bias, const float* __restrict__ noise, const float* __restrict__ radius,
    const float* __restrict__ scaling, const float* __restrict__ leaks, float leak,
    const float* __restrict__ x0, float* __restrict__ states, unsigned short* panel, unsigned* flags,
    int n, int batch, int seq0, int steps) {
    batch_tc<4>(w16, npad, drive, bias, noise, radius, scaling, leaks, leak, x0, states, panel, flags, n, batch, seq0, steps);
}
