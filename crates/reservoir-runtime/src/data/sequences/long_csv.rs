//! Long-form CSV: one row per time step, rows grouped into sequences by a sequence-id column.
//!
//! The file is streamed once: each row's used cells are parsed as it is read and only the
//! numbers are kept, so memory holds the values, not the text, and time is linear in the rows
//! (plus a sort per sequence when a time column orders them).

use std::collections::HashMap;
use std::path::Path;

use ndarray::Array2;

use super::{SequenceColumns, SequenceFile};
use crate::data::columns::{
    check_held, csv_error, find_column, limit, open_csv, parse_cell, CsvFile,
};
use crate::data::Result;
use crate::error::{quoted, DataError};

/// The rows of one sequence, in file order until they are sorted by time.
struct Rows {
    /// Inputs, row after row (K values each).
    inputs: Vec<f64>,
    /// Targets, row after row (M values each); empty without target columns.
    targets: Vec<f64>,
    /// The time of each row; empty without a time column.
    times: Vec<f64>,
    /// The 1-based line of each row, for messages.
    lines: Vec<u64>,
    /// The label and the line it was first read on; `None` without a label column.
    label: Option<(String, u64)>,
}

/// Reads a long-form CSV file (see [`super::read_sequences`]).
pub(super) fn read_long_csv(
    what: &'static str,
    path: &Path,
    columns: &SequenceColumns<'_>,
) -> Result<SequenceFile> {
    let CsvFile {
        mut reader,
        headers,
        mut lines,
    } = open_csv(what, path)?;
    let column = |role: &'static str, name: &str| find_column(path, &headers, role, name);
    let input_columns = columns
        .inputs
        .iter()
        .map(|name| column("input", name))
        .collect::<Result<Vec<usize>>>()?;
    let target_columns = columns
        .targets
        .map(|names| {
            names
                .iter()
                .map(|name| column("target", name))
                .collect::<Result<Vec<usize>>>()
        })
        .transpose()?;
    let label_column = columns.label.map(|n| column("label", n)).transpose()?;
    let sequence_column = columns
        .sequence
        .map(|n| column("sequence", n))
        .transpose()?;
    let time_column = columns.time.map(|n| column("time", n)).transpose()?;

    let number = |record: &csv::StringRecord, index: usize, line: u64, role: &str| {
        parse_cell(record.get(index).unwrap_or(""), limit(role)).map_err(|problem| {
            DataError::BadCell {
                path: path.to_path_buf(),
                line,
                column: headers.get(index).unwrap_or("?").to_string(),
                problem,
            }
        })
    };
    let whole_file_id = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let mut index_of: HashMap<String, usize> = HashMap::new();
    let mut ids: Vec<String> = Vec::new();
    let mut sequences: Vec<Rows> = Vec::new();
    // Bytes held for the rows read so far: their numbers and line, and each id (twice) with
    // its sequence's vectors; bounded by the memory available ([`check_held`]).
    let row_bytes = 8
        * (1 + input_columns.len()
            + target_columns.as_ref().map_or(0, Vec::len)
            + usize::from(time_column.is_some())) as u64;
    let (mut held, mut row_count) = (0u64, 0usize);
    let mut record = csv::StringRecord::new();
    while reader
        .read_record(&mut record)
        .map_err(|e| csv_error(what, path, e, &mut lines))?
    {
        let line = lines.line(record.position());
        let id = match sequence_column {
            Some(c) => text(path, &headers, &record, c, line)?,
            None => whole_file_id.as_str(),
        };
        let s = match index_of.get(id) {
            Some(&s) => s,
            None => {
                held =
                    held.saturating_add((2 * id.len() + std::mem::size_of::<Rows>() + 64) as u64);
                index_of.insert(id.to_string(), sequences.len());
                ids.push(id.to_string());
                sequences.push(Rows {
                    inputs: Vec::new(),
                    targets: Vec::new(),
                    times: Vec::new(),
                    lines: Vec::new(),
                    label: None,
                });
                sequences.len() - 1
            }
        };
        let rows = &mut sequences[s];
        if let Some(c) = label_column {
            let label = text(path, &headers, &record, c, line)?;
            match &rows.label {
                None => rows.label = Some((label.to_string(), line)),
                Some((first, first_line)) if first != label => {
                    return Err(DataError::BadSequence {
                        path: path.to_path_buf(),
                        line,
                        sequence: ids[s].clone(),
                        message: format!(
                            "label `{}` differs from label `{}` on line {first_line} \
                             (a sequence has one label{})",
                            quoted(label),
                            quoted(first),
                            if sequence_column.is_none() {
                                "; without --sequence-column the whole file is one \
                                 sequence: name the column of each row's sequence"
                            } else {
                                ""
                            }
                        ),
                    });
                }
                Some(_) => {}
            }
        }
        if let Some(c) = time_column {
            // Adding zero turns -0 into +0, so the two compare as the same time when sorting.
            rows.times.push(number(&record, c, line, "time")? + 0.0);
        }
        for &c in &input_columns {
            rows.inputs.push(number(&record, c, line, "input")?);
        }
        for &c in target_columns.iter().flatten() {
            rows.targets.push(number(&record, c, line, "target")?);
        }
        rows.lines.push(line);
        row_count += 1;
        held = held.saturating_add(row_bytes);
        check_held(path, row_count, line, held)?;
    }
    if sequences.is_empty() {
        return Err(DataError::NoRows {
            path: path.to_path_buf(),
        });
    }

    let k = input_columns.len();
    let m = target_columns.as_ref().map_or(0, Vec::len);
    let mut inputs = Vec::with_capacity(sequences.len());
    let mut targets = target_columns.as_ref().map(|_| Vec::new());
    let mut labels = label_column.map(|_| Vec::new());
    for (rows, id) in sequences.into_iter().zip(&ids) {
        let order = time_order(path, id, &rows)?;
        let n = rows.lines.len();
        inputs.push(matrix(rows.inputs, n, k, order.as_deref())?);
        if let Some(targets) = &mut targets {
            targets.push(matrix(rows.targets, n, m, order.as_deref())?);
        }
        if let (Some(labels), Some((label, _))) = (&mut labels, rows.label) {
            labels.push(label);
        }
    }
    Ok(SequenceFile {
        ids,
        inputs,
        targets,
        labels,
        input_names: columns.inputs.to_vec(),
        target_names: columns.targets.map(<[String]>::to_vec).unwrap_or_default(),
    })
}

