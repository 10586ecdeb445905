//! Config parsing and validation: every rule names its field; unknown keys are errors.

use reservoir_core::{ConfigError, ExperimentConfig, ReservoirConfig, ReservoirError};

fn field_of(err: ReservoirError) -> String {
    match err {
        ReservoirError::Config(ConfigError { field, .. }) => field,
        other => panic!("expected a config error, got {other}"),
    }
}

#[test]
fn defaults_match_the_documented_values() {
    let c = ReservoirConfig::default();
    assert_eq!((c.size, c.spectral_radius, c.leak_rate), (1000, 0.95, 0.3));
    assert!(c.validate().is_ok());
}

#[test]
fn every_rule_names_its_field() {
    let bad: Vec<(&str, ReservoirConfig)> = vec![
        (
            "size",
            ReservoirConfig {
                size: 0,
                ..Default::default()
            },
        ),
        (
            "input_size",
            ReservoirConfig {
                input_size: 0,
                ..Default::default()
            },
        ),
        (
            "spectral_radius",
            ReservoirConfig {
                spectral_radius: 0.0,
                ..Default::default()
            },
        ),
        (
            "spectral_radius",
            ReservoirConfig {
                spectral_radius: f64::NAN,
                ..Default::default()
            },
        ),
        (
            "connection_prob",
            ReservoirConfig {
                connection_prob: 1.5,
                ..Default::default()
            },
        ),
        (
            "input_connectivity",
            ReservoirConfig {
                input_connectivity: 0.0,
                ..Default::default()
            },
        ),
        (
            "leak_rate",
            ReservoirConfig {
                leak_rate: 0.0,
                ..Default::default()
            },
        ),
        (
            "leak_rate",
            ReservoirConfig {
                leak_rate: 1.01,
                ..Default::default()
            },
        ),
        (
            "input_scaling",
            ReservoirConfig {
                input_scaling: -1.0,
                ..Default::default()
            },
        ),
        (
            "bias_scaling",
            ReservoirConfig {
                bias_scaling: f64::INFINITY,
                ..Default::default()
            },
        ),
        (
            "noise_level",
            ReservoirConfig {
                noise_level: -0.1,
                ..Default::default()
            },
        ),
    ];
    for (field, config) in bad {
        let err = config.validate().expect_err(field);
        assert_eq!(err.field, field);
        assert!(err.to_string().contains(field), "{err}");
    }
    // A spectral radius above 1 is allowed and common.
    assert!(ReservoirConfig {
        spectral_radius: 1.3,
        ..Default::default()
    }
    .validate()
    .is_ok());
}

#[test]
fn toml_file_round_trip_with_prefixed_field_names() {
    let text = "[reservoir]\nsize = 50\nspectral_radius = 1.2\nactivation = \"identity\"\nweight_distribution = \"normal\"\nprecision = \"f64\"\n[readout]\nridge = 1e-4\nwashout = 10\n";
    let c = ExperimentConfig::from_toml(text, "test.toml").unwrap();
    assert_eq!(c.reservoir.size, 50);
    assert_eq!(c.readout.washout, 10);
    let back = ExperimentConfig::from_toml(&toml::to_string(&c).unwrap(), "again").unwrap();
    assert_eq!(back, c);

    let err = ExperimentConfig::from_toml("[reservoir]\nleak_rate = 0\n", "bad.toml").unwrap_err();
    assert_eq!(field_of(err), "reservoir.leak_rate");
    let err = ExperimentConfig::from_toml("[readout]\nridge = -1\n", "bad.toml").unwrap_err();
    assert_eq!(field_of(err), "readout.ridge");
}

#[test]
fn unknown_keys_and_wrong_types_are_errors_naming_the_key() {
    for (text, needle) in [
        ("[reservoir]\nspectral_raduis = 0.9\n", "spectral_raduis"),
        ("[reservoir]\nsize = \"big\"\n", "size"),
        ("[reservoir]\nactivation = \"relu\"\n", "relu"),
        ("[readouts]\nridge = 1\n", "readouts"),
    ] {
        let err = ExperimentConfig::from_toml(text, "cfg.toml").unwrap_err();
        let message = err.to_string();
        assert!(
            matches!(err, ReservoirError::ConfigParse { .. }),
            "{message}"
        );
        assert!(
            message.contains("cfg.toml") && message.contains(needle),
            "{message}"
        );
    }
}
