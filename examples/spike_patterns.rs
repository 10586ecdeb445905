//! Spike patterns through a reservoir on the GPU when one is usable, else on the CPU, then a
//! ridge readout that tells the patterns apart.
//!
//! The GPU flow: config → `GpuDevice::shared(0)` → `GpuReservoirComputer::new_shared` →
//! `process_gpu(&pattern)` per pattern. Without a usable GPU the same config runs on the CPU
//! `EchoStateNetwork` over `pattern.to_input_matrix(1.0)`; the weights are the same.
//!
//! `cargo run --release -p reservoir-examples --example spike_patterns`

use std::error::Error;
use std::time::Instant;

use gpu_reservoir::{probe, GpuDevice, GpuReservoirComputer};
use ndarray::{s, Array1, Array2, Axis};
use reservoir_core::readout::RidgeAccumulator;
use reservoir_core::spikes::SpikePattern;
use reservoir_core::tasks::spike_classification::{
    generate, predict_classes, LabelledPattern, SpikeClassificationOptions,
};
use reservoir_core::{EchoStateNetwork, Reservoir, ReservoirConfig};

/// Mean state over this many equal segments of a pattern: the readout's features.
const SEGMENTS: usize = 4;

/// Where the reservoir runs.
enum Engine {
    Gpu(Box<GpuReservoirComputer>),
    Cpu(Box<EchoStateNetwork<f32>>),
}

impl Engine {
    /// The states (bins × N) of one pattern, from the zero state.
    fn states(&mut self, pattern: &SpikePattern) -> Result<Array2<f64>, Box<dyn Error>> {
        match self {
            Engine::Gpu(reservoir) => {
                reservoir.reset();
                Ok(reservoir.process_gpu(pattern)?)
            }
            Engine::Cpu(reservoir) => {
                reservoir.reset();
                Ok(reservoir.run(pattern.to_input_matrix(1.0)?.view())?)
            }
        }
    }

    /// The readout features of one pattern: segment means of its states.
    fn features(&mut self, pattern: &SpikePattern) -> Result<Array1<f64>, Box<dyn Error>> {
        let states = self.states(pattern)?;
        let (bins, n) = states.dim();
        let mut features = Array1::zeros(SEGMENTS * n);
        for k in 0..SEGMENTS {
            let rows = s![k * bins / SEGMENTS..(k + 1) * bins / SEGMENTS, ..];
            let mean = states
                .slice(rows)
                .mean_axis(Axis(0))
                .ok_or("empty segment")?;
            features.slice_mut(s![k * n..(k + 1) * n]).assign(&mean);
        }
        Ok(features)
    }

    /// One feature row per pattern.
    fn matrix(&mut self, set: &[LabelledPattern]) -> Result<Array2<f64>, Box<dyn Error>> {
        let rows = set
            .iter()
            .map(|sample| self.features(&sample.pattern))
            .collect::<Result<Vec<_>, _>>()?;
        let views: Vec<_> = rows.iter().map(|r| r.view()).collect();
        Ok(ndarray::stack(Axis(0), &views)?)
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    // Four classes of 50 ms templates (one spike per channel) in 5 Hz background, ±1 ms jitter.
    let task = SpikeClassificationOptions {
        classes: 4,
        channels: 20,
        train_per_class: 10,
        test_per_class: 10,
        ..Default::default()
    };
    let data = generate(&task)?;
    let config = ReservoirConfig {
        size: 300,
        input_size: task.channels,
        spectral_radius: 0.9,
        leak_rate: 0.3,
        input_scaling: 0.5,
        seed: 1,
        ..Default::default()
    };

    let support = probe();
    let (mut engine, place) = match support.problem {
        None => match GpuDevice::shared(0)
            .and_then(|device| Ok((GpuReservoirComputer::new_shared(&config, &device)?, device)))
        {
            Ok((reservoir, device)) => (
                Engine::Gpu(Box::new(reservoir)),
                format!("GPU 0 ({}), process_gpu per pattern", device.info().name),
            ),
            Err(e) => (
                Engine::Cpu(Box::new(EchoStateNetwork::new(&config)?)),
                format!("CPU (GPU 0 could not be used: {e})"),
            ),
        },
        Some(problem) => (
            Engine::Cpu(Box::new(EchoStateNetwork::new(&config)?)),
            format!("CPU (no usable GPU: {problem})"),
        ),
    };

    let started = Instant::now();
    let train = engine.matrix(&data.train)?;
    let test = engine.matrix(&data.test)?;
    let seconds = started.elapsed().as_secs_f64();

    let one_hot = |set: &[LabelledPattern]| {
        Array2::from_shape_fn((set.len(), task.classes), |(i, c)| {
            f64::from(u8::from(set[i].label == c))
        })
    };
    let mut acc = RidgeAccumulator::new(train.ncols(), task.classes, 1);
    acc.add(train.view(), one_hot(&data.train).view())?;
    let readout = acc.solve(1e-3)?.readout;
    let accuracy =
        |features: &Array2<f64>, set: &[LabelledPattern]| -> Result<f64, Box<dyn Error>> {
            let predicted = predict_classes(&readout, features)?;
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
        config.size
    );
    println!(
        "ridge readout on {SEGMENTS} segment means: train accuracy {:.1} %, test accuracy {:.1} %",
        100.0 * accuracy(&train, &data.train)?,
        100.0 * accuracy(&test, &data.test)?
    );
    Ok(())
}
