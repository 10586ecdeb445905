//! `--plot OUT.png`: pictures of a run, drawn in pure Rust (plotters' bitmap backend into a
//! buffer, text in the embedded DejaVu Sans, PNG encoded by `png`), always
//! [`WIDTH`] × [`HEIGHT`] pixels, staged (a temporary file beside the target) and put in place
//! with the command's other outputs once it has succeeded.
//!
//! - [`series()`](fn@series): prediction against target over the first [`MAX_SERIES_ROWS`] test rows
//!   (`fit` with a test file; `run` on narma10 and mackey_glass), one panel per target.
//! - [`raster()`](fn@raster): a spike raster of one test sample of the spike task, the planted template's
//!   spikes marked and the detector's detections drawn.
//! - [`confusion()`](fn@confusion): a classifier's confusion matrix (true class by row,
//!   predicted class by column), cells shaded by their share of the row, with the accuracy.

mod confusion;
mod raster;
mod series;

pub use confusion::confusion;
pub use raster::raster;
pub use series::series;

use std::path::Path;
use std::sync::OnceLock;

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use reservoir_runtime::files::{stage, Staged};

use crate::error::{CliError, Result};

/// Width of every plot, pixels.
pub const WIDTH: u32 = 1200;
/// Height of every plot, pixels.
pub const HEIGHT: u32 = 600;
/// Most test rows a series plot shows (the first ones); longer test sets are cut.
pub const MAX_SERIES_ROWS: usize = 500;
/// The font family every text of a plot uses (registered once from the embedded font).
const FONT: &str = "sans-serif";

/// Registers the embedded font under [`FONT`] once per process.
fn ensure_font() -> std::result::Result<(), String> {
    static REGISTERED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
                .map_err(|_| "the embedded DejaVu Sans font could not be loaded".to_string())
        })
        .clone()
}

/// Draws with `draw` on a white [`WIDTH`] × [`HEIGHT`] RGB canvas, encodes it as PNG and stages
/// it for `path` (written to a temporary file beside it; the command commits it with its other
/// outputs once everything has succeeded).
fn render(
    path: &Path,
    draw: impl FnOnce(&DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>) -> PlotResult,
) -> Result<Staged> {
    let plot_error = |message: String| CliError::Plot {
        path: path.to_path_buf(),
        message,
    };
    ensure_font().map_err(plot_error)?;
    let mut pixels = vec![0u8; WIDTH as usize * HEIGHT as usize * 3];
    {
        let backend = BitMapBackend::with_buffer_and_format(&mut pixels, (WIDTH, HEIGHT))
            .map_err(|e| plot_error(e.to_string()))?;
        let root = backend.into_drawing_area();
        root.fill(&WHITE).map_err(|e| plot_error(e.to_string()))?;
        draw(&root).map_err(plot_error)?;
        root.present().map_err(|e| plot_error(e.to_string()))?;
    }
    let png = encode_png(&pixels).map_err(|e| plot_error(format!("PNG encoding: {e}")))?;
    stage(path, &png).map_err(|e| CliError::writing("plot file", e))
}

/// The result of a drawing closure: a message on failure.
type PlotResult = std::result::Result<(), String>;

/// `pixels` (RGB, 8 bits, [`WIDTH`] × [`HEIGHT`]) as a PNG file.
fn encode_png(pixels: &[u8]) -> std::result::Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, WIDTH, HEIGHT);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(pixels)?;
    writer.finish()?;
    Ok(out)
}

/// Turns any drawing error into its message.
fn msg<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// An axis label for `v` on an axis spanning about `span`: no decimals from a span of 20 on,
/// more below, and never `-0`.
fn tick_label(v: f64, span: f64) -> String {
    let span = span.abs();
    let decimals = if span >= 20.0 {
        0
    } else if span >= 2.0 {
        1
    } else if span >= 0.2 {
        2
    } else {
        4
    };
    let text = format!("{v:.decimals$}");
    match text.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => text,
    }
}

/// `lo..hi` widened by 5 % on each side (and to a unit range when flat).
fn padded(lo: f64, hi: f64) -> std::ops::Range<f64> {
    let span = hi - lo;
    if !(span.is_finite() && span > 0.0) {
        return (lo - 0.5)..(lo + 0.5);
    }
    (lo - 0.05 * span)..(hi + 0.05 * span)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_fit_the_span_and_never_say_minus_zero() {
        assert_eq!(tick_label(-0.0001, 2.0), "0.0");
        assert_eq!(tick_label(-0.00001, 0.1), "0.0000");
        assert_eq!(tick_label(-0.5, 2.0), "-0.5");
        assert_eq!(tick_label(40.0, 80.0), "40");
        assert_eq!(tick_label(0.25, 0.5), "0.25");
    }

    #[test]
    fn ranges_are_padded_and_never_empty() {
        assert_eq!(padded(0.0, 10.0), -0.5..10.5);
        assert_eq!(padded(3.0, 3.0), 2.5..3.5);
    }

    #[test]
    fn an_empty_canvas_encodes_as_a_png_of_the_plot_size() {
        let png = encode_png(&vec![255; WIDTH as usize * HEIGHT as usize * 3]);
        let png = png.unwrap_or_default();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(
            &png[16..24],
            [WIDTH.to_be_bytes(), HEIGHT.to_be_bytes()].concat()
        );
    }
}
