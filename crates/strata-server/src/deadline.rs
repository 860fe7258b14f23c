//! Deadlines: for a connection's first bytes, and for request bodies.
//!
//! The connection watcher's header-read deadline (`Activity::watch`) samples counters a few
//! times per timeout; before a connection has sent anything it is simpler and exact to fail the
//! read itself. This wrapper fails any read still waiting at the deadline until the connection
//! has sent enough bytes to be past protocol detection and the HTTP/2 preface and first frame
//! header (a client that connects and sends nothing, or half a preface, is cut off on time).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use strata_core::{BodyTimeout, BoxError};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// The HTTP/2 client preface (24 bytes) and a frame header (9 bytes): past these, the
/// connection watcher's deadlines (HTTP/1) and hyper's keep-alive pings (HTTP/2) take over. Any complete HTTP/1 request line and headers are longer
/// than the preface, so well-behaved HTTP/1 clients are never affected before their request is
/// read.
const EARLY_BYTES: usize = 33;

pin_project! {
    pub(crate) struct FirstByteDeadline<IO> {
        #[pin]
        io: IO,
        // Boxed so the wrapper stays `Unpin` like the stream it wraps (once per connection).
        deadline: Option<Pin<Box<Sleep>>>,
        received: usize,
    }
}

impl<IO> FirstByteDeadline<IO> {
    pub(crate) fn new(io: IO, timeout: Duration) -> Self {
        Self {
            io,
            deadline: Some(Box::pin(tokio::time::sleep(timeout))),
            received: 0,
        }
    }
}

impl<IO: AsyncRead> AsyncRead for FirstByteDeadline<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.project();
        let before = buf.filled().len();
        let result = this.io.poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) {
            *this.received += buf.filled().len() - before;
            if *this.received >= EARLY_BYTES {
                *this.deadline = None;
            }
        } else if result.is_pending()
            && let Some(deadline) = this.deadline.as_mut()
            && deadline.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no request bytes before the header-read timeout",
            )));
        }
        result
    }
}

impl<IO: AsyncWrite> AsyncWrite for FirstByteDeadline<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.project().io.poll_write(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().io.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().io.poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.project().io.poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

/// The request body the server hands to the application's layers and the app: hyper's body
/// with the body deadlines of [`ServerLimits`](crate::ServerLimits).
pub type ServerBody = BodyDeadline<hyper::body::Incoming>;

pin_project! {
    /// A request body with deadlines: no piece for `idle`, or not all within `total`, and the
    /// body fails with a [`BodyTimeout`] (the body readers answer 408 and close the connection).
    ///
    /// The timers start at the first poll: a body nobody reads (most GETs) costs nothing.
    pub struct BodyDeadline<B> {
        #[pin]
        inner: B,
        idle_after: Duration,
        total_after: Duration,
        idle: Option<Pin<Box<Sleep>>>,
        total: Option<Pin<Box<Sleep>>>,
    }
}

impl<B> BodyDeadline<B> {
    /// `inner` failing with a [`BodyTimeout`] after `idle_after` without data or `total_after`
    /// in all.
    pub fn new(inner: B, idle_after: Duration, total_after: Duration) -> Self {
        Self {
            inner,
            idle_after,
            total_after,
            idle: None,
            total: None,
        }
    }
}

impl<B> http_body::Body for BodyDeadline<B>
where
    B: http_body::Body,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let total_after = *this.total_after;
        let total = this
            .total
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(total_after)));
        match this.inner.poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(idle) = this.idle {
                    idle.as_mut()
                        .reset(tokio::time::Instant::now() + *this.idle_after);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(error))) => Poll::Ready(Some(Err(error.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                if total.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Some(Err(Box::new(BodyTimeout::total(total_after)))));
                }
                let idle_after = *this.idle_after;
                let idle = this
                    .idle
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle_after)));
                if idle.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Some(Err(Box::new(BodyTimeout::idle(idle_after)))));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
