//! `reservoir predict`: run a saved model over new inputs and write its predictions: the
//! target columns of every row (one series continuing the model's state, or many series each
//! from the zero state), or the class of every sequence (a sequence classifier).

use std::path::{Path, PathBuf};

use ndarray::{concatenate, Array1, ArrayView2, Axis};
use reservoir_runtime::data::write::{csv_bytes, keyed_csv_bytes, labels_csv_bytes};
use reservoir_runtime::data::write::{npy_bytes, npy_labels_bytes};
use reservoir_runtime::data::{read_inputs, read_sequences, SequenceColumns, SequenceFile};
use reservoir_runtime::error::DataError;
use reservoir_runtime::jobs::predict::{
    classify_sequences, predict_many_series, predict_one_series,
};
use reservoir_runtime::model::{Model, SequenceClassifier, SEQUENCE_MAGIC};
use reservoir_runtime::{Device, Dispatch};

use crate::device::{self, DeviceArg};
use crate::error::{CliError, Result};
use crate::output::{check_outputs, write_output};
use crate::progress;
use crate::sequence_tasks::{writes_npy, SequenceArgs};

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
        return classify(args);
    }
    let model = Model::load(&args.model).map_err(|e| CliError::reading("model file", e))?;
    if args.sequences.applies_to(&args.input) {
        return predict_many(args, model);
    }
    let inputs = read_inputs("input file", &args.input, &model.input_columns)?;
    let mut dispatch = Dispatch::new(args.device.or(Device::Auto));
    let bar = progress::bar("predicting", inputs.nrows(), "rows");
    let predictions = predict_one_series(
        &model,
        inputs.view(),
        args.reset,
        &mut dispatch,
        &mut |done, total| progress::advance(&bar, done, total),
    );
    bar.finish_and_clear();
    describe(&dispatch);
    let predictions = predictions.map_err(|e| {
        CliError::core(
            format!(
                "predicting {} with {}",
                args.input.display(),
                args.model.display()
            ),
            e,
        )
    })?;
    let bytes = csv_bytes(&model.target_columns, predictions.view())?;
    write_output(args.output.as_deref(), &bytes)
}

/// Notes where the model ran and what starting its GPU cost.
fn describe(dispatch: &Dispatch) {
    device::describe(dispatch);
    device::startup(dispatch);
}

/// Whether the model file starts with the sequence classifier's magic bytes (anything else
/// is loaded, and checked, as a series model).
fn is_sequence_classifier(path: &Path) -> Result<bool> {
    use std::io::Read;
    let mut magic = [0u8; 8];
    // Only a regular file is opened: a FIFO would wait for a writer (the model load then says
    // what else it is).
    let read = std::fs::metadata(path).and_then(|m| {
        if !m.is_file() {
            return Ok(0);
        }
        std::fs::File::open(path).and_then(|mut f| f.read(&mut magic))
    });
    match read {
        Ok(n) => Ok(n == magic.len() && magic == SEQUENCE_MAGIC),
        Err(source) => Err(DataError::Read {
            what: "model file",
            path: path.to_path_buf(),
            source,
        }
        .into()),
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

/// `reservoir predict` with a sequence classifier: the class of every sequence.
fn classify(args: &PredictArgs) -> Result<()> {
    let model =
        SequenceClassifier::load(&args.model).map_err(|e| CliError::reading("model file", e))?;
    let file = read_model_inputs(args, &model.input_columns, model.architecture.input_size())?;
    let views: Vec<ArrayView2<f64>> = file.inputs.iter().map(|u| u.view()).collect();
    let mut dispatch = Dispatch::new(args.device.or(Device::Auto));
    let bar = progress::bar("classifying", views.len(), "sequences");
    let classes = classify_sequences(&model, &views, &mut dispatch, &mut |done, total| {
        progress::advance(&bar, done, total)
    });
    bar.finish_and_clear();
    describe(&dispatch);
    let classes = classes.map_err(|e| {
        CliError::core(
            format!(
                "classifying {} with {}",
                args.input.display(),
                args.model.display()
            ),
            e,
        )
    })?;
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
        let labels: Vec<&str> = classes.iter().map(|&c| names[c].as_str()).collect();
        labels_csv_bytes(&file.ids, &labels)?
    };
    write_output(args.output.as_deref(), &bytes)
}

/// `reservoir predict` with a series model on many series, each from the zero state.
fn predict_many(args: &PredictArgs, model: Model) -> Result<()> {
    let file = read_model_inputs(args, &model.input_columns, model.architecture.input_size())?;
    let views: Vec<ArrayView2<f64>> = file.inputs.iter().map(|u| u.view()).collect();
    let mut dispatch = Dispatch::new(args.device.or(Device::Auto));
    let bar = progress::bar("predicting", views.len(), "series");
    let predictions = predict_many_series(&model, &views, &mut dispatch, &mut |d, t| {
        progress::advance(&bar, d, t)
    });
    bar.finish_and_clear();
    describe(&dispatch);
    let predictions = predictions.map_err(|e| {
        CliError::core(
            format!(
                "predicting {} with {}",
                args.input.display(),
                args.model.display()
            ),
            e,
        )
    })?;
    let parts: Vec<ArrayView2<f64>> = predictions.iter().map(|p| p.view()).collect();
    let stacked = concatenate(Axis(0), &parts).map_err(|e| DataError::Format {
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
