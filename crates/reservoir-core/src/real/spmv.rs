//! Sparse mat-vec kernels, all summing in one order so that they give the same bits:
//!
//! row r of `A·x` is the chain `acc ← fma(a_rj, x_j, acc)` over the row's non-zeros in
//! increasing column order, from `acc = 0`.
//!
//! Fused multiply-adds round once on every CPU (in hardware, or in libm where the CPU has
//! none), so a product is the same bits on every machine and whichever kernel runs; the block
//! product of many sequences (`spmm.rs`) sums each lane in the same order. One chain per row
//! leaves no parallelism inside a row, so the kernels work on several rows at once: the
//! single-sequence kernels on the sliced layout ([`SlicedRef`]: [`SLICE`] rows side by side,
//! one SIMD lane each) or the blocked one ([`BlockedRef`]: x read from registers by column
//! blocks), the CSR kernel on four rows interleaved.
//!
//! Padding in both layouts is a zero weight on a real column: `fma(0, x, acc)` leaves `acc`
//! unchanged for finite x (`acc` is never −0, so adding ±0 keeps its bits), and every state
//! the engine multiplies is finite (inputs and states are checked).

use super::Real;

/// Rows of the sliced layout side by side: eight lanes of one 256-bit vector of `f32`.
pub(crate) const SLICE: usize = 8;

/// A CSR matrix's arrays, borrowed. Invariants (checked by `CsrMatrix::from_parts`):
/// `row_ptr` is non-decreasing and ends within `col_idx`/`values` (equal lengths), and every
/// column index is less than `x.len()` of any product it is used in.
#[derive(Clone, Copy)]
pub(crate) struct CsrRef<'a, T> {
    pub(crate) row_ptr: &'a [u32],
    pub(crate) col_idx: &'a [u32],
    pub(crate) values: &'a [T],
}

impl<T> CsrRef<'_, T> {
    /// Rows `first..first + count` (the row pointers stay offsets into the whole matrix).
    pub(crate) fn rows(self, first: usize, count: usize) -> Self {
        Self {
            row_ptr: &self.row_ptr[first..=first + count],
            ..self
        }
    }
}

/// A sliced matrix's arrays, borrowed: slice s holds rows `s·SLICE ..` and its entries
/// `slice_start[s]..slice_start[s + 1]` (a multiple of [`SLICE`] apart), entry `j·SLICE + l`
/// being the j-th non-zero of the slice's row l (a zero weight past the row's end).
/// Invariants (checked by `SlicedMatrix::new`): the starts are non-decreasing and end within
/// `col_idx`/`values` (equal lengths), and every column index is less than `x.len()`.
#[derive(Clone, Copy)]
pub struct SlicedRef<'a, T> {
    pub(crate) slice_start: &'a [usize],
    pub(crate) col_idx: &'a [u32],
    pub(crate) values: &'a [T],
}

impl<T> SlicedRef<'_, T> {
    /// Slices `first..first + count`.
    pub(crate) fn slices(self, first: usize, count: usize) -> Self {
        Self {
            slice_start: &self.slice_start[first..=first + count],
            ..self
        }
    }
}

/// Rows of a group of the blocked layout: four vectors of sixteen `f32` lanes, four
/// independent chains (a fused multiply-add's latency is four times its issue interval).
pub(crate) const GROUP_ROWS: usize = 64;
/// Columns of a block of the blocked layout: x's values for them sit in two 512-bit
/// registers, and a two-register permute fetches sixteen of them at once.
pub(crate) const BLOCK_COLS: usize = 32;

/// A blocked matrix's arrays, borrowed: group g (rows `g·GROUP_ROWS ..`) has the
/// non-empty column blocks `groups[g].0..groups[g + 1].0` of `blocks` and the vectors
/// `groups[g].1..groups[g + 1].1`. A block `(b, depth)` covers columns `b·BLOCK_COLS ..` and
/// holds `depth` entries per row; entry j of the group's rows is four vectors (16 rows each,
/// in row order), each vector 16 values and 16 column offsets within the block (a zero weight
/// at offset 0 past a row's entries in the block). Invariants (checked by the builder in
/// `sparse/product.rs`): the ranges are non-decreasing and agree with the depths, and each
/// block's columns start below `x.len()`.
#[derive(Clone, Copy)]
pub struct BlockedRef<'a, T> {
    pub(crate) groups: &'a [(usize, usize)],
    pub(crate) blocks: &'a [(u32, u32)],
    pub(crate) offsets: &'a [[u8; 16]],
    pub(crate) values: &'a [[T; 16]],
}

