//! The one interface every reservoir implements, on the CPU and on the GPU.

use ndarray::{Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut2};

use crate::error::{ReservoirError, Result};
use crate::readout::RidgeAccumulator;
use crate::weights::ReservoirWeights;

/// A driven dynamical system that turns an input sequence (T × K) into states (T × N).
///
/// Inputs and states cross this interface as `f64` whatever the reservoir computes in, so a
/// readout trains on any backend's states the same way.
pub trait Reservoir {
    /// Number of units N (columns of the states).
    fn size(&self) -> usize;

    /// Number of input channels K (columns of the inputs).
    fn input_size(&self) -> usize;

    /// Sets the state to zero (and the start of any per-run bookkeeping).
    fn reset(&mut self);

    /// The current state (N).
    fn state(&self) -> Array1<f64>;

    /// Replaces the current state.
    ///
    /// # Errors
    /// A shape error when `state` does not have N entries, or an invalid-input error when one
    /// is not finite.
    fn set_state(&mut self, state: ArrayView1<f64>) -> Result<()>;

    /// Runs over `inputs` (T × K) from the current state, writing the state after each step
    /// into the matching row of `states` (T × N). The reservoir keeps the final state.
    ///
    /// # Errors
    /// A shape error for mismatched arrays, an invalid-input error for a non-finite input.
    fn run_into(&mut self, inputs: ArrayView2<f64>, states: ArrayViewMut2<f64>) -> Result<()>;

    /// [`Reservoir::run_into`] into a new array.
    fn run(&mut self, inputs: ArrayView2<f64>) -> Result<Array2<f64>> {
        let mut states = Array2::zeros((inputs.nrows(), self.size()));
        self.run_into(inputs, states.view_mut())?;
        Ok(states)
    }

    /// The reservoir's own way to run straight into ridge sums, where it has one: the GPU
    /// reservoir adds XᵀX on the device, so its states never cross the bus. `None` (the
    /// default) makes [`crate::readout::accumulate_run`] stream states through the CPU.
    fn as_accumulator(&mut self) -> Option<&mut dyn AccumulateRun> {
        None
    }

    /// The echo-state weights the reservoir runs on (f64, as generated), so a trained model can
    /// store them without generating them again; `None` (the default) for reservoirs without
    /// them (LIF).
    fn echo_state_weights(&self) -> Option<&ReservoirWeights> {
        None
    }

    /// Runs independent sequences (of any lengths), each from the zero state; the reservoir is
    /// left in the final state of the last one.
    fn run_many(&mut self, sequences: &[ArrayView2<f64>]) -> Result<Vec<Array2<f64>>> {
        sequences
            .iter()
            .map(|inputs| {
                self.reset();
                self.run(*inputs)
            })
            .collect()
    }
}

/// A reservoir that accumulates ridge sums where it computes its states
/// (see [`Reservoir::as_accumulator`]).
pub trait AccumulateRun {
    /// Runs over `inputs` (T × K) from the current state and adds every (state, target) row
    /// after the first `washout` rows to `acc`, calling `progress(rows_run, T)` as it goes.
    /// The caller ([`crate::readout::accumulate_run_with_progress`]) has checked the shapes
    /// and that the washout leaves rows; the result equals the CPU streaming path's to
    /// rounding.
    ///
    /// # Errors
    /// Any error of the run or of the accumulation.
    fn accumulate_run(
        &mut self,
        inputs: ArrayView2<f64>,
        targets: ArrayView2<f64>,
        washout: usize,
        acc: &mut RidgeAccumulator,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<()>;
}

/// Checks a `set_state` argument: `size` entries, all finite.
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

/// Checks the shapes of a `run_into` call and that every input is finite.
pub fn check_run_shapes(
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

/// Checks that `inputs` has `input_size` columns and that every input is finite (the input
/// half of [`check_run_shapes`], for runs that keep no states on the host).
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
