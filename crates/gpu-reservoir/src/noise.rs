//! The state noise of the GPU reservoirs, drawn on the host from the config's seeded noise
//! stream exactly as the CPU reservoir draws it, so both backends see the same noise.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

/// `count` noise values `level·ξ` (ξ standard normal from `rng`, the config's noise stream)
/// rounded to f32: the CPU reservoir's draws in its order (step by step, unit by unit).
pub(crate) fn noise_values(rng: &mut ChaCha8Rng, level: f64, count: usize) -> Vec<f32> {
    (0..count)
        .map(|_| {
            let xi: f64 = rng.sample(StandardNormal);
            (level * xi) as f32
        })
        .collect()
}
