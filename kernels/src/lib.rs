//! # reservoir-kernels
//!
//! The CUDA C++ sources of the reservoir engine's GPU kernels, the single source of truth for
//! every kernel, and the PTX made from each (`ptx/`, written by `generate-ptx.sh` with NVRTC,
//! [`PTX_OPTIONS`] and the module's [`Target`]) with cubins for the most common architectures.
//! `gpu-reservoir` loads a cubin the device runs, or hands the PTX to the driver, which
//! compiles it for the device: no CUDA toolkit is needed at run time. A test fails when a
//! source changes without its PTX and cubins being made again. Entry points are named through the
//! constants here, so a typo is a compile error; a test checks that each is defined in its
//! module's source.
//!
//! Every kernel has a CPU reference in `reservoir-core`; the module docs name it.

#![warn(missing_docs)]

mod module;

pub use module::{
    fingerprint, Cubin, Module, Target, MINIMUM_DRIVER_CUDA, MINIMUM_DRIVER_RELEASE, PTX_OPTIONS,
};

/// The cubins of module `stem` (`ptx/<stem>.<architecture>.cubin`) for each architecture.
macro_rules! cubins {
    ($stem:literal, $($architecture:literal),+) => {
        &[$(Cubin {
            architecture: $architecture,
            image: include_bytes!(concat!("../ptx/", $stem, ".", $architecture, ".cubin")),
        }),+]
    };
}

/// The headers modules include, as `(name, text)`: given to NVRTC with every module.
pub const HEADERS: &[(&str, &str)] = &[
    ("common.cuh", include_str!("../common.cuh")),
    ("lif.cuh", include_str!("../lif.cuh")),
    ("cluster.cuh", include_str!("../cluster.cuh")),
];

/// Codes of `reservoir_core::Activation` in kernel arguments (`enum Activation` of
/// `common.cuh`).
pub mod activation {
    /// `tanh`.
    pub const TANH: i32 = 0;
    /// The identity.
    pub const IDENTITY: i32 = 1;
}

/// Codes of `reservoir_core::lif::LifFeatures` in kernel arguments (`enum LifFeature` of
/// `common.cuh`).
pub mod lif_feature {
    /// Spike traces.
    pub const TRACE: i32 = 0;
    /// Membrane potentials.
    pub const MEMBRANE: i32 = 1;
    /// Spike counts over the window.
    pub const COUNTS: i32 = 2;
}

/// `esn.cu`: echo-state steps one at a time, the input drive of a chunk (CPU reference:
/// `reservoir_core::EchoStateNetwork`), and the sums of sequence features over a batch's
/// chunk of states.
pub mod esn {
    use super::{Cubin, Module, Target};

    /// `drive[t, i] = b[i] + Σ_c W_in[i, c]·v[t, c] (+ noise[t, i])`, row t of v being
    /// `[u[t], beside[t]]` read from two buffers (a deep layer's states below and the input).
    pub const INPUT_DRIVE: &str = "matvec_input_kernel";
    /// `pre = W·x + drive[t]` (CSR, a warp per row).
    pub const RESERVOIR_PRODUCT: &str = "matvec_reservoir_kernel";
    /// `x(t+1) = (1 − a)·x(t) + a·f(pre)`.
    pub const LEAKY_INTEGRATION: &str = "leaky_integration_kernel";
    /// One whole step in one launch (CSR, a warp per row).
    pub const STEP_FUSED: &str = "esn_step_fused";
    /// `x' = (1 − a)·x + a·f(pre + drive)` after an external product (cuBLAS), optionally
    /// also written in f16.
    pub const ELEMENTWISE: &str = "esn_elementwise";
    /// `half = f16(x)`, rounded to nearest even.
    pub const TO_F16: &str = "f32_to_f16";
    /// Adds one time chunk of a batch's states into the sums of each sequence's feature
    /// summaries (CPU reference: `reservoir_core::features::SequenceFeatures`).
    pub const FEATURES_ADD: &str = "sequence_features_add";

