// Echo-state kernels of one step at a time: the input drive of a whole chunk, the step as two
// launches (the seed's matvec_reservoir_kernel + leaky_integration_kernel) or one
// (esn_step_fused), and the elementwise update after a cuBLAS product (the batched step).
// The update is x(t+1) = (1 - a) x(t) + a f(W_in u(t) + W x(t) + b + noise(t)).
#include "common.cuh"

// drive[t, i] = b[i] + sum_c W_in[i, c] v[t, c] (+ noise[t, i]) for all T steps at once:
// the input projection does not depend on the state, so it leaves the sequential loop.
// One thread per (t, i). Row t of the inputs v is u[t, 0..k_u] followed by
// beside[t, 0..k_beside] (a deep layer's states below, then the stack's input), both read in
// place so they are never joined in a buffer; the sum runs over v's columns in order, as it
// would over the joined rows. u is T x k_u, beside T x k_beside (null when k_beside is 0),
// w_in N x (k_u + k_beside), drive and noise T x N (row-major).
extern "C" __global__ void matvec_input_kernel(const float* __restrict__ u,
                                               const float* __restrict__ beside, // may be null
                                               const float* __restrict__ w_in,
                                               const float* __restrict__ bias,
                                               const float* __restrict__ noise, // may be null
                                               float* __restrict__ drive,
                                               int steps, int n, int k_u, int k_beside) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)steps * n) return;
    int t = (int)(idx / n);
    int i = (int)(idx % n);
    long long k = (long long)k_u + k_beside;
    const float* row = w_in + (long long)i * k;
    float acc = bias[i];
    for (int c = 0; c < k_u; ++c) {
        acc = acc + row[c] * u[(long long)t * k_u + c];
    }
    for (int c = 0; c < k_beside; ++c) {
        acc = acc + row[k_u + c] * beside[(long long)t * k_beside + c];
    }
    if (noise != nullptr) acc = acc + noise[idx];
    drive[idx] = acc;
}

// pre[i] = sum_j W[i, j] x[j] + drive[i] for a CSR matrix W: one warp per row.
extern "C" __global__ void matvec_reservoir_kernel(const int* __restrict__ row_ptr,
                                                   const int* __restrict__ col_idx,
                                                   const float* __restrict__ values,
                                                   const float* __restrict__ x,
                                                   const float* __restrict__ drive,
                                                   float* __restrict__ pre, int n) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (warp >= n) return;
    float acc = warp_row_dot(values, col_idx, row_ptr[warp], row_ptr[warp + 1], x, lane);
    if (lane == 0) pre[warp] = acc + drive[warp];
}

// x_next[i] = (1 - a) x[i] + a f(pre[i]). x_next may alias nothing else; the caller keeps x
// (the previous state) intact.
extern "C" __global__ void leaky_integration_kernel(const float* __restrict__ x,
                                                    const float* __restrict__ pre,
                                                    float* __restrict__ x_next, float leak,
                                                    int activation, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    x_next[i] = leaky(x[i], pre[i], leak, activation);
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
    float acc = warp_row_dot(values, col_idx, row_ptr[r], row_ptr[r + 1], x, lane);
    if (lane == 0) x_next[r] = leaky(x[r], acc + drive_t[r], leak, activation);
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

// The readout features of a batch of sequences, summed over one time chunk of their states
// where the states are (reservoir_core::features::SequenceFeatures, the CPU reference; the
// host divides the sums by their row counts). states holds steps x B x N values: sequence j
// at step first + t is at (t B + j) N. rows holds a [start, end) pair per (j, s), j major:
// the rows summary s of sequence j covers (SequenceFeatures::rows, end <= the sequence's
// length, so its padding is never counted). For each (j, s, i) one thread adds
// states[t][j][i] to sums[(j S + s) N + i] over the rows t of its pair inside
// first..first + steps, in increasing t: every sum is taken in the same order, chunk after
// chunk, so the features are the same run to run. i varies fastest across threads, so the
// reads of a row are coalesced.
extern "C" __global__ void sequence_features_add(const float* __restrict__ states,
                                                 const int* __restrict__ rows,
                                                 float* __restrict__ sums, int first, int steps,
                                                 int batch, int summaries, int n) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)batch * summaries * n) return;
    long long pair = idx / n; // j * summaries + s
    int i = (int)(idx % n);
    int j = (int)(pair / summaries);
    int lo = max(rows[2 * pair], first);
    int hi = min(rows[2 * pair + 1], first + steps);
    if (lo >= hi) return;
    float acc = sums[idx];
    for (int t = lo; t < hi; ++t) {
        acc = acc + states[((long long)(t - first) * batch + j) * n + i];
    }
    sums[idx] = acc;
}
