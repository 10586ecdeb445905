//! Spike patterns through a reservoir on the GPU when one is usable, else on the CPU, then a
//! ridge readout that tells the patterns apart.
//!
//! The GPU flow: config → `GpuDevice::shared(0)` (the process-wide handle of GPU 0; it says
//! what is missing when there is no usable GPU) → `GpuReservoirComputer::new_shared(&config,
//! &device)` (weights generated from the config's seed and uploaded once) →
//! `process_gpu(&pattern)` per pattern. Without a GPU the same config gives the same weights
//! on the CPU's `EchoStateNetwork`, which runs each pattern with the `Reservoir` trait's
//! `run_pattern(&pattern, 1.0)` (1 ms bins, as `process_gpu` uses by default).
//!
//! `cargo run --release -p reservoir-examples --example 04_spikes_on_the_gpu`

use std::error::Error;
use std::time::Instant;

use gpu_reservoir::{GpuDevice, GpuReservoirComputer};
use ndarray::{s, Array1, Array2, Axis};
use reservoir_core::readout::RidgeAccumulator;
use reservoir_core::spikes::SpikePattern;
use reservoir_core::{EchoStateNetwork, Reservoir, ReservoirConfig, ReservoirParams};
use reservoir_runtime::config::SpikeClassificationParams;
use reservoir_runtime::data::tasks::spikes::{generate, LabelledPattern};
use reservoir_runtime::model::predict_classes;

/// Mean state over this many equal segments of a pattern: the readout's features.
const SEGMENTS: usize = 4;

/// The reservoir, on a GPU or on the CPU.
enum Engine {
    Gpu(Box<GpuReservoirComputer>),
    Cpu(Box<EchoStateNetwork>),
}

impl Engine {
    /// GPU 0 when it is usable, else the CPU; also says where, and why not the GPU.
    fn open(config: &ReservoirConfig) -> Result<(Self, String), Box<dyn Error>> {
        let gpu = GpuDevice::shared(0)
            .and_then(|device| GpuReservoirComputer::new_shared(config, &device));
        Ok(match gpu {
            Ok(reservoir) => {
                let place = format!("GPU 0 ({}), process_gpu", reservoir.device().info().name);
                (Engine::Gpu(Box::new(reservoir)), place)
            }
            Err(why) => (
                Engine::Cpu(Box::new(EchoStateNetwork::new(config)?)),
                format!("CPU, run_pattern ({why})"),
            ),
        })
    }

    /// The states (bins × N) of one pattern, from the zero state.
    fn states(&mut self, pattern: &SpikePattern) -> Result<Array2<f64>, Box<dyn Error>> {
        Ok(match self {
            Engine::Gpu(reservoir) => {
                reservoir.reset()?;
                reservoir.process_gpu(pattern)?
            }
            Engine::Cpu(reservoir) => {
                reservoir.reset()?;
                reservoir.run_pattern(pattern, 1.0)?
            }
        })
    }

    /// One feature row per pattern: the mean state over each of `SEGMENTS` runs of bins.
    fn features(&mut self, set: &[LabelledPattern]) -> Result<Array2<f64>, Box<dyn Error>> {
        let mut rows = Vec::with_capacity(set.len());
        for sample in set {
            let states = self.states(&sample.pattern)?;
            let (bins, n) = states.dim();
            let mut row = Array1::zeros(SEGMENTS * n);
            for k in 0..SEGMENTS {
                let segment = states.slice(s![k * bins / SEGMENTS..(k + 1) * bins / SEGMENTS, ..]);
                let mean = segment.mean_axis(Axis(0)).ok_or("empty segment")?;
                row.slice_mut(s![k * n..(k + 1) * n]).assign(&mean);
            }
            rows.push(row);
        }
        let views: Vec<_> = rows.iter().map(|row| row.view()).collect();
        Ok(ndarray::stack(Axis(0), &views)?)
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    // Four classes of 50 ms templates (one spike per channel) in 5 Hz background, ±1 ms jitter.
    let task = SpikeClassificationParams {
        classes: 4,
        channels: 20,
        train_per_class: 10,
        test_per_class: 10,
        ..Default::default()
    }
    .check()?;
    let data = generate(&task)?;
    let config = ReservoirParams::new()
        .size(300)
        .input_size(task.channels)
        .spectral_radius(0.9)
        .leak_rate(0.3)
        .input_scaling(0.5)
        .seed(1)
        .check()?;

    let (mut engine, place) = Engine::open(&config)?;
    let started = Instant::now();
    let train = engine.features(&data.train)?;
    let test = engine.features(&data.test)?;
    let seconds = started.elapsed().as_secs_f64();

    // A one-hot ridge readout: one output per class, the largest output names the class.
    let one_hot = Array2::from_shape_fn((data.train.len(), task.classes), |(i, c)| {
        f64::from(u8::from(data.train[i].label == c))
    });
    let mut acc = RidgeAccumulator::new(train.ncols(), task.classes, reservoir_core::Par::Seq)?;
    acc.add(train.view(), one_hot.view())?;
    let readout = acc.solve(1e-3)?.readout;
    let accuracy =
        |features: &Array2<f64>, set: &[LabelledPattern]| -> Result<f64, Box<dyn Error>> {
            let predicted = predict_classes(&readout, features.view())?;
            let right = predicted
                .iter()
                .zip(set)
                .filter(|(p, s)| **p == s.label)
                .count();
            Ok(right as f64 / set.len() as f64)
        };

    println!("reservoir ran on: {place}");
    println!(
        "{} patterns ({} classes, {} channels, {} ms) through {} units in {seconds:.3} s",
        data.train.len() + data.test.len(),
        task.classes,
        task.channels,
        task.sample_ms,
        config.size()
    );
    println!(
        "ridge readout on {SEGMENTS} segment means: train accuracy {:.1} %, test accuracy {:.1} %",
        100.0 * accuracy(&train, &data.train)?,
        100.0 * accuracy(&test, &data.test)?
    );
    Ok(())
}
