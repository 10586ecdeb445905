//! NumPy files: a `.npy` file is the inputs array; a `.npz` archive holds named inputs,
//! targets, labels and lengths arrays.
//!
//! Arrays are read with `ndarray-npy`, which decodes one element type per call: each accepted
//! type is tried in turn, and a type mismatch moves on to the next (it is found from the
//! header, before the data is read). Inputs are 2-D (T × K, one sequence) or 3-D (B × T × K,
//! B sequences of T steps, cut to per-sequence lengths when a lengths array is given).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use ndarray::{s, Array3, ArrayD, ArrayView2, Axis, Ix3, IxDyn, OwnedRepr};
use ndarray_npy::npy::header::Header;
use ndarray_npy::{NpzReader, ReadNpyError, ReadNpyExt, ReadNpzError, ReadableElement};
use zip::ZipArchive;

use super::sequences::{SequenceColumns, SequenceFile};
use crate::error::{CliError, Result};
use reservoir_core::checks::{MAX_INPUT, MAX_TARGET};

/// The name of a `.npy` file's one array in messages and input names.
const NPY_ARRAY: &str = "x";

/// Dtypes accepted for inputs and targets, as NumPy names them.
const FLOAT_DTYPES: &str = "float64, float32";

/// Dtypes accepted for labels and lengths, as NumPy names them.
const INTEGER_DTYPES: &str = "int64, int32, uint8, uint16, uint32, uint64, int8, int16";

/// Why an array could not be read as one element type.
enum Failure {
    /// The array holds another dtype (its descriptor, e.g. `'<i8'`).
    Dtype(String),
    /// The file or archive entry is unreadable or corrupt (the reader's message).
    Other(String),
}

/// An array that can be read again as another element type.
trait ArraySource {
    /// Reads the whole array as elements of type `T`.
    fn read<T: ReadableElement>(&mut self) -> std::result::Result<ArrayD<T>, Failure>;
}

/// The one array of a `.npy` file.
struct NpyFile<'a> {
    path: &'a Path,
}

impl ArraySource for NpyFile<'_> {
    fn read<T: ReadableElement>(&mut self) -> std::result::Result<ArrayD<T>, Failure> {
        let open = || File::open(self.path).map_err(|e| Failure::Other(e.to_string()));
        let mut file = open()?;
        let bytes = file
            .metadata()
            .map_err(|e| Failure::Other(e.to_string()))?
            .len();
        check_header(&mut file, bytes)?;
        ArrayD::<T>::read_npy(BufReader::new(open()?)).map_err(|e| match e {
            ReadNpyError::WrongDescriptor(dtype) => Failure::Dtype(dtype.to_string()),
            other => Failure::Other(other.to_string()),
        })
    }
}

/// A named array of a `.npz` archive.
struct NpzEntry<'a> {
    archive: &'a mut NpzReader<BufReader<File>>,
    /// The same archive, for the sizes of its entries.
    entries: &'a mut Entries,
    /// The name without the `.npy` suffix (the reader tries both).
    name: &'a str,
}

impl ArraySource for NpzEntry<'_> {
    fn read<T: ReadableElement>(&mut self) -> std::result::Result<ArrayD<T>, Failure> {
        self.entries.check_header(self.name)?;
        self.archive
            .by_name::<OwnedRepr<T>, IxDyn>(self.name)
            .map_err(|e| match e {
                ReadNpzError::Npy(ReadNpyError::WrongDescriptor(dtype)) => {
                    Failure::Dtype(dtype.to_string())
                }
                other => Failure::Other(other.to_string()),
            })
    }
}

/// Longest `.npy` header read, in bytes: NumPy's own limit (`max_header_size` of
/// `numpy.load`); the arrays NumPy writes have headers of about a hundred bytes.
const MAX_HEADER_BYTES: u64 = 10_000;

/// Deepest nesting of brackets in a `.npy` header read. The header parser backtracks into
/// every nested value, so its time doubles (or more) with each level: 24 nested `[` take it
/// minutes. The arrays read here have headers nested two deep (the dict, the shape tuple).
const MAX_HEADER_NESTING: usize = 4;

/// Most bytes one compressed byte of an archive entry can expand to (deflate's limit).
const MAX_EXPANSION: u64 = 1032;

