//! Writing output files without losing anything: a regular file is replaced atomically (a
//! temporary file beside it, synced, then renamed over it, keeping its permission bits and, where
//! the process may, its owner), a symbolic link's target is written and the link kept, and
//! anything else that is not a directory (a device such as `/dev/null`, a pipe) is written
//! through, never replaced. A regular file that the process may not write (read-only) is refused,
//! not replaced.
//!
//! A command with several outputs [`stage`]s each (its temporary file written and synced) and
//! commits them together only once all are staged ([`Staged::commit`]), so a failure part way
//! leaves every output as it was; [`write_atomically`] is one output staged and committed.

use std::fs;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::error::{Result, RuntimeError};

/// The temporary files being written now, for [`remove_temporaries`].
static IN_FLIGHT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// Set by [`remove_temporaries`]: no temporary file is created after it.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// The list of temporaries, even after a thread panicked holding it.
fn in_flight() -> MutexGuard<'static, Vec<PathBuf>> {
    IN_FLIGHT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Removes the temporary files of writes still in progress: what a program calls when it is
/// interrupted (Ctrl-C, `kill`), before it exits, so no half-written `.NAME.tmpPID` stays
/// behind. No temporary file is created after it (a write racing the interrupt fails instead).
/// (A process killed outright cannot; its temporaries go on the next write beside them.)
pub fn remove_temporaries() {
    let mut in_flight = in_flight();
    INTERRUPTED.store(true, Ordering::SeqCst);
    for temp in in_flight.drain(..) {
        let _ = fs::remove_file(temp);
    }
}

/// Creates `temp` (never through an existing file or link of that name) and records it as
/// being written, unless the process is being interrupted.
fn create_temporary(temp: &Path) -> std::io::Result<fs::File> {
    let mut in_flight = in_flight();
    if INTERRUPTED.load(Ordering::SeqCst) {
        return Err(std::io::Error::new(
            ErrorKind::Interrupted,
            "interrupted before the output was written",
        ));
    }
    let create = || {
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(temp)
    };
    let file = match create() {
        // A leftover of this process id (a link, or a file from an earlier process): remove
        // the name, never write through it.
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            fs::remove_file(temp)?;
            create()?
        }
        other => other?,
    };
    in_flight.push(temp.to_path_buf());
    Ok(file)
}

/// Removes `temp` (when `remove`) and forgets it.
fn forget_temporary(temp: &Path, remove: bool) {
    let mut in_flight = in_flight();
    if remove {
        let _ = fs::remove_file(temp);
    }
    in_flight.retain(|t| t != temp);
}

/// Most links followed from an output path before it counts as a loop.
const MAX_LINKS: usize = 16;

/// Permission bits kept when a file is replaced: read, write and execute; never set-user-ID,
/// set-group-ID or sticky on new contents (writing a file clears them too).
#[cfg(unix)]
const KEPT_MODE_BITS: u32 = 0o777;

/// Writes `bytes` to `path` as the module says. On any failure the temporary file is removed
/// and what `path` named is left as it was. Temporary files left beside `path` by a writer that
/// was killed (`.NAME.tmpPID` of a process that no longer runs) are removed first.
///
/// # Errors
/// An I/O error naming `path`: a directory, a link loop, a read-only file, or any failure to
/// write.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    stage(path, bytes)?.commit()
}

/// An output ready to be put in place: a regular file's contents in a synced temporary file
/// beside it, or a device's contents and the device opened for writing. Dropped without
/// [`Staged::commit`], the temporary file is removed and nothing is written.
#[derive(Debug)]
#[must_use = "an output is written only when committed"]
pub struct Staged {
    /// The path as given, for messages.
    path: PathBuf,
    /// Where the bytes go: `path` after its links.
    target: PathBuf,
    how: How,
}

/// How a [`Staged`] output is put in place.
#[derive(Debug)]
enum How {
    /// Rename this temporary file over the target.
    Rename(PathBuf),
    /// Write these bytes into the target, opened for writing.
    Through(fs::File, Vec<u8>),
    /// Already done (committed or failed).
    Done,
}

