//! The LIF reservoir on the GPU, spike for spike the same as `reservoir_core::lif`.

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut2};
use reservoir_core::lif::{LifConfig, LifConstants, LifFeatures, LifInputMode, LifWeights};
use reservoir_core::reservoir::check_run_shapes;
use reservoir_core::spikes::{Spike, SpikePattern};
use reservoir_core::{Reservoir, ReservoirError};

use crate::csr::DeviceCsr;
use crate::device::GpuDevice;
use crate::error::{DriverContext, Result};
use crate::kernels;

/// Steps per chunk: the inputs, features and spike flags of a chunk live on the device
/// together and are copied back once per chunk.
pub const LIF_CHUNK_STEPS: usize = 4096;

/// The neuron state that persists between runs.
#[derive(Debug)]
struct NeuronState {
    v: CudaSlice<f32>,
    i_syn: CudaSlice<f32>,
    refractory: CudaSlice<u32>,
    trace: CudaSlice<f32>,
    counts: CudaSlice<u32>,
    window: CudaSlice<u8>,
    head: usize,
    /// Spike flags of the last step (N).
    last_spikes: CudaSlice<u8>,
}

/// A current-based LIF reservoir on the GPU: one launch per step, a thread per neuron, state
/// on the device for the whole run; features and spike flags are copied back once per chunk.
///
/// The recurrent input is gathered over W's rows (each neuron adds the weights of the
/// presynaptic neurons that spiked, in ascending order), which is term for term the CPU's
/// event-driven sum, so spike trains match the CPU exactly. Its cost follows the synapse count,
/// not the spike count (the event-driven GPU path is the performance issue's).
#[derive(Debug)]
pub struct GpuLifNetwork {
    device: GpuDevice,
    config: LifConfig,
    constants: LifConstants,
    step: CudaFunction,
    recurrent: DeviceCsr<f32>,
    input_by_channel: CudaSlice<f32>,
    state: NeuronState,
    spike_count: u64,
}

impl GpuLifNetwork {
    /// Generates the weights for `config` (as the CPU network does) and uploads them.
    pub fn new_shared(config: &LifConfig, device: &GpuDevice) -> Result<Self> {
        Self::from_weights(config, LifWeights::generate(config)?, device)
    }

    /// Uploads existing weights to `device`.
    pub fn from_weights(
        config: &LifConfig,
        weights: LifWeights,
        device: &GpuDevice,
    ) -> Result<Self> {
        weights.check_fits(config)?;
        let s = device.stream();
        let w = weights.recurrent();
        let f32s =
            |values: &mut dyn Iterator<Item = f64>| values.map(|x| x as f32).collect::<Vec<f32>>();
        let input_t: Vec<f32> = f32s(&mut weights.input().t().iter().copied());
        let n = config.size;
        Ok(Self {
            step: device.nvrtc_function(&kernels::LIF, kernels::lif::STEP)?,
            recurrent: DeviceCsr::upload(device, w, |v| v as f32)?,
            input_by_channel: s.clone_htod(&input_t).context("uploading W_in")?,
            state: NeuronState {
                v: s.clone_htod(&vec![config.v_rest as f32; n])
                    .context("allocating the state")?,
                i_syn: s.alloc_zeros(n).context("allocating the state")?,
                refractory: s.alloc_zeros(n).context("allocating the state")?,
                trace: s.alloc_zeros(n).context("allocating the state")?,
                counts: s.alloc_zeros(n).context("allocating the state")?,
                window: s
                    .alloc_zeros(n * config.count_window_steps.max(1))
                    .context("allocating the state")?,
                head: 0,
                last_spikes: s.alloc_zeros(n).context("allocating the state")?,
            },
            constants: LifConstants::new(config),
            config: config.clone(),
            device: device.clone(),
            spike_count: 0,
        })
    }

    /// Spikes emitted since construction or the last reset.
    pub fn spike_count(&self) -> u64 {
        self.spike_count
    }

