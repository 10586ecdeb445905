//! Training and scoring the spike-pattern classifier: a one-hot ridge readout on each
//! sample's segment means ([`crate::model::sample_features`]).

use ndarray::{Array2, ArrayView2};
use serde::Serialize;

use reservoir_core::checks::check_pattern;
use reservoir_core::error::Result;
use reservoir_core::readout::{ridge_from_rows, LinearReadout};
use reservoir_core::reservoir::Reservoir;

use crate::config::SpikeClassificationOptions;
use crate::data::tasks::spikes::{LabelledPattern, SpikeClassificationData};
use crate::model::{predict_classes, segment_means};

/// Accuracy of a classifier, with its confusion matrix (rows: true class, columns: predicted).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassificationReport {
    /// Fraction of test samples classified correctly.
    pub test_accuracy: f64,
    /// Fraction of training samples classified correctly.
    pub train_accuracy: f64,
    /// Counts of (true, predicted) over the test samples.
    pub confusion: Vec<Vec<usize>>,
}

/// Trains a one-hot ridge readout on the training samples' features and scores the test set.
pub fn classify(
    reservoir: &mut dyn Reservoir,
    data: &SpikeClassificationData,
    options: &SpikeClassificationOptions,
    ridge: f64,
) -> Result<(LinearReadout, ClassificationReport)> {
    classify_with_progress(reservoir, data, options, ridge, &mut |_, _| {})
}

/// [`classify`], calling `progress(samples_run, total_samples)` after each sample (training
/// samples first, then test samples) has run through the reservoir.
///
/// Each split runs through one [`Reservoir::run_many`] (every sample from the zero state, as
/// [`crate::model::sample_features`] runs it), so that a backend can run its samples in parallel.
pub fn classify_with_progress(
    reservoir: &mut dyn Reservoir,
    data: &SpikeClassificationData,
    options: &SpikeClassificationOptions,
    ridge: f64,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(LinearReadout, ClassificationReport)> {
    let total = data.train.len() + data.test.len();
    let mut done = 0;
    let mut features =
        |reservoir: &mut dyn Reservoir, set: &[LabelledPattern]| -> Result<Array2<f64>> {
            let inputs = set
                .iter()
                .map(|s| {
                    check_pattern(reservoir.input_size(), &s.pattern)?;
                    s.pattern.to_input_matrix(options.dt_ms)
                })
                .collect::<Result<Vec<_>>>()?;
            let views: Vec<ArrayView2<f64>> = inputs.iter().map(|u| u.view()).collect();
            let mut rows = Array2::zeros((set.len(), options.segments * reservoir.size()));
            reservoir.run_many(&views, &mut |index, states| {
                rows.row_mut(index)
                    .assign(&segment_means(states, options.segments)?);
                done += 1;
                progress(done, total);
                Ok(())
            })?;
            Ok(rows)
        };
    let one_hot = |set: &[LabelledPattern]| {
        Array2::from_shape_fn((set.len(), options.classes), |(i, c)| {
            f64::from(u8::from(set[i].label == c))
        })
    };
    let train_x = features(reservoir, &data.train)?;
    // segments × N features, usually more than the training samples: the dual form is cheap.
    let readout = ridge_from_rows(
        train_x.view(),
        one_hot(&data.train).view(),
        ridge,
        reservoir_core::Par::all(),
    )?;
    let test_x = features(reservoir, &data.test)?;
    let mut confusion = vec![vec![0; options.classes]; options.classes];
    let test_predictions = predict_classes(&readout, test_x.view())?;
    for (sample, &predicted) in data.test.iter().zip(&test_predictions) {
        confusion[sample.label][predicted] += 1;
    }
    let accuracy = |predicted: &[usize], set: &[LabelledPattern]| {
        predicted
            .iter()
            .zip(set)
            .filter(|(p, s)| **p == s.label)
            .count() as f64
            / set.len().max(1) as f64
    };
    let report = ClassificationReport {
        test_accuracy: accuracy(&test_predictions, &data.test),
        train_accuracy: accuracy(&predict_classes(&readout, train_x.view())?, &data.train),
        confusion,
    };
    Ok((readout, report))
}