impl Staged {
    /// The output's path, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder the output is renamed into (`None` for a device or pipe written through).
    pub fn folder(&self) -> Option<&Path> {
        match self.how {
            How::Rename(_) => Some(
                self.target
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new(".")),
            ),
            How::Through(..) | How::Done => None,
        }
    }

    /// Whether committing writes into an existing device or pipe (which can fail part way)
    /// rather than renaming a finished file into place: commit those first.
    pub fn writes_through(&self) -> bool {
        matches!(self.how, How::Through(..))
    }

    /// Puts the output in place: renames the temporary file over the target, or writes the
    /// bytes through.
    ///
    /// # Errors
    /// An I/O error naming the output's path; the target is then left as it was.
    pub fn commit(mut self) -> Result<()> {
        let io_error = |source| RuntimeError::Io {
            path: self.path.clone(),
            source,
        };
        match std::mem::replace(&mut self.how, How::Done) {
            How::Rename(temp) => {
                let renamed = fs::rename(&temp, &self.target);
                forget_temporary(&temp, renamed.is_err());
                renamed.map_err(io_error)
            }
            How::Through(mut file, bytes) => file
                .write_all(&bytes)
                .and_then(|()| file.flush())
                .map_err(io_error),
            How::Done => Ok(()),
        }
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let How::Rename(temp) = &self.how {
            forget_temporary(temp, true);
        }
    }
}

/// Exclusive locks on folders, released when dropped: held while a command puts its outputs
/// in place, so another process committing outputs into the same folders waits, and each
/// command's outputs land as a set (never one file from each).
#[derive(Debug)]
#[must_use = "the folders are locked only while this is held"]
pub struct FolderLocks {
    /// The open folders whose locks are held; closing them releases the locks.
    _held: Vec<fs::File>,
}

/// Locks `folders` (each once, in sorted order, so two processes never wait on each other),
/// waiting for another process that holds one. A folder that cannot be opened or locked (a
/// file system without locks) is left unlocked: its outputs are still each renamed whole.
pub fn lock_folders<'a>(folders: impl IntoIterator<Item = &'a Path>) -> FolderLocks {
    let mut folders: Vec<PathBuf> = folders
        .into_iter()
        .map(|f| fs::canonicalize(f).unwrap_or_else(|_| f.to_path_buf()))
        .collect();
    folders.sort();
    folders.dedup();
    FolderLocks {
        _held: folders
            .iter()
            .filter_map(|folder| {
                let file = fs::File::open(folder).ok()?;
                file.lock().ok()?;
                Some(file)
            })
            .collect(),
    }
}

/// Stages `bytes` for `path` (see [`Staged`]): nothing at `path` changes until
/// [`Staged::commit`]. Temporary files left beside the target by a writer that was killed are
/// removed first.
///
/// # Errors
/// An I/O error naming `path`: a directory, a link loop, a read-only file, a folder that
/// cannot be written, or any failure to write the temporary file.
pub fn stage(path: &Path, bytes: &[u8]) -> Result<Staged> {
    let io_error = |source| RuntimeError::Io {
        path: path.to_path_buf(),
        source,
    };
    let target = follow_links(path).map_err(io_error)?;
    let how = match fs::metadata(&target) {
        Ok(meta) if meta.is_dir() => Err(is_a_directory()),
        Ok(meta) if !meta.is_file() => fs::OpenOptions::new()
            .write(true)
            .open(&target)
            .map(|file| How::Through(file, bytes.to_vec())),
        Ok(meta) => writable(&target).and_then(|()| write_temporary(&target, bytes, Some(&meta))),
        Err(e) if e.kind() == ErrorKind::NotFound => write_temporary(&target, bytes, None),
        Err(e) => Err(e),
    }
    .map_err(io_error)?;
    Ok(Staged {
        path: path.to_path_buf(),
        target,
        how,
    })
}

/// Checks, before any work, that `path` could be written as [`write_atomically`] would: not a
/// directory or a link loop; a regular file that may be written; a folder where a file can be
/// created (tried with a temporary file, removed at once). A device or pipe is not opened
/// (opening a pipe would wait for, or end, its reader).
///
/// # Errors
/// What [`stage`] would fail with, naming `path`.
pub fn check_writable(path: &Path) -> Result<()> {
    let io_error = |source| RuntimeError::Io {
        path: path.to_path_buf(),
        source,
    };
    let target = follow_links(path).map_err(io_error)?;
    match fs::metadata(&target) {
        Ok(meta) if meta.is_dir() => Err(is_a_directory()),
        Ok(meta) if !meta.is_file() => Ok(()),
        Ok(_) => writable(&target).and_then(|()| probe_folder(&target)),
        Err(e) if e.kind() == ErrorKind::NotFound => probe_folder(&target),
        Err(e) => Err(e),
    }
    .map_err(io_error)
}

