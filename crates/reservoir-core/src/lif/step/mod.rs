//! The kernels of one LIF step ([`crate::lif`], "The step, exactly") on a part of the neurons,
//! so that a step can be split over threads by neuron range with the same bits.
//!
//! A part decays its I_syn, takes the previous step's spikes for its own targets (a row of Wᵀ
//! is sorted by target, so a part's targets are a slice of it, and per target the adds keep
//! their ascending source order), then runs steps 2 and 3 fused in one pass: a neuron's input
//! current is read only by its own update. That pass goes [`LANES`] neurons at a time,
//! branch-free so that it compiles to vector code; every lane does the scalar operations of
//! the module docs in the same order (Rust never contracts a multiply and an add into an FMA),
//! so every instruction set gives the same bits. A chunk's spikes come out of a bit mask,
//! ascending.

use std::ops::Range;

use super::constants::LifConstants;
use crate::error::Result;
use crate::memory::try_with_capacity;
use crate::sparse::CsrMatrix;

/// Neurons per chunk of the fused pass: one 512-bit vector of `f32`.
pub(super) const LANES: usize = 16;

/// Neurons per part at least when a step is split over threads: handing a part to rayon's
/// pool and waiting for it costs microseconds a step, as much as a smaller part saves
/// (docs/decisions.md, "Other thresholds", has the sizes measured).
pub const MIN_PART_NEURONS: usize = 32_768;

/// Bits of 2^-125: below it an `f32` is a whole number of 2^-149, and that number is its bits
/// less the sign.
const TINY_BITS: u32 = 0x0100_0000;

/// 2^52: adding it to an `f64` in [0, 2^32) rounds that to a whole number, ties to even,
/// which is then the low 32 bits of the sum.
const ROUND_F64: f64 = 4_503_599_627_370_496.0;

/// The instruction set the step is compiled for. Every kernel gives the same bits; one the CPU
/// lacks runs as [`Kernel::Portable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kernel {
    /// The target's baseline (SSE2 on x86-64).
    Portable,
    /// 256-bit vectors.
    Avx2,
    /// 512-bit vectors and mask registers, in intrinsics.
    Avx512,
}

impl Kernel {
    /// Every kernel, the widest last.
    #[cfg(test)]
    pub(super) const ALL: [Kernel; 3] = [Kernel::Portable, Kernel::Avx2, Kernel::Avx512];

    /// The kernels this CPU runs.
    pub(super) fn available() -> Vec<Kernel> {
        [Kernel::Portable, Kernel::Avx2, Kernel::Avx512]
            .into_iter()
            .filter(|k| k.supported())
            .collect()
    }

    /// Whether this CPU has the instructions of the kernel.
    pub(super) fn supported(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            match self {
                Kernel::Portable => true,
                Kernel::Avx2 => has!("avx2") && has!("bmi1"),
                Kernel::Avx512 => has!("avx512f") && has!("bmi1"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Kernel::Portable
        }
    }

    /// Steps 1 to 3 for `part`: pushes its spikes, ascending, to `spikes` and returns the
    /// synaptic events it delivered.
    pub(super) fn step_part(
        self,
        shared: &StepInputs<'_>,
        part: Part<'_>,
        spikes: &mut Vec<u32>,
    ) -> u64 {
        #[cfg(target_arch = "x86_64")]
        {
            if self == Kernel::Avx512 && self.supported() {
                // SAFETY: the CPU has the features `step_part_avx512` is compiled for.
                return unsafe { step_part_avx512(shared, part, spikes) };
            }
            if self == Kernel::Avx2 && self.supported() {
                // SAFETY: the CPU has the features `step_part_avx2` is compiled for.
                return unsafe { step_part_avx2(shared, part, spikes) };
            }
        }
        step_part_portable(shared, part, spikes)
    }
}

/// How a step is split over threads: parts of `size` neurons, the last one shorter, and where
/// each part's targets begin in every row of Wᵀ, so that a part reads only its slice of a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Split {
    parts: usize,
    size: usize,
    /// `cuts[j·(parts − 1) + q − 1]`, q in 1..parts: the index in Wᵀ of the first entry of
    /// row j whose target is at least q·size.
    cuts: Vec<u32>,
}

