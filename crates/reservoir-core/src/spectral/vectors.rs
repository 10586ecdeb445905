//! The vector work of the spectral estimate on vectors of length N: dot products, norms,
//! scalings and the restart's combination, with the same bits on any number of threads.
//!
//! Below [`PARALLEL_ELEMENTS`] a dot product is [`dot`]: four accumulators over the whole
//! vector. From it on, it is [`dot`] over each piece of [`PARALLEL_PIECE`] elements, the
//! pieces' sums then added in order: the order depends on N alone, so the pieces run on
//! rayon's threads (each in the same pass as the Gram–Schmidt subtraction before it) and give
//! the bits of one thread. Summing a whole vector in [`dot`]'s order would have one thread
//! stream it after every parallel pass, most of the estimate's host time at N = 10^6.

use rayon::prelude::*;

/// Vector length from which the elementwise vector work (updates, the products of dot products)
/// runs on rayon's threads. At N = 10^6 one cycle (64 products) makes ~2400 passes over w,
/// seconds on one core; at N = 1000 (a usual echo-state size) a pass takes ~1 µs, less than
/// handing it to the pool.
pub(super) const PARALLEL_ELEMENTS: usize = 1 << 16;
/// Elements per piece of a parallel update or dot product (64 kB of `f64`): few enough pieces
/// to hand out, enough of them to keep every thread busy.
const PARALLEL_PIECE: usize = 1 << 13;

/// Dot product with four accumulators (vectorisable, fixed summation order).
pub(super) fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0; 4];
    for (x, y) in a.chunks_exact(4).zip(b.chunks_exact(4)) {
        for l in 0..4 {
            acc[l] += x[l] * y[l];
        }
    }
    let split = a.len() - a.len() % 4;
    let rest: f64 = a[split..].iter().zip(&b[split..]).map(|(x, y)| x * y).sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + rest
}

/// Euclidean norm of a short vector (the restart's coefficients), rescaled when the plain sum
/// of squares under- or overflows.
pub(super) fn norm(x: &[f64]) -> f64 {
    norm_from(x, dot(x, x))
}

/// [`norm`] of `x` whose sum of squares, `dot(x, x)`, is `sq`.
pub(super) fn norm_from(x: &[f64], sq: f64) -> f64 {
    if sq.is_normal() || sq.is_nan() {
        return sq.sqrt();
    }
    let big = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if big == 0.0 || big.is_infinite() {
        return big;
    }
    big * x.iter().map(|v| (v / big) * (v / big)).sum::<f64>().sqrt()
}

/// The dot products and norms of vectors of length N, in the order of the module's doc: from
/// [`PARALLEL_ELEMENTS`] on, pieces on rayon's threads and their sums added in order.
pub(super) struct Dots {
    /// Each piece's sum of the last pass (empty below `PARALLEL_ELEMENTS`).
    pieces: Vec<f64>,
}

impl Dots {
    pub(super) fn new(n: usize) -> Self {
        let len = if n < PARALLEL_ELEMENTS {
            0
        } else {
            n.div_ceil(PARALLEL_PIECE)
        };
        Self {
            pieces: vec![0.0; len],
        }
    }

    /// The norm of `x` (which it does not change), rescaled when the sum of squares under- or
    /// overflows.
    pub(super) fn norm(&mut self, x: &mut [f64]) -> f64 {
        let sq = self.subtract_then_dot(x, None, None);
        norm_from(x, sq)
    }

