//! Links that change what a readout sees of a reservoir: [`WithInput`] puts each step's input
//! beside the states (ReservoirPy's `[data, reservoir] >> readout`), so a readout can use the
//! input directly as well as through the reservoir.

use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut2};

use crate::checks::{check_run, check_state};
use crate::error::{ReservoirError, Result};
use crate::memory::try_vec;
use crate::par::Par;
use crate::reservoir::{Reservoir, SequenceVisitor};

/// A reservoir whose states are `[inner states, the input of the same step]`: N + K columns
/// for an inner reservoir of N units and K inputs.
///
/// Its state is the inner state followed by the last input (zero after a reset), so
/// [`Reservoir::state`] is the last row of a run as for every reservoir, and
/// [`Reservoir::set_state`] sets both: the inner state (which alone decides the next steps)
/// and the input reported beside it.
pub struct WithInput {
    inner: Box<dyn Reservoir>,
    /// The input of the last step, or the one set.
    last_input: Vec<f64>,
}

impl WithInput {
    /// Puts the input beside the states of `inner` (of any kind, on any device); the last
    /// input starts at zero.
    pub fn new(inner: Box<dyn Reservoir>) -> Self {
        let k = inner.input_size();
        Self {
            inner,
            last_input: vec![0.0; k],
        }
    }

    /// The reservoir whose states come first.
    pub fn inner(&self) -> &dyn Reservoir {
        self.inner.as_ref()
    }

    /// The inner reservoir back.
    pub fn into_inner(self) -> Box<dyn Reservoir> {
        self.inner
    }
}

impl Reservoir for WithInput {
    fn size(&self) -> usize {
        self.inner.size() + self.inner.input_size()
    }

    fn input_size(&self) -> usize {
        self.inner.input_size()
    }

    fn par(&self) -> Par {
        self.inner.par()
    }

    fn set_par(&mut self, par: Par) {
        self.inner.set_par(par);
    }

    fn reset(&mut self) -> Result<()> {
        self.last_input.fill(0.0);
        self.inner.reset()
    }

    fn state(&self) -> Result<Array1<f64>> {
        let inner = self.inner.state()?;
        Ok(inner.iter().chain(&self.last_input).copied().collect())
    }

    fn set_state(&mut self, state: ArrayView1<f64>) -> Result<()> {
        check_state(self.size(), &state)?;
        let n = self.inner.size();
        self.inner.set_state(state.slice(s![..n]))?;
        for (last, &v) in self.last_input.iter_mut().zip(state.slice(s![n..])) {
            *last = v;
        }
        Ok(())
    }

    fn run_into(&mut self, inputs: ArrayView2<f64>, mut states: ArrayViewMut2<f64>) -> Result<()> {
        check_run(self.size(), self.input_size(), &inputs, &states)?;
        let n = self.inner.size();
        self.inner.run_into(inputs, states.slice_mut(s![.., ..n]))?;
        states.slice_mut(s![.., n..]).assign(&inputs);
        if let Some(last) = inputs.nrows().checked_sub(1) {
            for (l, &v) in self.last_input.iter_mut().zip(inputs.row(last)) {
                *l = v;
            }
        }
        Ok(())
    }

    /// The inner reservoir's `run_many` (its own fast path), each sequence's inputs put beside
    /// its states as they are handed out.
    fn run_many(
        &mut self,
        sequences: &[ArrayView2<f64>],
        visit: &mut SequenceVisitor<'_>,
    ) -> Result<()> {
        let n = self.inner.size();
        let width = self.size();
        self.inner.run_many(sequences, &mut |index, states| {
            let inputs = sequences.get(index).ok_or_else(|| {
                ReservoirError::invalid(
                    "WithInput::run_many",
                    format!(
                        "the inner reservoir handed out sequence {index} of {}",
                        sequences.len()
                    ),
                )
            })?;
            if states.dim() != (inputs.nrows(), n) {
                return Err(ReservoirError::shape(
                    "WithInput::run_many: the inner reservoir's states",
                    format!("{} x {n}", inputs.nrows()),
                    format!("{} x {}", states.nrows(), states.ncols()),
                ));
            }
            let values = try_vec("states beside their inputs", inputs.nrows() * width, 0.0)?;
            let mut joined = Array2::from_shape_vec((inputs.nrows(), width), values)
                .map_err(|e| ReservoirError::invalid("WithInput::run_many", e))?;
            joined.slice_mut(s![.., ..n]).assign(&states);
            joined.slice_mut(s![.., n..]).assign(inputs);
            visit(index, joined.view())
        })?;
        self.last_input.fill(0.0);
        Ok(())
    }
}
