//! The echo-state reservoir on the CPU.

mod blocks;
mod split;

use std::sync::Arc;

use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut2};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

use crate::activation::apply_in_place;
use crate::checks::{check_run, check_state};
use crate::config::{Activation, Precision, ReservoirConfig};
use crate::error::Result;
use crate::features::SequenceFeatures;
use crate::par::Par;
use crate::random::{stream_rng, Stream};
use crate::real::{has_avx2_fma, ProductKernel, Real};
use crate::reservoir::{features_of_runs, run_one_by_one, Reservoir, SequenceVisitor};
use crate::sparse::{CsrMatrix, SparseProduct};
use crate::weights::ReservoirWeights;

/// W twice: in the layout of the single-sequence kernel timed fastest for it on this machine
/// (the dense layout competes from a quarter full), and in CSR for the block products of
/// many sequences. All give the same bits.
#[derive(Debug, Clone)]
struct RecurrentLayout<T> {
    csr: CsrMatrix<T>,
    product: SparseProduct<T>,
}

impl<T: Real> RecurrentLayout<T> {
    fn new(w: &CsrMatrix<f64>) -> Result<Self> {
        let csr = w.cast();
        let product = SparseProduct::new(&csr)?;
        Ok(Self { csr, product })
    }

    /// Multiply-adds of one product.
    fn work(&self) -> usize {
        self.product.work()
    }

    /// Rows a split of the product between threads must start at a multiple of.
    fn row_granule(&self) -> usize {
        self.product.row_granule()
    }

    /// `y ← W[first..first + y.len()]·x` (`first` a multiple of [`Self::row_granule`]): each
    /// row is summed the same way whichever rows are asked for; lengths are checked once by
    /// the owner.
    fn mul_rows(&self, first: usize, x: &[T], y: &mut [T]) {
        self.product.mul_rows_trusted(first, x, y)
    }
}

/// The weights and constants of one update, shared by the threads that each compute a part
/// of the rows.
struct Update<'a, T> {
    recurrent: &'a RecurrentLayout<T>,
    input_by_channel: &'a Array2<T>,
    bias: &'a [T],
    leak: T,
    activation: Activation,
}

impl<T: Real> Update<'_, T> {
    /// Rows `first..first + next.len()` of one update from the whole state `x` and input `u`
    /// (K entries, checked): `next ← (1 − a)·x + a·f(W·x + b + W_in·u + noise)`, `pre` being
    /// scratch of `next`'s length. `noise` (all rows: the draws are in unit order) is the
    /// level σ and the stream ξ is drawn from.
    #[inline]
    fn rows(
        &self,
        first: usize,
        x: &[T],
        u: ArrayView1<f64>,
        noise: Option<(f64, &mut ChaCha8Rng)>,
        pre: &mut [T],
        next: &mut [T],
    ) {
        let rows = first..first + next.len();
        self.recurrent.mul_rows(first, x, pre);
        for (p, &b) in pre.iter_mut().zip(&self.bias[rows.clone()]) {
            *p += b;
        }
        for (&u_k, w_k) in u.iter().zip(self.input_by_channel.rows()) {
            if u_k != 0.0 {
                let u_k = T::from_f64(u_k);
                for (p, &w) in pre.iter_mut().zip(w_k.slice(s![rows.clone()])) {
                    *p += w * u_k;
                }
            }
        }
        if let Some((level, stream)) = noise {
            for p in pre.iter_mut() {
                let xi: f64 = stream.sample(StandardNormal);
                *p += T::from_f64(level * xi);
            }
        }
        apply_in_place(self.activation, pre);
        let keep = T::one() - self.leak;
        for ((n, &x), &p) in next.iter_mut().zip(&x[rows]).zip(pre.iter()) {
            *n = keep * x + self.leak * p;
        }
    }
}

