//! Where uploads past the spool threshold are written as they arrive: a directory of this
//! process's own under the spool directory, temporary files removed with their guards, and
//! the disk budget they draw on.
//!
//! The layout, under the spool directory (by default `strata-uploads-<uid>` in the system's
//! temporary directory; `strata-uploads` where there are no user ids):
//!
//! ```text
//! <spool dir>/<pid>-<process nonce>-<n>/<k>.upload
//! ```
//!
//! One subdirectory per [`UploadLimits`](crate::UploadLimits) value (and its clones) in a
//! process, created on first use (the server prepares it at start), removed with the last
//! clone. Each temporary file is removed when its guard is dropped: with the last clone of its
//! `UploadedFile`, or when the read of its part fails or is cancelled. What a crash leaves is
//! removed at the next preparation in the same spool directory: every subdirectory named as
//! above whose process is gone (no process has its pid) or that a former process with this
//! process's pid left (its nonce differs; a container's server is often pid 1 at every start).
//! Nothing else in the directory is touched.

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// A spool directory and the disk budget of the files in it: shared by the clones of one
/// [`UploadLimits`](crate::UploadLimits).
#[derive(Clone)]
pub(crate) struct Spool(Arc<Shared>);

struct Shared {
    base: PathBuf,
    capacity: u64,
    used: AtomicU64,
    /// This value's own subdirectory, once created.
    dir: Mutex<Option<PathBuf>>,
    /// Names the next temporary file.
    next: AtomicU64,
}

/// The spool directory by default: `strata-uploads-<effective uid>` in the system's temporary
/// directory (so that users of one machine do not share one), `strata-uploads` without uids.
pub(crate) fn default_dir() -> PathBuf {
    #[cfg(unix)]
    let name = format!("strata-uploads-{}", rustix::process::geteuid().as_raw());
    #[cfg(not(unix))]
    let name = "strata-uploads".to_owned();
    std::env::temp_dir().join(name)
}

impl Spool {
    pub(crate) fn new(base: PathBuf, capacity: u64) -> Self {
        Self(Arc::new(Shared {
            base,
            capacity,
            used: AtomicU64::new(0),
            dir: Mutex::new(None),
            next: AtomicU64::new(0),
        }))
    }

    pub(crate) fn base(&self) -> &Path {
        &self.0.base
    }

    pub(crate) fn capacity(&self) -> u64 {
        self.0.capacity
    }

    pub(crate) fn used(&self) -> u64 {
        self.0.used.load(Ordering::Relaxed)
    }

    /// This value's directory, created (and the spool directory swept) the first time; off the
    /// runtime's threads, as removing a crashed process's leftovers may take a while.
    pub(crate) async fn dir(&self) -> io::Result<PathBuf> {
        if let Some(dir) = self
            .0
            .dir
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
        {
            return Ok(dir.clone());
        }
        let shared = Arc::clone(&self.0);
        tokio::task::spawn_blocking(move || shared.prepare())
            .await
            .map_err(io::Error::other)?
    }

    /// A new temporary file in this value's directory, under a generated name (never the
    /// client's), and the guard that removes it.
    pub(crate) async fn create(&self) -> io::Result<(std::fs::File, TempFile)> {
        let dir = self.dir().await?;
        let n = self.0.next.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{n}.upload"));
        let opened = path.clone();
        let file = tokio::task::spawn_blocking(move || {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(opened)
        })
        .await
        .map_err(io::Error::other)??;
        let guard = TempFile {
            path,
            bytes: 0,
            spool: self.clone(),
        };
        Ok((file, guard))
    }
}

impl Shared {
    fn prepare(&self) -> io::Result<PathBuf> {
        static INSTANCE: AtomicU64 = AtomicU64::new(0);
        let mut slot = self
            .dir
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(dir) = slot.as_ref() {
            return Ok(dir.clone());
        }
        let named = |error: io::Error| {
            io::Error::new(
                error.kind(),
                format!(
                    "the upload spool directory {}: {error}",
                    self.base.display()
                ),
            )
        };
        private_dir_builder()
            .recursive(true)
            .create(&self.base)
            .map_err(named)?;
        check_owner(&self.base).map_err(named)?;
        sweep(&self.base);
        let name = format!(
            "{}-{:016x}-{}",
            std::process::id(),
            process_nonce(),
            INSTANCE.fetch_add(1, Ordering::Relaxed)
        );
        let dir = self.base.join(name);
        private_dir_builder().create(&dir).map_err(named)?;
        *slot = Some(dir.clone());
        Ok(dir)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Every temporary file holds a clone: none is left.
        if let Some(dir) = self.dir.get_mut().ok().and_then(Option::take) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

impl fmt::Debug for Spool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Spool")
            .field("dir", &self.0.base)
            .field("capacity", &self.0.capacity)
            .field("used", &self.used())
            .finish()
    }
}

/// The settings are compared, not the count.
impl PartialEq for Spool {
    fn eq(&self, other: &Self) -> bool {
        self.0.base == other.0.base && self.0.capacity == other.0.capacity
    }
}

impl Eq for Spool {}

/// Directories only this user can enter: uploads are the clients' data.
fn private_dir_builder() -> std::fs::DirBuilder {
    #[allow(unused_mut)]
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
}

