//! Ridge regression from accumulated sufficient statistics.

use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::linalg::solvers::Solve;
use faer::{Accum, Mat, MatRef, Side};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};

use super::linear::LinearReadout;
use crate::checks::{check_finite_states, check_targets};
use crate::error::{ReservoirError, Result};
use crate::memory::{available, bytes_of, ensure_available, try_vec};
use crate::par::Par;

/// Running sums XᵀX, XᵀY, ΣX, ΣY, ΣY² and the row count, in `f64`.
///
/// Memory is O(F² + F·M) whatever the number of rows, so states can be streamed in chunks,
/// across sequences and batches, and never held whole. Accumulators over disjoint data can be
/// merged. XᵀX is kept in its lower triangle only (half the work of a full product).
///
/// The target sums (XᵀY, ΣY, ΣY²) are of y − s, s a shift per output (the first row added):
/// the scores subtract sums of squares, which for targets far from zero (an offset of 1e6 on
/// a unit-variance series) would cancel to noise; shifted, they are sums of values near the
/// targets' spread. The shift changes only the intercept, which is not penalised.
#[derive(Debug, Clone)]
pub struct RidgeAccumulator {
    gram: Mat<f64>,
    cross: Mat<f64>,
    feature_sums: Vec<f64>,
    target_shift: Vec<f64>,
    target_sums: Vec<f64>,
    target_squares: Vec<f64>,
    rows: usize,
    par: Par,
}

/// A solved ridge regression with its in-sample error.
#[derive(Debug, Clone)]
pub struct RidgeFit {
    /// The trained readout.
    pub readout: LinearReadout,
    /// NRMSE on the accumulated rows (RMSE / population std, averaged over outputs), computed
    /// from the sums without revisiting the states; NaN when a target column is constant
    /// (the intercept fits it, but its NRMSE is undefined).
    pub train_nrmse: f64,
    /// Number of rows the fit used.
    pub rows: usize,
}

/// Copies the lower triangle of `a` (square) into `lower` (zero, column-major) by 64 × 64
/// tiles, so that a row-major XᵀX of a few thousand features is read a tile at a time rather
/// than down a whole strided column for each column written.
fn copy_lower_triangle(a: ArrayView2<f64>, lower: &mut Mat<f64>) {
    const TILE: usize = 64;
    let f = a.nrows();
    for row_tile in (0..f).step_by(TILE) {
        for col_tile in (0..=row_tile).step_by(TILE) {
            for j in col_tile..(col_tile + TILE).min(f) {
                for i in row_tile.max(j)..(row_tile + TILE).min(f) {
                    lower[(i, j)] = a[(i, j)];
                }
            }
        }
    }
}

/// Bytes a ridge regression of `features` × `outputs` needs at its peak: XᵀX and XᵀY in the
/// accumulator, and the (F + 1)² system and its Cholesky factor of the solve.
pub fn ridge_bytes(features: usize, outputs: usize) -> u64 {
    let square = bytes_of(features + 1, features + 1);
    square
        .saturating_mul(3)
        .saturating_add(bytes_of(features + 1, outputs).saturating_mul(2))
        .saturating_mul(8)
}

/// A zero F × M faer matrix, or an out-of-memory error instead of faer's abort.
fn try_zeros(rows: usize, cols: usize) -> Result<Mat<f64>> {
    let mut matrix = Mat::<f64>::new();
    matrix
        .try_reserve(rows, cols)
        .map_err(|_| ReservoirError::OutOfMemory {
            what: format!("a {rows} x {cols} matrix of the ridge regression"),
            needed: bytes_of(rows, cols).saturating_mul(8),
            available: available(),
        })?;
    matrix.resize_with(rows, cols, |_, _| 0.0);
    Ok(matrix)
}

