//! Seeded generation of the reservoir's weights: sparse W scaled to a spectral radius, W_in, b.

use ndarray::{Array1, Array2};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

use crate::config::{
    check_input_scaling, check_spectral_radius, ReservoirConfig, WeightDistribution,
};
use crate::error::{ReservoirError, Result};
use crate::memory::{bytes_of, ensure_available, try_with_capacity};
use crate::random::{stream_rng, SortedSampler, Stream};
use crate::sparse::CsrMatrix;
use crate::spectral::{SpectralEstimate, SpectralOptions};

/// The fixed (untrained) weights of an echo-state reservoir, in `f64`.
///
/// `generate` is deterministic: the same config (size, densities, scalings, distribution,
/// spectral radius, seed) gives bit-identical matrices on every run and platform. Uniform
/// weights use only integer and IEEE-exact operations; normal weights use `rand_distr`'s
/// ziggurat, whose rare tail steps call `exp`/`ln`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "WeightParts")]
pub struct ReservoirWeights {
    recurrent: CsrMatrix<f64>,
    input: Array2<f64>,
    bias: Array1<f64>,
}

#[derive(Deserialize)]
struct WeightParts {
    recurrent: CsrMatrix<f64>,
    input: Array2<f64>,
    bias: Array1<f64>,
}

impl TryFrom<WeightParts> for ReservoirWeights {
    type Error = ReservoirError;
    fn try_from(p: WeightParts) -> Result<Self> {
        Self::from_parts(p.recurrent, p.input, p.bias)
    }
}

/// Bytes of a product layout per non-zero, padding included: 12 for `f64` in the sliced
/// layout of a random W (8 + 4, padded by a sixth), rounded up to leave room for uneven rows.
const PRODUCT_LAYOUT_BYTES: u64 = 16;

/// Bytes the weights of `config` take at their peak: W in CSR (8-byte value and 4-byte column
/// per non-zero, 4-byte row pointers), dense W_in and b, three times over (the draws, the
/// scaled weights, and the running reservoir's own copy), and two product layouts of W (the
/// spectral estimate's and the running reservoir's).
pub fn weights_bytes(config: &ReservoirConfig) -> u64 {
    let n = config.size();
    let nnz = bytes_of(n, fan(config.connection_prob(), n));
    let dense = bytes_of(n, config.input_size() + 1);
    nnz.saturating_mul(12)
        .saturating_add(bytes_of(n + 1, 4))
        .saturating_add(dense.saturating_mul(8))
        .saturating_mul(3)
        .saturating_add(nnz.saturating_mul(2 * PRODUCT_LAYOUT_BYTES))
}

/// An out-of-memory error, before anything is drawn, when the weights of `config` cannot fit.
fn ensure_weights_fit(config: &ReservoirConfig) -> Result<()> {
    let n = config.size();
    ensure_available(
        &format!(
            "the reservoir's weights ({n} units, {} non-zeros per row)",
            fan(config.connection_prob(), n)
        ),
        weights_bytes(config),
    )
}

/// Number of non-zeros per row (or column) for a density: `round(p·n)`, at least 1.
fn fan(density: f64, n: usize) -> usize {
    ((density * n as f64).round() as usize).clamp(1, n)
}

fn draw(rng: &mut ChaCha8Rng, distribution: WeightDistribution) -> f64 {
    match distribution {
        WeightDistribution::Uniform => rng.random_range(-1.0..1.0),
        WeightDistribution::Normal => rng.sample(StandardNormal),
    }
}

/// The random draws behind a config's weights, before W is scaled to a spectral radius and
/// W_in by the input scaling: what every config that differs only in `spectral_radius` and
/// `input_scaling` shares (the lanes of a sweep). Draw once, then [`WeightDraws::scaled`]
/// gives each config's weights bit for bit as [`ReservoirWeights::generate`] would.
#[derive(Debug, Clone)]
pub struct WeightDraws {
    recurrent: CsrMatrix<f64>,
    estimate: SpectralEstimate,
    input: Array2<f64>,
    bias: Array1<f64>,
}

