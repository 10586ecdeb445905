use std::fs::File;
use std::path::PathBuf;

use ndarray::{array, Array1, Array2, Array3, Axis};
use ndarray_npy::{write_npy, NpzWriter, WritableElement, WriteNpyExt};

use super::{read_npy_file, read_npz_file};

use crate::data::sequences::{SequenceColumns, SequenceFile};
use crate::data::Result;

const NO_NAMES: &[String] = &[];

fn no_columns() -> SequenceColumns<'static> {
    SequenceColumns {
        inputs: NO_NAMES,
        targets: None,
        label: None,
        sequence: None,
        time: None,
        lengths: None,
    }
}

fn error_text(result: Result<SequenceFile>) -> String {
    match result {
        Ok(file) => panic!("expected an error, read {file:?}"),
        Err(e) => e.to_string(),
    }
}

/// A 3-D array whose value tells its index: 100 b + 10 t + k.
fn indexed(b: usize, t: usize, k: usize) -> Array3<f64> {
    Array3::from_shape_fn((b, t, k), |(b, t, k)| (100 * b + 10 * t + k) as f64)
}

/// Writes an archive of the given arrays (each written by its closure).
fn npz(dir: &tempfile::TempDir, write: impl FnOnce(&mut NpzWriter<File>)) -> PathBuf {
    let path = dir.path().join("data.npz");
    let mut writer = NpzWriter::new(File::create(&path).expect("create"));
    write(&mut writer);
    writer.finish().expect("finish");
    path
}

fn add<T: WriteNpyExt + ?Sized>(writer: &mut NpzWriter<File>, name: &str, array: &T) {
    writer.add_array(name, array).expect("add array");
}

fn one_string(name: &str) -> Vec<String> {
    vec![name.to_string()]
}

#[test]
fn npy_2d_is_one_sequence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("x.npy");
    let x = array![[1.0, 2.0], [3.0, 4.0], [5.0, -6.0]];
    write_npy(&path, &x).expect("write");
    let file = read_npy_file("train file", &path, &no_columns()).expect("read");
    assert_eq!(file.ids, ["0"]);
    assert_eq!(file.inputs, [x]);
    assert_eq!(file.targets, None);
    assert_eq!(file.labels, None);
    assert_eq!(file.input_names, ["x0", "x1"]);
    assert!(file.target_names.is_empty());
}

#[test]
fn npy_3d_is_one_sequence_per_row_of_the_first_axis() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("x.npy");
    write_npy(&path, &indexed(3, 2, 2)).expect("write");
    let file = read_npy_file("train file", &path, &no_columns()).expect("read");
    assert_eq!(file.ids, ["0", "1", "2"]);
    assert_eq!(file.inputs[0], array![[0.0, 1.0], [10.0, 11.0]]);
    assert_eq!(file.inputs[2], array![[200.0, 201.0], [210.0, 211.0]]);
    assert!(file.inputs.iter().all(|x| x.is_standard_layout()));
}

#[test]
fn npy_fortran_order_reads_the_same() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("x.npy");
    let x = indexed(2, 3, 2);
    let fortran = x.t().as_standard_layout().into_owned().reversed_axes();
    assert!(!fortran.is_standard_layout());
    write_npy(&path, &fortran).expect("write");
    let file = read_npy_file("train file", &path, &no_columns()).expect("read");
    assert_eq!(file.inputs[1], x.index_axis(Axis(0), 1));
    assert!(file.inputs[1].is_standard_layout());
}

#[test]
fn f32_inputs_are_widened() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("x.npy");
    write_npy(&path, &array![[0.5f32, -1.25], [3.0, 1e-3]]).expect("write");
    let file = read_npy_file("train file", &path, &no_columns()).expect("read");
    assert_eq!(
        file.inputs,
        [array![[0.5, -1.25], [3.0, f64::from(1e-3f32)]]]
    );
}

#[test]
fn npy_cannot_hold_targets_or_labels() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("x.npy");
    write_npy(&path, &array![[1.0]]).expect("write");
    let targets = one_string("y");
    for columns in [
        SequenceColumns {
            targets: Some(&targets),
            ..no_columns()
        },
        SequenceColumns {
            label: Some("label"),
            ..no_columns()
        },
    ] {
        let message = error_text(read_npy_file("train file", &path, &columns));
        assert!(message.ends_with("x.npy: a .npy file holds one array, the inputs; targets, labels and lengths need a .npz archive with named arrays"), "{message}");
    }
}

