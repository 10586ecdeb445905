//! Ridge readouts solved on the device (`DeviceRidgeSums::solve_and_score`: the kernels of
//! `ridge.cu` and the blocked Cholesky around them) against the host's solve of the same sums
//! (`RidgeAccumulator::solve` and `score`), on fresh random features.

use crate::common;

use common::{fresh_seed, gpu};
use gpu_reservoir::{DeviceRidgeSums, GpuDevice};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::lanes::{LaneOutcomes, LaneScores, LaneSums};

/// Relative difference, against a floor for values near zero.
fn close(got: f64, expected: f64, bound: f64) -> bool {
    (got - expected).abs() <= bound * expected.abs().max(1e-3)
}

/// Difference of squared correlations (in [0, 1]) within `bound` absolute: the r² of a nearly
/// constant prediction comes from differences of nearly equal sums, so its rounding is a
/// fraction of 1, not of r² (F = 1, M = 1, ridge 0 once gave 0.0137374617 on the device
/// against 0.0137374587 on the host, 2.2e-7 apart relative, 3e-9 absolute).
fn close_r2(got: f64, expected: f64, bound: f64) -> bool {
    (got - expected).abs() <= bound
}

/// Training and validation sums of `blocks` random blocks of `features` features on the
/// device, with `outputs` targets linear in the features plus noise; feature `zero` (if any)
/// is 0 on every row.
fn random_sums(
    device: &GpuDevice,
    rng: &mut ChaCha8Rng,
    (features, outputs, blocks): (usize, usize, usize),
    rows: [usize; 2],
    zero: Option<usize>,
) -> [DeviceRidgeSums; 2] {
    let width = blocks * features;
    let weights: Array2<f64> =
        Array2::from_shape_fn((features, outputs), |_| rng.random_range(-1.0..1.0));
    rows.map(|rows| {
        let x = Array2::from_shape_fn((rows, width), |(_, j)| {
            if zero == Some(j % features) {
                0.0
            } else {
                rng.random_range(-1.0..1.0)
            }
        });
        let noise = Array2::from_shape_fn((rows, outputs), |_| rng.random_range(-0.1..0.1));
        let y = x.slice(ndarray::s![.., ..features]).dot(&weights) + noise + 3.0;
        let mut sums = DeviceRidgeSums::new(device, features, outputs, blocks)
            .expect("sums")
            .with_target_shift(&vec![2.5; outputs])
            .expect("shift");
        sums.add_host(x.view(), y.view()).expect("add");
        sums
    })
}

/// The host's outcomes of the same sums.
fn host_outcomes([train, validation]: &[DeviceRidgeSums; 2], ridges: &[f64]) -> LaneOutcomes {
    let lanes: Vec<LaneSums> = train
        .download()
        .expect("train")
        .into_iter()
        .zip(validation.download().expect("validation"))
        .map(|(train, validation)| LaneSums { train, validation })
        .collect();
    lanes
        .iter()
        .map(|lane| ridges.iter().map(|&ridge| lane.score(ridge)).collect())
        .collect()
}

/// Asserts that every outcome agrees: the same failures, scores within `bound`.
fn assert_agree(got: &LaneOutcomes, expected: &LaneOutcomes, bound: f64, what: &str) {
    assert_eq!(got.len(), expected.len(), "{what}: lanes");
    for (lane, (got, expected)) in got.iter().zip(expected).enumerate() {
        assert_eq!(got.len(), expected.len(), "{what}: ridges of lane {lane}");
        for (ridge, (got, expected)) in got.iter().zip(expected).enumerate() {
            let at = format!("{what}, lane {lane}, ridge {ridge}");
            match (got, expected) {
                (Ok(got), Ok(expected)) => {
                    assert!(
                        close(got.train_nrmse, expected.train_nrmse, bound),
                        "{at}: train NRMSE {} vs {}",
                        got.train_nrmse,
                        expected.train_nrmse
                    );
                    let (g, e) = (&got.validation, &expected.validation);
                    assert_eq!(g.rows, e.rows, "{at}");
                    for (a, b) in g.nrmse.iter().zip(&e.nrmse) {
                        assert!(close(*a, *b, bound), "{at}: validation NRMSE {a} vs {b}");
                    }
                    for (a, b) in g.squared_correlation.iter().zip(&e.squared_correlation) {
                        assert!(close_r2(*a, *b, bound), "{at}: r² {a} vs {b}");
                    }
                }
                (Err(got), Err(expected)) => {
                    assert_eq!(got.to_string(), expected.to_string(), "{at}")
                }
                (got, expected) => panic!("{at}: {got:?} vs {expected:?}"),
            }
        }
    }
}

