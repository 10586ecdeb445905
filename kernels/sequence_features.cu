// Sequence features that need more than sums of raw states, on the device (CPU reference:
// reservoir_core::features::SequenceFeatures::write, its Projection::apply and the model space
// of features/model_space.rs). A batch's states, chunk after chunk, are projected (cuBLAS) and
// centred here, gathered per sequence in f64, and each sequence's ridge model of its state
// dynamics is solved from its Grams (cuBLAS) by one thread block.

// Largest summarized width d the model-space solve takes: its means live in shared memory.
#define MODEL_SPACE_MAX_WIDTH 128
// Threads of a model_space_solve block.
#define MODEL_SPACE_THREADS 256

// values[c·d + i] -= shift[i] for every column c < columns: a chunk's projected states (d × columns,
// column-major) centred on the training mean's projection.
extern "C" __global__ void features_centre(float* __restrict__ values,
                                           const float* __restrict__ shift, long long columns,
                                           int d) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= columns * d) return;
    values[idx] -= shift[(int)(idx % d)];
}

// Adds one time chunk of summarized states (steps × batch × width: sequence j at step first + t at
// (t·batch + j)·width) into rows offset..offset + width of each sequence's d-wide states in f64
// (sequence j's step r at (j·longest + r)·d). Steps at or past a sequence's length (padding) are
// left as they are (zero), and so is every step at or past `longest`.
extern "C" __global__ void features_gather(const float* __restrict__ chunk,
                                           const int* __restrict__ lengths,
                                           double* __restrict__ summarized, int first, int steps,
                                           int batch, int width, int longest, int d, int offset) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long per_step = (long long)batch * width;
    if (idx >= (long long)steps * per_step) return;
    int t = (int)(idx / per_step);
    long long rest = idx - (long long)t * per_step;
    int j = (int)(rest / width);
    int c = (int)(rest % width);
    int row = first + t;
    if (row >= lengths[j] || row >= longest) return;
    summarized[((long long)j * longest + row) * d + offset + c] += (double)chunk[idx];
}

// The model space of sequence j = blockIdx.x (CPU reference: features/model_space.rs): the ridge
// model predicting each of its states after the warm-up from the one before. Its states
// (longest × d, zero past its length) are at states + j·longest·d. gram holds Σ x_t x_tᵀ over
// t = warmup..longest (the padding adds nothing) and cross Σ x_t x_{t+1}ᵀ over t = warmup..longest−1,
// d × d column-major at j·d² each; both are overwritten. With R = length − warmup − 1 pairs, the
// inputs x̄ (rows warmup..length−2) and the targets ȳ (rows warmup+1..length−1):
//   A = gram − x_last x_lastᵀ − R·x̄x̄ᵀ + ridge·I   (the centred inputs' Gram)
//   B = cross − R·x̄ȳᵀ                            (the centred inputs × targets)
//   W = A⁻¹B by Cholesky (A = LLᵀ), bias = ȳ − x̄W,
// written to out + j·(d² + d): W row-major (input state × next state), then the bias. status[j]:
// 0, 1 for a pivot that is not positive (taken as 1), 2 for one that is not a number, 3 for a
// length the states cannot hold (nothing written).
extern "C" __global__ void __launch_bounds__(MODEL_SPACE_THREADS)
    model_space_solve(const double* __restrict__ states, double* gram, double* cross,
                      const int* __restrict__ lengths, int longest, int warmup, int d,
                      double ridge, double* __restrict__ out, int* __restrict__ status) {
    __shared__ double x_mean[MODEL_SPACE_MAX_WIDTH];
    __shared__ double y_mean[MODEL_SPACE_MAX_WIDTH];
    __shared__ int failed;
    long long j = blockIdx.x;
    int length = lengths[j];
    if (d > MODEL_SPACE_MAX_WIDTH || length > longest || length < warmup + 2 || warmup < 0) {
        if (threadIdx.x == 0) status[j] = 3;
        return;
    }
    const double* x = states + j * (long long)longest * d;
    double* a = gram + j * (long long)d * d;
    double* b = cross + j * (long long)d * d;
    int pairs = length - warmup - 1;
    for (int i = threadIdx.x; i < d; i += blockDim.x) {
        double sx = 0.0, sy = 0.0;
        for (int t = warmup; t < length - 1; ++t) sx += x[(long long)t * d + i];
        for (int t = warmup + 1; t < length; ++t) sy += x[(long long)t * d + i];
        x_mean[i] = sx / pairs;
        y_mean[i] = sy / pairs;
    }
    if (threadIdx.x == 0) failed = 0;
    __syncthreads();
    const double* last = x + (long long)(length - 1) * d;
    for (int e = threadIdx.x; e < d * d; e += blockDim.x) {
        int i = e % d, k = e / d;
        double v = a[e] - last[i] * last[k] - pairs * x_mean[i] * x_mean[k];
        if (i == k) v += ridge;
        a[e] = v;
        b[e] = b[e] - pairs * x_mean[i] * y_mean[k];
    }
    __syncthreads();
    // A = LLᵀ in place, column by column (L(i, c) at c·d + i; the upper triangle is not read).
    for (int c = 0; c < d; ++c) {
        if (threadIdx.x == 0) {
            double p = a[c * d + c];
            if (!(p > 0.0)) {
                int code = isnan(p) ? 2 : 1;
                if (code > failed) failed = code;
                p = 1.0;
            }
            a[c * d + c] = sqrt(p);
        }
        __syncthreads();
        double pivot = a[c * d + c];
        for (int i = c + 1 + threadIdx.x; i < d; i += blockDim.x) a[c * d + i] /= pivot;
        __syncthreads();
        int rest = d - c - 1;
        for (int e = threadIdx.x; e < rest * rest; e += blockDim.x) {
            int i = c + 1 + e % rest, k = c + 1 + e / rest;
            if (i >= k) a[k * d + i] -= a[c * d + i] * a[c * d + k];
        }
        __syncthreads();
    }
    // Column k of B through L, then Lᵀ: a thread per column, in place.
    for (int k = threadIdx.x; k < d; k += blockDim.x) {
        double* z = b + (long long)k * d;
        for (int i = 0; i < d; ++i) {
            double s = z[i];
            for (int m = 0; m < i; ++m) s -= a[m * d + i] * z[m];
            z[i] = s / a[i * d + i];
        }
        for (int i = d - 1; i >= 0; --i) {
            double s = z[i];
            for (int m = i + 1; m < d; ++m) s -= a[i * d + m] * z[m];
            z[i] = s / a[i * d + i];
        }
    }
    __syncthreads();
    double* o = out + j * (long long)(d * d + d);
    for (int e = threadIdx.x; e < d * d; e += blockDim.x) {
        int i = e / d, k = e % d;
        o[e] = b[k * d + i];
    }
    for (int k = threadIdx.x; k < d; k += blockDim.x) {
        double shift = 0.0;
        for (int i = 0; i < d; ++i) shift += x_mean[i] * b[k * d + i];
        o[d * d + k] = y_mean[k] - shift;
    }
    if (threadIdx.x == 0) status[j] = failed;
}