impl<T> BlockedRef<'_, T> {
    /// Groups `first..first + count`.
    pub(crate) fn groups(self, first: usize, count: usize) -> Self {
        Self {
            groups: &self.groups[first..=first + count],
            ..self
        }
    }
}

/// The single-sequence product kernels; all give the same bits (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProductKernel {
    /// Portable code: a slice's eight rows as eight scalar chains.
    Scalar,
    /// AVX2: a slice's rows in the lanes of a vector, x read by hardware gathers.
    Avx2Gather,
    /// AVX2: a slice's rows in the lanes of a vector assembled from scalar loads of x (for
    /// cores whose gathers are slow).
    Avx2Assembled,
    /// AVX-512 (`f32`): the blocked layout, x fetched from registers by permutes.
    Avx512Permute,
    /// AVX2 and FMA: W dense by columns, tiles of rows in registers (`dense.rs`).
    DenseAvx2,
    /// AVX-512: W dense by columns, tiles of rows in registers.
    DenseAvx512,
}

impl ProductKernel {
    /// A short name for reports and benchmark labels.
    pub fn name(self) -> &'static str {
        match self {
            ProductKernel::Scalar => "scalar",
            ProductKernel::Avx2Gather => "avx2-gather",
            ProductKernel::Avx2Assembled => "avx2-assembled",
            ProductKernel::Avx512Permute => "avx512-permute",
            ProductKernel::DenseAvx2 => "dense-avx2",
            ProductKernel::DenseAvx512 => "dense-avx512",
        }
    }

    /// The kernels this CPU can run on values of type `T`.
    pub fn available<T: Real>() -> Vec<ProductKernel> {
        let mut kernels = vec![ProductKernel::Scalar];
        if has_avx2_fma() {
            kernels.extend([
                ProductKernel::Avx2Gather,
                ProductKernel::Avx2Assembled,
                ProductKernel::DenseAvx2,
            ]);
        }
        if has_avx512f() {
            if T::BLOCKED {
                kernels.push(ProductKernel::Avx512Permute);
            }
            kernels.push(ProductKernel::DenseAvx512);
        }
        kernels
    }

    /// Whether the kernel reads the blocked layout.
    pub(crate) fn blocked(self) -> bool {
        self == ProductKernel::Avx512Permute
    }

    /// Whether the kernel reads W dense by columns.
    pub(crate) fn dense(self) -> bool {
        matches!(self, ProductKernel::DenseAvx2 | ProductKernel::DenseAvx512)
    }
}

impl std::fmt::Display for ProductKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether this CPU has AVX2 and FMA (the x86 kernels need both).
pub(crate) fn has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this CPU has AVX-512F (and AVX2 and FMA, which every such CPU has).
pub(crate) fn has_avx512f() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        has_avx2_fma() && std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `y ← A·x` in `f32` for the groups of a blocked matrix (`y` holds their rows, the last
/// group's possibly fewer than [`GROUP_ROWS`]), by permutes where this CPU has AVX-512F.
///
/// # Panics
/// When `y` has more rows than `m`'s groups.
pub(super) fn mul_blocked_f32(m: BlockedRef<'_, f32>, x: &[f32], y: &mut [f32]) {
    assert!(
        y.len() <= (m.groups.len() - 1) * GROUP_ROWS,
        "blocked product lengths"
    );
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512f() {
            // SAFETY: the CPU has AVX-512F; the BlockedRef invariants hold and y fits.
            return unsafe { x86::f32_permute(m, x, y) };
        }
    }
    mul_blocked_portable(m, x, y)
}

