//! Validation folds over the training sequences: a seeded shuffle, stratified by class for a
//! classifier, so that every fold holds each class in proportion.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// How a sweep validates each (lane, ridge) on the training sequences alone.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Validation {
    /// k folds: each fold is scored by the readout fitted on the others; the score is their
    /// mean.
    Folds(usize),
    /// One split: this fraction of the training sequences is held out and scored.
    Holdout(f64),
}

impl Validation {
    /// The number of groups the sequences are dealt into.
    pub fn groups(self) -> usize {
        match self {
            Validation::Folds(k) => k,
            Validation::Holdout(_) => 2,
        }
    }

    /// The groups scored: every fold, or only the held-out group (1).
    pub fn scored(self) -> std::ops::Range<usize> {
        match self {
            Validation::Folds(k) => 0..k,
            Validation::Holdout(_) => 1..2,
        }
    }

    /// The group of each of `n` sequences: shuffled with `seed`, within each stratum (class)
    /// when `strata` are given, then dealt round robin into k folds, or cut at the holdout
    /// fraction (group 1 held out, at least one sequence of each stratum left in group 0).
    pub fn assign(self, n: usize, strata: Option<&[usize]>, seed: u64) -> Vec<usize> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let stratum = |i: usize| strata.and_then(|s| s.get(i).copied()).unwrap_or(0);
        let count = (0..n).map(stratum).max().map_or(0, |m| m + 1);
        let mut group = vec![0; n];
        // Continuing the deal across strata keeps fold sizes within one of each other.
        let mut next = 0;
        for s in 0..count {
            let mut members: Vec<usize> = (0..n).filter(|&i| stratum(i) == s).collect();
            members.shuffle(&mut rng);
            match self {
                Validation::Folds(k) => {
                    for i in members {
                        group[i] = next % k;
                        next += 1;
                    }
                }
                Validation::Holdout(fraction) => {
                    let held = ((members.len() as f64 * fraction).round() as usize)
                        .min(members.len().saturating_sub(1));
                    for &i in &members[..held] {
                        group[i] = 1;
                    }
                }
            }
        }
        group
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_are_stratified_balanced_and_seeded() {
        let labels: Vec<usize> = (0..30).map(|i| usize::from(i >= 20)).collect();
        let groups = Validation::Folds(5).assign(30, Some(&labels), 7);
        assert_eq!(groups, Validation::Folds(5).assign(30, Some(&labels), 7));
        assert_ne!(groups, Validation::Folds(5).assign(30, Some(&labels), 8));
        for fold in 0..5 {
            let members: Vec<usize> = (0..30).filter(|&i| groups[i] == fold).collect();
            assert_eq!(members.len(), 6, "fold {fold}");
            assert_eq!(members.iter().filter(|&&i| labels[i] == 1).count(), 2);
        }
        let holdout = Validation::Holdout(0.2).assign(30, Some(&labels), 7);
        assert_eq!(holdout.iter().filter(|&&g| g == 1).count(), 6);
        // A class of one sequence keeps it for training.
        let lone = Validation::Holdout(0.9).assign(3, Some(&[0, 0, 1]), 1);
        assert_eq!(lone[2], 0);
    }
}
