//! Moving an uploaded file to disk: [`UploadedFileExt::mv`], atomic, with an error naming
//! the path.
//!
//! ```
//! use strata_upload::{UploadedFile, UploadedFileExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let dir = std::env::temp_dir().join(format!("strata-mv-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let file = UploadedFile::new("note.txt", "text/plain", &b"hi"[..]);
//! file.mv(dir.join("note.txt")).await.unwrap();
//! assert_eq!(std::fs::read(dir.join("note.txt")).unwrap(), b"hi");
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # }
//! ```

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use strata_input::UploadedFile;
use tokio::io::AsyncWriteExt;

mod sealed {
    pub trait Sealed {}
    impl Sealed for strata_input::UploadedFile {}
}

/// Writing an [`UploadedFile`] to disk (in the prelude of the `strata` facade).
///
/// An extension trait, so that the vocabulary crate defining `UploadedFile` needs no file
/// system; sealed, so that methods can be added.
pub trait UploadedFileExt: sealed::Sealed {
    /// Writes the file to `path`, replacing any file there, atomically: the contents go to a
    /// new temporary file beside the target, which is then renamed over it. A reader sees the
    /// old file or the whole new one, never a mix; of concurrent moves to one path, the last
    /// rename wins. (No `fsync`: after a power loss the file may be the old one.)
    ///
    /// Fails with a [`MoveError`] naming the path when it cannot be written (a missing directory,
    /// no permission); `?` in a handler turns that into a 500 whose detail is logged, not sent.
    fn mv(&self, path: impl AsRef<Path>) -> impl Future<Output = Result<(), MoveError>> + Send;
}

impl UploadedFileExt for UploadedFile {
    fn mv(&self, path: impl AsRef<Path>) -> impl Future<Output = Result<(), MoveError>> + Send {
        let path = path.as_ref().to_owned();
        async move {
            let temporary = temporary_beside(&path);
            let written = async {
                let mut file = tokio::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&temporary)
                    .await?;
                // Piece by piece: a file kept in pieces is not joined to be written.
                for piece in self.pieces() {
                    file.write_all(piece).await?;
                }
                file.flush().await?;
                drop(file);
                tokio::fs::rename(&temporary, &path).await
            }
            .await;
            if let Err(source) = written {
                // Nothing half-written is left behind (the file may not exist: ignore that).
                let _ = tokio::fs::remove_file(&temporary).await;
                return Err(MoveError {
                    file: self.name().to_owned(),
                    path,
                    source,
                });
            }
            Ok(())
        }
    }
}

/// A name for a temporary file in the directory of `target` that no other move uses: the
/// target's name, the process id and a counter (`.cover.png.1234-7.tmp`).
fn temporary_beside(target: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = target
        .file_name()
        .map_or_else(|| "upload".into(), |name| name.to_string_lossy());
    target.with_file_name(format!(".{name}.{}-{n}.tmp", std::process::id()))
}

/// [`UploadedFileExt::mv`] could not write the file.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the uploaded file {file:?} to {}: {source}", .path.display())]
pub struct MoveError {
    file: String,
    path: PathBuf,
    source: std::io::Error,
}

impl MoveError {
    /// The target path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The I/O error.
    pub fn io_error(&self) -> &std::io::Error {
        &self.source
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn mv_writes_the_file_and_names_an_unwritable_target() {
        let dir = std::env::temp_dir().join(format!("strata-mv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = UploadedFile::new("hello.txt", "text/plain", &b"hello"[..]);
        let target = dir.join("hello.txt");
        file.mv(&target).await.unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"hello");

        let missing = dir.join("no-such-dir").join("hello.txt");
        let error = file.mv(&missing).await.unwrap_err();
        assert_eq!(error.path(), missing);
        assert!(error.to_string().contains("no-such-dir"), "{error}");
        let api: strata_core::ApiError = error.into();
        assert_eq!(api.status(), 500);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn concurrent_moves_to_one_path_never_mix_files() {
        let dir = std::env::temp_dir().join(format!("strata-mv-race-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("cover");
        let big = UploadedFile::new("big", "image/png", vec![b'A'; 1024 * 1024]);
        let small = UploadedFile::new("small", "image/png", vec![b'b'; 16]);
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        // A reader checks what is on disk all along: one whole file or the other.
        let reader = {
            let (target, done) = (target.clone(), std::sync::Arc::clone(&done));
            std::thread::spawn(move || {
                let mut seen = 0;
                while !done.load(Ordering::SeqCst) {
                    if let Ok(contents) = std::fs::read(&target) {
                        let whole_big =
                            contents.len() == 1024 * 1024 && contents.iter().all(|b| *b == b'A');
                        let whole_small = contents == [b'b'; 16];
                        assert!(
                            whole_big || whole_small,
                            "a mix of {} bytes",
                            contents.len()
                        );
                        seen += 1;
                    }
                }
                seen
            })
        };
        for round in 0..8 {
            let moves = (0..16).map(|i| {
                let file = if (i + round) % 2 == 0 {
                    big.clone()
                } else {
                    small.clone()
                };
                let target = target.clone();
                tokio::spawn(async move { file.mv(&target).await })
            });
            for finished in futures_join(moves).await {
                finished.unwrap().unwrap();
            }
        }
        done.store(true, Ordering::SeqCst);
        assert!(reader.join().unwrap() > 0);
        // No temporary file is left behind.
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, [std::ffi::OsString::from("cover")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    async fn futures_join<T>(
        handles: impl Iterator<Item = tokio::task::JoinHandle<T>>,
    ) -> Vec<Result<T, tokio::task::JoinError>> {
        let mut results = Vec::new();
        for handle in handles.collect::<Vec<_>>() {
            results.push(handle.await);
        }
        results
    }
}