impl WeightDraws {
    /// Draws W (unscaled), its spectral radius, W_in (unscaled) and b for `config`; the
    /// config's `spectral_radius` and `input_scaling` are not used.
    ///
    /// # Errors
    /// A W whose spectral radius is zero (too sparse to recur) or could not be estimated.
    pub fn draw(config: &ReservoirConfig) -> Result<Self> {
        let n = config.size();
        ensure_weights_fit(config)?;
        let recurrent = ReservoirWeights::random_recurrent(config)?;
        let options = SpectralOptions {
            seed: stream_rng(config.seed(), Stream::Spectral).random(),
            ..SpectralOptions::default()
        };
        let estimate = recurrent.spectral_radius(&options)?;
        if !estimate.converged {
            return Err(ReservoirError::numerical(
                "spectral radius",
                format!(
                    "power iteration did not converge after {} products (last estimate {})",
                    estimate.iterations, estimate.radius
                ),
            ));
        }
        if estimate.radius <= f64::EPSILON {
            return Err(ReservoirError::numerical(
                "spectral radius",
                format!(
                    "the recurrent matrix has spectral radius 0 (size {n}, connection_prob {}): \
                     it cannot be scaled; use a larger size or connection_prob",
                    config.connection_prob()
                ),
            ));
        }

        let mut rng = stream_rng(config.seed(), Stream::Input);
        let mut input = Array2::zeros((n, config.input_size()));
        let mut units = SortedSampler::new(n)?;
        for channel in 0..config.input_size() {
            for &unit in units.sample(&mut rng, fan(config.input_connectivity(), n))? {
                input[(unit, channel)] = draw(&mut rng, config.weight_distribution());
            }
        }

        let mut rng = stream_rng(config.seed(), Stream::Bias);
        let bias =
            Array1::from_shape_fn(n, |_| config.bias_scaling() * rng.random_range(-1.0..1.0));
        Ok(Self {
            recurrent,
            estimate,
            input,
            bias,
        })
    }

    /// The spectral-radius estimate of the unscaled W.
    pub fn estimate(&self) -> &SpectralEstimate {
        &self.estimate
    }

    /// The weights with W scaled to `spectral_radius` and W_in by `input_scaling`.
    ///
    /// # Errors
    /// A config error naming `spectral_radius` or `input_scaling` when a value breaks the
    /// rule of [`ReservoirConfig`]'s field.
    pub fn scaled(&self, spectral_radius: f64, input_scaling: f64) -> Result<ReservoirWeights> {
        check_spectral_radius("spectral_radius", spectral_radius)?;
        check_input_scaling("input_scaling", input_scaling)?;
        let mut recurrent = self.recurrent.clone();
        recurrent.scale(spectral_radius / self.estimate.radius);
        let input = self.input.mapv(|w| input_scaling * w);
        ReservoirWeights::from_parts(recurrent, input, self.bias.clone())
    }
}

/// A 16-bit floating-point format W's values can be rounded to
/// ([`ReservoirWeights::with_recurrent_rounded`]). The GPU streams a large dense W whose values
/// are all exact in one of these formats at half the bytes of `f32`, with the same results
/// as the CPU on the same (rounded) weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HalfFormat {
    /// IEEE binary16: an 11-bit significand (relative rounding error ≤ 2⁻¹¹), |v| ≤ 65504.
    F16,
    /// bfloat16: an 8-bit significand (relative rounding error ≤ 2⁻⁸), `f32`'s range.
    Bf16,
}

impl HalfFormat {
    /// The bit pattern of `v` rounded to the nearest value of the format (ties to even), as a
    /// device stores it; `None` when that is not finite (beyond the format's range, or `v`
    /// itself not finite).
    pub fn to_bits(self, v: f64) -> Option<u16> {
        let (bits, finite) = match self {
            HalfFormat::F16 => {
                let h = half::f16::from_f64(v);
                (h.to_bits(), h.is_finite())
            }
            HalfFormat::Bf16 => {
                let h = half::bf16::from_f64(v);
                (h.to_bits(), h.is_finite())
            }
        };
        finite.then_some(bits)
    }

    /// `v` rounded to the nearest value of the format (ties to even); `None` as for
    /// [`HalfFormat::to_bits`].
    pub fn round(self, v: f64) -> Option<f64> {
        self.to_bits(v).map(|bits| match self {
            HalfFormat::F16 => half::f16::from_bits(bits).to_f64(),
            HalfFormat::Bf16 => half::bf16::from_bits(bits).to_f64(),
        })
    }

    /// Whether `v` is exactly a value of the format.
    pub fn holds(self, v: f64) -> bool {
        self.round(v) == Some(v)
    }
}

impl ReservoirWeights {
    /// These weights with every value of W rounded to `format` (W_in and b unchanged): the
    /// weights of a reservoir that stores W in 16 bits. Rounding moves the spectral radius by
    /// about the format's relative error (measured: `tests/weights_half.rs`).
    ///
    /// # Errors
    /// A value of W beyond the format's range (f16: |v| > 65504).
    pub fn with_recurrent_rounded(&self, format: HalfFormat) -> Result<Self> {
        let recurrent = self.recurrent.try_map_values(|v| {
            format.round(v).ok_or_else(|| {
                ReservoirError::invalid(
                    "recurrent weights",
                    format!("{v} is beyond the range of {format:?}"),
                )
            })
        })?;
        Self::from_parts(recurrent, self.input.clone(), self.bias.clone())
    }

