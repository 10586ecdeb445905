//! Deep reservoirs: a stack of reservoirs, each driven by the states of the one below
//! (Gallicchio & Micheli's DeepESN; ReservoirPy's and ReservoirComputing.jl's "deep ESN").
//!
//! Layer 0 is driven by the input; layer k by layer k − 1's states, and also by the input when
//! `input_to_all` is set (its input is then `[states of k − 1, input]`). The states a readout
//! sees are the concatenation of the chosen layers' states (all by default).
//!
//! A layer's states at step t depend only on its own past and its input up to t, so running
//! layer 0 over a whole sequence, then layer 1 over layer 0's states, and so on, gives exactly
//! the states of stepping the whole stack one step at a time. [`DeepReservoir`] runs that way,
//! layer by layer over long stretches of steps (and over many sequences at once in
//! [`Reservoir::run_many`]), so each layer runs its own fast path: a GPU layer a whole stretch
//! in one call.

mod esn;

pub use esn::{
    cpu_deep_esn, layer_seed, DeepEsnConfig, DeepEsnLayerParams, DeepEsnParams, MAX_LAYERS,
};

use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut2};

use crate::checks::{check_inputs, check_run, check_state};
use crate::error::{ReservoirError, Result};
use crate::memory::try_vec;
use crate::par::Par;
use crate::reservoir::{Reservoir, SequenceVisitor};

/// Default bound of the values a run holds besides its inputs and the states it returns:
/// 64 Mi values (512 MiB), whatever the length of a sequence or the number of sequences.
pub const DEFAULT_MEMORY_VALUES: usize = 1 << 26;

/// A stack of reservoirs of any kinds and devices, itself a [`Reservoir`]: see the module
/// documentation. The layers are boxed `L`: any reservoir by default, or one kind, for a
/// device that runs the stack its own way and reaches into its layers.
///
/// Its state is the chosen layers' states, concatenated, as the last row of a run is. When
/// every layer is chosen that is the whole stack's state and [`Reservoir::set_state`] sets
/// it; when some layer is left out, the state does not say that layer's state, and
/// `set_state` is refused.
pub struct DeepReservoir<L: Reservoir + ?Sized = dyn Reservoir> {
    layers: Vec<Box<L>>,
    input_to_all: bool,
    /// The chosen layers, increasing.
    readout: Vec<usize>,
    /// First column of each layer's states in the stack's, for the chosen layers.
    columns: Vec<Option<usize>>,
    memory_values: usize,
}

impl<L: Reservoir + ?Sized> DeepReservoir<L> {
    /// Stacks `layers` (layer 0 first). Layer 0 takes the stack's K inputs; layer k ≥ 1 must
    /// take `size` of layer k − 1 inputs, plus K where `input_to_all`. `readout_layers`, when
    /// given, are the layers whose states are exposed (increasing indices, at least one);
    /// all of them otherwise.
    ///
    /// # Errors
    /// No layers, a layer whose `input_size` does not fit the one below (a shape error), or
    /// readout layers that are not increasing indices of layers.
    pub fn new(
        layers: Vec<Box<L>>,
        input_to_all: bool,
        readout_layers: Option<Vec<usize>>,
    ) -> Result<Self> {
        let Some(first) = layers.first() else {
            return Err(ReservoirError::invalid(
                "deep reservoir",
                "a stack needs at least one layer",
            ));
        };
        let k = first.input_size();
        for (index, pair) in layers.windows(2).enumerate() {
            let expected = pair[0].size() + if input_to_all { k } else { 0 };
            if pair[1].input_size() != expected {
                return Err(ReservoirError::shape(
                    &format!("deep reservoir: layer {}'s input_size", index + 1),
                    expected,
                    pair[1].input_size(),
                ));
            }
        }
        let readout = readout_layers.unwrap_or_else(|| (0..layers.len()).collect());
        check_readout_layers(&readout, layers.len()).map_err(|rule| {
            ReservoirError::invalid(
                "deep reservoir",
                format!("readout layers {readout:?}: {rule}"),
            )
        })?;
        let mut columns = vec![None; layers.len()];
        let mut next = 0;
        for &layer in &readout {
            columns[layer] = Some(next);
            next += layers[layer].size();
        }
        Ok(Self {
            layers,
            input_to_all,
            readout,
            columns,
            memory_values: DEFAULT_MEMORY_VALUES,
        })
    }

