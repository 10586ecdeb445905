//! W prepared for the single-sequence product `y ← W·x`: in the layout of the kernel timed
//! fastest for it on this machine. All kernels give the bits of [`CsrMatrix::mul_vec`]
//! (`real/spmv.rs`), so the choice changes the speed only.
//!
//! Three layouts, all padded with zero weights:
//! - sliced (ELLPACK by slices of [`SLICE`] rows, without row sorting): entry j of each of a
//!   slice's rows side by side, one SIMD lane per row;
//! - blocked: groups of [`GROUP_ROWS`] rows, their entries by column blocks of [`BLOCK_COLS`],
//!   so x's values of a block are read from registers (`f32` with AVX-512 only);
//! - dense by columns (every weight, zeros too), timed only for matrices at least
//!   [`DENSE_CANDIDATE_DENSITY`] full.

use std::ops::Range;

use rayon::prelude::*;

use super::CsrMatrix;
use crate::error::{ReservoirError, Result};
use crate::memory::{bytes_of, ensure_available, try_with_capacity};
use crate::real::{
    fastest_kernel, mul_dense, BlockedRef, DenseRef, ProductKernel, Real, SlicedRef, TimedProduct,
    BLOCK_COLS, DENSE_TILE, GROUP_ROWS, SLICE,
};

/// Non-zeros the kernels are timed on at most: the first rows of a larger matrix stand for
/// it (and the layouts built for the timing stay small).
const SAMPLE_NONZEROS: usize = 1 << 22;
/// Stored entries from which [`SparseProduct::mul_vec_parallel_trusted`] spreads its rows
/// over rayon's threads: a product of 2^17 entries takes ~0.1 ms on one core, well above the
/// pool's hand-off.
const PARALLEL_PRODUCT_ENTRIES: usize = 1 << 17;
/// A blocked layout padded past this many lanes per non-zero is not tried: it cannot win, and
/// very sparse matrices would pad to many times their size.
const MAX_BLOCKED_PADDING: usize = 6;
/// Density from which the dense layout is timed beside the sparse ones: below it, a dense
/// product does several times the work of a sparse one and holds several times its memory.
/// From it, the dense layout takes at most 32 bytes per non-zero (`f64`), within the room
/// `weights_bytes` keeps for product layouts.
pub const DENSE_CANDIDATE_DENSITY: f64 = 0.25;
const WHAT: &str = "the recurrent weights' product layout";

/// A sparse matrix in the layout of its product kernel.
#[derive(Debug, Clone)]
pub struct SparseProduct<T> {
    nrows: usize,
    ncols: usize,
    kernel: ProductKernel,
    layout: Layout<T>,
}

#[derive(Debug, Clone)]
enum Layout<T> {
    Sliced(Sliced<T>),
    Blocked(Blocked<T>),
    /// Column j at `[j·nrows..(j + 1)·nrows]`.
    Dense(Vec<T>),
}

#[derive(Debug, Clone)]
struct Sliced<T> {
    slice_start: Vec<usize>,
    col_idx: Vec<u32>,
    values: Vec<T>,
}

#[derive(Debug, Clone)]
struct Blocked<T> {
    groups: Vec<(usize, usize)>,
    blocks: Vec<(u32, u32)>,
    offsets: Vec<[u8; 16]>,
    values: Vec<[T; 16]>,
}

impl<T: Real> SparseProduct<T> {
    /// `csr` in the layout of the kernel timed fastest for matrices of its kind on this
    /// machine (timed once per process for each kind: value type, orders of magnitude of the
    /// non-zeros and of the row length).
    ///
    /// # Errors
    /// An out-of-memory error when the padded layout does not fit.
    pub fn new(csr: &CsrMatrix<T>) -> Result<Self> {
        let sample_rows = csr
            .row_ptr()
            .iter()
            .position(|&p| p as usize > SAMPLE_NONZEROS)
            .map_or(csr.nrows(), |past| (past - 1).max(1));
        let shape = (csr.nnz(), csr.nrows(), csr.ncols());
        let kernel = fastest_kernel::<T>(shape, &mut |candidates| {
            timing_products(csr, sample_rows, candidates)
        })?;
        Self::with_kernel(csr, kernel)
    }