fn faer_view(a: ArrayView2<'_, f64>) -> Option<MatRef<'_, f64>> {
    let (rows, cols) = a.dim();
    a.to_slice()
        .map(|s| MatRef::from_row_major_slice(s, rows, cols))
}

impl RidgeAccumulator {
    /// An empty accumulator for `n_features` inputs and `n_outputs` targets, its XᵀX update on
    /// the threads of `par`.
    ///
    /// # Errors
    /// An out-of-memory error when XᵀX (F² values) and the solve's copy of it cannot fit.
    pub fn new(n_features: usize, n_outputs: usize, par: Par) -> Result<Self> {
        let (f, m) = (n_features, n_outputs);
        ensure_available(
            &format!("the ridge sums of {f} features and {m} outputs"),
            ridge_bytes(f, m),
        )?;
        Ok(Self {
            gram: try_zeros(f, f)?,
            cross: try_zeros(f, m)?,
            feature_sums: try_vec("the ridge sums", f, 0.0)?,
            target_shift: try_vec("the ridge sums", m, 0.0)?,
            target_sums: try_vec("the ridge sums", m, 0.0)?,
            target_squares: try_vec("the ridge sums", m, 0.0)?,
            rows: 0,
            par,
        })
    }

    /// An accumulator holding sums computed elsewhere (the GPU backend accumulates XᵀX on the
    /// device): `gram` is XᵀX (F × F, only its lower triangle is read), `cross` Xᵀ(Y − s)
    /// (F × M), then ΣX (F), the shift s (M), Σ(y − s) (M), Σ(y − s)² (M) over `rows` rows.
    ///
    /// # Errors
    /// A shape error when the parts disagree, an invalid-input error when a value is not finite.
    pub fn from_sums(
        gram: ArrayView2<f64>,
        cross: ArrayView2<f64>,
        feature_sums: &[f64],
        target_shift: &[f64],
        target_sums: &[f64],
        target_squares: &[f64],
        rows: usize,
    ) -> Result<Self> {
        let (f, m) = cross.dim();
        let shapes_agree = gram.dim() == (f, f)
            && feature_sums.len() == f
            && target_shift.len() == m
            && target_sums.len() == m
            && target_squares.len() == m;
        if !shapes_agree {
            return Err(ReservoirError::shape(
                "ridge sums",
                format!("XᵀX {f} x {f}, ΣX {f}, s, ΣY and ΣY² {m} (from XᵀY {f} x {m})"),
                format!(
                    "XᵀX {} x {}, ΣX {}, s {}, ΣY {}, ΣY² {}",
                    gram.nrows(),
                    gram.ncols(),
                    feature_sums.len(),
                    target_shift.len(),
                    target_sums.len(),
                    target_squares.len()
                ),
            ));
        }
        // Row by row over the lower triangle: contiguous reads of a row-major XᵀX.
        let finite = gram
            .rows()
            .into_iter()
            .enumerate()
            .flat_map(|(i, row)| row.into_iter().take(i + 1))
            .chain(cross.iter())
            .chain(feature_sums)
            .chain(target_shift)
            .chain(target_sums)
            .chain(target_squares)
            .all(|v| v.is_finite());
        if !finite {
            return Err(ReservoirError::invalid(
                "ridge sums",
                "a sum is not finite (a state or target was not finite)",
            ));
        }
        let mut acc = Self::new(f, m, Par::Seq)?;
        copy_lower_triangle(gram, &mut acc.gram);
        acc.cross = Mat::from_fn(f, m, |i, k| cross[(i, k)]);
        acc.feature_sums = feature_sums.to_vec();
        acc.target_shift = target_shift.to_vec();
        acc.target_sums = target_sums.to_vec();
        acc.target_squares = target_squares.to_vec();
        acc.rows = rows;
        Ok(acc)
    }

    /// Number of features F.
    pub fn n_features(&self) -> usize {
        self.gram.nrows()
    }

    /// Number of outputs M.
    pub fn n_outputs(&self) -> usize {
        self.cross.ncols()
    }

    /// Rows accumulated so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// XᵀX (F × F, both triangles filled).
    pub fn gram(&self) -> Array2<f64> {
        let f = self.n_features();
        Array2::from_shape_fn((f, f), |(i, j)| self.gram[(i.max(j), i.min(j))])
    }

    /// XᵀY (F × M).
    pub fn cross(&self) -> Array2<f64> {
        Array2::from_shape_fn((self.cross.nrows(), self.cross.ncols()), |(i, k)| {
            self.cross[(i, k)]
        })
    }

    /// ΣX (F).
    pub fn feature_sums(&self) -> &[f64] {
        &self.feature_sums
    }

    /// The shift s the target sums are taken from (M): the first row added.
    pub fn target_shift(&self) -> &[f64] {
        &self.target_shift
    }

    /// Σ(y − s) (M).
    pub fn target_sums(&self) -> &[f64] {
        &self.target_sums
    }

    /// Σ(y − s)² (M).
    pub fn target_squares(&self) -> &[f64] {
        &self.target_squares
    }

    /// Adds rows of states (rows × F) and their targets (rows × M).
    ///
    /// # Errors
    /// Shape errors, or an invalid-input error naming the first non-finite state row or the
    /// first target beyond ±[`MAX_TARGET`](crate::checks::MAX_TARGET).
    pub fn add(&mut self, states: ArrayView2<f64>, targets: ArrayView2<f64>) -> Result<()> {
        let (f, m) = (self.n_features(), self.n_outputs());
        if states.ncols() != f || targets.ncols() != m || states.nrows() != targets.nrows() {
            return Err(ReservoirError::shape(
                "ridge accumulation",
                format!("states r x {f} and targets r x {m}"),
                format!(
                    "states {} x {} and targets {} x {}",
                    states.nrows(),
                    states.ncols(),
                    targets.nrows(),
                    targets.ncols()
                ),
            ));
        }
        check_finite_states("ridge accumulation", &states)?;
        check_targets("ridge accumulation", "targets", &targets)?;
        if self.rows == 0 && targets.nrows() > 0 {
            self.target_shift = targets.row(0).to_vec();
        }
        let states = states.as_standard_layout();
        // Row-major whatever the caller's layout (a column-major copy keeps its layout).
        let mut targets = targets.as_standard_layout().into_owned();
        for mut row in targets.rows_mut() {
            row -= &ArrayView1::from(&self.target_shift);
        }
        let x = faer_view(states.view()).ok_or_else(|| layout_error("states"))?;
        let y = faer_view(targets.view()).ok_or_else(|| layout_error("targets"))?;
        triangular::matmul(
            self.gram.as_mut(),
            BlockStructure::TriangularLower,
            Accum::Add,
            x.transpose(),
            BlockStructure::Rectangular,
            x,
            BlockStructure::Rectangular,
            1.0,
            self.par.faer(),
        );
        matmul(
            self.cross.as_mut(),
            Accum::Add,
            x.transpose(),
            y,
            1.0,
            self.par.faer(),
        );
        for row in states.rows() {
            for (s, v) in self.feature_sums.iter_mut().zip(row) {
                *s += v;
            }
        }
        for row in targets.rows() {
            for ((s, q), v) in self
                .target_sums
                .iter_mut()
                .zip(&mut self.target_squares)
                .zip(row)
            {
                *s += v;
                *q += v * v;
            }
        }
        self.rows += states.nrows();
        Ok(())
    }

    /// Adds the sums of another accumulator over other rows.
    pub fn merge(&mut self, other: &RidgeAccumulator) -> Result<()> {
        if other.n_features() != self.n_features() || other.n_outputs() != self.n_outputs() {
            return Err(ReservoirError::shape(
                "ridge merge",
                format!("{} x {}", self.n_features(), self.n_outputs()),
                format!("{} x {}", other.n_features(), other.n_outputs()),
            ));
        }
        if self.rows == 0 {
            self.target_shift.clone_from(&other.target_shift);
        }
        self.gram += &other.gram;
        self.cross += &other.cross;
        for (a, b) in self.feature_sums.iter_mut().zip(&other.feature_sums) {
            *a += b;
        }
        // The other's target sums, moved to this shift: y − s = (y − s') + d, d = s' − s.
        let n = other.rows as f64;
        for k in 0..self.n_outputs() {
            let d = other.target_shift[k] - self.target_shift[k];
            let (sum, squares) = (other.target_sums[k], other.target_squares[k]);
            self.target_sums[k] += sum + n * d;
            self.target_squares[k] += squares + 2.0 * d * sum + n * d * d;
            if d != 0.0 {
                for (i, &x) in other.feature_sums.iter().enumerate() {
                    self.cross[(i, k)] += d * x;
                }
            }
        }
        self.rows += other.rows;
        Ok(())
    }

    /// Solves `min ‖Y − X·W − 1·cᵀ‖² + λ‖W‖²` (the intercept c is not penalised) by Cholesky
    /// on the augmented normal equations `[XᵀX + λI, Xᵀ1; 1ᵀX, n]·[W; cᵀ] = [XᵀY; 1ᵀY]`.
    ///
    /// # Errors
    /// No rows, a negative or non-finite `ridge`, or a system that is not positive definite
    /// (collinear states with `ridge = 0`: raise `ridge`).
    pub fn solve(&self, ridge: f64) -> Result<RidgeFit> {
        check_solvable(ridge, self.rows)?;
        let (f, m) = (self.n_features(), self.n_outputs());
        let n = self.rows as f64;
        let mut a = try_zeros(f + 1, f + 1)?;
        for j in 0..f {
            for i in j..f {
                a[(i, j)] = self.gram[(i, j)];
            }
            a[(j, j)] += ridge;
            a[(f, j)] = self.feature_sums[j];
        }
        a[(f, f)] = n;
        let mut b = try_zeros(f + 1, m)?;
        for k in 0..m {
            for i in 0..f {
                b[(i, k)] = self.cross[(i, k)];
            }
            b[(f, k)] = self.target_sums[k];
        }
        let llt = a
            .llt(Side::Lower)
            .map_err(|_| not_positive_definite(ridge))?;
        let mut solution = b.clone();
        llt.solve_in_place(solution.as_mut());

        let weights = Array2::from_shape_fn((f, m), |(i, k)| solution[(i, k)]);
        let intercept = Array1::from_shape_fn(m, |k| solution[(f, k)] + self.target_shift[k]);
        let readout = LinearReadout::new(weights, intercept)?;
        // A constant target is fitted (by the intercept), but its NRMSE is undefined.
        let train_nrmse = if self.targets().has_constant_column() {
            f64::NAN
        } else {
            self.score(&readout)?.mean_nrmse()
        };
        Ok(RidgeFit {
            readout,
            train_nrmse,
            rows: self.rows,
        })
    }

    /// Scores `readout` on the accumulated rows from the sums alone, without the states.
    ///
    /// Per output k, with weights w, intercept c and Z = [X, 1]: Σŷ = wᵀΣX + n·c,
    /// Σŷ² = wᵀ(XᵀX)w + 2c·wᵀΣX + n·c², Σyŷ = wᵀ(XᵀY)ₖ + c·ΣYₖ, and the residual sum of
    /// squares Σ(y − ŷ)² = ΣYₖ² − 2Σyŷ + Σŷ². That difference cancels, so the scores carry
    /// the rounding of the sums: against NRMSE from explicit predictions on the same CPU
    /// states, the validation NRMSE agreed to 4e-10 relative for NARMA-10 (N = 500, NRMSE
    /// 0.16; `tests/readout_score.rs`, `tests/sweep.rs`) and to 1.4e-5 relative for
    /// Mackey–Glass one-step (`configs/mackey_glass.toml`: N = 500, f64, NRMSE 1.9e-5), where
    /// the residual is below 4e-10 of ΣY².
    ///
    /// # Errors
    /// A shape error when the readout's features or outputs differ from the accumulator's, an
    /// invalid-input error when there are no rows or a target column is constant (its NRMSE
    /// is undefined).
    pub fn score(&self, readout: &LinearReadout) -> Result<SumScores> {
        let (f, m) = (self.n_features(), self.n_outputs());
        if readout.n_features() != f || readout.n_outputs() != m {
            return Err(ReservoirError::shape(
                "ridge score",
                format!("a readout of {f} features x {m} outputs"),
                format!(
                    "{} features x {} outputs",
                    readout.n_features(),
                    readout.n_outputs()
                ),
            ));
        }
        if self.rows == 0 {
            return Err(ReservoirError::invalid(
                "ridge score",
                "no rows were accumulated",
            ));
        }
        let w = readout.weights();
        let w = faer_view(w.view()).ok_or_else(|| layout_error("readout weights"))?;
        // XᵀX·W from the stored lower triangle L (XᵀX = L + strict(L)ᵀ): L·W + strict(L)ᵀ·W.
        let mut gram_w = try_zeros(f, m)?;
        for (accum, lower, structure) in [
            (
                Accum::Replace,
                self.gram.as_ref(),
                BlockStructure::TriangularLower,
            ),
            (
                Accum::Add,
                self.gram.transpose(),
                BlockStructure::StrictTriangularUpper,
            ),
        ] {
            triangular::matmul(
                gram_w.as_mut(),
                BlockStructure::Rectangular,
                accum,
                lower,
                structure,
                w,
                BlockStructure::Rectangular,
                1.0,
                self.par.faer(),
            );
        }
        let products: Vec<ReadoutProducts> = (0..m)
            .map(|k| {
                let (mut gram, mut sums, mut cross) = (0.0, 0.0, 0.0);
                for i in 0..f {
                    gram += w[(i, k)] * gram_w[(i, k)];
                    sums += w[(i, k)] * self.feature_sums[i];
                    cross += w[(i, k)] * self.cross[(i, k)];
                }
                ReadoutProducts {
                    intercept: readout.intercept()[k],
                    gram,
                    sums,
                    cross,
                }
            })
            .collect();
        self.targets().score(&products)
    }

    /// The target side of the sums, which scores a readout from its products with them.
    pub fn targets(&self) -> TargetSums<'_> {
        TargetSums {
            rows: self.rows,
            shift: &self.target_shift,
            sums: &self.target_sums,
            squares: &self.target_squares,
        }
    }
}