/// The portable blocked kernel: the permute kernel's arithmetic, lane by lane.
///
/// # Panics
/// When `y` has more rows than `m`'s groups, or the arrays disagree with the ranges.
pub(crate) fn mul_blocked_portable<T: Real>(m: BlockedRef<'_, T>, x: &[T], y: &mut [T]) {
    for (out, g) in y.chunks_mut(GROUP_ROWS).zip(m.groups.windows(2)) {
        let mut acc = [T::zero(); GROUP_ROWS];
        let mut v = g[0].1;
        for &(block, depth) in &m.blocks[g[0].0..g[1].0] {
            let base = block as usize * BLOCK_COLS;
            for _ in 0..depth {
                for chunk in acc.chunks_exact_mut(16) {
                    for (lane, a) in chunk.iter_mut().enumerate() {
                        // Past x the permute kernel's registers hold zeros.
                        let column = base + m.offsets[v][lane] as usize;
                        let xv = x.get(column).copied().unwrap_or_else(T::zero);
                        *a = m.values[v][lane].mul_add(xv, *a);
                    }
                    v += 1;
                }
            }
        }
        out.copy_from_slice(&acc[..out.len()]);
    }
}

/// `y ← A·x` for a CSR matrix, four rows' chains interleaved.
///
/// # Panics
/// When a column index is out of `x` or `y` has more entries than `m` rows.
pub(crate) fn mul_csr<T: Real>(m: CsrRef<'_, T>, x: &[T], y: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2_fma() {
            // SAFETY: the CPU has FMA; the function is safe code compiled for it.
            return unsafe { x86::mul_csr_fma(m, x, y) };
        }
    }
    mul_csr_portable(m, x, y)
}

#[inline(always)]
fn mul_csr_portable<T: Real>(m: CsrRef<'_, T>, x: &[T], y: &mut [T]) {
    let chain = |range: std::ops::Range<usize>, mut acc: T| {
        for k in range {
            acc = m.values[k].mul_add(x[m.col_idx[k] as usize], acc);
        }
        acc
    };
    let done = y.len() - y.len() % 4;
    let mut groups = y.chunks_exact_mut(4);
    for (g, out) in (&mut groups).enumerate() {
        let p = &m.row_ptr[4 * g..4 * g + 5];
        let start = [p[0], p[1], p[2], p[3]].map(|v| v as usize);
        let len = [0, 1, 2, 3].map(|i| (p[i + 1] - p[i]) as usize);
        let common = len.into_iter().min().unwrap_or(0);
        let mut acc = [T::zero(); 4];
        for j in 0..common {
            for i in 0..4 {
                let k = start[i] + j;
                acc[i] = m.values[k].mul_add(x[m.col_idx[k] as usize], acc[i]);
            }
        }
        for i in 0..4 {
            out[i] = chain(start[i] + common..start[i] + len[i], acc[i]);
        }
    }
    for (r, out) in groups.into_remainder().iter_mut().enumerate() {
        let row = done + r;
        *out = chain(
            m.row_ptr[row] as usize..m.row_ptr[row + 1] as usize,
            T::zero(),
        );
    }
}

/// The portable sliced kernel, the plainest statement of the order.
#[inline(always)]
fn mul_sliced_scalar<T: Real>(m: SlicedRef<'_, T>, x: &[T], y: &mut [T]) {
    for (out, s) in y.chunks_mut(SLICE).zip(m.slice_start.windows(2)) {
        let range = s[0]..s[1];
        let mut acc = [T::zero(); SLICE];
        let entries = m.col_idx[range.clone()]
            .chunks_exact(SLICE)
            .zip(m.values[range].chunks_exact(SLICE));
        for (cols, vals) in entries {
            for lane in 0..SLICE {
                acc[lane] = vals[lane].mul_add(x[cols[lane] as usize], acc[lane]);
            }
        }
        out.copy_from_slice(&acc[..out.len()]);
    }
}

