//! NumPy files: a `.npy` file is the inputs array; a `.npz` archive holds named inputs,
//! targets, labels and lengths arrays.
//!
//! Arrays are read with `ndarray-npy`, which decodes one element type per call: each accepted
//! type is tried in turn, and a type mismatch moves on to the next (it is found from the
//! header, before the data is read). Inputs are 2-D (T × K, one sequence) or 3-D (B × T × K,
//! B sequences of T steps, cut to per-sequence lengths when a lengths array is given).

mod assemble;
mod element;
mod header;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use assemble::assemble;
use element::{read_floats, read_integers, NpyFile, NpzEntry};
use header::Entries;
use ndarray::ArrayD;
use ndarray_npy::{NpzReader, ReadNpzError};
use zip::ZipArchive;

use super::{SequenceColumns, SequenceFile};
use crate::data::Result;
use crate::error::{quoted, DataError};

/// Why an array could not be read as one element type.
pub(super) enum Failure {
    /// The array holds another dtype (its descriptor, e.g. `'<i8'`).
    Dtype(String),
    /// The file or archive entry is unreadable or corrupt (the reader's message).
    Other(String),
}

/// The name of a `.npy` file's one array in messages and input names.
const NPY_ARRAY: &str = "x";

/// Reads a `.npy` file: its one array is the inputs.
pub(super) fn read_npy_file(
    what: &'static str,
    path: &Path,
    columns: &SequenceColumns<'_>,
) -> Result<SequenceFile> {
    if columns.targets.is_some() || columns.label.is_some() || columns.lengths.is_some() {
        return Err(DataError::NumpyFile {
            path: path.to_path_buf(),
            message: "a .npy file holds one array, the inputs; targets, labels and lengths need \
                      a .npz archive with named arrays"
                .to_string(),
        });
    }
    // Opened once here so that a missing file is reported as such.
    File::open(path).map_err(|source| DataError::Read {
        what,
        path: path.to_path_buf(),
        source,
    })?;
    let inputs = read_floats(path, NPY_ARRAY, &mut NpyFile { path })?;
    assemble(path, (NPY_ARRAY, inputs), None, None, None)
}

/// Reads a `.npz` archive: the arrays named in `columns`.
pub(super) fn read_npz_file(
    what: &'static str,
    path: &Path,
    columns: &SequenceColumns<'_>,
) -> Result<SequenceFile> {
    let read_error = |source| DataError::Read {
        what,
        path: path.to_path_buf(),
        source,
    };
    // Checked before opening: a directory opens but reads as an I/O error, and a FIFO would
    // block; a zip archive is read with seeks.
    let metadata = std::fs::metadata(path).map_err(read_error)?;
    if !metadata.is_file() {
        return Err(DataError::NumpyFile {
            path: path.to_path_buf(),
            message: if metadata.is_dir() {
                "is a directory, not a .npz archive".into()
            } else {
                "not a regular file (a .npz archive is read with seeks)".into()
            },
        });
    }
    let file = File::open(path).map_err(read_error)?;
    let not_an_archive = |e: ReadNpzError| DataError::NumpyFile {
        path: path.to_path_buf(),
        message: format!("not a readable .npz archive: {e}"),
    };
    let bytes = metadata.len();
    let mut archive =
        NpzReader::new(BufReader::with_capacity(1 << 20, file)).map_err(not_an_archive)?;
    let present = archive.names().map_err(not_an_archive)?;
    let inputs_name = one_name(path, "inputs", columns.inputs, &present)?;
    let targets_name = columns
        .targets
        .map(|names| one_name(path, "targets", names, &present))
        .transpose()?;
    // The archive again, for the sizes of its entries (the reader does not give them).
    let again = File::open(path).map_err(read_error)?;
    let mut entries = Entries {
        archive: ZipArchive::new(BufReader::new(again))
            .map_err(|e| not_an_archive(ReadNpzError::Zip(e)))?,
        bytes,
    };
    let mut npz = Npz {
        path,
        archive: &mut archive,
        entries: &mut entries,
        present: &present,
    };
    let inputs = npz.floats(inputs_name)?;
    let targets = targets_name.map(|name| npz.floats(name)).transpose()?;
    let labels = columns.label.map(|name| npz.integers(name)).transpose()?;
    let lengths = columns.lengths.map(|name| npz.integers(name)).transpose()?;
    assemble(path, inputs, targets, labels, lengths)
}

/// An open `.npz` archive and the names of its arrays.
struct Npz<'a> {
    path: &'a Path,
    archive: &'a mut NpzReader<BufReader<File>>,
    entries: &'a mut Entries,
    /// Array names without the `.npy` suffix.
    present: &'a [String],
}

impl Npz<'_> {
    /// The archive's name for the array the user called `name` (with or without `.npy`).
    fn find<'n>(&self, name: &'n str) -> Result<&'n str> {
        let bare = name.strip_suffix(".npy").unwrap_or(name);
        if self.present.iter().any(|p| p == bare) {
            return Ok(bare);
        }
        let listed = if self.present.is_empty() {
            "the archive holds no arrays".to_string()
        } else {
            let names: Vec<String> = self.present.iter().map(|p| format!("`{p}`")).collect();
            format!("arrays present: {}", names.join(", "))
        };
        Err(DataError::NumpyFile {
            path: self.path.to_path_buf(),
            message: format!("no array named `{name}` ({listed})"),
        })
    }

    /// The float array `name`, with the name it is known by.
    fn floats<'n>(&mut self, name: &'n str) -> Result<(&'n str, ArrayD<f64>)> {
        let name = self.find(name)?;
        let mut entry = NpzEntry {
            archive: self.archive,
            entries: self.entries,
            name,
        };
        Ok((name, read_floats(self.path, name, &mut entry)?))
    }

    /// The integer array `name`, with the name it is known by.
    fn integers<'n>(&mut self, name: &'n str) -> Result<(&'n str, ArrayD<i128>)> {
        let name = self.find(name)?;
        let mut entry = NpzEntry {
            archive: self.archive,
            entries: self.entries,
            name,
        };
        Ok((name, read_integers(self.path, name, &mut entry)?))
    }
}

/// The one array name in `names` (`role`: `inputs` or `targets`); an error lists the arrays
/// `present` in the archive to choose from.
fn one_name<'n>(
    path: &Path,
    role: &str,
    names: &'n [String],
    present: &[String],
) -> Result<&'n str> {
    match names {
        [name] => Ok(name),
        _ => {
            let quoted_names: Vec<String> = names.iter().map(|n| quoted(n).into_owned()).collect();
            let arrays: Vec<String> = present.iter().map(|n| quoted(n).into_owned()).collect();
            Err(DataError::NumpyFile {
                path: path.to_path_buf(),
                message: format!(
                    "a .npz file needs one {role} array, named with --{role}; got {} name(s) \
                     ({}); the archive holds: {}",
                    names.len(),
                    quoted_names.join(", "),
                    arrays.join(", ")
                ),
            })
        }
    }
}

/// An error about one array.
fn array_error(path: &Path, array: &str, message: String) -> DataError {
    DataError::NumpyArray {
        path: path.to_path_buf(),
        array: array.to_string(),
        message,
    }
}

/// A shape as NumPy prints it: `(4, 10, 3)`, `(4,)`.
fn shape_text(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => {
            let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
            format!("({})", dims.join(", "))
        }
    }
}
