//! A confusion matrix of a classifier: true class down the rows, predicted class across the
//! columns, each cell shaded by its share of the row and (up to [`MAX_NUMBERED`] classes, where
//! the counts fit in a legible size) labelled with its count.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::FontTransform;

use super::{msg, render, PlotResult, Staged, FONT, HEIGHT, WIDTH};
use crate::error::{CliError, Result};

/// Most classes whose cells get their count written in them.
const MAX_NUMBERED: usize = 30;
/// Smallest font size a count is written in.
const MIN_COUNT_FONT: u32 = 8;
/// Most the matrix is widened beyond a square (width over height) to fit its counts.
const MAX_ASPECT: f64 = 1.5;
/// Longest class name shown, in characters (longer ones end in an ellipsis).
const MAX_NAME: usize = 12;
/// Colours of a cell's row share 0, ½ and 1: white through mid blue to dark blue.
const SHADES: [(f64, f64, f64); 3] = [
    (255.0, 255.0, 255.0),
    (107.0, 174.0, 214.0),
    (8.0, 48.0, 107.0),
];
/// Colour of the lines between cells.
const GRID: RGBColor = RGBColor(205, 205, 205);
/// Colour of a count of zero (de-emphasised).
const ZERO: RGBColor = RGBColor(150, 150, 150);
/// Top of the matrix, pixels (the title is above).
const TOP: i32 = 52;
/// Gap between the matrix and its class names, pixels.
const LABEL_GAP: i32 = 6;
/// Gap between the class names and the axis title, pixels.
const TITLE_GAP: i32 = 10;
/// Font size of the axis titles.
const AXIS_TITLE: u32 = 16;
/// Space left below the x-axis title, pixels.
const BOTTOM: i32 = 10;
/// Width of the colour bar, pixels.
const BAR_WIDTH: i32 = 16;
/// Gap between the matrix and the colour bar, pixels.
const BAR_GAP: i32 = 36;

/// Draws a PNG of the confusion matrix `matrix` (`matrix[t][p]`: samples of true class `t`
/// predicted as `p`, classes named `classes`) under the title `title` and the overall accuracy.
pub fn confusion(
    path: &Path,
    title: &str,
    classes: &[String],
    matrix: &[Vec<usize>],
) -> Result<Staged> {
    let n = classes.len();
    let invalid = |message: String| CliError::Plot {
        path: path.to_path_buf(),
        message,
    };
    if n == 0 {
        return Err(invalid(
            "a confusion matrix needs at least one class".into(),
        ));
    }
    if matrix.len() != n {
        return Err(invalid(format!(
            "the confusion matrix has {} rows for {n} classes",
            matrix.len()
        )));
    }
    if let Some((t, row)) = matrix.iter().enumerate().find(|(_, row)| row.len() != n) {
        return Err(invalid(format!(
            "row {t} (true class `{}`) of the confusion matrix has {} columns for {n} classes",
            classes[t],
            row.len()
        )));
    }
    let row_totals: Vec<u128> = matrix
        .iter()
        .map(|row| row.iter().map(|&c| c as u128).sum())
        .collect();
    let total: u128 = row_totals.iter().sum();
    if total == 0 {
        return Err(invalid("the confusion matrix holds no counts".into()));
    }
    let correct: u128 = (0..n).map(|k| matrix[k][k] as u128).sum();
    let accuracy = correct as f64 / total as f64;
    let title = format!("{title}: accuracy {accuracy:.4} ({correct} of {total} correct)");
    let names: Vec<String> = classes.iter().map(|c| shortened(c)).collect();
    render(path, |root| {
        root.draw(&Text::new(
            title.as_str(),
            (WIDTH as i32 / 2, 12),
            text_style(22, BLACK, HPos::Center, VPos::Top),
        ))
        .map_err(msg)?;
        let largest = matrix.iter().flatten().copied().max().unwrap_or(0);
        let layout = Layout::new(root, n, &names, largest)?;
        draw_cells(root, &layout, matrix, &row_totals)?;
        draw_labels(root, &layout, &names)?;
        draw_colour_bar(root, &layout)
    })
}