/// `y ← A·x` in `f32` for the slices of `m` (`y` holds their rows, the last slice's possibly
/// fewer than [`SLICE`]) with `kernel`, or with the portable kernel where this CPU cannot run
/// it (or `kernel` reads the blocked layout).
///
/// # Panics
/// When `y` has more rows than `m`'s slices, or a column index is out of `x` (portable kernel;
/// the SIMD kernels rely on the layout's invariants).
pub(super) fn mul_sliced_f32(
    kernel: ProductKernel,
    m: SlicedRef<'_, f32>,
    x: &[f32],
    y: &mut [f32],
) {
    assert!(
        y.len() <= (m.slice_start.len() - 1) * SLICE,
        "sliced product lengths"
    );
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA; the SlicedRef invariants hold and y fits.
            return unsafe {
                match kernel {
                    ProductKernel::Avx2Gather => x86::f32_gather(m, x, y),
                    ProductKernel::Avx2Assembled => x86::f32_assembled(m, x, y),
                    // The others read other layouts: the sliced scalar kernel stands in.
                    ProductKernel::Scalar
                    | ProductKernel::Avx512Permute
                    | ProductKernel::DenseAvx2
                    | ProductKernel::DenseAvx512 => x86::sliced_scalar_fma(m, x, y),
                }
            };
        }
    }
    let _ = kernel;
    mul_sliced_scalar(m, x, y)
}

