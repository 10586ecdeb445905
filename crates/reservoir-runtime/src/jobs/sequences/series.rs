//! Regression over many series: each series runs from the zero state, its first `washout`
//! rows settle the reservoir and are left out, and the rest of every series feed one ridge
//! fit. No state carries from one series to the next; the last series' end state is kept, so
//! that a series continuing it can be predicted without a transient.

use ndarray::{concatenate, s, Array1, Array2, ArrayView2, Axis};

use reservoir_core::checks::check_targets;
use reservoir_core::fit::accumulate_run;
use reservoir_core::readout::RidgeAccumulator;
use reservoir_core::{Reservoir, ReservoirError, Result};

/// An error unless every series has as many target rows as input rows, more rows than
/// `washout` and finite targets (rows counted from each series' first, washout included);
/// `ids` name the series.
///
/// # Errors
/// An invalid-input error naming the first series at fault.
pub fn check_series(
    inputs: &[ArrayView2<f64>],
    targets: &[ArrayView2<f64>],
    washout: usize,
    ids: &[String],
) -> Result<()> {
    if inputs.len() != targets.len() {
        return Err(ReservoirError::shape(
            "series targets",
            format!("{} series", inputs.len()),
            format!("{} series", targets.len()),
        ));
    }
    let name = |i: usize| ids.get(i).map_or_else(|| i.to_string(), String::clone);
    for (i, (u, y)) in inputs.iter().zip(targets).enumerate() {
        if u.nrows() != y.nrows() {
            return Err(ReservoirError::invalid(
                "series",
                format!(
                    "series `{}` has {} input rows and {} target rows",
                    name(i),
                    u.nrows(),
                    y.nrows()
                ),
            ));
        }
        if u.nrows() <= washout {
            return Err(ReservoirError::invalid(
                "series",
                format!(
                    "series `{}` has {} rows, and `readout.washout` = {washout} leaves none to fit \
                     or score",
                    name(i),
                    u.nrows()
                ),
            ));
        }
        check_targets("series", &format!("series `{}` targets", name(i)), y)?;
    }
    Ok(())
}

/// Runs every series from the zero state and adds its rows after `washout` to the accumulator
/// of its group (`group[i]` for series i, below `sums.len()`): one fit's sums, or one per
/// validation fold. `progress(series_done, series)` is called as series finish. Returns the
/// last series' end state; the reservoir is left at the zero state.
///
/// # Errors
/// Series that [`check_series`] rejects, a group out of range, and any error of the runs.
pub fn add_series(
    reservoir: &mut dyn Reservoir,
    inputs: &[ArrayView2<f64>],
    targets: &[ArrayView2<f64>],
    washout: usize,
    group: &[usize],
    sums: &mut [RidgeAccumulator],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Array1<f64>> {
    check_series(inputs, targets, washout, &[])?;
    if group.len() != inputs.len() || group.iter().any(|&g| g >= sums.len()) {
        return Err(ReservoirError::invalid(
            "series groups",
            "every series needs a group below the number of accumulators",
        ));
    }
    if let ([series], [series_targets], [g]) = (inputs, targets, group) {
        // One series: streamed into its sums as it runs, so its states are never held whole
        // and the sums are added beside the run.
        reservoir.reset()?;
        accumulate_run(reservoir, *series, *series_targets, washout, &mut sums[*g])?;
        progress(1, 1);
        let end = reservoir.state()?;
        reservoir.reset()?;
        return Ok(end);
    }
    let total = inputs.len();
    let mut end = Array1::zeros(reservoir.size());
    reservoir.run_many(inputs, &mut |i, states| {
        sums[group[i]].add(
            states.slice(s![washout.., ..]),
            targets[i].slice(s![washout.., ..]),
        )?;
        if i + 1 == total {
            end.assign(&states.row(states.nrows() - 1));
        }
        progress(i + 1, total);
        Ok(())
    })?;
    Ok(end)
}

/// The rows after `washout` of every series, stacked: what a multi-series fit is scored on.
///
/// # Errors
/// Series with different column counts.
pub fn rows_after_washout(series: &[ArrayView2<f64>], washout: usize) -> Result<Array2<f64>> {
    let parts: Vec<ArrayView2<f64>> = series
        .iter()
        .map(|a| a.slice_move(s![washout.min(a.nrows()).., ..]))
        .collect();
    concatenate(Axis(0), &parts)
        .map_err(|e| ReservoirError::invalid("series rows", format!("cannot stack them: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;
    use reservoir_core::{cpu_reservoir, ReservoirParams, ReservoirWeights};

    #[test]
    fn each_series_runs_from_zero_and_skips_its_own_washout() {
        let config = ReservoirParams::new()
            .size(10)
            .input_size(1)
            .check()
            .expect("config");
        let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
        let mut reservoir =
            cpu_reservoir(&config, weights, reservoir_core::Par::all()).expect("reservoir");
        let a = Array2::from_shape_fn((6, 1), |(t, _)| (t as f64).sin());
        let b = Array2::from_shape_fn((4, 1), |(t, _)| (t as f64).cos());
        let (ya, yb) = (a.mapv(|v| 2.0 * v), b.mapv(|v| -v));
        let mut sums = vec![RidgeAccumulator::new(10, 1, reservoir_core::Par::Seq).expect("sums")];
        let end = add_series(
            reservoir.as_mut(),
            &[a.view(), b.view()],
            &[ya.view(), yb.view()],
            2,
            &[0, 0],
            &mut sums,
            &mut |_, _| {},
        )
        .expect("sums");
        assert_eq!(reservoir.state().expect("state"), Array1::<f64>::zeros(10));
        // The same rows by hand: each series from the zero state, rows 2.. of each.
        let mut expected = RidgeAccumulator::new(10, 1, reservoir_core::Par::Seq).expect("sums");
        for (u, y) in [(&a, &ya), (&b, &yb)] {
            reservoir.reset().expect("reset");
            let states = reservoir.run(u.view()).expect("run");
            expected
                .add(states.slice(s![2.., ..]), y.slice(s![2.., ..]))
                .expect("add");
        }
        // The end state is the last series' (b's), run from zero.
        assert_eq!(end, reservoir.state().expect("state"));
        assert_eq!(sums[0].rows(), 6);
        assert_eq!(sums[0].gram(), expected.gram());
        assert_eq!(sums[0].cross(), expected.cross());

        let short = check_series(&[b.view()], &[yb.view()], 4, &["walk-3".into()])
            .expect_err("all washout")
            .to_string();
        assert!(
            short.contains("`walk-3`") && short.contains("4 rows"),
            "{short}"
        );
    }

    #[test]
    fn a_target_that_is_not_finite_is_named_by_its_row_in_the_series() {
        let u = Array2::<f64>::zeros((400, 1));
        let mut y = Array2::<f64>::zeros((400, 1));
        y[(300, 0)] = f64::NAN;
        let message = check_series(&[u.view()], &[y.view()], 100, &["s".into()])
            .expect_err("a NaN target")
            .to_string();
        assert!(
            message.contains("series `s` targets row 300, column 0"),
            "{message}"
        );
    }
}
