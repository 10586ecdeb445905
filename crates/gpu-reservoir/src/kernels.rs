//! The kernel sources in `kernels/` and the names of their entry points.
//!
//! The `.cu` files are the single source of truth: the prebuilt PTX is made from them by
//! `kernels/build_ptx.sh`, and NVRTC compiles them at run time. Entry points are named through
//! these constants, so a typo is a compile error, and functions are looked up once per device.

/// `kernels/neuromorphic_gemv.cu`: the echo-state kernels.
pub const GEMV_SOURCE: &str = include_str!("../../../kernels/neuromorphic_gemv.cu");
/// `kernels/ptx/neuromorphic_gemv.ptx`, built from [`GEMV_SOURCE`] by `kernels/build_ptx.sh`.
pub const GEMV_PTX: &str = include_str!("../../../kernels/ptx/neuromorphic_gemv.ptx");
/// The nvcc flags `build_ptx.sh` uses (part of the PTX's stamp).
pub const GEMV_PTX_FLAGS: &str = "-ptx -arch=compute_75 -fmad=false -lineinfo";

/// Entry points of [`GEMV_SOURCE`].
pub mod gemv {
    /// `drive[t, i] = b[i] + Σ_k W_in[i, k]·u[t, k] (+ noise[t, i])`.
    pub const MATVEC_INPUT: &str = "matvec_input_kernel";
    /// `pre = W·x + drive[t]` (CSR, a warp per row).
    pub const MATVEC_RESERVOIR: &str = "matvec_reservoir_kernel";
    /// `x(t+1) = (1 − a)·x(t) + a·f(pre)`.
    pub const LEAKY_INTEGRATION: &str = "leaky_integration_kernel";
}

/// `kernels/spectral.cu`: the f64 CSR mat-vec of the spectral-radius power iteration (NVRTC).
pub const SPECTRAL_SOURCE: &str = include_str!("../../../kernels/spectral.cu");

/// Entry points of [`SPECTRAL_SOURCE`].
pub mod spectral {
    /// `y = W·x` in f64 (CSR, a warp per row).
    pub const CSR_MATVEC_F64: &str = "csr_matvec_f64";
}

/// `kernels/encoding.cu`: rate encoding with the counter-based RNG (NVRTC).
pub const ENCODING: NvrtcSource = NvrtcSource {
    name: "kernels/encoding.cu",
    text: include_str!("../../../kernels/encoding.cu"),
};

/// Entry points of [`ENCODING`].
pub mod encoding {
    /// Bernoulli rate code of a sequence, identical to `reservoir_core::encoding::rate_sequence`.
    pub const RATE_ENCODE: &str = "rate_encode_kernel";
}

/// `kernels/detection.cu`: spike-train filter and template scores (NVRTC).
pub const DETECTION: NvrtcSource = NvrtcSource {
    name: "kernels/detection.cu",
    text: include_str!("../../../kernels/detection.cu"),
};

/// Entry points of [`DETECTION`].
pub mod detection {
    /// `f[b, c] = s[b, c] + f[b − 1, c]·α`, a thread per channel.
    pub const FILTER: &str = "filter_kernel";
    /// Windowed Pearson score of every template at every bin.
    pub const SCORES: &str = "detection_scores_kernel";
}

/// `kernels/lif.cu`: the steps of the LIF reservoir, by gather and event-driven (NVRTC).
pub const LIF: NvrtcSource = NvrtcSource {
    name: "kernels/lif.cu",
    text: include_str!("../../../kernels/lif.cu"),
};

/// Entry points of [`LIF`].
pub mod lif {
    /// One step of every neuron, identical to `reservoir_core::lif::LifNetwork::step`, the
    /// recurrent input gathered over W's rows.
    pub const STEP: &str = "lif_step_kernel";
    /// The same step with the recurrent input from the inboxes the last delivery filled;
    /// appends the neurons that spiked to a list.
    pub const EVENT_STEP: &str = "lif_event_step_kernel";
    /// Drops the outgoing synapses of the listed neurons into their targets' inboxes.
    pub const DELIVER: &str = "lif_deliver_kernel";
}

/// `kernels/persistent.cu`: many echo-state steps per launch, and the per-step baselines.
pub const PERSISTENT: NvrtcSource = NvrtcSource {
    name: "kernels/persistent.cu",
    // After neuromorphic_gemv.cu, whose tanh_rational it uses.
    text: concat!(
        include_str!("../../../kernels/neuromorphic_gemv.cu"),
        "\n",
        include_str!("../../../kernels/persistent.cu")
    ),
};

/// Entry points of [`PERSISTENT`].
pub mod persistent {
    /// Cooperative multi-step run over a CSR W (cached in shared memory when it fits).
    pub const CSR: &str = "esn_persistent_csr";
    /// Cooperative multi-step run over a dense W streamed from global memory.
    pub const DENSE: &str = "esn_persistent_dense";
    /// The same with W in f16.
    pub const DENSE_F16: &str = "esn_persistent_dense_f16";
    /// The same with W in bf16.
    pub const DENSE_BF16: &str = "esn_persistent_dense_bf16";
    /// A whole run in one thread-block cluster with W on chip (sm_90+, N ≤ 1024).
    pub const CLUSTER: &str = "esn_cluster";
    /// One launch per step (CSR, a warp per row): baseline and fallback.
    pub const STEP_FUSED: &str = "esn_step_fused";
    /// `x' = (1 − a)·x + a·f(pre + drive)` after an external product (cuBLAS GEMV baseline,
    /// batched GEMM), optionally also written in f16.
    pub const ELEMENTWISE: &str = "esn_elementwise";
    /// `half = f16(x)`, rounded to nearest even.
    pub const TO_F16: &str = "f32_to_f16";
}

/// `kernels/gram.cu`: the f32 → f64 widening of states before the device's ridge sums.
pub const GRAM: NvrtcSource = NvrtcSource {
    name: "kernels/gram.cu",
    text: include_str!("../../../kernels/gram.cu"),
};

/// Entry points of [`GRAM`].
pub mod gram {
    /// `dst[i] = (double)src[i]`.
    pub const WIDEN: &str = "widen_f32_to_f64";
}

/// `kernels/sweep.cu`: one step of a sweep's lanes after the shared GEMM.
pub const SWEEP: NvrtcSource = NvrtcSource {
    name: "kernels/sweep.cu",
    // After neuromorphic_gemv.cu, whose tanh_rational it uses.
    text: concat!(
        include_str!("../../../kernels/neuromorphic_gemv.cu"),
        "\n",
        include_str!("../../../kernels/sweep.cu")
    ),
};

/// Entry points of [`SWEEP`].
pub mod sweep {
    /// `x_b ← (1 − a_b)·x_b + a_b·f(ρ_b·(W₁X)_b + b + s_b·W_in₁u + noise)` for every lane b.
    pub const LANE_STEP: &str = "sweep_lane_step";
}

/// A kernel source compiled with NVRTC on first use and cached per device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NvrtcSource {
    /// File name under `kernels/`, for messages.
    pub name: &'static str,
    /// The CUDA C++ text.
    pub text: &'static str,
}

/// The spectral-radius source as an NVRTC unit.
pub const SPECTRAL: NvrtcSource = NvrtcSource {
    name: "kernels/spectral.cu",
    text: SPECTRAL_SOURCE,
};

/// The echo-state source as an NVRTC unit (the fallback when the PTX is rejected).
pub const GEMV: NvrtcSource = NvrtcSource {
    name: "kernels/neuromorphic_gemv.cu",
    text: GEMV_SOURCE,
};
