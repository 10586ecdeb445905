//! Config files: a TOML round trip, rule errors naming the table and field, unknown keys and
//! wrong types naming the key, and where to run: the `device` key and the old
//! `[reservoir] backend`.

use reservoir_core::{Activation, ConfigError, Precision, ReservoirError, WeightDistribution};
use reservoir_runtime::config::ExperimentConfig;
use reservoir_runtime::{Device, Devices, GemmMath, RuntimeError};

fn field_of(err: RuntimeError) -> String {
    match err {
        RuntimeError::Core(ReservoirError::Config(ConfigError { field, .. })) => field,
        other => panic!("expected a config error, got {other}"),
    }
}

/// The message of a parse error (syntax, type, unknown key, device), which names `origin`.
fn parse_error(text: &str, origin: &str) -> String {
    match ExperimentConfig::from_toml(text, origin) {
        Err(err @ RuntimeError::ConfigParse { .. }) => {
            let message = err.to_string();
            assert!(message.contains(origin), "{message}");
            message
        }
        other => panic!("expected a parse error for {text:?}, got {other:?}"),
    }
}

#[test]
fn toml_file_round_trip_with_prefixed_field_names() {
    let text = "[reservoir]\nsize = 50\nspectral_radius = 1.2\nactivation = \"identity\"\nweight_distribution = \"normal\"\nprecision = \"f64\"\n[readout]\nridge = 1e-4\nwashout = 10\n";
    let c = ExperimentConfig::from_toml(text, "test.toml").unwrap();
    assert_eq!(c.reservoir().size(), 50);
    assert_eq!(c.reservoir().spectral_radius(), 1.2);
    assert_eq!(c.reservoir().activation(), Activation::Identity);
    assert_eq!(
        c.reservoir().weight_distribution(),
        WeightDistribution::Normal
    );
    assert_eq!(c.reservoir().precision(), Precision::F64);
    assert_eq!(c.readout().ridge(), 1e-4);
    assert_eq!(c.readout().washout(), 10);
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
        let message = parse_error(text, "cfg.toml");
        assert!(message.contains(needle), "{message}");
    }
}

#[test]
fn the_device_key_names_where_to_run() {
    let config =
        ExperimentConfig::from_toml("device = \"cuda:1\"\n[reservoir]\nsize = 10\n", "d.toml")
            .unwrap();
    assert_eq!(config.device(), Device::Cuda(1));
    assert_eq!(config.reservoir().size(), 10);
    // Where to run survives a round trip.
    let back = ExperimentConfig::from_toml(&toml::to_string(&config).unwrap(), "again").unwrap();
    assert_eq!(back.device(), Device::Cuda(1));
    assert_eq!(back, config);
    for (text, device) in [
        ("device = \"cpu\"\n", Device::Cpu),
        ("device = \"cuda\"\n", Device::Cuda(0)),
        ("device = \"auto\"\n", Device::Auto),
        ("[reservoir]\nsize = 10\n", Device::Auto),
    ] {
        let config = ExperimentConfig::from_toml(text, "d.toml").unwrap();
        assert_eq!(config.device(), device, "{text:?}");
    }
}

#[test]
fn the_devices_key_lists_the_gpus_a_sweep_spreads_over() {
    for (text, devices) in [
        ("devices = [0, 1]\n", Some(Devices::List(vec![0, 1]))),
        ("devices = \"all\"\n", Some(Devices::All)),
        ("device = \"cuda\"\n", None),
    ] {
        let config = ExperimentConfig::from_toml(text, "d.toml").unwrap();
        assert_eq!(config.devices(), devices.as_ref(), "{text:?}");
        let back = ExperimentConfig::from_toml(&toml::to_string(&config).unwrap(), "again");
        assert_eq!(back.unwrap(), config, "{text:?}");
    }
    for text in ["devices = []\n", "devices = [1, 1]\n"] {
        let err = ExperimentConfig::from_toml(text, "d.toml").unwrap_err();
        assert_eq!(field_of(err), "devices", "{text:?}");
    }
    for text in ["devices = \"some\"\n", "devices = [-1]\n", "devices = 2\n"] {
        let message = parse_error(text, "d.toml");
        assert!(message.contains("devices"), "{text:?}: {message}");
    }
}

