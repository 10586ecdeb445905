//! The classes of a labelled dataset: label texts in a fixed order, a class's index being its
//! position, so that a model, a confusion matrix and a report agree on which class is which.

use ndarray::{s, ArrayView1, ArrayView2};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use reservoir_core::readout::LinearReadout;
use reservoir_core::ReservoirError;

/// Most class names an error message lists before it says how many more there are.
const MAX_LISTED: usize = 20;

/// Label texts in numeric order when every label is a number (`2` before `10`), else in text
/// order; the index of a class is its position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Classes {
    #[serde(deserialize_with = "crate::model::text::list")]
    names: Vec<String>,
}

impl Classes {
    /// The distinct labels of `labels` (the training set's).
    ///
    /// # Errors
    /// Fewer than two distinct labels (a classifier needs at least two), or an empty label.
    pub fn from_labels<S: AsRef<str>>(labels: &[S]) -> Result<Self, ReservoirError> {
        if labels.iter().any(|l| l.as_ref().is_empty()) {
            return Err(ReservoirError::invalid("labels", "a label is empty"));
        }
        let mut names: Vec<String> = labels.iter().map(|l| l.as_ref().to_string()).collect();
        let numbers: Option<Vec<f64>> = names.iter().map(|n| n.parse::<f64>().ok()).collect();
        match numbers {
            Some(values) if values.iter().all(|v| v.is_finite()) => {
                let mut pairs: Vec<(f64, String)> = values.into_iter().zip(names).collect();
                pairs.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
                names = pairs.into_iter().map(|(_, name)| name).collect();
            }
            _ => names.sort(),
        }
        names.dedup();
        if names.len() < 2 {
            return Err(ReservoirError::invalid(
                "labels",
                format!(
                    "every sequence has the label `{}`: a classifier needs at least two classes",
                    names.first().map_or("", String::as_str)
                ),
            ));
        }
        Ok(Self { names })
    }

    /// Classes with these names, in this order (as a saved model stores them).
    ///
    /// # Errors
    /// Fewer than two names, an empty one, or one given twice.
    pub fn from_names(names: Vec<String>) -> Result<Self, ReservoirError> {
        let distinct = names
            .iter()
            .enumerate()
            .all(|(i, name)| !name.is_empty() && !names[..i].contains(name));
        if names.len() < 2 || !distinct {
            return Err(ReservoirError::invalid(
                "classes",
                "at least two distinct, non-empty class names are needed",
            ));
        }
        Ok(Self { names })
    }

    /// The class names, in index order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Number of classes.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Always false: there are at least two classes.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The index of each label; `ids` name the sequences in errors.
    ///
    /// # Errors
    /// A label that is not one of the classes, naming the sequence and the classes.
    pub fn indices<S: AsRef<str>>(
        &self,
        labels: &[S],
        ids: &[String],
    ) -> Result<Vec<usize>, ReservoirError> {
        labels
            .iter()
            .enumerate()
            .map(|(i, label)| {
                let label = label.as_ref();
                self.names
                    .iter()
                    .position(|name| name == label)
                    .ok_or_else(|| {
                        let id = ids.get(i).map_or_else(|| i.to_string(), String::clone);
                        ReservoirError::invalid(
                            "labels",
                            format!(
                                "sequence `{id}` has the label `{label}`, which is not one of the \
                                 training classes ({})",
                                self.listed()
                            ),
                        )
                    })
            })
            .collect()
    }

    /// The names as `a, b, c`, shortened when there are many.
    fn listed(&self) -> String {
        let mut listed: Vec<&str> = self
            .names
            .iter()
            .take(MAX_LISTED)
            .map(String::as_str)
            .collect();
        let more = format!("and {} more", self.names.len().saturating_sub(MAX_LISTED));
        if self.names.len() > MAX_LISTED {
            listed.push(&more);
        }
        listed.join(", ")
    }
}

/// The class of each row of `features`: the readout's largest output (the first on a tie).
///
/// # Errors
/// Features of the wrong width.
pub fn predict_classes(
    readout: &LinearReadout,
    features: ArrayView2<f64>,
) -> reservoir_core::Result<Vec<usize>> {
    // Blocks of rows on rayon's threads; a row's scores do not depend on its block.
    let blocks: Vec<reservoir_core::Result<Vec<usize>>> = (0..features.nrows())
        .step_by(PREDICTION_ROWS)
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|start| {
            let end = (start + PREDICTION_ROWS).min(features.nrows());
            let scores = readout.predict(features.slice(s![start..end, ..]))?;
            Ok(scores.rows().into_iter().map(best_class).collect())
        })
        .collect();
    let mut classes = Vec::with_capacity(features.nrows());
    for block in blocks {
        match block {
            Ok(block) => classes.extend(block),
            // The whole matrix again, so that the error names the row in it.
            Err(e) => return Err(readout.predict(features).err().unwrap_or(e)),
        }
    }
    Ok(classes)
}

/// Rows of features scored together by [`predict_classes`].
const PREDICTION_ROWS: usize = 1024;

/// The index of the highest score (the first of equal ones).
fn best_class(scores: ArrayView1<f64>) -> usize {
    scores
        .iter()
        .enumerate()
        .fold((0, f64::NEG_INFINITY), |best, (c, &v)| {
            if v > best.1 {
                (c, v)
            } else {
                best
            }
        })
        .0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_labels_sort_as_numbers_and_others_as_text() {
        let numeric = Classes::from_labels(&["10", "2", "2", "1"]).expect("classes");
        assert_eq!(numeric.names(), ["1", "2", "10"]);
        let text = Classes::from_labels(&["walk", "run", "b10", "walk"]).expect("classes");
        assert_eq!(text.names(), ["b10", "run", "walk"]);
        assert_eq!(
            text.indices(&["run", "walk"], &[]).expect("known"),
            vec![1, 2]
        );
    }

    #[test]
    fn one_class_and_unknown_labels_are_errors_naming_what() {
        let one = Classes::from_labels(&["a", "a"]).expect_err("one class");
        assert!(one.to_string().contains("`a`"), "{one}");
        let classes = Classes::from_labels(&["a", "b"]).expect("classes");
        let unknown = classes
            .indices(&["a", "c"], &["s1".into(), "s2".into()])
            .expect_err("unknown")
            .to_string();
        assert!(
            unknown.contains("`s2`") && unknown.contains("`c`") && unknown.contains("a, b"),
            "{unknown}"
        );
        assert!(Classes::from_names(vec!["a".into(), "a".into()]).is_err());
    }
}
