//! How a [`GpuReservoirComputer`] runs many sequences: one after another, or batched (in
//! which arithmetic, on which kernel), and the many-sequence engine it keeps for that.

use ndarray::ArrayView2;
use rand_chacha::ChaCha8Rng;

use super::GpuReservoirComputer;
use crate::batched::{BatchEngine, Shared};
use crate::error::Result;
use crate::gemm::{batch_kernel, resolve_kernel, BatchKernel, DeviceW, GemmMath};

/// Fewest sequences [`ManySequences::Auto`] batches.
pub const BATCH_MIN_SEQUENCES: usize = 32;
/// Most steps per sequence, on average, that [`ManySequences::Auto`] batches: longer
/// sequences run faster one after another on the single-sequence step path.
pub(crate) const BATCH_MAX_MEAN_STEPS: usize = 128;
/// Largest reservoir [`ManySequences::Auto`] batches (its W is stored dense for the GEMM).
pub(crate) const BATCH_MAX_SIZE: usize = 1024;

/// How [`reservoir_core::Reservoir::run_many`] of a [`GpuReservoirComputer`] steps its
/// sequences.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ManySequences {
    /// [`ManySequences::Batched`] where batching was measured faster (at least
    /// 32 sequences of at most 128 steps on average, N ≤ 1024), in f32 unless [`GpuReservoirComputer::with_batch_math`] says
    /// otherwise, else [`ManySequences::OneByOne`] (the default).
    #[default]
    Auto,
    /// One after another on the reservoir's single-sequence step path.
    OneByOne,
    /// All together: the states of a batch are an N × B matrix, one GEMM per step for all of
    /// them in the given arithmetic.
    Batched(GemmMath),
}

impl GpuReservoirComputer {
    /// How [`reservoir_core::Reservoir::run_many`] steps its sequences (default
    /// [`ManySequences::Auto`]).
    ///
    /// # Errors
    /// [`GemmMath::F16`] for a linear reservoir (its states can leave f16's range) or a W
    /// with a weight beyond f16's range.
    pub fn with_many_sequences(mut self, how: ManySequences) -> Result<Self> {
        if let ManySequences::Batched(math) = how {
            DeviceW::check(&self.config, &self.weights, math, "batched reservoir")?;
            resolve_kernel(&self.device, self.config.size(), math, self.batch_kernel)?;
        }
        self.many = how;
        self.batch = None;
        Ok(self)
    }

    /// The arithmetic of the batches [`ManySequences::Auto`] makes (default [`GemmMath::F32`]):
    /// where it batches, TF32 or f16 operands step them on the tensor cores, at their drift
    /// from f32 (docs/decisions.md, "Other thresholds").
    ///
    /// # Errors
    /// As [`GpuReservoirComputer::with_many_sequences`] for `ManySequences::Batched(math)`.
    pub fn with_batch_math(mut self, math: GemmMath) -> Result<Self> {
        DeviceW::check(&self.config, &self.weights, math, "batched reservoir")?;
        self.auto_math = math;
        self.batch = None;
        Ok(self)
    }

    /// The kernel of `run_many`'s batches with f16 operands ([`GemmMath::F16`]; default
    /// [`BatchKernel::Auto`]).
    ///
    /// # Errors
    /// [`crate::GpuError::Unsupported`] for [`BatchKernel::TensorCore`] where this device or N
    /// cannot run it, or with a batch arithmetic other than f16.
    pub fn with_batch_kernel(mut self, kernel: BatchKernel) -> Result<Self> {
        let math = match self.many {
            ManySequences::Batched(math) => math,
            ManySequences::Auto | ManySequences::OneByOne => GemmMath::F16,
        };
        resolve_kernel(&self.device, self.config.size(), math, kernel)?;
        self.batch_kernel = kernel;
        self.batch = None;
        Ok(self)
    }

    /// The kernel that steps a batch of `sequences` sequences in `math` (`Gemm` or
    /// `TensorCore`): under [`BatchKernel::Auto`] the tensor-core run for f16 batches it takes
    /// in one launch (up to 512 sequences at N = 1000 on 132 SMs), where it was measured
    /// faster; the GEMM for f32 and TF32 batches.
    ///
    /// # Errors
    /// As [`GpuReservoirComputer::with_batch_kernel`].
    pub fn batch_kernel(&self, math: GemmMath, sequences: usize) -> Result<BatchKernel> {
        batch_kernel(
            &self.device,
            self.config.size(),
            math,
            self.kernel_for(math),
            sequences,
        )
    }

    /// The kernel setting of batches in `math`: the reservoir's for f16 batches; `Auto` (the
    /// GEMM) for the others, which [`ManySequences::Auto`] batches in f32 whatever the
    /// setting.
    fn kernel_for(&self, math: GemmMath) -> BatchKernel {
        match math {
            GemmMath::F16 => self.batch_kernel,
            GemmMath::F32 | GemmMath::Tf32 => BatchKernel::Auto,
        }
    }

    /// The GEMM arithmetic `run_many` batches `sequences` in, or `None` to run them one after
    /// another.
    pub(crate) fn batch_math(&self, sequences: &[ArrayView2<f64>]) -> Option<GemmMath> {
        match self.many {
            ManySequences::Batched(math) => Some(math),
            ManySequences::OneByOne => None,
            ManySequences::Auto => {
                let steps: usize = sequences.iter().map(|s| s.nrows()).sum();
                let batch = sequences.len() >= BATCH_MIN_SEQUENCES
                    && steps <= BATCH_MAX_MEAN_STEPS * sequences.len()
                    && self.config.size() <= BATCH_MAX_SIZE;
                batch.then_some(self.auto_math)
            }
        }
    }

    /// Runs `run` on the many-sequence engine for `math` (made on first use, or again for
    /// another `math`) with the reservoir's shared parts and, when the config has noise, its
    /// noise stream and level.
    pub(super) fn with_batch_engine<T>(
        &mut self,
        math: GemmMath,
        run: impl FnOnce(&BatchEngine, &Shared<'_>, Option<(&mut ChaCha8Rng, f64)>) -> Result<T>,
    ) -> Result<T> {
        let engine = match self.batch.take() {
            Some(engine) if engine.math() == math => engine,
            _ => BatchEngine::new(
                &self.device,
                &self.config,
                &self.weights,
                math,
                self.kernel_for(math),
            )?,
        };
        let engine = self.batch.insert(engine);
        let shared = Shared {
            device: &self.device,
            kernels: &self.kernels,
            config: &self.config,
            input: &self.input,
            bias: &self.bias,
        };
        let level = self.config.noise_level();
        let noise = (level > 0.0).then_some((&mut self.noise, level));
        run(engine, &shared, noise)
    }
}