#[test]
fn npz_with_lengths_labels_and_targets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut x = indexed(3, 4, 2);
    // Padding past a sequence's length may hold anything, NaN included.
    x[[0, 3, 1]] = f64::NAN;
    let y = indexed(3, 4, 1).mapv(|v| v as f32);
    let path = npz(&dir, |w| {
        add(w, "x", &x);
        add(w, "y", &y);
        add(w, "label", &array![7i64, -2, 7]);
        add(w, "len", &array![3i32, 1, 4]);
        add(w, "other", &array![1u8]);
    });
    let inputs = one_string("x");
    let targets = one_string("y.npy");
    let columns = SequenceColumns {
        inputs: &inputs,
        targets: Some(&targets),
        label: Some("label.npy"),
        lengths: Some("len"),
        ..no_columns()
    };
    let file = read_npz_file("train file", &path, &columns).expect("read");
    assert_eq!(file.ids, ["0", "1", "2"]);
    assert_eq!(
        file.inputs,
        [
            array![[0.0, 1.0], [10.0, 11.0], [20.0, 21.0]],
            array![[100.0, 101.0]],
            array![
                [200.0, 201.0],
                [210.0, 211.0],
                [220.0, 221.0],
                [230.0, 231.0]
            ],
        ]
    );
    assert_eq!(
        file.targets,
        Some(vec![
            array![[0.0], [10.0], [20.0]],
            array![[100.0]],
            array![[200.0], [210.0], [220.0], [230.0]],
        ])
    );
    assert_eq!(file.labels, Some(vec!["7".into(), "-2".into(), "7".into()]));
    assert_eq!(file.input_names, ["x0", "x1"]);
    assert_eq!(file.target_names, ["y0"]);
}

#[test]
fn npz_2d_arrays_are_one_sequence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("data.npz");
    let mut writer = NpzWriter::new_compressed(File::create(&path).expect("create"));
    writer
        .add_array("in", &array![[1.0, 2.0], [3.0, 4.0]])
        .expect("add");
    writer.add_array("out", &array![[5.0], [6.0]]).expect("add");
    writer.add_array("label", &array![3u16]).expect("add");
    writer.finish().expect("finish");
    let inputs = one_string("in");
    let targets = one_string("out");
    let columns = SequenceColumns {
        inputs: &inputs,
        targets: Some(&targets),
        label: Some("label"),
        ..no_columns()
    };
    let file = read_npz_file("train file", &path, &columns).expect("read");
    assert_eq!(file.ids, ["0"]);
    assert_eq!(file.inputs, [array![[1.0, 2.0], [3.0, 4.0]]]);
    assert_eq!(file.targets, Some(vec![array![[5.0], [6.0]]]));
    assert_eq!(file.labels, Some(vec!["3".to_string()]));
    assert_eq!(file.input_names, ["in0", "in1"]);
    assert_eq!(file.target_names, ["out0"]);
}

/// Reads labels of element type `T` from an archive.
fn labels_of<T: WritableElement + Clone>(values: &[T]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let n = values.len();
    let path = npz(&dir, |w| {
        add(w, "x", &indexed(n, 1, 1));
        add(w, "label", &Array1::from(values.to_vec()));
    });
    let inputs = one_string("x");
    let columns = SequenceColumns {
        inputs: &inputs,
        label: Some("label"),
        ..no_columns()
    };
    let file = read_npz_file("train file", &path, &columns).expect("read");
    file.labels.expect("labels")
}

#[test]
fn integer_labels_of_every_accepted_dtype_become_text() {
    assert_eq!(
        labels_of(&[i64::MIN, 5]),
        [i64::MIN.to_string(), "5".into()]
    );
    assert_eq!(labels_of(&[-7i32, 0]), ["-7", "0"]);
    assert_eq!(labels_of(&[255u8, 1]), ["255", "1"]);
    assert_eq!(labels_of(&[65535u16]), ["65535"]);
    assert_eq!(labels_of(&[4_000_000_000u32]), ["4000000000"]);
    assert_eq!(labels_of(&[u64::MAX]), [u64::MAX.to_string()]);
    assert_eq!(labels_of(&[-128i8]), ["-128"]);
    assert_eq!(labels_of(&[-300i16]), ["-300"]);
}

/// The error from an archive of inputs `x` (3 × 4 × 2) plus `extra`, read with `columns`.
fn npz_error(extra: impl FnOnce(&mut NpzWriter<File>), columns: &SequenceColumns<'_>) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = npz(&dir, |w| {
        add(w, "x", &indexed(3, 4, 2));
        extra(w);
    });
    error_text(read_npz_file("train file", &path, columns))
}