/// Where the parts of the picture go.
struct Layout {
    /// Number of classes.
    n: usize,
    /// Left edge of the matrix, pixels.
    left: i32,
    /// Width of the matrix, pixels (its height, or up to [`MAX_ASPECT`] times that so that the
    /// counts fit).
    width: i32,
    /// Height of the matrix, pixels.
    height: i32,
    /// Font size of the class names.
    label_font: u32,
    /// Every how many classes a name is written.
    stride: usize,
    /// Whether the column names are turned to read upwards (they do not fit side by side).
    upright: bool,
    /// Widest written class name, pixels.
    label_width: i32,
    /// Font size of the counts in the cells, `None` where they are not written.
    count_font: Option<u32>,
}

impl Layout {
    /// Fits the matrix, its names and axis titles into the canvas: first with the column names
    /// written across, then, when they do not fit side by side, turned upright; then widens the
    /// matrix (up to [`MAX_ASPECT`]) where that lets counts up to `largest` be written legibly.
    fn new(
        root: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
        n: usize,
        names: &[String],
        largest: usize,
    ) -> std::result::Result<Self, String> {
        let measure = |text: &str, font: u32| -> std::result::Result<i32, String> {
            let style = text_style(font, BLACK, HPos::Left, VPos::Top);
            let (w, _) = root.estimate_text_size(text, &style).map_err(msg)?;
            Ok(w as i32)
        };
        let widest = |font: u32| -> std::result::Result<i32, String> {
            names
                .iter()
                .try_fold(0, |widest, name| Ok(widest.max(measure(name, font)?)))
        };
        let fixed = TOP + LABEL_GAP + TITLE_GAP + AXIS_TITLE as i32 + BOTTOM;
        let mut layout = Self::square(HEIGHT as i32 - fixed - 16, n, widest)?;
        if layout.label_width + 8 > layout.spacing() {
            let side = HEIGHT as i32 - fixed - layout.label_width;
            layout = Self::square(side, n, widest)?;
            layout.upright = true;
        }
        if n > MAX_NUMBERED {
            return Ok(layout);
        }
        // Width of the largest count per point of font size.
        let digits = largest.to_string();
        let unit = f64::from(measure(&digits, 100)?) / 100.0;
        let wanted = (unit * f64::from(MIN_COUNT_FONT + 1) + 4.0) * n as f64;
        if wanted > f64::from(layout.width) {
            let widest_allowed = f64::from(layout.height) * MAX_ASPECT;
            layout.width = wanted.min(widest_allowed).ceil() as i32;
            layout.left = (WIDTH as i32 - layout.width) / 2;
        }
        let size = 20f64
            .min(layout.cell_height() * 0.65)
            .min((layout.cell_width() - 4.0) / unit.max(0.1));
        layout.count_font = (size >= f64::from(MIN_COUNT_FONT)).then_some(size as u32);
        Ok(layout)
    }

    /// The layout with a square matrix of `side` pixels, names measured by `widest`.
    fn square(
        side: i32,
        n: usize,
        widest: impl Fn(u32) -> std::result::Result<i32, String>,
    ) -> std::result::Result<Self, String> {
        let side = side.max(50);
        let cell = f64::from(side) / n as f64;
        let label_font = (cell * 0.8).clamp(11.0, 15.0) as u32;
        let stride = ((f64::from(label_font) + 3.0) / cell).ceil().max(1.0) as usize;
        Ok(Layout {
            n,
            left: (WIDTH as i32 - side) / 2,
            width: side,
            height: side,
            label_font,
            stride,
            upright: false,
            label_width: widest(label_font)?,
            count_font: None,
        })
    }

    /// Pixels between two names written across.
    fn spacing(&self) -> i32 {
        (self.cell_width() * self.stride as f64) as i32
    }

    /// Pixel position of the left edge of column `i` (0 ..= n) from the matrix's left.
    fn column_edge(&self, i: usize) -> i32 {
        (i as u128 * self.width as u128 / self.n as u128) as i32
    }

    /// Pixel position of the top edge of row `i` (0 ..= n) from the matrix's top.
    fn row_edge(&self, i: usize) -> i32 {
        (i as u128 * self.height as u128 / self.n as u128) as i32
    }