    /// `csr` in the layout of `kernel` (benchmarks and tests: every kernel gives the same
    /// bits).
    ///
    /// # Errors
    /// An invalid-input error when this CPU cannot run `kernel` for `T`; an out-of-memory
    /// error when the padded layout does not fit.
    pub fn with_kernel(csr: &CsrMatrix<T>, kernel: ProductKernel) -> Result<Self> {
        if !ProductKernel::available::<T>().contains(&kernel) {
            return Err(ReservoirError::invalid(
                "product kernel",
                format!("this CPU cannot run the {kernel} kernel"),
            ));
        }
        let layout = if kernel.blocked() {
            Layout::Blocked(Blocked::new(csr, 0..csr.nrows())?)
        } else if kernel.dense() {
            Layout::Dense(dense_columns(csr, csr.nrows())?)
        } else {
            Layout::Sliced(Sliced::new(csr, 0..csr.nrows())?)
        };
        Ok(Self {
            nrows: csr.nrows(),
            ncols: csr.ncols(),
            kernel,
            layout,
        })
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// The kernel the products run.
    pub fn kernel(&self) -> ProductKernel {
        self.kernel
    }

    /// Multiply-adds of one product, padding included.
    pub fn work(&self) -> usize {
        match &self.layout {
            Layout::Sliced(s) => s.values.len(),
            Layout::Blocked(b) => b.values.len() * 16,
            Layout::Dense(d) => d.len(),
        }
    }

    /// Rows a split of the product between threads must start at a multiple of.
    pub fn row_granule(&self) -> usize {
        match &self.layout {
            Layout::Sliced(_) => SLICE,
            Layout::Blocked(_) => GROUP_ROWS,
            Layout::Dense(_) => DENSE_TILE,
        }
    }

    /// `y ← A·x`.
    ///
    /// # Errors
    /// A shape error when `x.len() != ncols` or `y.len() != nrows`.
    pub fn mul_vec(&self, x: &[T], y: &mut [T]) -> Result<()> {
        if x.len() != self.ncols || y.len() != self.nrows {
            return Err(ReservoirError::shape(
                "sparse product",
                format!("x of {} and y of {}", self.ncols, self.nrows),
                format!("x of {} and y of {}", x.len(), y.len()),
            ));
        }
        self.mul_rows_trusted(0, x, y);
        Ok(())
    }

    /// `y ← A[first..first + y.len()]·x`, `first` a multiple of [`Self::row_granule`]: rows
    /// summed as in the whole product (the same bits), for callers that split the rows
    /// between threads.
    ///
    /// # Panics
    /// When `first` is not a multiple of the granule, `x` is shorter than the matrix needs or
    /// the rows run past the matrix (a bug in the caller, never data).
    pub(crate) fn mul_rows_trusted(&self, first: usize, x: &[T], y: &mut [T]) {
        // The SIMD kernels read x by index: the length is checked here, once per product.
        let granule = self.row_granule();
        assert!(
            first.is_multiple_of(granule) && x.len() >= self.ncols && first + y.len() <= self.nrows,
            "sparse product lengths"
        );
        let (part, count) = (first / granule, y.len().div_ceil(granule));
        match &self.layout {
            Layout::Sliced(s) => T::sliced_mul_vec(self.kernel, s.view().slices(part, count), x, y),
            Layout::Blocked(b) => T::blocked_mul_vec(b.view().groups(part, count), x, y),
            Layout::Dense(values) => {
                let m = DenseRef {
                    rows: self.nrows,
                    values,
                };
                mul_dense(self.kernel == ProductKernel::DenseAvx512, m, first, x, y)
            }
        }
    }

    /// `y ← A·x` with blocks of rows on rayon's threads once the matrix has
    /// [`PARALLEL_PRODUCT_ENTRIES`]. Every row is summed as in one product over all rows, so
    /// the result is the same bit for bit whatever the threads.
    ///
    /// # Panics
    /// As [`SparseProduct::mul_rows_trusted`].
    pub(crate) fn mul_vec_parallel_trusted(&self, x: &[T], y: &mut [T]) {
        let threads = rayon::current_num_threads();
        if threads < 2 || self.work() < PARALLEL_PRODUCT_ENTRIES {
            return self.mul_rows_trusted(0, x, &mut y[..self.nrows]);
        }
        // A few blocks per thread even out rows of unequal length.
        let granule = self.row_granule();
        let rows_per_block = self.nrows.div_ceil(4 * threads).div_ceil(granule) * granule;
        y[..self.nrows]
            .par_chunks_mut(rows_per_block)
            .enumerate()
            .for_each(|(block, y_block)| {
                self.mul_rows_trusted(block * rows_per_block, x, y_block);
            });
    }
}

/// For each of `candidates`, a product on the first `rows` rows of `csr` in its layout, for
/// the calibration to time (blocked layouts too padded to win are left out).
fn timing_products<'a, T: Real>(
    csr: &'a CsrMatrix<T>,
    rows: usize,
    candidates: &[ProductKernel],
) -> Result<Vec<TimedProduct<'a>>> {
    let x: Vec<T> = (0..csr.ncols())
        .map(|i| T::from_f64((i as f64 * 0.618_034).fract() * 2.0 - 1.0))
        .collect();
    let sliced = Sliced::new(csr, 0..rows)?;
    let sample_nonzeros = csr.row_ptr()[rows] as usize;
    let blocked = if candidates.iter().any(|k| k.blocked())
        && Blocked::<T>::vectors(csr, 0..rows) * 16 <= MAX_BLOCKED_PADDING * sample_nonzeros.max(1)
    {
        Some(Blocked::new(csr, 0..rows)?)
    } else {
        None
    };
    let density = sample_nonzeros as f64 / (rows * csr.ncols()).max(1) as f64;
    let dense = if candidates.iter().any(|k| k.dense()) && density >= DENSE_CANDIDATE_DENSITY {
        Some(dense_columns(csr, rows)?)
    } else {
        None
    };
    let mut products: Vec<TimedProduct<'a>> = Vec::new();
    for &kernel in candidates {
        let (x, mut y) = (x.clone(), vec![T::zero(); rows]);
        if kernel.dense() {
            if let Some(values) = dense.clone() {
                let avx512 = kernel == ProductKernel::DenseAvx512;
                products.push((
                    kernel,
                    Box::new(move || {
                        mul_dense(
                            avx512,
                            DenseRef {
                                rows,
                                values: &values,
                            },
                            0,
                            &x,
                            &mut y,
                        )
                    }),
                ));
            }
        } else if kernel.blocked() {
            if let Some(b) = blocked.clone() {
                let groups = rows.div_ceil(GROUP_ROWS);
                products.push((
                    kernel,
                    Box::new(move || T::blocked_mul_vec(b.view().groups(0, groups), &x, &mut y)),
                ));
            }
        } else {
            let s = sliced.clone();
            let slices = rows.div_ceil(SLICE);
            products.push((
                kernel,
                Box::new(move || T::sliced_mul_vec(kernel, s.view().slices(0, slices), &x, &mut y)),
            ));
        }
    }
    Ok(products)
}

