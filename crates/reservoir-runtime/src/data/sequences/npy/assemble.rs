//! The arrays read turned into sequences: shapes checked against the inputs', values checked
//! finite and within bounds, and sequences cut to their lengths.

use std::path::Path;

use ndarray::{s, Array2, Array3, ArrayD, ArrayView2, Axis, Ix3};
use rayon::prelude::*;
use reservoir_core::checks::{MAX_INPUT, MAX_TARGET};

use super::{array_error, shape_text};

use crate::data::sequences::SequenceFile;
use crate::data::Result;

/// Checks shapes and values and cuts the arrays into sequences. Each array comes with its
/// name; 2-D inputs (and targets) are one sequence.
pub(super) fn assemble(
    path: &Path,
    (x_name, x): (&str, ArrayD<f64>),
    targets: Option<(&str, ArrayD<f64>)>,
    labels: Option<(&str, ArrayD<i128>)>,
    lengths: Option<(&str, ArrayD<i128>)>,
) -> Result<SequenceFile> {
    let x_shape = shape_text(x.shape());
    let one_sequence = match x.ndim() {
        2 => true,
        3 => false,
        n => {
            return Err(array_error(
                path,
                x_name,
                format!(
                    "{n} dimensions (shape {x_shape}); inputs must be 2-D (T, K) for one \
                     sequence or 3-D (B, T, K) for B sequences"
                ),
            ))
        }
    };
    let x = as_3d(path, x_name, x, one_sequence)?;
    let (b, t, k) = x.dim();
    if b == 0 || t == 0 || k == 0 {
        return Err(array_error(
            path,
            x_name,
            format!(
                "shape {x_shape} holds {}",
                if b == 0 {
                    "no sequences"
                } else if t == 0 {
                    "sequences of length 0"
                } else {
                    "no input channels"
                }
            ),
        ));
    }

    let targets = match targets {
        Some((y_name, y)) => {
            let y_shape = shape_text(y.shape());
            let fits = if one_sequence {
                y.ndim() == 2 && y.shape()[0] == t
            } else {
                y.ndim() == 3 && y.shape()[..2] == [b, t]
            };
            if !fits {
                let expected = if one_sequence {
                    format!("({t}, M) for 2-D inputs")
                } else {
                    format!("({b}, {t}, M) for 3-D inputs")
                };
                return Err(array_error(
                    path,
                    y_name,
                    format!(
                        "shape {y_shape} does not fit inputs `{x_name}` of shape {x_shape} \
                         (expected {expected})"
                    ),
                ));
            }
            Some((y_name, as_3d(path, y_name, y, one_sequence)?))
        }
        None => None,
    };

    let labels = match labels {
        Some((name, values)) => Some(
            per_sequence(path, name, values, b, x_name, &x_shape)?
                .into_iter()
                .map(|label| label.to_string())
                .collect::<Vec<String>>(),
        ),
        None => None,
    };
    let lengths = match lengths {
        Some((name, values)) => per_sequence(path, name, values, b, x_name, &x_shape)?
            .into_iter()
            .enumerate()
            .map(|(i, n)| match usize::try_from(n) {
                Ok(n) if (1..=t).contains(&n) => Ok(n),
                _ => Err(array_error(
                    path,
                    name,
                    format!(
                        "{name}[{i}] is {n}; each length must be in 1..={t} (the number of \
                         steps of inputs `{x_name}` of shape {x_shape})"
                    ),
                )),
            })
            .collect::<Result<Vec<usize>>>()?,
        None => vec![t; b],
    };

    // Each sequence checked and copied out on rayon's threads (the copies' fresh pages are
    // most of the cost); the first error in file order is the one reported.
    let split = |(i, &len): (usize, &usize)| -> Result<(Array2<f64>, Option<Array2<f64>>)> {
        let xi = x.slice(s![i, ..len, ..]);
        check_finite(path, x_name, xi, i, one_sequence, MAX_INPUT)?;
        let yi = match &targets {
            Some((y_name, y)) => {
                let yi = y.slice(s![i, ..len, ..]);
                check_finite(path, y_name, yi, i, one_sequence, MAX_TARGET)?;
                Some(yi.as_standard_layout().into_owned())
            }
            None => None,
        };
        Ok((xi.as_standard_layout().into_owned(), yi))
    };
    let split: Vec<Result<_>> = lengths.par_iter().enumerate().map(split).collect();
    let (inputs, target_seqs): (Vec<Array2<f64>>, Vec<Option<Array2<f64>>>) = split
        .into_iter()
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .unzip();
    let target_seqs: Option<Vec<Array2<f64>>> = targets
        .as_ref()
        .map(|_| target_seqs.into_iter().flatten().collect());
    let target_names = match &targets {
        Some((y_name, y)) => (0..y.dim().2).map(|j| format!("{y_name}{j}")).collect(),
        None => Vec::new(),
    };
    Ok(SequenceFile {
        ids: (0..b).map(|i| i.to_string()).collect(),
        inputs,
        targets: target_seqs,
        labels,
        input_names: (0..k).map(|j| format!("{x_name}{j}")).collect(),
        target_names,
    })
}

/// The array as B × T × K (a 2-D array gets B = 1).
fn as_3d(path: &Path, name: &str, array: ArrayD<f64>, add_axis: bool) -> Result<Array3<f64>> {
    let array = if add_axis {
        array.insert_axis(Axis(0))
    } else {
        array
    };
    array
        .into_dimensionality::<Ix3>()
        .map_err(|e| array_error(path, name, format!("unexpected shape: {e}")))
}

/// The values of a 1-D array with one entry per sequence (`b` of them).
fn per_sequence(
    path: &Path,
    name: &str,
    values: ArrayD<i128>,
    b: usize,
    x_name: &str,
    x_shape: &str,
) -> Result<Vec<i128>> {
    if values.shape() != [b] {
        return Err(array_error(
            path,
            name,
            format!(
                "shape {} does not fit inputs `{x_name}` of shape {x_shape} (expected ({b},), \
                 one entry per sequence)",
                shape_text(values.shape())
            ),
        ));
    }
    Ok(values.iter().copied().collect())
}

/// Fails on the first value that is not finite or beyond ±`limit` (see [`crate::data::limit`]),
/// naming its index in the file's array.
fn check_finite(
    path: &Path,
    name: &str,
    values: ArrayView2<'_, f64>,
    sequence: usize,
    one_sequence: bool,
    limit: f64,
) -> Result<()> {
    let bad = |v: &f64| !v.is_finite() || v.abs() > limit;
    // The common case, every value fine, counted without indices or early exits (which
    // keeps the loop vectorized).
    let fine = match values.as_slice() {
        Some(values) => values.iter().fold(true, |fine, v| fine & !bad(v)),
        None => !values.iter().any(bad),
    };
    if fine {
        return Ok(());
    }
    match values.indexed_iter().find(|(_, v)| bad(v)) {
        None => Ok(()),
        Some(((t, j), v)) => {
            let index = if one_sequence {
                format!("{t}, {j}")
            } else {
                format!("{sequence}, {t}, {j}")
            };
            Err(array_error(
                path,
                name,
                format!("{name}[{index}] is {v:e}; values must be finite and within ±{limit:.4e}"),
            ))
        }
    }
}