    /// Pixel position of the centre of column `i` from the matrix's left.
    fn column_centre(&self, i: usize) -> i32 {
        (self.column_edge(i) + self.column_edge(i + 1)) / 2
    }

    /// Pixel position of the centre of row `i` from the matrix's top.
    fn row_centre(&self, i: usize) -> i32 {
        (self.row_edge(i) + self.row_edge(i + 1)) / 2
    }

    /// Width of one cell, pixels (fractional).
    fn cell_width(&self) -> f64 {
        f64::from(self.width) / self.n as f64
    }

    /// Height of one cell, pixels (fractional).
    fn cell_height(&self) -> f64 {
        f64::from(self.height) / self.n as f64
    }

    /// Bottom edge of the matrix, pixels.
    fn bottom(&self) -> i32 {
        TOP + self.height
    }

    /// Right edge of the matrix, pixels.
    fn right(&self) -> i32 {
        self.left + self.width
    }
}

/// Draws the shaded cells, their counts, the lines between them and the frame.
fn draw_cells(
    root: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    layout: &Layout,
    matrix: &[Vec<usize>],
    row_totals: &[u128],
) -> PlotResult {
    let (n, left) = (layout.n, layout.left);
    for (t, row) in matrix.iter().enumerate() {
        for (p, &count) in row.iter().enumerate() {
            let share = share_of(count, row_totals[t]);
            root.draw(&Rectangle::new(
                [
                    (left + layout.column_edge(p), TOP + layout.row_edge(t)),
                    (
                        left + layout.column_edge(p + 1),
                        TOP + layout.row_edge(t + 1),
                    ),
                ],
                shade(share).filled(),
            ))
            .map_err(msg)?;
        }
    }
    if layout.cell_height() >= 6.0 {
        for i in 1..n {
            let x = left + layout.column_edge(i);
            let y = TOP + layout.row_edge(i);
            root.draw(&PathElement::new(
                vec![(x, TOP), (x, layout.bottom())],
                GRID,
            ))
            .map_err(msg)?;
            root.draw(&PathElement::new(
                vec![(left, y), (layout.right(), y)],
                GRID,
            ))
            .map_err(msg)?;
        }
    }
    root.draw(&Rectangle::new(
        [(left, TOP), (layout.right(), layout.bottom())],
        BLACK,
    ))
    .map_err(msg)?;
    if let Some(font) = layout.count_font {
        for (t, row) in matrix.iter().enumerate() {
            for (p, &count) in row.iter().enumerate() {
                let share = share_of(count, row_totals[t]);
                let color = if count == 0 {
                    ZERO
                } else if is_dark(shade(share)) {
                    WHITE
                } else {
                    BLACK
                };
                let (x, y) = (left + layout.column_centre(p), TOP + layout.row_centre(t));
                root.draw(&Text::new(
                    count.to_string(),
                    (x, y + centring(font)),
                    text_style(font, color, HPos::Center, VPos::Center),
                ))
                .map_err(msg)?;
            }
        }
    }
    Ok(())
}

/// Draws the class names, the axis titles and the ticks at named classes.
fn draw_labels(
    root: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    layout: &Layout,
    names: &[String],
) -> PlotResult {
    let (left, bottom, font) = (layout.left, layout.bottom(), layout.label_font);
    let shown = (0..layout.n).step_by(layout.stride);
    for i in shown {
        let (x, y) = (left + layout.column_centre(i), TOP + layout.row_centre(i));
        root.draw(&PathElement::new(vec![(x, bottom), (x, bottom + 4)], BLACK))
            .map_err(msg)?;
        root.draw(&PathElement::new(vec![(left - 4, y), (left, y)], BLACK))
            .map_err(msg)?;
        let name = names[i].as_str();
        let column = if layout.upright {
            text_style(font, BLACK, HPos::Right, VPos::Center).transform(FontTransform::Rotate270)
        } else {
            text_style(font, BLACK, HPos::Center, VPos::Top)
        };
        root.draw(&Text::new(name, (x, bottom + LABEL_GAP), column))
            .map_err(msg)?;
        root.draw(&Text::new(
            name,
            (left - LABEL_GAP - 2, y + centring(font)),
            text_style(font, BLACK, HPos::Right, VPos::Center),
        ))
        .map_err(msg)?;
    }
    let names_height = if layout.upright {
        layout.label_width
    } else {
        font as i32
    };
    let axis = text_style(AXIS_TITLE, BLACK, HPos::Center, VPos::Top);
    root.draw(&Text::new(
        "predicted class",
        (
            left + layout.width / 2,
            bottom + LABEL_GAP + names_height + TITLE_GAP,
        ),
        axis.clone(),
    ))
    .map_err(msg)?;
    root.draw(&Text::new(
        "true class",
        (
            left - LABEL_GAP - 2 - layout.label_width - TITLE_GAP - AXIS_TITLE as i32,
            TOP + layout.height / 2,
        ),
        axis.transform(FontTransform::Rotate270),
    ))
    .map_err(msg)
}

