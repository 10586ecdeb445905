//! The argument checks every backend shares: a reservoir on any device rejects the same calls
//! with the same errors because its implementation calls these.

use ndarray::{ArrayView1, ArrayView2, ArrayViewMut2};

use crate::error::{ReservoirError, Result};
use crate::spikes::SpikePattern;

/// Checks a state vector (a `set_state` argument): `size` entries, all finite.
pub fn check_state(size: usize, state: &ArrayView1<f64>) -> Result<()> {
    if state.len() != size {
        return Err(ReservoirError::shape("reservoir state", size, state.len()));
    }
    if state.iter().any(|v| !v.is_finite()) {
        return Err(ReservoirError::invalid(
            "reservoir state",
            "values must be finite",
        ));
    }
    Ok(())
}

/// Checks the arguments of `run_into`: the inputs as [`check_inputs`] does, and states of
/// T × `size` for T input rows.
pub fn check_run(
    size: usize,
    input_size: usize,
    inputs: &ArrayView2<f64>,
    states: &ArrayViewMut2<f64>,
) -> Result<()> {
    check_inputs(input_size, inputs)?;
    if states.dim() != (inputs.nrows(), size) {
        return Err(ReservoirError::shape(
            "reservoir states",
            format!("{} x {size}", inputs.nrows()),
            format!("{} x {}", states.nrows(), states.ncols()),
        ));
    }
    Ok(())
}

/// Checks that `inputs` has `input_size` columns and that every value is finite, naming the
/// first row and column that is not.
pub fn check_inputs(input_size: usize, inputs: &ArrayView2<f64>) -> Result<()> {
    if inputs.ncols() != input_size {
        return Err(ReservoirError::shape(
            "reservoir inputs",
            format!("{input_size} columns"),
            format!("{} columns", inputs.ncols()),
        ));
    }
    if let Some(((row, col), _)) = inputs.indexed_iter().find(|(_, v)| !v.is_finite()) {
        return Err(ReservoirError::invalid(
            "reservoir inputs",
            format!("row {row}, column {col} is not finite"),
        ));
    }
    Ok(())
}

/// Checks that a spike pattern has `input_size` channels (one per input of the reservoir).
pub fn check_pattern(input_size: usize, pattern: &SpikePattern) -> Result<()> {
    if pattern.n_neurons() != input_size {
        return Err(ReservoirError::shape(
            "spike pattern channels (the reservoir's input_size)",
            input_size,
            pattern.n_neurons(),
        ));
    }
    Ok(())
}

/// An invalid-input error naming the first row of `a` (called `name`) with a value that is not
/// finite: ridge sums over such a row would be meaningless.
pub fn check_finite_rows(context: &str, name: &str, a: &ArrayView2<f64>) -> Result<()> {
    match a
        .rows()
        .into_iter()
        .position(|r| r.iter().any(|v| !v.is_finite()))
    {
        Some(row) => Err(ReservoirError::invalid(
            context,
            format!("{name} row {row} is not finite"),
        )),
        None => Ok(()),
    }
}
