//! Deadlines: for a connection's first bytes, and for request bodies.
//!
//! The connection watcher's header-read deadline ([`super::watcher`]) samples counters a few
//! times per timeout; before a connection has sent anything it is simpler and exact to fail the
//! read itself. [`FirstByteDeadline`] fails any read still waiting at the deadline until the
//! connection's first bytes tell its protocol: at the first byte that is not the HTTP/2
//! preface's, the connection is HTTP/1 and the watcher's header-read deadline (which has counted
//! from the start) takes over; an HTTP/2 connection must also send the first frame header (a
//! client that connects and sends nothing, or half a preface, is cut off on time).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use strata_core::{BodyTimeout, BoxError};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

use crate::connection::watcher::{HTTP2_PREFACE, continues_preface};

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

/// The slowest a request body may arrive: `bytes_per_second` on average over the time the
/// server waited for it, once it has waited `grace` (a first slow start is allowed). Time the
/// application did not read (a body held back by flow control) does not count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinDataRate {
    /// The lowest average rate.
    pub bytes_per_second: u32,
    /// How long the server waits for the body before the rate counts.
    pub grace: Duration,
}

impl MinDataRate {
    /// Whether `received` bytes in `waited` are too few.
    fn too_slow(&self, received: u64, waited: Duration) -> bool {
        waited > self.grace
            && u128::from(received) * 1000 < u128::from(self.bytes_per_second) * waited.as_millis()
    }
}

/// The deadlines of request bodies: shared by every body of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BodyLimits {
    pub(crate) idle: Duration,
    pub(crate) total: Duration,
    pub(crate) min_rate: Option<MinDataRate>,
}

pin_project! {
    /// A request body with deadlines, counted from the moment its request's head was complete:
    /// no piece for `idle`, not all within `total`, or slower than its [`MinDataRate`], and
    /// the body fails with a [`BodyTimeout`] (the body readers answer 408 and close the
    /// connection).
    ///
    /// A body with nothing to read (most GETs) costs nothing; the others read the clock once
    /// when made, and their timers are made (one allocation) at the first poll that waits.
    pub struct BodyDeadline<B> {
        #[pin]
        inner: B,
        // The deadlines, for a body with something to read.
        limits: Option<Arc<BodyLimits>>,
        // When the head was complete.
        started: Option<tokio::time::Instant>,
        // Bytes received.
        received: u64,
        // Made at the first poll that waits.
        timing: Option<Pin<Box<Timing>>>,
    }
}

pin_project! {
    /// The timers of a body that has waited, and the time it waited.
    struct Timing {
        #[pin]
        idle: Sleep,
        #[pin]
        total: Sleep,
        // The time spent waiting for pieces (up to the last one), and since when the reader
        // has been waiting for the next.
        waited: Duration,
        waiting_since: Option<tokio::time::Instant>,
        // A piece arrived since the reader last waited: the pause counts from the next wait.
        arrived: bool,
    }
}

impl<B: http_body::Body> BodyDeadline<B> {
    /// `inner` failing with a [`BodyTimeout`] after `idle_after` without data or `total_after`
    /// in all, both counted from now.
    pub fn new(inner: B, idle_after: Duration, total_after: Duration) -> Self {
        Self::with_limits(
            inner,
            &Arc::new(BodyLimits {
                idle: idle_after,
                total: total_after,
                min_rate: None,
            }),
        )
    }

    /// `inner` with `limits`, counted from now.
    pub(crate) fn with_limits(inner: B, limits: &Arc<BodyLimits>) -> Self {
        let something_to_read = !inner.is_end_stream();
        Self {
            inner,
            limits: something_to_read.then(|| Arc::clone(limits)),
            started: something_to_read.then(tokio::time::Instant::now),
            received: 0,
            timing: None,
        }
    }

    /// Fails the body, too, when it arrives slower than `rate`.
    #[must_use]
    pub fn min_rate(mut self, rate: Option<MinDataRate>) -> Self {
        if let Some(limits) = &mut self.limits {
            Arc::make_mut(limits).min_rate = rate;
        }
        self
    }
}

