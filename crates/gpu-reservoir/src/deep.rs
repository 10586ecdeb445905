//! A deep echo-state network on one GPU, its layers stepped chunk by chunk with every layer's
//! states kept on the device: layer k + 1's input drive reads layer k's states (and the
//! stack's input, where every layer takes it) where they are, and only the read-out layers'
//! states are copied back, once per chunk.

use ndarray::{s, Array1, ArrayView1, ArrayView2, ArrayViewMut2};
use reservoir_core::checks::check_run;
use reservoir_core::deep::{DeepEsnConfig, DeepReservoir};
use reservoir_core::reservoir::{run_one_by_one, SequenceVisitor};
use reservoir_core::{Par, Reservoir, ReservoirError, ReservoirWeights};

use crate::driver::GpuDevice;
use crate::error::Result;
use crate::esn::{write_rows, GpuReservoirComputer, CHUNK_STEPS};

/// A deep echo-state network whose layers are [`GpuReservoirComputer`]s on one GPU, with the
/// semantics of [`DeepReservoir`] (state, `set_state`, `reset`, runs; the same results as a
/// stack of the same layers on the CPU, to f32 rounding).
///
/// A run goes chunk by chunk ([`CHUNK_STEPS`] steps): the inputs are uploaded once, each
/// layer in turn computes its input drive from the device states of the layer below (with
/// the stack's input beside them where `input_to_all`) and steps the chunk, and the read-out
/// layers' states come back while the next chunk runs. Nothing else crosses the bus.
///
/// Many sequences that a layer would batch ([`crate::ManySequences`]) run as
/// [`DeepReservoir`] runs them: each layer over all of them at once, the states between
/// layers through the host; others run one after another, each one as above.
pub struct GpuDeepReservoir {
    stack: DeepReservoir<GpuReservoirComputer>,
}

impl std::fmt::Debug for GpuDeepReservoir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuDeepReservoir")
            .field("layers", &self.stack.layers())
            .field("input_to_all", &self.stack.input_to_all())
            .field("readout_layers", &self.stack.readout_layers())
            .finish()
    }
}

impl GpuDeepReservoir {
    /// The deep network of `config` on `weights` (one per layer, as
    /// [`reservoir_core::architecture::Architecture::generate`] draws them), on `device`.
    ///
    /// # Errors
    /// Weights that are not one per layer or do not fit their layer; any error of uploading
    /// a layer.
    pub fn from_weights(
        config: &DeepEsnConfig,
        weights: Vec<ReservoirWeights>,
        device: &GpuDevice,
    ) -> Result<Self> {
        let configs = config.layer_configs();
        if weights.len() != configs.len() {
            return Err(ReservoirError::shape(
                "deep reservoir: layers' weights",
                configs.len(),
                weights.len(),
            )
            .into());
        }
        let layers = configs
            .iter()
            .zip(weights)
            .map(|(layer, w)| GpuReservoirComputer::from_weights(layer, w, device))
            .collect::<Result<Vec<_>>>()?;
        Self::from_layers(
            layers,
            config.input_to_all(),
            config.readout_layers().map(<[usize]>::to_vec),
        )
    }

    /// The deep network of `config`, each layer's weights generated from its config (the
    /// same as [`reservoir_core::deep::cpu_deep_esn`]'s), on `device`.
    ///
    /// # Errors
    /// A layer's weights that cannot be generated; any error of uploading a layer.
    pub fn new_shared(config: &DeepEsnConfig, device: &GpuDevice) -> Result<Self> {
        let weights = config
            .layer_configs()
            .iter()
            .map(|layer| Ok(ReservoirWeights::generate(layer)?.0))
            .collect::<Result<Vec<_>>>()?;
        Self::from_weights(config, weights, device)
    }

    /// Stacks `layers` (layer 0 first) as [`DeepReservoir::new`] does; they must all be on
    /// one device, whose stream orders each layer's work after the work of the layer below.
    ///
    /// # Errors
    /// As [`DeepReservoir::new`]; layers on different devices.
    pub fn from_layers(
        layers: Vec<GpuReservoirComputer>,
        input_to_all: bool,
        readout_layers: Option<Vec<usize>>,
    ) -> Result<Self> {
        if let Some(first) = layers.first() {
            if layers.iter().any(|layer| layer.device() != first.device()) {
                return Err(ReservoirError::invalid(
                    "deep reservoir",
                    "every layer of a GPU stack must be on the same device",
                )
                .into());
            }
        }
        let boxed = layers.into_iter().map(Box::new).collect();
        Ok(Self {
            stack: DeepReservoir::new(boxed, input_to_all, readout_layers)?,
        })
    }

    /// The layers, layer 0 first.
    pub fn layers(&self) -> &[Box<GpuReservoirComputer>] {
        self.stack.layers()
    }

    /// Whether every layer also takes the stack's input.
    pub fn input_to_all(&self) -> bool {
        self.stack.input_to_all()
    }

    /// The layers whose states are exposed, increasing.
    pub fn readout_layers(&self) -> &[usize] {
        self.stack.readout_layers()
    }

