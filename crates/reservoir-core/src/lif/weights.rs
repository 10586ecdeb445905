//! Seeded weights of the LIF reservoir: a Dale's-law recurrent matrix scaled to a spectral
//! radius, and the input matrix.

use std::time::Instant;

use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::config::LifConfig;
use super::transpose::transposed;
use crate::error::{ReservoirError, Result};
use crate::memory::{bytes_of, ensure_available, try_with_capacity};
use crate::random::SortedSampler;
use crate::sparse::CsrMatrix;
use crate::spectral::{Phases, SpectralEstimate, SpectralOptions};

/// ChaCha stream of the recurrent structure and magnitudes (crate streams are below 100).
pub const STREAM_RECURRENT: u64 = 100;
/// ChaCha stream of the input matrix.
pub const STREAM_INPUT: u64 = 101;
/// ChaCha stream of the start vector of the spectral-radius estimate.
pub const STREAM_SPECTRAL: u64 = 102;

fn rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

/// The fixed weights of a LIF reservoir, in `f64`.
///
/// `recurrent` is W (N × N, row = postsynaptic, column = presynaptic neuron). Generated weights
/// obey Dale's law: all non-zeros of column j have the sign of neuron j (≥ 0 excitatory, ≤ 0
/// inhibitory); weights made elsewhere need not ([`LifWeights::with_any_signs`]).
/// `generate` is deterministic: the same config gives bit-identical matrices on every run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "LifWeightParts")]
pub struct LifWeights {
    recurrent: CsrMatrix<f64>,
    input: Array2<f64>,
    excitatory: Vec<bool>,
}

#[derive(Deserialize)]
struct LifWeightParts {
    recurrent: CsrMatrix<f64>,
    input: Array2<f64>,
    excitatory: Vec<bool>,
}

impl TryFrom<LifWeightParts> for LifWeights {
    type Error = ReservoirError;
    fn try_from(p: LifWeightParts) -> Result<Self> {
        Self::from_parts(p.recurrent, p.input, p.excitatory)
    }
}

/// Synapse-products (synapses × matrix-vector products) the spectral-radius estimate of W may
/// spend: 2^33, about 9 s of sparse products on one core of the development machine.
pub const SPECTRAL_BUDGET: usize = 1 << 33;

/// Bytes the synapses of `config` take at their peak: these f64 weights, their transpose for
/// event-driven delivery and the network's own copy, 12 bytes per synapse each, plus the dense
/// input weights.
pub fn synapse_bytes(config: &LifConfig) -> u64 {
    let n = config.size();
    bytes_of(n, synapses_per_neuron(config))
        .saturating_mul(36)
        .saturating_add(bytes_of(n, config.input_size()).saturating_mul(8))
}

/// Synapses each neuron receives in a non-empty W: `round(connection_prob·(N − 1))`, at least 1.
pub fn synapses_per_neuron(config: &LifConfig) -> usize {
    let others = config.size().saturating_sub(1);
    ((config.connection_prob() * others as f64).round() as usize).clamp(1, others.max(1))
}

/// Neurons each input channel reaches: `round(input_connectivity·N)`, at least 1.
pub fn input_fan_in(config: &LifConfig) -> usize {
    let n = config.size();
    ((config.input_connectivity() * n as f64).round() as usize).clamp(1, n.max(1))
}

/// The products the spectral-radius estimate of a W with `synapses` non-zeros may use: whole
/// cycles of the restarted Arnoldi method ([`SpectralOptions::default`]: 16 power steps and a
/// 48-dimensional Arnoldi process, 64 products), as many as [`SPECTRAL_BUDGET`] allows but at
/// least one, and never more than the default limit of 5000.
///
/// Up to ~1.7·10^6 synapses this is the default limit. Wherever the estimate converges (to
/// 10^-6) within the budget, W is the one the unbudgeted estimate gives, bit for bit (checked
/// when the budget came in, e.g. N = 10^4 at p = 0.1, 10^7 synapses).
/// Otherwise the estimate after the budget is used, and ρ(W) ends above `spectral_radius` by
/// what it lacked. Measured at p = 1 % with one cycle (64 products): 0.7–1.4 % above at
/// N = 10^4 and 3·10^4 (5 seeds), 1.1 % and 1.05 % at N = 10^5 (seeds 42 and 7; the
/// converged estimate there takes ~1250 products, 130 s on one core, against 7 s for the
/// budget).
pub fn spectral_products(synapses: usize) -> usize {
    let options = SpectralOptions::default();
    let cycle = options.krylov_dim + options.power_steps;
    let cycles = (SPECTRAL_BUDGET / cycle.saturating_mul(synapses.max(1))).max(1);
    (cycles * cycle).min(options.max_matvecs)
}