    /// The module.
    pub const MODULE: Module = Module {
        name: "esn.cu",
        source: include_str!("../esn.cu"),
        entry_points: &[
            INPUT_DRIVE,
            RESERVOIR_PRODUCT,
            LEAKY_INTEGRATION,
            STEP_FUSED,
            ELEMENTWISE,
            TO_F16,
            FEATURES_ADD,
        ],
        target: Target::Portable,
        ptx: include_str!("../ptx/esn.ptx"),
        cubins: cubins!("esn", "sm_80", "sm_90"),
    };
}

/// `esn_persistent.cu`: many echo-state steps in one cooperative launch, and the step of a
/// shard of a dense W that streams its rows the same way.
pub mod esn_persistent {
    use super::{Cubin, Module, Target};

    /// A run over a CSR W (cached in shared memory when it fits).
    pub const CSR: &str = "esn_persistent_csr";
    /// A run over a dense W streamed from global memory.
    pub const DENSE: &str = "esn_persistent_dense";
    /// The same with W in f16.
    pub const DENSE_F16: &str = "esn_persistent_dense_f16";
    /// The same with W in bf16.
    pub const DENSE_BF16: &str = "esn_persistent_dense_bf16";
    /// One step of one shard of a dense W split by rows over GPUs.
    pub const SHARD_DENSE_STEP: &str = "esn_shard_dense_step";

    /// The module.
    pub const MODULE: Module = Module {
        name: "esn_persistent.cu",
        source: include_str!("../esn_persistent.cu"),
        entry_points: &[CSR, DENSE, DENSE_F16, DENSE_BF16, SHARD_DENSE_STEP],
        target: Target::Portable,
        ptx: include_str!("../ptx/esn_persistent.ptx"),
        cubins: cubins!("esn_persistent", "sm_80", "sm_90"),
    };
}

/// `esn_cluster.cu`: a whole echo-state run in one thread-block cluster with W on chip
/// (sm_90 and later).
pub mod esn_cluster {
    use super::{Cubin, Module, Target};

    /// The run.
    pub const RUN: &str = "esn_cluster";

    /// The module.
    pub const MODULE: Module = Module {
        name: "esn_cluster.cu",
        source: include_str!("../esn_cluster.cu"),
        entry_points: &[RUN],
        target: Target::Clusters,
        ptx: include_str!("../ptx/esn_cluster.ptx"),
        cubins: cubins!("esn_cluster", "sm_90"),
    };
}

/// `esn_batch_tc.cu`: many echo-state sequences (or a sweep's lanes) through one reservoir on
/// the tensor cores, a whole chunk of steps in one cooperative launch, W in registers and the
/// states exchanged between blocks through global memory (compute capability 9.0; CPU
/// reference: the batched step with f16 operands, `tests/batched_parity.rs`).
pub mod esn_batch_tc {
    use super::{Cubin, Module, Target};

    /// The run with one group of 16 sequences per tile.
    pub const RUN_1: &str = "esn_batch_tc_1";
    /// The run with two groups per tile.
    pub const RUN_2: &str = "esn_batch_tc_2";
    /// The run with four groups per tile.
    pub const RUN_4: &str = "esn_batch_tc_4";
    /// Threads per block (`TC_THREADS`): 8 consumer warps and 4 more, one of them the
    /// producer.
    pub const THREADS: u32 = 384;
    /// Sequences per group (`TC_SEQS`).
    pub const GROUP: usize = 16;
    /// Rows per block (`TC_ROWS`).
    pub const ROWS: usize = 64;
    /// Largest padded N: four quarters of `TC_KTILES` k-tiles of 16 columns.
    pub const MAX_PADDED: usize = 1024;
    /// Bytes of one row block of a group's panel (`TC_SLICE_BYTES`).
    pub const SLICE_BYTES: usize = GROUP * ROWS * 2;
    /// Bytes of a group's f32 states in a block (`TC_STATE_FLOATS` floats).
    pub const STATE_BYTES: usize = GROUP * ROWS * 4;
    /// Bytes of the warps' partial sums (`TC_RED_FLOATS` floats).
    pub const PARTIAL_BYTES: usize = 2 * 4 * GROUP * 36 * 4;

