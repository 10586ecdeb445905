//! How many sequences go into one batch: the limits of host and device memory a batch keeps
//! to, the batches cut from a run's sequences in order, and each batch's noise drawn as a
//! one-after-another run draws it.

use ndarray::ArrayView2;
use rand_chacha::ChaCha8Rng;

use super::CHUNK_BYTES;
use crate::error::Result;
use crate::noise::noise_values;

/// Most bytes of a batch's states on the host (they are handed out once the batch is done),
/// or of its noise.
const HOST_BATCH_BYTES: usize = 1 << 29;

/// Fewest steps of a time chunk that [`features_limit`] keeps a batch's size to: fewer steps
/// per chunk would make the chunks' fixed costs (an upload, a launch of the drive and of the
/// features) weigh on short chunks of a very wide batch, whose GEMMs gain nothing more.
const FEATURES_MIN_CHUNK_STEPS: usize = 16;

/// How many consecutive sequences one batch takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct BatchLimit {
    /// Most sequences.
    pub(super) max_sequences: usize,
    /// Host bytes each step of a sequence keeps while its batch runs (its states handed out
    /// at the end, or its noise); at most [`HOST_BATCH_BYTES`] of them per batch.
    pub(super) bytes_per_step: usize,
    /// Device bytes each sequence keeps per step of the batch's longest sequence while the
    /// batch runs (a model space's states, every sequence padded to the longest); at most
    /// [`PADDED_BATCH_BYTES`] of them per batch.
    pub(super) padded_bytes_per_step: usize,
}

/// Most device bytes of a batch's states padded to its longest sequence.
pub(super) const PADDED_BATCH_BYTES: usize = 1 << 29;

/// The batches of [`BatchEngine::features`] for `n` units: their states stay on the device,
/// so only the device's chunk limits the batch ([`FEATURES_MIN_CHUNK_STEPS`] steps of the
/// widest batch fit [`CHUNK_BYTES`]), and, with noise, the noise drawn for it on the host
/// (f32) fits [`HOST_BATCH_BYTES`].
pub(super) fn features_limit(n: usize, noise: bool) -> BatchLimit {
    let per_sequence = n.saturating_mul(8 * FEATURES_MIN_CHUNK_STEPS).max(1);
    BatchLimit {
        max_sequences: (CHUNK_BYTES / per_sequence).max(1),
        bytes_per_step: if noise { n * 4 } else { 0 },
        padded_bytes_per_step: 0,
    }
}

/// The end of the batch of consecutive sequences (of `lengths` steps) from `start`: at least
/// one sequence, then as many as `limit` allows.
fn batch_end(lengths: &[usize], start: usize, limit: BatchLimit) -> usize {
    let mut end = (start + 1).min(lengths.len());
    let mut bytes = lengths
        .get(start)
        .map_or(0, |&t| t.saturating_mul(limit.bytes_per_step));
    let mut longest = lengths.get(start).copied().unwrap_or(0);
    while end < lengths.len() && end - start < limit.max_sequences {
        let more = lengths[end].saturating_mul(limit.bytes_per_step);
        let padded = (end - start + 1)
            .saturating_mul(longest.max(lengths[end]))
            .saturating_mul(limit.padded_bytes_per_step);
        if bytes.saturating_add(more) > HOST_BATCH_BYTES || padded > PADDED_BATCH_BYTES {
            break;
        }
        bytes += more;
        longest = longest.max(lengths[end]);
        end += 1;
    }
    end
}

/// Runs `each(batch, first_index, noise)` on the batches of `sequences` in order ([`batch_end`]
/// of `limit`), with each batch's noise drawn from `noise` (the reservoir's stream and level)
/// for `n` units just before it runs: sequence after sequence, as a one-after-another run
/// draws it.
pub(super) fn for_each_batch(
    sequences: &[ArrayView2<f64>],
    limit: BatchLimit,
    mut noise: Option<(&mut ChaCha8Rng, f64)>,
    n: usize,
    mut each: impl FnMut(&[ArrayView2<f64>], usize, Option<&[Vec<f32>]>) -> Result<()>,
) -> Result<()> {
    let lengths: Vec<usize> = sequences.iter().map(|s| s.nrows()).collect();
    let mut start = 0;
    while start < sequences.len() {
        let end = batch_end(&lengths, start, limit);
        let batch = &sequences[start..end];
        let drawn = noise
            .as_mut()
            .map(|(rng, level)| draw_batch_noise(rng, *level, batch, n));
        each(batch, start, drawn.as_deref())?;
        start = end;
    }
    Ok(())
}

