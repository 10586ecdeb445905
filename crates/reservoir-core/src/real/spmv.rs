//! CSR mat-vec kernels: a portable one, and AVX2 / AVX-512 gathers picked at run time.
//!
//! The SIMD kernels sum each row in a different order from the portable one, so states agree
//! to rounding across CPUs; on one CPU every run takes the same path and gives the same bits.

use super::Real;

/// A borrowed CSR matrix with the invariants `CsrMatrix::from_parts` checks (`row_ptr` is
/// monotone and within `values`, every column index is `< ncols <= i32::MAX`), made only by
/// `CsrMatrix`, which also checks `x.len() >= ncols` and `y.len() >= nrows` for each product:
/// the SIMD kernels rely on all of it.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct CsrRef<'a, T> {
    pub(crate) row_ptr: &'a [u32],
    pub(crate) col_idx: &'a [u32],
    pub(crate) values: &'a [T],
}

/// Portable kernel: four accumulators per row hide the latency of the gathered loads.
pub(crate) fn mul_vec_portable<T: Real>(m: CsrRef<'_, T>, x: &[T], y: &mut [T]) {
    for (out, w) in y.iter_mut().zip(m.row_ptr.windows(2)) {
        let (cols, vals) = (
            &m.col_idx[w[0] as usize..w[1] as usize],
            &m.values[w[0] as usize..w[1] as usize],
        );
        let mut acc = [T::zero(); 4];
        let mut chunks_c = cols.chunks_exact(4);
        let mut chunks_v = vals.chunks_exact(4);
        for (c, v) in (&mut chunks_c).zip(&mut chunks_v) {
            for lane in 0..4 {
                acc[lane] += v[lane] * x[c[lane] as usize];
            }
        }
        let mut sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        for (&c, &v) in chunks_c.remainder().iter().zip(chunks_v.remainder()) {
            sum += v * x[c as usize];
        }
        *out = sum;
    }
}

/// `y ← A·x` in `f32`, with the fastest kernel this CPU has.
pub(super) fn mul_vec_f32(m: CsrRef<'_, f32>, x: &[f32], y: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F; the CsrRef invariants (module doc) hold.
            return unsafe { x86::mul_vec_f32_avx512(m, x, y) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has AVX2 and FMA; the CsrRef invariants hold.
            return unsafe { x86::mul_vec_f32_avx2(m, x, y) };
        }
    }
    mul_vec_portable(m, x, y)
}