    /// The module.
    pub const MODULE: Module = Module {
        name: "esn_batch_tc.cu",
        source: include_str!("../esn_batch_tc.cu"),
        entry_points: &[RUN_1, RUN_2, RUN_4],
        target: Target::Hopper,
        ptx: include_str!("../ptx/esn_batch_tc.ptx"),
        cubins: cubins!("esn_batch_tc", "sm_90a"),
    };
}

/// `lanes.cu`: one step of a sweep's lanes after the shared GEMM (CPU reference: a lane's
/// own `EchoStateNetwork`).
pub mod lanes {
    use super::{Cubin, Module, Target};

    /// `x_b ← (1 − a_b)·x_b + a_b·f(ρ_b·(W₁X)_b + b + s_b·W_in₁u + noise)` for every lane b.
    pub const STEP: &str = "sweep_lane_step";

    /// The module.
    pub const MODULE: Module = Module {
        name: "lanes.cu",
        source: include_str!("../lanes.cu"),
        entry_points: &[STEP],
        target: Target::Portable,
        ptx: include_str!("../ptx/lanes.ptx"),
        cubins: cubins!("lanes", "sm_80", "sm_90"),
    };
}

/// `ridge.cu`: the widening of f32 states before the device's f64 ridge sums, and the kernels
/// of ridge readouts solved on the device (CPU reference:
/// `reservoir_core::readout::RidgeAccumulator`, its `solve` and `score`).
pub mod ridge {
    use super::{Cubin, Module, Target};

    /// `dst[i] = (double)src[i]`.
    pub const WIDEN: &str = "widen_f32_to_f64";
    /// The augmented normal equations of every (lane, ridge), padded to whole blocks.
    pub const BUILD_SYSTEMS: &str = "ridge_build_systems";
    /// Cholesky factor of one diagonal block of every system, and its inverse.
    pub const FACTOR_DIAGONAL: &str = "ridge_factor_diagonal";
    /// A solved readout's products with the training and validation sums.
    pub const READOUT_PRODUCTS: &str = "ridge_readout_products";
    /// Rows and columns of the solve's blocks (`RIDGE_BLOCK`).
    pub const SOLVE_BLOCK: usize = 64;
    /// Threads of a `ridge_readout_products` block (`RIDGE_PRODUCT_THREADS`).
    pub const PRODUCT_THREADS: u32 = 256;

    /// The module.
    pub const MODULE: Module = Module {
        name: "ridge.cu",
        source: include_str!("../ridge.cu"),
        entry_points: &[WIDEN, BUILD_SYSTEMS, FACTOR_DIAGONAL, READOUT_PRODUCTS],
        target: Target::Portable,
        ptx: include_str!("../ptx/ridge.ptx"),
        cubins: cubins!("ridge", "sm_80", "sm_90"),
    };
}

/// `sequence_features.cu`: sequence features that need more than sums of raw states (CPU
/// reference: `reservoir_core::features::SequenceFeatures`): a chunk's projected states
/// centred, the summarized states gathered per sequence in f64, and each sequence's
/// model-space ridge model solved from its Grams, a thread block per sequence.
pub mod sequence_features {
    use super::{Cubin, Module, Target};

    /// `values[c·d + i] −= shift[i]`: projected states centred on the training mean.
    pub const CENTRE: &str = "features_centre";
    /// A chunk's summarized states added into each sequence's f64 states.
    pub const GATHER: &str = "features_gather";
    /// Each sequence's model-space weights and biases by a Cholesky solve.
    pub const MODEL_SPACE_SOLVE: &str = "model_space_solve";
    /// Largest summarized width the solve takes (`MODEL_SPACE_MAX_WIDTH`).
    pub const MODEL_SPACE_MAX_WIDTH: usize = 128;
    /// Threads of a solve block (`MODEL_SPACE_THREADS`).
    pub const MODEL_SPACE_THREADS: u32 = 256;

