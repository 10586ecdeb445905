//! # reservoir-conformance
//!
//! The checks every implementation of `reservoir_core::Reservoir` must pass, whatever device it
//! runs on: shapes, the errors of bad calls, the reset/state round trip, determinism, parity
//! with a CPU reference, spike patterns, many sequences and ridge sums. A backend's test file
//! describes its reservoir as a [`Subject`] and calls each check from its own `#[test]`.
//!
//! Inputs are drawn from a fresh seed on every run (printed, and replayable with
//! `RESERVOIR_TEST_SEED`), so the checks see new data each time.

use ndarray::{s, Array1, Array2, ArrayView2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::fit::accumulate_run;
use reservoir_core::readout::RidgeAccumulator;
use reservoir_core::spikes::{Spike, SpikePattern};
use reservoir_core::{Reservoir, ReservoirError, Result};

/// Builds one reservoir: every call gives a fresh one of the same config and weights.
pub type Build<'a> = dyn Fn() -> Result<Box<dyn Reservoir>> + 'a;

/// A reservoir under test and what it is compared with.
pub struct Subject<'a> {
    /// Named in every failure message, e.g. `GpuReservoirComputer (cluster)`.
    pub name: &'a str,
    /// Builds the reservoir under test.
    pub build: &'a Build<'a>,
    /// Builds the CPU reference on the same weights (the reservoir itself for a CPU backend).
    pub reference: &'a Build<'a>,
    /// Largest ‖got − reference‖ / ‖reference‖ over a run of states (0 for bit-identical).
    pub tolerance: f64,
    /// Largest relative change of a state by `set_state` then `state` (f32 rounding: 6e-8).
    pub state_rounding: f64,
    /// Largest ‖got − reference‖ / ‖reference‖ of a `run_many` sequence against the reference
    /// run alone, where that is above `tolerance`: a sparse CPU echo-state reservoir steps
    /// blocks of sequences together and sums W·x in another order than one run alone.
    pub sequence_rounding: f64,
}

/// A seed that differs on every run, printed so a failure can be replayed
/// (`RESERVOIR_TEST_SEED`).
pub fn fresh_seed(check: &str) -> u64 {
    let seed = std::env::var("RESERVOIR_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
    eprintln!("{check}: seed {seed} (replay with RESERVOIR_TEST_SEED={seed})");
    seed
}

/// A port on 127.0.0.1 that is free now, for the ranks of a test launch to meet at. It is
/// below Linux's ephemeral range (32768 and up), from which the sockets of other work in the
/// process (NCCL's bootstrap among them) take theirs, so it stays free until the test
/// listens on it.
///
/// # Panics
/// When none of the ten thousand ports tried is free (a test helper: the test fails).
pub fn free_port() -> u16 {
    let start = std::process::id() as usize % 10_000;
    (0..10_000)
        .map(|i| 20_000 + ((start + i) % 10_000) as u16)
        .find(|&port| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok())
        .expect("a free port in 20000..30000")
}

/// The name the test harness gives test `test` of the module at `module_path`
/// (`module_path!()` there), to run it alone in a child process with `--exact`: the module
/// path without the test crate's name.
pub fn harness_name(module_path: &str, test: &str) -> String {
    match module_path.split_once("::") {
        Some((_, module)) => format!("{module}::{test}"),
        None => test.to_string(),
    }
}

fn inputs(rng: &mut ChaCha8Rng, steps: usize, k: usize) -> Array2<f64> {
    Array2::from_shape_fn((steps, k), |_| rng.random_range(-1.0..1.0))
}

/// ‖a − b‖ / ‖b‖ (0 when both are zero).
pub fn relative_error(a: ArrayView2<f64>, b: ArrayView2<f64>) -> f64 {
    let diff = (&a - &b).iter().map(|d| d * d).sum::<f64>().sqrt();
    let norm = b.iter().map(|v| v * v).sum::<f64>().sqrt();
    if diff == 0.0 {
        0.0
    } else {
        diff / norm.max(f64::MIN_POSITIVE)
    }
}

fn build(subject: &Subject<'_>) -> Box<dyn Reservoir> {
    (subject.build)().unwrap_or_else(|e| panic!("{}: building: {e}", subject.name))
}

fn reference(subject: &Subject<'_>) -> Box<dyn Reservoir> {
    (subject.reference)()
        .unwrap_or_else(|e| panic!("{}: building the reference: {e}", subject.name))
}

/// How far f64 sums of the same values may differ when they are added in other orders (a
/// backend adds its states in chunks of its own size).
const SUM_ORDER: f64 = 1e-12;

fn assert_within(
    subject: &Subject<'_>,
    what: &str,
    got: ArrayView2<f64>,
    expected: ArrayView2<f64>,
    tolerance: f64,
) {
    assert_eq!(
        got.dim(),
        expected.dim(),
        "{}: {what}: shapes",
        subject.name
    );
    let error = relative_error(got, expected);
    assert!(
        error <= tolerance,
        "{}: {what}: relative error {error:.3e} above {tolerance:.1e}",
        subject.name
    );
}

fn assert_close(
    subject: &Subject<'_>,
    what: &str,
    got: ArrayView2<f64>,
    expected: ArrayView2<f64>,
) {
    assert_within(subject, what, got, expected, subject.tolerance);
}

fn is_shape(e: &ReservoirError) -> bool {
    matches!(e, ReservoirError::Shape { .. })
}

fn is_invalid(e: &ReservoirError) -> bool {
    matches!(e, ReservoirError::InvalidInput { .. })
}

/// `size`, `input_size` and the shapes of `run`'s states; an empty run gives 0 rows and keeps
/// the state.
pub fn shapes(subject: &Subject<'_>) {
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("shapes"));
    let mut reservoir = build(subject);
    let (n, k) = (reservoir.size(), reservoir.input_size());
    assert!(
        n >= 1 && k >= 1,
        "{}: size {n}, input_size {k}",
        subject.name
    );
    let states = reservoir.run(inputs(&mut rng, 17, k).view()).expect("run");
    assert_eq!(states.dim(), (17, n), "{}: run's states", subject.name);
    let state = reservoir.state().expect("state");
    assert_eq!(state.len(), n, "{}: state", subject.name);
    assert_eq!(
        state,
        states.row(16).to_owned(),
        "{}: the state is the last row of the run",
        subject.name
    );
    let none = reservoir
        .run(Array2::zeros((0, k)).view())
        .expect("empty run");
    assert_eq!(none.dim(), (0, n), "{}: an empty run", subject.name);
    assert_eq!(
        reservoir.state().expect("state"),
        state,
        "{}: an empty run keeps the state",
        subject.name
    );
}