/// Rows of W drawn from one place of stream [`STREAM_RECURRENT`]: block b starts at word
/// b·2^[`DRAW_BLOCK_WORDS_LOG2`], so blocks are drawn in parallel with the same result on any
/// number of threads.
const DRAW_BLOCK_ROWS: usize = 4096;
/// log2 of the stream words reserved for a block of rows: 2^40, far above what a block can
/// draw (at most 2^32 synapses in all, a few words each).
const DRAW_BLOCK_WORDS_LOG2: u32 = 40;

/// The factor the drawn W is scaled by once its spectral radius is estimated at `radius`: the
/// config's spectral radius over the estimate (a copy of W elsewhere, e.g. on a GPU, scaled by
/// it in f64 has the weights' bits).
pub fn spectral_scale(config: &LifConfig, radius: f64) -> f64 {
    config.spectral_radius() / radius
}

impl LifWeights {
    /// Draws W and W_in for `config`.
    ///
    /// * Neurons `0..round(f_E·N)` are excitatory, the rest inhibitory (the wiring is random,
    ///   so the order carries no structure and the mask is trivial to port).
    /// * Each neuron receives exactly `round(p·(N−1))` (≥ 1 when N > 1) synapses from distinct
    ///   other neurons, chosen uniformly (stream [`STREAM_RECURRENT`], row by row, each block
    ///   of 4096 rows from its own place in the stream).
    /// * Magnitudes are uniform on (0, 1]; inhibitory ones are multiplied by
    ///   g = N_E / N_I, so the expected input to every neuron is zero (balanced network).
    /// * W is then scaled so that ρ(W) = `spectral_radius` (restarted Arnoldi, start vector
    ///   from stream [`STREAM_SPECTRAL`], at most [`spectral_products`] products: exact to
    ///   10^-6 where it converges within them, ρ(W) up to ~1.5 % above where it does not).
    ///   With `spectral_radius` 0 or N = 1, W is empty.
    /// * Each input channel reaches `round(input_connectivity·N)` (≥ 1) neurons with weights
    ///   uniform on (−s, s), s = `input_scaling` (stream [`STREAM_INPUT`]).
    ///
    /// # Errors
    /// An invalid config; more than 2^32 synapses; a non-empty W whose spectral radius is 0,
    /// or did not converge within the default 5000 products (small W only: larger ones stop
    /// at their budget by design).
    pub fn generate(config: &LifConfig) -> Result<Self> {
        Self::generate_with(config, |w, options, _| w.spectral_radius(options), &mut ())
    }

    /// [`LifWeights::generate`] with the spectral-radius estimate of W left to `estimate`,
    /// called with W, the options `generate` uses and `phases` (e.g. the same algorithm with
    /// its products on a GPU). An estimate whose products sum every row as
    /// [`crate::real`]'s kernels do gives the same weights, bit for bit. `phases` is told the
    /// time of each phase: `draw`, `checks`, the estimate's own, `scale`, `input`.
    ///
    /// # Errors
    /// As [`LifWeights::generate`], and `estimate`'s errors.
    pub fn generate_with(
        config: &LifConfig,
        estimate: impl FnOnce(
            &CsrMatrix<f64>,
            &SpectralOptions,
            &mut dyn Phases,
        ) -> Result<SpectralEstimate>,
        phases: &mut dyn Phases,
    ) -> Result<Self> {
        let n = config.size();
        let n_exc = ((config.excitatory_fraction() * n as f64).round() as usize).min(n);
        let excitatory: Vec<bool> = (0..n).map(|j| j < n_exc).collect();
        let recurrent = if config.spectral_radius() == 0.0 || n == 1 {
            CsrMatrix::from_parts(n, n, vec![0; n + 1], Vec::new(), Vec::new())?
        } else {
            Self::scaled_recurrent(config, n_exc, estimate, phases)?
        };
        let started = Instant::now();
        let mut stream = rng(config.seed(), STREAM_INPUT);
        let mut input = Array2::zeros((n, config.input_size()));
        let fan_in = input_fan_in(config);
        let mut units = SortedSampler::new(n)?;
        for channel in 0..config.input_size() {
            for &unit in units.sample(&mut stream, fan_in)? {
                input[(unit, channel)] = config.input_scaling() * stream.random_range(-1.0..1.0);
            }
        }
        phases.spent("input", started.elapsed());
        let started = Instant::now();
        // Dale's law holds by construction: a synapse's sign is drawn from its column's kind,
        // and the scaling is by a positive factor.
        let weights = Self::checked_shapes(recurrent, input, excitatory)?;
        phases.spent("checks", started.elapsed());
        Ok(weights)
    }