impl<T: Real> Update<'_, T> {
    /// Steps `inputs` (T × K, checked) from `state` on this thread, writing each step's state
    /// to its row of `states` (T × N, checked); `state` ends as the final state, `next` and
    /// `pre` (N each) are scratch.
    fn run(
        &self,
        state: &mut Vec<T>,
        next: &mut Vec<T>,
        pre: &mut [T],
        inputs: ArrayView2<f64>,
        states: ArrayViewMut2<f64>,
        noise: Option<(f64, &mut ChaCha8Rng)>,
    ) {
        #[cfg(target_arch = "x86_64")]
        {
            if has_avx2_fma() {
                // SAFETY: the CPU has AVX2 and FMA; the function is safe code compiled for
                // them (Rust never fuses a product and a sum by itself, so the same bits).
                return unsafe { self.run_avx2(state, next, pre, inputs, states, noise) };
            }
        }
        self.run_portable(state, next, pre, inputs, states, noise)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn run_avx2(
        &self,
        state: &mut Vec<T>,
        next: &mut Vec<T>,
        pre: &mut [T],
        inputs: ArrayView2<f64>,
        states: ArrayViewMut2<f64>,
        noise: Option<(f64, &mut ChaCha8Rng)>,
    ) {
        self.run_portable(state, next, pre, inputs, states, noise)
    }

    #[inline(always)]
    fn run_portable(
        &self,
        state: &mut Vec<T>,
        next: &mut Vec<T>,
        pre: &mut [T],
        inputs: ArrayView2<f64>,
        mut states: ArrayViewMut2<f64>,
        mut noise: Option<(f64, &mut ChaCha8Rng)>,
    ) {
        for (u, mut out) in inputs.rows().into_iter().zip(states.rows_mut()) {
            let noise = noise
                .as_mut()
                .map(|(level, stream)| (*level, &mut **stream));
            self.rows(0, state, u, noise, pre, next);
            std::mem::swap(state, next);
            for (o, x) in out.iter_mut().zip(state.iter()) {
                *o = x.as_f64();
            }
        }
    }
}

/// Echo-state reservoir: `x(t+1) = (1 − a)·x(t) + a·f(W_in·u(t) + W·x(t) + b + σ·ξ(t))`,
/// with ξ(t) standard normal noise drawn from the config's seeded noise stream.
///
/// `T` is the arithmetic of the update (`f32` or `f64`); weights are generated in `f64` and
/// rounded once. A reservoir built twice from the same config produces bit-identical states.
///
/// The weights are shared (`Arc`): a clone copies only the state, so that
/// [`Reservoir::run_many`] can run sequences on clones, one per thread. It runs on one thread
/// unless given more ([`EchoStateNetwork::with_par`]).
#[derive(Debug, Clone)]
pub struct EchoStateNetwork<T: Real = f32> {
    config: ReservoirConfig,
    /// The threads a run, and `run_many`'s blocks of sequences, may use.
    par: Par,
    weights: Arc<ReservoirWeights>,
    recurrent: Arc<RecurrentLayout<T>>,
    /// W_in transposed (K × N), so each input channel's weights are contiguous.
    input_by_channel: Arc<Array2<T>>,
    bias: Arc<[T]>,
    leak: T,
    state: Vec<T>,
    /// Where a one-thread step writes the next state before the two swap.
    next_state: Vec<T>,
    pre_activation: Vec<T>,
    noise: ChaCha8Rng,
}

impl<T: Real> EchoStateNetwork<T> {
    /// Generates the weights for `config` and builds the reservoir in the zero state.
    pub fn new(config: &ReservoirConfig) -> Result<Self> {
        let (weights, _) = ReservoirWeights::generate(config)?;
        Self::from_weights(config, weights)
    }

