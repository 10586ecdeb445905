//! The `.npy` header of an array, checked before `ndarray-npy` reads the array: the reader
//! allocates what the header says before it reads the data.

use std::fs::File;
use std::io::{BufReader, Read};

use ndarray_npy::npy::header::Header;
use zip::ZipArchive;

use super::{shape_text, Failure};

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
pub(super) fn check_header(reader: &mut impl Read, bytes: u64) -> std::result::Result<(), Failure> {
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
pub(super) struct Entries {
    pub(super) archive: ZipArchive<BufReader<File>>,
    /// The archive's size in bytes.
    pub(super) bytes: u64,
}

impl Entries {
    /// Checks the header of the entry `name` (or `name.npy`, the order the reader tries) with
    /// [`check_header`], against what the entry can hold: its declared size, and no more than
    /// [`MAX_EXPANSION`] times its compressed bytes. An entry that cannot be opened passes,
    /// for the reader to report.
    pub(super) fn check_header(&mut self, name: &str) -> std::result::Result<(), Failure> {
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
