//! The parts of the `reservoir` command line that read files: data in ([`data`]: CSV and
//! NumPy files) and the errors they report ([`error`]). The binary uses them from here, and so
//! do the fuzz targets and the tests that replay their corpus.

pub mod data;
pub mod error;
