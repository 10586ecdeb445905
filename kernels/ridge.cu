// Ridge sums on the device: the f32 states are widened to f64 here, then
// cuBLAS adds XᵀX and Xᵀ[Y, 1] (DGEMMs) in f64, as reservoir-core's RidgeAccumulator
// does on the CPU with the same f32 states widened to f64.

// dst[i] = (double)src[i] for i < count (exact); a grid-stride loop, so any grid covers it.
extern "C" __global__ void widen_f32_to_f64(const float* __restrict__ src,
                                            double* __restrict__ dst, long long count) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        dst[i] = (double)src[i];
    }
}

// ---------------------------------------------------------------------------------------------
// Ridge readouts solved on the device, for many lanes and ridge values at once (CPU reference:
// RidgeAccumulator::solve and ::score). System s = lane·ridge_count + r is the augmented normal
// equations [[XᵀX + λ_r·I, ΣX], [ΣXᵀ, n]]·[w; c] = [Xᵀ(Y − s); Σ(y − s)], padded with the
// identity to p = a whole number of RIDGE_BLOCK-sized blocks (the padding's solution is zero).
// The host factorises it by blocks: this file factors each diagonal block and inverts its
// factor, cuBLAS does the panels, trailing updates and substitutions (DGEMMs).

#define RIDGE_BLOCK 64

// Fills a (systems × p × p) and b (systems × p × m), column-major. gram holds the lanes' f × f
// XᵀX (lane l at l·f²; its lower triangle is read, as RidgeAccumulator reads it, and mirrored);
// cross is column-major width × (m + 1) with lane l's column k at l·f + k·width, the last
// column ΣX. A grid-stride loop over both arrays.
extern "C" __global__ void ridge_build_systems(const double* __restrict__ gram,
                                               const double* __restrict__ cross, long long width,
                                               const double* __restrict__ ridges, int ridge_count,
                                               const double* __restrict__ target_sums,
                                               double rows, int f, int m, int p,
                                               long long systems, double* __restrict__ a,
                                               double* __restrict__ b) {
    long long stride = (long long)gridDim.x * blockDim.x;
    long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long pp = (long long)p * p;
    long long ff = (long long)f * f;
    for (long long idx = first; idx < systems * pp; idx += stride) {
        long long s = idx / pp;
        long long e = idx - s * pp;
        int i = (int)(e % p), j = (int)(e / p);
        long long lane = s / ridge_count;
        int r = (int)(s - lane * ridge_count);
        const double* sums = cross + lane * f + (long long)m * width;
        double v;
        if (i < f && j < f) {
            // Element (max, min) of the row-major F × F block: its lower triangle.
            int hi = i > j ? i : j, lo = i > j ? j : i;
            v = gram[lane * ff + (long long)hi * f + lo];
            if (i == j) v += ridges[r];
        } else if (i == f && j < f) {
            v = sums[j];
        } else if (j == f && i < f) {
            v = sums[i];
        } else if (i == f && j == f) {
            v = rows;
        } else {
            v = i == j ? 1.0 : 0.0;
        }
        a[idx] = v;
    }
    long long pm = (long long)p * m;
    for (long long idx = first; idx < systems * pm; idx += stride) {
        long long s = idx / pm;
        long long e = idx - s * pm;
        int i = (int)(e % p), k = (int)(e / p);
        long long lane = s / ridge_count;
        double v = 0.0;
        if (i < f) {
            v = cross[lane * f + (long long)k * width + i];
        } else if (i == f) {
            v = target_sums[k];
        }
        b[idx] = v;
    }
}

