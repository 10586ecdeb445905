//! Trained readouts: a linear map from reservoir states to outputs, fitted by ridge regression
//! (batch) or recursive least squares (online).

mod linear;
mod ridge;
mod rls;
mod streaming;

pub use linear::LinearReadout;
pub use ridge::{check_finite_rows, RidgeAccumulator, RidgeFit, SumScores};
pub use rls::Rls;
pub use streaming::{
    accumulate_run, accumulate_run_with_progress, fit_ridge, fit_ridge_with_progress,
    STREAM_CHUNK_ROWS,
};