impl Split {
    /// One part: the whole network.
    pub(super) fn whole(n: usize) -> Self {
        Self {
            parts: 1,
            size: n,
            cuts: Vec::new(),
        }
    }

    /// At most `threads` parts of whole chunks and at least `min_part` neurons each (one
    /// part when the network is smaller), over Wᵀ = `outgoing`.
    ///
    /// # Errors
    /// Out of memory for the cuts (`parts − 1` per neuron).
    pub(super) fn new(outgoing: &CsrMatrix<f32>, threads: usize, min_part: usize) -> Result<Self> {
        let n = outgoing.nrows();
        let parts = threads.min(n / min_part.max(1)).max(1);
        if parts == 1 {
            return Ok(Self::whole(n));
        }
        let size = n.div_ceil(parts).next_multiple_of(LANES);
        // Rounding the size up may leave fewer parts than asked for.
        let parts = n.div_ceil(size);
        let mut cuts = try_with_capacity("the LIF step's row cuts", n * (parts - 1))?;
        let (row_ptr, targets) = (outgoing.row_ptr(), outgoing.col_idx());
        for row in row_ptr.windows(2) {
            let row_targets = &targets[row[0] as usize..row[1] as usize];
            cuts.extend((1..parts).map(|q| {
                row[0] + row_targets.partition_point(|&i| (i as usize) < q * size) as u32
            }));
        }
        Ok(Self { parts, size, cuts })
    }

    /// The number of parts.
    pub(super) fn parts(&self) -> usize {
        self.parts
    }

    /// Neurons per part (the last may have fewer).
    pub(super) fn size(&self) -> usize {
        self.size
    }

    /// The entries of row j of Wᵀ (`row_ptr[j]..row_ptr[j + 1]`) whose targets are in part p.
    #[inline]
    fn range(&self, row_ptr: &[u32], j: usize, p: usize) -> Range<usize> {
        let cut = |q: usize| match q {
            0 => row_ptr[j],
            q if q == self.parts => row_ptr[j + 1],
            q => self.cuts[j * (self.parts - 1) + q - 1],
        };
        cut(p) as usize..cut(p + 1) as usize
    }
}

/// What every part of a step reads.
pub(super) struct StepInputs<'a> {
    pub(super) constants: LifConstants,
    /// Wᵀ: row j = neuron j's targets, ascending, and weights.
    pub(super) outgoing: &'a CsrMatrix<f32>,
    pub(super) split: &'a Split,
    /// The spikes of the previous step, ascending.
    pub(super) previous: &'a [u32],
    /// W_in transposed, one row of N per channel.
    pub(super) input_by_channel: &'a [Vec<f32>],
    /// The channels k with u_k ≠ 0, ascending, with u_k in `f32`.
    pub(super) active: &'a [(usize, f32)],
    /// Whether the input enters I_syn (`input_mode = "synaptic"`) rather than this step's
    /// current.
    pub(super) synaptic: bool,
}

/// The state of part `index` of the split: neurons `index·size..` (all four slices the same
/// length).
pub(super) struct Part<'a> {
    pub(super) index: usize,
    pub(super) v: &'a mut [f32],
    pub(super) i_syn: &'a mut [f32],
    pub(super) refractory: &'a mut [u32],
    pub(super) trace: &'a mut [f32],
}

/// [`step_part_portable`] with steps 2 and 3 in AVX-512 intrinsics ([`x86::integrate`]): the
/// same operations, so the same bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,bmi1")]
fn step_part_avx512(shared: &StepInputs<'_>, part: Part<'_>, spikes: &mut Vec<u32>) -> u64 {
    decay(part.i_syn, shared.constants.alpha_syn);
    let events = deliver(shared, part.index, part.i_syn);
    if shared.synaptic {
        x86::integrate::<true>(shared, part, spikes);
    } else {
        x86::integrate::<false>(shared, part, spikes);
    }
    events
}

/// [`step_part_portable`] compiled for AVX2: the same operations, so the same bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1")]
fn step_part_avx2(shared: &StepInputs<'_>, part: Part<'_>, spikes: &mut Vec<u32>) -> u64 {
    step_part_portable(shared, part, spikes)
}

