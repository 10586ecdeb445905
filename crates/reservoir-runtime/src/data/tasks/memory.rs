//! Memory capacity (Jaeger 2001).

use ndarray::{s, Array2};
use rand::Rng;
use serde::{Deserialize, Serialize};

use super::TaskData;
use reservoir_core::error::{ReservoirError, Result};
use reservoir_core::fit::accumulate_run;
use reservoir_core::random::{stream_rng, Stream};
use reservoir_core::readout::RidgeAccumulator;
use reservoir_core::reservoir::Reservoir;

/// Protocol of [`memory_capacity`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MemoryCapacityOptions {
    /// Largest delay k (outputs are u(t−1) … u(t−k_max)). Default 200.
    pub max_delay: usize,
    /// Rows used for training after the washout. Default 5000.
    pub train_len: usize,
    /// Held-out rows the capacity is measured on. Default 2000.
    pub test_len: usize,
    /// Rows dropped at the start (at least `max_delay`, so every target exists). Default 500.
    pub washout: usize,
    /// Ridge penalty of the readouts. Default 1e-10.
    pub ridge: f64,
    /// Seed of the i.i.d. input. Default 7.
    pub seed: u64,
}

impl Default for MemoryCapacityOptions {
    fn default() -> Self {
        Self {
            max_delay: 200,
            train_len: 5000,
            test_len: 2000,
            washout: 500,
            ridge: 1e-10,
            seed: 7,
        }
    }
}

/// Result of [`memory_capacity`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryCapacity {
    /// MC = Σ_k r²(u(t−k), ŷ_k(t)); at most the number of units.
    pub total: f64,
    /// r² for k = 1 … max_delay.
    pub per_delay: Vec<f64>,
}

/// The data of [`memory_capacity`]: `washout + train_len + test_len` rows of input
/// u ~ U[−0.5, 0.5] i.i.d. (seeded) and `max_delay` target columns, column k − 1 holding
/// u(t − k) (0 before the start). Rows `washout..washout + train_len` train the readouts,
/// the last `test_len` rows score them.
///
/// # Errors
/// An invalid-input error unless max_delay >= 1, washout >= max_delay, train_len >= 1 and
/// test_len >= 2.
pub fn memory_capacity_data(options: &MemoryCapacityOptions) -> Result<TaskData> {
    let MemoryCapacityOptions {
        max_delay,
        train_len,
        test_len,
        washout,
        seed,
        ..
    } = *options;
    if max_delay == 0 || washout < max_delay || train_len == 0 || test_len < 2 {
        return Err(ReservoirError::invalid(
            "memory capacity",
            "needs max_delay >= 1, washout >= max_delay, train_len >= 1, test_len >= 2",
        ));
    }
    let total = washout
        .checked_add(train_len)
        .and_then(|rows| rows.checked_add(test_len))
        .ok_or_else(|| ReservoirError::invalid("memory capacity", "the rows overflow usize"))?;
    // The input and one target column per delay.
    super::ensure_rows_fit("memory-capacity", total, max_delay.saturating_add(2))?;
    let mut rng = stream_rng(seed, Stream::Input);
    let u: Vec<f64> = (0..total).map(|_| rng.random_range(-0.5..0.5)).collect();
    let delayed = Array2::from_shape_fn(
        (total, max_delay),
        |(t, k)| if t > k { u[t - k - 1] } else { 0.0 },
    );
    let inputs = Array2::from_shape_vec((total, 1), u)
        .map_err(|e| ReservoirError::invalid("memory capacity", e))?;
    TaskData::new(inputs, delayed)
}

/// Measures memory capacity: input u ~ U[−0.5, 0.5] i.i.d.; for each delay k a ridge readout
/// is trained to output u(t−k) (all delays in one multi-output fit, which is the same as k
/// separate fits); MC is the sum of squared correlations on held-out rows
/// ([`memory_capacity_data`] makes the data). The held-out rows are streamed into ridge sums
/// and scored from them ([`RidgeAccumulator::score`]), as a sweep scores its lanes.
///
/// The reservoir must have one input channel; it is reset first.
pub fn memory_capacity(
    reservoir: &mut dyn Reservoir,
    options: &MemoryCapacityOptions,
) -> Result<MemoryCapacity> {
    if reservoir.input_size() != 1 {
        return Err(ReservoirError::invalid(
            "memory capacity",
            format!(
                "needs a 1-input reservoir, got {} inputs",
                reservoir.input_size()
            ),
        ));
    }
    let data = memory_capacity_data(options)?;
    let train_end = options.washout + options.train_len;
    let (inputs, delayed) = (&data.inputs, &data.targets);
    reservoir.reset()?;
    let mut train = RidgeAccumulator::new(
        reservoir.size(),
        options.max_delay,
        reservoir_core::Par::Seq,
    )?;
    accumulate_run(
        reservoir,
        inputs.slice(s![..train_end, ..]),
        delayed.slice(s![..train_end, ..]),
        options.washout,
        &mut train,
    )?;
    let fit = train.solve(options.ridge)?;
    let mut test = RidgeAccumulator::new(
        reservoir.size(),
        options.max_delay,
        reservoir_core::Par::Seq,
    )?;
    accumulate_run(
        reservoir,
        inputs.slice(s![train_end.., ..]),
        delayed.slice(s![train_end.., ..]),
        0,
        &mut test,
    )?;
    let per_delay = test.score(&fit.readout)?.squared_correlation;
    Ok(MemoryCapacity {
        total: per_delay.iter().sum(),
        per_delay,
    })
}
