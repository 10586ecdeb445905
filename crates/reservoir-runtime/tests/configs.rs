//! Every config shipped in `configs/` parses, validates and has a task (or, for `reservoir fit
//! --label-column`, sequence features).

use reservoir_core::features::SequenceFeatures;
use reservoir_runtime::config::ExperimentConfig;

#[test]
fn every_shipped_config_is_valid() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let config = ExperimentConfig::from_toml(&text, &p.display().to_string())
                .unwrap_or_else(|e| panic!("{e}"));
            // A config without a task is one for `reservoir fit --label-column`.
            assert!(
                config.task().is_some() || config.features() != &SequenceFeatures::default(),
                "{} has neither a [task] nor [features]",
                p.display()
            );
            p.file_name().unwrap().to_string_lossy().into_owned()
        })
        .collect();
    names.sort();
    for expected in [
        "default.toml",
        "deep_mackey_glass.toml",
        "feedback_mackey_glass.toml",
        "large_gpu.toml",
        "lif.toml",
        "mackey_glass.toml",
        "memory_capacity.toml",
        "narma10.toml",
        "nvar_increments_mackey_glass.toml",
        "nvar_mackey_glass.toml",
        "plasticity_narma10.toml",
        "sequence_model_space.toml",
        "spike_classification.toml",
        "sweep_narma10.toml",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "configs/{expected} is missing"
        );
    }
}