/// The spool directory must be this user's: another user's (one made in a shared temporary
/// directory before the server's first start) could read or replace the uploads.
fn check_owner(base: &Path) -> io::Result<()> {
    let metadata = std::fs::metadata(base)?;
    if !metadata.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            "not a directory",
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let me = rustix::process::geteuid().as_raw();
        if metadata.uid() != me {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "owned by user {}, not by this process's user {me}",
                    metadata.uid()
                ),
            ));
        }
    }
    Ok(())
}

/// A number drawn once per process: told apart from a former process that had the same pid.
fn process_nonce() -> u64 {
    static NONCE: OnceLock<u64> = OnceLock::new();
    *NONCE.get_or_init(|| {
        // `RandomState` is seeded from the system's randomness; the time adds to it.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        hasher.write_u32(std::process::id());
        hasher.finish()
    })
}

/// The pid and nonce of a directory named `<pid>-<16 hex digits>-<n>`; `None` for any other
/// name.
fn parse_name(name: &str) -> Option<(u32, u64)> {
    let mut parts = name.split('-');
    let (pid, nonce, n) = (parts.next()?, parts.next()?, parts.next()?);
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if parts.next().is_some()
        || !digits(pid)
        || !digits(n)
        || nonce.len() != 16
        || !nonce
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    {
        return None;
    }
    Some((pid.parse().ok()?, u64::from_str_radix(nonce, 16).ok()?))
}

/// Whether a directory named so was left by a process that is gone.
fn is_left_over(pid: u32, nonce: u64) -> bool {
    if pid == std::process::id() {
        // No other live process has this pid: a former one left it.
        return nonce != process_nonce();
    }
    !is_alive(pid)
}

#[cfg(unix)]
fn is_alive(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return true;
    };
    // `kill(pid, 0)`: no such process is ESRCH; another user's process is EPERM, alive.
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

#[cfg(not(unix))]
fn is_alive(_pid: u32) -> bool {
    // Without a portable check, only this pid's former directories are removed.
    true
}

/// Removes the subdirectories of `base` that crashed processes left (see the module's
/// documentation); errors are skipped: what stays is tried again at the next start.
pub(crate) fn sweep(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, nonce)) = name.to_str().and_then(parse_name) else {
            continue;
        };
        // A directory itself, not a link to one elsewhere.
        let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
        if is_dir && is_left_over(pid, nonce) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A temporary file: removed, and its bytes given back to the disk budget, when dropped.
pub(crate) struct TempFile {
    path: PathBuf,
    /// Reserved from the budget.
    bytes: u64,
    spool: Spool,
}

impl TempFile {
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Reserves `bytes` more from the budget; `false`, reserving nothing, when they do not
    /// fit.
    pub(crate) fn try_grow(&mut self, bytes: u64) -> bool {
        let shared = &self.spool.0;
        let mut used = shared.used.load(Ordering::Relaxed);
        loop {
            let Some(wanted) = used.checked_add(bytes).filter(|w| *w <= shared.capacity) else {
                return false;
            };
            match shared.used.compare_exchange_weak(
                used,
                wanted,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    self.bytes += bytes;
                    return true;
                }
                Err(now) => used = now,
            }
        }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        // Gone already when the part's read failed before its file was made.
        let _ = std::fs::remove_file(&self.path);
        self.spool.0.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

impl fmt::Debug for TempFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TempFile")
            .field("path", &self.path)
            .field("bytes", &self.bytes)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_made_by_the_spool_are_read() {
        let nonce = "00ff00ff00ff00ff";
        assert_eq!(
            parse_name(&format!("12-{nonce}-3")),
            Some((12, 0x00ff_00ff_00ff_00ff))
        );
        for other in [
            "12",
            "12-00ff00ff00ff00ff",
            "12-00FF00FF00FF00FF-3",
            "12-00ff00ff00ff00f-3",
            "12-00ff00ff00ff00ff-3-4",
            "-00ff00ff00ff00ff-3",
            "x12-00ff00ff00ff00ff-3",
            "12-00ff00ff00ff00ff-",
            "..",
            "lost+found",
        ] {
            assert_eq!(parse_name(other), None, "{other}");
        }
    }

    #[test]
    fn a_former_process_with_this_pid_left_its_directory_but_this_one_did_not() {
        let me = std::process::id();
        assert!(!is_left_over(me, process_nonce()));
        assert!(is_left_over(me, process_nonce() ^ 1));
    }

    #[cfg(unix)]
    #[test]
    fn a_dead_process_is_told_from_a_live_one() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!is_alive(pid), "reaped: no process has its pid");
        // pid 1 is always alive (and another user's: EPERM).
        assert!(is_alive(1));
        assert!(is_alive(std::process::id()));
    }

    #[test]
    fn the_budget_is_shared_and_given_back() {
        let spool = Spool::new(std::env::temp_dir(), 10);
        let mut a = TempFile {
            path: PathBuf::from("/nonexistent/a"),
            bytes: 0,
            spool: spool.clone(),
        };
        let mut b = TempFile {
            path: PathBuf::from("/nonexistent/b"),
            bytes: 0,
            spool: spool.clone(),
        };
        assert!(a.try_grow(6));
        assert!(!b.try_grow(5), "6 + 5 > 10");
        assert!(b.try_grow(4));
        assert_eq!(spool.used(), 10);
        drop(a);
        assert_eq!(spool.used(), 4);
        drop(b);
        assert_eq!(spool.used(), 0);
    }
}