/// Each sequence's noise (Tᵢ × N values), drawn from `rng` sequence after sequence, step after
/// step, unit after unit: what the CPU reservoir draws running them one after another.
fn draw_batch_noise(
    rng: &mut ChaCha8Rng,
    level: f64,
    batch: &[ArrayView2<f64>],
    n: usize,
) -> Vec<Vec<f32>> {
    batch
        .iter()
        .map(|sequence| noise_values(rng, level, sequence.nrows() * n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::chunk_steps;
    use super::*;

    #[test]
    fn visiting_batches_keep_their_states_within_the_host_budget() {
        let limit = BatchLimit {
            max_sequences: usize::MAX,
            bytes_per_step: 8 * 1024,
            padded_bytes_per_step: 0,
        };
        // 2^29 bytes hold 65536 steps of 1024 units in f64.
        let lengths = [30_000, 30_000, 5_536, 1, 70_000, 10];
        let mut ends = Vec::new();
        let mut start = 0;
        while start < lengths.len() {
            start = batch_end(&lengths, start, limit);
            ends.push(start);
        }
        // A sequence over the budget alone still makes a batch of one.
        assert_eq!(ends, [3, 4, 5, 6]);
    }

    #[test]
    fn padded_batches_count_every_sequence_at_the_longest_length() {
        // 2^29 bytes hold 2^20 padded steps of 512 bytes.
        let limit = BatchLimit {
            max_sequences: usize::MAX,
            bytes_per_step: 0,
            padded_bytes_per_step: 512,
        };
        let mut lengths = vec![1000; 1048];
        // One long sequence: with it, 1049 sequences would pad to 1049 × 1000 steps.
        lengths.push(1000);
        lengths.push(10_000);
        lengths.extend([10; 200]);
        let mut ends = Vec::new();
        let mut start = 0;
        while start < lengths.len() {
            start = batch_end(&lengths, start, limit);
            ends.push(start);
        }
        // 1048 × 1000 ≤ 2^20 < 1049 × 1000; then 104 × 10,000 ≤ 2^20 < 105 × 10,000, then
        // the 98 short sequences left.
        assert_eq!(ends, [1048, 1049 + 103, 1250]);
    }

    /// The shape `tests/features_parity.rs` runs to get several batches and several chunks.
    #[test]
    fn feature_batches_are_limited_by_the_device_chunk_and_the_noise_only() {
        let (n, longest) = (512, 60);
        let quiet = features_limit(n, false);
        assert_eq!(quiet.max_sequences, 4096);
        assert_eq!(quiet.bytes_per_step, 0, "no states are kept on the host");
        let lengths = vec![longest; 4100];
        assert_eq!(batch_end(&lengths, 0, quiet), 4096);
        assert_eq!(batch_end(&lengths, 4096, quiet), 4100);
        let chunk = chunk_steps(n, 4096, longest);
        assert_eq!(chunk, FEATURES_MIN_CHUNK_STEPS);
        assert!(longest.div_ceil(chunk) > 1, "several time chunks");
        assert_eq!(
            chunk_steps(n, 4, longest),
            longest,
            "a narrow batch in one chunk"
        );
        // Far more states than the host budget would allow a visiting batch.
        assert!(4096 * longest * n * 8 > HOST_BATCH_BYTES);
        // With noise, the f32 noise drawn for a batch stays within the host budget.
        let noisy = features_limit(n, true);
        let long = vec![100_000; 10];
        let end = batch_end(&long, 0, noisy);
        assert_eq!(end, 2, "2 × 10^5 steps × 2 KiB of noise, not 3");
        // A tiny reservoir still gets a bounded batch, and a chunk of at least one step.
        assert!(features_limit(1, false).max_sequences <= CHUNK_BYTES / 8);
        assert_eq!(chunk_steps(1 << 20, 1 << 20, 5), 1);
    }
}
