//! Deadlines: for a connection's first bytes, and for request bodies.
//!
//! The connection watcher's header-read deadline (`Activity::watch`) samples counters a few
//! times per timeout; before a connection has sent anything it is simpler and exact to fail the
//! read itself. [`FirstByteDeadline`] fails any read still waiting at the deadline until the
//! connection's first bytes tell its protocol: at the first byte that is not the HTTP/2
//! preface's, the connection is HTTP/1 and the watcher's header-read deadline (which has counted
//! from the start) takes over; an HTTP/2 connection must also send the first frame header (a
//! client that connects and sends nothing, or half a preface, is cut off on time).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use strata_core::{BodyTimeout, BoxError};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

use crate::activity::{HTTP2_PREFACE, continues_preface};

/// The HTTP/2 client preface (24 bytes) and a frame header (9 bytes): past these, hyper's
/// keep-alive pings and the idle timeout take over an HTTP/2 connection.
const HTTP2_EARLY_BYTES: usize = HTTP2_PREFACE.len() + 9;

pin_project! {
    /// A connection whose reads fail once `timeout` has passed, until its first bytes have told
    /// HTTP/1 (any byte off the HTTP/2 preface) or HTTP/2 (the preface and a frame header).
    ///
    /// A complete HTTP/1 request head can be shorter than the HTTP/2 preface
    /// (`GET / HTTP/1.1\r\nHost: a\r\n\r\n` is 27 bytes): counting bytes alone would leave the
    /// deadline armed over such a request and its connection.
    pub(crate) struct FirstByteDeadline<IO> {
        #[pin]
        io: IO,
        // Boxed so the wrapper stays `Unpin` like the stream it wraps (once per connection).
        deadline: Option<Pin<Box<Sleep>>>,
        // Bytes received while the deadline is armed, all of them the HTTP/2 preface's so far.
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
        let Some(deadline) = this.deadline.as_mut() else {
            return this.io.poll_read(cx, buf);
        };
        let before = buf.filled().len();
        let result = this.io.poll_read(cx, buf);
        match &result {
            Poll::Ready(Ok(())) => {
                let read = &buf.filled()[before..];
                let http1 = !continues_preface(*this.received, read);
                *this.received += read.len();
                if http1 || *this.received >= HTTP2_EARLY_BYTES {
                    *this.deadline = None;
                }
            }
            Poll::Pending if deadline.as_mut().poll(cx).is_ready() => {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no request bytes before the header-read timeout",
                )));
            }
            _ => {}
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