    /// Builds a reservoir on existing weights (a loaded model, or weights made elsewhere).
    ///
    /// # Errors
    /// Weights whose sizes differ from the config's `size` / `input_size`.
    pub fn from_weights(config: &ReservoirConfig, weights: ReservoirWeights) -> Result<Self> {
        weights.check_fits(config)?;
        let n = config.size();
        Ok(Self {
            recurrent: Arc::new(RecurrentLayout::new(weights.recurrent())?),
            input_by_channel: Arc::new(weights.input().t().mapv(T::from_f64)),
            bias: weights.bias().iter().map(|&b| T::from_f64(b)).collect(),
            leak: T::from_f64(config.leak_rate()),
            state: vec![T::zero(); n],
            next_state: vec![T::zero(); n],
            pre_activation: vec![T::zero(); n],
            noise: stream_rng(config.seed(), Stream::Noise),
            config: config.clone(),
            par: Par::Seq,
            weights: Arc::new(weights),
        })
    }

    /// Lets runs use `par`: a long run splits each step's rows over its threads, `run_many`
    /// spreads its blocks of sequences over them. The states are the same bits whatever
    /// `par`.
    pub fn with_par(mut self, par: Par) -> Self {
        self.par = par;
        self
    }

    /// The configuration the reservoir was built from.
    pub fn config(&self) -> &ReservoirConfig {
        &self.config
    }

    /// The weights (in `f64`, as generated).
    pub fn weights(&self) -> &ReservoirWeights {
        &self.weights
    }

    /// The kernel of W's single-sequence products: the fastest of
    /// [`ProductKernel::available`] on this machine, timed when the first reservoir of its
    /// kind is built in the process.
    pub fn product_kernel(&self) -> ProductKernel {
        self.recurrent.product.kernel()
    }

    /// Computes W's products with `kernel` from now on (for benchmarks and tests: every kernel
    /// gives the same bits).
    ///
    /// # Errors
    /// An invalid-input error when this CPU cannot run `kernel`; an out-of-memory error when
    /// its layout does not fit.
    pub fn set_product_kernel(&mut self, kernel: ProductKernel) -> Result<()> {
        let csr = &self.recurrent.csr;
        let product = SparseProduct::with_kernel(csr, kernel)?;
        self.recurrent = Arc::new(RecurrentLayout {
            csr: csr.clone(),
            product,
        });
        Ok(())
    }

    /// The rows each thread steps when one sequence runs on several: `bounds[i]..bounds[i+1]`
    /// for thread i, each starting at a multiple of the layout's row granule and about even in
    /// work. One thread (`[0, N]`) where the split does not pay: a small W, a short run, one
    /// thread given ([`Reservoir::par`]), or noise (drawn in unit order).
    fn thread_rows(&self, steps: usize) -> Vec<usize> {
        let n = self.size();
        let work = self.recurrent.work();
        let granule = self.recurrent.row_granule();
        let threads = self
            .par
            .threads()
            .min(work / split::WORK_PER_THREAD)
            .min(n / granule)
            .max(1);
        if threads == 1 || self.config.noise_level() > 0.0 || steps * work < split::RUN_WORK {
            return vec![0, n];
        }
        // Granules split evenly: the layouts pad each granule's rows to a common length, so
        // granules are about even in work across a random W.
        let granules = n.div_ceil(granule);
        let mut bounds: Vec<usize> = (0..threads)
            .map(|i| (granules * i / threads * granule).min(n))
            .collect();
        bounds.push(n);
        bounds
    }
}

impl<T: Real> Reservoir for EchoStateNetwork<T> {
    fn size(&self) -> usize {
        self.config.size()
    }

    fn input_size(&self) -> usize {
        self.config.input_size()
    }

    fn par(&self) -> Par {
        self.par
    }

    fn set_par(&mut self, par: Par) {
        self.par = par;
    }

    fn reset(&mut self) -> Result<()> {
        self.state.fill(T::zero());
        Ok(())
    }

    fn state(&self) -> Result<Array1<f64>> {
        Ok(self.state.iter().map(|v| v.as_f64()).collect())
    }

