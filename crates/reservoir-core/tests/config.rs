//! Config rules and serde: every rule names its field; defaults match the docs; unknown keys
//! are errors; a checked config deserialises only through `check()`.
//!
//! (The experiment file — `[reservoir]` / `[readout]` tables, prefixed field names such as
//! `reservoir.leak_rate`, parse errors naming the file — is `ExperimentConfig`'s, tested in
//! reservoir-runtime.)

use reservoir_core::lif::{LifConfig, LifFeatures, LifInputMode, LifParams};
use reservoir_core::{
    Activation, ConfigError, Precision, ReadoutConfig, ReadoutParams, ReservoirConfig,
    ReservoirParams, WeightDistribution,
};

#[test]
fn defaults_match_the_documented_values() {
    let c = ReservoirConfig::default();
    assert_eq!(
        (c.size(), c.spectral_radius(), c.leak_rate()),
        (1000, 0.95, 0.3)
    );
    assert_eq!(
        (
            c.input_size(),
            c.connection_prob(),
            c.input_connectivity(),
            c.input_scaling(),
            c.bias_scaling(),
            c.noise_level(),
            c.seed()
        ),
        (1, 0.1, 0.1, 1.0, 0.0, 0.0, 42)
    );
    assert_eq!(
        (c.activation(), c.weight_distribution(), c.precision()),
        (
            Activation::Tanh,
            WeightDistribution::Uniform,
            Precision::F32
        )
    );
    // The defaults are valid: checking them again gives the same config.
    assert_eq!(c.to_params().check().unwrap(), c);
    assert_eq!(ReservoirParams::new().check().unwrap(), c);

    let r = ReadoutConfig::default();
    assert_eq!((r.ridge(), r.washout()), (1e-6, 100));
    assert_eq!(ReadoutParams::new().check().unwrap(), r);
    assert_eq!(r.to_params().check().unwrap(), r);

    let l = LifConfig::default();
    assert_eq!(
        (
            l.size(),
            l.input_size(),
            l.dt_ms(),
            l.tau_m_ms(),
            l.tau_syn_ms()
        ),
        (1000, 1, 0.1, 20.0, 5.0)
    );
    assert_eq!(
        (
            l.threshold(),
            l.v_rest(),
            l.v_reset(),
            l.refractory_ms(),
            l.refractory_steps(),
            l.resistance()
        ),
        (1.0, 0.0, 0.0, 2.0, 20, 1.0)
    );
    assert_eq!(
        (
            l.excitatory_fraction(),
            l.connection_prob(),
            l.spectral_radius(),
            l.input_scaling(),
            l.input_connectivity(),
            l.bias_current(),
            l.trace_tau_ms()
        ),
        (0.8, 0.1, 2.0, 1.0, 0.1, 0.9, 20.0)
    );
    assert_eq!(
        (
            l.input_mode(),
            l.features(),
            l.count_window_steps(),
            l.seed()
        ),
        (LifInputMode::Current, LifFeatures::Trace, 200, 42)
    );
    assert_eq!(LifParams::new().check().unwrap(), l);
    assert_eq!(l.to_params().check().unwrap(), l);
}

#[test]
fn every_rule_names_its_field() {
    type Edit = fn(ReservoirParams) -> ReservoirParams;
    let bad: [(&str, Edit); 11] = [
        ("size", |p| p.size(0)),
        ("input_size", |p| p.input_size(0)),
        ("spectral_radius", |p| p.spectral_radius(0.0)),
        ("spectral_radius", |p| p.spectral_radius(f64::NAN)),
        ("connection_prob", |p| p.connection_prob(1.5)),
        ("input_connectivity", |p| p.input_connectivity(0.0)),
        ("leak_rate", |p| p.leak_rate(0.0)),
        ("leak_rate", |p| p.leak_rate(1.01)),
        ("input_scaling", |p| p.input_scaling(-1.0)),
        ("bias_scaling", |p| p.bias_scaling(f64::INFINITY)),
        ("noise_level", |p| p.noise_level(-0.1)),
    ];
    for (field, edit) in bad {
        let err: ConfigError = edit(ReservoirParams::new()).check().expect_err(field);
        assert_eq!(err.field, field);
        assert!(err.to_string().contains(field), "{err}");
    }
    let err = ReservoirParams::new().leak_rate(1.5).check().unwrap_err();
    assert_eq!(
        err,
        ConfigError::new("leak_rate", "must be in (0, 1]", 1.5),
        "{err}"
    );
    // A spectral radius above 1 is allowed and common.
    assert!(ReservoirParams::new().spectral_radius(1.3).check().is_ok());
    // Changing a checked config goes through its parameters and the same rules.
    let c = ReservoirConfig::default();
    let changed = c.to_params().leak_rate(0.5).check().unwrap();
    assert_eq!(changed.leak_rate(), 0.5);
    assert_eq!(
        changed
            .to_params()
            .leak_rate(c.leak_rate())
            .check()
            .unwrap(),
        c
    );
    assert_eq!(
        c.to_params().leak_rate(0.0).check().unwrap_err().field,
        "leak_rate"
    );

    for ridge in [-1.0, f64::NAN, f64::INFINITY] {
        let err = ReadoutParams::new().ridge(ridge).check().unwrap_err();
        assert_eq!(err.field, "ridge", "{err}");
        assert!(err.to_string().contains("ridge"), "{err}");
    }
    // Any washout is valid here (whether it leaves rows depends on the data).
    assert_eq!(
        ReadoutParams::new()
            .ridge(0.0)
            .washout(0)
            .check()
            .unwrap()
            .washout(),
        0
    );
}

