//! Progress bars on standard error for the long loops (reservoir runs by chunk, spike samples,
//! rows written). They are drawn only when standard error is a terminal (indicatif hides them
//! otherwise, and when `TERM` is unset or `dumb`), and cleared when done, so piped or captured
//! standard error holds only the `note:` and `error:` lines.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar over `total` units (`rows`, `samples`) labelled `label`, drawn on standard error.
pub fn bar(label: &str, total: usize, unit: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
    let template =
        format!("{{prefix:>10}} [{{wide_bar}}] {{human_pos}}/{{human_len}} {unit} ({{eta}} left)");
    let style = ProgressStyle::with_template(&template)
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_prefix(label.to_string());
    bar
}

/// A spinner for work without a count (generating a series), ticking on its own.
pub fn spinner(label: &str) -> ProgressBar {
    let spinner = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template("{prefix:>10} {spinner} {elapsed}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
    spinner.set_style(style);
    spinner.set_prefix(label.to_string());
    spinner.enable_steady_tick(Duration::from_millis(100));
    spinner
}

/// Moves `bar` to `done` of `total`, clearing it once `done` reaches `total`.
pub fn advance(bar: &ProgressBar, done: usize, total: usize) {
    bar.set_length(total as u64);
    bar.set_position(done as u64);
    if done >= total {
        bar.finish_and_clear();
    }
}

/// One bar per stage of a `reservoir run` (`training`, `esn`, `lif`, `detection`): a new
/// stage clears the previous bar and starts its own.
#[derive(Debug, Default)]
pub struct Stages {
    current: Option<(String, ProgressBar)>,
}

impl Stages {
    /// Reports `done` of `total` in `stage`.
    pub fn update(&mut self, stage: &str, done: usize, total: usize) {
        if self.current.as_ref().is_none_or(|(name, _)| name != stage) {
            self.clear();
            let (label, unit) = match stage {
                "training" => ("training", "rows"),
                "esn" => ("ESN", "samples"),
                "lif" => ("LIF", "samples"),
                "detection" => ("detecting", "samples"),
                other => (other, "steps"),
            };
            self.current = Some((stage.to_string(), bar(label, total, unit)));
        }
        if let Some((_, bar)) = &self.current {
            advance(bar, done, total);
        }
    }

    /// Clears the current bar, if any.
    pub fn clear(&mut self) {
        if let Some((_, bar)) = self.current.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Stages {
    fn drop(&mut self) {
        self.clear();
    }
}