/// Draws the colour bar right of the matrix: row share 0 (bottom) to 1 (top).
fn draw_colour_bar(
    root: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    layout: &Layout,
) -> PlotResult {
    let (x0, x1) = (
        layout.right() + BAR_GAP,
        layout.right() + BAR_GAP + BAR_WIDTH,
    );
    let (top, bottom) = (TOP, layout.bottom());
    let height = f64::from(bottom - top);
    for y in top..bottom {
        let share = f64::from(bottom - 1 - y) / (height - 1.0).max(1.0);
        root.draw(&PathElement::new(vec![(x0, y), (x1, y)], shade(share)))
            .map_err(msg)?;
    }
    root.draw(&Rectangle::new([(x0, top), (x1, bottom)], BLACK))
        .map_err(msg)?;
    let ticks = text_style(13, BLACK, HPos::Left, VPos::Center);
    for (share, label) in [
        (0.0, "0"),
        (0.25, "0.25"),
        (0.5, "0.5"),
        (0.75, "0.75"),
        (1.0, "1"),
    ] {
        let y = bottom - (share * height).round() as i32;
        root.draw(&PathElement::new(vec![(x1, y), (x1 + 4, y)], BLACK))
            .map_err(msg)?;
        root.draw(&Text::new(label, (x1 + 7, y + centring(13)), ticks.clone()))
            .map_err(msg)?;
    }
    root.draw(&Text::new(
        "share of the true class's samples",
        (x1 + 52, top + (bottom - top) / 2),
        text_style(14, BLACK, HPos::Center, VPos::Top).transform(FontTransform::Rotate270),
    ))
    .map_err(msg)
}

/// A text style of `size` points in `color`, anchored at `h`, `v`.
fn text_style(size: u32, color: RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    (FONT, size).into_font().color(&color).pos(Pos::new(h, v))
}

/// How far down to move a vertically centred text of `size` so that its digits and capitals,
/// rather than its layout box, sit on the anchor.
fn centring(size: u32) -> i32 {
    (f64::from(size) * 0.27).round() as i32
}

/// The share `count` is of its row's `total` (0 for an empty row).
fn share_of(count: usize, total: u128) -> f64 {
    if total == 0 {
        0.0
    } else {
        count as f64 / total as f64
    }
}

/// The colour of a cell holding `share` (0 ..= 1) of its row.
fn shade(share: f64) -> RGBColor {
    let s = share.clamp(0.0, 1.0) * 2.0;
    let (from, to, t) = if s <= 1.0 {
        (SHADES[0], SHADES[1], s)
    } else {
        (SHADES[1], SHADES[2], s - 1.0)
    };
    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    RGBColor(mix(from.0, to.0), mix(from.1, to.1), mix(from.2, to.2))
}

/// Whether black text would be hard to read on `color` (white text is used instead).
fn is_dark(color: RGBColor) -> bool {
    let RGBColor(r, g, b) = color;
    0.299 * f64::from(r) + 0.587 * f64::from(g) + 0.114 * f64::from(b) < 150.0
}