/// The errors of bad calls, each of the kind every backend gives: wrong widths and lengths are
/// shape errors, values that are not finite invalid-input errors, and a refused call leaves
/// the state as it was.
pub fn errors(subject: &Subject<'_>) {
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("errors"));
    let mut reservoir = build(subject);
    let (n, k) = (reservoir.size(), reservoir.input_size());
    reservoir.run(inputs(&mut rng, 5, k).view()).expect("run");
    let before = reservoir.state().expect("state");
    let name = subject.name;
    let wrong_width = reservoir.run(inputs(&mut rng, 4, k + 1).view());
    assert!(
        wrong_width.as_ref().is_err_and(is_shape),
        "{name}: K + 1 columns: {wrong_width:?}"
    );
    let mut bad = inputs(&mut rng, 6, k);
    bad[(3, k - 1)] = f64::NAN;
    match reservoir.run(bad.view()) {
        Err(e) if is_invalid(&e) => {
            assert!(
                e.to_string().contains("row 3"),
                "{name}: the message names the row: {e}"
            )
        }
        other => panic!("{name}: a NaN input: {other:?}"),
    }
    bad[(3, k - 1)] = f64::INFINITY;
    assert!(
        reservoir.run(bad.view()).as_ref().is_err_and(is_invalid),
        "{name}: an infinite input"
    );
    let mut states = Array2::zeros((6, n + 1));
    let wrong_states = reservoir.run_into(inputs(&mut rng, 6, k).view(), states.view_mut());
    assert!(
        wrong_states.as_ref().is_err_and(is_shape),
        "{name}: states of N + 1 columns"
    );
    let short = reservoir.set_state(Array1::zeros(n + 1).view());
    assert!(
        short.as_ref().is_err_and(is_shape),
        "{name}: a state of N + 1 values"
    );
    let mut nan = Array1::zeros(n);
    nan[n / 2] = f64::NAN;
    assert!(
        reservoir
            .set_state(nan.view())
            .as_ref()
            .is_err_and(is_invalid),
        "{name}: a NaN state"
    );
    let channels = SpikePattern::new(Vec::new(), k + 1, 10.0).expect("pattern");
    assert!(
        reservoir
            .run_pattern(&channels, 1.0)
            .as_ref()
            .is_err_and(is_shape),
        "{name}: a pattern of K + 1 channels"
    );
    assert_eq!(
        reservoir.state().expect("state"),
        before,
        "{name}: refused calls keep the state"
    );
}