/// An error unless a ridge regression can be solved with penalty `ridge` from sums of `rows`
/// rows.
///
/// # Errors
/// A negative or non-finite `ridge`, or no rows.
pub fn check_solvable(ridge: f64, rows: usize) -> Result<()> {
    if !(ridge.is_finite() && ridge >= 0.0) {
        return Err(ReservoirError::invalid(
            "ridge solve",
            format!("ridge must be >= 0, got {ridge}"),
        ));
    }
    if rows == 0 {
        return Err(ReservoirError::invalid(
            "ridge solve",
            "no rows were accumulated (washout too long?)",
        ));
    }
    Ok(())
}

/// The error of normal equations whose Cholesky factorisation failed.
pub fn not_positive_definite(ridge: f64) -> ReservoirError {
    ReservoirError::numerical(
        "ridge solve",
        format!(
            "the normal equations are not positive definite with ridge = {ridge}; increase \
             readout.ridge"
        ),
    )
}

/// A readout's products with the sums of one output k, all that scoring it from the sums
/// needs of it: with weights w and intercept c, wᵀ(XᵀX)w, wᵀΣX and wᵀXᵀ(Y − s)ₖ.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadoutProducts {
    /// The readout's intercept cₖ, for the targets as given (not shifted).
    pub intercept: f64,
    /// wᵀ(XᵀX)w.
    pub gram: f64,
    /// wᵀΣX.
    pub sums: f64,
    /// wᵀXᵀ(Y − s)ₖ.
    pub cross: f64,
}