/// The first `rows` rows of `csr` dense, by columns: column j at `[j·rows..(j + 1)·rows]`.
fn dense_columns<T: Real>(csr: &CsrMatrix<T>, rows: usize) -> Result<Vec<T>> {
    let entries = rows.saturating_mul(csr.ncols());
    ensure_available(WHAT, bytes_of(entries, std::mem::size_of::<T>()))?;
    let mut values = try_with_capacity(WHAT, entries)?;
    values.resize(entries, T::zero());
    for r in 0..rows {
        for k in csr.row_range(r) {
            values[csr.col_idx()[k] as usize * rows + r] = csr.values()[k];
        }
    }
    Ok(values)
}

impl<T: Real> Sliced<T> {
    /// Rows `rows` of `csr` in the sliced layout.
    fn new(csr: &CsrMatrix<T>, rows: Range<usize>) -> Result<Self> {
        let row_len = |r: usize| csr.row_range(r).len();
        let slice_rows = |s: usize| {
            let first = rows.start + s * SLICE;
            first..(first + SLICE).min(rows.end)
        };
        let slices = rows.len().div_ceil(SLICE);
        let longest = |s: usize| slice_rows(s).map(row_len).max().unwrap_or(0);
        let entries: usize = (0..slices).map(|s| longest(s) * SLICE).sum();
        ensure_available(WHAT, bytes_of(entries, std::mem::size_of::<T>() + 4))?;
        let mut col_idx = try_with_capacity(WHAT, entries)?;
        let mut values = try_with_capacity(WHAT, entries)?;
        let mut slice_start = try_with_capacity(WHAT, slices + 1)?;
        slice_start.push(0);
        for s in 0..slices {
            let lanes = slice_rows(s);
            for j in 0..longest(s) {
                for lane in 0..SLICE {
                    let row = lanes.start + lane;
                    match (row < lanes.end).then(|| csr.row_range(row)) {
                        Some(range) if j < range.len() => {
                            col_idx.push(csr.col_idx()[range.start + j]);
                            values.push(csr.values()[range.start + j]);
                        }
                        // A zero weight on column 0, a real column (module doc).
                        _ => {
                            col_idx.push(0);
                            values.push(T::zero());
                        }
                    }
                }
            }
            slice_start.push(col_idx.len());
        }
        Ok(Self {
            slice_start,
            col_idx,
            values,
        })
    }