    fn set_state(&mut self, state: ArrayView1<f64>) -> Result<()> {
        check_state(self.size(), &state)?;
        for (x, &v) in self.state.iter_mut().zip(state.iter()) {
            *x = T::from_f64(v);
        }
        Ok(())
    }

    /// Runs on one thread, or with each step's rows split over several where that pays (see
    /// `split.rs`); every row is computed by the same code either way, so the states are the
    /// same bits.
    fn run_into(&mut self, inputs: ArrayView2<f64>, states: ArrayViewMut2<f64>) -> Result<()> {
        check_run(self.size(), self.input_size(), &inputs, &states)?;
        let bounds = self.thread_rows(inputs.nrows());
        let noise_level = self.config.noise_level();
        let Self {
            config,
            recurrent,
            input_by_channel,
            bias,
            leak,
            state,
            next_state,
            pre_activation,
            noise,
            ..
        } = self;
        let update = Update {
            recurrent,
            input_by_channel,
            bias,
            leak: *leak,
            activation: config.activation(),
        };
        if bounds.len() > 2 {
            split::run_on_threads(&update, &bounds, state, inputs, states);
            return Ok(());
        }
        let noise = (noise_level > 0.0).then_some((noise_level, noise));
        update.run(state, next_state, pre_activation, inputs, states, noise);
        Ok(())
    }

    /// Runs the sequences on the reservoir's threads. A sparse W steps them in blocks of 8
    /// (see `blocks.rs`: the same states to rounding, the same bits
    /// whatever the threads or the order); a dense one runs them on clones sharing the
    /// weights, with the same bits as one after another. With noise the states depend on the
    /// order in which the sequences draw from the one noise stream, so they run one after
    /// another.
    fn run_many(
        &mut self,
        sequences: &[ArrayView2<f64>],
        visit: &mut SequenceVisitor<'_>,
    ) -> Result<()> {
        if self.config.noise_level() > 0.0 || sequences.len() < 2 {
            return run_one_by_one(self, sequences, visit);
        }
        let recurrent = Arc::clone(&self.recurrent);
        blocks::run_in_blocks(self, &recurrent.csr, sequences, visit)?;
        self.reset()
    }

    /// Sums each block's [plain](SequenceFeatures::is_plain) features as its states go by
    /// (see `blocks.rs`), without holding any sequence's states, and makes other features
    /// from each block's states on the thread that ran it; with noise, one sequence, a
    /// projection still to fit or both directions of plain summaries, the features of
    /// [`Reservoir::run_many`].
    fn sequence_features(
        &mut self,
        sequences: &[ArrayView2<f64>],
        features: &SequenceFeatures,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Array2<f64>> {
        let provided = features.needs_projection()
            || (features.bidirectional() && features.one_direction().is_plain());
        if self.config.noise_level() > 0.0 || sequences.len() < 2 || provided {
            return features_of_runs(self, sequences, features, progress);
        }
        let recurrent = Arc::clone(&self.recurrent);
        let rows = blocks::features_in_blocks(self, &recurrent.csr, sequences, features, progress)?;
        self.reset()?;
        Ok(rows)
    }
}

/// The CPU echo-state reservoir for `weights`, in the precision the config asks for, its runs
/// on the threads of `par` ([`EchoStateNetwork::with_par`]).
///
/// # Errors
/// Weights whose sizes differ from the config's.
pub fn cpu_reservoir(
    config: &ReservoirConfig,
    weights: ReservoirWeights,
    par: Par,
) -> Result<Box<dyn Reservoir>> {
    Ok(match config.precision() {
        Precision::F32 => {
            Box::new(EchoStateNetwork::<f32>::from_weights(config, weights)?.with_par(par))
        }
        Precision::F64 => {
            Box::new(EchoStateNetwork::<f64>::from_weights(config, weights)?.with_par(par))
        }
    })
}
