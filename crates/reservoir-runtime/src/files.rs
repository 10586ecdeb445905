//! Writing output files without losing anything: a regular file is replaced atomically (a
//! temporary file beside it, synced, then renamed over it, keeping its permission bits), a
//! symbolic link's target is written and the link kept, and anything else that is not a
//! directory (a device such as `/dev/null`, a pipe) is written through, never replaced.

use std::fs;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Result, RuntimeError};

/// The temporary files being written now, for [`remove_temporaries`].
static IN_FLIGHT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Removes the temporary files of writes still in progress: what a program calls when it is
/// interrupted (Ctrl-C, `kill`), before it exits, so no half-written `.NAME.tmpPID` stays
/// behind. (A process killed outright cannot; its temporaries go on the next write beside
/// them.)
pub fn remove_temporaries() {
    if let Ok(mut in_flight) = IN_FLIGHT.lock() {
        for temp in in_flight.drain(..) {
            let _ = fs::remove_file(temp);
        }
    }
}

/// Records `temp` as being written (`true`) or done with (`false`).
fn track(temp: &Path, writing: bool) {
    if let Ok(mut in_flight) = IN_FLIGHT.lock() {
        if writing {
            in_flight.push(temp.to_path_buf());
        } else {
            in_flight.retain(|t| t != temp);
        }
    }
}

/// Most links followed from an output path before it counts as a loop.
const MAX_LINKS: usize = 16;

/// Writes `bytes` to `path` as the module says. On any failure the temporary file is removed
/// and what `path` named is left as it was. Temporary files left beside `path` by a writer that
/// was killed (`.NAME.tmpPID` of a process that no longer runs) are removed first.
///
/// # Errors
/// An I/O error naming `path`: a directory, a link loop, or any failure to write.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let io_error = |source| RuntimeError::Io {
        path: path.to_path_buf(),
        source,
    };
    let target = follow_links(path).map_err(io_error)?;
    match fs::metadata(&target) {
        Ok(meta) if meta.is_dir() => Err(io_error(std::io::Error::new(
            ErrorKind::IsADirectory,
            "is a directory, not a file",
        ))),
        Ok(meta) if !meta.is_file() => write_through(&target, bytes).map_err(io_error),
        Ok(meta) => replace(&target, bytes, Some(meta.permissions())).map_err(io_error),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            replace(&target, bytes, None).map_err(io_error)
        }
        Err(e) => Err(io_error(e)),
    }
}

/// What `path` finally names, following symbolic links (a link to a missing file names that
/// file, to be created).
fn follow_links(path: &Path) -> std::io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(std::io::Error::other(format!(
        "more than {MAX_LINKS} symbolic links in a row (a loop?)"
    )))
}

/// Writes into an existing file that is not a regular file (a device, a pipe) in place.
fn write_through(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = fs::OpenOptions::new().write(true).open(target)?;
    file.write_all(bytes)?;
    file.flush()
}

/// Writes a temporary file beside `target`, syncs it, gives it `permissions` (those of the
/// file it replaces), and renames it over `target`.
fn replace(
    target: &Path,
    bytes: &[u8],
    permissions: Option<fs::Permissions>,
) -> std::io::Result<()> {
    let file_name = target
        .file_name()
        .ok_or_else(|| std::io::Error::other("the path names no file"))?;
    let prefix = temp_prefix(file_name);
    remove_stale_temporaries(target, &prefix);
    let mut temp_name = prefix;
    temp_name.push(std::process::id().to_string());
    let temp = target.with_file_name(temp_name);
    track(&temp, true);
    let written = (|| {
        let mut file = fs::File::create(&temp)?;
        file.write_all(bytes)?;
        if let Some(permissions) = permissions {
            file.set_permissions(permissions)?;
        }
        file.sync_all()?;
        fs::rename(&temp, target)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    track(&temp, false);
    written
}

/// `.NAME.tmp`: the start of every temporary file name for `NAME`.
fn temp_prefix(file_name: &std::ffi::OsStr) -> std::ffi::OsString {
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(file_name);
    prefix.push(".tmp");
    prefix
}

/// Removes the `PREFIX<pid>` files beside `target` whose process no longer runs (where the
/// system says which processes run: `/proc`). Failures are ignored: it is only tidying.
fn remove_stale_temporaries(target: &Path, prefix: &std::ffi::OsStr) {
    let proc_dir = Path::new("/proc");
    if !proc_dir.is_dir() {
        return;
    }
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let (Ok(entries), Some(prefix)) = (fs::read_dir(dir), prefix.to_str()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
            continue;
        };
        let is_pid = !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit());
        if is_pid && !proc_dir.join(pid).exists() && entry.path().is_file() {
            let _ = fs::remove_file(entry.path());
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_replaced_keeping_its_permission_bits() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("out.csv");
        fs::write(&path, "old").expect("write");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).expect("chmod");
        write_atomically(&path, b"new").expect("written");
        assert_eq!(fs::read_to_string(&path).expect("read"), "new");
        let mode = fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
    }

    #[test]
    fn a_link_is_kept_and_its_target_written() {
        let dir = tempfile::tempdir().expect("dir");
        let (target, link) = (dir.path().join("real.bin"), dir.path().join("link.bin"));
        fs::write(&target, "old").expect("write");
        std::os::unix::fs::symlink("real.bin", &link).expect("symlink");
        write_atomically(&link, b"new").expect("written");
        assert!(fs::symlink_metadata(&link)
            .expect("meta")
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&target).expect("read"), "new");
        // A dangling link names the file to create.
        let dangling = dir.path().join("dangling.bin");
        std::os::unix::fs::symlink("created.bin", &dangling).expect("symlink");
        write_atomically(&dangling, b"made").expect("written");
        assert_eq!(
            fs::read_to_string(dir.path().join("created.bin")).expect("read"),
            "made"
        );
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::os::unix::fs::symlink("b", &a).expect("symlink");
        std::os::unix::fs::symlink("a", &b).expect("symlink");
        assert!(write_atomically(&a, b"x").is_err_and(|e| e.to_string().contains("loop")));
    }

    #[test]
    fn devices_are_written_through_and_directories_refused() {
        write_atomically(Path::new("/dev/null"), b"discarded").expect("written through");
        let meta = fs::metadata("/dev/null").expect("meta");
        assert!(
            !meta.is_file() && !meta.is_dir(),
            "/dev/null is still a device"
        );
        let dir = tempfile::tempdir().expect("dir");
        let error = write_atomically(dir.path(), b"x").expect_err("a directory");
        assert!(error.to_string().contains("is a directory"), "{error}");
    }

    #[test]
    fn temporaries_of_dead_writers_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("model.bin");
        // No process has this id (above the kernel's pid_max); process 1 always runs.
        let dead = dir.path().join(".model.bin.tmp4999999999");
        let live = dir.path().join(".model.bin.tmp1");
        let other = dir.path().join(".other.bin.tmp4999999999");
        for file in [&dead, &other] {
            fs::write(file, "left behind").expect("write");
        }
        fs::write(&live, "in use").expect("write");
        write_atomically(&path, b"model").expect("written");
        assert!(!dead.exists(), "a dead writer's temporary is removed");
        assert!(other.exists(), "another file's temporary is left alone");
        assert!(live.exists(), "a running writer's temporary is left alone");
        assert_eq!(fs::read_to_string(&path).expect("read"), "model");
    }
}
