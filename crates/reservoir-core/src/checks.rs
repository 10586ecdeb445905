//! The argument checks every backend shares: a reservoir on any device rejects the same calls
//! with the same errors because its implementation calls these.

use ndarray::{ArrayView1, ArrayView2, ArrayViewMut2};

use crate::error::{ReservoirError, Result};
use crate::spikes::SpikePattern;

/// Checks a state vector (a `set_state` argument, e.g. a state saved in a model file): `size`
/// entries, all finite and within ±[`MAX_INPUT`] (what an f32 state can hold).
pub fn check_state(size: usize, state: &ArrayView1<f64>) -> Result<()> {
    if state.len() != size {
        return Err(ReservoirError::shape("reservoir state", size, state.len()));
    }
    if let Some((unit, &v)) = state
        .indexed_iter()
        .find(|(_, v)| !v.is_finite() || v.abs() > MAX_INPUT)
    {
        return Err(ReservoirError::invalid(
            "reservoir state",
            format!("unit {unit} holds {v:e}: values must be finite and within ±{MAX_INPUT:.4e}"),
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

/// Largest input magnitude: what f32 holds, so every backend (an f32 reservoir on the CPU, a
/// GPU) computes with the same inputs as an f64 one and none turns a huge value into infinity.
pub const MAX_INPUT: f64 = f32::MAX as f64;

/// Checks that `inputs` has `input_size` columns and that every value is finite and within
/// ±[`MAX_INPUT`], naming the first row and column that is not.
pub fn check_inputs(input_size: usize, inputs: &ArrayView2<f64>) -> Result<()> {
    if inputs.ncols() != input_size {
        return Err(ReservoirError::shape(
            "reservoir inputs",
            format!("{input_size} columns"),
            format!("{} columns", inputs.ncols()),
        ));
    }
    if let Some(((row, col), &v)) = inputs
        .indexed_iter()
        .find(|(_, v)| !v.is_finite() || v.abs() > MAX_INPUT)
    {
        let why = if v.is_finite() {
            format!(": {v:e} is beyond ±{MAX_INPUT:.4e}, the range of f32 arithmetic")
        } else {
            " is not finite".to_string()
        };
        return Err(ReservoirError::invalid(
            "reservoir inputs",
            format!("row {row}, column {col}{why}"),
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

/// Largest target magnitude a readout is fitted to or scored on: squares of values up to 1e150,
/// summed over up to 10^8 rows, stay within f64's range, so sums, weights and metrics cannot
/// overflow into infinity or NaN.
pub const MAX_TARGET: f64 = 1e150;

/// Checks that every target (or prediction, when scoring) is finite and within ±[`MAX_TARGET`],
/// naming `name`, the first row and column that is not.
pub fn check_targets(context: &str, name: &str, a: &ArrayView2<f64>) -> Result<()> {
    match a
        .indexed_iter()
        .find(|(_, v)| !v.is_finite() || v.abs() > MAX_TARGET)
    {
        Some(((row, col), &v)) => Err(ReservoirError::invalid(
            context,
            format!(
                "{name} row {row}, column {col} is {v:e}: values must be finite and within \
                 ±{MAX_TARGET:e}, so that their squares can be summed in f64"
            ),
        )),
        None => Ok(()),
    }
}

/// An invalid-input error naming the first row of reservoir states (or features computed from
/// them) with a value that is not finite: inputs are bounded, so such a state means the
/// reservoir's activity overflowed, and ridge sums over it would be meaningless.
pub fn check_finite_states(context: &str, states: &ArrayView2<f64>) -> Result<()> {
    match states
        .rows()
        .into_iter()
        .position(|r| r.iter().any(|v| !v.is_finite()))
    {
        Some(row) => Err(ReservoirError::invalid(
            context,
            format!(
                "reservoir states row {row} is not finite: the reservoir's activity overflowed \
                 (reduce the inputs' magnitude, input_scaling, bias_scaling or spectral_radius)"
            ),
        )),
        None => Ok(()),
    }
}
