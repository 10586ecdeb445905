//! The checks of a launch's or a cuBLAS call's arguments: sizes as the `int`s they take, and
//! buffers long enough for what they are given.

use reservoir_core::ReservoirError;

use crate::error::Result;

/// `value` as a kernel's `int`, or an error naming `what`.
pub(crate) fn dim(value: usize, what: &str) -> Result<i32> {
    i32::try_from(value).map_err(|_| {
        ReservoirError::invalid(what, format!("{value} exceeds the 2^31 - 1 a kernel takes")).into()
    })
}

/// An error naming `what` unless a buffer of `len` elements holds `needed`.
pub(crate) fn fits(len: usize, needed: usize, what: &str) -> Result<()> {
    if len < needed {
        return Err(ReservoirError::shape(what, format!(">= {needed} values"), len).into());
    }
    Ok(())
}