    /// Runs every layer over one chunk of `inputs` (checked, 1..=[`CHUNK_STEPS`] rows) from
    /// its current state, leaving each layer's states of the chunk in its device buffers.
    fn run_stack_chunk(&mut self, inputs: ArrayView2<f64>) -> Result<()> {
        let (steps, k) = (inputs.nrows(), self.stack.input_size());
        let input_to_all = self.stack.input_to_all();
        let layers = self.stack.layers_mut();
        let Some(first) = layers.first_mut() else {
            return Ok(());
        };
        first.run_chunk_on_device(inputs)?;
        for above in 1..layers.len() {
            let (done, rest) = layers.split_at_mut(above);
            let below = &done[above - 1];
            let below_states = below.chunk_states(steps * below.size())?;
            let beside = if input_to_all {
                Some(done[0].chunk_inputs(steps * k)?)
            } else {
                None
            };
            rest[0].run_chunk_from_device(
                &below_states,
                beside.as_ref().map(|input| (input, k)),
                steps,
            )?;
        }
        Ok(())
    }

    /// Runs `inputs` (checked) chunk by chunk and writes the read-out layers' states into
    /// their columns of `states`. The copy of chunk c back to the host goes into each layer's
    /// page-locked buffers while the device runs chunk c + 1, as a single reservoir's does.
    fn run_on_device(
        &mut self,
        inputs: ArrayView2<f64>,
        mut states: ArrayViewMut2<f64>,
    ) -> Result<()> {
        let total = inputs.nrows();
        let readout: Vec<ReadOut> = self
            .stack
            .readout_layers()
            .iter()
            .filter_map(|&layer| {
                let column = self.stack.readout_column(layer)?;
                let size = self.stack.layers()[layer].size();
                Some(ReadOut {
                    layer,
                    column,
                    size,
                })
            })
            .collect();
        let rows = total.min(CHUNK_STEPS);
        for out in &readout {
            self.stack.layers_mut()[out.layer].reserve_staging(rows * out.size)?;
        }
        let mut pending: Option<Staged> = None;
        for (index, start) in (0..total).step_by(CHUNK_STEPS).enumerate() {
            let end = (start + CHUNK_STEPS).min(total);
            self.run_stack_chunk(inputs.slice(s![start..end, ..]))?;
            let slot = index % 2;
            for out in &readout {
                self.stack.layers_mut()[out.layer]
                    .stage_chunk_states(slot, (end - start) * out.size)?;
            }
            if let Some(previous) = pending {
                self.take_staged(previous, &readout, states.view_mut())?;
            }
            pending = Some(Staged {
                slot,
                first: start,
                rows: end - start,
            });
        }
        if let Some(previous) = pending {
            self.take_staged(previous, &readout, states.view_mut())?;
        }
        Ok(())
    }

    /// Writes the chunk `staged` of every read-out layer into its rows and columns of
    /// `states`, waiting for its copy to land.
    fn take_staged(
        &mut self,
        staged: Staged,
        readout: &[ReadOut],
        mut states: ArrayViewMut2<f64>,
    ) -> Result<()> {
        let rows = staged.first..staged.first + staged.rows;
        for out in readout {
            let values = self.stack.layers_mut()[out.layer]
                .staged_states(staged.slot, staged.rows * out.size)?;
            let columns = out.column..out.column + out.size;
            write_rows(
                states.slice_mut(s![rows.clone(), columns]),
                values,
                f64::from,
            );
        }
        Ok(())
    }
}

/// A read-out layer: its index, first column in the stack's states, and size.
struct ReadOut {
    layer: usize,
    column: usize,
    size: usize,
}

/// A chunk whose states are on their way back: the page-locked buffer they go to, and the
/// rows of the run they are.
#[derive(Clone, Copy)]
struct Staged {
    slot: usize,
    first: usize,
    rows: usize,
}

impl Reservoir for GpuDeepReservoir {
    fn size(&self) -> usize {
        self.stack.size()
    }

    fn input_size(&self) -> usize {
        self.stack.input_size()
    }

    fn par(&self) -> Par {
        self.stack.par()
    }

    fn set_par(&mut self, par: Par) {
        self.stack.set_par(par);
    }

    fn reset(&mut self) -> reservoir_core::Result<()> {
        self.stack.reset()
    }

    fn state(&self) -> reservoir_core::Result<Array1<f64>> {
        self.stack.state()
    }

    fn set_state(&mut self, state: ArrayView1<f64>) -> reservoir_core::Result<()> {
        self.stack.set_state(state)
    }

    fn run_into(
        &mut self,
        inputs: ArrayView2<f64>,
        states: ArrayViewMut2<f64>,
    ) -> reservoir_core::Result<()> {
        check_run(self.size(), self.input_size(), &inputs, &states)?;
        Ok(self.run_on_device(inputs, states)?)
    }

    /// Where some layer would batch `sequences`, [`DeepReservoir`]'s way (each layer over
    /// all of them, batched); else one after another, each run on the device as a whole
    /// stack.
    fn run_many(
        &mut self,
        sequences: &[ArrayView2<f64>],
        visit: &mut SequenceVisitor<'_>,
    ) -> reservoir_core::Result<()> {
        let batches = self
            .stack
            .layers()
            .iter()
            .any(|layer| layer.batch_math(sequences).is_some());
        if batches {
            return self.stack.run_many(sequences, visit);
        }
        run_one_by_one(self, sequences, visit)
    }
}