    /// W drawn, checked and scaled, `phases` told their times.
    fn scaled_recurrent(
        config: &LifConfig,
        n_exc: usize,
        estimate: impl FnOnce(
            &CsrMatrix<f64>,
            &SpectralOptions,
            &mut dyn Phases,
        ) -> Result<SpectralEstimate>,
        phases: &mut dyn Phases,
    ) -> Result<CsrMatrix<f64>> {
        let started = Instant::now();
        let n = config.size();
        let n_inh = n - n_exc;
        let gain = if n_exc > 0 && n_inh > 0 {
            n_exc as f64 / n_inh as f64
        } else {
            1.0
        };
        let per_row = synapses_per_neuron(config);
        let nnz = n
            .checked_mul(per_row)
            .filter(|&nnz| nnz <= u32::MAX as usize)
            .ok_or_else(|| {
                ReservoirError::invalid(
                    "LIF recurrent weights",
                    format!("{n} x {per_row} synapses exceed 2^32"),
                )
            })?;
        ensure_available(
            &format!("the LIF network's synapses ({n} neurons, {per_row} per neuron)"),
            synapse_bytes(config),
        )?;
        let mut row_ptr = try_with_capacity("the LIF synapses' row pointers", n + 1)?;
        row_ptr.extend((0..=n).map(|row| (row * per_row) as u32));
        // Written in place rather than zeroed first: at 10^9 synapses zeroing is 12 GB of
        // writes, all overwritten by the draw.
        let mut col_idx: Vec<u32> = try_with_capacity("the LIF synapses' columns", nnz)?;
        let mut values: Vec<f64> = try_with_capacity("the LIF synapses", nnz)?;
        // Blocks of rows in parallel, each from its own place in the stream, so the weights do
        // not depend on the threads (a network of at most one block draws as one sequence).
        let block_synapses = DRAW_BLOCK_ROWS * per_row;
        col_idx.spare_capacity_mut()[..nnz]
            .par_chunks_mut(block_synapses)
            .zip(values.spare_capacity_mut()[..nnz].par_chunks_mut(block_synapses))
            .enumerate()
            .try_for_each(|(block, (cols, vals))| -> Result<()> {
                let mut stream = rng(config.seed(), STREAM_RECURRENT);
                stream.set_word_pos((block as u128) << DRAW_BLOCK_WORDS_LOG2);
                let mut others = SortedSampler::new(n - 1)?;
                let rows = cols.chunks_mut(per_row).zip(vals.chunks_mut(per_row));
                for (offset, (cols, vals)) in rows.enumerate() {
                    let row = block * DRAW_BLOCK_ROWS + offset;
                    // Sample among the n − 1 other neurons; skipping `row` keeps them sorted.
                    let picks = others.sample(&mut stream, per_row)?;
                    if picks.len() != cols.len() {
                        let what = "the LIF synapses of a row";
                        return Err(ReservoirError::shape(what, cols.len(), picks.len()));
                    }
                    // The CSR rules, checked here while the row is in cache, so the matrix
                    // is made without another pass over W: columns increasing and below n.
                    let mut last = None;
                    for ((&pick, col), value) in picks.iter().zip(cols).zip(vals) {
                        let col = *col.write((if pick >= row { pick + 1 } else { pick }) as u32);
                        if col as usize >= n || last.is_some_and(|last| col <= last) {
                            return Err(ReservoirError::invalid(
                                "the LIF synapses",
                                format!("row {row}: columns drawn out of order or range"),
                            ));
                        }
                        last = Some(col);
                        let magnitude = 1.0 - stream.random::<f64>();
                        value.write(if (col as usize) < n_exc {
                            magnitude
                        } else {
                            -gain * magnitude
                        });
                    }
                }
                Ok(())
            })?;
        // SAFETY: the first nnz slots of both vectors (within their capacity, reserved above)
        // are written: the blocks split them into rows of per_row slots (nnz = n·per_row and
        // a block holds whole rows), and every row wrote all of its slots, one per pick, after
        // checking that it had as many picks as slots. Had a block failed, the error would
        // have returned above, with both vectors still empty.
        unsafe {
            col_idx.set_len(nnz);
            values.set_len(nnz);
        }
        phases.spent("draw", started.elapsed());
        let started = Instant::now();
        // Every row's columns were checked as they were drawn, and every value is a magnitude
        // in (0, 1] times ±1 or −gain: finite.
        let mut w = CsrMatrix::from_checked_rows(n, n, row_ptr, col_idx, values)?;
        phases.spent("checks", started.elapsed());
        let options = SpectralOptions {
            seed: rng(config.seed(), STREAM_SPECTRAL).random(),
            max_matvecs: spectral_products(nnz),
            ..SpectralOptions::default()
        };
        let budgeted = options.max_matvecs < SpectralOptions::default().max_matvecs;
        let estimate = estimate(&w, &options, phases)?;
        if !(estimate.converged || budgeted) || estimate.radius <= f64::EPSILON {
            return Err(ReservoirError::numerical(
                "LIF spectral radius",
                format!(
                    "estimate {} after {} products (converged: {}); W cannot be scaled to \
                     spectral_radius {}: use a larger size or connection_prob",
                    estimate.radius,
                    estimate.iterations,
                    estimate.converged,
                    config.spectral_radius()
                ),
            ));
        }
        let started = Instant::now();
        w.scale(spectral_scale(config, estimate.radius));
        phases.spent("scale", started.elapsed());
        Ok(w)
    }

