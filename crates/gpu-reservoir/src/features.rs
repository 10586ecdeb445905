//! The host side of sequence features summed on the device (`Reservoir::sequence_features`
//! of a batched [`crate::GpuReservoirComputer`]): the rows each summary of each sequence of a
//! batch covers, as the `sequence_features_add` kernel reads them, which of them fall in a
//! time chunk, and the division of the device's f32 sums by their row counts in f64.

use std::ops::Range;

use ndarray::ArrayViewMut2;
use rayon::prelude::*;
use reservoir_core::features::{SequenceFeatures, Summary};
use reservoir_core::ReservoirError;

use crate::error::Result;

/// The rows of `range` inside the time chunk `first..first + steps` (empty when none): what
/// the kernel adds for one summary of one sequence in that chunk.
pub(crate) fn rows_in_chunk(range: &Range<usize>, first: usize, steps: usize) -> Range<usize> {
    let start = range.start.max(first);
    let end = range.end.min(first.saturating_add(steps)).max(start);
    start..end
}

/// The rows ([`SequenceFeatures::rows`]) each summary of each sequence of a batch covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SummaryRows {
    /// `[start, end)` per (sequence j, summary s), at `2·(j·S + s)`: the kernel's `rows`.
    pairs: Vec<i32>,
    /// S.
    summaries: usize,
}

impl SummaryRows {
    /// The rows of `summaries` (some or all of those of `features`) of the batch whose
    /// sequences have `lengths` steps, the first being sequence `first_index` of the call (for
    /// errors).
    ///
    /// # Errors
    /// A sequence too short for the summaries ([`SequenceFeatures::check_steps`]), or longer
    /// than a kernel's `int`.
    pub(crate) fn new(
        features: &SequenceFeatures,
        summaries: &[Summary],
        lengths: impl IntoIterator<Item = usize>,
        first_index: usize,
    ) -> Result<Self> {
        const WHAT: &str = "sequence features";
        let mut pairs = Vec::new();
        for (j, steps) in lengths.into_iter().enumerate() {
            let index = first_index + j;
            features.check_steps(index, steps)?;
            for &summary in summaries {
                let rows = features.rows(summary, steps);
                if rows.is_empty() {
                    return Err(ReservoirError::invalid(
                        WHAT,
                        format!("sequence {index}: `{}` covers no rows", summary.name()),
                    )
                    .into());
                }
                for row in [rows.start, rows.end] {
                    pairs.push(i32::try_from(row).map_err(|_| {
                        ReservoirError::invalid(
                            WHAT,
                            format!("sequence {index} has more than 2^31 - 1 steps"),
                        )
                    })?);
                }
            }
        }
        Ok(Self {
            pairs,
            summaries: summaries.len(),
        })
    }

    /// The pairs as the kernel reads them.
    pub(crate) fn pairs(&self) -> &[i32] {
        &self.pairs
    }

    /// The summaries per sequence (S).
    pub(crate) fn summaries(&self) -> usize {
        self.summaries
    }

    /// The sequences of the batch (B).
    pub(crate) fn sequences(&self) -> usize {
        self.pairs.len() / (2 * self.summaries.max(1))
    }

    /// The row range of every (sequence, summary), sequence-major.
    fn ranges(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        // The pairs were made from usize rows, so they are not negative.
        self.pairs
            .chunks_exact(2)
            .map(|pair| pair[0].max(0) as usize..pair[1].max(0) as usize)
    }

    /// Whether any summary covers a row of the chunk `first..first + steps` (a launch for a
    /// chunk that adds nothing is skipped, e.g. all but the last of a `last`-only batch).
    pub(crate) fn touch(&self, first: usize, steps: usize) -> bool {
        self.ranges()
            .any(|range| !rows_in_chunk(&range, first, steps).is_empty())
    }

