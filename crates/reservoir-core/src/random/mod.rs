//! Seeded, portable random numbers.
//!
//! Every random draw of the weights and the noise comes from ChaCha8 seeded with the config's
//! `seed` and a stream number per purpose ([`stream_rng`]), so changing how one thing is drawn
//! (say, the bias) never shifts another (the recurrent weights). ChaCha8's output is specified
//! bit for bit, unlike `StdRng`. The spike encoders draw from [`counter`], a counter-based
//! generator a GPU kernel reproduces bit for bit.

pub mod counter;
mod sample;

pub use sample::SortedSampler;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// What a random stream is used for; the discriminant is the ChaCha stream number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum Stream {
    /// Structure and values of the recurrent matrix W.
    Recurrent = 1,
    /// Structure and values of the input matrix W_in.
    Input = 2,
    /// The bias vector b.
    Bias = 3,
    /// State noise during runs.
    Noise = 4,
    /// Start vector of the spectral-radius iteration.
    Spectral = 5,
}

/// The random stream `stream` of `seed`.
pub fn stream_rng(seed: u64, stream: Stream) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream as u64);
    rng
}
