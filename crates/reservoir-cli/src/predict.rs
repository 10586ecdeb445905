//! `reservoir predict`: run a saved model over new inputs and write its predictions: the
//! target columns of every row (one series continuing the model's state, or many series each
//! from the zero state), or the class of every sequence (a sequence classifier).

use std::path::PathBuf;

use std::path::Path;

use ndarray::{concatenate, s, Array1, Array2, ArrayView2, Axis};
use reservoir_core::readout::LinearReadout;
use reservoir_core::{Reservoir, ReservoirError};
use reservoir_runtime::jobs::sequences::predict_series;
use reservoir_runtime::model::{Model, SequenceClassifier, SEQUENCE_MAGIC};
use reservoir_runtime::{Device, Dispatch, Workload};

use crate::data::{npy_bytes, read_inputs, read_sequences, SequenceColumns, SequenceFile};
use crate::device::{self, DeviceArg};
use crate::error::{CliError, CoreContext, Result};
use crate::output::{check_outputs, csv_bytes, keyed_csv_bytes, write_output};
use crate::progress;
use crate::sequence_tasks::{writes_npy, SequenceArgs};

/// Rows of states held at once while predicting: memory stays O(chunk · N) for any input length.
pub const PREDICT_CHUNK_ROWS: usize = 4096;

/// Arguments of `reservoir predict`.
#[derive(Debug, clap::Args)]
pub struct PredictArgs {
    /// Model file written by `reservoir fit --model`.
    #[arg(long, value_name = "MODEL.bin")]
    pub model: PathBuf,
    /// CSV file with a header row holding the model's input columns, or a NumPy `.npy`/`.npz`
    /// file of sequences.
    #[arg(long, value_name = "IN")]
    pub input: PathBuf,
    /// `.npz` input: the inputs array.
    #[arg(long, value_name = "ARRAY")]
    pub inputs: Option<String>,
    #[command(flatten)]
    pub sequences: SequenceArgs,
    /// Where to write the predictions: CSV, or `.npy` by the extension; CSV on standard
    /// output when left out. A classifier writes one row per sequence (`sequence,label`; in
    /// `.npy`, the labels as integers, which needs numeric class names); a series model one
    /// row per input row (with a `sequence` column for many series; in `.npy`, the rows of
    /// every sequence stacked).
    #[arg(long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// One series: start from the zero state instead of the state saved with the model
    /// (which continues in time after the last row the model was fitted or tested on). Many
    /// series, and sequences to classify, always start from the zero state.
    #[arg(long)]
    pub reset: bool,
    #[command(flatten)]
    pub device: DeviceArg,
}

