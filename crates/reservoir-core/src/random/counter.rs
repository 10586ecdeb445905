//! A stateless, counter-based random number generator that a GPU kernel can reproduce bit for
//! bit.
//!
//! Every draw is a pure function of `(seed, stream, counter)` built only from wrapping 64-bit
//! integer add, multiply, xor and right shift, so a CUDA port with `unsigned long long`
//! arithmetic gives identical bits. The construction is the SplitMix64 finaliser applied three
//! times:
//!
//! ```text
//! GAMMA = 0x9E37_79B9_7F4A_7C15              (2^64 / golden ratio, odd)
//! STREAM_MUL = 0xD1B5_4A32_D192_ED03         (odd)
//! mix(z):  z = (z ^ (z >> 30)) * 0xBF58_476D_1CE4_E5B9
//!          z = (z ^ (z >> 27)) * 0x94D0_49BB_1331_11EB
//!          return z ^ (z >> 31)
//!
//! key  = mix(mix(seed + GAMMA) ^ (stream * STREAM_MUL))           // stream_key(seed, stream)
//! bits = mix(key + (counter + 1) * GAMMA)                         // keyed_u64(key, counter)
//! u32  = bits >> 32                                                // high half
//! f32  = (u32 >> 8) as f32 * 2^-24                                 // 24 bits, in [0, 1)
//! ```
//!
//! All `+` and `*` wrap modulo 2^64. For a fixed key, counters `0, 1, 2, ...` give exactly the
//! output sequence of a SplitMix64 generator whose state starts at `key`, a generator that passes
//! BigCrush. `mix` is a bijection, so the streams of one seed get distinct keys, and the counters
//! of one key get distinct `bits`.
//!
//! The key does not depend on the counter, so a kernel can compute it once on the host and do
//! one `mix` per draw.

/// Weyl increment of SplitMix64: `0x9E37_79B9_7F4A_7C15`.
pub const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// Odd multiplier that spreads the stream number before it is mixed into the key.
pub const STREAM_MUL: u64 = 0xD1B5_4A32_D192_ED03;

/// The SplitMix64 finaliser (Stafford's "Mix13"): `z ^= z >> 30; z *= 0xBF58476D1CE4E5B9;
/// z ^= z >> 27; z *= 0x94D049BB133111EB; z ^= z >> 31`, all wrapping. A bijection on `u64`.
#[inline]
pub const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The key of stream `stream` of `seed`:
/// `mix64(mix64(seed + GAMMA) ^ (stream * STREAM_MUL))`, wrapping.
#[inline]
pub const fn stream_key(seed: u64, stream: u64) -> u64 {
    mix64(mix64(seed.wrapping_add(GAMMA)) ^ stream.wrapping_mul(STREAM_MUL))
}

/// 64 random bits for `counter` under `key`: `mix64(key + (counter + 1) * GAMMA)`, wrapping.
#[inline]
pub const fn keyed_u64(key: u64, counter: u64) -> u64 {
    mix64(key.wrapping_add(counter.wrapping_add(1).wrapping_mul(GAMMA)))
}

/// 32 random bits for `counter` under `key`: the high half of [`keyed_u64`], `bits >> 32`.
#[inline]
pub const fn keyed_u32(key: u64, counter: u64) -> u32 {
    (keyed_u64(key, counter) >> 32) as u32
}

/// A uniform number in `[0, 1)` on the grid of `2^-24`: `(keyed_u32(key, counter) >> 8) as f32
/// * 2^-24`. Exact in `f32` (the integer has 24 bits), largest value `1 − 2^-24`.
#[inline]
pub fn keyed_f32(key: u64, counter: u64) -> f32 {
    u32_to_unit_f32(keyed_u32(key, counter))
}

/// `(bits >> 8) as f32 * 2^-24`: the top 24 bits of `bits` as a number in `[0, 1)`.
#[inline]
pub fn u32_to_unit_f32(bits: u32) -> f32 {
    const SCALE: f32 = 1.0 / (1u32 << 24) as f32;
    (bits >> 8) as f32 * SCALE
}

/// 32 random bits for `(seed, stream, counter)`: `keyed_u32(stream_key(seed, stream), counter)`.
#[inline]
pub const fn uniform_u32(seed: u64, stream: u64, counter: u64) -> u32 {
    keyed_u32(stream_key(seed, stream), counter)
}

/// A uniform `f32` in `[0, 1)` with 24 random bits for `(seed, stream, counter)`:
/// `(uniform_u32(seed, stream, counter) >> 8) as f32 * 2^-24`.
#[inline]
pub fn uniform_f32(seed: u64, stream: u64, counter: u64) -> f32 {
    u32_to_unit_f32(uniform_u32(seed, stream, counter))
}