    /// The module.
    pub const MODULE: Module = Module {
        name: "sequence_features.cu",
        source: include_str!("../sequence_features.cu"),
        entry_points: &[CENTRE, GATHER, MODEL_SPACE_SOLVE],
        target: Target::Portable,
        ptx: include_str!("../ptx/sequence_features.ptx"),
        cubins: cubins!("sequence_features", "sm_80", "sm_90"),
    };
}

/// `spectral.cu`: the f64 product of the spectral-radius iteration (CPU reference:
/// `reservoir_core::CsrMatrix::mul_vec`).
pub mod spectral {
    use super::{Cubin, Module, Target};

    /// `y = W·x` in f64 (CSR, a thread per row, summed in the CPU's order).
    pub const CSR_PRODUCT_F64: &str = "csr_matvec_f64";

    /// Threads (rows) of a block of [`CSR_PRODUCT_F64`] (`MATVEC_ROWS`): the block stages its
    /// rows' entries in shared memory, so it is launched with exactly this many.
    pub const PRODUCT_ROWS: u32 = 256;

    /// The module.
    pub const MODULE: Module = Module {
        name: "spectral.cu",
        source: include_str!("../spectral.cu"),
        entry_points: &[CSR_PRODUCT_F64],
        target: Target::Portable,
        ptx: include_str!("../ptx/spectral.ptx"),
        cubins: cubins!("spectral", "sm_80", "sm_90"),
    };
}

/// `encoding.cu`: rate encoding with the counter-based generator (CPU reference:
/// `reservoir_core::encoding::rate_sequence`).
pub mod encoding {
    use super::{Cubin, Module, Target};

    /// Bernoulli rate code of a sequence.
    pub const RATE: &str = "rate_encode_kernel";

    /// The module.
    pub const MODULE: Module = Module {
        name: "encoding.cu",
        source: include_str!("../encoding.cu"),
        entry_points: &[RATE],
        target: Target::Portable,
        ptx: include_str!("../ptx/encoding.ptx"),
        cubins: cubins!("encoding", "sm_80", "sm_90"),
    };
}

/// `detection.cu`: spike-train filter and template scores (CPU reference:
/// `reservoir_core::detection::PatternDetector::scores`).
pub mod detection {
    use super::{Cubin, Module, Target};

    /// `f[b, c] = s[b, c] + f[b − 1, c]·α`, a thread per channel.
    pub const FILTER: &str = "filter_kernel";
    /// Windowed Pearson score of every template at every bin.
    pub const SCORES: &str = "detection_scores_kernel";

    /// The module.
    pub const MODULE: Module = Module {
        name: "detection.cu",
        source: include_str!("../detection.cu"),
        entry_points: &[FILTER, SCORES],
        target: Target::Portable,
        ptx: include_str!("../ptx/detection.ptx"),
        cubins: cubins!("detection", "sm_80", "sm_90"),
    };
}

/// `lif.cu`: the steps of the LIF reservoir, by gather and event-driven (CPU reference:
/// `reservoir_core::lif::LifNetwork`).
pub mod lif {
    use super::{Cubin, Module, Target};

    /// One step of every neuron, the recurrent input gathered over W's rows.
    pub const STEP: &str = "lif_step_kernel";
    /// The same step with the recurrent input from the inboxes the last delivery filled;
    /// appends the neurons that spiked to a list.
    pub const EVENT_STEP: &str = "lif_event_step_kernel";
    /// Drops the outgoing synapses of the listed neurons into their targets' inboxes.
    pub const DELIVER: &str = "lif_deliver_kernel";
    /// The list of the neurons whose spike flag is set (a network split over GPUs).
    pub const FLAGS_TO_LIST: &str = "lif_flags_to_list";

    /// The module.
    pub const MODULE: Module = Module {
        name: "lif.cu",
        source: include_str!("../lif.cu"),
        entry_points: &[STEP, EVENT_STEP, DELIVER, FLAGS_TO_LIST],
        target: Target::Portable,
        ptx: include_str!("../ptx/lif.ptx"),
        cubins: cubins!("lif", "sm_80", "sm_90"),
    };
}