// Factors diagonal block kb of every system (one thread block each): A_kk = L·Lᵀ, with A_kk
// already updated by the blocks before it. L goes to block (kb, kb) of l (zero above the
// diagonal) and L⁻¹ to inverse (system s's block kb at (s·blocks + kb)·RIDGE_BLOCK²), both
// column-major. A pivot that is not positive sets status[s] to 1 (2 when it is not a number:
// the sums were not finite) and is taken as 1, so the rest of the system stays finite.
extern "C" __global__ void ridge_factor_diagonal(const double* __restrict__ a,
                                                 double* __restrict__ l,
                                                 double* __restrict__ inverse,
                                                 int* __restrict__ status, int p, int kb) {
    const int n = RIDGE_BLOCK;
    __shared__ double t[RIDGE_BLOCK][RIDGE_BLOCK + 1];
    __shared__ int code;
    long long s = blockIdx.x;
    long long at = s * (long long)p * p + (long long)kb * n * p + (long long)kb * n;
    for (int e = threadIdx.x; e < n * n; e += blockDim.x) {
        int i = e % n, j = e / n;
        t[i][j] = a[at + (long long)j * p + i];
    }
    if (threadIdx.x == 0) code = status[s];
    __syncthreads();
    for (int j = 0; j < n; ++j) {
        if (threadIdx.x == 0) {
            double d = t[j][j];
            if (!(d > 0.0)) {
                int failed = isnan(d) ? 2 : 1;
                if (failed > code) code = failed;
                d = 1.0;
            }
            t[j][j] = sqrt(d);
        }
        __syncthreads();
        double pivot = t[j][j];
        for (int i = j + 1 + threadIdx.x; i < n; i += blockDim.x) t[i][j] /= pivot;
        __syncthreads();
        for (int e = threadIdx.x; e < n * n; e += blockDim.x) {
            int i = e % n, c = e / n;
            if (c > j && i >= c) t[i][c] -= t[i][j] * t[c][j];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) status[s] = code;
    for (int e = threadIdx.x; e < n * n; e += blockDim.x) {
        int i = e % n, j = e / n;
        l[at + (long long)j * p + i] = i >= j ? t[i][j] : 0.0;
    }
    // Column c of L⁻¹ by forward substitution, a thread per column.
    double* x = inverse + (s * (p / n) + kb) * (long long)n * n;
    for (int c = threadIdx.x; c < n; c += blockDim.x) {
        double* column = x + (long long)c * n;
        for (int i = 0; i < c; ++i) column[i] = 0.0;
        column[c] = 1.0 / t[c][c];
        for (int i = c + 1; i < n; ++i) {
            double sum = 0.0;
            for (int j = c; j < i; ++j) sum += t[i][j] * column[j];
            column[i] = -sum / t[i][i];
        }
    }
}

#define RIDGE_PRODUCT_THREADS 256

// The products a readout's scores need (reservoir_core::readout::ReadoutProducts), for
// system s = blockIdx.x and output k = blockIdx.y, with w the first f rows of the solution x
// (p × m per system): out[(s·m + k)·7 + q] holds x[f] (the intercept for shifted targets),
// then wᵀ(G·w), wᵀΣX, wᵀXᵀ(Y − s)ₖ of the training sums, then the same three of the validation
// sums. gw_*: G·w (f × m per system); cross_*: as in ridge_build_systems. A fixed reduction
// order, so the same inputs give the same bits.
extern "C" __global__ void ridge_readout_products(
    const double* __restrict__ x, const double* __restrict__ gw_train,
    const double* __restrict__ gw_validation, const double* __restrict__ cross_train,
    const double* __restrict__ cross_validation, long long width, int ridge_count, int f, int m,
    int p, double* __restrict__ out) {
    __shared__ double part[6][RIDGE_PRODUCT_THREADS];
    long long s = blockIdx.x;
    int k = blockIdx.y;
    long long lane = s / ridge_count;
    const double* w = x + s * (long long)p * m + (long long)k * p;
    long long column = (s * m + k) * (long long)f;
    const double* sides[2][3] = {
        {gw_train + column, cross_train + lane * f + (long long)m * width,
         cross_train + lane * f + (long long)k * width},
        {gw_validation + column, cross_validation + lane * f + (long long)m * width,
         cross_validation + lane * f + (long long)k * width}};
    double acc[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (int i = threadIdx.x; i < f; i += blockDim.x) {
        double wi = w[i];
        for (int q = 0; q < 6; ++q) acc[q] += wi * sides[q / 3][q % 3][i];
    }
    for (int q = 0; q < 6; ++q) part[q][threadIdx.x] = acc[q];
    __syncthreads();
    for (int half = RIDGE_PRODUCT_THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            for (int q = 0; q < 6; ++q) part[q][threadIdx.x] += part[q][threadIdx.x + half];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        double* o = out + (s * m + k) * 7;
        o[0] = w[f];
        for (int q = 0; q < 6; ++q) o[q + 1] = part[q][0];
    }
}