/// `at + after`, or far away when that is beyond any clock.
fn instant_after(at: tokio::time::Instant, after: Duration) -> tokio::time::Instant {
    at.checked_add(after)
        .unwrap_or_else(|| crate::connection::deadline::deadline_after(Duration::MAX))
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
        let polled = this.inner.poll_frame(cx);
        let Some(limits) = this.limits.as_deref() else {
            // Nothing was expected: nothing to time.
            return polled.map(|frame| frame.map(|frame| frame.map_err(Into::into)));
        };
        match polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(timing) = this.timing.as_mut() {
                    let timing = timing.as_mut().project();
                    if let Some(since) = timing.waiting_since.take() {
                        *timing.waited += since.elapsed();
                    }
                    *timing.arrived = true;
                    if let Some(data) = frame.data_ref() {
                        *this.received += bytes::Buf::remaining(data) as u64;
                    }
                    if let Some(rate) = limits.min_rate
                        && rate.too_slow(*this.received, *timing.waited)
                    {
                        let error = BodyTimeout::too_slow(rate.bytes_per_second);
                        return Poll::Ready(Some(Err(Box::new(error))));
                    }
                } else if let Some(data) = frame.data_ref() {
                    // Nothing waited for yet: too early for a rate.
                    *this.received += bytes::Buf::remaining(data) as u64;
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(error))) => Poll::Ready(Some(Err(error.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                let now = tokio::time::Instant::now();
                let started = *this.started.get_or_insert(now);
                let timing = this.timing.get_or_insert_with(|| {
                    // Until the first piece, the pause counts from the head too.
                    Box::pin(Timing {
                        idle: tokio::time::sleep_until(instant_after(started, limits.idle)),
                        total: tokio::time::sleep_until(instant_after(started, limits.total)),
                        waited: Duration::ZERO,
                        waiting_since: None,
                        arrived: false,
                    })
                });
                let mut timing = timing.as_mut().project();
                timing.waiting_since.get_or_insert(now);
                if timing.total.as_mut().poll(cx).is_ready() {
                    let error = BodyTimeout::total(limits.total);
                    return Poll::Ready(Some(Err(Box::new(error))));
                }
                // After a piece, the pause counts from the next wait (as good as the piece's
                // arrival: the reader asks again as soon as it has one).
                if std::mem::take(timing.arrived) {
                    timing.idle.as_mut().reset(instant_after(now, limits.idle));
                }
                if timing.idle.as_mut().poll(cx).is_ready() {
                    let error = BodyTimeout::idle(limits.idle);
                    return Poll::Ready(Some(Err(Box::new(error))));
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

    const IDLE: Duration = Duration::from_secs(10);
    const TOTAL: Duration = Duration::from_secs(60);
    const RATE: MinDataRate = MinDataRate {
        bytes_per_second: 1024,
        grace: Duration::from_secs(5),
    };

    fn body() -> (
        Pin<Box<BodyDeadline<Pieces>>>,
        tokio::sync::mpsc::Sender<bytes::Bytes>,
    ) {
        let (sender, pieces) = tokio::sync::mpsc::channel(64);
        let body = BodyDeadline::new(Pieces(pieces), IDLE, TOTAL).min_rate(Some(RATE));
        (Box::pin(body), sender)
    }

    /// The next frame's data length, or the body's error as text.
    async fn next(body: &mut Pin<Box<BodyDeadline<Pieces>>>) -> Result<usize, String> {
        use http_body_util::BodyExt;
        match body.frame().await {
            Some(Ok(frame)) => Ok(frame.into_data().map_or(0, |data| data.len())),
            Some(Err(error)) => Err(error.to_string()),
            None => Err("ended".into()),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn body_deadlines_count_from_the_head_not_from_the_first_read() {
        let (mut body, _sender) = body();
        // Nobody reads for a while (the request waits for a place under a limit).
        tokio::time::sleep(IDLE + Duration::from_secs(1)).await;
        let read_at = tokio::time::Instant::now();
        let error = next(&mut body).await.unwrap_err();
        assert!(
            error.contains("no part of the request body arrived"),
            "{error}"
        );
        assert_eq!(read_at.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn time_the_application_does_not_read_is_not_the_clients() {
        let (mut body, sender) = body();
        sender.try_send(bytes::Bytes::from(vec![0; 100])).unwrap();
        // Sent at once; read 20 s later (slower than the minimum rate, if that time counted).
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert_eq!(next(&mut body).await, Ok(100));
        sender.try_send(bytes::Bytes::from(vec![0; 100])).unwrap();
        assert_eq!(next(&mut body).await, Ok(100));
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_slower_than_the_minimum_rate_fails_after_the_grace() {
        let (mut body, sender) = body();
        let started = tokio::time::Instant::now();
        let trickle = tokio::spawn(async move {
            // A byte every 3 s: under the idle timeout, far under 1 KiB/s.
            loop {
                tokio::time::sleep(Duration::from_secs(3)).await;
                if sender.try_send(bytes::Bytes::from_static(b"x")).is_err() {
                    break;
                }
            }
        });
        assert_eq!(next(&mut body).await, Ok(1));
        let error = next(&mut body).await.unwrap_err();
        assert!(
            error.contains("slower than 1024 bytes per second"),
            "{error}"
        );
        // At the first piece after the grace.
        assert_eq!(started.elapsed(), Duration::from_secs(6));
        trickle.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_at_the_minimum_rate_is_read_whole() {
        let (mut body, sender) = body();
        tokio::spawn(async move {
            for _ in 0..20 {
                tokio::time::sleep(Duration::from_secs(1)).await;
                sender.try_send(bytes::Bytes::from(vec![0; 1100])).unwrap();
            }
        });
        for _ in 0..20 {
            assert_eq!(next(&mut body).await, Ok(1100));
        }
    }
}