/// The error for an output that names a directory.
fn is_a_directory() -> std::io::Error {
    std::io::Error::new(ErrorKind::IsADirectory, "is a directory, not a file")
}

/// An error unless the existing regular file `target` may be written (opened for writing,
/// without truncating it): a read-only file is the user's to replace, not ours.
fn writable(target: &Path) -> std::io::Result<()> {
    match fs::OpenOptions::new().write(true).open(target) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == ErrorKind::PermissionDenied => Err(std::io::Error::new(
            ErrorKind::PermissionDenied,
            "the file is read-only (not writable by this user); refusing to replace it",
        )),
        Err(e) => Err(e),
    }
}

/// Creates and removes a temporary file beside `target`: whether its folder takes new files.
fn probe_folder(target: &Path) -> std::io::Result<()> {
    let temp = temp_path(target)?;
    create_temporary(&temp).map(drop)?;
    forget_temporary(&temp, true);
    Ok(())
}

/// What `path` finally names, following symbolic links (a link to a missing file names that
/// file, to be created).
pub fn follow_links(path: &Path) -> std::io::Result<PathBuf> {
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

/// `.NAME.tmpPID` beside `target`, after removing the temporaries of dead writers there.
fn temp_path(target: &Path) -> std::io::Result<PathBuf> {
    let file_name = target
        .file_name()
        .ok_or_else(|| std::io::Error::other("the path names no file"))?;
    let prefix = temp_prefix(file_name);
    remove_stale_temporaries(target, &prefix);
    let mut temp_name = prefix;
    temp_name.push(std::process::id().to_string());
    Ok(target.with_file_name(temp_name))
}

/// Writes a temporary file beside `target`, gives it the permission bits (and, where the
/// process may, the owner) of `existing`, the file it will replace, and syncs it.
fn write_temporary(
    target: &Path,
    bytes: &[u8],
    existing: Option<&fs::Metadata>,
) -> std::io::Result<How> {
    let temp = temp_path(target)?;
    let mut file = create_temporary(&temp)?;
    let written = (|| {
        file.write_all(bytes)?;
        if let Some(existing) = existing {
            keep_mode_and_owner(&file, existing)?;
        }
        file.sync_all()
    })();
    match written {
        Ok(()) => Ok(How::Rename(temp)),
        Err(e) => {
            forget_temporary(&temp, true);
            Err(e)
        }
    }
}

/// Gives `file` the permission bits of `existing` (see [`KEPT_MODE_BITS`]) and, when the
/// process may (as root, or its own file), its owner and group.
#[cfg(unix)]
fn keep_mode_and_owner(file: &fs::File, existing: &fs::Metadata) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let mode = existing.permissions().mode() & KEPT_MODE_BITS;
    // Best effort: another user's file may keep its permissions but not its owner.
    let _ = std::os::unix::fs::fchown(file, Some(existing.uid()), Some(existing.gid()));
    file.set_permissions(fs::Permissions::from_mode(mode))
}

/// Gives `file` the permissions of `existing`.
#[cfg(not(unix))]
fn keep_mode_and_owner(file: &fs::File, existing: &fs::Metadata) -> std::io::Result<()> {
    file.set_permissions(existing.permissions())
}

/// Longest file name, in bytes, most file systems take (`NAME_MAX`).
const MAX_NAME_BYTES: usize = 255;
/// Room left in a temporary file's name for the process id.
const PID_BYTES: usize = 10;