/// The non-empty text of cell `index` on `line`.
fn text<'r>(
    path: &Path,
    headers: &csv::StringRecord,
    record: &'r csv::StringRecord,
    index: usize,
    line: u64,
) -> Result<&'r str> {
    match record.get(index) {
        Some(cell) if !cell.is_empty() => Ok(cell),
        _ => Err(DataError::BadCell {
            path: path.to_path_buf(),
            line,
            column: headers.get(index).unwrap_or("?").to_string(),
            problem: "the cell is empty".to_string(),
        }),
    }
}

/// The rows of a sequence in time order (`None` when there is no time column or the rows are
/// already in order); two rows at the same time are an error naming both lines.
fn time_order(path: &Path, id: &str, rows: &Rows) -> Result<Option<Vec<usize>>> {
    let times = &rows.times;
    if times.is_empty() {
        return Ok(None);
    }
    let mut order: Vec<usize> = (0..times.len()).collect();
    // Stable, so rows at equal times stay in file order and the error names the later one.
    order.sort_by(|&a, &b| times[a].total_cmp(&times[b]));
    for pair in order.windows(2) {
        if let [earlier, later] = *pair {
            if times[earlier] == times[later] {
                return Err(DataError::BadSequence {
                    path: path.to_path_buf(),
                    line: rows.lines[later],
                    sequence: id.to_string(),
                    message: format!(
                        "time {} is also the time of line {} (times must differ within a sequence)",
                        times[later], rows.lines[earlier]
                    ),
                });
            }
        }
    }
    let sorted = order.iter().enumerate().all(|(i, &r)| i == r);
    Ok((!sorted).then_some(order))
}