/// Reads the `.npy` header at the start of `reader`, which has `bytes` bytes in all, and fails
/// when it asks for more than the reader should give: a header longer than
/// [`MAX_HEADER_BYTES`] or than the file, nested deeper than [`MAX_HEADER_NESTING`], or
/// whose shape has more values than the bytes hold (each value of an accepted dtype takes at
/// least one). `ndarray-npy` allocates what the header says before it reads, so this keeps a
/// short file from asking for terabytes, or hours of parsing. A header that cannot be parsed
/// passes, for the reader to report.
fn check_header(reader: &mut impl Read, bytes: u64) -> std::result::Result<(), Failure> {
    let io_error = |e: std::io::Error| Failure::Other(e.to_string());
    // Magic string (6 bytes), version (2), header length (2 bytes in version 1, else 4).
    let mut prefix = Vec::with_capacity(12);
    reader.take(12).read_to_end(&mut prefix).map_err(io_error)?;
    let little_endian = |at: std::ops::Range<usize>| {
        let bytes = prefix.get(at)?;
        Some(bytes.iter().rev().fold(0u64, |n, &b| n << 8 | u64::from(b)))
    };
    let (header_bytes, start) = match prefix.get(..7) {
        Some([0x93, b'N', b'U', b'M', b'P', b'Y', 1]) => (little_endian(8..10), 10),
        Some([0x93, b'N', b'U', b'M', b'P', b'Y', _]) => (little_endian(8..12), 12),
        _ => (None, 0),
    };
    let Some(header_bytes) = header_bytes else {
        return Ok(());
    };
    let longest = MAX_HEADER_BYTES.min(bytes);
    if header_bytes > longest {
        return Err(Failure::Other(format!(
            "a header of {header_bytes} bytes, longer than {longest} (the file has {bytes} \
             bytes, and NumPy writes no header longer than {MAX_HEADER_BYTES})"
        )));
    }
    let mut text = prefix.split_off(start);
    reader
        .take(header_bytes.saturating_sub(text.len() as u64))
        .read_to_end(&mut text)
        .map_err(io_error)?;
    let mut depth = 0usize;
    for &byte in &text {
        match byte {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_HEADER_NESTING {
            return Err(Failure::Other(format!(
                "a header with brackets nested more than {MAX_HEADER_NESTING} deep (NumPy \
                 writes those of float and integer arrays two deep)"
            )));
        }
    }
    let Ok(header) = Header::from_reader(&mut prefix.as_slice().chain(text.as_slice())) else {
        return Ok(());
    };
    let values = header
        .shape
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(u64::try_from(d).ok()?));
    match values {
        Some(values) if values <= bytes => Ok(()),
        _ => Err(Failure::Other(format!(
            "the header's shape {} has more values than the file's {bytes} bytes can hold",
            shape_text(&header.shape)
        ))),
    }
}

/// The entries of an open `.npz` archive, to check an array's header before it is read.
struct Entries {
    archive: ZipArchive<BufReader<File>>,
    /// The archive's size in bytes.
    bytes: u64,
}

impl Entries {
    /// Checks the header of the entry `name` (or `name.npy`, the order the reader tries) with
    /// [`check_header`], against what the entry can hold: its declared size, and no more than
    /// [`MAX_EXPANSION`] times its compressed bytes. An entry that cannot be opened passes,
    /// for the reader to report.
    fn check_header(&mut self, name: &str) -> std::result::Result<(), Failure> {
        let index = self
            .archive
            .index_for_name(name)
            .or_else(|| self.archive.index_for_name(&format!("{name}.npy")));
        let Some(Ok(mut entry)) = index.map(|i| self.archive.by_index(i)) else {
            return Ok(());
        };
        let compressed = entry.compressed_size().min(self.bytes);
        let bytes = entry.size().min(compressed.saturating_mul(MAX_EXPANSION));
        check_header(&mut entry, bytes)
    }
}

/// Reads an array as one element type, widened to `U`.
type Reader<S, U> = fn(&mut S) -> std::result::Result<ArrayD<U>, Failure>;

/// Reads the array as `T` and widens its elements to `U`.
fn read_widened<T, U, S>(source: &mut S) -> std::result::Result<ArrayD<U>, Failure>
where
    T: ReadableElement + Copy,
    U: From<T>,
    S: ArraySource,
{
    source.read::<T>().map(|a| a.mapv(U::from))
}

/// Reads the array as `T`, as stored (no copy to widen).
fn read_as<T: ReadableElement, S: ArraySource>(
    source: &mut S,
) -> std::result::Result<ArrayD<T>, Failure> {
    source.read::<T>()
}

/// Reads with the first of `readers` whose element type matches the array's dtype.
fn read_first<U, S: ArraySource>(
    path: &Path,
    array: &str,
    source: &mut S,
    readers: &[Reader<S, U>],
    accepted: &str,
) -> Result<ArrayD<U>> {
    let mut dtype = String::from("?");
    for read in readers {
        match read(source) {
            Ok(values) => return Ok(values),
            Err(Failure::Dtype(found)) => dtype = found,
            Err(Failure::Other(message)) => {
                return Err(array_error(
                    path,
                    array,
                    format!("cannot read it: {message}"),
                ))
            }
        }
    }
    Err(array_error(
        path,
        array,
        format!("dtype {dtype} is not accepted (accepted: {accepted})"),
    ))
}

/// Reads an inputs or targets array, f32 widened to f64.
fn read_floats<S: ArraySource>(path: &Path, array: &str, source: &mut S) -> Result<ArrayD<f64>> {
    read_first(
        path,
        array,
        source,
        &[read_as::<f64, S>, read_widened::<f32, f64, S>],
        FLOAT_DTYPES,
    )
}

