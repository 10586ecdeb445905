//! The cost model `auto` chooses a device with: the seconds a job would take on the CPU and on
//! a GPU, from the reservoir's shape and the job's sequences and steps.
//!
//! The constants were measured on an NVIDIA H100 host with a 16-thread Intel Xeon
//! (docs/decisions.md, "The cost model of `auto`"): what a GPU costs before its first step
//! (context, kernels from the cache, plans, uploads), per step, per sequence, and per state
//! value brought back; what the CPU costs per non-zero weight of a step. Jobs far from the
//! crossover are chosen right whatever the exact constants; near it either device is about as
//! fast.

use ndarray::Array2;
use reservoir_core::lif::{input_fan_in, synapses_per_neuron, LifConfig};
use reservoir_core::sparse::CsrMatrix;

/// What a job asks of one reservoir.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    /// Independent sequences (each from the zero state); 1 for one long run.
    pub sequences: usize,
    /// Steps over all sequences.
    pub steps: usize,
    /// Whether every state comes back to the host (a run, a regression's sums); otherwise
    /// only each sequence's features do (a classifier).
    pub states_back: bool,
}

impl Workload {
    /// One sequence of `steps` steps, its states brought back.
    pub fn single(steps: usize) -> Self {
        Self::many(1, steps)
    }

    /// `sequences` sequences of `steps` steps in all, their states brought back.
    pub fn many(sequences: usize, steps: usize) -> Self {
        Self {
            sequences,
            steps,
            states_back: true,
        }
    }

    /// The same work with only each sequence's features brought back (a classifier).
    pub fn features_only(self) -> Self {
        Self {
            states_back: false,
            ..self
        }
    }
}

/// The shape of a reservoir that its cost depends on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Shape {
    /// Units N.
    pub size: usize,
    /// Non-zero recurrent weights.
    pub nonzeros: usize,
    /// Non-zero input weights.
    pub input_nonzeros: usize,
    /// Independent reservoirs stepped together (a sweep's lanes; 1 otherwise).
    pub lanes: usize,
    /// Whether a GPU steps many sequences of this reservoir together, a GEMM a step (an
    /// echo-state network); otherwise one after another.
    pub batches_sequences: bool,
}

impl Shape {
    /// The shape of the LIF network `config` draws (see `LifWeights::generate`).
    pub(crate) fn of_lif(config: &LifConfig) -> Self {
        let n = config.size();
        let empty = config.spectral_radius() == 0.0 || n == 1;
        Self {
            size: n,
            nonzeros: if empty {
                0
            } else {
                n * synapses_per_neuron(config)
            },
            input_nonzeros: config.input_size() * input_fan_in(config),
            lanes: 1,
            batches_sequences: false,
        }
    }

    /// The shape of one reservoir with recurrent weights `recurrent` (N × N) and input weights
    /// `input` (N × K).
    pub(crate) fn of_weights(recurrent: &CsrMatrix<f64>, input: &Array2<f64>) -> Self {
        Self {
            size: recurrent.nrows(),
            nonzeros: recurrent.nnz(),
            input_nonzeros: input.iter().filter(|&&w| w != 0.0).count(),
            lanes: 1,
            batches_sequences: true,
        }
    }
}

/// Seconds a GPU spends before its first step: driver and context, kernel modules from the
/// disk cache, plans and uploads.
const GPU_START_SECONDS: f64 = 0.25;
/// Seconds per step of one sequence on the GPU, whatever its size (launch-free step loop).
const GPU_STEP_SECONDS: f64 = 1.5e-6;
/// Seconds per byte of W read per step on the GPU (HBM at about 2.5 TB/s).
const GPU_SECONDS_PER_WEIGHT_BYTE: f64 = 1.0 / 2.5e12;
/// Seconds per sequence on the GPU (its uploads, launches and copy back).
const GPU_SEQUENCE_SECONDS: f64 = 100e-6;
/// Sequences a GPU steps together in one batch (of N = 500; more for smaller N). The batch
/// constants below price the many-sequence classifier of 40,000 + 10,000 sequences of 100
/// steps at N = 500 at 0.38 s with start-up; on an NVIDIA H200 its `fit_seconds` measured
/// 0.34 s with the GPU opened while the files were read (docs/benchmarks.md,
/// `many_sequences_job`).
const GPU_BATCH_SEQUENCES: usize = 4096;
/// Seconds of one step of a batch beyond its arithmetic (a GEMM and an elementwise launch).
const GPU_BATCH_STEP_SECONDS: f64 = 10e-6;
/// Seconds per floating-point operation of a batch's GEMM (f32, about 25 TFLOP/s).
const GPU_SECONDS_PER_FLOP: f64 = 1.0 / 25e12;
/// Seconds per input value of a batch (converted and uploaded).
const GPU_INPUT_VALUE_SECONDS: f64 = 1e-9;
/// Seconds per state value brought back to the caller as f64.
const GPU_STATE_VALUE_SECONDS: f64 = 0.5e-9;
/// Seconds per non-zero weight of a step on one CPU core (sparse mat-vec with the update):
/// between the 0.23 ns of a W that stays in cache and the 0.7 ns of one that does not.
const CPU_NONZERO_SECONDS: f64 = 0.5e-9;

