//! Closed-loop generation: the readout's predictions are fed back as the next input.

use ndarray::{Array2, ArrayView1};

use crate::error::{ReservoirError, Result};
use crate::memory::try_vec;
use crate::readout::LinearReadout;
use crate::reservoir::Reservoir;

/// Generates `steps` outputs autonomously.
///
/// The reservoir is driven by `first_input` (the last known true value), then by each
/// prediction in turn: row i of the result is the readout's output after i + 1 steps. Use it
/// after a teacher-forced run that ends one step before `first_input`.
///
/// # Errors
/// A shape error unless the readout has as many outputs as the reservoir has inputs and
/// `first_input` has that length; any error of the run (e.g. a prediction that diverged to
/// a non-finite value).
pub fn closed_loop(
    reservoir: &mut dyn Reservoir,
    readout: &LinearReadout,
    first_input: ArrayView1<f64>,
    steps: usize,
) -> Result<Array2<f64>> {
    let k = reservoir.input_size();
    if readout.n_outputs() != k
        || first_input.len() != k
        || readout.n_features() != reservoir.size()
    {
        return Err(ReservoirError::shape(
            "closed-loop generation",
            format!(
                "a readout of {} features → {k} outputs and a first input of {k}",
                reservoir.size()
            ),
            format!(
                "a readout of {} features → {} outputs and a first input of {}",
                readout.n_features(),
                readout.n_outputs(),
                first_input.len()
            ),
        ));
    }
    // `steps` is the caller's: allocated fallibly, so a count too large is an error.
    let len = steps.checked_mul(k).ok_or_else(|| {
        ReservoirError::invalid(
            "closed-loop generation",
            format!("{steps} steps of {k} values do not fit in memory"),
        )
    })?;
    let values = try_vec("closed-loop outputs", len, 0.0)?;
    let mut outputs = Array2::from_shape_vec((steps, k), values)
        .map_err(|e| ReservoirError::invalid("closed-loop generation", e.to_string()))?;
    let mut input = first_input.to_owned().insert_axis(ndarray::Axis(0));
    for mut row in outputs.rows_mut() {
        let states = reservoir.run(input.view())?;
        let prediction = readout.predict(states.view())?;
        row.assign(&prediction.row(0));
        input = prediction;
    }
    Ok(outputs)
}