    /// Wraps weights made elsewhere (e.g. W = 0 for isolated neurons), checking that W is
    /// N × N, W_in is N × K (K ≥ 1) and finite, the mask has N entries, and Dale's law: every
    /// non-zero of column j is ≥ 0 if `excitatory[j]`, else ≤ 0.
    pub fn from_parts(
        recurrent: CsrMatrix<f64>,
        input: Array2<f64>,
        excitatory: Vec<bool>,
    ) -> Result<Self> {
        let weights = Self::checked_shapes(recurrent, input, excitatory)?;
        let wrong_sign = weights
            .recurrent
            .col_idx()
            .par_iter()
            .zip(weights.recurrent.values())
            .find_first(|&(&j, &w)| {
                if weights.excitatory[j as usize] {
                    w < 0.0
                } else {
                    w > 0.0
                }
            });
        if let Some((&j, &w)) = wrong_sign {
            return Err(ReservoirError::invalid(
                "LIF weights",
                format!("Dale's law: neuron {j} has an outgoing weight {w} of the wrong sign"),
            ));
        }
        Ok(weights)
    }

    /// Wraps weights made elsewhere that need not obey Dale's law (a network imported from
    /// another simulator), with the shape checks of [`LifWeights::from_parts`]; a neuron is
    /// counted excitatory when none of its outgoing weights is negative.
    pub fn with_any_signs(recurrent: CsrMatrix<f64>, input: Array2<f64>) -> Result<Self> {
        let mut excitatory = vec![true; recurrent.nrows()];
        for (&j, &w) in recurrent.col_idx().iter().zip(recurrent.values()) {
            if w < 0.0 {
                if let Some(e) = excitatory.get_mut(j as usize) {
                    *e = false;
                }
            }
        }
        Self::checked_shapes(recurrent, input, excitatory)
    }

    /// [`LifWeights::from_parts`] without the pass over W for Dale's law, for weights that
    /// obey it by construction.
    fn checked_shapes(
        recurrent: CsrMatrix<f64>,
        input: Array2<f64>,
        excitatory: Vec<bool>,
    ) -> Result<Self> {
        let n = recurrent.nrows();
        if recurrent.ncols() != n
            || input.nrows() != n
            || excitatory.len() != n
            || input.ncols() == 0
        {
            return Err(ReservoirError::shape(
                "LIF weights",
                format!("W {n} x {n}, W_in {n} x K (K >= 1), excitatory mask {n}"),
                format!(
                    "W {} x {}, W_in {} x {}, excitatory mask {}",
                    recurrent.nrows(),
                    recurrent.ncols(),
                    input.nrows(),
                    input.ncols(),
                    excitatory.len()
                ),
            ));
        }
        if input.iter().any(|v| !v.is_finite()) {
            return Err(ReservoirError::invalid(
                "LIF weights",
                "W_in must be finite",
            ));
        }
        Ok(Self {
            recurrent,
            input,
            excitatory,
        })
    }