/// `lif_cluster.cu`: a whole event-driven LIF run of one sequence in one thread-block
/// cluster (sm_90 and later; CPU reference: `reservoir_core::lif::LifNetwork`).
pub mod lif_cluster {
    use super::{Cubin, Module, Target};

    /// The run: every step's update and delivery, one cluster barrier per step.
    pub const RUN: &str = "lif_event_cluster_run";
    /// Most neurons a thread keeps in registers (`LIF_CLUSTER_PER_THREAD`).
    pub const PER_THREAD: usize = 2;

    /// The module.
    pub const MODULE: Module = Module {
        name: "lif_cluster.cu",
        source: include_str!("../lif_cluster.cu"),
        entry_points: &[RUN],
        target: Target::Clusters,
        ptx: include_str!("../ptx/lif_cluster.ptx"),
        cubins: cubins!("lif_cluster", "sm_90"),
    };
}

/// `csr.cu`: the transpose of a CSR matrix on the device (CPU reference:
/// `reservoir_core::lif::LifWeights::outgoing_f32`), and its values scaled and rounded to f32.
pub mod csr {
    use super::{Cubin, Module, Target};

    /// Counts each column's entries.
    pub const COLUMN_COUNTS: &str = "csr_column_counts";
    /// Drops every entry into its column's row of the transpose, in any order.
    pub const SCATTER_TRANSPOSE: &str = "csr_scatter_transpose";
    /// Sorts each row of the transpose by column.
    pub const SORT_ROWS: &str = "csr_sort_rows";
    /// Most entries of a row [`SORT_ROWS`] sorts (`CSR_SORT_CAPACITY`).
    pub const SORT_CAPACITY: usize = 4096;
    /// Scales f64 values and rounds them to f32 (CPU reference: `CsrMatrix::scale`, then
    /// `as f32`).
    pub const SCALED_TO_F32: &str = "csr_scaled_to_f32";

    /// The module.
    pub const MODULE: Module = Module {
        name: "csr.cu",
        source: include_str!("../csr.cu"),
        entry_points: &[COLUMN_COUNTS, SCATTER_TRANSPOSE, SORT_ROWS, SCALED_TO_F32],
        target: Target::Portable,
        ptx: include_str!("../ptx/csr.ptx"),
        cubins: cubins!("csr", "sm_80", "sm_90"),
    };
}

/// `ptx/cubins.txt`: each shipped cubin's module, architecture and source fingerprint, as
/// `generate-ptx.sh` wrote them.
pub const CUBIN_LIST: &str = include_str!("../ptx/cubins.txt");