    /// Writes the features of the batch into `out` (B × S·N): each of the device's sums
    /// (`sums[(j·S + s)·N + i]`) divided in f64 by the rows it adds (one for `last`, so its
    /// state is written unchanged).
    ///
    /// # Errors
    /// `sums` or `out` not of the batch's shape.
    pub(crate) fn write(&self, sums: &[f32], mut out: ArrayViewMut2<f64>) -> Result<()> {
        let (b, s) = (self.sequences(), self.summaries);
        let n = out.ncols() / s.max(1);
        if out.nrows() != b || out.ncols() != s * n || sums.len() != b * s * n {
            return Err(ReservoirError::shape(
                "sequence features",
                format!("{b} × {} features from {} sums", s * n, b * s * n),
                format!(
                    "{} × {} features from {} sums",
                    out.nrows(),
                    out.ncols(),
                    sums.len()
                ),
            )
            .into());
        }
        let counts: Vec<f64> = self.ranges().map(|range| range.len() as f64).collect();
        // Row j holds sequence j's summaries side by side; rows are written on rayon's threads.
        let fill = |(j, row): (usize, &mut [f64])| {
            for (k, features) in row.chunks_mut(n.max(1)).enumerate() {
                let pair = j * s + k;
                let sums = &sums[pair * n..][..n];
                for (dst, &sum) in features.iter_mut().zip(sums) {
                    *dst = f64::from(sum) / counts[pair];
                }
            }
        };
        match out.as_slice_mut() {
            Some(values) => values
                .par_chunks_mut((s * n).max(1))
                .enumerate()
                .for_each(fill),
            None => {
                for (j, mut row) in out.rows_mut().into_iter().enumerate() {
                    let mut values = row.to_vec();
                    fill((j, &mut values));
                    row.assign(&ndarray::ArrayView1::from(&values));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use reservoir_core::features::FeatureParams;

    fn all_summaries(last_k: usize, warmup: usize) -> SequenceFeatures {
        FeatureParams::new()
            .summaries(vec![Summary::Last, Summary::Mean, Summary::MeanLast])
            .last_k(last_k)
            .warmup(warmup)
            .check()
            .expect("valid features")
    }

    #[test]
    fn the_pairs_are_each_summarys_rows_sequence_major() {
        let features = all_summaries(3, 2);
        let rows =
            SummaryRows::new(&features, features.summaries(), [3, 4, 10], 0).expect("long enough");
        assert_eq!((rows.sequences(), rows.summaries()), (3, 3));
        #[rustfmt::skip]
        let expected = [
            2, 3, 2, 3, 2, 3, // 3 steps: all after the warm-up is row 2
            3, 4, 2, 4, 2, 4, // mean_last would start at 1, inside the warm-up
            9, 10, 2, 10, 7, 10,
        ];
        assert_eq!(rows.pairs(), expected);
    }

    #[test]
    fn a_short_sequence_is_named_by_its_index_in_the_call() {
        let features = all_summaries(3, 2);
        let message = SummaryRows::new(&features, features.summaries(), [5, 2], 40)
            .expect_err("2 steps with a warm-up of 2")
            .to_string();
        assert!(message.contains("sequence 41"), "{message}");
        let last = SequenceFeatures::default();
        assert!(SummaryRows::new(&last, last.summaries(), [1, 0], 0).is_err());
        assert!(SummaryRows::new(&last, last.summaries(), [1, 1], 0).is_ok());
    }

    #[test]
    fn chunks_split_a_range_into_its_rows_in_order() {
        for (start, end) in [(0, 1), (2, 10), (7, 8), (0, 60), (59, 60)] {
            for chunk in 1..12 {
                let mut covered = Vec::new();
                for first in (0..64).step_by(chunk) {
                    let rows = rows_in_chunk(&(start..end), first, chunk);
                    assert!(rows.start >= first && rows.end <= first + chunk || rows.is_empty());
                    covered.extend(rows);
                }
                assert_eq!(
                    covered,
                    (start..end).collect::<Vec<_>>(),
                    "{start}..{end}, {chunk}"
                );
            }
        }
        assert!(rows_in_chunk(&(2..10), 12, 4).is_empty());
        assert!(rows_in_chunk(&(2..10), 0, 2).is_empty());
    }

    #[test]
    fn only_chunks_with_a_summarized_row_are_touched() {
        let last = SequenceFeatures::default();
        let rows = SummaryRows::new(&last, last.summaries(), [5, 9], 0).expect("ok");
        // Rows 4 and 8 are the last ones.
        let touched: Vec<bool> = (0..12).step_by(4).map(|f| rows.touch(f, 4)).collect();
        assert_eq!(touched, [false, true, true]);
        assert!(!rows.touch(9, 100), "past every sequence");
    }

    /// The kernel on the host: states laid out (t·B + j)·N, chunk after chunk, each sum over
    /// its rows in the chunk in f32, in increasing t; padding rows hold garbage that must not
    /// count.
    #[test]
    fn sums_over_chunks_and_counts_give_the_cpu_features() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let (n, warmup) = (3, 2);
        let features = all_summaries(4, warmup);
        let lengths: Vec<usize> = (0..9).map(|_| rng.random_range(warmup + 1..=20)).collect();
        let (b, s) = (lengths.len(), features.summaries().len());
        let longest = lengths.iter().copied().max().unwrap_or(0);
        let states: Vec<Array2<f64>> = lengths
            .iter()
            .map(|&t| Array2::from_shape_fn((t, n), |_| f64::from(rng.random_range(-1.0f32..1.0))))
            .collect();
        let rows = SummaryRows::new(&features, features.summaries(), lengths.iter().copied(), 0)
            .expect("ok");
        for chunk in [1, 3, 7, longest] {
            let mut sums = vec![0.0f32; b * s * n];
            for first in (0..longest).step_by(chunk) {
                let steps = chunk.min(longest - first);
                let mut device = vec![f32::NAN; steps * b * n];
                for (j, sequence) in states.iter().enumerate() {
                    for t in first..(first + steps).min(sequence.nrows()) {
                        for i in 0..n {
                            device[((t - first) * b + j) * n + i] = sequence[(t, i)] as f32;
                        }
                    }
                }
                for (pair, range) in rows.ranges().enumerate() {
                    let j = pair / s;
                    for i in 0..n {
                        for t in rows_in_chunk(&range, first, steps) {
                            sums[pair * n + i] += device[((t - first) * b + j) * n + i];
                        }
                    }
                }
            }
            let mut got = Array2::zeros((b, s * n));
            rows.write(&sums, got.view_mut()).expect("shapes");
            for (j, sequence) in states.iter().enumerate() {
                let expected = features.of(sequence.view(), j).expect("features");
                for (g, e) in got.row(j).iter().zip(&expected) {
                    assert!(
                        (g - e).abs() < 1e-5,
                        "chunk {chunk}, sequence {j}: {g} vs {e}"
                    );
                }
            }
        }
        let wrong = rows.write(&[0.0; 3], Array2::zeros((b, s * n)).view_mut());
        assert!(wrong.is_err(), "sums of the wrong length");
    }
}