/// Reads a labels or lengths array of any accepted integer dtype.
fn read_integers<S: ArraySource>(path: &Path, array: &str, source: &mut S) -> Result<ArrayD<i128>> {
    read_first(
        path,
        array,
        source,
        &[
            read_widened::<i64, i128, S>,
            read_widened::<i32, i128, S>,
            read_widened::<u8, i128, S>,
            read_widened::<u16, i128, S>,
            read_widened::<u32, i128, S>,
            read_widened::<u64, i128, S>,
            read_widened::<i8, i128, S>,
            read_widened::<i16, i128, S>,
        ],
        INTEGER_DTYPES,
    )
}

/// Reads a `.npy` file: its one array is the inputs.
pub(super) fn read_npy_file(
    what: &'static str,
    path: &Path,
    columns: &SequenceColumns<'_>,
) -> Result<SequenceFile> {
    if columns.targets.is_some() || columns.label.is_some() || columns.lengths.is_some() {
        return Err(CliError::NumpyFile {
            path: path.to_path_buf(),
            message: "a .npy file holds one array, the inputs; targets, labels and lengths need \
                      a .npz archive with named arrays"
                .to_string(),
        });
    }
    // Opened once here so that a missing file is reported as such.
    File::open(path).map_err(|source| CliError::Read {
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
    let inputs_name = one_name(path, "inputs", columns.inputs)?;
    let targets_name = columns
        .targets
        .map(|names| one_name(path, "targets", names))
        .transpose()?;
    let file = File::open(path).map_err(|source| CliError::Read {
        what,
        path: path.to_path_buf(),
        source,
    })?;
    let not_an_archive = |e: ReadNpzError| CliError::NumpyFile {
        path: path.to_path_buf(),
        message: format!("not a readable .npz archive: {e}"),
    };
    let bytes = file
        .metadata()
        .map_err(|source| CliError::Read {
            what,
            path: path.to_path_buf(),
            source,
        })?
        .len();
    let mut archive = NpzReader::new(BufReader::new(file)).map_err(not_an_archive)?;
    let present = archive.names().map_err(not_an_archive)?;
    // The archive again, for the sizes of its entries (the reader does not give them).
    let again = File::open(path).map_err(|source| CliError::Read {
        what,
        path: path.to_path_buf(),
        source,
    })?;
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
        Err(CliError::NumpyFile {
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

/// The one array name in `names` (`role`: `inputs` or `targets`).
fn one_name<'n>(path: &Path, role: &str, names: &'n [String]) -> Result<&'n str> {
    match names {
        [name] => Ok(name),
        _ => Err(CliError::NumpyFile {
            path: path.to_path_buf(),
            message: format!(
                "a .npz file needs exactly one {role} array name, got {} ({})",
                names.len(),
                names.join(", ")
            ),
        }),
    }
}

/// An error about one array.
fn array_error(path: &Path, array: &str, message: String) -> CliError {
    CliError::NumpyArray {
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

/// Checks shapes and values and cuts the arrays into sequences. Each array comes with its
/// name; 2-D inputs (and targets) are one sequence.
fn assemble(
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

    let mut inputs = Vec::with_capacity(b);
    let mut target_seqs = targets.as_ref().map(|_| Vec::with_capacity(b));
    for (i, &len) in lengths.iter().enumerate() {
        let xi = x.slice(s![i, ..len, ..]);
        check_finite(path, x_name, xi, i, one_sequence, MAX_INPUT)?;
        inputs.push(xi.as_standard_layout().into_owned());
        if let (Some((y_name, y)), Some(seqs)) = (&targets, &mut target_seqs) {
            let yi = y.slice(s![i, ..len, ..]);
            check_finite(path, y_name, yi, i, one_sequence, MAX_TARGET)?;
            seqs.push(yi.as_standard_layout().into_owned());
        }
    }
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

/// Fails on the first value that is not finite or beyond ±`limit` (see [`super::limit`]),
/// naming its index in the file's array.
fn check_finite(
    path: &Path,
    name: &str,
    values: ArrayView2<'_, f64>,
    sequence: usize,
    one_sequence: bool,
    limit: f64,
) -> Result<()> {
    match values
        .indexed_iter()
        .find(|(_, v)| !v.is_finite() || v.abs() > limit)
    {
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

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array1, Array2};
    use ndarray_npy::{write_npy, NpzWriter, WritableElement, WriteNpyExt};
    use std::path::PathBuf;

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
    fn npz_error(
        extra: impl FnOnce(&mut NpzWriter<File>),
        columns: &SequenceColumns<'_>,
    ) -> String {
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
        let message = npz_error(|_| {}, &columns);
        assert!(
            message.ends_with(
                "data.npz: a .npz file needs exactly one inputs array name, got 2 (x, z)"
            ),
            "{message}"
        );
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
            message
                .ends_with("x.npy: array `x`: cannot read it: reached EOF before reading all data"),
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
}