    /// Runs `inputs` (T × K) and returns the features (T × N) and the network's own spikes.
    pub fn run_recording(
        &mut self,
        inputs: ArrayView2<f64>,
    ) -> reservoir_core::Result<(Array2<f64>, SpikePattern)> {
        let (steps, n, dt) = (inputs.nrows(), self.config.size, self.config.dt_ms);
        let mut features = Array2::zeros((steps, n));
        let mut spikes = Vec::new();
        self.run_chunks(inputs, features.view_mut(), |start, flags| {
            for (e, _) in flags.iter().enumerate().filter(|(_, &f)| f != 0) {
                // Mid-step, as the CPU network records its spikes.
                let time_ms = ((start + e / n) as f64 + 0.5) * dt;
                spikes.push(Spike {
                    neuron_id: (e % n) as u32,
                    time_ms,
                    amplitude: 1.0,
                });
            }
        })?;
        let pattern = SpikePattern::new(spikes, n, steps.max(1) as f64 * dt)?;
        Ok((features, pattern))
    }

    /// Checks the call, then runs chunk by chunk, handing each chunk's spike flags
    /// (steps × N, row-major) and its first step to `on_flags`.
    fn run_chunks(
        &mut self,
        inputs: ArrayView2<f64>,
        mut states: ArrayViewMut2<f64>,
        mut on_flags: impl FnMut(usize, &[u8]),
    ) -> reservoir_core::Result<()> {
        check_run_shapes(self.config.size, self.config.input_size, &inputs, &states)?;
        if inputs.iter().any(|v| !(*v as f32).is_finite()) {
            return Err(ReservoirError::invalid(
                "LIF inputs",
                "values must be finite in f32",
            ));
        }
        for start in (0..inputs.nrows()).step_by(LIF_CHUNK_STEPS) {
            let end = (start + LIF_CHUNK_STEPS).min(inputs.nrows());
            let rows = ndarray::s![start..end, ..];
            let flags = self
                .run_chunk(inputs.slice(rows), states.slice_mut(rows))
                .map_err(ReservoirError::from)?;
            on_flags(start, &flags);
        }
        Ok(())
    }

    /// Runs a spike pattern (binned at `dt_ms`, counts kept) from the current state.
    pub fn process_gpu(&mut self, pattern: &SpikePattern) -> reservoir_core::Result<Array2<f64>> {
        if pattern.n_neurons() != self.config.input_size {
            return Err(ReservoirError::shape(
                "spike pattern channels",
                self.config.input_size,
                pattern.n_neurons(),
            ));
        }
        let inputs = pattern.to_input_matrix(self.config.dt_ms)?;
        self.run(inputs.view())
    }