    /// w ← w − c·v for `subtract = Some((c, v))`, then the dot product of `a` and w for
    /// `with = Some(a)`, or of w with itself: every element of w gets the same operations as
    /// in a separate subtraction.
    pub(super) fn subtract_then_dot(
        &mut self,
        w: &mut [f64],
        subtract: Option<(f64, &[f64])>,
        with: Option<&[f64]>,
    ) -> f64 {
        let pass = |start: usize, w: &mut [f64]| -> f64 {
            let part = start..start + w.len();
            if let Some((c, v)) = subtract {
                w.iter_mut()
                    .zip(&v[part.clone()])
                    .for_each(|(a, b)| *a -= c * b);
            }
            let w = &*w;
            dot(with.map_or(w, |a| &a[part]), w)
        };
        if self.pieces.is_empty() {
            return pass(0, w);
        }
        self.pieces
            .par_iter_mut()
            .zip(w.par_chunks_mut(PARALLEL_PIECE))
            .enumerate()
            .for_each(|(k, (sum, w))| *sum = pass(k * PARALLEL_PIECE, w));
        self.pieces.iter().sum()
    }
}

/// dst ← s · src.
pub(super) fn set_scaled(dst: &mut [f64], src: &[f64], s: f64) {
    update_with(dst, src, |a, b| *a = b * s);
}

/// x ← x / d (a division per element, not a product with 1/d, which rounds differently).
pub(super) fn divide(x: &mut [f64], d: f64) {
    if x.len() < PARALLEL_ELEMENTS {
        x.iter_mut().for_each(|e| *e /= d);
    } else {
        x.par_chunks_mut(PARALLEL_PIECE)
            .for_each(|piece| piece.iter_mut().for_each(|e| *e /= d));
    }
}

/// `f(dst[e], src[e])` for every element e, on rayon's threads from [`PARALLEL_ELEMENTS`].
pub(super) fn update_with(dst: &mut [f64], src: &[f64], f: impl Fn(&mut f64, f64) + Sync) {
    if dst.len() < PARALLEL_ELEMENTS {
        dst.iter_mut().zip(src).for_each(|(a, &b)| f(a, b));
    } else {
        dst.par_chunks_mut(PARALLEL_PIECE)
            .zip(src.par_chunks(PARALLEL_PIECE))
            .for_each(|(d, s)| d.iter_mut().zip(s).for_each(|(a, &b)| f(a, b)));
    }
}

