//! Predicting with a trained model: the targets of every row of one series (continuing the
//! model's saved state, or from zero), of many series (each from zero), the values that follow
//! a series in closed loop, or the class of every sequence.

use ndarray::{concatenate, s, Array2, ArrayView2, Axis};

use reservoir_core::forecast::closed_loop;
use reservoir_core::readout::LinearReadout;
use reservoir_core::{Reservoir, ReservoirError};

use super::sequences::predict_series;
use crate::device::{Dispatch, Workload};
use crate::error::Result;
use crate::model::{Model, SequenceClassifier};

/// Rows of states held at once while predicting: memory stays O(chunk · N) for any input length.
const PREDICT_CHUNK_ROWS: usize = 4096;

/// Runs `reservoir` from its current state over `inputs` and applies `readout` to every state,
/// a chunk of 4096 rows at a time, calling `progress(rows_done, rows)` after
/// each; the reservoir keeps the final state.
///
/// A fit scores its test rows with this same function, so predicting those rows from the
/// state after training reproduces the fit's test predictions bit for bit.
pub fn predict_rows(
    reservoir: &mut dyn Reservoir,
    readout: &LinearReadout,
    inputs: ArrayView2<'_, f64>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Array2<f64>, ReservoirError> {
    let rows = inputs.nrows();
    let mut predictions = Array2::zeros((rows, readout.n_outputs()));
    for start in (0..rows).step_by(PREDICT_CHUNK_ROWS) {
        let end = (start + PREDICT_CHUNK_ROWS).min(rows);
        let states = reservoir.run(inputs.slice(s![start..end, ..]))?;
        let chunk = readout.predict(states.view())?;
        predictions.slice_mut(s![start..end, ..]).assign(&chunk);
        progress(end, rows);
    }
    Ok(predictions)
}

/// The predictions of `model` for every row of `inputs`, one series that continues in time
/// after the rows the model was last run on (from its saved state), or from the zero state
/// with `reset`; on the device `dispatch` picks. `progress(rows_done, rows)` as
/// [`predict_rows`].
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
    if !reset {
        reservoir.set_state(model.state.view())?;
    }
    Ok(predict_rows(
        reservoir.as_mut(),
        &model.readout,
        inputs,
        progress,
    )?)
}

/// The `steps` values that follow the rows `model` was last run on, each fed back as the next
/// input (closed loop), run on `reservoir` (the model's, on any backend). The first is the
/// readout's output at the model's saved state; with `context` (rows that continue the series),
/// the reservoir runs through them first and the values follow their last row. The model must
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
    reservoir.set_state(model.state.view())?;
    let first = match context {
        Some(rows) if rows.nrows() > 0 => {
            let predictions = predict_rows(reservoir, &model.readout, rows, &mut |_, _| {})?;
            predictions.slice(s![-1.., ..]).to_owned()
        }
        _ => model
            .readout
            .predict(model.state.view().insert_axis(Axis(0)))?,
    };
    let rest = closed_loop(
        reservoir,
        &model.readout,
        first.row(0),
        steps.saturating_sub(1),
    )?;
    if steps == 0 {
        return Ok(rest);
    }
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
    Ok(predict_series(
        reservoir.as_mut(),
        &model.readout,
        inputs,
        progress,
    )?)
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
    Workload {
        sequences: inputs.len(),
        steps: inputs.iter().map(|u| u.nrows()).sum(),
    }
}
