//! Speaker identification on real data: the Japanese Vowels dataset (9 speakers, 12 LPC
//! channels, 270 training and 370 test utterances of 7–29 steps; bundled in
//! `examples/data/japanese_vowels`, CC BY 4.0, see its README).
//!
//! The files are read by the library's long-form CSV reader, as `reservoir fit` reads them.
//! Each utterance runs from the zero state; its last and mean states are the features of a
//! one-hot ridge readout (`sequences::fit_classifier`, what `reservoir fit --label-column`
//! runs). The hyper-parameters are the best that `reservoir sweep` finds on 5 folds of the
//! training utterances with `examples/data/japanese_vowels/sweep.toml`; the test file plays
//! no part in choosing them.
//!
//! `cargo run --release -p reservoir-examples --example 07_japanese_vowels [-- DEVICE]`

use std::path::Path;

use reservoir_runtime::config::ExperimentConfig;
use reservoir_runtime::data::{read_sequences, SequenceColumns, SequenceFile};
use reservoir_runtime::jobs::sequences::{fit_classifier, Labelled};
use reservoir_runtime::{Device, Dispatch, RuntimeError};

const CONFIG: &str = "
[reservoir]
size = 500
connection_prob = 0.1
spectral_radius = 0.5
leak_rate = 0.3
input_scaling = 1.0
seed = 1

[readout]
ridge = 1e-2

[features]
summaries = [\"last\", \"mean\"]
";

/// One split of the long-form CSV (`sequence,step,label,c1..c12`), read as `reservoir fit
/// --sequence-column sequence --time-column step --label-column label` reads it.
fn read_split(path: &Path, channels: &[String]) -> Result<SequenceFile, RuntimeError> {
    let columns = SequenceColumns {
        inputs: channels,
        label: Some("label"),
        sequence: Some("sequence"),
        time: Some("step"),
        ..SequenceColumns::default()
    };
    Ok(read_sequences("data file", path, &columns)?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/japanese_vowels");
    let channels: Vec<String> = (1..=12).map(|c| format!("c{c}")).collect();
    let (train, test) = (
        read_split(&data.join("train.csv"), &channels)?,
        read_split(&data.join("test.csv"), &channels)?,
    );
    let config = ExperimentConfig::from_toml(CONFIG, "<07_japanese_vowels>")?;
    let device: Device = match std::env::args().nth(1) {
        Some(arg) => arg.parse()?,
        None => Device::Auto,
    };

    let (train_views, test_views) = (train.input_views(), test.input_views());
    let mut dispatch = Dispatch::new(device);
    let outcome = fit_classifier(
        &config,
        &channels,
        Labelled {
            ids: &train.ids,
            inputs: &train_views,
            labels: train.labels.as_deref().unwrap_or_default(),
        },
        Some(Labelled {
            ids: &test.ids,
            inputs: &test_views,
            labels: test.labels.as_deref().unwrap_or_default(),
        }),
        &mut dispatch,
        &mut |_, _, _| {},
    )?;
    let where_ = dispatch
        .placements()
        .last()
        .map_or_else(|| "cpu".into(), |(_, p)| p.name());
    println!(
        "{} training and {} test utterances of {} speakers, on {where_}",
        train.ids.len(),
        test.ids.len(),
        outcome.model.classes.len()
    );
    if let Some(test) = &outcome.test {
        println!(
            "test accuracy {:.4} (balanced {:.4}), training accuracy {:.4}, fit + test {:.3} s",
            test.accuracy, test.balanced_accuracy, outcome.train.accuracy, outcome.fit_seconds
        );
    }
    Ok(())
}
