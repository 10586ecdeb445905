//! Property tests of CSV data: finite numbers under generated column names, written as CSV
//! (by the `csv` crate, and by the writer of predictions), read back through the readers as
//! the same numbers bit for bit.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use ndarray::{Array2, Axis};
use proptest::prelude::*;
use reservoir_runtime::data::write::{csv_bytes, keyed_csv_bytes};
use reservoir_runtime::data::{read_inputs, read_inputs_targets, read_sequences, SequenceColumns};

/// Column names: no surrounding whitespace (the reader trims it), but commas, quotes, inner
/// spaces and line breaks, which the writer must quote.
fn name() -> impl Strategy<Value = String> {
    "[a-zA-Z_é,\"]([a-zA-Z0-9_é ,\"\n]{0,6}[a-zA-Z0-9_é,\"])?"
}

/// 1 to 5 distinct names.
fn names() -> impl Strategy<Value = Vec<String>> {
    prop::collection::hash_set(name(), 1..=5).prop_map(|set| set.into_iter().collect())
}

/// Any float the readers accept as an input: finite and within ±f32::MAX (`MAX_INPUT`), with
/// subnormals, -0, the bound itself and the smallest.
fn finite() -> impl Strategy<Value = f64> {
    let bound = f64::from(f32::MAX);
    prop_oneof![
        any::<f64>().prop_filter("accepted", move |v| v.is_finite() && v.abs() <= bound),
        Just(-0.0),
        Just(bound),
        Just(-bound),
        Just(f64::MIN_POSITIVE),
        Just(5e-324),
    ]
}

/// `rows` × `cols` finite values (1 to 12 rows).
fn values(cols: usize) -> impl Strategy<Value = Array2<f64>> {
    (1usize..=12).prop_flat_map(move |rows| {
        prop::collection::vec(finite(), rows * cols)
            .prop_map(move |v| Array2::from_shape_vec((rows, cols), v).expect("shape"))
    })
}

/// How a number is written: `{}` (shortest round-trip decimal), `{:e}` or `{:?}`.
fn formatted(value: f64, style: u8) -> String {
    match style % 3 {
        0 => format!("{value}"),
        1 => format!("{value:e}"),
        _ => format!("{value:?}"),
    }
}

fn bits(values: &Array2<f64>) -> Vec<u64> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// Writes `bytes` as `name` in `dir`.
fn file(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("write");
    path
}

/// A CSV document written by the `csv` crate: `header`, then the `rows` of cells.
fn csv_document(header: &[String], rows: &[Vec<String>]) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(header).expect("header");
    for row in rows {
        writer.write_record(row).expect("row");
    }
    writer.into_inner().expect("flush")
}

fn no_columns() -> SequenceColumns<'static> {
    SequenceColumns {
        inputs: &[],
        targets: None,
        label: None,
        sequence: None,
        time: None,
        lengths: None,
    }
}

/// The rows of `values` grouped by `keys`, groups in order of first appearance.
fn grouped(keys: &[String], values: &Array2<f64>) -> (Vec<String>, Vec<Array2<f64>>) {
    let mut ids: Vec<String> = Vec::new();
    for key in keys {
        if !ids.contains(key) {
            ids.push(key.clone());
        }
    }
    let groups = ids
        .iter()
        .map(|id| {
            let rows: Vec<usize> = (0..keys.len()).filter(|&i| &keys[i] == id).collect();
            values.select(Axis(0), &rows)
        })
        .collect();
    (ids, groups)
}

