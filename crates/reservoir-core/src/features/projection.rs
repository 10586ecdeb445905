//! The projection of states onto their principal components: the covariance of training
//! states summed sequence by sequence, its leading eigenvectors, and their application.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef, Side};
use ndarray::{Array1, Array2, ArrayView2, Axis};
use serde::{Deserialize, Serialize};

use crate::error::{ReservoirError, Result};
use crate::par::Par;

const WHAT: &str = "state projection";

/// States centred on the training mean and projected onto the leading principal components
/// of the training states: `(x − mean) · basis`, basis (width × components).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ProjectionParts")]
pub struct Projection {
    mean: Array1<f64>,
    basis: Array2<f64>,
}

#[derive(Deserialize)]
struct ProjectionParts {
    mean: Array1<f64>,
    basis: Array2<f64>,
}

impl TryFrom<ProjectionParts> for Projection {
    type Error = ReservoirError;
    fn try_from(parts: ProjectionParts) -> Result<Self> {
        Self::new(parts.mean, parts.basis)
    }
}

impl Projection {
    /// A projection from its parts: the mean (width) and the basis (width × components).
    ///
    /// # Errors
    /// Parts whose sizes disagree, no component, or a value that is not finite.
    pub fn new(mean: Array1<f64>, basis: Array2<f64>) -> Result<Self> {
        if basis.nrows() != mean.len() || basis.ncols() == 0 {
            return Err(ReservoirError::shape(
                WHAT,
                format!("a basis of {} rows and at least one column", mean.len()),
                format!("{} × {}", basis.nrows(), basis.ncols()),
            ));
        }
        if mean.iter().chain(basis.iter()).any(|v| !v.is_finite()) {
            return Err(ReservoirError::invalid(WHAT, "values must be finite"));
        }
        Ok(Self { mean, basis })
    }

    /// Width of the states it projects.
    pub fn input_width(&self) -> usize {
        self.mean.len()
    }

    /// The components it projects onto.
    pub fn components(&self) -> usize {
        self.basis.ncols()
    }

    /// The training states' mean.
    pub fn mean(&self) -> &Array1<f64> {
        &self.mean
    }

    /// The principal directions, one column each, the largest variance first.
    pub fn basis(&self) -> &Array2<f64> {
        &self.basis
    }

    /// `states` (T × width) projected: T × components.
    ///
    /// # Errors
    /// States of another width.
    pub fn apply(&self, states: ArrayView2<f64>) -> Result<Array2<f64>> {
        if states.ncols() != self.input_width() {
            return Err(ReservoirError::shape(
                WHAT,
                format!("{} state columns", self.input_width()),
                format!("{} state columns", states.ncols()),
            ));
        }
        let centred = &states - &self.mean;
        Ok(centred.dot(&self.basis))
    }
}

/// Sums of training states (their count, sum and cross products) from which
/// [`StateCovariance::projection`] takes the principal components.
#[derive(Debug, Clone)]
pub struct StateCovariance {
    rows: usize,
    sum: Array1<f64>,
    cross: Mat<f64>,
    par: Par,
}

impl StateCovariance {
    /// Empty sums for states of `width` columns, their products on the threads of `par`.
    ///
    /// # Errors
    /// Out of memory for the width² cross products.
    pub fn new(width: usize, par: Par) -> Result<Self> {
        let cells = width.checked_mul(width).ok_or_else(|| {
            ReservoirError::invalid(WHAT, format!("states of {width} columns are too wide"))
        })?;
        crate::memory::ensure_available("the state covariance", (cells as u64).saturating_mul(8))?;
        Ok(Self {
            rows: 0,
            sum: Array1::zeros(width),
            cross: Mat::zeros(width, width),
            par,
        })
    }

    /// Adds the rows of `states` (T × width).
    ///
    /// # Errors
    /// States of another width.
    pub fn add(&mut self, states: ArrayView2<f64>) -> Result<()> {
        if states.ncols() != self.sum.len() {
            return Err(ReservoirError::shape(
                WHAT,
                format!("{} state columns", self.sum.len()),
                format!("{} state columns", states.ncols()),
            ));
        }
        self.rows += states.nrows();
        self.sum += &states.sum_axis(Axis(0));
        let contiguous = states.as_standard_layout();
        let Some(values) = contiguous.as_slice() else {
            return Err(ReservoirError::invalid(WHAT, "states are not contiguous"));
        };
        let x = MatRef::from_row_major_slice(values, states.nrows(), states.ncols());
        matmul(
            self.cross.as_mut(),
            Accum::Add,
            x.transpose(),
            x,
            1.0,
            self.par.faer(),
        );
        Ok(())
    }

    /// The projection onto the `components` leading principal components of the rows added.
    /// Each direction's sign is fixed (its largest entry positive), so the same states give
    /// the same projection.
    ///
    /// # Errors
    /// More components than the states' width, fewer than two rows added, or a failed
    /// eigendecomposition.
    pub fn projection(&self, components: usize) -> Result<Projection> {
        let width = self.sum.len();
        if components == 0 || components > width {
            return Err(ReservoirError::invalid(
                WHAT,
                format!("components must be in 1..={width} (the states' width), got {components}"),
            ));
        }
        if self.rows < 2 {
            return Err(ReservoirError::invalid(
                WHAT,
                format!("needs at least 2 states to fit, got {}", self.rows),
            ));
        }
        let n = self.rows as f64;
        let mean = &self.sum / n;
        let covariance = Mat::from_fn(width, width, |i, j| {
            (self.cross[(i, j)] - n * mean[i] * mean[j]) / (n - 1.0)
        });
        let eigen = covariance
            .self_adjoint_eigen(Side::Lower)
            .map_err(|e| ReservoirError::invalid(WHAT, format!("eigendecomposition: {e:?}")))?;
        let vectors = eigen.U();
        // Eigenvalues come in non-decreasing order: the leading components are the last columns.
        let basis = Array2::from_shape_fn((width, components), |(i, c)| {
            let column = width - 1 - c;
            let largest = (0..width)
                .map(|r| vectors[(r, column)])
                .fold(
                    0.0_f64,
                    |best, v| if v.abs() > best.abs() { v } else { best },
                );
            let sign = if largest < 0.0 { -1.0 } else { 1.0 };
            sign * vectors[(i, column)]
        });
        Projection::new(mean, basis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn the_leading_component_follows_the_largest_variance() {
        // Points along (1, 1) with a little spread along (1, -1).
        let states = array![
            [2.0, 2.1],
            [-1.0, -0.9],
            [3.0, 2.9],
            [0.0, 0.1],
            [-2.0, -2.1]
        ];
        let mut sums = StateCovariance::new(2, Par::Seq).expect("sums");
        sums.add(states.slice(ndarray::s![..2, ..])).expect("add");
        sums.add(states.slice(ndarray::s![2.., ..])).expect("add");
        let projection = sums.projection(1).expect("fit");
        let direction = projection.basis().column(0).to_vec();
        let half = std::f64::consts::FRAC_1_SQRT_2;
        assert!((direction[0] - half).abs() < 0.01 && (direction[1] - half).abs() < 0.01);
        let projected = projection.apply(states.view()).expect("apply");
        assert_eq!(projected.dim(), (5, 1));
        // Centred: the projections of the training states sum to zero.
        assert!(projected.sum().abs() < 1e-12);
        assert!(
            sums.projection(3).is_err()
                && StateCovariance::new(2, Par::Seq)
                    .unwrap()
                    .projection(1)
                    .is_err()
        );
        assert!(projection.apply(array![[1.0, 2.0, 3.0]].view()).is_err());
    }
}