    /// Checks that these weights have the config's `size` and `input_size`.
    pub fn check_fits(&self, config: &LifConfig) -> Result<()> {
        crate::weights::check_sizes(
            "LIF weights for this config",
            (config.size(), config.input_size()),
            (self.size(), self.input_size()),
        )
    }

    /// Number of neurons N.
    pub fn size(&self) -> usize {
        self.recurrent.nrows()
    }

    /// Number of input channels K.
    pub fn input_size(&self) -> usize {
        self.input.ncols()
    }

    /// The recurrent matrix W (N × N; column j holds neuron j's outgoing weights).
    pub fn recurrent(&self) -> &CsrMatrix<f64> {
        &self.recurrent
    }

    /// The input matrix W_in (N × K).
    pub fn input(&self) -> &Array2<f64> {
        &self.input
    }

    /// Wᵀ as CSR: row j lists neuron j's targets (ascending) and its outgoing weights, the
    /// layout of event-driven propagation (what [`crate::lif::LifNetwork`] steps with, in
    /// `f32`). About 1 s at 10^8 synapses.
    ///
    /// # Errors
    /// None for weights built by this module; the CSR checks of the result are kept.
    pub fn outgoing(&self) -> Result<CsrMatrix<f64>> {
        transposed(&self.recurrent, |v| v)
    }

    /// [`LifWeights::outgoing`] with its values rounded to `f32` (what the GPU steps with),
    /// built without the `f64` copy: at 10^9 synapses that is 4 GB less to write.
    ///
    /// # Errors
    /// As [`LifWeights::outgoing`].
    pub fn outgoing_f32(&self) -> Result<CsrMatrix<f32>> {
        transposed(&self.recurrent, |v| v as f32)
    }

    /// Whether each neuron is excitatory.
    pub fn excitatory(&self) -> &[bool] {
        &self.excitatory
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whole cycles of 64 products within the budget, at least one, at most the default 5000
    /// (which every W up to ~1.7·10^6 synapses keeps, so its weights did not change).
    /// Blocks of rows drawn on 1, 2 or 5 threads give the same W, bit for bit; each row has
    /// its synapses from distinct other neurons, ascending; Wᵀ in `f32` is Wᵀ rounded.
    #[test]
    fn the_weights_do_not_depend_on_the_threads() {
        let config = crate::lif::LifParams::new()
            .size(2 * DRAW_BLOCK_ROWS + 100)
            .connection_prob(0.002)
            .seed(11)
            .check()
            .expect("config");
        let on = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a thread pool")
                .install(|| LifWeights::generate(&config))
                .expect("weights")
        };
        let one = on(1);
        for threads in [2, 5] {
            assert_eq!(on(threads), one, "{threads} threads");
        }
        let (f64s, f32s) = (one.outgoing().expect("Wᵀ"), one.outgoing_f32().expect("Wᵀ"));
        assert_eq!(f32s.row_ptr(), f64s.row_ptr());
        assert_eq!(f32s.col_idx(), f64s.col_idx());
        assert!(f32s
            .values()
            .iter()
            .zip(f64s.values())
            .all(|(&a, &b)| a == b as f32));
        let w = one.recurrent();
        // The draw checks its rows itself: the full checks of weights made elsewhere (every
        // row's columns, finite values, Dale's law) find nothing either.
        let parts = (
            w.row_ptr().to_vec(),
            w.col_idx().to_vec(),
            w.values().to_vec(),
        );
        let checked = CsrMatrix::from_parts(w.nrows(), w.ncols(), parts.0, parts.1, parts.2)
            .expect("a valid CSR matrix");
        LifWeights::from_parts(checked, one.input().clone(), one.excitatory().to_vec())
            .expect("Dale's law");
        for (row, pair) in w.row_ptr().windows(2).enumerate() {
            let cols = &w.col_idx()[pair[0] as usize..pair[1] as usize];
            assert!(
                cols.windows(2).all(|c| c[0] < c[1]),
                "row {row} not ascending"
            );
            assert!(
                !cols.contains(&(row as u32)),
                "row {row} has a self-synapse"
            );
        }
    }

    #[test]
    fn spectral_products_follow_the_budget() {
        assert_eq!(spectral_products(0), 5000);
        assert_eq!(spectral_products(1_000_000), 5000);
        assert_eq!(spectral_products(10_000_000), 13 * 64);
        assert_eq!(spectral_products(100_000_000), 64);
        assert_eq!(spectral_products(usize::MAX), 64);
    }
}
