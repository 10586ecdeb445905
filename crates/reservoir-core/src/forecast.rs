//! What a model of series predicts, through its output links ([`Architecture`]): row after row
//! of new inputs, series after series, and in closed loop (its outputs fed back as its next
//! inputs). Without links the states run in chunks and the readout maps them; with output
//! feedback the reservoir and the readout take turns, one step at a time, as the fed-back
//! output of each step is the readout's output of the step before.
//!
//! Training goes the other way: [`Architecture::teacher_inputs`] gives the reservoir the true
//! previous targets as feedback (teacher forcing) and [`Architecture::readout_targets`] what
//! the readout learns (increments over the inputs, when asked for).

use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2, CowArray, Ix2};
use serde::{Deserialize, Serialize};

use crate::architecture::Architecture;
use crate::error::{ReservoirError, Result};
use crate::memory::try_vec;
use crate::readout::LinearReadout;
use crate::reservoir::Reservoir;

/// Rows of states held at once while predicting: memory stays O(chunk · N) for any input length.
const PREDICT_CHUNK_ROWS: usize = 4096;

/// Where a prediction continues from besides the reservoir's state: the input of the last
/// step run (what an increment of the next output is added to, when the model predicts
/// increments) and the model's output at that step (what output feedback gives the next
/// step, and in closed loop its next input). Both are zero before the first step, as in
/// training.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Continuation {
    /// The input of the last step (K).
    pub last_input: Array1<f64>,
    /// The model's output at the last step (M).
    pub last_output: Array1<f64>,
}

impl Continuation {
    /// Before the first step: zero input and output.
    pub fn zero(inputs: usize, outputs: usize) -> Self {
        Self {
            last_input: Array1::zeros(inputs),
            last_output: Array1::zeros(outputs),
        }
    }
}

