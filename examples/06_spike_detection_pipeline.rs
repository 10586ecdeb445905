//! The engine as one step of a larger program, here a graph analysis: `analyse(&graph, device)`
//! finds which community each vertex of a graph belongs to, from spikes.
//!
//! ```text
//! per-vertex features ─► spike codes (rate + latency) ─► reservoir ─► ridge readout
//!                                     └─► template detector (one latency template per community)
//! ```
//!
//! Features of a vertex: its degree, its clustering coefficient, and where three steps of a
//! random walk from it land among eight probe vertices (a few power-iteration steps of the
//! row-normalised adjacency). Each feature becomes a rate code and a latency code (40 steps);
//! the reservoir runs where `Dispatch` puts it (under `auto`, the default, on the device
//! expected to finish first). Half the vertices train the readout and the templates; the
//! other half are scored.
//!
//! `cargo run --release -p reservoir-examples --example 06_spike_detection_pipeline [-- DEVICE]`
//! (DEVICE: `auto`, `cpu`, `cuda`, `cuda:N`)

use std::error::Error;

use ndarray::{concatenate, Array1, Array2, Axis};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::detection::{DetectorParams, PatternDetector};
use reservoir_core::encoding::{latency, rate, LatencyParams, RateOptions};
use reservoir_core::readout::RidgeAccumulator;
use reservoir_core::spikes::SpikePattern;
use reservoir_core::{ReservoirParams, ReservoirWeights};
use reservoir_runtime::model::predict_classes;
use reservoir_runtime::model::sample_features;
use reservoir_runtime::{Device, Dispatch, Placement, Workload};

/// Steps of each spike code (1 ms each).
const STEPS: usize = 40;
/// Probe vertices of the random-walk features.
const PROBES: usize = 8;
/// Random-walk steps (power iterations) of the probe features.
const WALK_STEPS: usize = 3;

/// An undirected graph with the community each vertex was planted in.
pub struct Graph {
    /// Neighbours of each vertex.
    pub neighbours: Vec<Vec<usize>>,
    /// The planted community of each vertex (what `analyse` learns to predict).
    pub community: Vec<usize>,
    /// Number of communities.
    pub communities: usize,
}

/// What `analyse` found.
#[derive(Debug)]
pub struct Report {
    /// Vertices and edges of the graph.
    pub vertices: usize,
    /// Undirected edges.
    pub edges: usize,
    /// Vertices the readout and the templates were trained on (the others are scored).
    pub train_vertices: usize,
    /// Where the reservoir ran (and why the CPU, when `auto` fell back).
    pub placement: String,
    /// Test vertices whose community the reservoir readout names correctly, as a fraction.
    pub readout_accuracy: f64,
    /// Test vertices with at least one template detection.
    pub detected: usize,
    /// Test vertices whose best detection is their community's template, as a fraction of all.
    pub detector_accuracy: f64,
    /// Predicted community of every vertex (readout).
    pub predicted: Vec<usize>,
}

/// A planted-partition graph: `n` vertices in `k` equal communities, an edge inside a
/// community with probability `p_in`, across with `p_out`.
pub fn planted_partition(n: usize, k: usize, p_in: f64, p_out: f64, seed: u64) -> Graph {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let community: Vec<usize> = (0..n).map(|v| v * k / n).collect();
    let mut neighbours = vec![Vec::new(); n];
    for a in 0..n {
        for b in a + 1..n {
            let p = if community[a] == community[b] {
                p_in
            } else {
                p_out
            };
            if rng.random::<f64>() < p {
                neighbours[a].push(b);
                neighbours[b].push(a);
            }
        }
    }
    Graph {
        neighbours,
        community,
        communities: k,
    }
}

/// Per-vertex features in [0, 1]: degree, clustering coefficient, random-walk probe mass.
fn vertex_features(graph: &Graph) -> Array2<f64> {
    let n = graph.neighbours.len();
    let degree: Vec<f64> = graph.neighbours.iter().map(|nb| nb.len() as f64).collect();
    let max_degree = degree.iter().copied().fold(1.0, f64::max);
    let clustering = |v: usize| {
        let nb = &graph.neighbours[v];
        if nb.len() < 2 {
            return 0.0;
        }
        let links = nb
            .iter()
            .enumerate()
            .flat_map(|(i, &a)| nb[i + 1..].iter().map(move |&b| (a, b)))
            .filter(|&(a, b)| graph.neighbours[a].contains(&b))
            .count();
        2.0 * links as f64 / (nb.len() * (nb.len() - 1)) as f64
    };
    // Walk mass: x ← D⁻¹A x, from the indicator of each probe (vertices spread over the graph).
    let mut walk = Array2::from_shape_fn((n, PROBES), |(v, j)| {
        f64::from(u8::from(v == j * n / PROBES + 1))
    });
    for _ in 0..WALK_STEPS {
        walk = Array2::from_shape_fn((n, PROBES), |(v, j)| {
            let nb = &graph.neighbours[v];
            nb.iter().map(|&u| walk[(u, j)]).sum::<f64>() / nb.len().max(1) as f64
        });
    }
    for mut column in walk.columns_mut() {
        let max = column.iter().copied().fold(f64::MIN_POSITIVE, f64::max);
        column.mapv_inplace(|x| x / max);
    }
    Array2::from_shape_fn((n, 2 + PROBES), |(v, f)| match f {
        0 => degree[v] / max_degree,
        1 => clustering(v),
        _ => walk[(v, f - 2)],
    })
}

/// The latency code of a feature vector as a spike pattern (1 ms bins).
fn latency_pattern(x: ndarray::ArrayView1<'_, f64>) -> Result<SpikePattern, Box<dyn Error>> {
    let options = LatencyParams::new().linear(true).normalize(true).check()?;
    Ok(SpikePattern::from_matrix(
        &latency(x, STEPS, options)?,
        1.0,
    )?)
}