    fn view(&self) -> SlicedRef<'_, T> {
        SlicedRef {
            slice_start: &self.slice_start,
            col_idx: &self.col_idx,
            values: &self.values,
        }
    }
}

/// For each non-empty column block of a group of rows, in column order: the block and the
/// most entries any of the group's rows has in it.
fn group_blocks<T: Real>(csr: &CsrMatrix<T>, rows: Range<usize>) -> Vec<(u32, u32)> {
    let mut depth = vec![0u32; csr.ncols().div_ceil(BLOCK_COLS)];
    for row in rows {
        let mut count = 0u32;
        let mut block = usize::MAX;
        for &c in &csr.col_idx()[csr.row_range(row)] {
            let b = c as usize / BLOCK_COLS;
            count = if b == block { count + 1 } else { 1 };
            block = b;
            depth[b] = depth[b].max(count);
        }
    }
    depth
        .iter()
        .enumerate()
        .filter(|(_, &d)| d > 0)
        .map(|(b, &d)| (b as u32, d))
        .collect()
}

impl<T: Real> Blocked<T> {
    /// Rows of the groups of `rows`.
    fn group_rows(rows: &Range<usize>, g: usize) -> Range<usize> {
        let first = rows.start + g * GROUP_ROWS;
        first..(first + GROUP_ROWS).min(rows.end)
    }

    /// Vectors (16 lanes each) the blocked layout of `rows` of `csr` holds.
    fn vectors(csr: &CsrMatrix<T>, rows: Range<usize>) -> usize {
        (0..rows.len().div_ceil(GROUP_ROWS))
            .map(|g| {
                let blocks = group_blocks(csr, Self::group_rows(&rows, g));
                blocks.iter().map(|&(_, d)| d as usize).sum::<usize>() * (GROUP_ROWS / 16)
            })
            .sum()
    }

    /// Rows `rows` of `csr` in the blocked layout.
    fn new(csr: &CsrMatrix<T>, rows: Range<usize>) -> Result<Self> {
        let groups = rows.len().div_ceil(GROUP_ROWS);
        let vectors = Self::vectors(csr, rows.clone());
        ensure_available(WHAT, bytes_of(vectors, 16 * (std::mem::size_of::<T>() + 1)))?;
        let mut offsets = try_with_capacity(WHAT, vectors)?;
        let mut values = try_with_capacity(WHAT, vectors)?;
        let mut starts = try_with_capacity(WHAT, groups + 1)?;
        let mut blocks = Vec::new();
        // Each row's next entry, as the blocks go by in column order.
        let mut next: Vec<usize> = Vec::with_capacity(GROUP_ROWS);
        for g in 0..groups {
            starts.push((blocks.len(), offsets.len()));
            let lanes = Self::group_rows(&rows, g);
            next.clear();
            next.extend(lanes.clone().map(|r| csr.row_range(r).start));
            for (block, depth) in group_blocks(csr, lanes.clone()) {
                let end = (block as usize + 1) * BLOCK_COLS;
                // The entries of each row in this block: next[lane]..ends[lane].
                let ends: Vec<usize> = lanes
                    .clone()
                    .zip(&next)
                    .map(|(r, &k)| {
                        let row_end = csr.row_range(r).end;
                        k + csr.col_idx()[k..row_end]
                            .iter()
                            .take_while(|&&c| (c as usize) < end)
                            .count()
                    })
                    .collect();
                for j in 0..depth as usize {
                    for quarter in 0..GROUP_ROWS / 16 {
                        let mut offset = [0u8; 16];
                        let mut value = [T::zero(); 16];
                        for lane in 0..16 {
                            let i = quarter * 16 + lane;
                            if let Some(k) = next.get(i).map(|&k| k + j).filter(|&k| k < ends[i]) {
                                offset[lane] = (csr.col_idx()[k] as usize % BLOCK_COLS) as u8;
                                value[lane] = csr.values()[k];
                            }
                        }
                        offsets.push(offset);
                        values.push(value);
                    }
                }
                next.copy_from_slice(&ends);
                blocks.push((block, depth));
            }
        }
        starts.push((blocks.len(), offsets.len()));
        Ok(Self {
            groups: starts,
            blocks,
            offsets,
            values,
        })
    }