#[inline(always)]
fn step_part_portable(shared: &StepInputs<'_>, part: Part<'_>, spikes: &mut Vec<u32>) -> u64 {
    decay(part.i_syn, shared.constants.alpha_syn);
    let events = deliver(shared, part.index, part.i_syn);
    if shared.synaptic {
        integrate::<true>(shared, part, spikes);
    } else {
        integrate::<false>(shared, part, spikes);
    }
    events
}

/// Step 1's decay, I_syn ← I_syn·α_syn.
#[inline(always)]
fn decay(i_syn: &mut [f32], alpha_syn: f32) {
    for x in i_syn {
        *x *= alpha_syn;
    }
}

/// Step 1's adds into the targets of part p (`i_syn` is its slice): spikes in ascending order,
/// each row's targets in ascending order. Returns the synapses it added.
///
/// The rows of Wᵀ come from memory (800 MB at N = 10^5): while a row is added, the next one
/// is asked for, a cache line per line of this one (asking for a whole row at once stalls on
/// the CPU's queue of misses). Measured, the 10^5-neuron step was a fifth faster for it.
#[inline(always)]
fn deliver(shared: &StepInputs<'_>, p: usize, i_syn: &mut [f32]) -> u64 {
    /// Entries of Wᵀ's targets (`u32`) and weights (`f32`) per cache line.
    const LINE: usize = 16;
    let w = shared.outgoing;
    let (row_ptr, targets, weights) = (w.row_ptr(), w.col_idx(), w.values());
    let range = |j: Option<&u32>| j.map_or(0..0, |&j| shared.split.range(row_ptr, j as usize, p));
    let offset = p * shared.split.size();
    let mut events = 0;
    let mut row = range(shared.previous.first());
    for s in 0..shared.previous.len() {
        let next = range(shared.previous.get(s + 1));
        let (row_targets, row_weights) = (&targets[row.clone()], &weights[row.clone()]);
        let (next_targets, next_weights) = (&targets[next.clone()], &weights[next.clone()]);
        let lines = row_targets.chunks(LINE).zip(row_weights.chunks(LINE));
        for (line, (line_targets, line_weights)) in lines.enumerate() {
            prefetch(next_targets.get(line * LINE));
            prefetch(next_weights.get(line * LINE));
            for (&i, &w) in line_targets.iter().zip(line_weights) {
                i_syn[i as usize - offset] += w;
            }
        }
        for line in row_targets.len().div_ceil(LINE)..next_targets.len().div_ceil(LINE) {
            prefetch(next_targets.get(line * LINE));
            prefetch(next_weights.get(line * LINE));
        }
        events += row.len() as u64;
        row = next;
    }
    events
}

/// Asks for the cache line of `value`, if any, to be brought in.
#[inline(always)]
fn prefetch<T>(value: Option<&T>) {
    #[cfg(target_arch = "x86_64")]
    if let Some(value) = value {
        // SAFETY: a prefetch has no effect a program can observe, whatever the address.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                (value as *const T).cast(),
            );
        }
    }
}

/// Steps 2 and 3 for the part, [`LANES`] neurons at a time through [`chunk`], then the
/// remainder.
#[inline(always)]
fn integrate<const SYNAPTIC: bool>(shared: &StepInputs<'_>, part: Part<'_>, spikes: &mut Vec<u32>) {
    for_each_chunk(
        shared,
        part,
        spikes,
        |first, v, i_syn, refractory, trace| {
            chunk::<SYNAPTIC>(shared, first, v, i_syn, refractory, trace)
        },
    );
}

/// Calls `each(first, v, i_syn, refractory, trace)` on the part's neurons [`LANES`] at a time
/// (the remainder last, shorter) and pushes the spikes of the mask it returns (bit l: neuron
/// first + l), ascending.
#[inline(always)]
fn for_each_chunk(
    shared: &StepInputs<'_>,
    part: Part<'_>,
    spikes: &mut Vec<u32>,
    mut each: impl FnMut(usize, &mut [f32], &mut [f32], &mut [u32], &mut [f32]) -> u32,
) {
    let offset = part.index * shared.split.size();
    let remainder = offset + part.v.len() - part.v.len() % LANES;
    let (v_chunks, v_rest) = part.v.as_chunks_mut::<LANES>();
    let (i_chunks, i_rest) = part.i_syn.as_chunks_mut::<LANES>();
    let (r_chunks, r_rest) = part.refractory.as_chunks_mut::<LANES>();
    let (t_chunks, t_rest) = part.trace.as_chunks_mut::<LANES>();
    let chunks = v_chunks
        .iter_mut()
        .zip(i_chunks)
        .zip(r_chunks)
        .zip(t_chunks);
    for (c, (((v, i_syn), refractory), trace)) in chunks.enumerate() {
        let first = offset + c * LANES;
        push_spikes(each(first, v, i_syn, refractory, trace), first, spikes);
    }
    let fired = each(remainder, v_rest, i_rest, r_rest, t_rest);
    push_spikes(fired, remainder, spikes);
}