/// The row-major `values` (`rows` rows of `width`) as a matrix, rows taken in `order` when
/// given.
fn matrix(
    values: Vec<f64>,
    rows: usize,
    width: usize,
    order: Option<&[usize]>,
) -> Result<Array2<f64>> {
    let values = match order {
        Some(order) => order
            .iter()
            .flat_map(|&r| values.get(r * width..(r + 1) * width).unwrap_or(&[]))
            .copied()
            .collect(),
        None => values,
    };
    Array2::from_shape_vec((rows, width), values).map_err(|e| DataError::Format {
        what: "a sequence's matrix",
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;
    use std::path::PathBuf;

    /// Writes `text` as `name` in a fresh directory (kept alive by the returned guard).
    fn csv_file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write csv");
        (dir, path)
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|n| n.to_string()).collect()
    }

    /// Columns `u, v` in, `y` out, `label`, `seq`, `t`.
    fn read_full(path: &Path) -> Result<SequenceFile> {
        let inputs = names(&["u", "v"]);
        let targets = names(&["y"]);
        let columns = SequenceColumns {
            inputs: &inputs,
            targets: Some(&targets),
            label: Some("label"),
            sequence: Some("seq"),
            time: Some("t"),
            lengths: None,
        };
        read_long_csv("train file", path, &columns)
    }

    fn error_text(result: Result<SequenceFile>) -> String {
        match result {
            Ok(file) => panic!("expected an error, read {file:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn interleaved_sequences_are_grouped_and_ordered_by_time() {
        let (_dir, path) = csv_file(
            "long.csv",
            "seq,t,u,v,y,label,note\n\
             b, 2, 20, 21, 2.5, cat, anything\n\
             a, 1, 10, 11, 1.5, dog,\n\
             b, 0, 22, 23, 3.5, cat, x\n\
             a, 0, 12, 13, 4.5, dog, y\n\
             c, -1, 30, 31, 5.5, 7, z\n\
             b, 1, 24, 25, 6.5, cat, w\n",
        );
        let file = read_full(&path).expect("read");
        assert_eq!(file.ids, ["b", "a", "c"]);
        assert_eq!(
            file.inputs,
            [
                array![[22.0, 23.0], [24.0, 25.0], [20.0, 21.0]],
                array![[12.0, 13.0], [10.0, 11.0]],
                array![[30.0, 31.0]],
            ]
        );
        assert_eq!(
            file.targets,
            Some(vec![
                array![[3.5], [6.5], [2.5]],
                array![[4.5], [1.5]],
                array![[5.5]],
            ])
        );
        assert_eq!(file.labels, Some(names(&["cat", "dog", "7"])));
        assert_eq!(file.input_names, ["u", "v"]);
        assert_eq!(file.target_names, ["y"]);
    }

    #[test]
    fn without_time_column_rows_keep_file_order() {
        let (_dir, path) = csv_file("long.csv", "id,u\n1,5\n2,6\n1,7\n2,8\n1,9\n");
        let inputs = names(&["u"]);
        let columns = SequenceColumns {
            inputs: &inputs,
            targets: None,
            label: None,
            sequence: Some("id"),
            time: None,
            lengths: None,
        };
        let file = read_long_csv("train file", &path, &columns).expect("read");
        assert_eq!(file.ids, ["1", "2"]);
        assert_eq!(
            file.inputs,
            [array![[5.0], [7.0], [9.0]], array![[6.0], [8.0]]]
        );
        assert_eq!(file.targets, None);
        assert_eq!(file.labels, None);
        assert!(file.target_names.is_empty());
    }

    #[test]
    fn whole_file_is_one_sequence_named_after_the_file() {
        let (_dir, path) = csv_file("walk.csv", "t,u,y,label\n1,0.5,1,up\n0,0.25,2,up\n");
        let inputs = names(&["u"]);
        let targets = names(&["y"]);
        let columns = SequenceColumns {
            inputs: &inputs,
            targets: Some(&targets),
            label: Some("label"),
            sequence: None,
            time: Some("t"),
            lengths: None,
        };
        let file = read_long_csv("train file", &path, &columns).expect("read");
        assert_eq!(file.ids, ["walk.csv"]);
        assert_eq!(file.inputs, [array![[0.25], [0.5]]]);
        assert_eq!(file.targets, Some(vec![array![[2.0], [1.0]]]));
        assert_eq!(file.labels, Some(names(&["up"])));

        let (_dir, path) = csv_file("walk.csv", "t,u,y,label\n1,0.5,1,up\n0,0.25,2,down\n");
        let message = error_text(read_long_csv("train file", &path, &columns));
        assert!(message.contains("walk.csv: line 3: sequence `walk.csv`: label `down` differs from label `up` on line 2"), "{message}");
        assert!(message.contains("without --sequence-column"), "{message}");
    }

    #[test]
    fn each_missing_column_is_named_with_its_role() {
        let header = "seq,t,u,v,y,label\n";
        for (missing, role) in [
            ("seq", "sequence"),
            ("t", "time"),
            ("u", "input"),
            ("y", "target"),
            ("label", "label"),
        ] {
            let renamed = header.replace(&format!("{missing},"), "other,");
            let renamed = renamed.replace(&format!(",{missing}\n"), ",other\n");
            let (_dir, path) = csv_file("long.csv", &format!("{renamed}a,0,1,2,3,x\n"));
            let message = error_text(read_full(&path));
            assert!(message.contains("long.csv: no "), "{message}");
            assert!(
                message.contains(&format!(
                    "no {role} column named `{missing}` (columns present:"
                )),
                "{message}"
            );
        }
    }

    #[test]
    fn ragged_rows_name_the_line() {
        let (_dir, path) = csv_file("long.csv", "seq,t,u,v,y,label\na,0,1,2,3,x\na,1,1,2,3\n");
        let message = error_text(read_full(&path));
        assert!(
            message.ends_with("long.csv: line 3: 5 fields, but the header has 6"),
            "{message}"
        );
    }

    #[test]
    fn bad_numbers_name_line_and_column() {
        for (row, column, problem) in [
            ("a,0,NaN,2,3,x", "u", "`NaN` is not a finite number"),
            ("a,0,1,2,abc,x", "y", "`abc` is not a number"),
            ("a,inf,1,2,3,x", "t", "`inf` is not a finite number"),
            ("a,,1,2,3,x", "t", "the cell is empty"),
            ("a,0,1,2,3,", "label", "the cell is empty"),
            (",0,1,2,3,x", "seq", "the cell is empty"),
        ] {
            let (_dir, path) = csv_file(
                "long.csv",
                &format!("seq,t,u,v,y,label\nb,5,1,2,3,x\n{row}\n"),
            );
            let message = error_text(read_full(&path));
            assert!(
                message.ends_with(&format!("long.csv: line 3, column `{column}`: {problem}")),
                "{message}"
            );
        }
    }

    #[test]
    fn repeated_time_names_both_lines() {
        let (_dir, path) = csv_file(
            "long.csv",
            "seq,t,u,v,y,label\na,1,1,2,3,x\nb,1,1,2,3,x\na,2,1,2,3,x\na,1.0,1,2,3,x\n",
        );
        let message = error_text(read_full(&path));
        assert!(
            message.ends_with(
                "long.csv: line 5: sequence `a`: time 1 is also the time of line 2 \
                 (times must differ within a sequence)"
            ),
            "{message}"
        );
        // -0 and 0 are the same time.
        let (_dir, path) = csv_file("long.csv", "seq,t,u,v,y,label\na,-0,1,2,3,x\na,0,1,2,3,x\n");
        let message = error_text(read_full(&path));
        assert!(
            message.contains("line 3: sequence `a`: time 0 is also the time of line 2"),
            "{message}"
        );
    }

    #[test]
    fn a_sequence_has_one_label() {
        let (_dir, path) = csv_file(
            "long.csv",
            "seq,t,u,v,y,label\na,0,1,2,3,x\nb,0,1,2,3,x\nb,1,1,2,3,y\n",
        );
        let message = error_text(read_full(&path));
        assert!(
            message.ends_with(
                "long.csv: line 4: sequence `b`: label `y` differs from label `x` on line 3 \
                 (a sequence has one label)"
            ),
            "{message}"
        );
    }

    #[test]
    fn empty_files_are_rejected() {
        let (_dir, path) = csv_file("long.csv", "");
        let message = error_text(read_full(&path));
        assert!(
            message.ends_with("long.csv: the file is empty (no header row)"),
            "{message}"
        );
        let (_dir, path) = csv_file("long.csv", "seq,t,u,v,y,label\n");
        let message = error_text(read_full(&path));
        assert!(
            message.ends_with("long.csv: no data rows (only a header)"),
            "{message}"
        );
        let missing = path.with_file_name("absent.csv");
        let message = error_text(read_full(&missing));
        assert!(message.starts_with("cannot read train file `"), "{message}");
        assert!(message.contains("absent.csv"), "{message}");
    }

    #[test]
    fn many_rows_read_in_linear_time() {
        // 200,000 rows over 1,000 interleaved sequences, times descending within each.
        let mut text = String::from("seq,t,u\n");
        let rows = 200_000;
        for r in 0..rows {
            text.push_str(&format!("s{},{},{}\n", r % 1000, rows - r, r));
        }
        let (_dir, path) = csv_file("big.csv", &text);
        let inputs = names(&["u"]);
        let columns = SequenceColumns {
            inputs: &inputs,
            targets: None,
            label: None,
            sequence: Some("seq"),
            time: Some("t"),
            lengths: None,
        };
        let start = std::time::Instant::now();
        let file = read_long_csv("train file", &path, &columns).expect("read");
        assert!(start.elapsed() < std::time::Duration::from_secs(20));
        assert_eq!(file.ids.len(), 1000);
        assert_eq!(file.ids[7], "s7");
        let seven = &file.inputs[7];
        assert_eq!(seven.nrows(), 200);
        assert_eq!(seven[[0, 0]], (rows - 1000 + 7) as f64);
        assert_eq!(seven[[199, 0]], 7.0);
    }
}