    /// One chunk: uploads the inputs, launches one step per row, copies the features into
    /// `out` and returns the chunk's spike flags (steps × N).
    fn run_chunk(
        &mut self,
        inputs: ArrayView2<f64>,
        mut out: ArrayViewMut2<f64>,
    ) -> Result<Vec<u8>> {
        let (steps, n, k) = (inputs.nrows(), self.config.size, self.config.input_size);
        let s = self.device.stream().clone();
        let host_u: Vec<f32> = inputs.iter().map(|&v| v as f32).collect();
        let u = s.clone_htod(&host_u).context("uploading inputs")?;
        let mut features = s
            .alloc_zeros::<f32>(steps * n)
            .context("allocating the features")?;
        let mut flags = s
            .alloc_zeros::<u8>(steps * n)
            .context("allocating the spike flags")?;
        let c = self.constants;
        let (k_i, n_i) = (k as i32, n as i32);
        let synaptic = i32::from(self.config.input_mode == LifInputMode::Synaptic);
        let feature: i32 = match self.config.features {
            LifFeatures::Trace => 0,
            LifFeatures::Membrane => 1,
            LifFeatures::Counts => 2,
        };
        let window_len = self.config.count_window_steps.max(1);
        let config = LaunchConfig {
            grid_dim: (n.div_ceil(256) as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let NeuronState {
            v,
            i_syn,
            refractory,
            trace,
            counts,
            window,
            head,
            last_spikes,
        } = &mut self.state;
        for t in 0..steps {
            let (done, mut rest) = flags.split_at_mut(t * n);
            let mut now = rest.slice_mut(..n);
            let before = if t == 0 {
                last_spikes.slice(..)
            } else {
                done.slice((t - 1) * n..)
            };
            let u_t = u.slice(t * k..(t + 1) * k);
            let mut features_t = features.slice_mut(t * n..(t + 1) * n);
            let head_i = *head as i32;
            let mut launch = s.launch_builder(&self.step);
            launch
                .arg(&self.recurrent.row_ptr)
                .arg(&self.recurrent.col_idx)
                .arg(&self.recurrent.values)
                .arg(&before)
                .arg(&mut now)
                .arg(&self.input_by_channel)
                .arg(&u_t)
                .arg(&k_i)
                .arg(&mut *v)
                .arg(&mut *i_syn)
                .arg(&mut *refractory)
                .arg(&mut *trace)
                .arg(&mut *counts)
                .arg(&mut *window)
                .arg(&head_i)
                .arg(&c.alpha_m)
                .arg(&c.alpha_syn)
                .arg(&c.alpha_trace)
                .arg(&c.drive_gain)
                .arg(&c.v_rest)
                .arg(&c.v_reset)
                .arg(&c.threshold)
                .arg(&c.bias)
                .arg(&c.refractory_steps)
                .arg(&synaptic)
                .arg(&feature)
                .arg(&mut features_t)
                .arg(&n_i);
            // SAFETY: W's CSR is n×n with row_ptr ending at len(col_idx) = len(weights) and every
            // column < n; before, now, v, i_syn, refractory, trace, counts and features_t hold n
            // values; input_by_channel holds k·n, u_t k; window holds window_len·n and
            // head < window_len; the kernel guards i < n.
            unsafe { launch.launch(config) }.context("launching lif_step_kernel")?;
            *head = (*head + 1) % window_len;
        }
        s.memcpy_dtod(&flags.slice((steps - 1) * n..), &mut self.state.last_spikes)
            .context("keeping the last spikes")?;
        let host_features = s
            .clone_dtoh(&features)
            .context("copying the features back")?;
        for (dst, &src) in out.iter_mut().zip(&host_features) {
            *dst = f64::from(src);
        }
        let host_flags = s.clone_dtoh(&flags).context("copying the spikes back")?;
        self.spike_count += host_flags.iter().map(|&f| u64::from(f)).sum::<u64>();
        Ok(host_flags)
    }

    fn reset_state(&mut self) -> Result<()> {
        let s = self.device.stream();
        let n = self.config.size;
        let st = &mut self.state;
        s.memcpy_htod(&vec![self.config.v_rest as f32; n], &mut st.v)
            .context("resetting the state")?;
        s.memset_zeros(&mut st.i_syn)
            .context("resetting the state")?;
        s.memset_zeros(&mut st.refractory)
            .context("resetting the state")?;
        s.memset_zeros(&mut st.trace)
            .context("resetting the state")?;
        s.memset_zeros(&mut st.counts)
            .context("resetting the state")?;
        s.memset_zeros(&mut st.window)
            .context("resetting the state")?;
        s.memset_zeros(&mut st.last_spikes)
            .context("resetting the state")?;
        st.head = 0;
        self.spike_count = 0;
        Ok(())
    }
}

impl Reservoir for GpuLifNetwork {
    fn size(&self) -> usize {
        self.config.size
    }

    fn input_size(&self) -> usize {
        self.config.input_size
    }

    fn reset(&mut self) {
        // A failure means a dead context, which the next run reports as a driver error.
        let _ = self.reset_state();
    }

    fn state(&self) -> Array1<f64> {
        let s = self.device.stream();
        let source = match self.config.features {
            LifFeatures::Trace => s.clone_dtoh(&self.state.trace),
            LifFeatures::Membrane => s.clone_dtoh(&self.state.v),
            LifFeatures::Counts => s
                .clone_dtoh(&self.state.counts)
                .map(|c| c.into_iter().map(|x| x as f32).collect()),
        };
        match source {
            Ok(values) => values.into_iter().map(f64::from).collect(),
            Err(_) => Array1::from_elem(self.config.size, f64::NAN),
        }
    }

    fn set_state(&mut self, state: ArrayView1<f64>) -> reservoir_core::Result<()> {
        if state.len() != self.config.size {
            return Err(ReservoirError::shape(
                "LIF membrane state",
                self.config.size,
                state.len(),
            ));
        }
        if state.iter().any(|v| !(*v as f32).is_finite()) {
            return Err(ReservoirError::invalid(
                "LIF membrane state",
                "values must be finite in f32",
            ));
        }
        let host: Vec<f32> = state.iter().map(|&v| v as f32).collect();
        self.device
            .stream()
            .memcpy_htod(&host, &mut self.state.v)
            .context("uploading the membrane state")
            .map_err(ReservoirError::from)
    }

    fn run_into(
        &mut self,
        inputs: ArrayView2<f64>,
        states: ArrayViewMut2<f64>,
    ) -> reservoir_core::Result<()> {
        self.run_chunks(inputs, states, |_, _| {})
    }
}