#[test]
fn lengths_outside_one_to_t_are_rejected() {
    let inputs = one_string("x");
    let columns = SequenceColumns {
        inputs: &inputs,
        lengths: Some("len"),
        ..no_columns()
    };
    for (lengths, bad) in [
        ([4i64, 0, 1], "len[1] is 0"),
        ([4, 5, 1], "len[1] is 5"),
        ([1, 1, -1], "len[2] is -1"),
    ] {
        let message = npz_error(|w| add(w, "len", &Array1::from(lengths.to_vec())), &columns);
        assert!(
            message.ends_with(&format!("data.npz: array `len`: {bad}; each length must be in 1..=4 (the number of steps of inputs `x` of shape (3, 4, 2))")),
            "{message}"
        );
    }
    let message = npz_error(|w| add(w, "len", &array![1u8, 2]), &columns);
    assert!(message.ends_with("array `len`: shape (2,) does not fit inputs `x` of shape (3, 4, 2) (expected (3,), one entry per sequence)"), "{message}");
}

#[test]
fn mismatched_shapes_name_both_arrays() {
    let inputs = one_string("x");
    let targets = one_string("y");
    let columns = SequenceColumns {
        inputs: &inputs,
        targets: Some(&targets),
        ..no_columns()
    };
    let message = npz_error(|w| add(w, "y", &indexed(3, 3, 1)), &columns);
    assert!(message.ends_with("data.npz: array `y`: shape (3, 3, 1) does not fit inputs `x` of shape (3, 4, 2) (expected (3, 4, M) for 3-D inputs)"), "{message}");
    let message = npz_error(|w| add(w, "y", &Array2::<f64>::zeros((4, 1))), &columns);
    assert!(
        message.contains("array `y`: shape (4, 1) does not fit inputs `x` of shape (3, 4, 2)"),
        "{message}"
    );

    let label_columns = SequenceColumns {
        inputs: &inputs,
        label: Some("label"),
        ..no_columns()
    };
    let message = npz_error(
        |w| add(w, "label", &Array2::<i64>::zeros((3, 1))),
        &label_columns,
    );
    assert!(message.ends_with("array `label`: shape (3, 1) does not fit inputs `x` of shape (3, 4, 2) (expected (3,), one entry per sequence)"), "{message}");
}

#[test]
fn missing_arrays_list_those_present() {
    let inputs = one_string("x");
    let columns = SequenceColumns {
        inputs: &inputs,
        label: Some("labels"),
        ..no_columns()
    };
    let message = npz_error(|w| add(w, "label", &array![1i64, 2, 3]), &columns);
    assert!(
        message.ends_with("data.npz: no array named `labels` (arrays present: `x`, `label`)"),
        "{message}"
    );
}

#[test]
fn npz_needs_exactly_one_inputs_name() {
    let inputs = vec!["x".to_string(), "z".to_string()];
    let columns = SequenceColumns {
        inputs: &inputs,
        ..no_columns()
    };
    let message = npz_error(|w| add(w, "y", &indexed(3, 4, 1)), &columns);
    assert!(
        message.ends_with(
            "data.npz: a .npz file needs one inputs array, named with --inputs; got 2 name(s) \
             (x, z); the archive holds: x, y"
        ),
        "{message}"
    );
}

#[test]
fn a_directory_or_a_fifo_is_not_read_as_an_archive() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inputs = one_string("x");
    let columns = SequenceColumns {
        inputs: &inputs,
        ..no_columns()
    };
    let folder = dir.path().join("dir.npz");
    std::fs::create_dir(&folder).expect("dir");
    let message = error_text(read_npz_file("train file", &folder, &columns));
    assert!(
        message.ends_with("dir.npz: is a directory, not a .npz archive"),
        "{message}"
    );
    let fifo = dir.path().join("fifo.npz");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        // No writer: opening it would block; it is refused before.
        let message = error_text(read_npz_file("train file", &fifo, &columns));
        assert!(message.contains("not a regular file"), "{message}");
    }
}