    /// Holds at most about `values` values at once besides the inputs and the states handed
    /// out (at least one step's worth): longer runs, and more sequences, go in stretches.
    /// A run's states are the same bits whatever the bound; those of `run_many` as close as
    /// the layers' own `run_many` are to their runs (a sequence too long for the bound runs
    /// alone).
    pub fn with_memory_values(mut self, values: usize) -> Self {
        self.memory_values = values;
        self
    }

    /// The layers, layer 0 first.
    pub fn layers(&self) -> &[Box<L>] {
        &self.layers
    }

    /// The layers, layer 0 first, to run them another way than this stack does (a layer
    /// replaced by one of other sizes makes later runs fail with shape errors).
    pub fn layers_mut(&mut self) -> &mut [Box<L>] {
        &mut self.layers
    }

    /// First column of layer `layer`'s states in the stack's, if it is read out.
    pub fn readout_column(&self, layer: usize) -> Option<usize> {
        self.columns.get(layer).copied().flatten()
    }

    /// Whether every layer also takes the stack's input.
    pub fn input_to_all(&self) -> bool {
        self.input_to_all
    }

    /// The layers whose states are exposed, increasing.
    pub fn readout_layers(&self) -> &[usize] {
        &self.readout
    }

    /// Values held a step while layer `layer` runs: its output, the states below it, and
    /// their copy with the input beside them where `input_to_all`.
    fn held_per_step(&self) -> usize {
        (0..self.layers.len())
            .map(|layer| {
                let below = if layer == 0 {
                    0
                } else {
                    self.layers[layer - 1].size()
                };
                let joined = if self.input_to_all && layer > 0 {
                    self.layers[layer].input_size()
                } else {
                    0
                };
                self.layers[layer].size() + below + joined
            })
            .max()
            .unwrap_or(0)
    }

    /// Runs every layer over `inputs` (checked) from the current state, each over the whole
    /// stretch before the next, writing the chosen layers' states to `states`.
    fn run_stretch(
        &mut self,
        inputs: ArrayView2<f64>,
        mut states: ArrayViewMut2<f64>,
    ) -> Result<()> {
        let mut below: Option<Array2<f64>> = None;
        for layer in 0..self.layers.len() {
            let joined = self.joined(below.as_ref(), inputs)?;
            let input = layer_input(joined.as_ref(), below.as_ref(), inputs);
            let n = self.layers[layer].size();
            let mut out = zeros((inputs.nrows(), n), "a deep layer's states")?;
            self.layers[layer].run_into(input, out.view_mut())?;
            if let Some(column) = self.columns[layer] {
                states.slice_mut(s![.., column..column + n]).assign(&out);
            }
            below = Some(out);
        }
        Ok(())
    }

    /// The states below with the stack's `inputs` beside them: a layer's inputs where
    /// `input_to_all` (None for layer 0, or without `input_to_all`).
    fn joined(
        &self,
        below: Option<&Array2<f64>>,
        inputs: ArrayView2<f64>,
    ) -> Result<Option<Array2<f64>>> {
        let Some(below) = below.filter(|_| self.input_to_all) else {
            return Ok(None);
        };
        let n = below.ncols();
        let mut joined = zeros(
            (inputs.nrows(), n + inputs.ncols()),
            "a deep layer's inputs",
        )?;
        joined.slice_mut(s![.., ..n]).assign(below);
        joined.slice_mut(s![.., n..]).assign(&inputs);
        Ok(Some(joined))
    }

