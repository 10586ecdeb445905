//! The `[sweep]` table: lanes in grid order, absent lists from the base config, and every
//! rule naming the list and the index.

use reservoir_core::lanes::Lane;
use reservoir_core::{ConfigError, ReservoirError};
use reservoir_runtime::config::ExperimentConfig;
use reservoir_runtime::config::SweepConfig;
use reservoir_runtime::RuntimeError;

const BASE: &str = "
[reservoir]
size = 50
spectral_radius = 0.8
leak_rate = 0.4
input_scaling = 0.7

[readout]
ridge = 1e-5
";

fn parse(sweep: &str) -> Result<ExperimentConfig, RuntimeError> {
    ExperimentConfig::from_toml(&format!("{BASE}\n[sweep]\n{sweep}"), "sweep.toml")
}

fn rejected(sweep: &str) -> ConfigError {
    match parse(sweep) {
        Err(RuntimeError::Core(ReservoirError::Config(e))) => e,
        other => panic!("expected a config error for {sweep:?}, got {other:?}"),
    }
}

#[test]
fn lanes_are_the_grid_with_input_scaling_fastest() {
    let config = parse(
        "spectral_radius = [0.5, 1.1]\nleak_rate = [0.2, 0.6, 1.0]\ninput_scaling = [0.1, 2.0]\nridge = [1e-8, 1e-2]\ntop = 4\n",
    )
    .unwrap();
    let sweep = config.sweep().unwrap();
    let lanes = sweep.lanes(config.reservoir()).unwrap();
    assert_eq!(lanes.len(), 12);
    for (index, lane) in lanes.iter().enumerate() {
        let (i, j, k) = (index / 6, (index / 2) % 3, index % 2);
        let (radius, leak, scaling) = ([0.5, 1.1][i], [0.2, 0.6, 1.0][j], [0.1, 2.0][k]);
        assert_eq!(
            (
                lane.spectral_radius(),
                lane.leak_rate(),
                lane.input_scaling()
            ),
            (radius, leak, scaling)
        );
        assert_eq!(
            *lane,
            Lane::new(config.reservoir(), radius, leak, scaling).unwrap()
        );
    }
    assert_eq!(sweep.ridges(config.readout()), vec![1e-8, 1e-2]);
    assert_eq!(sweep.top(), 4);
    // A lane's config is the base config with the lane's three values.
    let lane_config = lanes[7].config();
    assert_eq!(
        (
            lane_config.spectral_radius(),
            lane_config.leak_rate(),
            lane_config.input_scaling()
        ),
        (1.1, 0.2, 2.0)
    );
    assert_eq!(lane_config.size(), 50);
    assert_eq!(
        *lane_config,
        config
            .reservoir()
            .to_params()
            .spectral_radius(1.1)
            .leak_rate(0.2)
            .input_scaling(2.0)
            .check()
            .unwrap()
    );
}

#[test]
fn absent_lists_take_the_base_values() {
    let config = parse("leak_rate = [0.3, 0.9]\n").unwrap();
    let sweep = config.sweep().unwrap();
    let lanes = sweep.lanes(config.reservoir()).unwrap();
    assert_eq!(lanes.len(), 2);
    assert!(lanes
        .iter()
        .all(|l| l.spectral_radius() == 0.8 && l.input_scaling() == 0.7));
    assert_eq!(sweep.ridges(config.readout()), vec![1e-5]);
    assert_eq!(sweep.top(), 10);
    let plain = ExperimentConfig::from_toml(BASE, "plain.toml").unwrap();
    assert_eq!(plain.sweep(), None);
    let lanes = SweepConfig::default().lanes(plain.reservoir()).unwrap();
    assert_eq!(lanes.len(), 1);
    assert_eq!(lanes[0].config(), plain.reservoir());
}

#[test]
fn every_rule_names_the_list_and_the_index() {
    for (sweep, field, rule, value) in [
        (
            "leak_rate = [0.5, 1.0, 1.5]",
            "sweep.leak_rate[2]",
            "must be in (0, 1]",
            "1.5",
        ),
        (
            "leak_rate = [0.0]",
            "sweep.leak_rate[0]",
            "must be in (0, 1]",
            "0",
        ),
        (
            "spectral_radius = [0.9, 0]",
            "sweep.spectral_radius[1]",
            "must be in (0, 1e6]",
            "0",
        ),
        (
            "spectral_radius = [nan]",
            "sweep.spectral_radius[0]",
            "must be in (0, 1e6]",
            "NaN",
        ),
        (
            "input_scaling = [1, -0.5]",
            "sweep.input_scaling[1]",
            "must be in [0, 1e6]",
            "-0.5",
        ),
        (
            "ridge = [1e-6, inf]",
            "sweep.ridge[1]",
            "must be finite and >= 0",
            "inf",
        ),
        ("ridge = []", "sweep.ridge", "must not be empty", "[]"),
        (
            "leak_rate = []",
            "sweep.leak_rate",
            "must not be empty",
            "[]",
        ),
        ("top = 0", "sweep.top", "must be >= 1", "0"),
    ] {
        let err = rejected(sweep);
        assert_eq!(
            (err.field.as_str(), err.rule.as_str(), err.value.as_str()),
            (field, rule, value),
            "{sweep}"
        );
        assert!(err.to_string().contains(field), "{err}");
    }
}

#[test]
fn unknown_sweep_keys_are_errors_naming_the_key() {
    let err = parse("leak_rates = [0.5]\n").unwrap_err();
    assert!(matches!(err, RuntimeError::ConfigParse { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("leak_rates") && message.contains("sweep.toml"),
        "{message}"
    );
    // A single value where a list belongs: the parser names the place and what it expected.
    let err = parse("leak_rate = 0.5\n").unwrap_err().to_string();
    assert!(err.contains("line 12") && err.contains("sequence"), "{err}");
}

#[test]
fn a_sweep_table_survives_a_round_trip() {
    let config = parse("spectral_radius = [0.5, 1.1]\nridge = [1e-3]\n").unwrap();
    let text = toml::to_string(&config).unwrap();
    let back = ExperimentConfig::from_toml(&text, "again").unwrap();
    assert_eq!(back, config);
}