/// Every module, for tests and tools that go over all of them.
pub const MODULES: &[Module] = &[
    esn::MODULE,
    esn_persistent::MODULE,
    esn_cluster::MODULE,
    esn_batch_tc::MODULE,
    lanes::MODULE,
    ridge::MODULE,
    sequence_features::MODULE,
    spectral::MODULE,
    encoding::MODULE,
    detection::MODULE,
    lif::MODULE,
    lif_cluster::MODULE,
    csr::MODULE,
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of `NAME = value` in the header's enums.
    fn enum_value(name: &str) -> i32 {
        let header = HEADERS[0].1;
        let start = header
            .find(&format!("{name} = "))
            .unwrap_or_else(|| panic!("{name} is not in common.cuh"));
        let digits: String = header[start + name.len() + 3..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("{name} = {digits:?}"))
    }

    #[test]
    fn the_cluster_run_keeps_as_many_neurons_a_thread_as_rust_plans() {
        let define = format!(
            "#define LIF_CLUSTER_PER_THREAD {}\n",
            lif_cluster::PER_THREAD
        );
        assert!(lif_cluster::MODULE.source.contains(&define));
    }

    #[test]
    fn the_spectral_product_is_launched_with_its_block_of_rows() {
        let define = format!("#define MATVEC_ROWS {}\n", spectral::PRODUCT_ROWS);
        assert!(spectral::MODULE.source.contains(&define));
    }

    #[test]
    fn the_transpose_sorts_rows_as_long_as_rust_plans() {
        let define = format!("#define CSR_SORT_CAPACITY {}\n", csr::SORT_CAPACITY);
        assert!(csr::MODULE.source.contains(&define));
    }

    #[test]
    fn the_tensor_core_run_has_the_geometry_rust_plans() {
        let source = esn_batch_tc::MODULE.source;
        for define in [
            format!("#define TC_SEQS {}", esn_batch_tc::GROUP),
            format!("#define TC_ROWS {}", esn_batch_tc::ROWS),
            format!("#define TC_KTILES {}", esn_batch_tc::MAX_PADDED / 64),
            format!(
                "#define TC_THREADS (TC_CONSUMERS + {})",
                esn_batch_tc::THREADS - 256
            ),
            "#define TC_CONSUMERS 256".to_string(),
            "#define TC_SLICE_BYTES (TC_SEQS * TC_ROWS * 2)".to_string(),
            "#define TC_STATE_FLOATS (TC_SEQS * TC_ROWS)".to_string(),
            "#define TC_RED_STRIDE 36".to_string(),
            "#define TC_RED_FLOATS (2 * 4 * TC_SEQS * TC_RED_STRIDE)".to_string(),
        ] {
            assert!(source.contains(&define), "{define}");
        }
    }

    #[test]
    fn the_model_space_solve_has_the_limits_rust_plans() {
        let source = sequence_features::MODULE.source;
        for define in [
            format!(
                "#define MODEL_SPACE_MAX_WIDTH {}\n",
                sequence_features::MODEL_SPACE_MAX_WIDTH
            ),
            format!(
                "#define MODEL_SPACE_THREADS {}\n",
                sequence_features::MODEL_SPACE_THREADS
            ),
        ] {
            assert!(source.contains(&define), "{define}");
        }
    }

    #[test]
    fn the_codes_rust_passes_are_the_header_enums() {
        assert_eq!(activation::TANH, enum_value("ACTIVATION_TANH"));
        assert_eq!(activation::IDENTITY, enum_value("ACTIVATION_IDENTITY"));
        assert_eq!(lif_feature::TRACE, enum_value("LIF_FEATURE_TRACE"));
        assert_eq!(lif_feature::MEMBRANE, enum_value("LIF_FEATURE_MEMBRANE"));
        assert_eq!(lif_feature::COUNTS, enum_value("LIF_FEATURE_COUNTS"));
    }

    #[test]
    fn the_sizes_rust_launches_with_are_the_kernels_defines() {
        let define = |name: &str| -> usize {
            let line = ridge::MODULE
                .source
                .lines()
                .find(|l| l.starts_with(&format!("#define {name} ")))
                .unwrap_or_else(|| panic!("{name} is not defined in ridge.cu"));
            line.rsplit(' ')
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{line}"))
        };
        assert_eq!(ridge::SOLVE_BLOCK, define("RIDGE_BLOCK"));
        assert_eq!(
            ridge::PRODUCT_THREADS as usize,
            define("RIDGE_PRODUCT_THREADS")
        );
    }

    #[test]
    fn every_entry_point_is_defined_in_its_module_and_every_kernel_is_named() {
        for module in MODULES {
            let defined: Vec<&str> = module
                .source
                .split("extern \"C\" __global__")
                .skip(1)
                .filter_map(|rest| {
                    // `void [__launch_bounds__(...)] name(`: the identifier before the first
                    // parenthesis that does not belong to the launch bounds.
                    let rest = match rest.find("__launch_bounds__") {
                        Some(at) => &rest[at + rest[at..].find(')')? + 1..],
                        None => rest,
                    };
                    rest.split('(').next()?.split_whitespace().last()
                })
                .collect();
            let mut named = module.entry_points.to_vec();
            named.sort_unstable();
            let mut found = defined.clone();
            found.sort_unstable();
            assert_eq!(found, named, "{}: kernels defined vs named", module.name);
        }
    }

    #[test]
    fn modules_include_only_the_shipped_headers() {
        for module in MODULES {
            for line in module.source.lines().filter(|l| l.starts_with("#include")) {
                let name = line.trim_start_matches("#include").trim().trim_matches('"');
                assert!(
                    HEADERS.iter().any(|(header, _)| *header == name),
                    "{} includes {name}, which is not in HEADERS",
                    module.name
                );
            }
        }
    }

    #[test]
    fn every_module_ships_ptx_made_from_its_current_source() {
        for module in MODULES {
            let stamp = module.ptx.lines().next().unwrap_or_default();
            assert_eq!(
                stamp,
                module.ptx_stamp(),
                "{}: its PTX was not made from the current source, headers and options; run \
                 kernels/generate-ptx.sh",
                module.name
            );
            // The PTX ISA version of the oldest driver named (CUDA 12.x takes ISA 8.x).
            let isa = format!(
                ".version {}.{}",
                MINIMUM_DRIVER_CUDA / 1000 - 4,
                (MINIMUM_DRIVER_CUDA % 1000) / 10
            );
            assert!(
                module.ptx.lines().any(|l| l.trim() == isa),
                "{}: not `{isa}`",
                module.name
            );
            let target = format!(
                ".target {}",
                module.target.architecture().replace("compute", "sm")
            );
            assert!(
                module.ptx.lines().any(|l| l.trim() == target),
                "{}: no `{target}`",
                module.name
            );
            for entry in module.entry_points {
                assert!(
                    module.ptx.contains(&format!(".entry {entry}(")),
                    "{}: {entry} is not in the PTX",
                    module.name
                );
            }
        }
    }

    #[test]
    fn targets_run_where_their_instructions_exist() {
        assert!(Target::Portable.runs_on((7, 0)) && !Target::Portable.runs_on((6, 1)));
        assert!(Target::Clusters.runs_on((10, 0)) && !Target::Clusters.runs_on((8, 9)));
        assert!(Target::Hopper.runs_on((9, 0)) && !Target::Hopper.runs_on((10, 0)));
    }

    #[test]
    fn fingerprints_separate_parts() {
        assert_ne!(fingerprint(&[b"ab", b"c"]), fingerprint(&[b"a", b"bc"]));
        assert_eq!(fingerprint(&[b"abc"]), fingerprint(&[b"abc"]));
    }

    #[test]
    fn every_module_ships_the_cubins_of_its_target_made_from_its_current_source() {
        for module in MODULES {
            let architectures: Vec<&str> = module.cubins.iter().map(|c| c.architecture).collect();
            assert_eq!(
                architectures,
                module.target.cubin_architectures(),
                "{}",
                module.name
            );
            for cubin in module.cubins {
                let line = format!(
                    "{} {} {:016x}",
                    module.name,
                    cubin.architecture,
                    module.source_fingerprint()
                );
                assert!(
                    CUBIN_LIST.lines().any(|l| l == line),
                    "{} for {}: not made from the current source; run kernels/generate-ptx.sh",
                    module.name,
                    cubin.architecture
                );
                assert!(
                    cubin.image.starts_with(b"\x7fELF"),
                    "{}: not an ELF image",
                    module.name
                );
            }
        }
    }

    #[test]
    fn a_cubin_runs_on_its_major_version_from_its_minor_one() {
        let cubin = |architecture| Cubin {
            architecture,
            image: &[],
        };
        assert!(cubin("sm_80").runs_on((8, 0)) && cubin("sm_80").runs_on((8, 9)));
        assert!(!cubin("sm_80").runs_on((9, 0)) && !cubin("sm_90").runs_on((8, 9)));
        assert!(cubin("sm_90a").runs_on((9, 0)) && !cubin("sm_90a").runs_on((9, 1)));
        assert!(!cubin("sm_86").runs_on((8, 0)));
        assert_eq!(
            esn::MODULE.cubin_for((8, 6)).map(|c| c.architecture),
            Some("sm_80")
        );
        assert_eq!(
            esn::MODULE.cubin_for((9, 0)).map(|c| c.architecture),
            Some("sm_90")
        );
        assert_eq!(esn::MODULE.cubin_for((7, 5)), None);
        assert_eq!(esn::MODULE.cubin_for((10, 0)), None);
    }
}