/// `reset` gives the rest state (the same after any run), `set_state` then `state` gives the
/// state back (to the backend's rounding), and a run continues from a state set that way
/// exactly as from the state the run reached.
pub fn state_round_trip(subject: &Subject<'_>) {
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("state_round_trip"));
    let mut reservoir = build(subject);
    let (n, k) = (reservoir.size(), reservoir.input_size());
    reservoir.reset().expect("reset");
    let rest = reservoir.state().expect("state");
    reservoir.run(inputs(&mut rng, 30, k).view()).expect("run");
    reservoir.reset().expect("reset");
    assert_eq!(
        reservoir.state().expect("state"),
        rest,
        "{}: reset",
        subject.name
    );

    let wanted = Array1::from_shape_fn(n, |_| rng.random_range(-0.9..0.9));
    reservoir.set_state(wanted.view()).expect("set_state");
    let got = reservoir.state().expect("state");
    let worst = got
        .iter()
        .zip(&wanted)
        .map(|(g, w)| (g - w).abs() / w.abs().max(f64::MIN_POSITIVE))
        .fold(0.0f64, f64::max);
    assert!(
        worst <= subject.state_rounding,
        "{}: set_state then state moved a value by {worst:.2e} relative",
        subject.name
    );

    let more = inputs(&mut rng, 25, k);
    let continued = reservoir.run(more.view()).expect("run");
    let reached = reservoir.state().expect("state");
    let mut again = build(subject);
    again.set_state(got.view()).expect("set_state");
    assert_eq!(
        again.run(more.view()).expect("run"),
        continued,
        "{}: a run from a set state",
        subject.name
    );
    assert_eq!(
        again.state().expect("state"),
        reached,
        "{}: the state it reaches",
        subject.name
    );
}

/// Two reservoirs built the same way run the same inputs to bit-identical states, and a run
/// split in two (with any chunking) is the run in one piece.
pub fn determinism(subject: &Subject<'_>) {
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("determinism"));
    let (mut a, mut b) = (build(subject), build(subject));
    let u = inputs(&mut rng, 300, a.input_size());
    let whole = a.run(u.view()).expect("run");
    assert_eq!(
        b.run(u.view()).expect("run"),
        whole,
        "{}: two builds",
        subject.name
    );
    let mut split = build(subject);
    let first = split.run(u.slice(s![..123, ..])).expect("run");
    let second = split.run(u.slice(s![123.., ..])).expect("run");
    assert_eq!(
        first,
        whole.slice(s![..123, ..]),
        "{}: first part",
        subject.name
    );
    assert_eq!(
        second,
        whole.slice(s![123.., ..]),
        "{}: second part",
        subject.name
    );
}

/// States within the subject's tolerance of the CPU reference's over a long run.
pub fn parity(subject: &Subject<'_>) {
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("parity"));
    let (mut got, mut expected) = (build(subject), reference(subject));
    let u = inputs(&mut rng, 1000, got.input_size());
    let (g, e) = (
        got.run(u.view()).expect("run"),
        expected.run(u.view()).expect("reference run"),
    );
    assert_close(subject, "1000 steps", g.view(), e.view());
}

/// A spike pattern runs as its binned counts do, one step per bin of `dt_ms`.
pub fn spike_patterns(subject: &Subject<'_>) {
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("spike_patterns"));
    let mut reservoir = build(subject);
    let k = reservoir.input_size();
    let spikes = (0..40)
        .map(|_| Spike {
            neuron_id: rng.random_range(0..k as u32),
            time_ms: rng.random_range(0.0..30.0),
            amplitude: 1.0,
        })
        .collect();
    let pattern = SpikePattern::new(spikes, k, 30.0).expect("pattern");
    for dt_ms in [1.0, 2.5] {
        reservoir.reset().expect("reset");
        let from_pattern = reservoir.run_pattern(&pattern, dt_ms).expect("run_pattern");
        let mut again = build(subject);
        let binned = pattern.to_input_matrix(dt_ms).expect("bins");
        let from_bins = again.run(binned.view()).expect("run");
        assert_eq!(from_pattern, from_bins, "{}: dt {dt_ms} ms", subject.name);
    }
}