/// `y ← A·x` in `f64`, with the fastest kernel this CPU has.
pub(super) fn mul_vec_f64(m: CsrRef<'_, f64>, x: &[f64], y: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F; the CsrRef invariants hold.
            return unsafe { x86::mul_vec_f64_avx512(m, x, y) };
        }
    }
    mul_vec_portable(m, x, y)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::CsrRef;
    use std::arch::x86_64::*;

    /// Sixteen lanes per gather, two accumulators, a masked gather for the row's tail.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn mul_vec_f32_avx512(m: CsrRef<'_, f32>, x: &[f32], y: &mut [f32]) {
        let (cols, vals, xp) = (m.col_idx.as_ptr(), m.values.as_ptr(), x.as_ptr());
        for (out, w) in y.iter_mut().zip(m.row_ptr.windows(2)) {
            let (mut k, end) = (w[0] as usize, w[1] as usize);
            let (mut acc0, mut acc1) = (_mm512_setzero_ps(), _mm512_setzero_ps());
            // SAFETY (all loads below): k..end lies within col_idx/values, and every gathered
            // index is a column index < ncols <= x.len().
            while k + 32 <= end {
                let i0 = _mm512_loadu_si512(cols.add(k).cast());
                let i1 = _mm512_loadu_si512(cols.add(k + 16).cast());
                acc0 = _mm512_fmadd_ps(
                    _mm512_loadu_ps(vals.add(k)),
                    _mm512_i32gather_ps::<4>(i0, xp),
                    acc0,
                );
                acc1 = _mm512_fmadd_ps(
                    _mm512_loadu_ps(vals.add(k + 16)),
                    _mm512_i32gather_ps::<4>(i1, xp),
                    acc1,
                );
                k += 32;
            }
            while k < end {
                let mask: __mmask16 = if end - k >= 16 {
                    0xFFFF
                } else {
                    ((1u32 << (end - k)) - 1) as u16
                };
                let i = _mm512_maskz_loadu_epi32(mask, cols.add(k).cast());
                let v = _mm512_maskz_loadu_ps(mask, vals.add(k));
                let g = _mm512_mask_i32gather_ps::<4>(_mm512_setzero_ps(), mask, i, xp);
                acc0 = _mm512_fmadd_ps(v, g, acc0);
                k += 16;
            }
            *out = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
        }
    }

    /// Eight lanes per gather, two accumulators, a scalar tail.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn mul_vec_f32_avx2(m: CsrRef<'_, f32>, x: &[f32], y: &mut [f32]) {
        let (cols, vals, xp) = (m.col_idx.as_ptr(), m.values.as_ptr(), x.as_ptr());
        for (out, w) in y.iter_mut().zip(m.row_ptr.windows(2)) {
            let (mut k, end) = (w[0] as usize, w[1] as usize);
            let (mut acc0, mut acc1) = (_mm256_setzero_ps(), _mm256_setzero_ps());
            // SAFETY: as in the AVX-512 kernel.
            while k + 16 <= end {
                let i0 = _mm256_loadu_si256(cols.add(k).cast());
                let i1 = _mm256_loadu_si256(cols.add(k + 8).cast());
                acc0 = _mm256_fmadd_ps(
                    _mm256_loadu_ps(vals.add(k)),
                    _mm256_i32gather_ps::<4>(xp, i0),
                    acc0,
                );
                acc1 = _mm256_fmadd_ps(
                    _mm256_loadu_ps(vals.add(k + 8)),
                    _mm256_i32gather_ps::<4>(xp, i1),
                    acc1,
                );
                k += 16;
            }
            let v = _mm256_add_ps(acc0, acc1);
            let half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
            let mut lanes = [0.0f32; 4];
            _mm_storeu_ps(lanes.as_mut_ptr(), half);
            let mut sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
            while k < end {
                sum += *vals.add(k) * *xp.add(*cols.add(k) as usize);
                k += 1;
            }
            *out = sum;
        }
    }

    /// Eight lanes per gather, a masked gather for the row's tail.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn mul_vec_f64_avx512(m: CsrRef<'_, f64>, x: &[f64], y: &mut [f64]) {
        let (cols, vals, xp) = (m.col_idx.as_ptr(), m.values.as_ptr(), x.as_ptr());
        for (out, w) in y.iter_mut().zip(m.row_ptr.windows(2)) {
            let (mut k, end) = (w[0] as usize, w[1] as usize);
            let (mut acc0, mut acc1) = (_mm512_setzero_pd(), _mm512_setzero_pd());
            // SAFETY: as in the f32 kernel.
            while k + 16 <= end {
                let i0 = _mm256_loadu_si256(cols.add(k).cast());
                let i1 = _mm256_loadu_si256(cols.add(k + 8).cast());
                acc0 = _mm512_fmadd_pd(
                    _mm512_loadu_pd(vals.add(k)),
                    _mm512_i32gather_pd::<8>(i0, xp),
                    acc0,
                );
                acc1 = _mm512_fmadd_pd(
                    _mm512_loadu_pd(vals.add(k + 8)),
                    _mm512_i32gather_pd::<8>(i1, xp),
                    acc1,
                );
                k += 16;
            }
            while k < end {
                let mask: __mmask8 = if end - k >= 8 {
                    0xFF
                } else {
                    ((1u32 << (end - k)) - 1) as u8
                };
                let i = _mm256_maskz_loadu_epi32(mask, cols.add(k).cast());
                let v = _mm512_maskz_loadu_pd(mask, vals.add(k));
                let g = _mm512_mask_i32gather_pd::<8>(_mm512_setzero_pd(), mask, i, xp);
                acc0 = _mm512_fmadd_pd(v, g, acc0);
                k += 8;
            }
            *out = _mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Random CSR with row lengths 0..=70 so every tail length of every kernel is exercised.
    fn random_csr(seed: u64, n: usize) -> (Vec<u32>, Vec<u32>, Vec<f64>, Vec<f64>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (mut row_ptr, mut cols, mut vals) = (vec![0u32], vec![], vec![]);
        for row in 0..n {
            let len = row % 71;
            let mut picked = rand::seq::index::sample(&mut rng, n, len.min(n)).into_vec();
            picked.sort_unstable();
            for c in picked {
                cols.push(c as u32);
                vals.push(rng.random_range(-1.0..1.0));
            }
            row_ptr.push(cols.len() as u32);
        }
        let x = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
        (row_ptr, cols, vals, x)
    }

    #[test]
    fn simd_kernels_match_the_portable_kernel() {
        for seed in 0..4 {
            let (row_ptr, col_idx, vals, x) = random_csr(seed, 300);
            let exact: Vec<f64> = {
                let mut y = vec![0.0; 300];
                mul_vec_portable(
                    CsrRef {
                        row_ptr: &row_ptr,
                        col_idx: &col_idx,
                        values: &vals,
                    },
                    &x,
                    &mut y,
                );
                y
            };
            let mut y64 = vec![0.0; 300];
            let m64 = CsrRef {
                row_ptr: &row_ptr,
                col_idx: &col_idx,
                values: &vals,
            };
            mul_vec_f64(m64, &x, &mut y64);
            let vals32: Vec<f32> = vals.iter().map(|&v| v as f32).collect();
            let m32 = CsrRef {
                row_ptr: &row_ptr,
                col_idx: &col_idx,
                values: &vals32,
            };
            let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let mut y32 = vec![0.0f32; 300];
            mul_vec_f32(m32, &x32, &mut y32);
            for i in 0..300 {
                assert!((y64[i] - exact[i]).abs() < 1e-12, "f64 row {i}");
                assert!((f64::from(y32[i]) - exact[i]).abs() < 1e-5, "f32 row {i}");
            }
        }
    }
}
