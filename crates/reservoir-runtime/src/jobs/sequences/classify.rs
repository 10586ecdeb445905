//! Classes from sequence features: a one-hot ridge readout and the scores of a set of
//! predictions (the class of each row is [`crate::model::predict_classes`]).

use ndarray::{Array2, ArrayView2};
use serde::Serialize;

use reservoir_core::readout::{ridge_from_rows, LinearReadout};
use reservoir_core::{ReservoirError, Result};

/// How well predicted classes match the truth.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassScores {
    /// Fraction of sequences classified correctly.
    pub accuracy: f64,
    /// Mean recall over the classes present in the truth: accuracy that every class weighs the
    /// same in, however many sequences it has.
    pub balanced_accuracy: f64,
    /// Recall of each class (fraction of its sequences classified as it); `None` for a class
    /// with no sequence in the truth.
    pub recall: Vec<Option<f64>>,
    /// Counts of (true class, predicted class): row = truth, column = prediction.
    pub confusion_matrix: Vec<Vec<usize>>,
}

/// The scores of `predicted` against `truth` (class indices below `classes`).
///
/// # Errors
/// Lengths that differ, no sequences, or an index not below `classes`.
pub fn class_scores(truth: &[usize], predicted: &[usize], classes: usize) -> Result<ClassScores> {
    if truth.len() != predicted.len() {
        return Err(ReservoirError::shape(
            "class scores",
            truth.len(),
            predicted.len(),
        ));
    }
    if truth.is_empty() {
        return Err(ReservoirError::invalid("class scores", "no sequences"));
    }
    let mut confusion = vec![vec![0usize; classes]; classes];
    for (&t, &p) in truth.iter().zip(predicted) {
        let cell = confusion
            .get_mut(t)
            .and_then(|row| row.get_mut(p))
            .ok_or_else(|| {
                ReservoirError::invalid(
                    "class scores",
                    format!("class index {} for {classes} classes", t.max(p)),
                )
            })?;
        *cell += 1;
    }
    let correct: usize = (0..classes).map(|c| confusion[c][c]).sum();
    let recall: Vec<Option<f64>> = confusion
        .iter()
        .enumerate()
        .map(|(c, row)| {
            let total: usize = row.iter().sum();
            (total > 0).then(|| row[c] as f64 / total as f64)
        })
        .collect();
    let present: Vec<f64> = recall.iter().flatten().copied().collect();
    Ok(ClassScores {
        accuracy: correct as f64 / truth.len() as f64,
        balanced_accuracy: present.iter().sum::<f64>() / present.len() as f64,
        recall,
        confusion_matrix: confusion,
    })
}

/// The one-hot ridge readout of `labels` (class indices below `classes`) on `features` (one
/// row per sequence).
///
/// # Errors
/// A label not below `classes`, and any error of [`ridge_from_rows`].
pub fn fit_class_readout(
    features: ArrayView2<f64>,
    labels: &[usize],
    classes: usize,
    ridge: f64,
) -> Result<LinearReadout> {
    if let Some(&bad) = labels.iter().find(|&&l| l >= classes) {
        return Err(ReservoirError::invalid(
            "class readout",
            format!("class index {bad} for {classes} classes"),
        ));
    }
    let one_hot = Array2::from_shape_fn((labels.len(), classes), |(i, c)| {
        f64::from(u8::from(labels[i] == c))
    });
    ridge_from_rows(features, one_hot.view(), ridge, reservoir_core::Par::all())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::predict_classes;

    #[test]
    fn scores_count_each_class_the_same_in_the_balanced_accuracy() {
        // Class 0: 3 of 4 right; class 1: 1 of 1; class 2: absent.
        let scores = class_scores(&[0, 0, 0, 0, 1], &[0, 0, 0, 1, 1], 3).expect("scores");
        assert_eq!(scores.accuracy, 0.8);
        assert_eq!(scores.recall, vec![Some(0.75), Some(1.0), None]);
        assert_eq!(scores.balanced_accuracy, 0.875);
        assert_eq!(
            scores.confusion_matrix,
            vec![vec![3, 1, 0], vec![0, 1, 0], vec![0, 0, 0]]
        );
        assert!(class_scores(&[0, 3], &[0, 0], 3).is_err());
        assert!(class_scores(&[], &[], 3).is_err());
    }

    #[test]
    fn the_readout_separates_separable_features() {
        let features = ndarray::array![[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.8]];
        let readout = fit_class_readout(features.view(), &[0, 0, 1, 1], 2, 1e-6).expect("fit");
        assert_eq!(
            predict_classes(&readout, features.view()).expect("predict"),
            vec![0, 0, 1, 1]
        );
        assert!(fit_class_readout(features.view(), &[0, 0, 2, 1], 2, 1e-6).is_err());
    }
}