/// `name` cut to [`MAX_NAME`] characters, ending in an ellipsis when cut.
fn shortened(name: &str) -> String {
    if name.chars().count() <= MAX_NAME {
        return name.to_string();
    }
    let kept: String = name.chars().take(MAX_NAME - 1).collect();
    format!("{kept}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The width and height of the PNG file at `path`, after checking its signature and
    /// decoding it.
    fn png_size(path: &Path) -> (u32, u32) {
        let bytes = std::fs::read(path).unwrap_or_default();
        assert_eq!(&bytes[..8.min(bytes.len())], b"\x89PNG\r\n\x1a\n");
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = decoder.read_info().expect("a PNG header");
        let mut pixels = vec![0; reader.output_buffer_size().expect("a buffer size")];
        let frame = reader.next_frame(&mut pixels).expect("a PNG image");
        (frame.width, frame.height)
    }

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|k| format!("class {k}")).collect()
    }

    #[test]
    fn draws_a_small_confusion_matrix() {
        let classes = vec![
            "setosa".to_string(),
            "versicolor".to_string(),
            "a very long class name indeed".to_string(),
        ];
        let matrix = vec![vec![50, 0, 0], vec![0, 47, 3], vec![0, 2, 48]];
        draw_and_check("confusion3.png", "iris", &classes, &matrix);
    }

    /// A matrix of `n` classes: mostly right, some confused with the next class, a few
    /// scattered mistakes, and class 7 never seen.
    fn mostly_diagonal(n: usize) -> Vec<Vec<usize>> {
        (0..n)
            .map(|t| {
                (0..n)
                    .map(|p| match (t, p) {
                        (7, _) => 0,
                        _ if t == p => 90 + t,
                        _ if (t + 1) % n == p => 5 + t % 7,
                        _ => usize::from((t * 7 + p * 3) % 11 == 0),
                    })
                    .collect()
            })
            .collect()
    }

    /// Draws `matrix` into a temporary directory and checks the PNG.
    fn draw_and_check(file: &str, title: &str, classes: &[String], matrix: &[Vec<usize>]) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join(file);
        let staged = confusion(&path, title, classes, matrix).expect("a plot");
        assert!(!path.exists(), "nothing is written before the commit");
        staged.commit().expect("written");
        assert_eq!(png_size(&path), (WIDTH, HEIGHT));
    }

    #[test]
    fn draws_a_large_confusion_matrix_with_an_empty_row() {
        draw_and_check(
            "confusion40.png",
            "forty classes",
            &names(40),
            &mostly_diagonal(40),
        );
    }

    #[test]
    fn draws_thirty_classes_with_their_counts() {
        draw_and_check(
            "confusion30.png",
            "thirty classes",
            &(0..30)
                .map(|k| format!("speaker {k:02} session"))
                .collect::<Vec<_>>(),
            &mostly_diagonal(30),
        );
    }

    #[test]
    fn draws_one_class_and_very_many_classes() {
        draw_and_check("confusion1.png", "one class", &names(1), &[vec![7]]);
        draw_and_check(
            "confusion200.png",
            "two hundred classes",
            &names(200),
            &mostly_diagonal(200),
        );
    }

    #[test]
    fn mismatched_or_empty_matrices_are_errors() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("bad.png");
        let cases: [(Vec<String>, Vec<Vec<usize>>); 4] = [
            (names(3), vec![vec![1, 0, 0], vec![0, 1, 0]]),
            (names(2), vec![vec![1, 0], vec![0, 1, 0]]),
            (Vec::new(), Vec::new()),
            (names(2), vec![vec![0, 0], vec![0, 0]]),
        ];
        for (classes, matrix) in cases {
            let result = confusion(&path, "bad", &classes, &matrix);
            assert!(
                matches!(result, Err(CliError::Plot { .. })),
                "{classes:?} {matrix:?}"
            );
        }
        assert!(!path.exists());
    }

    #[test]
    fn long_names_are_cut_with_an_ellipsis() {
        assert_eq!(shortened("setosa"), "setosa");
        assert_eq!(shortened("abcdefghijkl"), "abcdefghijkl");
        assert_eq!(shortened("abcdefghijklm"), "abcdefghijk…");
        assert_eq!(shortened("äöüäöüäöüäöüäöü").chars().count(), MAX_NAME);
    }

    #[test]
    fn shades_run_from_white_to_dark_blue() {
        assert_eq!(shade(0.0), WHITE);
        assert_eq!(shade(1.0), RGBColor(8, 48, 107));
        assert!(!is_dark(shade(0.2)));
        assert!(is_dark(shade(0.9)));
    }
}
