//! `reservoir predict`: run a saved model over new inputs and write its predictions.

use std::path::PathBuf;

use ndarray::{s, Array2, ArrayView2};
use reservoir_core::readout::LinearReadout;
use reservoir_core::{Reservoir, ReservoirError};
use reservoir_runtime::model::Model;
use reservoir_runtime::{Device, Dispatch, Workload};

use crate::data::read_inputs;
use crate::device::{self, DeviceArg};
use crate::error::{CliError, CoreContext, Result};
use crate::output::{check_output_folder, csv_bytes, write_output};
use crate::progress;

/// Rows of states held at once while predicting: memory stays O(chunk · N) for any input length.
pub const PREDICT_CHUNK_ROWS: usize = 4096;

/// Arguments of `reservoir predict`.
#[derive(Debug, clap::Args)]
pub struct PredictArgs {
    /// Model file written by `reservoir fit --model`.
    #[arg(long, value_name = "MODEL.bin")]
    pub model: PathBuf,
    /// CSV file with a header row holding the model's input columns.
    #[arg(long, value_name = "IN.csv")]
    pub input: PathBuf,
    /// Where to write the predictions (CSV); standard output when left out.
    #[arg(long, value_name = "OUT.csv")]
    pub output: Option<PathBuf>,
    /// Start from the zero state instead of the state saved with the model (which continues in
    /// time after the last row the model was fitted or tested on).
    #[arg(long)]
    pub reset: bool,
    #[command(flatten)]
    pub device: DeviceArg,
}

/// Runs `reservoir predict`.
pub fn run(args: &PredictArgs) -> Result<()> {
    if let Some(output) = &args.output {
        check_output_folder("--output", output)?;
    }
    let model = Model::load(&args.model).map_err(|e| CliError::reading("model file", e))?;
    let Model {
        config,
        weights,
        readout,
        state,
        input_columns,
        target_columns,
    } = model;
    let inputs = read_inputs("input file", &args.input, &input_columns)?;
    let model_path = args.model.display();
    let mut dispatch = Dispatch::new(args.device.or(Device::Auto));
    let mut reservoir = dispatch
        .echo_state(&config, weights, Workload::single(inputs.nrows()))
        .map_err(|e| CliError::core(format!("building the reservoir of {model_path}"), e))?;
    device::describe(&dispatch);
    device::startup(&dispatch);
    if !args.reset {
        reservoir
            .set_state(state.view())
            .context(|| format!("restoring the saved state of {model_path}"))?;
    }
    let bar = progress::bar("predicting", inputs.nrows(), "rows");
    let predictions = predict_rows(
        reservoir.as_mut(),
        &readout,
        inputs.view(),
        &mut |done, total| progress::advance(&bar, done, total),
    );
    bar.finish_and_clear();
    let predictions = predictions.context(|| format!("predicting {}", args.input.display()))?;
    let bytes = csv_bytes(&target_columns, predictions.view())?;
    write_output(args.output.as_deref(), &bytes)
}

/// Runs `reservoir` from its current state over `inputs` and applies `readout` to every state,
/// a chunk of [`PREDICT_CHUNK_ROWS`] rows at a time, calling `progress(rows_done, rows)` after
/// each; the reservoir keeps the final state.
///
/// `fit` scores its test file with this same function, so `predict` on that file from the
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