#[test]
fn the_gpu_matmul_key_sets_the_arithmetic_of_batches_on_a_gpu() {
    for (text, math) in [
        ("gpu_matmul = \"f16\"\n", GemmMath::F16),
        ("gpu_matmul = \"tf32\"\n", GemmMath::Tf32),
        ("device = \"cuda\"\n", GemmMath::F32),
    ] {
        let config = ExperimentConfig::from_toml(text, "m.toml").unwrap();
        assert_eq!(config.gpu_matmul(), math, "{text:?}");
        let back = ExperimentConfig::from_toml(&toml::to_string(&config).unwrap(), "again");
        assert_eq!(back.unwrap(), config, "{text:?}");
    }
    // f16 operands need a tanh reservoir: refused in the file and by the override alike.
    let linear = "gpu_matmul = \"f16\"\n[reservoir]\nactivation = \"identity\"\n";
    let err = ExperimentConfig::from_toml(linear, "m.toml").unwrap_err();
    assert_eq!(field_of(err), "gpu_matmul");
    let config =
        ExperimentConfig::from_toml("[reservoir]\nactivation = \"identity\"\n", "m.toml").unwrap();
    assert!(config.clone().with_gpu_matmul(GemmMath::Tf32).is_ok());
    let refused = config.with_gpu_matmul(GemmMath::F16).unwrap_err();
    assert_eq!(refused.field, "gpu_matmul");
    let message = parse_error("gpu_matmul = \"bf16\"\n", "m.toml");
    assert!(
        message.contains("line 1") && message.contains("`bf16`"),
        "{message}"
    );
}

#[test]
fn the_old_backend_key_is_still_read() {
    let config = ExperimentConfig::from_toml(
        "[reservoir]\nsize = 12\nbackend = \"cpu\"\n[readout]\nwashout = 20\n",
        "old.toml",
    )
    .unwrap();
    assert_eq!(config.device(), Device::Cpu);
    assert_eq!(config.reservoir().size(), 12);
    assert_eq!(config.readout().washout(), 20);
    // Agreeing with `device` is fine.
    let config = ExperimentConfig::from_toml(
        "device = \"cpu\"\n[reservoir]\nbackend = \"cpu\"\n",
        "old.toml",
    )
    .unwrap();
    assert_eq!(config.device(), Device::Cpu);
}

#[test]
fn a_device_and_a_backend_that_disagree_are_an_error_naming_both() {
    let message = parse_error(
        "device = \"cpu\"\n[reservoir]\nbackend = \"cuda\"\n",
        "both.toml",
    );
    assert!(
        message.contains("device")
            && message.contains("backend")
            && message.contains("cpu")
            && message.contains("cuda"),
        "{message}"
    );
}

#[test]
fn an_unknown_device_names_the_value_and_the_line() {
    let message = parse_error("# where to run\ndevice = \"gpu\"\n", "gpu.toml");
    assert!(
        message.contains("gpu") && message.contains("line 2"),
        "{message}"
    );
    // The old spelling too.
    let message = parse_error("[reservoir]\nsize = 5\nbackend = \"gpu\"\n", "gpu.toml");
    assert!(
        message.contains("reservoir.backend")
            && message.contains("`gpu`")
            && message.contains("line 3"),
        "{message}"
    );
}

#[test]
fn an_unknown_reservoir_key_names_the_key_and_the_line() {
    let message = parse_error("[reservoir]\nsizes = 10\n", "keys.toml");
    assert!(
        message.contains("sizes") && message.contains("line 2"),
        "{message}"
    );
    // Taking the old `backend` key out of the table keeps the lines of the others.
    let message = parse_error("[reservoir]\nbackend = \"cpu\"\nsizes = 10\n", "keys.toml");
    assert!(
        message.contains("sizes") && message.contains("line 3"),
        "{message}"
    );
}

#[test]
fn a_spike_task_with_fewer_than_two_classes_names_the_rule() {
    let err = ExperimentConfig::from_toml(
        "[task]\nkind = \"spike_classification\"\nclasses = 1\n",
        "one_class.toml",
    )
    .unwrap_err();
    let message = err.to_string();
    assert!(message.contains("task.classes"), "{message}");
    assert!(message.contains(">= 2"), "{message}");
    assert_eq!(field_of(err), "task.classes");
}

#[test]
fn a_negative_template_onset_names_its_own_field() {
    let err = ExperimentConfig::from_toml(
        "[task]\nkind = \"spike_classification\"\nonset_ms = -1.0\n",
        "onset.toml",
    )
    .unwrap_err();
    assert_eq!(field_of(err), "task.onset_ms");
}