/// Runs the pipeline on `graph`: half the vertices (alternating) train, the rest are scored.
pub fn analyse(graph: &Graph, device: Device) -> Result<Report, Box<dyn Error>> {
    let features = vertex_features(graph);
    let n = features.nrows();
    let k = graph.communities;
    let train: Vec<usize> = (0..n).step_by(2).collect();
    let test: Vec<usize> = (1..n).step_by(2).collect();

    // Spikes: a rate code and a latency code of every feature, side by side.
    let spikes = (0..n)
        .map(|v| -> Result<SpikePattern, Box<dyn Error>> {
            let x = features.row(v);
            let rated = rate(x, STEPS, RateOptions::default(), v as u64)?;
            let timed = latency(
                x,
                STEPS,
                LatencyParams::new().linear(true).normalize(true).check()?,
            )?;
            Ok(SpikePattern::from_matrix(
                &concatenate(Axis(1), &[rated.view(), timed.view()])?,
                1.0,
            )?)
        })
        .collect::<Result<Vec<_>, _>>()?;

    // Reservoir features: mean state over 4 segments of each vertex's spike pattern.
    let config = ReservoirParams::new()
        .size(200)
        .input_size(2 * features.ncols())
        .spectral_radius(0.9)
        .leak_rate(0.3)
        .input_scaling(0.5)
        .seed(3)
        .check()?;
    let (weights, _) = ReservoirWeights::generate(&config)?;
    let mut dispatch = Dispatch::new(device);
    let work = Workload::many(n, n * STEPS);
    let mut reservoir = dispatch.echo_state(&config, weights, work)?;
    let placement = match dispatch.placements().last() {
        Some((
            _,
            Placement::Cpu {
                fallback: Some(reason),
            },
        )) => format!("cpu ({reason})"),
        Some((_, Placement::Cuda { info, .. })) => {
            format!("cuda (GPU {}: {})", info.ordinal, info.name)
        }
        Some((_, other)) => other.name(),
        None => "unknown".to_string(),
    };
    let states = spikes
        .iter()
        .map(|p| sample_features(reservoir.as_mut(), p, 1.0, 4))
        .collect::<Result<Vec<Array1<f64>>, _>>()?;
    let rows = |set: &[usize]| -> Result<Array2<f64>, Box<dyn Error>> {
        let views: Vec<_> = set.iter().map(|&v| states[v].view()).collect();
        Ok(ndarray::stack(Axis(0), &views)?)
    };
    let one_hot = Array2::from_shape_fn((train.len(), k), |(i, c)| {
        f64::from(u8::from(graph.community[train[i]] == c))
    });
    let mut acc = RidgeAccumulator::new(states[0].len(), k, reservoir_core::Par::Seq)?;
    acc.add(rows(&train)?.view(), one_hot.view())?;
    let readout = acc.solve(1e-3)?.readout;
    let predicted = predict_classes(&readout, rows(&(0..n).collect::<Vec<_>>())?.view())?;
    let right = test
        .iter()
        .filter(|&&v| predicted[v] == graph.community[v])
        .count();

    // Detector: one template per community, the latency code of its training vertices' mean
    // features; each test vertex's latency pattern is searched for every template.
    let templates = (0..k)
        .map(|c| {
            let members: Vec<usize> = train
                .iter()
                .copied()
                .filter(|&v| graph.community[v] == c)
                .collect();
            let views: Vec<_> = members.iter().map(|&v| features.row(v)).collect();
            let mean = ndarray::stack(Axis(0), &views)?
                .mean_axis(Axis(0))
                .ok_or("empty community")?;
            latency_pattern(mean.view())
        })
        .collect::<Result<Vec<_>, _>>()?;
    let detector = PatternDetector::new(templates, DetectorParams::new().threshold(0.3).check()?)?;
    let (mut detected, mut detector_right) = (0, 0);
    for &v in &test {
        let found = detector.detect(&latency_pattern(features.row(v))?)?;
        if let Some(best) = found.iter().max_by(|a, b| a.score.total_cmp(&b.score)) {
            detected += 1;
            detector_right += usize::from(best.template == graph.community[v]);
        }
    }

    Ok(Report {
        vertices: n,
        edges: graph.neighbours.iter().map(Vec::len).sum::<usize>() / 2,
        train_vertices: train.len(),
        placement,
        readout_accuracy: right as f64 / test.len() as f64,
        detected,
        detector_accuracy: detector_right as f64 / test.len() as f64,
        predicted,
    })
}

fn main() -> Result<(), Box<dyn Error>> {
    let graph = planted_partition(200, 4, 0.15, 0.01, 7);
    let device: Device = match std::env::args().nth(1) {
        Some(arg) => arg.parse()?,
        None => Device::Auto,
    };
    let report = analyse(&graph, device)?;
    let test = report.vertices - report.train_vertices;
    println!(
        "graph: {} vertices, {} edges, {} planted communities",
        report.vertices, report.edges, graph.communities
    );
    println!("reservoir ran on: {}", report.placement);
    println!(
        "readout (reservoir states): community of {:.1} % of {test} held-out vertices",
        100.0 * report.readout_accuracy
    );
    println!(
        "detector (latency templates): {} of {test} vertices matched a template, {:.1} % named right",
        report.detected,
        100.0 * report.detector_accuracy
    );
    let sizes: Vec<usize> = (0..graph.communities)
        .map(|c| report.predicted.iter().filter(|&&p| p == c).count())
        .collect();
    println!("vertices per predicted community: {sizes:?}");
    Ok(())
}
