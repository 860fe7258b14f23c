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
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use strata_input::UploadedFile;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};

mod sealed {
    pub trait Sealed {}
    impl Sealed for strata_input::UploadedFile {}
}

/// Reading an [`UploadedFile`] wherever it is (in memory, or on disk past the spool threshold),
/// and writing it to disk (in the prelude of the `strata` facade).
///
/// An extension trait, so that the vocabulary crate defining `UploadedFile` needs no file
/// system; sealed, so that methods can be added.
///
/// ```
/// use strata_upload::{UploadedFile, UploadedFileExt};
/// use tokio::io::AsyncReadExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let file = UploadedFile::new("note.txt", "text/plain", &b"hello"[..]);
/// assert_eq!(file.bytes().await?, &b"hello"[..]);
/// let mut reader = file.open().await?;
/// let mut first = [0_u8; 4];
/// reader.read_exact(&mut first).await?;
/// assert_eq!(&first, b"hell");
/// # Ok(())
/// # }
/// ```
pub trait UploadedFileExt: sealed::Sealed {
    /// Writes the file to `path`, replacing any file there, atomically: a reader sees the old
    /// file or the whole new one, never a mix; of concurrent moves to one path, the last wins.
    /// A file in memory is written to a new temporary file beside the target, which is then
    /// renamed over it. A file on disk (an upload past the spool threshold) is not copied where
    /// the file system allows: a new link to it beside the target is renamed over the target
    /// (across file systems it is copied, then renamed). The file stays readable, and can be
    /// moved again. (No `fsync`: after a power loss the file may be the old one.)
    ///
    /// Fails with a [`MoveError`] naming the path when it cannot be written (a missing directory,
    /// no permission); `?` in a handler turns that into a 500 whose detail is logged, not sent.
    fn mv(&self, path: impl AsRef<Path>) -> impl Future<Output = Result<(), MoveError>> + Send;

    /// The whole contents in one buffer: a file in memory as [`UploadedFile::data`] has it, a
    /// file on disk read into memory (mind its size: [`open`](Self::open) reads it a chunk at
    /// a time).
    fn bytes(&self) -> impl Future<Output = io::Result<Bytes>> + Send;

    /// The contents as an [`AsyncRead`], a chunk at a time, from memory or from disk.
    fn open(&self) -> impl Future<Output = io::Result<FileReader>> + Send;
}

impl UploadedFileExt for UploadedFile {
    fn mv(&self, path: impl AsRef<Path>) -> impl Future<Output = Result<(), MoveError>> + Send {
        let path = path.as_ref().to_owned();
        async move {
            let temporary = temporary_beside(&path);
            let written = async {
                if self.path().is_some() {
                    place_from_disk(self, &temporary).await?;
                } else {
                    let mut file = create_new(&temporary).await?;
                    // Piece by piece: a file kept in pieces is not joined to be written.
                    for piece in self.pieces().unwrap_or(&[]) {
                        file.write_all(piece).await?;
                    }
                    file.flush().await?;
                }
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

    async fn bytes(&self) -> io::Result<Bytes> {
        if let Some(data) = self.data() {
            return Ok(data.clone());
        }
        let mut data = Vec::with_capacity(self.size());
        self.open().await?.read_to_end(&mut data).await?;
        check_length(self, data.len() as u64)?;
        Ok(Bytes::from(data))
    }

    async fn open(&self) -> io::Result<FileReader> {
        let inner = match self.path() {
            Some(path) => {
                let file = tokio::fs::File::open(path).await?;
                Inner::Disk(file.take(self.len()))
            }
            None => Inner::Memory(self.pieces().unwrap_or(&[]).to_vec(), 0),
        };
        Ok(FileReader { inner })
    }
}

async fn create_new(path: &Path) -> io::Result<tokio::fs::File> {
    tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .await
}

/// A file on disk at `temporary`: a new link to it where the file system allows, a copy
/// otherwise (another file system; one without links).
async fn place_from_disk(file: &UploadedFile, temporary: &Path) -> io::Result<()> {
    let Some(source) = file.path() else {
        return Err(io::Error::other("not a file on disk"));
    };
    // A link is the whole file: only when the file is its declared size.
    let whole = tokio::fs::metadata(source)
        .await
        .is_ok_and(|metadata| metadata.len() == file.len());
    if whole && tokio::fs::hard_link(source, temporary).await.is_ok() {
        return Ok(());
    }
    let mut reader = tokio::io::BufReader::with_capacity(COPY_BUFFER, file.open().await?);
    let mut target = create_new(temporary).await?;
    let copied = tokio::io::copy_buf(&mut reader, &mut target).await?;
    target.flush().await?;
    check_length(file, copied)
}

/// What a copy reads and writes at a time.
const COPY_BUFFER: usize = 256 * 1024;

/// A file on disk shorter than its size was changed since it arrived.
fn check_length(file: &UploadedFile, read: u64) -> io::Result<()> {
    if read == file.len() {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!(
            "the uploaded file {:?} has {read} bytes on disk, not {}",
            file.name(),
            file.len()
        ),
    ))
}

/// The contents of an [`UploadedFile`] as an [`AsyncRead`] ([`UploadedFileExt::open`]).
#[derive(Debug)]
pub struct FileReader {
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    /// The pieces, and the index of the next one to read.
    Memory(Vec<Bytes>, usize),
    Disk(tokio::io::Take<tokio::fs::File>),
}

impl AsyncRead for FileReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            Inner::Memory(pieces, next) => {
                while let Some(piece) = pieces.get_mut(*next) {
                    if piece.is_empty() {
                        *next += 1;
                        continue;
                    }
                    let n = piece.len().min(buf.remaining());
                    buf.put_slice(&piece.split_to(n));
                    break;
                }
                Poll::Ready(Ok(()))
            }
            Inner::Disk(file) => Pin::new(file).poll_read(cx, buf),
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
