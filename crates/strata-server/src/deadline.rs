//! A deadline for a connection's first bytes.
//!
//! hyper's header-read timeout starts once it knows the protocol; a client that connects and
//! sends nothing would otherwise hold its connection forever. This wrapper fails the first read
//! that has not produced a byte by the deadline.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

pin_project! {
    pub(crate) struct FirstByteDeadline<IO> {
        #[pin]
        io: IO,
        // Boxed so the wrapper stays `Unpin` like the stream it wraps (once per connection).
        deadline: Option<Pin<Box<Sleep>>>,
    }
}

impl<IO> FirstByteDeadline<IO> {
    pub(crate) fn new(io: IO, timeout: Duration) -> Self {
        Self {
            io,
            deadline: Some(Box::pin(tokio::time::sleep(timeout))),
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
        let progressed = matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before;
        if progressed {
            *this.deadline = None;
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
