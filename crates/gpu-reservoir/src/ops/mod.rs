//! Typed operations: one function (or launch plan) per kernel, each checking the lengths of its
//! buffers before it launches. The reservoirs of this crate are written in these; only the
//! driver layer below them touches cudarc's raw calls.

pub(crate) mod cluster;
pub(crate) mod csr;
pub(crate) mod esn;
pub(crate) mod features;
pub(crate) mod lanes;
pub(crate) mod lif;
pub(crate) mod lif_cluster;
pub(crate) mod persistent;
pub(crate) mod ridge;
pub(crate) mod tensor_core;