    /// Draws W, W_in and b for `config` and scales W to its spectral radius.
    ///
    /// W has exactly `round(connection_prob·N)` (≥ 1) non-zeros per row at uniformly chosen
    /// columns; each input channel reaches exactly `round(input_connectivity·N)` (≥ 1) units.
    /// Returns the weights and the spectral-radius estimate of the unscaled W
    /// ([`WeightDraws::draw`], then [`WeightDraws::scaled`]).
    ///
    /// # Errors
    /// A W whose spectral radius is zero (too sparse to recur) or could not be estimated.
    pub fn generate(config: &ReservoirConfig) -> Result<(Self, SpectralEstimate)> {
        let draws = WeightDraws::draw(config)?;
        let weights = draws.scaled(config.spectral_radius(), config.input_scaling())?;
        Ok((weights, draws.estimate))
    }

    fn random_recurrent(config: &ReservoirConfig) -> Result<CsrMatrix<f64>> {
        let n = config.size();
        let per_row = fan(config.connection_prob(), n);
        let nnz = n
            .checked_mul(per_row)
            .filter(|&nnz| nnz <= u32::MAX as usize)
            .ok_or_else(|| {
                ReservoirError::invalid(
                    "recurrent weights",
                    format!("{n} x {per_row} non-zeros exceed 2^32"),
                )
            })?;
        let mut rng = stream_rng(config.seed(), Stream::Recurrent);
        let mut row_ptr = try_with_capacity("the recurrent weights' row pointers", n + 1)?;
        let mut col_idx = try_with_capacity("the recurrent weights' columns", nnz)?;
        let mut values = try_with_capacity("the recurrent weights", nnz)?;
        row_ptr.push(0u32);
        let mut columns = SortedSampler::new(n)?;
        for _ in 0..n {
            for &col in columns.sample(&mut rng, per_row)? {
                col_idx.push(col as u32);
                values.push(draw(&mut rng, config.weight_distribution()));
            }
            row_ptr.push(col_idx.len() as u32);
        }
        CsrMatrix::from_parts(n, n, row_ptr, col_idx, values)
    }

    /// Wraps weights made elsewhere, checking that W is N × N, W_in is N × K and b has N entries.
    pub fn from_parts(
        recurrent: CsrMatrix<f64>,
        input: Array2<f64>,
        bias: Array1<f64>,
    ) -> Result<Self> {
        let n = recurrent.nrows();
        if recurrent.ncols() != n || input.nrows() != n || bias.len() != n || input.ncols() == 0 {
            return Err(ReservoirError::shape(
                "reservoir weights",
                format!("W {n} x {n}, W_in {n} x K (K >= 1), b {n}"),
                format!(
                    "W {} x {}, W_in {} x {}, b {}",
                    recurrent.nrows(),
                    recurrent.ncols(),
                    input.nrows(),
                    input.ncols(),
                    bias.len()
                ),
            ));
        }
        if input.iter().chain(bias.iter()).any(|v| !v.is_finite()) {
            return Err(ReservoirError::invalid(
                "reservoir weights",
                "W_in and b must be finite",
            ));
        }
        Ok(Self {
            recurrent,
            input,
            bias,
        })
    }

    /// Checks that these weights have the config's `size` and `input_size`: what every
    /// reservoir built on existing weights (CPU or GPU) checks first.
    pub fn check_fits(&self, config: &ReservoirConfig) -> Result<()> {
        check_sizes(
            "reservoir weights for this config",
            (config.size(), config.input_size()),
            (self.size(), self.input_size()),
        )
    }

    /// Number of reservoir units N.
    pub fn size(&self) -> usize {
        self.recurrent.nrows()
    }

    /// Number of input channels K.
    pub fn input_size(&self) -> usize {
        self.input.ncols()
    }

    /// The recurrent matrix W (N × N), already scaled.
    pub fn recurrent(&self) -> &CsrMatrix<f64> {
        &self.recurrent
    }

    /// The input matrix W_in (N × K), already scaled.
    pub fn input(&self) -> &Array2<f64> {
        &self.input
    }

    /// The bias b (N).
    pub fn bias(&self) -> &Array1<f64> {
        &self.bias
    }
}

/// A shape error naming `context` unless the weights' `(size, input_size)` equal the config's.
pub(crate) fn check_sizes(
    context: &str,
    config: (usize, usize),
    weights: (usize, usize),
) -> Result<()> {
    if config == weights {
        return Ok(());
    }
    Err(ReservoirError::shape(
        context,
        format!("size {} and input_size {}", config.0, config.1),
        format!("size {} and input_size {}", weights.0, weights.1),
    ))
}