/// Runs `reservoir predict`.
pub fn run(args: &PredictArgs) -> Result<()> {
    if let Some(output) = &args.output {
        check_outputs(
            &[("--output", output)],
            &[("model file", &args.model), ("input file", &args.input)],
        )?;
    }
    if is_sequence_classifier(&args.model)? {
        return classify_sequences(args);
    }
    let model = Model::load(&args.model).map_err(|e| CliError::reading("model file", e))?;
    if args.sequences.applies_to(&args.input) {
        return predict_many_series(args, model);
    }
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

/// Whether the model file starts with the sequence classifier's magic bytes (anything else
/// is loaded, and checked, as a series model).
fn is_sequence_classifier(path: &Path) -> Result<bool> {
    use std::io::Read;
    let mut magic = [0u8; 8];
    let read = std::fs::File::open(path).and_then(|mut f| f.read(&mut magic));
    match read {
        Ok(n) => Ok(n == magic.len() && magic == SEQUENCE_MAGIC),
        Err(source) => Err(CliError::Read {
            what: "model file",
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Reads the sequences of `--input` for a model with `columns` and `k` input channels.
fn read_model_inputs(args: &PredictArgs, columns: &[String], k: usize) -> Result<SequenceFile> {
    let array;
    let inputs: &[String] = match &args.inputs {
        Some(name) => {
            array = [name.clone()];
            &array
        }
        None => columns,
    };
    let file = read_sequences(
        "input file",
        &args.input,
        &SequenceColumns {
            inputs,
            targets: None,
            label: None,
            sequence: args.sequences.sequence_column.as_deref(),
            time: args.sequences.time_column.as_deref(),
            lengths: args.sequences.lengths.as_deref(),
        },
    )?;
    if file.input_names.len() != k {
        return Err(CliError::Argument {
            flag: "--input",
            message: format!(
                "{} has {} input channels, the model {k}",
                args.input.display(),
                file.input_names.len()
            ),
        });
    }
    Ok(file)
}

/// The reservoir of a model (`config`, `weights`) for running every sequence of `file` once,
/// on the device `--device` asks for (`auto` by default).
fn model_reservoir(
    args: &PredictArgs,
    config: &reservoir_core::ReservoirConfig,
    weights: reservoir_core::ReservoirWeights,
    file: &SequenceFile,
) -> Result<Box<dyn Reservoir>> {
    let work = Workload {
        sequences: file.inputs.len(),
        steps: file.inputs.iter().map(|u| u.nrows()).sum(),
    };
    let mut dispatch = Dispatch::new(args.device.or(Device::Auto));
    let reservoir = dispatch.echo_state(config, weights, work).map_err(|e| {
        CliError::core(
            format!("building the reservoir of {}", args.model.display()),
            e,
        )
    })?;
    device::describe(&dispatch);
    device::startup(&dispatch);
    Ok(reservoir)
}

/// `reservoir predict` with a sequence classifier: the class of every sequence.
fn classify_sequences(args: &PredictArgs) -> Result<()> {
    let model =
        SequenceClassifier::load(&args.model).map_err(|e| CliError::reading("model file", e))?;
    let file = read_model_inputs(args, &model.input_columns, model.config.input_size())?;
    let mut reservoir = model_reservoir(args, &model.config, model.weights.clone(), &file)?;
    let views: Vec<ArrayView2<f64>> = file.inputs.iter().map(|u| u.view()).collect();
    let bar = progress::bar("classifying", views.len(), "sequences");
    let classes = model.classify(reservoir.as_mut(), &views, &mut |done, total| {
        progress::advance(&bar, done, total)
    });
    bar.finish_and_clear();
    let classes = classes.context(|| format!("classifying {}", args.input.display()))?;
    let names = model.classes.names();
    let bytes = if writes_npy(args.output.as_ref()) {
        let numbers = classes
            .iter()
            .map(|&c| names[c].parse::<i64>())
            .collect::<std::result::Result<Vec<i64>, _>>()
            .map_err(|_| CliError::Argument {
                flag: "--output",
                message: format!(
                    "the classes of {} are not all integers ({}), so they cannot be \
                     written as a NumPy array: write CSV instead",
                    args.model.display(),
                    names.join(", ")
                ),
            })?;
        npy_labels_bytes(&Array1::from(numbers))?
    } else {
        let mut writer = csv::Writer::from_writer(Vec::new());
        let format_error = |e: csv::Error| CliError::Format {
            what: "the CSV output",
            message: e.to_string(),
        };
        writer
            .write_record(["sequence", "label"])
            .map_err(format_error)?;
        for (id, &c) in file.ids.iter().zip(&classes) {
            writer
                .write_record([id.as_str(), names[c].as_str()])
                .map_err(format_error)?;
        }
        writer.into_inner().map_err(|e| CliError::Format {
            what: "the CSV output",
            message: e.to_string(),
        })?
    };
    write_output(args.output.as_deref(), &bytes)
}

/// `reservoir predict` with a series model on many series, each from the zero state.
fn predict_many_series(args: &PredictArgs, model: Model) -> Result<()> {
    let file = read_model_inputs(args, &model.input_columns, model.config.input_size())?;
    let mut reservoir = model_reservoir(args, &model.config, model.weights.clone(), &file)?;
    let views: Vec<ArrayView2<f64>> = file.inputs.iter().map(|u| u.view()).collect();
    let bar = progress::bar("predicting", views.len(), "series");
    let predictions = predict_series(reservoir.as_mut(), &model.readout, &views, &mut |d, t| {
        progress::advance(&bar, d, t)
    });
    bar.finish_and_clear();
    let predictions = predictions.context(|| format!("predicting {}", args.input.display()))?;
    let parts: Vec<ArrayView2<f64>> = predictions.iter().map(|p| p.view()).collect();
    let stacked = concatenate(Axis(0), &parts).map_err(|e| CliError::Format {
        what: "the predictions",
        message: e.to_string(),
    })?;
    let bytes = if writes_npy(args.output.as_ref()) {
        npy_bytes(stacked.view())?
    } else {
        let keys: Vec<String> = file
            .ids
            .iter()
            .zip(&predictions)
            .flat_map(|(id, p)| std::iter::repeat_n(id.clone(), p.nrows()))
            .collect();
        keyed_csv_bytes("sequence", &keys, &model.target_columns, stacked.view())?
    };
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

/// Class labels as `.npy` bytes (a 1-D `int64` array).
fn npy_labels_bytes(labels: &Array1<i64>) -> Result<Vec<u8>> {
    use ndarray_npy::WriteNpyExt;
    let mut bytes = Vec::new();
    labels.write_npy(&mut bytes).map_err(|e| CliError::Format {
        what: "the NumPy output",
        message: e.to_string(),
    })?;
    Ok(bytes)
}