/// The target side of ridge sums over `rows` rows: the shift s and Σ(y − s), Σ(y − s)² per
/// output. With a readout's [`ReadoutProducts`] they give its scores on those rows; the
/// products may come from the host ([`RidgeAccumulator::score`]) or from a GPU that holds the
/// feature sums.
#[derive(Debug, Clone, Copy)]
pub struct TargetSums<'a> {
    /// Rows summed.
    pub rows: usize,
    /// The shift s per output.
    pub shift: &'a [f64],
    /// Σ(y − s) per output.
    pub sums: &'a [f64],
    /// Σ(y − s)² per output.
    pub squares: &'a [f64],
}

impl TargetSums<'_> {
    /// Whether the column `k` is constant over the rows (its variance from the sums is not
    /// positive), so that its NRMSE is undefined.
    fn is_constant(&self, k: usize) -> bool {
        let n = self.rows as f64;
        let mean = self.sums[k] / n;
        self.squares[k] / n - mean * mean <= 0.0
    }

    /// Whether some target column is constant over the rows (no rows: none is).
    pub fn has_constant_column(&self) -> bool {
        self.rows > 0 && (0..self.sums.len().min(self.squares.len())).any(|k| self.is_constant(k))
    }

    /// Scores a readout from its products with the sums, one per output.
    ///
    /// Per output k, with c the intercept for the shifted targets: Σŷ = wᵀΣX + n·c,
    /// Σŷ² = wᵀ(XᵀX)w + 2c·wᵀΣX + n·c², Σyŷ = wᵀ(XᵀY)ₖ + c·ΣYₖ, and the residual sum of
    /// squares Σ(y − ŷ)² = ΣYₖ² − 2Σyŷ + Σŷ².
    ///
    /// # Errors
    /// A shape error when the products or target sums do not have one value per output, an
    /// invalid-input error when there are no rows or a target column is constant (its NRMSE
    /// is undefined), a numerical error when an NRMSE overflows.
    pub fn score(&self, products: &[ReadoutProducts]) -> Result<SumScores> {
        let m = products.len();
        if [self.shift.len(), self.sums.len(), self.squares.len()] != [m; 3] {
            return Err(ReservoirError::shape(
                "ridge score",
                format!("target sums of {m} outputs"),
                format!(
                    "{}, {} and {} values",
                    self.shift.len(),
                    self.sums.len(),
                    self.squares.len()
                ),
            ));
        }
        if self.rows == 0 {
            return Err(ReservoirError::invalid(
                "ridge score",
                "no rows were accumulated",
            ));
        }
        let n = self.rows as f64;
        let mut scores = SumScores {
            rows: self.rows,
            nrmse: Vec::with_capacity(m),
            squared_correlation: Vec::with_capacity(m),
        };
        for (k, p) in products.iter().enumerate() {
            // The readout's intercept for the shifted targets the sums are of.
            let c = p.intercept - self.shift[k];
            let (sum_y, sum_y2) = (self.sums[k], self.squares[k]);
            let sum_pred = p.sums + n * c;
            let sum_pred2 = p.gram + 2.0 * c * p.sums + n * c * c;
            let sum_y_pred = p.cross + c * sum_y;
            let rss = (sum_y2 - 2.0 * sum_y_pred + sum_pred2).max(0.0);
            if self.is_constant(k) {
                return Err(ReservoirError::invalid(
                    "ridge score",
                    format!("target column {k} is constant over the accumulated rows"),
                ));
            }
            let mean = sum_y / n;
            let variance = sum_y2 / n - mean * mean;
            let nrmse = (rss / n).sqrt() / variance.sqrt();
            if !nrmse.is_finite() {
                return Err(ReservoirError::numerical(
                    "ridge score",
                    format!("the NRMSE of output {k} overflows f64 (the states or the readout's weights are too large)"),
                ));
            }
            scores.nrmse.push(nrmse);
            let pred_ss = sum_pred2 - sum_pred * sum_pred / n;
            let target_ss = sum_y2 - sum_y * sum_y / n;
            let covariance = sum_y_pred - sum_y * sum_pred / n;
            scores.squared_correlation.push(if pred_ss > 0.0 {
                covariance * covariance / (target_ss * pred_ss)
            } else {
                0.0
            });
        }
        Ok(scores)
    }
}

/// A readout's scores on the rows of a [`RidgeAccumulator`], from its sums alone
/// ([`RidgeAccumulator::score`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SumScores {
    /// Rows scored.
    pub rows: usize,
    /// NRMSE per output: RMSE / population std of the target over the rows.
    pub nrmse: Vec<f64>,
    /// Squared Pearson correlation r²(y, ŷ) per output (0 when the prediction is constant):
    /// memory capacity sums it over the delays.
    pub squared_correlation: Vec<f64>,
}

impl SumScores {
    /// NRMSE averaged over the outputs (the definition of [`crate::metrics::nrmse`]).
    pub fn mean_nrmse(&self) -> f64 {
        self.nrmse.iter().sum::<f64>() / self.nrmse.len() as f64
    }

    /// Σ r² over the outputs: the memory capacity when output k is the input delayed by k.
    pub fn total_squared_correlation(&self) -> f64 {
        self.squared_correlation.iter().sum()
    }
}

fn layout_error(what: &str) -> ReservoirError {
    ReservoirError::invalid("ridge accumulation", format!("{what} are not contiguous"))
}