impl Architecture {
    /// What the reservoir runs on while training on `inputs` (T × K) toward `targets` (T × M):
    /// the inputs themselves, or with output feedback each row followed by the previous row's
    /// targets times the feedback's scaling (zero before the first row).
    ///
    /// # Errors
    /// A shape error unless the rows agree and, with feedback, M is the fed-back outputs.
    pub fn teacher_inputs<'a>(
        &self,
        inputs: ArrayView2<'a, f64>,
        targets: ArrayView2<f64>,
    ) -> Result<CowArray<'a, f64, Ix2>> {
        let Some(feedback) = self.feedback() else {
            return Ok(inputs.into());
        };
        let (rows, k, m) = (inputs.nrows(), inputs.ncols(), feedback.outputs());
        if targets.dim() != (rows, m) {
            return Err(ReservoirError::shape(
                "training targets fed back",
                format!("{rows} x {m}"),
                format!("{} x {}", targets.nrows(), targets.ncols()),
            ));
        }
        let mut teacher = zeroed("the teacher-forced inputs", rows, k + m)?;
        teacher.slice_mut(s![.., ..k]).assign(&inputs);
        if rows > 1 {
            let previous = targets.slice(s![..rows - 1, ..]);
            teacher
                .slice_mut(s![1.., k..])
                .assign(&(&previous * feedback.scaling()));
        }
        // Named here: the reservoir would report these values as inputs of the data's rows.
        let fed_back = teacher.slice(s![.., k..]);
        if let Some(((row, _), value)) = fed_back
            .indexed_iter()
            .find(|(_, v)| !v.is_finite() || v.abs() > f64::from(f32::MAX))
        {
            return Err(ReservoirError::invalid(
                "model.feedback",
                format!(
                    "the target of row {row} times the scaling {} is {value:e}, beyond \
                     ±3.4028e38 (the range of f32 arithmetic): lower the scaling",
                    feedback.scaling()
                ),
            ));
        }
        Ok(teacher.into())
    }

    /// What the readout learns from `targets`: the targets themselves, or with increments each
    /// target minus the same row's input.
    ///
    /// # Errors
    /// A shape error when increments are asked for and the targets are not as wide as the
    /// inputs.
    pub fn readout_targets<'a>(
        &self,
        inputs: ArrayView2<f64>,
        targets: ArrayView2<'a, f64>,
    ) -> Result<CowArray<'a, f64, Ix2>> {
        if !self.increments() {
            return Ok(targets.into());
        }
        check_increments(inputs.ncols(), targets.ncols())?;
        if inputs.nrows() != targets.nrows() {
            return Err(ReservoirError::shape(
                "training targets",
                format!("{} rows", inputs.nrows()),
                format!("{} rows", targets.nrows()),
            ));
        }
        Ok((&targets - &inputs).into())
    }

    /// The model's output for one step's `state` row (N) and `input` (K): the readout's, plus
    /// the input with increments.
    ///
    /// # Errors
    /// Any error of the readout.
    pub fn output_at(
        &self,
        readout: &LinearReadout,
        state: ArrayView1<f64>,
        input: ArrayView1<f64>,
    ) -> Result<Array1<f64>> {
        let output = readout.predict(state.insert_axis(ndarray::Axis(0)))?;
        let mut output = output.row(0).to_owned();
        if self.increments() {
            check_increments(input.len(), output.len())?;
            output += &input;
        }
        Ok(output)
    }

    /// The model's outputs for every row of `inputs` (T × K), `reservoir` (this model's, on
    /// any device) continuing from its current state and `from`, which is left at the last
    /// row; `progress(rows_done, rows)` as the rows go.
    ///
    /// # Errors
    /// A readout that does not fit the reservoir, inputs or a continuation of the wrong
    /// width; any error of the runs (inputs that are not finite, among others).
    pub fn predict(
        &self,
        reservoir: &mut dyn Reservoir,
        readout: &LinearReadout,
        inputs: ArrayView2<f64>,
        from: &mut Continuation,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Array2<f64>> {
        let (rows, m) = (inputs.nrows(), readout.n_outputs());
        self.check_prediction(reservoir, readout, inputs.ncols(), from)?;
        let mut outputs = zeroed("the predictions", rows, m)?;
        if self.feedback().is_some() {
            let mut step = Array2::zeros((1, reservoir.input_size()));
            for (t, input) in inputs.rows().into_iter().enumerate() {
                let output = self.step(reservoir, readout, &mut step, input, from)?;
                outputs.row_mut(t).assign(&output);
                if (t + 1) % PREDICT_CHUNK_ROWS == 0 || t + 1 == rows {
                    progress(t + 1, rows);
                }
            }
            return Ok(outputs);
        }
        for start in (0..rows).step_by(PREDICT_CHUNK_ROWS) {
            let end = (start + PREDICT_CHUNK_ROWS).min(rows);
            let chunk = inputs.slice(s![start..end, ..]);
            let states = reservoir.run(chunk)?;
            let mut predicted = readout.predict(states.view())?;
            if self.increments() {
                predicted += &chunk;
            }
            outputs.slice_mut(s![start..end, ..]).assign(&predicted);
            progress(end, rows);
        }
        if let Some(last) = rows.checked_sub(1) {
            from.last_input.assign(&inputs.row(last));
            from.last_output.assign(&outputs.row(last));
        }
        Ok(outputs)
    }

    /// The model's outputs for every row of every series of `inputs`, each from the zero state
    /// (and a zero [`Continuation`]); `progress(series_done, series)`. Without feedback the
    /// series run through [`Reservoir::run_many`] (a backend's batched path).
    ///
    /// # Errors
    /// As [`Architecture::predict`].
    pub fn predict_series(
        &self,
        reservoir: &mut dyn Reservoir,
        readout: &LinearReadout,
        inputs: &[ArrayView2<f64>],
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<Array2<f64>>> {
        let total = inputs.len();
        let mut predictions = Vec::with_capacity(total);
        let zero = Continuation::zero(self.input_size(), readout.n_outputs());
        if self.feedback().is_some() {
            for (i, series) in inputs.iter().enumerate() {
                reservoir.reset()?;
                let mut from = zero.clone();
                predictions.push(self.predict(
                    reservoir,
                    readout,
                    *series,
                    &mut from,
                    &mut |_, _| {},
                )?);
                progress(i + 1, total);
            }
            reservoir.reset()?;
            return Ok(predictions);
        }
        for series in inputs {
            self.check_prediction(reservoir, readout, series.ncols(), &zero)?;
        }
        reservoir.run_many(inputs, &mut |i, states| {
            let mut predicted = readout.predict(states)?;
            if self.increments() {
                predicted += &inputs[i];
            }
            predictions.push(predicted);
            progress(i + 1, total);
            Ok(())
        })?;
        Ok(predictions)
    }

    /// `steps` values generated in closed loop: each step's input is the model's output of
    /// the step before, the first being `from`'s last output (the value after the rows run
    /// so far), and row i of the result is the output after i + 1 steps. The model must
    /// predict its own inputs (as many outputs as inputs).
    ///
    /// # Errors
    /// A model whose outputs are not its inputs; any error of the run (a prediction that
    /// diverged to a non-finite value, among others).
    pub fn closed_loop(
        &self,
        reservoir: &mut dyn Reservoir,
        readout: &LinearReadout,
        from: &mut Continuation,
        steps: usize,
    ) -> Result<Array2<f64>> {
        let k = self.input_size();
        if readout.n_outputs() != k {
            return Err(ReservoirError::shape(
                "closed-loop generation: outputs fed back as inputs",
                format!("{k} outputs (one per input)"),
                format!("{} outputs", readout.n_outputs()),
            ));
        }
        self.check_prediction(reservoir, readout, k, from)?;
        let mut outputs = zeroed("the closed-loop outputs", steps, k)?;
        let mut step = Array2::zeros((1, reservoir.input_size()));
        for mut row in outputs.rows_mut() {
            let input = from.last_output.clone();
            let output = self.step(reservoir, readout, &mut step, input.view(), from)?;
            row.assign(&output);
        }
        Ok(outputs)
    }

    /// One step: `input` (beside the fed-back last output, with feedback) through the
    /// reservoir, then the readout; `from` moves on to it. `step` is the reservoir's one-row
    /// input, reused.
    fn step(
        &self,
        reservoir: &mut dyn Reservoir,
        readout: &LinearReadout,
        step: &mut Array2<f64>,
        input: ArrayView1<f64>,
        from: &mut Continuation,
    ) -> Result<Array1<f64>> {
        let k = input.len();
        step.slice_mut(s![0, ..k]).assign(&input);
        if let Some(feedback) = self.feedback() {
            step.slice_mut(s![0, k..])
                .assign(&(&from.last_output * feedback.scaling()));
        }
        let states = reservoir.run(step.view())?;
        let output = self.output_at(readout, states.row(0), input)?;
        from.last_input.assign(&input);
        from.last_output.assign(&output);
        Ok(output)
    }

    /// An error unless `readout` reads `reservoir`'s states, the inputs have K columns, the
    /// outputs suit the links, and `from` has K inputs and M outputs.
    fn check_prediction(
        &self,
        reservoir: &dyn Reservoir,
        readout: &LinearReadout,
        inputs: usize,
        from: &Continuation,
    ) -> Result<()> {
        let (k, m) = (self.input_size(), readout.n_outputs());
        if readout.n_features() != reservoir.size() {
            return Err(ReservoirError::shape(
                "readout features",
                reservoir.size(),
                readout.n_features(),
            ));
        }
        if inputs != k {
            return Err(ReservoirError::shape("input columns", k, inputs));
        }
        if let Some(feedback) = self.feedback() {
            if feedback.outputs() != m {
                return Err(ReservoirError::shape(
                    "readout outputs fed back",
                    feedback.outputs(),
                    m,
                ));
            }
        }
        if self.increments() {
            check_increments(k, m)?;
        }
        if from.last_input.len() != k || from.last_output.len() != m {
            return Err(ReservoirError::shape(
                "the last input and output to continue from",
                format!("{k} and {m} values"),
                format!(
                    "{} and {} values",
                    from.last_input.len(),
                    from.last_output.len()
                ),
            ));
        }
        Ok(())
    }
}

/// An error unless a model predicting increments has as many outputs as inputs.
fn check_increments(inputs: usize, outputs: usize) -> Result<()> {
    if inputs == outputs {
        return Ok(());
    }
    Err(ReservoirError::shape(
        "increments: one target per input",
        format!("{inputs} targets"),
        format!("{outputs} targets"),
    ))
}

/// A `rows` × `cols` array of zeros, allocated fallibly (the sizes are the caller's).
fn zeroed(what: &str, rows: usize, cols: usize) -> Result<Array2<f64>> {
    let len = rows.checked_mul(cols).ok_or_else(|| {
        ReservoirError::invalid(what, format!("{rows} rows of {cols} values do not fit"))
    })?;
    let values = try_vec(what, len, 0.0)?;
    Array2::from_shape_vec((rows, cols), values)
        .map_err(|e| ReservoirError::invalid(what, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::architecture::{Feedback, ReservoirKind};
    use crate::config::ReservoirParams;
    use crate::nvar::NvarParams;
    use crate::par::Par;
    use ndarray::{array, Array2};

    fn echo_state(inputs: usize) -> ReservoirKind {
        let config = ReservoirParams::new()
            .size(20)
            .input_size(inputs)
            .seed(9)
            .check();
        ReservoirKind::EchoState(config.expect("config"))
    }

    fn readout_of(features: usize, outputs: usize) -> LinearReadout {
        let weights = Array2::from_shape_fn((features, outputs), |(i, j)| {
            ((i * 7 + j) as f64).sin() * 0.1
        });
        LinearReadout::new(weights, Array1::from_elem(outputs, 0.05)).expect("readout")
    }

    fn inputs(rows: usize, k: usize) -> Array2<f64> {
        Array2::from_shape_fn((rows, k), |(t, c)| ((t as f64) * 0.4 + c as f64).sin())
    }

    #[test]
    fn teacher_forcing_puts_the_previous_targets_after_the_inputs() {
        let feedback = Feedback::new(1, 0.5).expect("feedback");
        let architecture = Architecture::new(echo_state(3))
            .with_feedback(Some(feedback))
            .expect("feedback");
        assert_eq!(architecture.input_size(), 2);
        let u = array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]];
        let y = array![[10.0], [20.0], [30.0]];
        let teacher = architecture
            .teacher_inputs(u.view(), y.view())
            .expect("teacher");
        assert_eq!(
            teacher,
            array![[1.0, 2.0, 0.0], [3.0, 4.0, 5.0], [5.0, 6.0, 10.0]]
        );
        assert!(architecture
            .teacher_inputs(u.view(), array![[1.0, 2.0]].view())
            .is_err());
        let huge = Architecture::new(echo_state(3))
            .with_feedback(Some(Feedback::new(1, 1e300).expect("feedback")))
            .expect("feedback");
        let refused = huge
            .teacher_inputs(u.view(), y.view())
            .expect_err("beyond f32");
        assert!(refused.to_string().contains("model.feedback"), "{refused}");
        let plain = Architecture::new(echo_state(2));
        let same = plain.teacher_inputs(u.view(), y.view()).expect("borrowed");
        assert!(same.is_view() && same.view() == u.view());
        // Increments: targets less inputs, and only for one target per input.
        let increments = Architecture::new(echo_state(2)).with_increments(true);
        let y2 = array![[2.0, 2.0], [5.0, 5.0], [4.0, 9.0]];
        let learned = increments
            .readout_targets(u.view(), y2.view())
            .expect("increments");
        assert_eq!(learned, array![[1.0, 0.0], [2.0, 1.0], [-1.0, 3.0]]);
        assert!(increments.readout_targets(u.view(), y.view()).is_err());
        assert!(Architecture::new(echo_state(1))
            .with_feedback(Some(feedback))
            .is_err_and(|e| e.field == "feedback"));
        assert!(Feedback::new(1, 0.0).is_err() && Feedback::new(0, 1.0).is_err());
        assert!(Feedback::new(1, f64::NAN).is_err());
    }

    /// With feedback, prediction is a loop of one-step runs, each fed the output before.
    #[test]
    fn feedback_predictions_feed_each_output_to_the_next_step() {
        let feedback = Feedback::new(2, 0.3).expect("feedback");
        let architecture = Architecture::new(echo_state(3))
            .with_feedback(Some(feedback))
            .expect("feedback");
        let weights = architecture.generate(&[]).expect("weights");
        let readout = readout_of(20, 2);
        let u = inputs(30, 1);
        let mut reservoir = architecture.cpu(&weights, Par::Seq).expect("build");
        let mut from = Continuation::zero(1, 2);
        let predicted = architecture
            .predict(
                reservoir.as_mut(),
                &readout,
                u.view(),
                &mut from,
                &mut |_, _| {},
            )
            .expect("predict");

        let mut by_hand = architecture.cpu(&weights, Par::Seq).expect("build");
        let mut previous = Array1::<f64>::zeros(2);
        for (t, row) in u.rows().into_iter().enumerate() {
            let step = array![[row[0], 0.3 * previous[0], 0.3 * previous[1]]];
            let states = by_hand.run(step.view()).expect("run");
            let output = readout.predict(states.view()).expect("readout");
            assert_eq!(output.row(0), predicted.row(t), "row {t}");
            previous = output.row(0).to_owned();
        }
        assert_eq!(from.last_output, previous);
        assert_eq!(from.last_input, u.row(29));
        // Split in two calls, the continuation carries the output across.
        let mut split = architecture.cpu(&weights, Par::Seq).expect("build");
        let mut from = Continuation::zero(1, 2);
        let first = architecture
            .predict(
                split.as_mut(),
                &readout,
                u.slice(s![..11, ..]),
                &mut from,
                &mut |_, _| {},
            )
            .expect("first");
        let rest = architecture
            .predict(
                split.as_mut(),
                &readout,
                u.slice(s![11.., ..]),
                &mut from,
                &mut |_, _| {},
            )
            .expect("rest");
        assert_eq!(first, predicted.slice(s![..11, ..]));
        assert_eq!(rest, predicted.slice(s![11.., ..]));
        // Many series: each from zero, as one series alone.
        let series = [u.view(), u.slice(s![..7, ..])];
        let each = architecture
            .predict_series(reservoir.as_mut(), &readout, &series, &mut |_, _| {})
            .expect("series");
        assert_eq!(each[0], predicted);
        assert_eq!(each[1], predicted.slice(s![..7, ..]));
    }

    #[test]
    fn increments_add_the_input_back_in_rows_series_and_closed_loop() {
        let nvar = NvarParams::new().delay(2).order(2).input_size(2).check();
        let architecture =
            Architecture::new(ReservoirKind::Nvar(nvar.expect("nvar"))).with_increments(true);
        let weights = architecture.generate(&[]).expect("weights");
        let width = architecture.size();
        let readout = readout_of(width, 2);
        let u = inputs(12, 2);
        let mut reservoir = architecture.cpu(&weights, Par::Seq).expect("build");
        let mut from = Continuation::zero(2, 2);
        let predicted = architecture
            .predict(
                reservoir.as_mut(),
                &readout,
                u.view(),
                &mut from,
                &mut |_, _| {},
            )
            .expect("predict");
        let mut plain = architecture.cpu(&weights, Par::Seq).expect("build");
        let states = plain.run(u.view()).expect("run");
        let expected = readout.predict(states.view()).expect("readout") + &u;
        assert_eq!(predicted, expected);
        let series = architecture
            .predict_series(plain.as_mut(), &readout, &[u.view()], &mut |_, _| {})
            .expect("series");
        assert_eq!(series[0], expected);
        // Closed loop: each value is the step's input plus the readout's increment.
        let generated = architecture
            .closed_loop(reservoir.as_mut(), &readout, &mut from, 3)
            .expect("closed loop");
        let mut by_hand = plain;
        by_hand.reset().expect("reset");
        by_hand.run(u.view()).expect("run");
        let mut value = expected.row(11).to_owned();
        for t in 0..3 {
            let states = by_hand
                .run(value.view().insert_axis(ndarray::Axis(0)))
                .expect("run");
            value = readout
                .predict(states.view())
                .expect("readout")
                .row(0)
                .to_owned()
                + &value;
            assert_eq!(generated.row(t), value, "step {t}");
        }
        let one_output = readout_of(width, 1);
        let mut from = Continuation::zero(2, 1);
        assert!(architecture
            .predict(
                reservoir.as_mut(),
                &one_output,
                u.view(),
                &mut from,
                &mut |_, _| {}
            )
            .is_err());
    }
}