/// `run_many`: every sequence from the rest state, in order, whatever the lengths, within the
/// tolerance of the reference running them one after another; the reservoir is left at rest;
/// a bad sequence anywhere is refused before any is handed out.
pub fn many_sequences(subject: &Subject<'_>) {
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("many_sequences"));
    let mut reservoir = build(subject);
    let k = reservoir.input_size();
    reservoir.reset().expect("reset");
    let rest = reservoir.state().expect("state");
    let sequences: Vec<Array2<f64>> = [40, 7, 1, 63, 40]
        .iter()
        .map(|&t| inputs(&mut rng, t, k))
        .collect();
    let views: Vec<ArrayView2<f64>> = sequences.iter().map(|s| s.view()).collect();
    // A state left from an earlier run must not leak into the first sequence.
    reservoir.run(inputs(&mut rng, 10, k).view()).expect("run");
    let mut got = Vec::new();
    reservoir
        .run_many(&views, &mut |index, states| {
            got.push((index, states.to_owned()));
            Ok(())
        })
        .expect("run_many");
    let order: Vec<usize> = got.iter().map(|(i, _)| *i).collect();
    assert_eq!(
        order,
        vec![0, 1, 2, 3, 4],
        "{}: sequences in order",
        subject.name
    );
    assert_eq!(
        reservoir.state().expect("state"),
        rest,
        "{}: left at rest",
        subject.name
    );
    let mut expected = reference(subject);
    for ((_, states), inputs) in got.iter().zip(&views) {
        expected.reset().expect("reset");
        let alone = expected.run(*inputs).expect("reference run");
        assert_within(
            subject,
            "a sequence of run_many",
            states.view(),
            alone.view(),
            subject.tolerance.max(subject.sequence_rounding),
        );
    }
    let wrong = inputs(&mut rng, 5, k + 1);
    let mut visited = 0;
    let refused = reservoir.run_many(&[views[0], wrong.view()], &mut |_, _| {
        visited += 1;
        Ok(())
    });
    assert!(
        refused.as_ref().is_err_and(is_shape),
        "{}: a sequence of K + 1 columns",
        subject.name
    );
    assert_eq!(
        visited, 0,
        "{}: refused before any sequence was handed out",
        subject.name
    );
    let stop = reservoir.run_many(&views, &mut |index, _| {
        if index == 2 {
            Err(ReservoirError::invalid("visitor", "stop here"))
        } else {
            Ok(())
        }
    });
    assert!(
        stop.as_ref()
            .is_err_and(|e| e.to_string().contains("stop here")),
        "{}: the visitor's error is returned: {stop:?}",
        subject.name
    );
}

/// Ridge sums through `fit::accumulate_run` (the backend's own accumulation) equal those of the
/// reference's states, to the tolerance (and to the rounding of f64 sums added in another
/// order); the reservoir ends where a plain run ends.
pub fn ridge_sums(subject: &Subject<'_>) {
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("ridge_sums"));
    let (mut got, mut expected) = (build(subject), reference(subject));
    let (n, k) = (got.size(), got.input_size());
    let u = inputs(&mut rng, 700, k);
    let y = inputs(&mut rng, 700, 2);
    let mut sums = RidgeAccumulator::new(n, 2, reservoir_core::Par::Seq).expect("sums");
    accumulate_run(got.as_mut(), u.view(), y.view(), 50, &mut sums).expect("accumulate_run");
    let mut reference_sums = RidgeAccumulator::new(n, 2, reservoir_core::Par::Seq).expect("sums");
    let states = expected.run(u.view()).expect("reference run");
    reference_sums
        .add(states.slice(s![50.., ..]), y.slice(s![50.., ..]))
        .expect("add");
    assert_eq!(sums.rows(), 650, "{}: rows after the washout", subject.name);
    let tolerance = subject.tolerance.max(SUM_ORDER);
    let (gram, reference_gram) = (sums.gram(), reference_sums.gram());
    assert_within(
        subject,
        "XᵀX",
        gram.view(),
        reference_gram.view(),
        tolerance,
    );
    let (cross, reference_cross) = (sums.cross(), reference_sums.cross());
    assert_within(
        subject,
        "XᵀY",
        cross.view(),
        reference_cross.view(),
        tolerance,
    );
    let end = got.state().expect("state");
    let reference_end = Array2::from_shape_vec((1, n), states.row(699).to_vec()).expect("row");
    assert_close(
        subject,
        "the state after accumulating",
        end.insert_axis(ndarray::Axis(0)).view(),
        reference_end.view(),
    );
    let washout_too_long = accumulate_run(got.as_mut(), u.view(), y.view(), 700, &mut sums);
    assert!(
        washout_too_long.is_err(),
        "{}: a washout that leaves no rows",
        subject.name
    );
}

/// Every check, in order.
pub fn all(subject: &Subject<'_>) {
    shapes(subject);
    errors(subject);
    state_round_trip(subject);
    determinism(subject);
    parity(subject);
    spike_patterns(subject);
    many_sequences(subject);
    ridge_sums(subject);
}
