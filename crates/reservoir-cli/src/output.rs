//! Output: documents written atomically to a file or to standard output; the checks every
//! output passes before a command starts its work; and the commit of a command's outputs
//! together, once it has succeeded.

use std::io::Write;
use std::path::Path;

use reservoir_runtime::files::{check_writable, follow_links, lock_folders, stage, Staged};
use reservoir_runtime::RuntimeError;

use crate::error::{CliError, Result};

/// Writes `bytes` atomically to `path`, or to standard output when there is no path.
pub fn write_output(path: Option<&Path>, bytes: &[u8]) -> Result<()> {
    match path {
        Some(path) => commit(vec![stage_output("output file", path, bytes)?]),
        None => write_stdout(bytes),
    }
}

/// `bytes` staged for `path` (the `what` file, e.g. `output file`): in a temporary file beside
/// it until [`commit`].
pub fn stage_output(
    what: &'static str,
    path: &Path,
    bytes: &[u8],
) -> Result<(&'static str, Staged)> {
    let staged = stage(path, bytes).map_err(|e| CliError::writing(what, e))?;
    Ok((what, staged))
}

/// Puts every staged output of a command in place, once the command has succeeded: those
/// written into a device or pipe first (they are the ones that can fail part way), then the
/// renames of finished files, with their folders locked against another process's commit so
/// the set lands together. Until then no output has changed; an output not committed (an
/// error returned before this) is removed with its temporary file.
pub fn commit(mut outputs: Vec<(&'static str, Staged)>) -> Result<()> {
    outputs.sort_by_key(|(_, staged)| !staged.writes_through());
    let _locks = lock_folders(outputs.iter().filter_map(|(_, staged)| staged.folder()));
    for (what, staged) in outputs {
        staged.commit().map_err(|e| CliError::writing(what, e))?;
    }
    Ok(())
}

/// Writes to standard output; a closed pipe (`| head`) is not an error.
pub fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::Stdout(e)),
        _ => Ok(()),
    }
}

/// Fails early, before any work, unless every output (`(flag, path)`) can be written without
/// losing anything: it names a file (not a folder, nor a path ending in `/`), its folder exists
/// and takes new files, it is not a directory or a read-only file, and it is neither an input
/// of the command (`(what, path)`, e.g. `train file`) nor another output, under any spelling
/// (`./a.csv`, a link to it, a hard link).
pub fn check_outputs(outputs: &[(&'static str, &Path)], inputs: &[(&str, &Path)]) -> Result<()> {
    for (i, &(flag, path)) in outputs.iter().enumerate() {
        let refuse = |message: String| CliError::Argument { flag, message };
        if path.file_name().is_none() || ends_with_separator(path) {
            return Err(refuse(format!(
                "`{}` does not name a file (it names a folder)",
                path.display()
            )));
        }
        // Where the bytes would go: a link's target (a dangling link names the file to create).
        let target =
            follow_links(path).map_err(|e| refuse(format!("`{}`: {e}", path.display())))?;
        if let Some(dir) = target.parent() {
            if !dir.as_os_str().is_empty() && !dir.is_dir() {
                return Err(refuse(if target == path {
                    format!("the folder `{}` does not exist", dir.display())
                } else {
                    format!(
                        "`{}` links to `{}`, in a folder that does not exist",
                        path.display(),
                        target.display()
                    )
                }));
            }
        }
        if target.is_dir() {
            return Err(refuse(format!(
                "`{}` is a directory; name a file in it",
                path.display()
            )));
        }
        let earlier = outputs[..i].iter().map(|&(other, p)| (other, p));
        for (what, other) in inputs.iter().copied().chain(earlier) {
            if same_file(path, other) {
                return Err(refuse(format!(
                    "`{}` is also the {what}; refusing to overwrite it",
                    path.display()
                )));
            }
        }
        check_writable(path).map_err(|e| match e {
            RuntimeError::Io { path, source } => {
                refuse(format!("cannot write `{}`: {source}", path.display()))
            }
            other => refuse(other.to_string()),
        })?;
    }
    Ok(())
}

/// Whether `path` ends in a path separator (`out/`): it names a folder, whatever is there.
fn ends_with_separator(path: &Path) -> bool {
    let text = path.as_os_str().to_string_lossy();
    text.ends_with(std::path::MAIN_SEPARATOR) || text.ends_with('/')
}

/// Whether two paths name the same file (through links and `..`, or as two hard links to
/// one file), for a file that may not exist yet: its folder's canonical path and its name.
fn same_file(a: &Path, b: &Path) -> bool {
    fn resolved(path: &Path) -> Option<std::path::PathBuf> {
        if let Ok(full) = std::fs::canonicalize(path) {
            return Some(full);
        }
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        Some(std::fs::canonicalize(dir).ok()?.join(path.file_name()?))
    }
    // Writing into a device or pipe (`/dev/null`, a terminal) never clobbers a file.
    if std::fs::metadata(a).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(a), Ok(b)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            if a.dev() == b.dev() && a.ino() == b.ino() {
                return true;
            }
        }
    }
    match (resolved(a), resolved(b)) {
        (Some(a), Some(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_must_not_be_inputs_each_other_or_directories() {
        let dir = tempfile::tempdir().expect("dir");
        let train = dir.path().join("train.csv");
        std::fs::write(&train, "u,y\n").expect("write");
        let model = dir.path().join("model.bin");
        let inputs = [("train file", train.as_path())];
        assert!(check_outputs(&[("--model", &model)], &inputs).is_ok());
        let again = dir.path().join("sub/../train.csv");
        std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
        let error = check_outputs(&[("--model", &again)], &inputs).expect_err("an input");
        assert!(error.to_string().contains("also the train file"), "{error}");
        let twice = check_outputs(&[("--model", &model), ("--plot", &model)], &[]);
        assert!(twice.is_err_and(|e| e.to_string().contains("also the --model")));
        let folder = check_outputs(&[("--model", dir.path())], &[]);
        assert!(folder.is_err_and(|e| e.to_string().contains("is a directory")));
        let missing = check_outputs(&[("--model", &dir.path().join("no/such.bin"))], &[]);
        assert!(missing.is_err_and(|e| e.to_string().contains("does not exist")));
    }
}