/// `.NAME.tmp`: the start of every temporary file name for `NAME`. A name too long for that to
/// fit in [`MAX_NAME_BYTES`] with a process id (a valid name of 250 bytes) keeps its first
/// bytes and a hash of the whole name instead: `.NAME-START~HASH.tmp`.
fn temp_prefix(file_name: &std::ffi::OsStr) -> std::ffi::OsString {
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(file_name);
    prefix.push(".tmp");
    if prefix.len() + PID_BYTES <= MAX_NAME_BYTES {
        return prefix;
    }
    let bytes = file_name.as_encoded_bytes();
    // FNV-1a: the same hash in every build, so a later run finds a dead writer's leftovers.
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let start = String::from_utf8_lossy(&bytes[..bytes.len().min(160)])
        .trim_end_matches('\u{fffd}')
        .to_string();
    format!(".{start}~{hash:016x}.tmp").into()
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
    #[test]
    fn staged_outputs_change_nothing_until_committed() {
        let dir = tempfile::tempdir().expect("dir");
        let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
        fs::write(&a, "old a").expect("write");
        let staged = stage(&a, b"new a").expect("staged");
        assert_eq!(staged.path(), a.as_path());
        assert_eq!(fs::read_to_string(&a).expect("read"), "old a");
        // The second output fails: dropping the first removes its temporary, `a` is as it was.
        let failed = stage(&dir.path().join("missing/b.csv"), b"new b");
        assert!(failed.is_err());
        drop(staged);
        assert_eq!(fs::read_to_string(&a).expect("read"), "old a");
        let names: Vec<_> = fs::read_dir(dir.path()).expect("dir").flatten().collect();
        assert_eq!(names.len(), 1, "only a.csv: {names:?}");
        // Both staged, then committed.
        let staged = [stage(&a, b"new a"), stage(&b, b"new b")];
        for staged in staged {
            staged.expect("staged").commit().expect("committed");
        }
        assert_eq!(fs::read_to_string(&a).expect("read"), "new a");
        assert_eq!(fs::read_to_string(&b).expect("read"), "new b");
    }

    #[test]
    fn set_id_bits_are_not_kept_and_a_planted_temporary_name_is_not_followed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("tool.sh");
        fs::write(&path, "old").expect("write");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o4755)).expect("chmod");
        // A link planted under the name of this process's temporary must not be written
        // through: it is replaced, its target left alone.
        let victim = dir.path().join("victim.txt");
        fs::write(&victim, "precious").expect("write");
        let planted = dir
            .path()
            .join(format!(".tool.sh.tmp{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &planted).expect("symlink");
        write_atomically(&path, b"new").expect("written");
        assert_eq!(fs::read_to_string(&path).expect("read"), "new");
        let mode = fs::metadata(&path).expect("meta").permissions().mode() & 0o7777;
        assert_eq!(mode, 0o755, "set-user-ID dropped, rwx kept");
        assert_eq!(fs::read_to_string(&victim).expect("read"), "precious");
        assert!(
            fs::symlink_metadata(&planted).is_err(),
            "the planted name is gone"
        );
    }

    #[test]
    fn read_only_files_and_folders_are_refused_up_front() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("kept.csv");
        fs::write(&path, "mine").expect("write");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).expect("chmod");
        // A privileged user (root) may write anything: nothing to refuse then.
        let privileged = fs::OpenOptions::new().write(true).open(&path).is_ok();
        if !privileged {
            let error = check_writable(&path).expect_err("read-only");
            assert!(error.to_string().contains("read-only"), "{error}");
            assert!(write_atomically(&path, b"new").is_err());
            assert_eq!(fs::read_to_string(&path).expect("read"), "mine");
            let folder = dir.path().join("locked");
            fs::create_dir(&folder).expect("mkdir");
            fs::set_permissions(&folder, fs::Permissions::from_mode(0o555)).expect("chmod");
            assert!(check_writable(&folder.join("new.csv")).is_err());
        }
        // A missing file in a folder that takes files passes, and leaves nothing behind.
        check_writable(&dir.path().join("new.csv")).expect("writable");
        assert_eq!(
            fs::read_dir(dir.path()).expect("dir").count(),
            1 + usize::from(!privileged)
        );
        assert!(check_writable(dir.path()).is_err_and(|e| e.to_string().contains("directory")));
        check_writable(Path::new("/dev/null")).expect("a device is written through");
    }

    #[test]
    fn the_longest_valid_file_name_can_be_written() {
        let dir = tempfile::tempdir().expect("dir");
        let (a, b) = ("a".repeat(250), format!("{}b", "a".repeat(249)));
        write_atomically(&dir.path().join(&a), b"first").expect("written");
        let staged = stage(&dir.path().join(&b), b"second").expect("staged");
        write_atomically(&dir.path().join(&a), b"again").expect("written");
        staged.commit().expect("committed");
        assert_eq!(
            fs::read_to_string(dir.path().join(&a)).expect("read"),
            "again"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join(&b)).expect("read"),
            "second"
        );
        assert_eq!(fs::read_dir(dir.path()).expect("dir").count(), 2);
    }
}
