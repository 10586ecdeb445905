//! Compiled kernel modules on disk, so that a process after the first loads its kernels instead
//! of having the driver compile their PTX again (tens to hundreds of milliseconds per module).
//!
//! An entry is keyed by everything that changes the compiled code: the module's PTX, the
//! device's architecture, the driver's version and this crate's version. A file holds a magic tag, its key, the payload's length and checksum,
//! then the payload, and is written to a temporary file and renamed into place, so a reader
//! never sees half a file. Anything wrong with the cache (a corrupt or foreign file, a folder
//! that cannot be created or written) is a note, never a failure: the kernels are compiled
//! again.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use reservoir_kernels::fingerprint;

/// The environment variable naming the cache folder; `off` turns the cache off.
pub const CACHE_ENV: &str = "RESERVOIR_KERNEL_CACHE";

const MAGIC: &[u8; 8] = b"RKCACHE1";
const HEADER_BYTES: usize = MAGIC.len() + 3 * 8;

/// Where compiled kernels are kept: `$RESERVOIR_KERNEL_CACHE` if set (`off`: nowhere), else
/// `$XDG_CACHE_HOME/reservoir/kernels`, else `$HOME/.cache/reservoir/kernels`.
pub(crate) fn cache_dir() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var(CACHE_ENV) {
        return (dir != "off").then(|| PathBuf::from(dir));
    }
    var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|home| Path::new(&home).join(".cache")))
        .map(|base| base.join("reservoir").join("kernels"))
}

/// A folder of compiled modules.
#[derive(Debug, Clone)]
pub(crate) struct KernelCache {
    dir: PathBuf,
}

/// What a lookup found.
#[derive(Debug)]
pub(crate) enum Lookup {
    /// The entry, checked.
    Hit(Vec<u8>),
    /// No entry.
    Miss,
    /// An entry that cannot be used; the note says why.
    Unusable(String),
}

impl KernelCache {
    /// The cache in `dir` (created when the first entry is stored).
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// The file of entry `key` of module `name`.
    fn path(&self, name: &str, key: u64) -> PathBuf {
        self.dir.join(format!("{name}-{key:016x}.bin"))
    }

    /// The payload stored under `key` for module `name`, checked against its header.
    pub(crate) fn load(&self, name: &str, key: u64) -> Lookup {
        let path = self.path(name, key);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Lookup::Miss,
            Err(e) => return Lookup::Unusable(format!("cannot read {}: {e}", path.display())),
        };
        match decode(&bytes, key) {
            Some(payload) => Lookup::Hit(payload.to_vec()),
            None => Lookup::Unusable(format!(
                "{} is corrupt or was written for something else",
                path.display()
            )),
        }
    }

    /// Stores `payload` under `key` for module `name`, atomically (a temporary file renamed
    /// into place). The error is a note for the caller to pass on.
    pub(crate) fn store(&self, name: &str, key: u64, payload: &[u8]) -> Result<(), String> {
        let path = self.path(name, key);
        let failed =
            |what: &str, e: std::io::Error| format!("cannot {what} {}: {e}", path.display());
        fs::create_dir_all(&self.dir).map_err(|e| failed("create the folder of", e))?;
        let temporary = self.dir.join(format!(
            ".{name}-{key:016x}.{}.{:?}.tmp",
            std::process::id(),
            std::thread::current().id()
        ));
        let written = fs::File::create(&temporary).and_then(|mut file| {
            file.write_all(&encode(key, payload))?;
            file.sync_all()
        });
        if let Err(e) = written.and_then(|()| fs::rename(&temporary, &path)) {
            let _ = fs::remove_file(&temporary);
            return Err(failed("write", e));
        }
        Ok(())
    }
}

/// The file's bytes: magic, key, payload length, payload checksum, payload.
fn encode(key: u64, payload: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(HEADER_BYTES + payload.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&key.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&fingerprint(&[payload]).to_le_bytes());
    bytes.extend_from_slice(payload);
    bytes
}

/// The payload of a file written by [`encode`] for `key`, if the file is whole and is one.
fn decode(bytes: &[u8], key: u64) -> Option<&[u8]> {
    let (header, payload) = bytes.split_at_checked(HEADER_BYTES)?;
    let word = |i: usize| {
        let start = MAGIC.len() + 8 * i;
        header[start..start + 8]
            .try_into()
            .ok()
            .map(u64::from_le_bytes)
    };
    let whole = header.starts_with(MAGIC)
        && word(0)? == key
        && word(1)? == payload.len() as u64
        && word(2)? == fingerprint(&[payload]);
    whole.then_some(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temporary_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "reservoir-kernel-cache-{name}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_stored_entry_loads_back_and_leaves_no_temporary_file() {
        let dir = temporary_dir("round-trip");
        let cache = KernelCache::new(dir.join("nested"));
        assert!(matches!(cache.load("esn.cu", 7), Lookup::Miss));
        cache.store("esn.cu", 7, b"cubin bytes").expect("store");
        match cache.load("esn.cu", 7) {
            Lookup::Hit(payload) => assert_eq!(payload, b"cubin bytes"),
            other => panic!("expected a hit, got {other:?}"),
        }
        assert!(matches!(cache.load("esn.cu", 8), Lookup::Miss));
        let names: Vec<_> = fs::read_dir(dir.join("nested"))
            .expect("folder")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn corrupt_truncated_and_foreign_files_are_unusable_not_errors() {
        let dir = temporary_dir("corrupt");
        let cache = KernelCache::new(dir.clone());
        cache.store("lif.cu", 3, b"payload").expect("store");
        let path = cache.path("lif.cu", 3);
        let good = fs::read(&path).expect("read");

        let mut flipped = good.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        let mut foreign = good.clone();
        foreign[MAGIC.len()] ^= 1;
        for bad in [
            flipped,
            good[..good.len() - 1].to_vec(),
            foreign,
            b"x".to_vec(),
        ] {
            fs::write(&path, &bad).expect("write");
            match cache.load("lif.cu", 3) {
                Lookup::Unusable(note) => assert!(note.contains("lif.cu"), "{note}"),
                other => panic!("expected unusable, got {other:?}"),
            }
        }
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_unwritable_folder_is_a_note() {
        let dir = temporary_dir("unwritable");
        fs::write(&dir, b"a file where the folder should be").expect("write");
        let note = KernelCache::new(dir.join("kernels"))
            .store("esn.cu", 1, b"x")
            .expect_err("a file in the way");
        assert!(note.contains("cannot"), "{note}");
        let _ = fs::remove_file(&dir);
    }
}
