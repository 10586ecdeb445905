//! Trained readouts: a linear map from reservoir states to outputs, fitted by ridge regression
//! (batch, from sums of states: [`RidgeAccumulator`]) or recursive least squares (online).

mod linear;
mod ridge;
mod rls;

pub use linear::LinearReadout;
pub use ridge::{RidgeAccumulator, RidgeFit, SumScores};
pub use rls::Rls;
