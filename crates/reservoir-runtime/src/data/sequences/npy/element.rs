//! An array read as the first accepted element type that matches its dtype: floats as f64,
//! integers as i128.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use ndarray::{ArrayD, IxDyn, OwnedRepr};
use ndarray_npy::{NpzReader, ReadNpyError, ReadNpyExt, ReadNpzError, ReadableElement};

use super::header::{check_header, Entries};
use super::{array_error, Failure};
use crate::data::Result;

/// Dtypes accepted for inputs and targets, as NumPy names them.
const FLOAT_DTYPES: &str = "float64, float32";

/// Dtypes accepted for labels and lengths, as NumPy names them.
const INTEGER_DTYPES: &str = "int64, int32, uint8, uint16, uint32, uint64, int8, int16";

/// An array that can be read again as another element type.
pub(super) trait ArraySource {
    /// Reads the whole array as elements of type `T`.
    fn read<T: ReadableElement>(&mut self) -> std::result::Result<ArrayD<T>, Failure>;
}

/// The one array of a `.npy` file.
pub(super) struct NpyFile<'a> {
    pub(super) path: &'a Path,
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
pub(super) struct NpzEntry<'a> {
    pub(super) archive: &'a mut NpzReader<BufReader<File>>,
    /// The same archive, for the sizes of its entries.
    pub(super) entries: &'a mut Entries,
    /// The name without the `.npy` suffix (the reader tries both).
    pub(super) name: &'a str,
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
pub(super) fn read_floats<S: ArraySource>(
    path: &Path,
    array: &str,
    source: &mut S,
) -> Result<ArrayD<f64>> {
    read_first(
        path,
        array,
        source,
        &[read_as::<f64, S>, read_widened::<f32, f64, S>],
        FLOAT_DTYPES,
    )
}

/// Reads a labels or lengths array of any accepted integer dtype.
pub(super) fn read_integers<S: ArraySource>(
    path: &Path,
    array: &str,
    source: &mut S,
) -> Result<ArrayD<i128>> {
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