    /// Runs `sequences` (checked, together within the memory bound) layer by layer, each layer
    /// over all of them with its own `run_many`, and hands out the chosen layers' states.
    fn run_group(
        &mut self,
        first: usize,
        sequences: &[ArrayView2<f64>],
        visit: &mut SequenceVisitor<'_>,
    ) -> Result<()> {
        let width = self.size();
        let mut exposed = sequences
            .iter()
            .map(|inputs| zeros((inputs.nrows(), width), "a deep reservoir's states"))
            .collect::<Result<Vec<_>>>()?;
        let mut below: Vec<Array2<f64>> = Vec::new();
        let last = self.layers.len() - 1;
        for layer in 0..self.layers.len() {
            let joined = sequences
                .iter()
                .enumerate()
                .map(|(index, inputs)| self.joined(below.get(index), *inputs))
                .collect::<Result<Vec<_>>>()?;
            let views: Vec<ArrayView2<f64>> = sequences
                .iter()
                .zip(&joined)
                .enumerate()
                .map(|(index, (inputs, joined))| {
                    layer_input(joined.as_ref(), below.get(index), *inputs)
                })
                .collect();
            let n = self.layers[layer].size();
            let column = self.columns[layer];
            let mut handed = 0;
            let mut outs = Vec::new();
            self.layers[layer].run_many(&views, &mut |index, states| {
                // A layer hands out each sequence once, in order, with its rows.
                let rows = views.get(index).map(|v| v.nrows());
                if index != handed || rows.map(|rows| (rows, n)) != Some(states.dim()) {
                    return Err(ReservoirError::shape(
                        &format!("deep reservoir: layer {layer}'s states of sequence {index}"),
                        format!("sequence {handed} of {} x {n}", rows.unwrap_or(0)),
                        format!("{} x {}", states.nrows(), states.ncols()),
                    ));
                }
                handed += 1;
                if let Some(column) = column {
                    exposed[index]
                        .slice_mut(s![.., column..column + n])
                        .assign(&states);
                }
                if layer < last {
                    let mut kept = zeros(states.dim(), "a deep layer's states")?;
                    kept.assign(&states);
                    outs.push(kept);
                }
                Ok(())
            })?;
            below = outs;
        }
        drop(below);
        for (index, states) in exposed.iter().enumerate() {
            visit(first + index, states.view())?;
        }
        Ok(())
    }

    /// One sequence's states from the current state, allocated fallibly.
    fn run_alone(&mut self, inputs: ArrayView2<f64>) -> Result<Array2<f64>> {
        let mut states = zeros((inputs.nrows(), self.size()), "a deep reservoir's states")?;
        self.run_into(inputs, states.view_mut())?;
        Ok(states)
    }
}

/// A layer's inputs over a stretch: the states below with the stack's inputs beside them
/// where those are `joined`, else the states below, else (layer 0) the stack's `inputs`.
fn layer_input<'a>(
    joined: Option<&'a Array2<f64>>,
    below: Option<&'a Array2<f64>>,
    inputs: ArrayView2<'a, f64>,
) -> ArrayView2<'a, f64> {
    joined.or(below).map_or(inputs, |array| array.view())
}

/// A zero array of `dim`, allocated fallibly.
fn zeros(dim: (usize, usize), what: &str) -> Result<Array2<f64>> {
    let count = dim.0.checked_mul(dim.1).ok_or_else(|| {
        ReservoirError::invalid(what, format!("{} × {} values is too many", dim.0, dim.1))
    })?;
    let values = try_vec(what, count, 0.0)?;
    Array2::from_shape_vec(dim, values).map_err(|e| ReservoirError::invalid(what, e))
}

/// The rule of readout layers: at least one, increasing, each below `layers`.
pub(crate) fn check_readout_layers(readout: &[usize], layers: usize) -> Result<(), String> {
    if readout.is_empty() {
        return Err("at least one layer must be read out".to_string());
    }
    if readout.windows(2).any(|w| w[0] >= w[1]) {
        return Err("layer indices must be increasing, without repeats".to_string());
    }
    if readout.iter().any(|&layer| layer >= layers) {
        return Err(format!("layer indices must be below {layers}, the layers"));
    }
    Ok(())
}