fn bits(outcomes: &LaneOutcomes) -> Vec<u64> {
    let of = |s: &LaneScores| {
        let mut v = vec![s.train_nrmse.to_bits()];
        v.extend(s.validation.nrmse.iter().map(|x| x.to_bits()));
        v.extend(s.validation.squared_correlation.iter().map(|x| x.to_bits()));
        v
    };
    outcomes
        .iter()
        .flatten()
        .flat_map(|o| o.as_ref().map_or_else(|_| vec![u64::MAX], of))
        .collect()
}

#[test]
fn device_solves_agree_with_the_host_at_every_padding() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("ridge_solve_shapes"));
    let ridges = [0.0, 1e-6, 1e-2];
    // F + 1 below one block, exactly one block, just over one, and three blocks; one and
    // three outputs.
    for (features, outputs) in [(1, 1), (63, 3), (64, 1), (130, 3)] {
        let sums = random_sums(
            &device,
            &mut rng,
            (features, outputs, 3),
            [2 * features + 40, features + 30],
            None,
        );
        let got = sums[0].solve_and_score(&sums[1], &ridges).expect("device");
        let expected = host_outcomes(&sums, &ridges);
        let what = format!("F = {features}, M = {outputs}");
        assert_agree(&got, &expected, 1e-7, &what);
        let again = sums[0].solve_and_score(&sums[1], &ridges).expect("again");
        assert!(bits(&again) == bits(&got), "{what}: a second solve differs");
    }
}

#[test]
fn a_singular_system_fails_as_on_the_host_and_the_others_are_solved() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("ridge_solve_singular"));
    // Feature 5 is 0 on every row: with ridge 0 its pivot is 0 on the host and the device.
    let sums = random_sums(&device, &mut rng, (70, 2, 2), [200, 80], Some(5));
    let ridges = [0.0, 1e-3];
    let got = sums[0].solve_and_score(&sums[1], &ridges).expect("device");
    let expected = host_outcomes(&sums, &ridges);
    for lane in &got {
        let error = lane[0].as_ref().expect_err("ridge 0 is singular");
        assert!(
            error.to_string().contains("not positive definite"),
            "{error}"
        );
        assert!(lane[1].is_ok());
    }
    assert_agree(&got, &expected, 1e-7, "a zero feature");
    // A negative ridge is refused per (lane, ridge), as the host refuses it.
    let refused = sums[0].solve_and_score(&sums[1], &[-1.0]).expect("device");
    let error = refused[0][0].as_ref().expect_err("negative ridge");
    assert!(error.to_string().contains("ridge must be >= 0"), "{error}");
}

#[test]
fn lanes_beyond_one_turn_of_device_memory_are_solved_in_turns_alike() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("ridge_solve_turns"));
    // 60 lanes of 600 features and 3 ridge values take about 1.2 GiB of systems: two turns.
    let sums = random_sums(&device, &mut rng, (600, 2, 60), [1200, 100], None);
    let ridges = [0.0, 1e-3, 1.0];
    let got = sums[0].solve_and_score(&sums[1], &ridges).expect("device");
    let expected = host_outcomes(&sums, &ridges);
    assert_agree(&got, &expected, 1e-6, "60 lanes of 600 features");
}

#[test]
fn sums_of_other_shapes_are_refused() {
    let Some(device) = gpu() else { return };
    let train = DeviceRidgeSums::new(&device, 10, 1, 2).expect("sums");
    let validation = DeviceRidgeSums::new(&device, 10, 1, 3).expect("sums");
    let error = train
        .solve_and_score(&validation, &[1e-3])
        .expect_err("shapes differ");
    assert!(error.to_string().contains("differ in shape"), "{error}");
}
