//! Prediction against target over the first test rows, one panel per target column.

use std::path::Path;

use ndarray::{s, ArrayView2};
use plotters::prelude::*;

use super::{msg, padded, render, tick_label, Staged, FONT, MAX_SERIES_ROWS};
use crate::error::{CliError, Result};

/// Most target columns drawn (one panel each); further columns are left out of the picture.
const MAX_PANELS: usize = 4;
/// Colour of the true target.
const TARGET: RGBColor = RGBColor(31, 119, 180);
/// Colour of the prediction.
const PREDICTION: RGBColor = RGBColor(214, 39, 40);

/// Draws a PNG of `predictions` against `targets` (rows × columns named `names`) over the
/// first [`MAX_SERIES_ROWS`] rows, under the title `title`.
pub fn series(
    path: &Path,
    title: &str,
    names: &[String],
    predictions: ArrayView2<'_, f64>,
    targets: ArrayView2<'_, f64>,
) -> Result<Staged> {
    if predictions.dim() != targets.dim() || names.len() != targets.ncols() || names.is_empty() {
        return Err(CliError::Plot {
            path: path.to_path_buf(),
            message: format!(
                "{} predictions, {} targets and {} names do not match",
                predictions.ncols(),
                targets.ncols(),
                names.len()
            ),
        });
    }
    let rows = targets.nrows().min(MAX_SERIES_ROWS);
    let shown = if rows < targets.nrows() {
        format!("first {rows} of {} test rows", targets.nrows())
    } else {
        format!("{rows} test rows")
    };
    let title = format!("{title}: prediction vs target, {shown}");
    let panels = names.len().min(MAX_PANELS);
    render(path, |root| {
        let area = root.titled(&title, (FONT, 22)).map_err(msg)?;
        for (k, panel) in area.split_evenly((panels, 1)).iter().enumerate() {
            let target = targets.slice(s![..rows, k]);
            let predicted = predictions.slice(s![..rows, k]);
            let (lo, hi) = target
                .iter()
                .chain(predicted.iter())
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                    (lo.min(v), hi.max(v))
                });
            let y_range = padded(lo, hi);
            let y_span = y_range.end - y_range.start;
            let mut chart = ChartBuilder::on(panel)
                .margin(10)
                .x_label_area_size(35)
                .y_label_area_size(70)
                .build_cartesian_2d(0f64..rows.saturating_sub(1).max(1) as f64, y_range)
                .map_err(msg)?;
            chart
                .configure_mesh()
                .x_desc("test row")
                .y_desc(names[k].as_str())
                .x_label_formatter(&|v| format!("{v:.0}"))
                .y_label_formatter(&|v| tick_label(*v, y_span))
                .label_style((FONT, 14))
                .axis_desc_style((FONT, 16))
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
                .map_err(msg)?;
            let line = |values: ndarray::ArrayView1<'_, f64>| {
                values
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| (i as f64, v))
                    .collect::<Vec<_>>()
            };
            chart
                .draw_series(LineSeries::new(line(target), TARGET.stroke_width(2)))
                .map_err(msg)?
                .label(format!("target {}", names[k]))
                .legend(|(x, y)| {
                    PathElement::new(vec![(x, y), (x + 24, y)], TARGET.stroke_width(2))
                });
            chart
                .draw_series(LineSeries::new(line(predicted), PREDICTION.stroke_width(1)))
                .map_err(msg)?
                .label("prediction")
                .legend(|(x, y)| {
                    PathElement::new(vec![(x, y), (x + 24, y)], PREDICTION.stroke_width(2))
                });
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .label_font((FONT, 14))
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(msg)?;
        }
        Ok(())
    })
}
