//! A spike raster of one sample of the spike task: background spikes, the planted template's
//! spikes, the template's window, and the detector's detections.

use std::path::Path;

use plotters::prelude::*;
use reservoir_core::detection::Detection;
use reservoir_core::spikes::SpikePattern;
use reservoir_runtime::config::SpikeClassificationOptions;
use reservoir_runtime::data::tasks::spikes::LabelledPattern;

use super::{msg, render, tick_label, PlotResult, Staged, FONT, WIDTH};
use crate::error::Result;

/// Colour of background spikes.
const BACKGROUND: RGBColor = RGBColor(90, 90, 90);
/// Colour of the planted template's spikes.
const PLANTED: RGBColor = RGBColor(214, 39, 40);
/// Colour of a detection naming the sample's class.
const RIGHT: RGBColor = RGBColor(44, 160, 44);
/// Colour of a detection naming another class.
const WRONG: RGBColor = RGBColor(148, 103, 189);
/// Colour of the window the template was planted in.
const WINDOW: RGBColor = RGBColor(255, 236, 170);

/// Draws a PNG raster of test sample `index` (`sample`, planted from `template`) with the
/// `detections` found in it.
pub fn raster(
    path: &Path,
    index: usize,
    sample: &LabelledPattern,
    template: &SpikePattern,
    options: &SpikeClassificationOptions,
    detections: &[Detection],
) -> Result<Staged> {
    let pattern = &sample.pattern;
    let planted = planted_spikes(pattern, template, options);
    let channels = pattern.n_neurons() as f64;
    let title = format!(
        "spike_classification: test sample {index} (class {}), {} spikes, {} detection{}",
        sample.label,
        pattern.spikes().len(),
        detections.len(),
        if detections.len() == 1 { "" } else { "s" }
    );
    render(path, |root| {
        let area = root.titled(&title, (FONT, 22)).map_err(msg)?;
        let (plot_area, legend_area) = area.split_horizontally(WIDTH - LEGEND_WIDTH);
        let mut chart = ChartBuilder::on(&plot_area)
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(0f64..pattern.duration_ms(), -0.5..channels + 1.5)
            .map_err(msg)?;
        chart
            .configure_mesh()
            .x_desc("time (ms)")
            .y_desc("input channel")
            .x_label_formatter(&|v| tick_label(*v, pattern.duration_ms()))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 16))
            .disable_y_mesh()
            .light_line_style(RGBColor(240, 240, 240))
            .draw()
            .map_err(msg)?;
        let (start, end) = (options.onset_ms, options.onset_ms + options.pattern_ms);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(start, -0.5), (end, channels - 0.5)],
                WINDOW.filled(),
            )))
            .map_err(msg)?;
        let tick = |time: f64, channel: u32, color: RGBColor, width: u32| {
            let c = f64::from(channel);
            PathElement::new(
                vec![(time, c - 0.4), (time, c + 0.4)],
                color.stroke_width(width),
            )
        };
        let spikes = pattern.spikes().iter().zip(&planted);
        chart
            .draw_series(spikes.map(|(s, &p)| {
                let (color, width) = if p { (PLANTED, 3) } else { (BACKGROUND, 2) };
                tick(s.time_ms, s.neuron_id, color, width)
            }))
            .map_err(msg)?;
        for (i, d) in detections.iter().enumerate() {
            let color = detection_color(d, sample.label);
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(d.time_ms, -0.5), (d.time_ms, channels - 0.5)],
                    color.stroke_width(2),
                )))
                .map_err(msg)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("T{}", d.template),
                    (d.time_ms, channels + 1.2 - 0.9 * (i % 2) as f64),
                    (FONT, 14).into_font().color(&color),
                )))
                .map_err(msg)?;
        }
        let marked = planted.iter().filter(|p| **p).count();
        let mut lines: Vec<(Swatch, String)> = vec![
            (
                Swatch::Band(WINDOW),
                format!("template window {start}–{end} ms"),
            ),
            (Swatch::Tick(BACKGROUND, 2), "background spike".into()),
            (
                Swatch::Tick(PLANTED, 3),
                format!("planted template {} ({marked} spikes)", sample.label),
            ),
            (
                Swatch::Line(RIGHT),
                format!("detection of template {}", sample.label),
            ),
            (Swatch::Line(WRONG), "detection of another template".into()),
            (Swatch::None, String::new()),
            (Swatch::None, "detections (window end):".into()),
        ];
        if detections.is_empty() {
            lines.push((Swatch::None, "  none".into()));
        }
        for d in detections.iter().take(MAX_LISTED) {
            lines.push((
                Swatch::None,
                format!(
                    "  T{} at {} ms, score {:.2}",
                    d.template, d.time_ms, d.score
                ),
            ));
        }
        if detections.len() > MAX_LISTED {
            lines.push((
                Swatch::None,
                format!("  and {} more", detections.len() - MAX_LISTED),
            ));
        }
        legend(&legend_area, &lines)
    })
}