/// Steps 2 and 3 for the neurons `first..first + v.len()` (at most [`LANES`]; all slices the
/// same length), branch-free: returns the mask of those that spiked (bit l: neuron first + l).
#[inline(always)]
fn chunk<const SYNAPTIC: bool>(
    shared: &StepInputs<'_>,
    first: usize,
    v: &mut [f32],
    i_syn: &mut [f32],
    refractory: &mut [u32],
    trace: &mut [f32],
) -> u32 {
    let c = &shared.constants;
    let len = v.len();
    // Step 2: ext = bias + Σ_k W_in[i, k]·u_k, or those terms added to I_syn.
    let mut ext = [c.bias; LANES];
    for &(k, u_k) in shared.active {
        let w_k = &shared.input_by_channel[k][first..first + len];
        let x = if SYNAPTIC {
            &mut i_syn[..]
        } else {
            &mut ext[..len]
        };
        for (x, &w) in x.iter_mut().zip(w_k) {
            *x += w * u_k;
        }
    }
    // Step 3, every lane computing v' and keeping it only where the neuron integrates.
    let mut fired = 0;
    for l in 0..len {
        let current = i_syn[l] + ext[l];
        let integrated = c.v_rest + (v[l] - c.v_rest) * c.alpha_m + current * c.drive_gain;
        let held = refractory[l] > 0;
        let spike = !held && integrated >= c.threshold;
        v[l] = if held || spike { c.v_reset } else { integrated };
        refractory[l] = if spike {
            c.refractory_steps
        } else {
            refractory[l].saturating_sub(1)
        };
        trace[l] = decayed(trace[l], c.alpha_trace) + if spike { 1.0 } else { 0.0 };
        fired |= u32::from(spike) << l;
    }
    fired
}

/// `x * alpha` for α in [0, 1], the same bits, without a subnormal operand or result where
/// 0 < |x| < 2^-125: CPUs take a slow path there. The trace of a neuron silent for seconds
/// decays into that range and stays (the smallest subnormal times α rounds back to itself):
/// measured, the 10^4-neuron benchmark network stepped over twice as slowly once a few
/// hundred traces had. There x and x·α are whole numbers of 2^-149, x's being its bits: the
/// product is that number times α (exact in `f64`) rounded to a whole number, ties to even,
/// as the `f32` product rounds. Fast for α ≥ 0.5, where the other products stay normal.
#[inline(always)]
fn decayed(x: f32, alpha: f32) -> f32 {
    let bits = x.to_bits();
    let tiny = (bits & 0x7fff_ffff).wrapping_sub(1) < TINY_BITS - 1;
    let fast = if tiny { 0.0 } else { x } * alpha;
    // The whole number sits in the low bits of 2^52 + count·α.
    let rounded = f64::from(bits & 0x7fff_ffff) * f64::from(alpha) + ROUND_F64;
    let exact = f32::from_bits(rounded.to_bits() as u32 | (bits & 0x8000_0000));
    if tiny {
        exact
    } else {
        fast
    }
}

/// Pushes `first + l` for every set bit l of `fired`, ascending.
#[inline(always)]
fn push_spikes(mut fired: u32, first: usize, spikes: &mut Vec<u32>) {
    while fired != 0 {
        spikes.push((first + fired.trailing_zeros() as usize) as u32);
        fired &= fired - 1;
    }
}