impl<L: Reservoir + ?Sized> Reservoir for DeepReservoir<L> {
    fn size(&self) -> usize {
        self.readout
            .iter()
            .map(|&layer| self.layers[layer].size())
            .sum()
    }

    fn input_size(&self) -> usize {
        self.layers[0].input_size()
    }

    /// Layer 0's threads (every layer is given the same by [`Reservoir::set_par`]).
    fn par(&self) -> Par {
        self.layers[0].par()
    }

    fn set_par(&mut self, par: Par) {
        for layer in &mut self.layers {
            layer.set_par(par);
        }
    }

    fn reset(&mut self) -> Result<()> {
        self.layers.iter_mut().try_for_each(|layer| layer.reset())
    }

    fn state(&self) -> Result<Array1<f64>> {
        let mut state = Vec::with_capacity(self.size());
        for &layer in &self.readout {
            state.extend(self.layers[layer].state()?);
        }
        Ok(Array1::from(state))
    }

    /// Sets every layer's state from its columns.
    ///
    /// # Errors
    /// As every reservoir's; and an invalid-input error, the state unchanged, when a layer
    /// is not read out (the state does not hold that layer's).
    fn set_state(&mut self, state: ArrayView1<f64>) -> Result<()> {
        check_state(self.size(), &state)?;
        if self.readout.len() != self.layers.len() {
            return Err(ReservoirError::invalid(
                "deep reservoir state",
                format!(
                    "only layers {:?} of {} are read out, so a state does not hold the others' \
                     and cannot be set",
                    self.readout,
                    self.layers.len()
                ),
            ));
        }
        let mut next = 0;
        for layer in &mut self.layers {
            let n = layer.size();
            layer.set_state(state.slice(s![next..next + n]))?;
            next += n;
        }
        Ok(())
    }

    /// Runs each layer over a stretch of steps before the next (as long as the memory bound
    /// lets: the whole run, unless it is long).
    fn run_into(&mut self, inputs: ArrayView2<f64>, mut states: ArrayViewMut2<f64>) -> Result<()> {
        check_run(self.size(), self.input_size(), &inputs, &states)?;
        let steps = (self.memory_values / self.held_per_step().max(1)).max(1);
        let total = inputs.nrows();
        for start in (0..total).step_by(steps) {
            let end = (start + steps).min(total);
            self.run_stretch(
                inputs.slice(s![start..end, ..]),
                states.slice_mut(s![start..end, ..]),
            )?;
        }
        Ok(())
    }

    /// Runs each layer over a group of sequences with its own `run_many` before the next, the
    /// groups as large as the memory bound lets; a sequence too long for the bound alone runs
    /// by [`Reservoir::run_into`], in stretches.
    fn run_many(
        &mut self,
        sequences: &[ArrayView2<f64>],
        visit: &mut SequenceVisitor<'_>,
    ) -> Result<()> {
        let k = self.input_size();
        for inputs in sequences {
            check_inputs(k, inputs)?;
        }
        let per_step = self.held_per_step() + self.size();
        let budget = self.memory_values;
        let mut start = 0;
        while start < sequences.len() {
            let mut end = start;
            let mut held = 0usize;
            while end < sequences.len() {
                let more = sequences[end].nrows().saturating_mul(per_step);
                if end > start && held.saturating_add(more) > budget {
                    break;
                }
                held = held.saturating_add(more);
                end += 1;
            }
            if held > budget {
                // One sequence alone beyond the bound.
                self.reset()?;
                let states = self.run_alone(sequences[start])?;
                visit(start, states.view())?;
            } else {
                self.run_group(start, &sequences[start..end], visit)?;
            }
            start = end;
        }
        self.reset()
    }
}