#[test]
fn lif_rules_that_span_fields_name_the_field_they_constrain() {
    // v_reset must stay below the threshold, whichever of the two moves.
    for params in [
        LifParams::new().v_reset(1.0),
        LifParams::new().threshold(0.0),
        LifParams::new().threshold(-1.0).v_reset(-0.5),
    ] {
        let err = params.check().unwrap_err();
        assert_eq!(err.field, "v_reset", "{err}");
        assert!(err.to_string().contains("threshold"), "{err}");
    }
    assert!(LifParams::new()
        .threshold(-1.0)
        .v_reset(-1.5)
        .check()
        .is_ok());
    // The refractory period must fit in a u32 of steps of dt_ms.
    let err = LifParams::new()
        .dt_ms(1e-3)
        .refractory_ms(1e7)
        .check()
        .unwrap_err();
    assert_eq!(err.field, "refractory_ms", "{err}");
    assert_eq!(
        LifParams::new()
            .dt_ms(0.25)
            .refractory_ms(1.0)
            .check()
            .unwrap()
            .refractory_steps(),
        4
    );
    // Values are held in f32: one that overflows it is refused.
    let err = LifParams::new().threshold(1e40).check().unwrap_err();
    assert_eq!(err.field, "threshold", "{err}");
}

#[test]
fn toml_round_trip_and_invalid_values_name_the_field() {
    let text = "size = 50\nspectral_radius = 1.2\nactivation = \"identity\"\nweight_distribution = \"normal\"\nprecision = \"f64\"\n";
    let c: ReservoirConfig = toml::from_str(text).unwrap();
    assert_eq!(c.size(), 50);
    assert_eq!(c.spectral_radius(), 1.2);
    assert_eq!(c.activation(), Activation::Identity);
    assert_eq!(c.weight_distribution(), WeightDistribution::Normal);
    assert_eq!(c.precision(), Precision::F64);
    assert_eq!(c.leak_rate(), 0.3, "a missing key takes its default");
    let back: ReservoirConfig = toml::from_str(&toml::to_string(&c).unwrap()).unwrap();
    assert_eq!(back, c);

    let params = ReservoirParams::new()
        .size(50)
        .input_size(3)
        .spectral_radius(1.2)
        .connection_prob(0.2)
        .input_connectivity(0.5)
        .leak_rate(0.7)
        .input_scaling(0.4)
        .bias_scaling(0.1)
        .noise_level(1e-3)
        .activation(Activation::Identity)
        .weight_distribution(WeightDistribution::Normal)
        .seed(7)
        .precision(Precision::F64);
    let params_back: ReservoirParams = toml::from_str(&toml::to_string(&params).unwrap()).unwrap();
    assert_eq!(params_back, params);
    // A config serialises as its parameters.
    let checked = params.clone().check().unwrap();
    assert_eq!(
        toml::to_string(&checked).unwrap(),
        toml::to_string(&params).unwrap()
    );

    let readout: ReadoutConfig = toml::from_str("ridge = 1e-4\nwashout = 10\n").unwrap();
    assert_eq!((readout.ridge(), readout.washout()), (1e-4, 10));
    let readout_back: ReadoutConfig = toml::from_str(&toml::to_string(&readout).unwrap()).unwrap();
    assert_eq!(readout_back, readout);

    // Deserialising a checked config runs check(): the error names the field.
    let err = toml::from_str::<ReservoirConfig>("leak_rate = 0\n").unwrap_err();
    let rule = ReservoirParams::new().leak_rate(0.0).check().unwrap_err();
    assert_eq!(rule.field, "leak_rate");
    assert!(err.to_string().contains(&rule.to_string()), "{err}");
    let err = toml::from_str::<ReadoutConfig>("ridge = -1\n").unwrap_err();
    assert!(err.to_string().contains("`ridge`"), "{err}");
    // The unchecked parameters load, and check() names the same field.
    let unchecked: ReservoirParams = toml::from_str("leak_rate = 0\n").unwrap();
    assert_eq!(unchecked.check().unwrap_err().field, "leak_rate");
}

#[test]
fn unknown_keys_and_wrong_types_are_errors_naming_the_key() {
    for (text, needle) in [
        ("spectral_raduis = 0.9\n", "spectral_raduis"),
        ("size = \"big\"\n", "size"),
        ("activation = \"relu\"\n", "relu"),
    ] {
        let message = toml::from_str::<ReservoirParams>(text)
            .unwrap_err()
            .to_string();
        assert!(message.contains(needle), "{message}");
        let message = toml::from_str::<ReservoirConfig>(text)
            .unwrap_err()
            .to_string();
        assert!(message.contains(needle), "{message}");
    }
    for (text, needle) in [("washot = 10\n", "washot"), ("ridge = \"x\"\n", "ridge")] {
        let message = toml::from_str::<ReadoutConfig>(text)
            .unwrap_err()
            .to_string();
        assert!(message.contains(needle), "{message}");
    }
}