/// Width of the legend panel on the right, pixels.
const LEGEND_WIDTH: u32 = 290;
/// Most detections listed in the legend panel.
const MAX_LISTED: usize = 12;

/// What a legend line shows left of its text.
enum Swatch {
    /// A filled box.
    Band(RGBColor),
    /// A spike tick of the given width.
    Tick(RGBColor, u32),
    /// A detection line.
    Line(RGBColor),
    /// Nothing (a text line).
    None,
}

/// Draws the legend lines top-down on `area` (pixel coordinates).
fn legend(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    lines: &[(Swatch, String)],
) -> PlotResult {
    let style = (FONT, 15).into_font().color(&BLACK);
    for (i, (swatch, text)) in lines.iter().enumerate() {
        let y = 40 + 26 * i as i32;
        let x = 10;
        match swatch {
            Swatch::Band(color) => area
                .draw(&Rectangle::new(
                    [(x, y - 7), (x + 22, y + 7)],
                    color.filled(),
                ))
                .map_err(msg)?,
            Swatch::Tick(color, width) => area
                .draw(&PathElement::new(
                    vec![(x + 11, y - 8), (x + 11, y + 8)],
                    color.stroke_width(*width),
                ))
                .map_err(msg)?,
            Swatch::Line(color) => area
                .draw(&PathElement::new(
                    vec![(x + 11, y - 11), (x + 11, y + 11)],
                    color.stroke_width(2),
                ))
                .map_err(msg)?,
            Swatch::None => {}
        }
        let text_x = if matches!(swatch, Swatch::None) {
            x
        } else {
            x + 32
        };
        area.draw(&Text::new(text.clone(), (text_x, y - 8), style.clone()))
            .map_err(msg)?;
    }
    Ok(())
}

/// The colour of a detection: green when it names the sample's class.
fn detection_color(d: &Detection, label: usize) -> RGBColor {
    if d.template == label {
        RIGHT
    } else {
        WRONG
    }
}

/// Which spikes of `pattern` are the planted template's: for each template spike, the spike on
/// its channel nearest to where it was planted (onset + its time), within the jitter.
fn planted_spikes(
    pattern: &SpikePattern,
    template: &SpikePattern,
    options: &SpikeClassificationOptions,
) -> Vec<bool> {
    let spikes = pattern.spikes();
    let mut planted = vec![false; spikes.len()];
    let latest = options.sample_ms * (1.0 - 1e-12);
    for t in template.spikes() {
        let expected = (options.onset_ms + t.time_ms).clamp(0.0, latest);
        let nearest = spikes
            .iter()
            .enumerate()
            .filter(|(i, s)| s.neuron_id == t.neuron_id && !planted[*i])
            .map(|(i, s)| (i, (s.time_ms - expected).abs()))
            .filter(|(_, distance)| *distance <= options.jitter_ms + 1e-9)
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((i, _)) = nearest {
            planted[i] = true;
        }
    }
    planted
}
