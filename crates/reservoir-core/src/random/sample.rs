//! Distinct random indices, sorted: the columns of a row of sparse weights.
//!
//! [`SortedSampler`] draws exactly what `rand::seq::index::sample` followed by a sort gives
//! (rand 0.9: the same algorithm for the same length and amount, the same draws from the
//! stream, so the same indices and the same stream position after), without that function's
//! per-call costs, which dominate drawing a large network: its partial Fisher–Yates fills a
//! fresh vector of all `length` indices for every row, and its rejection sampler hashes every
//! draw into a new `HashSet`. Here the identity permutation and a bitmap of taken indices are
//! allocated once per sampler and restored after each draw, in time proportional to `amount`.

use rand::distr::{Distribution, Uniform};
use rand::Rng;

use crate::{ReservoirError, Result};

/// Draws `amount` distinct indices of `0..length`, sorted, row after row, reusing its scratch.
#[derive(Debug, Clone)]
pub struct SortedSampler {
    length: u32,
    /// The partial Fisher–Yates permutation, the identity between draws (allocated on first
    /// use).
    permutation: Vec<u32>,
    /// The rejection sampler's taken indices, all clear between draws (allocated on first use).
    taken: Vec<u64>,
    /// Positions the last Fisher–Yates draw swapped, to restore.
    touched: Vec<u32>,
    picked: Vec<usize>,
}

/// How `rand::seq::index::sample` (rand 0.9) draws `amount` of `length` (≤ 2^32 − 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Floyd,
    Inplace,
    Rejection,
}

impl Method {
    /// rand's choice, with its constants and its f32 arithmetic.
    fn choose(length: u32, amount: u32) -> Self {
        let j = usize::from(length >= 500_000);
        let amount_fp = amount as f32;
        if amount < 163 {
            const C: [[f32; 2]; 2] = [[1.6, 8.0 / 45.0], [10.0, 70.0 / 9.0]];
            let m4 = C[0][j] * amount_fp;
            if amount > 11 && (length as f32) < (C[1][j] + m4) * amount_fp {
                Self::Inplace
            } else {
                Self::Floyd
            }
        } else {
            const C: [f32; 2] = [270.0, 330.0 / 9.0];
            if (length as f32) < C[j] * amount_fp {
                Self::Inplace
            } else {
                Self::Rejection
            }
        }
    }
}

impl SortedSampler {
    /// A sampler of indices below `length` (at most 2^32 − 1).
    pub fn new(length: usize) -> Result<Self> {
        let length = u32::try_from(length).map_err(|_| {
            ReservoirError::invalid("index sampler", format!("{length} indices exceed 2^32 - 1"))
        })?;
        Ok(Self {
            length,
            permutation: Vec::new(),
            taken: Vec::new(),
            touched: Vec::new(),
            picked: Vec::new(),
        })
    }

    /// `amount` distinct indices below the sampler's length, ascending.
    pub fn sample<R: Rng + ?Sized>(&mut self, rng: &mut R, amount: usize) -> Result<&[usize]> {
        let length = self.length;
        let amount = u32::try_from(amount)
            .ok()
            .filter(|&a| a <= length)
            .ok_or_else(|| {
                ReservoirError::invalid(
                    "index sampler",
                    format!("{amount} distinct indices of {length}"),
                )
            })?;
        self.picked.clear();
        match Method::choose(length, amount) {
            Method::Floyd => self.floyd(rng, amount),
            Method::Inplace => self.inplace(rng, amount),
            Method::Rejection => self.rejection(rng, amount)?,
        }
        self.picked.sort_unstable();
        Ok(&self.picked)
    }

    /// Floyd's algorithm, as rand's `sample_floyd`.
    fn floyd<R: Rng + ?Sized>(&mut self, rng: &mut R, amount: u32) {
        let picked = &mut self.picked;
        for j in self.length - amount..self.length {
            let t = rng.random_range(..=j);
            if let Some(pos) = picked.iter().position(|&x| x == t as usize) {
                picked[pos] = j as usize;
            }
            picked.push(t as usize);
        }
    }