fn read_all(path: &Path, names: &[String]) -> Array2<f64> {
    read_inputs("input file", path, names).expect("read back")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn numbers_written_by_the_csv_crate_read_back_bit_for_bit(
        (names, values, split) in names().prop_flat_map(|names| {
            let n = names.len();
            (Just(names), values(n), 0..=n)
        }),
        style in any::<u8>(),
        note in "[ -~]{0,8}",
    ) {
        // An extra column the readers skip, holding any text.
        let extra = "not a number";
        prop_assume!(!names.iter().any(|n| n == extra));
        let mut header = names.clone();
        header.insert(split, extra.to_string());
        let rows: Vec<Vec<String>> = values
            .rows()
            .into_iter()
            .map(|row| {
                let mut cells: Vec<String> = row.iter().map(|&v| formatted(v, style)).collect();
                cells.insert(split, note.clone());
                cells
            })
            .collect();
        let dir = tempfile::tempdir().expect("dir");
        let path = file(&dir, "data.csv", &csv_document(&header, &rows));

        let (inputs, targets) = names.split_at(split);
        let (x, y) = read_inputs_targets("train file", &path, inputs, targets).expect("read back");
        prop_assert_eq!(bits(&x), bits(&values.slice(ndarray::s![.., ..split]).to_owned()));
        prop_assert_eq!(bits(&y), bits(&values.slice(ndarray::s![.., split..]).to_owned()));
        prop_assert_eq!(bits(&read_all(&path, &names)), bits(&values));

        // The same file as one long-form sequence, named after the file.
        let columns = SequenceColumns { inputs: &names, ..no_columns() };
        let sequences = read_sequences("train file", &path, &columns).expect("read as a sequence");
        prop_assert_eq!(sequences.ids, vec!["data.csv".to_string()]);
        prop_assert_eq!(bits(&sequences.inputs[0]), bits(&values));
    }

    #[test]
    fn long_form_sequences_read_back_grouped_in_order(
        (names, values) in names().prop_flat_map(|names| {
            let n = names.len();
            (Just(names), values(n))
        }),
        key_picks in prop::collection::vec(0usize..3, 12),
        style in any::<u8>(),
    ) {
        let key = "sequence id";
        prop_assume!(!names.iter().any(|n| n == key));
        let ids = ["a", "7", "b c"];
        let keys: Vec<String> = (0..values.nrows()).map(|i| ids[key_picks[i]].to_string()).collect();
        let mut header = vec![key.to_string()];
        header.extend(names.iter().cloned());
        let rows: Vec<Vec<String>> = values
            .rows()
            .into_iter()
            .zip(&keys)
            .map(|(row, key)| {
                std::iter::once(key.clone()).chain(row.iter().map(|&v| formatted(v, style))).collect()
            })
            .collect();
        let dir = tempfile::tempdir().expect("dir");
        let path = file(&dir, "long.csv", &csv_document(&header, &rows));
        let columns = SequenceColumns { inputs: &names, sequence: Some(key), ..no_columns() };
        let read = read_sequences("train file", &path, &columns).expect("read back");
        let (expected_ids, expected) = grouped(&keys, &values);
        prop_assert_eq!(read.ids, expected_ids);
        prop_assert_eq!(read.inputs.len(), expected.len());
        for (got, want) in read.inputs.iter().zip(&expected) {
            prop_assert_eq!(bits(got), bits(want));
        }
    }

    #[test]
    fn predictions_written_by_the_command_line_read_back_bit_for_bit(
        (names, values) in names().prop_flat_map(|names| {
            let n = names.len();
            (Just(names), values(n))
        }),
        key_picks in prop::collection::vec(0usize..3, 12),
    ) {
        let dir = tempfile::tempdir().expect("dir");
        // One series: `reservoir predict` on a single series, `fit --predictions`.
        let bytes = csv_bytes(&names, values.view()).expect("write");
        let path = file(&dir, "predicted.csv", &bytes);
        prop_assert_eq!(bits(&read_all(&path, &names)), bits(&values));

        // Many series: a leading `sequence` column keys each row to its series.
        let key = "sequence";
        prop_assume!(!names.iter().any(|n| n == key));
        let ids = ["s0", "s,1", "s\"2"];
        let keys: Vec<String> = (0..values.nrows()).map(|i| ids[key_picks[i]].to_string()).collect();
        let bytes = keyed_csv_bytes(key, &keys, &names, values.view()).expect("write");
        let path = file(&dir, "predicted-many.csv", &bytes);
        let columns = SequenceColumns { inputs: &names, sequence: Some(key), ..no_columns() };
        let read = read_sequences("input file", &path, &columns).expect("read back");
        let (expected_ids, expected) = grouped(&keys, &values);
        prop_assert_eq!(read.ids, expected_ids);
        for (got, want) in read.inputs.iter().zip(&expected) {
            prop_assert_eq!(bits(got), bits(want));
        }
        let distinct: HashSet<&String> = keys.iter().collect();
        prop_assert_eq!(read.inputs.len(), distinct.len());
    }
}
