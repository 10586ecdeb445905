//! Speaker identification on real data: the Japanese Vowels dataset (9 speakers, 12 LPC
//! channels, 270 training and 370 test utterances of 7–29 steps; bundled in
//! `examples/data/japanese_vowels`, CC BY 4.0, see its README).
//!
//! Each utterance runs from the zero state; its last and mean states are the features of a
//! one-hot ridge readout (`sequences::fit_classifier`, what `reservoir fit --label-column`
//! runs). The hyper-parameters are the best that `reservoir sweep` finds on 5 folds of the
//! training utterances with `examples/data/japanese_vowels/sweep.toml`; the test file plays
//! no part in choosing them.
//!
//! `cargo run --release -p reservoir-examples --example 07_japanese_vowels [-- DEVICE]`

use std::collections::BTreeMap;
use std::path::Path;

use ndarray::{Array2, ArrayView2};
use reservoir_runtime::config::ExperimentConfig;
use reservoir_runtime::jobs::sequences::{fit_classifier, Labelled};
use reservoir_runtime::{Device, Dispatch};

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

/// One split: each sequence's id, inputs (steps × 12) and label.
struct Split {
    ids: Vec<String>,
    inputs: Vec<Array2<f64>>,
    labels: Vec<String>,
}

/// One split of the long-form CSV (`sequence,step,label,c1..c12`, rows in step order), in
/// order of first appearance.
fn read_split(path: &Path) -> Result<Split, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut order: Vec<String> = Vec::new();
    let mut rows: BTreeMap<String, (String, Vec<f64>)> = BTreeMap::new();
    for (number, line) in text.lines().enumerate().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        let [id, _step, label, values @ ..] = cells.as_slice() else {
            return Err(format!(
                "{}: line {}: too few cells",
                path.display(),
                number + 1
            ));
        };
        let entry = rows.entry(id.to_string()).or_insert_with(|| {
            order.push(id.to_string());
            (label.to_string(), Vec::new())
        });
        for v in values {
            let v: f64 = v
                .parse()
                .map_err(|_| format!("{}: line {}: `{v}`", path.display(), number + 1))?;
            entry.1.push(v);
        }
    }
    let mut inputs = Vec::with_capacity(order.len());
    let mut labels = Vec::with_capacity(order.len());
    for id in &order {
        let (label, values) = &rows[id];
        let steps = values.len() / 12;
        inputs
            .push(Array2::from_shape_vec((steps, 12), values.clone()).map_err(|e| e.to_string())?);
        labels.push(label.clone());
    }
    Ok(Split {
        ids: order,
        inputs,
        labels,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/japanese_vowels");
    let (train, test) = (
        read_split(&data.join("train.csv"))?,
        read_split(&data.join("test.csv"))?,
    );
    let config = ExperimentConfig::from_toml(CONFIG, "<07_japanese_vowels>")?;
    let device: Device = match std::env::args().nth(1) {
        Some(arg) => arg.parse()?,
        None => Device::Auto,
    };

    let train_views: Vec<ArrayView2<f64>> = train.inputs.iter().map(|u| u.view()).collect();
    let test_views: Vec<ArrayView2<f64>> = test.inputs.iter().map(|u| u.view()).collect();
    let channels: Vec<String> = (1..=12).map(|c| format!("c{c}")).collect();
    let mut dispatch = Dispatch::new(device);
    let outcome = fit_classifier(
        &config,
        &channels,
        Labelled {
            ids: &train.ids,
            inputs: &train_views,
            labels: &train.labels,
        },
        Some(Labelled {
            ids: &test.ids,
            inputs: &test_views,
            labels: &test.labels,
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