    /// The partial Fisher–Yates shuffle of rand's `sample_inplace`, on a permutation kept as
    /// the identity between draws.
    fn inplace<R: Rng + ?Sized>(&mut self, rng: &mut R, amount: u32) {
        if amount == self.length {
            // Every index (a dense row): the shuffle's draws are made, but its result, sorted,
            // is 0..length whatever they are.
            for i in 0..amount {
                let _: u32 = rng.random_range(i..self.length);
            }
            self.picked.extend(0..amount as usize);
            return;
        }
        if self.permutation.is_empty() {
            self.permutation = (0..self.length).collect();
        }
        let permutation = &mut self.permutation;
        self.touched.clear();
        for i in 0..amount {
            let j: u32 = rng.random_range(i..self.length);
            permutation.swap(i as usize, j as usize);
            self.touched.push(j);
        }
        self.picked
            .extend(permutation[..amount as usize].iter().map(|&x| x as usize));
        for p in (0..amount).chain(self.touched.iter().copied()) {
            permutation[p as usize] = p;
        }
    }

    /// The rejection sampler of rand's `sample_rejection`: uniform draws until `amount`
    /// distinct ones, with a bitmap instead of a hash set.
    fn rejection<R: Rng + ?Sized>(&mut self, rng: &mut R, amount: u32) -> Result<()> {
        if self.taken.is_empty() {
            self.taken = vec![0; (self.length as usize).div_ceil(64)];
        }
        // `Method::choose` (rand's rule) takes rejection only for amount < length, so the
        // range is not empty.
        let uniform = Uniform::new(0u32, self.length)
            .map_err(|e| ReservoirError::invalid("index sampler", e.to_string()))?;
        let taken = &mut self.taken;
        for _ in 0..amount {
            loop {
                let pos = uniform.sample(rng);
                let (word, bit) = (pos as usize / 64, 1u64 << (pos % 64));
                if taken[word] & bit == 0 {
                    taken[word] |= bit;
                    self.picked.push(pos as usize);
                    break;
                }
            }
        }
        for &pos in &self.picked {
            taken[pos / 64] = 0;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::seq::index;
    use rand::{RngCore, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// rand's sample, sorted, and the stream's next word after it.
    fn reference(seed: u64, length: usize, amount: usize) -> (Vec<usize>, u64) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut picked = index::sample(&mut rng, length, amount).into_vec();
        picked.sort_unstable();
        (picked, rng.next_u64())
    }

    #[test]
    fn the_sampler_draws_what_rand_draws() {
        let mut cases = vec![
            (1, 0),
            (1, 1),
            (10, 10),
            (400, 400),
            (16_384, 16_384),
            (100, 11),
            (100, 12),
            (1000, 162),
            (1000, 163),
            (44_000, 163),
            (44_001, 163),
            (499_999, 1000),
            (500_000, 1000),
            (999_999, 1000),
            (99_999, 1000),
            (10_000, 100),
            (2_000_000, 20),
            (600_000, 162),
        ];
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for _ in 0..200 {
            let length = rng.random_range(1..200_000usize);
            let amount = rng.random_range(0..=length.min(3000));
            cases.push((length, amount));
        }
        let mut methods = [false; 3];
        for (case, &(length, amount)) in cases.iter().enumerate() {
            let mut sampler = SortedSampler::new(length).expect("sampler");
            let method = Method::choose(length as u32, amount as u32);
            methods[method as usize] = true;
            let mut rng = ChaCha8Rng::seed_from_u64(case as u64);
            // Three rows from one sampler: its scratch must come back clean each time.
            for row in 0..3 {
                let mut reference_rng = rng.clone();
                let mut expected = index::sample(&mut reference_rng, length, amount).into_vec();
                expected.sort_unstable();
                let got = sampler.sample(&mut rng, amount).expect("sample").to_vec();
                assert_eq!(got, expected, "length {length}, amount {amount}, row {row}");
                assert_eq!(
                    rng.clone().next_u64(),
                    reference_rng.next_u64(),
                    "length {length}, amount {amount}: stream positions differ"
                );
            }
            let (expected, _) = reference(case as u64, length, amount);
            let mut fresh = ChaCha8Rng::seed_from_u64(case as u64);
            assert_eq!(
                SortedSampler::new(length)
                    .expect("sampler")
                    .sample(&mut fresh, amount)
                    .expect("sample"),
                expected.as_slice()
            );
        }
        assert_eq!(methods, [true; 3], "every method was exercised");
    }

    #[test]
    fn too_many_indices_are_an_error() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut sampler = SortedSampler::new(5).expect("sampler");
        assert!(sampler.sample(&mut rng, 6).is_err());
        assert!(SortedSampler::new(1 << 33).is_err());
    }
}
