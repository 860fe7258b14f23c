//! The connection's socket, counted: writes that progress or wait on the client, and the first
//! bytes, which tell HTTP/2 (its preface) from HTTP/1.

use super::activity::Activity;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The HTTP/2 client connection preface (RFC 9113 section 3.4).
pub(crate) const HTTP2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Whether `read`, received after the first `matched` bytes of the HTTP/2 preface, goes on
/// matching it (as far as either goes): when it does not, the connection is HTTP/1.
pub(crate) fn continues_preface(matched: usize, read: &[u8]) -> bool {
    let expected = HTTP2_PREFACE.get(matched..).unwrap_or_default();
    let n = read.len().min(expected.len());
    read[..n] == expected[..n]
}

impl Activity {
    /// A flush waiting on the client counts as a blocked write; when it completes, what it
    /// sent counts as written. (A plain socket's flush is always ready: nothing changes.)
    fn flushed(&self, result: &Poll<io::Result<()>>) {
        match result {
            Poll::Pending => self.flush_blocked.store(true, Ordering::Relaxed),
            Poll::Ready(_) => {
                if self.flush_blocked.load(Ordering::Relaxed) {
                    self.flush_blocked.store(false, Ordering::Relaxed);
                    self.written.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    fn wrote(&self, result: &Poll<io::Result<usize>>) {
        match result {
            Poll::Pending => self.write_blocked.store(true, Ordering::Relaxed),
            Poll::Ready(written) => {
                self.write_blocked.store(false, Ordering::Relaxed);
                if matches!(written, Ok(n) if *n > 0) {
                    self.written.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

pin_project! {
    /// A socket whose write progress is counted, and whose first bytes tell HTTP/2 from HTTP/1.
    pub(crate) struct ActivityIo<IO> {
        #[pin]
        pub(super) io: IO,
        activity: Arc<Activity>,
        // Bytes of the HTTP/2 preface matched so far; `u8::MAX` once decided.
        preface_matched: u8,
    }
}

impl<IO> ActivityIo<IO> {
    pub(crate) fn new(io: IO, activity: Arc<Activity>) -> Self {
        Self {
            io,
            activity,
            preface_matched: 0,
        }
    }
}

/// Matches `read` against the rest of the HTTP/2 preface after `matched` bytes of it; returns
/// the new count, `u8::MAX` once the connection is known not to be HTTP/2 or known to be (then
/// `http2` is set).
pub(super) fn match_preface(matched: u8, read: &[u8], http2: &AtomicBool) -> u8 {
    let done = usize::from(matched);
    if !continues_preface(done, read) {
        return u8::MAX;
    }
    let now = (done + read.len()).min(HTTP2_PREFACE.len());
    if now == HTTP2_PREFACE.len() {
        http2.store(true, Ordering::Relaxed);
        return u8::MAX;
    }
    // At most 23: it fits.
    u8::try_from(now).unwrap_or(u8::MAX)
}

impl<IO: AsyncRead> AsyncRead for ActivityIo<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.project();
        if *this.preface_matched == u8::MAX {
            return this.io.poll_read(cx, buf);
        }
        let before = buf.filled().len();
        let result = this.io.poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            *this.preface_matched = match_preface(
                *this.preface_matched,
                &buf.filled()[before..],
                &this.activity.http2,
            );
        }
        result
    }
}

/// Vectored writes of at most this many bytes in all are copied into one buffer and written
/// with one `write`. hyper hands a response over as its head and its body (two slices, or
/// three with chunked framing): one `writev` of them costs the kernel about 0.2 µs more per
/// response than one `write` of the same bytes (measured on hello: 6.3 against 6.5 µs of
/// system time per request over loopback), far more than copying a few KiB. Larger writes
/// keep their slices: no copy of a large body. Behind TLS the system call is rustls's, which
/// writes its records vectored either way: there the join only hands rustls one slice.
pub(super) const JOIN_MAX: usize = 4096;

thread_local! {
    /// Where a worker thread joins the slices of small writes (one buffer per thread, not per
    /// connection: an idle connection holds none of it).
    static JOINED: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(Vec::with_capacity(JOIN_MAX));
}

/// How to write the slices of a vectored write.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Gather<'a> {
    /// At most one slice has bytes: that one, with a plain write.
    One(&'a [u8]),
    /// Several small slices: joined, with one plain write.
    Join,
    /// Large: a vectored write of the slices.
    AsGiven,
}

impl<'a> Gather<'a> {
    fn of(bufs: &'a [io::IoSlice<'_>]) -> Self {
        let mut first: Option<&'a [u8]> = None;
        let mut several = false;
        let mut total = 0usize;
        for buf in bufs.iter().filter(|buf| !buf.is_empty()) {
            total = total.saturating_add(buf.len());
            if first.is_some() {
                several = true;
            } else {
                first = Some(buf);
            }
        }
        match first {
            None => Self::One(&[]),
            Some(only) if !several => Self::One(only),
            Some(_) if total <= JOIN_MAX => Self::Join,
            Some(_) => Self::AsGiven,
        }
    }
}

impl<IO: AsyncWrite> AsyncWrite for ActivityIo<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        let result = this.io.poll_write(cx, data);
        this.activity.wrote(&result);
        result
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let mut this = self.project();
        let result = match Gather::of(bufs) {
            // Nothing to write: the socket is not asked (a `send` of nothing on a socket shut
            // down fails, where a vectored write of nothing returns 0).
            Gather::One([]) => Poll::Ready(Ok(0)),
            Gather::One(data) => this.io.poll_write(cx, data),
            Gather::Join => JOINED
                .try_with(|joined| {
                    // Taken only if a wrapped stream wrote through another `ActivityIo` on this
                    // thread (none does): then the slices as they are.
                    let Ok(mut joined) = joined.try_borrow_mut() else {
                        return this.io.as_mut().poll_write_vectored(cx, bufs);
                    };
                    joined.clear();
                    for buf in bufs {
                        joined.extend_from_slice(buf);
                    }
                    this.io.as_mut().poll_write(cx, &joined)
                })
                // The thread's buffer is being torn down: the slices as they are.
                .unwrap_or_else(|_| this.io.as_mut().poll_write_vectored(cx, bufs)),
            Gather::AsGiven => this.io.poll_write_vectored(cx, bufs),
        };
        this.activity.wrote(&result);
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.project();
        let result = this.io.poll_flush(cx);
        this.activity.flushed(&result);
        result
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().io.poll_shutdown(cx)
    }
}
