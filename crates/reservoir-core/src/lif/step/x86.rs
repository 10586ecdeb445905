//! Steps 2 and 3 of the LIF step in AVX-512 intrinsics.

use std::arch::x86_64::*;

use super::{for_each_chunk, Part, StepInputs, LANES, ROUND_F64, TINY_BITS};

/// The constants of the update, one per lane.
struct Splat {
    v_rest: __m512,
    alpha_m: __m512,
    gain: __m512,
    threshold: __m512,
    v_reset: __m512,
    alpha_trace: __m512,
    alpha_trace_f64: __m512d,
    bias: __m512,
    one: __m512,
    refractory_steps: __m512i,
}

/// [`super::integrate`] with one 512-bit vector per chunk, the remainder under a mask: the
/// same operations per lane, so the same bits.
#[target_feature(enable = "avx512f,bmi1")]
pub(super) fn integrate<const SYNAPTIC: bool>(
    shared: &StepInputs<'_>,
    part: Part<'_>,
    spikes: &mut Vec<u32>,
) {
    let c = &shared.constants;
    let k = Splat {
        v_rest: _mm512_set1_ps(c.v_rest),
        alpha_m: _mm512_set1_ps(c.alpha_m),
        gain: _mm512_set1_ps(c.drive_gain),
        threshold: _mm512_set1_ps(c.threshold),
        v_reset: _mm512_set1_ps(c.v_reset),
        alpha_trace: _mm512_set1_ps(c.alpha_trace),
        alpha_trace_f64: _mm512_set1_pd(f64::from(c.alpha_trace)),
        bias: _mm512_set1_ps(c.bias),
        one: _mm512_set1_ps(1.0),
        refractory_steps: _mm512_set1_epi32(c.refractory_steps as i32),
    };
    for_each_chunk(
        shared,
        part,
        spikes,
        |first, v, i_syn, refractory, trace| {
            u32::from(chunk::<SYNAPTIC>(
                &k, shared, first, v, i_syn, refractory, trace,
            ))
        },
    );
}

/// Steps 2 and 3 for the neurons `first..first + v.len()` (at most 16; all slices the same
/// length): returns the mask of those that spiked.
#[target_feature(enable = "avx512f")]
#[inline]
fn chunk<const SYNAPTIC: bool>(
    k: &Splat,
    shared: &StepInputs<'_>,
    first: usize,
    v: &mut [f32],
    i_syn: &mut [f32],
    refractory: &mut [u32],
    trace: &mut [f32],
) -> __mmask16 {
    let len = v.len();
    let lanes: __mmask16 = if len >= LANES { !0 } else { (1 << len) - 1 };
    let (v, i_syn, trace) = (v.as_mut_ptr(), i_syn.as_mut_ptr(), trace.as_mut_ptr());
    let refractory = refractory.as_mut_ptr().cast::<i32>();
    // SAFETY (every load and store below): `lanes` holds the first `len` lanes, and each
    // pointer is to a slice of `len` values.
    unsafe {
        let mut current = _mm512_maskz_loadu_ps(lanes, i_syn);
        let mut ext = k.bias;
        for &(channel, u_k) in shared.active {
            let w = shared.input_by_channel[channel][first..first + len].as_ptr();
            let term = _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes, w), _mm512_set1_ps(u_k));
            if SYNAPTIC {
                current = _mm512_add_ps(current, term);
            } else {
                ext = _mm512_add_ps(ext, term);
            }
        }
        if SYNAPTIC {
            _mm512_mask_storeu_ps(i_syn, lanes, current);
        }
        current = _mm512_add_ps(current, ext);
        let v_old = _mm512_maskz_loadu_ps(lanes, v);
        let integrated = _mm512_add_ps(
            _mm512_add_ps(
                k.v_rest,
                _mm512_mul_ps(_mm512_sub_ps(v_old, k.v_rest), k.alpha_m),
            ),
            _mm512_mul_ps(current, k.gain),
        );
        let r = _mm512_maskz_loadu_epi32(lanes, refractory);
        let held = _mm512_test_epi32_mask(r, r);
        let fired = _mm512_mask_cmp_ps_mask::<_CMP_GE_OQ>(lanes & !held, integrated, k.threshold);
        let v_new = _mm512_mask_blend_ps(held | fired, integrated, k.v_reset);
        _mm512_mask_storeu_ps(v, lanes, v_new);
        let counted_down = _mm512_mask_sub_epi32(r, held, r, _mm512_set1_epi32(1));
        let r_new = _mm512_mask_blend_epi32(fired, counted_down, k.refractory_steps);
        _mm512_mask_storeu_epi32(refractory, lanes, r_new);
        let old_trace = _mm512_maskz_loadu_ps(lanes, trace);
        let decayed = decayed(old_trace, k.alpha_trace, k.alpha_trace_f64);
        let spiked = _mm512_maskz_mov_ps(fired, k.one);
        _mm512_mask_storeu_ps(trace, lanes, _mm512_add_ps(decayed, spiked));
        fired
    }
}

/// [`super::decayed`] on 16 lanes: the same operations, so the same bits; the exact path
/// only when a lane is tiny.
#[target_feature(enable = "avx512f")]
#[inline]
fn decayed(x: __m512, alpha: __m512, alpha_f64: __m512d) -> __m512 {
    let bits = _mm512_castps_si512(x);
    let magnitude = _mm512_and_si512(bits, _mm512_set1_epi32(0x7fff_ffff));
    let tiny = _mm512_cmplt_epu32_mask(
        _mm512_sub_epi32(magnitude, _mm512_set1_epi32(1)),
        _mm512_set1_epi32((TINY_BITS - 1) as i32),
    );
    let fast = _mm512_mul_ps(_mm512_mask_mov_ps(x, tiny, _mm512_setzero_ps()), alpha);
    if tiny == 0 {
        return fast;
    }
    let low = scaled_count(_mm512_castsi512_si256(magnitude), alpha_f64);
    let high = scaled_count(_mm512_extracti64x4_epi64::<1>(magnitude), alpha_f64);
    let count = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(low), high);
    let sign = _mm512_andnot_si512(_mm512_set1_epi32(0x7fff_ffff), bits);
    let exact = _mm512_castsi512_ps(_mm512_or_si512(count, sign));
    _mm512_mask_blend_ps(tiny, fast, exact)
}

#[cfg(test)]
pub(super) mod tests {
    use std::arch::x86_64::*;

    /// [`super::decayed`] on 16 values (the CPU must have AVX-512F).
    pub(in crate::lif::step) fn decayed16(x: &[f32], alpha: f32) -> [f32; 16] {
        let mut out = [0.0; 16];
        // SAFETY: the caller checked AVX-512F; x and out hold 16 values.
        unsafe {
            let x = _mm512_loadu_ps(x[..16].as_ptr());
            let alpha64 = _mm512_set1_pd(f64::from(alpha));
            let y = super::decayed(x, _mm512_set1_ps(alpha), alpha64);
            _mm512_storeu_ps(out.as_mut_ptr(), y);
        }
        out
    }
}

/// Eight whole numbers below 2^32 times α, rounded to whole numbers, ties to even (the
/// low bits of 2^52 + count·α).
#[target_feature(enable = "avx512f")]
#[inline]
fn scaled_count(count: __m256i, alpha: __m512d) -> __m256i {
    let product = _mm512_mul_pd(_mm512_cvtepu32_pd(count), alpha);
    let rounded = _mm512_add_pd(product, _mm512_set1_pd(ROUND_F64));
    _mm512_cvtepi64_epi32(_mm512_castpd_si512(rounded))
}
