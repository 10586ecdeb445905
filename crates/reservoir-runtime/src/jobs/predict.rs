//! Predicting with a trained model: the targets of every row of one series (continuing the
//! model's saved state, or from zero), of many series (each from zero), the values that follow
//! a series in closed loop, or the class of every sequence.

use ndarray::{concatenate, Array2, ArrayView2, Axis};

use reservoir_core::forecast::Continuation;
use reservoir_core::{Reservoir, ReservoirError};

use crate::device::{Dispatch, Workload};
use crate::error::Result;
use crate::model::{Model, SequenceClassifier};

/// The predictions of `model` for every row of `inputs`, one series that continues in time
/// after the rows the model was last run on (from its saved state, last input and output), or
/// from the zero state with `reset`; on the device `dispatch` picks. `progress(rows_done,
/// rows)` as the rows go.
///
/// A fit scores its test rows the same way ([`reservoir_core::architecture::Architecture::predict`]),
/// so predicting those rows from the model as it was after training gives the fit's test
/// predictions bit for bit.
///
/// # Errors
/// Inputs of the wrong width or not finite; any error of building or running the reservoir.
pub fn predict_one_series(
    model: &Model,
    inputs: ArrayView2<'_, f64>,
    reset: bool,
    dispatch: &mut Dispatch,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Array2<f64>> {
    let work = Workload::single(inputs.nrows());
    let mut reservoir = dispatch.build(&model.architecture, &model.weights, work)?;
    let mut from = if reset {
        Continuation::zero(model.architecture.input_size(), model.readout.n_outputs())
    } else {
        continue_from(reservoir.as_mut(), model)?
    };
    Ok(model.architecture.predict(
        reservoir.as_mut(),
        &model.readout,
        inputs,
        &mut from,
        progress,
    )?)
}

/// Sets `reservoir` (the model's) to the model's saved state and returns where its outputs
/// continue from.
///
/// # Errors
/// A reservoir that cannot take the saved state back (NVAR with strides above 1, a deep
/// stack that reads out only some layers: their states do not hold what the next steps need),
/// with the way out: starting from the zero state.
pub fn continue_from(reservoir: &mut dyn Reservoir, model: &Model) -> Result<Continuation> {
    reservoir.set_state(model.state.view()).map_err(|e| {
        ReservoirError::invalid(
            "the model's saved state",
            format!(
                "cannot be continued ({e}); start from the zero state instead (`predict \
                 --reset`, or `continue_state=False` in Python)"
            ),
        )
    })?;
    Ok(model.continuation.clone())
}

/// The `steps` values that follow the rows `model` was last run on, each fed back as the next
/// input (closed loop), run on `reservoir` (the model's, on any backend). The first is the
/// model's output at its saved state; with `context` (rows that continue the series), the
/// model runs through them first and the values follow their last row. The model must
/// predict its own inputs one step ahead (as many outputs as inputs).
///
/// # Errors
/// A model whose outputs are not its inputs, context rows of the wrong width or not finite,
/// and any error of the runs (a prediction that diverged to a non-finite value).
pub fn generate(
    reservoir: &mut dyn Reservoir,
    model: &Model,
    context: Option<ArrayView2<'_, f64>>,
    steps: usize,
) -> Result<Array2<f64>> {
    let architecture = &model.architecture;
    let mut from = continue_from(reservoir, model)?;
    if let Some(rows) = context {
        architecture.predict(reservoir, &model.readout, rows, &mut from, &mut |_, _| {})?;
    }
    let Some(rest) = steps.checked_sub(1) else {
        return Ok(Array2::zeros((0, model.readout.n_outputs())));
    };
    let first = from.last_output.clone().insert_axis(Axis(0));
    let rest = architecture.closed_loop(reservoir, &model.readout, &mut from, rest)?;
    concatenate(Axis(0), &[first.view(), rest.view()]).map_err(|e| {
        ReservoirError::invalid("closed-loop generation", format!("cannot stack: {e}")).into()
    })
}

/// The predictions of `model` for every row of every series of `inputs`, each from the zero
/// state, on the device `dispatch` picks; `progress(series_done, series)`.
///
/// # Errors
/// As [`predict_one_series`].
pub fn predict_many_series(
    model: &Model,
    inputs: &[ArrayView2<'_, f64>],
    dispatch: &mut Dispatch,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<Array2<f64>>> {
    let mut reservoir = dispatch.build(&model.architecture, &model.weights, work(inputs))?;
    Ok(model
        .architecture
        .predict_series(reservoir.as_mut(), &model.readout, inputs, progress)?)
}

/// The class index of every sequence of `inputs` (each from the zero state), by `model`, on
/// the device `dispatch` picks; `progress(sequences_done, sequences)`.
///
/// # Errors
/// As [`predict_one_series`]; a sequence too short for the model's features.
pub fn classify_sequences(
    model: &SequenceClassifier,
    inputs: &[ArrayView2<'_, f64>],
    dispatch: &mut Dispatch,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<usize>> {
    let mut reservoir = dispatch.build(&model.architecture, &model.weights, work(inputs))?;
    Ok(model.classify(reservoir.as_mut(), inputs, progress)?)
}

/// Every sequence's steps: what the device choice weighs.
fn work(inputs: &[ArrayView2<'_, f64>]) -> Workload {
    Workload::many(inputs.len(), inputs.iter().map(|u| u.nrows()).sum())
}