#[test]
fn non_finite_values_are_named_by_index() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("x.npy");
    let mut x = indexed(2, 3, 2);
    x[[1, 2, 0]] = f64::INFINITY;
    write_npy(&path, &x).expect("write");
    let message = error_text(read_npy_file("train file", &path, &no_columns()));
    assert!(
        message.ends_with(
            "x.npy: array `x`: x[1, 2, 0] is inf; values must be finite and within ±3.4028e38"
        ),
        "{message}"
    );
    x[[0, 1, 1]] = -1e39;
    write_npy(&path, &x).expect("write");
    let message = error_text(read_npy_file("train file", &path, &no_columns()));
    assert!(
        message.ends_with("x[0, 1, 1] is -1e39; values must be finite and within ±3.4028e38"),
        "{message}"
    );

    let mut y = Array2::<f32>::zeros((4, 1));
    y[[3, 0]] = f32::NAN;
    let inputs = one_string("a");
    let targets = one_string("b");
    let columns = SequenceColumns {
        inputs: &inputs,
        targets: Some(&targets),
        ..no_columns()
    };
    let path = npz(&dir, |w| {
        add(w, "a", &Array2::<f64>::zeros((4, 2)));
        add(w, "b", &y);
    });
    let message = error_text(read_npz_file("train file", &path, &columns));
    assert!(
        message.ends_with(
            "data.npz: array `b`: b[3, 0] is NaN; values must be finite and within ±1.0000e150"
        ),
        "{message}"
    );
}

#[test]
fn wrong_dimensionality_and_empty_arrays_are_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("x.npy");
    write_npy(&path, &array![1.0, 2.0]).expect("write");
    let message = error_text(read_npy_file("train file", &path, &no_columns()));
    assert!(message.ends_with("x.npy: array `x`: 1 dimensions (shape (2,)); inputs must be 2-D (T, K) for one sequence or 3-D (B, T, K) for B sequences"), "{message}");

    write_npy(&path, &Array3::<f64>::zeros((2, 0, 3))).expect("write");
    let message = error_text(read_npy_file("train file", &path, &no_columns()));
    assert!(
        message.ends_with("x.npy: array `x`: shape (2, 0, 3) holds sequences of length 0"),
        "{message}"
    );

    write_npy(&path, &Array3::<f64>::zeros((0, 5, 3))).expect("write");
    let message = error_text(read_npy_file("train file", &path, &no_columns()));
    assert!(
        message.ends_with("x.npy: array `x`: shape (0, 5, 3) holds no sequences"),
        "{message}"
    );

    write_npy(&path, &Array2::<f64>::zeros((0, 3))).expect("write");
    let message = error_text(read_npy_file("train file", &path, &no_columns()));
    assert!(
        message.ends_with("x.npy: array `x`: shape (0, 3) holds sequences of length 0"),
        "{message}"
    );
}

#[test]
fn unsupported_dtypes_say_what_is_accepted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("x.npy");
    write_npy(&path, &array![[1i64, 2]]).expect("write");
    let message = error_text(read_npy_file("train file", &path, &no_columns()));
    assert!(
        message.ends_with(
            "x.npy: array `x`: dtype '<i8' is not accepted (accepted: float64, float32)"
        ),
        "{message}"
    );

    let inputs = one_string("x");
    let columns = SequenceColumns {
        inputs: &inputs,
        label: Some("label"),
        ..no_columns()
    };
    let message = npz_error(|w| add(w, "label", &array![1.0, 2.0, 3.0]), &columns);
    assert!(message.ends_with("data.npz: array `label`: dtype '<f8' is not accepted (accepted: int64, int32, uint8, uint16, uint32, uint64, int8, int16)"), "{message}");
}

#[test]
fn corrupt_files_pass_on_the_reader_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("x.npy");
    write_npy(&path, &indexed(2, 3, 2)).expect("write");
    let bytes = std::fs::read(&path).expect("read back");
    std::fs::write(&path, &bytes[..bytes.len() - 5]).expect("truncate");
    let message = error_text(read_npy_file("train file", &path, &no_columns()));
    assert!(
        message.ends_with("x.npy: array `x`: cannot read it: reached EOF before reading all data"),
        "{message}"
    );

    std::fs::write(&path, b"not numpy at all").expect("write");
    let message = error_text(read_npy_file("train file", &path, &no_columns()));
    assert!(
        message.contains("x.npy: array `x`: cannot read it: error parsing header"),
        "{message}"
    );

    let npz_path = dir.path().join("bad.npz");
    std::fs::write(&npz_path, &bytes).expect("write");
    let inputs = one_string("x");
    let columns = SequenceColumns {
        inputs: &inputs,
        ..no_columns()
    };
    let message = error_text(read_npz_file("train file", &npz_path, &columns));
    assert!(
        message.contains("bad.npz: not a readable .npz archive: zip file error"),
        "{message}"
    );

    let message = error_text(read_npz_file(
        "train file",
        &dir.path().join("absent.npz"),
        &columns,
    ));
    assert!(message.starts_with("cannot read train file `"), "{message}");
}