/// x ← Σ_i coef[i] · v_i over the first `coef.len()` vectors of `basis` (each of x's length),
/// every element summed from 0 in ascending i, the order of one axpy after another; a piece of
/// x at a time, so that it stays in cache while the basis streams past once.
pub(super) fn combine(x: &mut [f64], basis: &[f64], coef: &[f64]) {
    let n = x.len();
    let piece = |start: usize, xs: &mut [f64]| {
        xs.fill(0.0);
        for (vi, &c) in basis.chunks_exact(n).zip(coef) {
            let vi = &vi[start..start + xs.len()];
            xs.iter_mut().zip(vi).for_each(|(a, b)| *a += c * b);
        }
    };
    if n < PARALLEL_ELEMENTS {
        piece(0, x);
    } else {
        x.par_chunks_mut(PARALLEL_PIECE)
            .enumerate()
            .for_each(|(k, xs)| piece(k * PARALLEL_PIECE, xs));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Random values of mixed signs and magnitudes, with exact zeros of both signs, so that a
    /// changed order of operations would show in the bits.
    fn random_vector(rng: &mut ChaCha8Rng, len: usize) -> Vec<f64> {
        (0..len)
            .map(|_| match rng.random_range(0..10) {
                0 => 0.0,
                1 => -0.0,
                _ => rng.random_range(-1.0..1.0) * 10f64.powi(rng.random_range(-30..30)),
            })
            .collect()
    }

    fn bits(x: &[f64]) -> Vec<u64> {
        x.iter().map(|v| v.to_bits()).collect()
    }

    /// The dot product in the module's order, one piece after another on one thread.
    fn dot_in_pieces(a: &[f64], b: &[f64]) -> f64 {
        if a.len() < PARALLEL_ELEMENTS {
            return dot(a, b);
        }
        a.chunks(PARALLEL_PIECE)
            .zip(b.chunks(PARALLEL_PIECE))
            .map(|(a, b)| dot(a, b))
            .sum()
    }

    /// The vector work on 1, 2 and 5 threads, below and above `PARALLEL_ELEMENTS` and with a
    /// partial last piece, gives the bits of plain loops on one thread (one element after
    /// another, the restart as one axpy after another from zero, a subtraction and then the
    /// dot product or norm in the module's order).
    #[test]
    fn parallel_vector_updates_have_the_sequential_bits() {
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        for n in [
            1,
            1000,
            PARALLEL_ELEMENTS - 1,
            3 * PARALLEL_ELEMENTS + 12_345,
        ] {
            let (src, dst) = (random_vector(&mut rng, n), random_vector(&mut rng, n));
            let basis = random_vector(&mut rng, 5 * n);
            let mut coef = random_vector(&mut rng, 4);
            coef[1] = -0.0;
            let (c, d) = (rng.random_range(-2.0..2.0), rng.random_range(0.5..3.0));
            let mut scaled = dst.clone();
            scaled.iter_mut().zip(&src).for_each(|(a, b)| *a = b * c);
            let mut subtracted = dst.clone();
            subtracted
                .iter_mut()
                .zip(&src)
                .for_each(|(a, b)| *a -= c * b);
            let (with_basis, squared) = (
                dot_in_pieces(&basis[..n], &subtracted),
                dot_in_pieces(&subtracted, &subtracted),
            );
            let (dot_dst, norm_dst) = (
                dot_in_pieces(&src, &dst),
                norm_from(&dst, dot_in_pieces(&dst, &dst)),
            );
            let mut divided = dst.clone();
            divided.iter_mut().for_each(|e| *e /= d);
            let mut combined = vec![0.0; n];
            for (vi, &c) in basis.chunks_exact(n).zip(&coef) {
                combined.iter_mut().zip(vi).for_each(|(a, b)| *a += c * b);
            }
            for threads in [1, 2, 5] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .expect("a thread pool");
                pool.install(|| {
                    let mut x = dst.clone();
                    set_scaled(&mut x, &src, c);
                    assert_eq!(
                        bits(&x),
                        bits(&scaled),
                        "set_scaled, n {n}, {threads} threads"
                    );
                    let mut dots = Dots::new(n);
                    let mut x = dst.clone();
                    let got = dots.subtract_then_dot(&mut x, Some((c, &src)), Some(&basis[..n]));
                    assert_eq!(
                        bits(&x),
                        bits(&subtracted),
                        "subtraction, n {n}, {threads} threads"
                    );
                    assert_eq!(
                        got.to_bits(),
                        with_basis.to_bits(),
                        "dot, n {n}, {threads} threads"
                    );
                    let mut x = dst.clone();
                    let got = dots.subtract_then_dot(&mut x, Some((c, &src)), None);
                    assert_eq!(
                        got.to_bits(),
                        squared.to_bits(),
                        "square, n {n}, {threads} threads"
                    );
                    let mut x = dst.clone();
                    let got = dots.subtract_then_dot(&mut x, None, Some(&src));
                    assert_eq!(
                        got.to_bits(),
                        dot_dst.to_bits(),
                        "dot, n {n}, {threads} threads"
                    );
                    assert_eq!(
                        bits(&x),
                        bits(&dst),
                        "no subtraction, n {n}, {threads} threads"
                    );
                    let got = dots.norm(&mut x);
                    assert_eq!(
                        got.to_bits(),
                        norm_dst.to_bits(),
                        "norm, n {n}, {threads} threads"
                    );
                    let mut x = dst.clone();
                    divide(&mut x, d);
                    assert_eq!(bits(&x), bits(&divided), "divide, n {n}, {threads} threads");
                    let mut x = dst.clone();
                    combine(&mut x, &basis, &coef);
                    assert_eq!(
                        bits(&x),
                        bits(&combined),
                        "combine, n {n}, {threads} threads"
                    );
                });
            }
        }
    }
}