/// Steps 2 and 3 in AVX-512 intrinsics.
#[cfg(target_arch = "x86_64")]
mod x86;

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ndarray::{Array1, ArrayView1};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::{decayed, Kernel, Split, LANES};
    use crate::lif::{LifInputMode, LifNetwork, LifParams};
    use crate::Reservoir;

    /// The step of the module docs written plainly, one neuron after another, as the step was
    /// before it was vectorised.
    fn reference_step(net: &mut LifNetwork, u: ArrayView1<f64>) {
        let c = net.constants;
        let n = net.v.len();
        std::mem::swap(&mut net.spikes, &mut net.previous);
        net.spikes.clear();
        for i_syn in &mut net.i_syn {
            *i_syn *= c.alpha_syn;
        }
        let outgoing = Arc::clone(&net.outgoing);
        let (row_ptr, targets, weights) =
            (outgoing.row_ptr(), outgoing.col_idx(), outgoing.values());
        for &j in &net.previous {
            let range = row_ptr[j as usize] as usize..row_ptr[j as usize + 1] as usize;
            net.synaptic_events += range.len() as u64;
            for (&i, &w) in targets[range.clone()].iter().zip(&weights[range]) {
                net.i_syn[i as usize] += w;
            }
        }
        let mut external = vec![c.bias; n];
        let target = match net.config.input_mode() {
            LifInputMode::Current => &mut external,
            LifInputMode::Synaptic => &mut net.i_syn,
        };
        for (&u_k, w_k) in u.iter().zip(net.input_by_channel.iter()) {
            if u_k != 0.0 {
                let u_k = u_k as f32;
                for (x, &w) in target.iter_mut().zip(w_k) {
                    *x += w * u_k;
                }
            }
        }
        let currents = net.i_syn.iter().zip(&external);
        let state = net
            .v
            .iter_mut()
            .zip(&mut net.refractory)
            .zip(&mut net.trace);
        for (i, (((v, refractory), trace), (&i_syn, &ext))) in state.zip(currents).enumerate() {
            let mut spiked = 0.0;
            if *refractory > 0 {
                *refractory -= 1;
                *v = c.v_reset;
            } else {
                let current = i_syn + ext;
                let integrated = c.v_rest + (*v - c.v_rest) * c.alpha_m + current * c.drive_gain;
                if integrated >= c.threshold {
                    *v = c.v_reset;
                    *refractory = c.refractory_steps;
                    net.spikes.push(i as u32);
                    spiked = 1.0;
                } else {
                    *v = integrated;
                }
            }
            *trace = *trace * c.alpha_trace + spiked;
        }
        net.record_spikes();
    }

    fn bits(x: &[f32]) -> Vec<u32> {
        x.iter().map(|v| v.to_bits()).collect()
    }

    /// Everything a step changes, bit for bit.
    fn assert_same_state(got: &LifNetwork, want: &LifNetwork, context: &str) {
        assert_eq!(got.spikes, want.spikes, "spikes, {context}");
        assert_eq!(bits(&got.v), bits(&want.v), "v, {context}");
        assert_eq!(bits(&got.i_syn), bits(&want.i_syn), "I_syn, {context}");
        assert_eq!(got.refractory, want.refractory, "refractory, {context}");
        assert_eq!(bits(&got.trace), bits(&want.trace), "traces, {context}");
        assert_eq!(got.counts, want.counts, "counts, {context}");
        let counters = |n: &LifNetwork| (n.synaptic_events, n.spike_count, n.neuron_updates);
        assert_eq!(counters(got), counters(want), "counters, {context}");
    }

    /// Random networks (sizes off the vector width, both input modes, time constants short
    /// enough for traces and currents to decay into subnormals, decay factors below 0.5),
    /// random start potentials and inputs with zeros: every kernel this CPU runs, whole and
    /// split into parts, against [`reference_step`] after every step.
    #[test]
    fn every_kernel_and_split_matches_the_scalar_reference() {
        let mut rng = ChaCha8Rng::seed_from_u64(2024);
        let (mut spikes, mut tiny, mut held) = (0, 0, 0);
        let sizes = [1, 2, 15, 16, 17, 40, 100, 257, 1000, 1031];
        for case in 0..24 {
            let n = sizes[case % sizes.len()];
            let mode = [LifInputMode::Current, LifInputMode::Synaptic][case % 2];
            let k = rng.random_range(1..4);
            let config = LifParams::new()
                .size(n)
                .input_size(k)
                .input_mode(mode)
                .connection_prob(rng.random_range(0.02..0.3))
                .spectral_radius(rng.random_range(0.0..4.0))
                .bias_current(rng.random_range(0.3..1.2))
                .input_scaling(rng.random_range(0.5..3.0))
                .input_connectivity(rng.random_range(0.1..1.0))
                .v_rest(rng.random_range(-0.5..0.3))
                .v_reset(rng.random_range(-0.6..0.3))
                .threshold(rng.random_range(0.5..1.5))
                .resistance(rng.random_range(0.5..2.0))
                .refractory_ms([0.0, 0.1, 2.0][case % 3])
                .tau_syn_ms([5.0, 0.3, 0.1][case % 3])
                .trace_tau_ms([20.0, 0.5, 0.12][case % 3])
                .count_window_steps(rng.random_range(1..50))
                .seed(rng.random())
                .check()
                .unwrap();
            let mut start = LifNetwork::new(&config).unwrap();
            let v0 = Array1::from_shape_fn(n, |_| rng.random_range(-1.0..1.5));
            start.set_state(v0.view()).unwrap();
            let steps = 400;
            let inputs: Vec<Array1<f64>> = (0..steps)
                .map(|_| {
                    Array1::from_shape_fn(k, |_| match mode {
                        _ if rng.random_bool(0.3) => 0.0,
                        LifInputMode::Current => rng.random_range(-1.0..2.0),
                        LifInputMode::Synaptic => f64::from(rng.random_range(0..3)),
                    })
                })
                .collect();
            let mut want = start.clone();
            let mut runs = Vec::new();
            for kernel in Kernel::ALL.into_iter().filter(|k| k.supported()) {
                for threads in [1, 2, 3] {
                    let mut net = start.clone();
                    net.kernel = kernel;
                    net.split = Arc::new(Split::new(&net.outgoing, threads, LANES).unwrap());
                    runs.push((format!("{kernel:?}, {} parts", net.split.parts()), net));
                }
            }
            for (t, u) in inputs.iter().enumerate() {
                reference_step(&mut want, u.view());
                spikes += want.spikes.len();
                tiny += want
                    .trace
                    .iter()
                    .chain(&want.i_syn)
                    .filter(|x| x.is_subnormal())
                    .count();
                held += want.refractory.iter().filter(|&&r| r > 0).count();
                for (name, net) in &mut runs {
                    net.step(u.view()).unwrap();
                    let context = format!("case {case} (N = {n}, {mode:?}), step {t}, {name}");
                    assert_same_state(net, &want, &context);
                }
            }
        }
        eprintln!("{spikes} spikes, {tiny} subnormal traces or currents, {held} held");
        assert!(
            spikes > 10_000 && tiny > 10_000 && held > 10_000,
            "a weak test"
        );
    }

    /// The exact product against the `f32` product over every magnitude and decay factors
    /// from 0 (and subnormal) to 1, on every kernel this CPU runs.
    #[test]
    fn decayed_is_the_f32_product() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let alphas = [0.0, f32::from_bits(1), 1e-30, 0.3, 0.5, 0.98, 0.995, 1.0];
        for &alpha in &alphas {
            let xs: Vec<f32> = (0..100_000)
                .map(|i| match i % 4 {
                    0 => f32::from_bits(rng.random::<u32>()),
                    1 => f32::from_bits(
                        rng.random_range(0..0x0200_0000) | (rng.random::<u32>() << 31),
                    ),
                    2 => f32::from_bits(rng.random_range(0..4)),
                    _ => [0.0, -0.0, f32::INFINITY, f32::MIN_POSITIVE][i / 4 % 4],
                })
                .collect();
            let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
            for &x in &xs {
                assert!(same(decayed(x, alpha), x * alpha), "{x:e} * {alpha:e}");
            }
            #[cfg(target_arch = "x86_64")]
            if Kernel::Avx512.supported() {
                for lanes in xs.chunks_exact(16) {
                    let got = super::x86::tests::decayed16(lanes, alpha);
                    for (&x, &g) in lanes.iter().zip(&got) {
                        assert!(same(g, x * alpha), "AVX-512: {x:e} * {alpha:e}");
                    }
                }
            }
        }
    }
}