/// [`mul_sliced_f32`] in `f64`.
pub(super) fn mul_sliced_f64(
    kernel: ProductKernel,
    m: SlicedRef<'_, f64>,
    x: &[f64],
    y: &mut [f64],
) {
    assert!(
        y.len() <= (m.slice_start.len() - 1) * SLICE,
        "sliced product lengths"
    );
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2_fma() {
            // SAFETY: as in `mul_sliced_f32`.
            return unsafe {
                match kernel {
                    ProductKernel::Avx2Gather => x86::f64_gather(m, x, y),
                    ProductKernel::Avx2Assembled => x86::f64_assembled(m, x, y),
                    // The others read other layouts: the sliced scalar kernel stands in.
                    ProductKernel::Scalar
                    | ProductKernel::Avx512Permute
                    | ProductKernel::DenseAvx2
                    | ProductKernel::DenseAvx512 => x86::sliced_scalar_fma(m, x, y),
                }
            };
        }
    }
    let _ = kernel;
    mul_sliced_scalar(m, x, y)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{
        mul_csr_portable, mul_sliced_scalar, BlockedRef, CsrRef, Real, SlicedRef, BLOCK_COLS,
        GROUP_ROWS, SLICE,
    };
    use std::arch::x86_64::*;

    /// The portable CSR kernel with hardware fused multiply-adds.
    #[target_feature(enable = "fma")]
    pub(super) fn mul_csr_fma<T: Real>(m: CsrRef<'_, T>, x: &[T], y: &mut [T]) {
        mul_csr_portable(m, x, y)
    }

    /// The portable sliced kernel with hardware fused multiply-adds.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn sliced_scalar_fma<T: Real>(m: SlicedRef<'_, T>, x: &[T], y: &mut [T]) {
        mul_sliced_scalar(m, x, y)
    }

    /// Writes a slice's `lanes` to `out` (its rows, at most [`SLICE`]).
    #[inline(always)]
    fn store<T: Copy>(out: &mut [T], lanes: &[T; SLICE]) {
        out.copy_from_slice(&lanes[..out.len()]);
    }

    /// Eight lanes per hardware gather.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA; the [`SlicedRef`] invariants hold for `x`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn f32_gather(m: SlicedRef<'_, f32>, x: &[f32], y: &mut [f32]) {
        let (cols, vals, xp) = (m.col_idx.as_ptr(), m.values.as_ptr(), x.as_ptr());
        for (out, s) in y.chunks_mut(SLICE).zip(m.slice_start.windows(2)) {
            let mut acc = _mm256_setzero_ps();
            // SAFETY (all loads): s[0]..s[1] lies within col_idx/values, a multiple of SLICE
            // long, and every column index is < x.len().
            for k in (s[0]..s[1]).step_by(SLICE) {
                let idx = _mm256_loadu_si256(cols.add(k).cast());
                let gathered = _mm256_i32gather_ps::<4>(xp, idx);
                acc = _mm256_fmadd_ps(_mm256_loadu_ps(vals.add(k)), gathered, acc);
            }
            let mut lanes = [0.0f32; SLICE];
            _mm256_storeu_ps(lanes.as_mut_ptr(), acc);
            store(out, &lanes);
        }
    }

    /// Two entries' values of x from one 64-bit load of their column indices (loads bound the
    /// assembled kernels, and this halves the index loads).
    ///
    /// # Safety
    /// Entries `j` and `j + 1` lie within `cols` and their columns within `x`.
    #[inline(always)]
    unsafe fn pair<T: Copy>(cols: *const u32, x: *const T, j: usize) -> (T, T) {
        let both = cols.add(j).cast::<u64>().read_unaligned();
        (
            *x.add((both & 0xffff_ffff) as usize),
            *x.add((both >> 32) as usize),
        )
    }

    /// Eight lanes per vector assembled from eight scalar loads of x.
    ///
    /// # Safety
    /// As [`f32_gather`].
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn f32_assembled(m: SlicedRef<'_, f32>, x: &[f32], y: &mut [f32]) {
        let (cols, vals, xp) = (m.col_idx.as_ptr(), m.values.as_ptr(), x.as_ptr());
        for (out, s) in y.chunks_mut(SLICE).zip(m.slice_start.windows(2)) {
            let mut acc = _mm256_setzero_ps();
            // SAFETY: as in `f32_gather`.
            for k in (s[0]..s[1]).step_by(SLICE) {
                let (a0, a1) = pair(cols, xp, k);
                let (a2, a3) = pair(cols, xp, k + 2);
                let (a4, a5) = pair(cols, xp, k + 4);
                let (a6, a7) = pair(cols, xp, k + 6);
                let assembled = _mm256_setr_ps(a0, a1, a2, a3, a4, a5, a6, a7);
                acc = _mm256_fmadd_ps(_mm256_loadu_ps(vals.add(k)), assembled, acc);
            }
            let mut lanes = [0.0f32; SLICE];
            _mm256_storeu_ps(lanes.as_mut_ptr(), acc);
            store(out, &lanes);
        }
    }

    /// The blocked layout: per column block, x's 32 values in two registers, each vector of
    /// entries fetching its 16 from them by one permute; a group's four vectors of rows are
    /// four independent chains.
    ///
    /// # Safety
    /// The CPU has AVX-512F; the [`BlockedRef`] invariants hold for `x`.
    #[target_feature(enable = "avx512f,avx2,fma")]
    pub(super) unsafe fn f32_permute(m: BlockedRef<'_, f32>, x: &[f32], y: &mut [f32]) {
        let (offsets, vals) = (m.offsets.as_ptr(), m.values.as_ptr());
        for (out, g) in y.chunks_mut(GROUP_ROWS).zip(m.groups.windows(2)) {
            let mut acc = [_mm512_setzero_ps(); 4];
            let mut v = g[0].1;
            for &(block, depth) in &m.blocks[g[0].0..g[1].0] {
                let base = block as usize * BLOCK_COLS;
                // The block's columns within x (the last block may run past it: zeros there).
                let within = x.len().saturating_sub(base).min(BLOCK_COLS);
                let mask = ((1u64 << within) - 1) as u32;
                let low = _mm512_maskz_loadu_ps(mask as u16, x.as_ptr().add(base));
                let high = _mm512_maskz_loadu_ps((mask >> 16) as u16, x.as_ptr().add(base + 16));
                for _ in 0..depth {
                    for a in &mut acc {
                        // SAFETY: v stays below the group's end (the depths agree with it).
                        let idx = _mm512_cvtepu8_epi32(_mm_loadu_si128(offsets.add(v).cast()));
                        let fetched = _mm512_permutex2var_ps(low, idx, high);
                        *a = _mm512_fmadd_ps(_mm512_loadu_ps(vals.add(v).cast()), fetched, *a);
                        v += 1;
                    }
                }
            }
            let mut lanes = [0.0f32; GROUP_ROWS];
            for (i, a) in acc.iter().enumerate() {
                _mm512_storeu_ps(lanes.as_mut_ptr().add(16 * i), *a);
            }
            out.copy_from_slice(&lanes[..out.len()]);
        }
    }

    /// Eight lanes as two vectors of four, each filled by a hardware gather.
    ///
    /// # Safety
    /// As [`f32_gather`].
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn f64_gather(m: SlicedRef<'_, f64>, x: &[f64], y: &mut [f64]) {
        let (cols, vals, xp) = (m.col_idx.as_ptr(), m.values.as_ptr(), x.as_ptr());
        for (out, s) in y.chunks_mut(SLICE).zip(m.slice_start.windows(2)) {
            let (mut low, mut high) = (_mm256_setzero_pd(), _mm256_setzero_pd());
            for k in (s[0]..s[1]).step_by(SLICE) {
                let g0 = _mm256_i32gather_pd::<8>(xp, _mm_loadu_si128(cols.add(k).cast()));
                let g1 = _mm256_i32gather_pd::<8>(xp, _mm_loadu_si128(cols.add(k + 4).cast()));
                low = _mm256_fmadd_pd(_mm256_loadu_pd(vals.add(k)), g0, low);
                high = _mm256_fmadd_pd(_mm256_loadu_pd(vals.add(k + 4)), g1, high);
            }
            let mut lanes = [0.0f64; SLICE];
            _mm256_storeu_pd(lanes.as_mut_ptr(), low);
            _mm256_storeu_pd(lanes.as_mut_ptr().add(4), high);
            store(out, &lanes);
        }
    }

    /// Eight lanes as two vectors of four, each assembled from four scalar loads of x.
    ///
    /// # Safety
    /// As [`f32_gather`].
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn f64_assembled(m: SlicedRef<'_, f64>, x: &[f64], y: &mut [f64]) {
        let (cols, vals, xp) = (m.col_idx.as_ptr(), m.values.as_ptr(), x.as_ptr());
        for (out, s) in y.chunks_mut(SLICE).zip(m.slice_start.windows(2)) {
            let (mut low, mut high) = (_mm256_setzero_pd(), _mm256_setzero_pd());
            // SAFETY: as in `f32_gather`.
            for k in (s[0]..s[1]).step_by(SLICE) {
                let (a0, a1) = pair(cols, xp, k);
                let (a2, a3) = pair(cols, xp, k + 2);
                let (a4, a5) = pair(cols, xp, k + 4);
                let (a6, a7) = pair(cols, xp, k + 6);
                let (v0, v1) = (
                    _mm256_setr_pd(a0, a1, a2, a3),
                    _mm256_setr_pd(a4, a5, a6, a7),
                );
                low = _mm256_fmadd_pd(_mm256_loadu_pd(vals.add(k)), v0, low);
                high = _mm256_fmadd_pd(_mm256_loadu_pd(vals.add(k + 4)), v1, high);
            }
            let mut lanes = [0.0f64; SLICE];
            _mm256_storeu_pd(lanes.as_mut_ptr(), low);
            _mm256_storeu_pd(lanes.as_mut_ptr().add(4), high);
            store(out, &lanes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Random CSR with row lengths 0..=70 so slices of uneven rows and every padding occur.
    fn random_csr(seed: u64, n: usize) -> (Vec<u32>, Vec<u32>, Vec<f64>, Vec<f64>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (mut row_ptr, mut cols, mut vals) = (vec![0u32], vec![], vec![]);
        for row in 0..n {
            let len = (row * 37 + seed as usize) % 71;
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

    /// The order of the module doc, one row at a time: the reference every kernel must match
    /// bit for bit.
    fn reference<T: Real>(m: CsrRef<'_, T>, x: &[T]) -> Vec<T> {
        m.row_ptr
            .windows(2)
            .map(|w| {
                (w[0] as usize..w[1] as usize).fold(T::zero(), |acc, k| {
                    m.values[k].mul_add(x[m.col_idx[k] as usize], acc)
                })
            })
            .collect()
    }

    /// The sliced layout of a CSR matrix, built here independently of `SlicedMatrix`.
    fn sliced<T: Real>(m: CsrRef<'_, T>) -> (Vec<usize>, Vec<u32>, Vec<T>) {
        let rows = m.row_ptr.len() - 1;
        let (mut starts, mut cols, mut vals) = (vec![0], vec![], vec![]);
        for first in (0..rows).step_by(SLICE) {
            let lanes = first..(first + SLICE).min(rows);
            let len = |r: usize| (m.row_ptr[r + 1] - m.row_ptr[r]) as usize;
            let longest = lanes.clone().map(len).max().unwrap_or(0);
            for j in 0..longest {
                for lane in 0..SLICE {
                    let r = first + lane;
                    if r < rows && j < len(r) {
                        let k = m.row_ptr[r] as usize + j;
                        cols.push(m.col_idx[k]);
                        vals.push(m.values[k]);
                    } else {
                        cols.push(0);
                        vals.push(T::zero());
                    }
                }
            }
            starts.push(cols.len());
        }
        (starts, cols, vals)
    }

    fn same_bits<T: Real>(a: &[T], b: &[T]) -> bool {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(p, q)| p.as_f64().to_bits() == q.as_f64().to_bits())
    }

    fn check_all<T: Real>(
        m: CsrRef<'_, T>,
        x: &[T],
        mul: fn(ProductKernel, SlicedRef<'_, T>, &[T], &mut [T]),
        what: &str,
    ) {
        let want = reference(m, x);
        let mut y = vec![T::from_f64(f64::NAN); want.len()];
        mul_csr(m, x, &mut y);
        assert!(same_bits(&y, &want), "{what}: CSR kernel");
        let (starts, cols, vals) = sliced(m);
        let s = SlicedRef {
            slice_start: &starts,
            col_idx: &cols,
            values: &vals,
        };
        for kernel in ProductKernel::available::<T>()
            .into_iter()
            .filter(|k| !k.blocked())
        {
            let mut y = vec![T::from_f64(f64::NAN); want.len()];
            mul(kernel, s, x, &mut y);
            assert!(same_bits(&y, &want), "{what}: {kernel}");
            // The rows of some slices only, as a thread of a split run asks for them.
            let mut part = vec![T::from_f64(f64::NAN); 2 * SLICE];
            mul(kernel, s.slices(3, 2), x, &mut part);
            assert!(
                same_bits(&part, &want[3 * SLICE..5 * SLICE]),
                "{what}: {kernel} rows"
            );
        }
    }

    #[test]
    fn every_kernel_gives_the_bits_of_the_reference_order() {
        for (seed, n) in [(0, 300), (1, 301), (2, 47), (3, 64)] {
            let (row_ptr, col_idx, vals, x) = random_csr(seed, n);
            let m64 = CsrRef {
                row_ptr: &row_ptr,
                col_idx: &col_idx,
                values: &vals,
            };
            let vals32: Vec<f32> = vals.iter().map(|&v| v as f32).collect();
            let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let m32 = CsrRef {
                row_ptr: &row_ptr,
                col_idx: &col_idx,
                values: &vals32,
            };
            check_all(m64, &x, mul_sliced_f64, &format!("f64 n = {n}"));
            check_all(m32, &x32, mul_sliced_f32, &format!("f32 n = {n}"));
        }
    }

    #[test]
    fn the_reference_order_is_the_exact_sum_to_rounding() {
        let (row_ptr, col_idx, vals, x) = random_csr(9, 300);
        let m = CsrRef {
            row_ptr: &row_ptr,
            col_idx: &col_idx,
            values: &vals,
        };
        for (row, (got, w)) in reference(m, &x).iter().zip(row_ptr.windows(2)).enumerate() {
            let exact: f64 = (w[0] as usize..w[1] as usize)
                .map(|k| vals[k] * x[col_idx[k] as usize])
                .sum();
            assert!((got - exact).abs() < 1e-12, "row {row}");
        }
    }
}