    fn view(&self) -> BlockedRef<'_, T> {
        BlockedRef {
            groups: &self.groups,
            blocks: &self.blocks,
            offsets: &self.offsets,
            values: &self.values,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random(n: usize, density: f64, rng: &mut ChaCha8Rng) -> CsrMatrix<f64> {
        let dense = ndarray::Array2::from_shape_fn((n, n), |_| {
            if rng.random_bool(density) {
                rng.random_range(-1.0..1.0)
            } else {
                0.0
            }
        });
        CsrMatrix::from_dense(&dense).expect("csr")
    }

    fn bits<T: Real>(v: &[T]) -> Vec<u64> {
        v.iter().map(|f| f.as_f64().to_bits()).collect()
    }

    fn check<T: Real>(csr: &CsrMatrix<T>, rng: &mut ChaCha8Rng) {
        let n = csr.nrows();
        let x: Vec<T> = (0..n)
            .map(|_| T::from_f64(rng.random_range(-1.0..1.0)))
            .collect();
        let mut want = vec![T::zero(); n];
        csr.mul_vec(&x, &mut want).expect("csr product");
        for kernel in ProductKernel::available::<T>() {
            let product = SparseProduct::with_kernel(csr, kernel).expect("layout");
            let mut y = vec![T::from_f64(f64::NAN); n];
            product.mul_vec(&x, &mut y).expect("product");
            assert_eq!(bits(&y), bits(&want), "n = {n}, {kernel}");
            // The rows of one granule on, as a thread of a split run asks for them.
            let g = product.row_granule();
            if n > 2 * g {
                let mut part = vec![T::from_f64(f64::NAN); n - g];
                product.mul_rows_trusted(g, &x, &mut part);
                assert_eq!(bits(&part), bits(&want[g..]), "n = {n}, {kernel}, rows");
            }
        }
        // The portable blocked kernel (the reference of the permute kernel) on every CPU.
        let blocked = Blocked::new(csr, 0..n).expect("blocked");
        let mut y = vec![T::from_f64(f64::NAN); n];
        crate::real::mul_blocked_portable(blocked.view(), &x, &mut y);
        assert_eq!(bits(&y), bits(&want), "n = {n}, portable blocked");
    }

    #[test]
    fn every_kernel_gives_the_bits_of_the_csr_product() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for (n, density) in [
            (1, 1.0),
            (7, 0.5),
            (8, 0.2),
            (9, 0.2),
            (100, 0.1),
            (203, 0.3),
        ] {
            let csr = random(n, density, &mut rng);
            check(&csr, &mut rng);
            check(&csr.cast::<f32>(), &mut rng);
        }
        // Rows of very different lengths: padding in every layout.
        let mut dense = ndarray::Array2::zeros((130, 130));
        for r in 0..130 {
            for c in (0..130).filter(|c| (c * 7 + r) % (r % 13 + 1) == 0) {
                dense[(r, c)] = (r as f64 - c as f64) * 0.01;
            }
        }
        let csr = CsrMatrix::from_dense(&dense).expect("csr");
        check(&csr, &mut rng);
        check(&csr.cast::<f32>(), &mut rng);
    }

    #[test]
    fn the_parallel_product_is_the_sequential_one_bit_for_bit() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let a = random(1500, 0.1, &mut rng);
        let x: Vec<f64> = (0..1500).map(|_| rng.random_range(-1.0..1.0)).collect();
        let mut sequential = vec![0.0; 1500];
        a.mul_vec(&x, &mut sequential).expect("product");
        for kernel in ProductKernel::available::<f64>() {
            let product = SparseProduct::with_kernel(&a, kernel).expect("layout");
            assert!(product.work() >= PARALLEL_PRODUCT_ENTRIES);
            for threads in [2, 3, 8] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .expect("a thread pool");
                let mut parallel = vec![f64::NAN; 1500];
                pool.install(|| product.mul_vec_parallel_trusted(&x, &mut parallel));
                assert_eq!(
                    bits(&parallel),
                    bits(&sequential),
                    "{kernel}, {threads} threads"
                );
            }
        }
    }

    #[test]
    fn wrong_lengths_are_errors() {
        let csr: CsrMatrix<f64> =
            CsrMatrix::from_dense(&ndarray::Array2::eye(10)).expect("identity");
        let product = SparseProduct::new(&csr).expect("product");
        assert!(product.mul_vec(&[0.0; 9], &mut [0.0; 10]).is_err());
        assert!(product.mul_vec(&[0.0; 10], &mut [0.0; 11]).is_err());
        assert!(SparseProduct::with_kernel(&csr, ProductKernel::Avx512Permute).is_err());
    }
}