/// Estimated seconds of the job on the CPU with `cores` threads.
pub(crate) fn cpu_seconds(shape: Shape, work: Workload, cores: usize) -> f64 {
    let per_step = (shape.nonzeros + shape.input_nonzeros + 4 * shape.size) as f64;
    let parallel = (work.sequences.max(shape.lanes)).clamp(1, cores.max(1)) as f64;
    work.steps as f64 * shape.lanes as f64 * per_step * CPU_NONZERO_SECONDS / parallel
}

/// Estimated seconds of the job on a GPU; `started` when the job has already opened it.
pub(crate) fn gpu_seconds(shape: Shape, work: Workload, started: bool) -> f64 {
    let start = if started { 0.0 } else { GPU_START_SECONDS };
    let states = if work.states_back {
        (work.steps * shape.size) as f64 * GPU_STATE_VALUE_SECONDS * shape.lanes as f64
    } else {
        (work.sequences * shape.size) as f64 * GPU_STATE_VALUE_SECONDS
    };
    if shape.batches_sequences && work.sequences > 1 {
        let n = shape.size.max(1);
        let per_batch = (GPU_BATCH_SEQUENCES * 500 / n).max(1);
        let batches = work.sequences.div_ceil(per_batch);
        let mean_steps = work.steps.div_ceil(work.sequences);
        let flops = 2.0 * (n * n) as f64 * work.steps as f64;
        let inputs = (work.steps as f64) * (shape.input_nonzeros as f64 / n as f64).max(1.0);
        return start
            + (batches * mean_steps) as f64 * GPU_BATCH_STEP_SECONDS
            + flops * GPU_SECONDS_PER_FLOP
            + inputs * GPU_INPUT_VALUE_SECONDS
            + states;
    }
    let weight_bytes = (8 * shape.nonzeros) as f64;
    let step = GPU_STEP_SECONDS + weight_bytes * GPU_SECONDS_PER_WEIGHT_BYTE;
    start + work.steps as f64 * step + work.sequences as f64 * GPU_SEQUENCE_SECONDS + states
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(size: usize, density: f64) -> Shape {
        Shape {
            size,
            nonzeros: (size as f64 * size as f64 * density) as usize,
            input_nonzeros: size / 10,
            lanes: 1,
            batches_sequences: true,
        }
    }

    #[test]
    fn small_jobs_go_to_the_cpu_and_large_ones_to_the_gpu() {
        let small = Workload::single(3000);
        assert!(
            cpu_seconds(shape(500, 0.1), small, 16) < gpu_seconds(shape(500, 0.1), small, false)
        );
        let large = Workload::single(25_000);
        assert!(
            cpu_seconds(shape(4096, 0.05), large, 16)
                > gpu_seconds(shape(4096, 0.05), large, false)
        );
    }

    #[test]
    fn many_sequences_spread_over_the_cores() {
        let work = Workload::many(400, 32_000);
        let one = cpu_seconds(shape(400, 0.1), work, 1);
        let sixteen = cpu_seconds(shape(400, 0.1), work, 16);
        assert!((one / sixteen - 16.0).abs() < 1e-9);
    }

    #[test]
    fn a_started_gpu_costs_no_start_up() {
        let work = Workload::single(100);
        let cold = gpu_seconds(shape(100, 0.1), work, false);
        let warm = gpu_seconds(shape(100, 0.1), work, true);
        assert!((cold - warm - GPU_START_SECONDS).abs() < 1e-12);
    }

    #[test]
    fn many_sequences_classified_on_a_gpu_are_priced_as_batches() {
        // 50,000 sequences of 100 steps at N = 500, 10 % connected: measured 2.6 s on the
        // 16 CPU threads of an NVIDIA H200 host and about 1.2 s on its GPU.
        let work = Workload::many(50_000, 5_000_000).features_only();
        let shape = shape(500, 0.1);
        let gpu = gpu_seconds(shape, work, false);
        assert!(gpu < cpu_seconds(shape, work, 16) && gpu < 1.0, "{gpu}");
        // The LIF network runs its sequences one after another.
        let one_by_one = Shape {
            batches_sequences: false,
            ..shape
        };
        assert!(gpu_seconds(one_by_one, work, false) > 5.0);
    }
}
