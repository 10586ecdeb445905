//! `reservoir`: run task configs, sweep their hyper-parameters, fit echo-state readouts on
//! CSV data, predict with saved models, generate tasks.
//!
//! Every failure is one line `error: <message>` on standard error and exit code 1 (usage errors
//! are clap's, exit code 2). Long loops show progress bars on standard error only when it is a
//! terminal; otherwise standard error holds only `note:` and `error:` lines. A panic, which would be a bug, is reported the same way as an
//! internal error, never as a panic message.

mod columns;
mod device;
mod error;
mod fit;
mod generate;
mod info;
mod output;
mod plot;
mod predict;
mod progress;
mod report;
mod run;
mod sequence_tasks;
mod sweep;

use std::io::Write;
use std::panic::{self, AssertUnwindSafe, PanicHookInfo};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use reservoir_runtime::files::remove_temporaries;

/// Reservoir computing from the command line.
#[derive(Debug, Parser)]
#[command(name = "reservoir", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Fit a ridge readout on CSV or NumPy data (one series, many series, or labelled
    /// sequences to classify), score it on a test file, optionally save the model and plot.
    Fit(fit::FitArgs),
    /// Predict with a saved model: target columns per row, or a class per sequence, as CSV
    /// or `.npy`.
    Predict(predict::PredictArgs),
    /// Generate a benchmark task (narma10, mackey-glass, lorenz) as CSV.
    Generate(generate::GenerateArgs),
    /// Run a task config end to end (the embedded default when no config is given), optionally
    /// save the trained model and draw a plot.
    Run(run::RunArgs),
    /// Run a config's hyper-parameter sweep (its `[sweep]` table: lanes of spectral radius,
    /// leak rate and input scaling sharing one random W, each solved for several ridge
    /// values) and report the best lanes; with `--train`, on a sequence dataset, validated on
    /// folds of its training sequences, the best then fitted and scored on `--test`.
    Sweep(sweep::SweepArgs),
    /// Show what this machine has for the GPU backend: driver, cuBLAS, devices; with
    /// `--meet`, check that the ranks of a launch (torchrun, srun, mpirun) can meet.
    Info(info::InfoArgs),
}

fn dispatch(command: &Command) -> error::Result<()> {
    match command {
        Command::Fit(args) => fit::run(args),
        Command::Predict(args) => predict::run(args),
        Command::Generate(args) => generate::run(args),
        Command::Run(args) => run::run(args),
        Command::Sweep(args) => sweep::run(args),
        Command::Info(args) => info::run(args),
    }
}

/// Exit status after an interrupting signal: 128 + SIGINT, as shells report Ctrl-C.
const INTERRUPTED: i32 = 130;

fn main() -> ExitCode {
    panic::set_hook(Box::new(report_panic));
    // On Ctrl-C, SIGTERM or SIGHUP, remove the temporaries of outputs being written, then
    // stop; outputs not yet replaced keep their old contents.
    let interrupted = ctrlc::set_handler(|| {
        remove_temporaries();
        std::process::exit(INTERRUPTED);
    });
    if let Err(e) = interrupted {
        eprintln!("note: cannot watch for interrupts ({e}); an interrupted write may leave a temporary file behind");
    }
    let cli = Cli::parse();
    match panic::catch_unwind(AssertUnwindSafe(|| dispatch(&cli.command))) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            print_error(&e.to_string());
            ExitCode::FAILURE
        }
        // The hook has already printed the one line.
        Err(_) => ExitCode::FAILURE,
    }
}

/// Longest error message printed, in characters. Text quoted from files is already cut where
/// it is quoted; a message still longer (a long path, a parser quoting a huge value) loses its
/// middle, so the start (file, line, field) and the end (the verdict) both stay.
const MAX_ERROR_CHARS: usize = 300;
/// Characters kept from the end of a message cut to [`MAX_ERROR_CHARS`].
const KEPT_TAIL_CHARS: usize = 100;

/// Prints `error: <message>` as a single line on standard error, with control characters
/// escaped (a file's text must not drive the terminal) and at most about [`MAX_ERROR_CHARS`]
/// characters of the message.
fn print_error(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "error: {}", one_line(message));
}

/// `message` made printable ([`report::printable`]) and cut to [`MAX_ERROR_CHARS`] characters,
/// the left-out middle replaced by `…(N characters left out)…`.
fn one_line(message: &str) -> String {
    let line = report::printable(message);
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= MAX_ERROR_CHARS {
        return line;
    }
    let note_room = 36;
    let head = MAX_ERROR_CHARS - KEPT_TAIL_CHARS - note_room;
    let left_out = chars.len() - head - KEPT_TAIL_CHARS;
    let head: String = chars[..head].iter().collect();
    let tail: String = chars[chars.len() - KEPT_TAIL_CHARS..].iter().collect();
    format!("{head}…({left_out} characters left out)…{tail}")
}

/// Panic hook: one `error: internal error: ...` line instead of Rust's panic message.
fn report_panic(info: &PanicHookInfo<'_>) {
    let payload = info.payload();
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unexpected failure".to_string());
    let place = info
        .location()
        .map(|l| format!(" (at {}:{})", l.file(), l.line()))
        .unwrap_or_default();
    print_error(&format!(
        "internal error: {what}{place}; please report this as a bug"
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_keep_their_start_and_end() {
        let message = format!(
            "data.csv: line 2, column `{}`: is not a number",
            "x".repeat(5000)
        );
        let line = one_line(&message);
        assert!(line.chars().count() <= MAX_ERROR_CHARS, "{line}");
        assert!(line.starts_with("data.csv: line 2, column `xxx"), "{line}");
        assert!(line.ends_with("`: is not a number"), "{line}");
        assert!(line.contains("characters left out"), "{line}");
        assert_eq!(one_line("short\u{1b}[2J"), "short\\u{1b}[2J");
    }
}