/// The instant `after` from now; for a duration too long to add (`Duration::MAX`, a limit meant
/// as "never"), thirty years from now, as tokio's own `sleep` does.
pub(crate) fn deadline_after(after: Duration) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    now.checked_add(after)
        .unwrap_or_else(|| now + Duration::from_secs(30 * 365 * 24 * 60 * 60))
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
                    idle.as_mut().reset(deadline_after(*this.idle_after));
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    const TIMEOUT: Duration = Duration::from_secs(10);

    /// A server side under a first-byte deadline, and its client.
    fn connection() -> (FirstByteDeadline<DuplexStream>, DuplexStream) {
        let (client, server) = tokio::io::duplex(1024);
        (FirstByteDeadline::new(server, TIMEOUT), client)
    }

    /// Reads what `client` sent, then waits past the deadline for more: `Err` when the read
    /// failed for the deadline, `Ok` with what arrived otherwise.
    async fn read_past_the_deadline(
        server: &mut FirstByteDeadline<DuplexStream>,
        client: &mut DuplexStream,
        sent: &[u8],
    ) -> io::Result<Vec<u8>> {
        client.write_all(sent).await.unwrap();
        let mut received = vec![0; sent.len()];
        server.read_exact(&mut received).await?;
        assert_eq!(received, sent);
        let mut more = [0; 16];
        let later = async {
            tokio::time::sleep(TIMEOUT * 2).await;
            client.write_all(b"x").await.unwrap();
        };
        let (read, ()) = tokio::join!(server.read(&mut more), later);
        read.map(|n| more[..n].to_vec())
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_head_shorter_than_the_http2_preface_disarms_it() {
        let (mut server, mut client) = connection();
        let head = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        assert_eq!(head.len(), 27);
        let later = read_past_the_deadline(&mut server, &mut client, head).await;
        assert_eq!(
            later.unwrap(),
            b"x",
            "the connection was cut after a whole request"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn one_byte_off_the_preface_disarms_it() {
        let (mut server, mut client) = connection();
        let later = read_past_the_deadline(&mut server, &mut client, b"PO").await;
        assert_eq!(later.unwrap(), b"x");
    }

    #[tokio::test(start_paused = true)]
    async fn the_start_of_the_preface_keeps_it_armed() {
        let (mut server, mut client) = connection();
        let later = read_past_the_deadline(&mut server, &mut client, b"P").await;
        assert_eq!(later.unwrap_err().kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test(start_paused = true)]
    async fn an_http2_preface_without_a_frame_header_keeps_it_armed() {
        let (mut server, mut client) = connection();
        let mut early = HTTP2_PREFACE.to_vec();
        early.extend_from_slice(&[0; 8]);
        let later = read_past_the_deadline(&mut server, &mut client, &early).await;
        assert_eq!(later.unwrap_err().kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test(start_paused = true)]
    async fn an_http2_preface_and_a_frame_header_disarm_it() {
        let (mut server, mut client) = connection();
        let mut early = HTTP2_PREFACE.to_vec();
        early.extend_from_slice(&[0; 9]);
        let later = read_past_the_deadline(&mut server, &mut client, &early).await;
        assert_eq!(later.unwrap(), b"x");
    }

    /// A body whose pieces come from a channel.
    struct Pieces(tokio::sync::mpsc::Receiver<bytes::Bytes>);

    impl http_body::Body for Pieces {
        type Data = bytes::Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<http_body::Frame<bytes::Bytes>, Self::Error>>> {
            self.0
                .poll_recv(cx)
                .map(|piece| piece.map(|data| Ok(http_body::Frame::data(data))))
        }
    }

    /// Reads a body of two pieces, the second `pause` after the first, under `idle` and
    /// `total`: the error's text, if it failed.
    async fn two_pieces(pause: Duration, idle: Duration, total: Duration) -> Result<(), String> {
        use http_body::Body;
        let (sender, receiver) = tokio::sync::mpsc::channel(2);
        let mut body = BodyDeadline::new(Pieces(receiver), idle, total);
        let send = async {
            sender.send(bytes::Bytes::from_static(b"a")).await.unwrap();
            tokio::time::sleep(pause).await;
            sender.send(bytes::Bytes::from_static(b"b")).await.unwrap();
            drop(sender);
        };
        let read = async {
            while let Some(frame) =
                std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
            {
                frame.map_err(|error| error.to_string())?;
            }
            Ok(())
        };
        tokio::join!(send, read).1
    }

    #[tokio::test(start_paused = true)]
    async fn body_deadlines_of_duration_max_never_fire_and_never_overflow() {
        let hour = Duration::from_secs(3600);
        assert_eq!(two_pieces(hour, Duration::MAX, Duration::MAX).await, Ok(()));
    }

    #[tokio::test(start_paused = true)]
    async fn zero_body_deadlines_fail_a_body_that_waits() {
        let zero = Duration::ZERO;
        assert_eq!(
            two_pieces(Duration::from_millis(1), zero, Duration::MAX).await,
            Err("no part of the request body arrived for 0ns".to_owned())
        );
        assert_eq!(
            two_pieces(Duration::from_millis(1), Duration::MAX, zero).await,
            Err("the request body did not arrive within 0ns".to_owned())
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_client_is_cut_off_at_the_deadline_not_before() {
        let (mut server, _client) = connection();
        let started = tokio::time::Instant::now();
        let error = server.read(&mut [0; 16]).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), TIMEOUT);
    }
}
