//! Ridge regression from accumulated sufficient statistics.

use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::linalg::solvers::Solve;
use faer::{Accum, Mat, MatRef, Par, Side};
use ndarray::{Array1, Array2, ArrayView2};

use super::linear::LinearReadout;
use crate::error::{ReservoirError, Result};

/// Running sums XᵀX, XᵀY, ΣX, ΣY, ΣY² and the row count, in `f64`.
///
/// Memory is O(F² + F·M) whatever the number of rows, so states can be streamed in chunks,
/// across sequences and batches, and never held whole. Accumulators over disjoint data can be
/// merged. XᵀX is kept in its lower triangle only (half the work of a full product).
#[derive(Debug, Clone)]
pub struct RidgeAccumulator {
    gram: Mat<f64>,
    cross: Mat<f64>,
    feature_sums: Vec<f64>,
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
    /// from the sums without revisiting the states.
    pub train_nrmse: f64,
    /// Number of rows the fit used.
    pub rows: usize,
}

fn faer_view(a: ArrayView2<'_, f64>) -> Option<MatRef<'_, f64>> {
    let (rows, cols) = a.dim();
    a.to_slice()
        .map(|s| MatRef::from_row_major_slice(s, rows, cols))
}

impl RidgeAccumulator {
    /// An empty accumulator for `n_features` inputs and `n_outputs` targets. `threads` is the
    /// parallelism of the XᵀX update (1 = this thread only, 0 = every core).
    pub fn new(n_features: usize, n_outputs: usize, threads: usize) -> Self {
        Self {
            gram: Mat::zeros(n_features, n_features),
            cross: Mat::zeros(n_features, n_outputs),
            feature_sums: vec![0.0; n_features],
            target_sums: vec![0.0; n_outputs],
            target_squares: vec![0.0; n_outputs],
            rows: 0,
            par: if threads == 1 {
                Par::Seq
            } else {
                Par::rayon(threads)
            },
        }
    }

    /// An accumulator holding sums computed elsewhere (the GPU backend accumulates XᵀX on the
    /// device): `gram` is XᵀX (F × F, only its lower triangle is read), `cross` XᵀY (F × M),
    /// then ΣX (F), ΣY (M), ΣY² (M) over `rows` rows.
    ///
    /// # Errors
    /// A shape error when the parts disagree, an invalid-input error when a value is not finite.
    pub fn from_sums(
        gram: ArrayView2<f64>,
        cross: ArrayView2<f64>,
        feature_sums: &[f64],
        target_sums: &[f64],
        target_squares: &[f64],
        rows: usize,
    ) -> Result<Self> {
        let (f, m) = cross.dim();
        let shapes_agree = gram.dim() == (f, f)
            && feature_sums.len() == f
            && target_sums.len() == m
            && target_squares.len() == m;
        if !shapes_agree {
            return Err(ReservoirError::shape(
                "ridge sums",
                format!("XᵀX {f} x {f}, ΣX {f}, ΣY and ΣY² {m} (from XᵀY {f} x {m})"),
                format!(
                    "XᵀX {} x {}, ΣX {}, ΣY {}, ΣY² {}",
                    gram.nrows(),
                    gram.ncols(),
                    feature_sums.len(),
                    target_sums.len(),
                    target_squares.len()
                ),
            ));
        }
        let finite = gram
            .indexed_iter()
            .filter(|((i, j), _)| i >= j)
            .map(|(_, v)| v)
            .chain(cross.iter())
            .chain(feature_sums)
            .chain(target_sums)
            .chain(target_squares)
            .all(|v| v.is_finite());
        if !finite {
            return Err(ReservoirError::invalid(
                "ridge sums",
                "a sum is not finite (a state or target was not finite)",
            ));
        }
        let mut acc = Self::new(f, m, 1);
        acc.gram = Mat::from_fn(f, f, |i, j| if i >= j { gram[(i, j)] } else { 0.0 });
        acc.cross = Mat::from_fn(f, m, |i, k| cross[(i, k)]);
        acc.feature_sums = feature_sums.to_vec();
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

    /// ΣY (M).
    pub fn target_sums(&self) -> &[f64] {
        &self.target_sums
    }

    /// ΣY² (M).
    pub fn target_squares(&self) -> &[f64] {
        &self.target_squares
    }

    /// Adds rows of states (rows × F) and their targets (rows × M).
    ///
    /// # Errors
    /// Shape errors, or an invalid-input error naming the first non-finite row.
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
        for (name, a) in [("states", &states), ("targets", &targets)] {
            if let Some(row) = a
                .rows()
                .into_iter()
                .position(|r| r.iter().any(|v| !v.is_finite()))
            {
                return Err(ReservoirError::invalid(
                    "ridge accumulation",
                    format!("{name} row {row} is not finite"),
                ));
            }
        }
        let states = states.as_standard_layout();
        let targets = targets.as_standard_layout();
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
            self.par,
        );
        matmul(
            self.cross.as_mut(),
            Accum::Add,
            x.transpose(),
            y,
            1.0,
            self.par,
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
        self.gram += &other.gram;
        self.cross += &other.cross;
        let pairs = [
            (&mut self.feature_sums, &other.feature_sums),
            (&mut self.target_sums, &other.target_sums),
            (&mut self.target_squares, &other.target_squares),
        ];
        for (mine, theirs) in pairs {
            for (a, b) in mine.iter_mut().zip(theirs) {
                *a += b;
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
        if !(ridge.is_finite() && ridge >= 0.0) {
            return Err(ReservoirError::invalid(
                "ridge solve",
                format!("ridge must be >= 0, got {ridge}"),
            ));
        }
        if self.rows == 0 {
            return Err(ReservoirError::invalid(
                "ridge solve",
                "no rows were accumulated (washout too long?)",
            ));
        }
        let (f, m) = (self.n_features(), self.n_outputs());
        let n = self.rows as f64;
        let mut a = Mat::<f64>::zeros(f + 1, f + 1);
        for j in 0..f {
            for i in j..f {
                a[(i, j)] = self.gram[(i, j)];
            }
            a[(j, j)] += ridge;
            a[(f, j)] = self.feature_sums[j];
        }
        a[(f, f)] = n;
        let mut b = Mat::<f64>::zeros(f + 1, m);
        for k in 0..m {
            for i in 0..f {
                b[(i, k)] = self.cross[(i, k)];
            }
            b[(f, k)] = self.target_sums[k];
        }
        let llt = a.llt(Side::Lower).map_err(|_| {
            ReservoirError::numerical(
                "ridge solve",
                format!("the normal equations are not positive definite with ridge = {ridge}; increase readout.ridge"),
            )
        })?;
        let mut solution = b;
        llt.solve_in_place(solution.as_mut());

        let weights = Array2::from_shape_fn((f, m), |(i, k)| solution[(i, k)]);
        let intercept = Array1::from_shape_fn(m, |k| solution[(f, k)]);
        let readout = LinearReadout::new(weights, intercept)?;
        Ok(RidgeFit {
            train_nrmse: self.nrmse(&readout)?,
            readout,
            rows: self.rows,
        })
    }

    /// NRMSE of `readout` on the accumulated rows (RMSE / population std, averaged over
    /// outputs), from the sums alone: RSS = yᵀy − 2·wᵀZᵀy + wᵀZᵀZw per output, with Z = [X, 1]
    /// and w = [weights; intercept]. Scores a readout on held-out rows whose states were never
    /// kept (a sweep's validation sums).
    ///
    /// # Errors
    /// A shape error when the readout does not fit the sums, an invalid-input error when no
    /// rows were accumulated or a target column is constant over them.
    pub fn nrmse(&self, readout: &LinearReadout) -> Result<f64> {
        let (f, m) = (self.n_features(), self.n_outputs());
        if readout.n_features() != f || readout.n_outputs() != m {
            return Err(ReservoirError::shape(
                "readout scored on ridge sums",
                format!("{f} features x {m} outputs"),
                format!(
                    "{} features x {} outputs",
                    readout.n_features(),
                    readout.n_outputs()
                ),
            ));
        }
        if self.rows == 0 {
            return Err(ReservoirError::invalid(
                "readout scored on ridge sums",
                "no rows were accumulated",
            ));
        }
        let n = self.rows as f64;
        let mut total = 0.0;
        for k in 0..m {
            let w = readout.weights().column(k);
            let c = readout.intercept()[k];
            let mut quad = 0.0;
            for j in 0..f {
                // Z'Z w, using the lower triangle of the Gram matrix.
                let mut zw = self.feature_sums[j] * c;
                for i in 0..f {
                    let g = if i >= j {
                        self.gram[(i, j)]
                    } else {
                        self.gram[(j, i)]
                    };
                    zw += g * w[i];
                }
                quad += w[j] * zw;
            }
            let mut last = n * c;
            for i in 0..f {
                last += self.feature_sums[i] * w[i];
            }
            quad += c * last;
            let cross: f64 = (0..f)
                .map(|i| w[i] * self.cross[(i, k)])
                .chain([c * self.target_sums[k]])
                .sum();
            let rss = (self.target_squares[k] - 2.0 * cross + quad).max(0.0);
            let mean = self.target_sums[k] / n;
            let variance = self.target_squares[k] / n - mean * mean;
            if variance <= 0.0 {
                return Err(ReservoirError::invalid(
                    "ridge sums",
                    format!("target column {k} is constant over the accumulated rows"),
                ));
            }
            total += (rss / n).sqrt() / variance.sqrt();
        }
        Ok(total / m as f64)
    }
}

fn layout_error(what: &str) -> ReservoirError {
    ReservoirError::invalid("ridge accumulation", format!("{what} are not contiguous"))
}
