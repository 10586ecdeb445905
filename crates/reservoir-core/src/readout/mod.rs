//! Trained readouts: a linear map from reservoir states to outputs, fitted by ridge regression
//! (batch, from sums of states: [`RidgeAccumulator`]; from rows in memory, in the smaller of
//! the primal and dual forms: [`ridge_from_rows`]) or recursive least squares (online).

mod linear;
mod ridge;
mod rls;
mod rows;

pub use linear::LinearReadout;
pub use ridge::{
    check_solvable, not_positive_definite, ridge_bytes, ReadoutProducts, RidgeAccumulator,
    RidgeFit, SumScores, TargetSums,
};
pub use rls::Rls;
pub use rows::ridge_from_rows;
