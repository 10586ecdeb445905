//! The one interface every reservoir implements, on the CPU and on the GPU.
//!
//! Every method that touches a backend's memory can fail (a GPU's memset or copy can), so the
//! interface is fallible throughout. What a backend does better than the generic code it says
//! by overriding a provided method: [`Reservoir::run_many`] (the GPU steps many sequences at
//! once, the CPU reservoirs on the threads of their [`Par`]) and [`Reservoir::accumulate_ridge`] (the
//! GPU adds XᵀX where the states are).

mod parallel;
mod stream;
mod summaries;

pub(crate) use parallel::run_on_threads;
pub use summaries::{features_of_runs, fit_features};
pub(crate) use summaries::{put_row, reversed_copies, side_by_side};

use ndarray::{Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut2};

use crate::checks::{check_inputs, check_pattern};
use crate::error::Result;
use crate::features::SequenceFeatures;
use crate::par::Par;
use crate::readout::RidgeAccumulator;
use crate::spikes::SpikePattern;

/// Visits the states of each sequence of [`Reservoir::run_many`]: `(index, states)`.
pub type SequenceVisitor<'a> = dyn FnMut(usize, ArrayView2<f64>) -> Result<()> + 'a;

/// [`Reservoir::run_many`] one sequence after another: the provided method, and what an
/// override falls back to where stepping sequences together does not pay.
///
/// # Errors
/// As [`Reservoir::run_many`].
pub fn run_one_by_one<R: Reservoir + ?Sized>(
    reservoir: &mut R,
    sequences: &[ArrayView2<f64>],
    visit: &mut SequenceVisitor<'_>,
) -> Result<()> {
    for inputs in sequences {
        check_inputs(reservoir.input_size(), inputs)?;
    }
    for (index, inputs) in sequences.iter().enumerate() {
        reservoir.reset()?;
        let states = reservoir.run(*inputs)?;
        visit(index, states.view())?;
    }
    reservoir.reset()
}

/// A driven dynamical system that turns an input sequence (T × K) into states (T × N).
///
/// Inputs and states cross this interface as `f64` whatever the reservoir computes in, so a
/// readout trains on any backend's states the same way. Implementations check their
/// arguments with [`crate::checks`], so every backend rejects the same calls with the same
/// errors.
pub trait Reservoir: Send {
    /// Number of units N (columns of the states).
    fn size(&self) -> usize;

    /// Number of input channels K (columns of the inputs).
    fn input_size(&self) -> usize;

    /// The threads a run may use on the CPU: [`Par::Seq`] unless the reservoir was given more
    /// (e.g. `EchoStateNetwork::with_par`). The provided methods read it to keep beside a run
    /// only the threads it leaves free.
    fn par(&self) -> Par {
        Par::Seq
    }

    /// Lets runs use `par`; ignored by a reservoir that runs on one thread (or on a GPU).
    fn set_par(&mut self, _par: Par) {}

    /// Sets the state to zero (and the start of any per-run bookkeeping).
    ///
    /// # Errors
    /// A backend error (e.g. a failed device memset).
    fn reset(&mut self) -> Result<()>;

    /// The current state (N).
    ///
    /// # Errors
    /// A backend error (e.g. a failed copy from the device).
    fn state(&self) -> Result<Array1<f64>>;

    /// Replaces the current state.
    ///
    /// # Errors
    /// A shape error when `state` does not have N entries, an invalid-input error when one is
    /// not finite, or a backend error.
    fn set_state(&mut self, state: ArrayView1<f64>) -> Result<()>;

    /// Runs over `inputs` (T × K) from the current state, writing the state after each step
    /// into the matching row of `states` (T × N). The reservoir keeps the final state.
    ///
    /// # Errors
    /// A shape error for mismatched arrays, an invalid-input error for a non-finite input, or
    /// a backend error.
    fn run_into(&mut self, inputs: ArrayView2<f64>, states: ArrayViewMut2<f64>) -> Result<()>;

    /// [`Reservoir::run_into`] into a new array.
    fn run(&mut self, inputs: ArrayView2<f64>) -> Result<Array2<f64>> {
        let mut states = Array2::zeros((inputs.nrows(), self.size()));
        self.run_into(inputs, states.view_mut())?;
        Ok(states)
    }

    /// Runs a spike pattern from the current state: the pattern is binned at `dt_ms` (the
    /// summed amplitudes of each bin, see [`SpikePattern::to_input_matrix`]), one step per
    /// bin; returns the states (bins × N).
    ///
    /// # Errors
    /// A shape error when the pattern's channels are not K, an invalid `dt_ms`, or any error
    /// of the run.
    fn run_pattern(&mut self, pattern: &SpikePattern, dt_ms: f64) -> Result<Array2<f64>> {
        check_pattern(self.input_size(), pattern)?;
        let inputs = pattern.to_input_matrix(dt_ms)?;
        self.run(inputs.view())
    }

    /// Runs independent sequences (of any lengths, K columns each), each from the zero state,
    /// and hands each one's states (Tᵢ × N) to `visit` in order; the reservoir is left reset.
    /// No state carries from one sequence to the next.
    ///
    /// The provided method runs them one after another; a backend that steps many sequences
    /// at once overrides it with the same results to its arithmetic's rounding. The CPU
    /// reservoirs run them on their threads ([`Reservoir::par`]): a sparse echo-state reservoir in blocks of sequences
    /// stepped together (the same states to rounding, the same bits whatever the thread count
    /// or the order of the sequences), the others with the same results bit for bit.
    ///
    /// # Errors
    /// A sequence with the wrong width or a non-finite value (checked before any runs), any
    /// error of the runs, or the first error `visit` returns.
    fn run_many(
        &mut self,
        sequences: &[ArrayView2<f64>],
        visit: &mut SequenceVisitor<'_>,
    ) -> Result<()> {
        run_one_by_one(self, sequences, visit)
    }

    /// The readout features of independent sequences (one row of
    /// [`SequenceFeatures::width`] values each), every sequence run from the zero state as
    /// [`Reservoir::run_many`] runs it; `progress(sequences_done, sequences)` is called as
    /// they finish. The reservoir is left reset.
    ///
    /// The provided method summarizes the states [`Reservoir::run_many`] hands out; a backend
    /// that can summarize where its states are (the GPU) overrides it with the same features
    /// to its arithmetic's rounding.
    ///
    /// # Errors
    /// A sequence too short for the summaries, or of the wrong width, or with a non-finite
    /// value (all checked before any runs); any error of the runs.
    fn sequence_features(
        &mut self,
        sequences: &[ArrayView2<f64>],
        features: &SequenceFeatures,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Array2<f64>> {
        features_of_runs(self, sequences, features, progress)
    }

    /// Runs over `inputs` (T × K) from the current state and adds every (state, target) row
    /// after the first `washout` rows to `acc`, calling `progress(rows_run, T)` as it goes.
    ///
    /// Called by [`crate::fit::accumulate_run`], which checks first that `targets` has T rows
    /// and `acc` fits N features and the targets' columns, and that the washout leaves rows.
    /// The provided method streams the states through the CPU in chunks; a backend that can
    /// add the sums where its states are (the GPU) overrides it with the same sums to
    /// rounding.
    ///
    /// # Errors
    /// Any error of the run or of the accumulation.
    fn accumulate_ridge(
        &mut self,
        inputs: ArrayView2<f64>,
        targets: ArrayView2<f64>,
        washout: usize,
        acc: &mut RidgeAccumulator,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<()> {
        stream::accumulate_on_cpu(self, inputs, targets, washout, acc, progress)
    }
}
