// Temporal pattern detection on the GPU. The CPU reference is
// reservoir-core's detection::{filter_pattern, PatternDetector::scores}: the same f64
// operations in the same order, so the scores, and hence the detections, are identical.

// Exponential filter of binned spike counts, one thread per channel:
// f[b, c] = s[b, c] + f[b - 1, c] * alpha (in place; s is bins x channels, row-major).
extern "C" __global__ void filter_kernel(double* __restrict__ s, int bins, int channels,
                                         double alpha) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= channels) return;
    for (int b = 1; b < bins; ++b) {
        s[(long long)b * channels + c] += s[(long long)(b - 1) * channels + c] * alpha;
    }
}

// scores[t, j] for the window of template j (L_j bins) ending at bin t, one thread per (t, j):
// m = sum(W) / n, v = sum((W - m)^2), d = sum(T~ * (W - m)), all summed in row-major order
// from 0.0; score = 0 if v == 0, else clamp(d / (norm_j * sqrt(v)), 0, 1). Bins t < L_j - 1
// keep the 0 they were initialised with.
extern "C" __global__ void detection_scores_kernel(const double* __restrict__ filtered,
                                                   int bins, int channels,
                                                   const double* __restrict__ templates,
                                                   const long long* __restrict__ offsets,
                                                   const int* __restrict__ lengths,
                                                   const double* __restrict__ norms,
                                                   int n_templates,
                                                   double* __restrict__ scores) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)bins * n_templates) return;
    int t = (int)(idx / n_templates);
    int j = (int)(idx % n_templates);
    int len = lengths[j];
    if (len > bins || t < len - 1) return;
    long long n = (long long)len * channels;
    const double* window = filtered + (long long)(t + 1 - len) * channels;
    const double* centred = templates + offsets[j];
    double sum = 0.0;
    for (long long e = 0; e < n; ++e) sum += window[e];
    double mean = sum / (double)n;
    double v = 0.0;
    for (long long e = 0; e < n; ++e) {
        double x = window[e] - mean;
        v += x * x;
    }
    double d = 0.0;
    for (long long e = 0; e < n; ++e) d += centred[e] * (window[e] - mean);
    double score = 0.0;
    if (v != 0.0) {
        score = d / (norms[j] * sqrt(v));
        score = score < 0.0 ? 0.0 : (score > 1.0 ? 1.0 : score);
    }
    scores[idx] = score;
}
