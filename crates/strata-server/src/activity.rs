//! Connection timeouts beyond hyper's: an idle connection (no request for a while, HTTP/2
//! keep-alive pings notwithstanding) is closed gracefully, an HTTP/1 connection that sends no
//! complete request head within the header-read timeout (a slow or silent client, or an idle
//! keep-alive connection) is closed, and a connection whose responses make no write progress (a
//! client that does not read, a zero HTTP/2 window) is closed.
//!
//! Counting is cheap (relaxed counters on reads, writes and requests); a timer per connection
//! samples the counters a few times per timeout. hyper's own header-read timeout is not used: it
//! arms a timer for every request (an allocation, a timer-wheel entry and its removal, an extra
//! read), where this one timer per connection covers every request of it.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use http::Response;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use strata_core::{BoxError, ResponseBody};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What one connection does.
#[derive(Debug, Default)]
pub(crate) struct Activity {
    /// Writes to the socket that made progress.
    written: AtomicU64,
    /// The last write to the socket is waiting for the client to read.
    write_blocked: AtomicBool,
    /// The last flush is waiting for the client to read: behind TLS, the end of a response
    /// leaves the encryption layer's buffer while flushing, after every write returned.
    flush_blocked: AtomicBool,
    /// Pieces of response bodies taken by hyper to send.
    body_progress: AtomicU64,
    /// Requests received.
    requests: AtomicU64,
    /// Requests whose response is not ready yet (the handler is working).
    in_flight: AtomicUsize,
    /// Requests done with (answered, or dropped unanswered), and responses sent: a change
    /// restarts the idle count.
    finished: AtomicU64,
    /// Responses handed to hyper whose body it still holds (being sent).
    sending: AtomicUsize,
    /// Of those, bodies whose producer has nothing yet (a quiet event stream): hyper waits on
    /// them, which is not a stall.
    producing: AtomicUsize,
    /// The client opened with the HTTP/2 preface: no header-read deadline between requests
    /// (HTTP/2 has its pings and the idle timeout).
    http2: AtomicBool,
}

/// The HTTP/2 client connection preface (RFC 9113 section 3.4).
pub(crate) const HTTP2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Whether `read`, received after the first `matched` bytes of the HTTP/2 preface, goes on
/// matching it (as far as either goes): when it does not, the connection is HTTP/1.
pub(crate) fn continues_preface(matched: usize, read: &[u8]) -> bool {
    let expected = HTTP2_PREFACE.get(matched..).unwrap_or_default();
    let n = read.len().min(expected.len());
    read[..n] == expected[..n]
}

/// The connection timeouts the watcher applies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadlines {
    /// No request for this long: close gracefully.
    pub(crate) idle: Duration,
    /// Responses waiting and nothing written for this long: drop the connection.
    pub(crate) write: Duration,
    /// HTTP/1: no complete request head for this long while nothing is in flight: drop it.
    pub(crate) head: Duration,
}

/// Why a connection should end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No request for the idle timeout: close gracefully (HTTP/2 GOAWAY).
    Idle,
    /// Responses waiting to be sent, and no byte written for the write timeout: drop it.
    Stalled,
    /// HTTP/1: no complete request head within the header-read timeout (a slow or silent
    /// client, or a keep-alive connection left idle): drop it.
    HeadTimeout,
}

impl Activity {
    /// Resolves when the connection has been idle for `deadlines.idle`, has waited
    /// `deadlines.head` for an HTTP/1 request head, or stalled for `deadlines.write`: with a
    /// write waiting on the client, or a response whose body hyper still holds and does not
    /// take (a body waiting on its producer, a quiet event stream, is not stalled), and no
    /// byte written.
    ///
    /// The counters are sampled every quarter of the shortest deadline, so each fires within
    /// a quarter of that after it is due, never before.
    pub(crate) async fn watch(&self, deadlines: Deadlines) -> Verdict {
        let tick = (deadlines.idle.min(deadlines.write).min(deadlines.head) / 4)
            .max(Duration::from_millis(10));
        let mut written = self.written.load(Ordering::Relaxed);
        let mut bodies = self.body_progress.load(Ordering::Relaxed);
        let mut requests = self.requests.load(Ordering::Relaxed);
        let mut finished = self.finished.load(Ordering::SeqCst);
        let (mut stalled_for, mut idle_for, mut head_for) =
            (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        loop {
            tokio::time::sleep(tick).await;
            let now_written = self.written.load(Ordering::Relaxed);
            let now_bodies = self.body_progress.load(Ordering::Relaxed);
            let now_requests = self.requests.load(Ordering::Relaxed);
            // This task may run on another thread than the connection's: a response moves
            // from in flight to sending (`TrackedFuture`) in that order, so reading in flight
            // first never finds it in neither.
            let in_flight = self.in_flight.load(Ordering::SeqCst);
            let sending = self.sending.load(Ordering::SeqCst);
            let now_finished = self.finished.load(Ordering::SeqCst);
            let write_blocked = self.write_blocked.load(Ordering::Relaxed)
                || self.flush_blocked.load(Ordering::Relaxed);
            // Stuck: a socket write waits on the client and nothing was written, or a body
            // waits to be sent and hyper took nothing of it (HTTP/2 without window). Pings are
            // writes too, which is why bodies are watched on their own.
            let socket_stuck = write_blocked && now_written == written;
            let producing = self.producing.load(Ordering::Relaxed);
            let body_stuck = sending > producing && now_bodies == bodies;
            stalled_for = if socket_stuck || body_stuck {
                stalled_for + tick
            } else {
                Duration::ZERO
            };
            // Waiting for the next request: nothing in flight, nothing being sent or flushed,
            // no request started or finished since the last look (so a deadline is counted
            // from after the last response, never from before it: it fires within a tick
            // after it is due).
            let quiet = sending == 0
                && in_flight == 0
                && !write_blocked
                && now_requests == requests
                && now_finished == finished;
            idle_for = if quiet {
                idle_for + tick
            } else {
                Duration::ZERO
            };
            // Waiting for the next request head also means nothing written since the last look:
            // the end of a slow download restarts it. (HTTP/1 only: HTTP/2's pings are writes,
            // so the idle count above cannot ask the same.)
            head_for = if quiet && now_written == written {
                head_for + tick
            } else {
                Duration::ZERO
            };
            (written, bodies, requests, finished) =
                (now_written, now_bodies, now_requests, now_finished);
            if stalled_for >= deadlines.write {
                return Verdict::Stalled;
            }
            if head_for >= deadlines.head && !self.http2.load(Ordering::Relaxed) {
                return Verdict::HeadTimeout;
            }
            if idle_for >= deadlines.idle {
                return Verdict::Idle;
            }
        }
    }
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
        io: IO,
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
fn match_preface(matched: u8, read: &[u8], http2: &AtomicBool) -> u8 {
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
        let this = self.project();
        let result = this.io.poll_write_vectored(cx, bufs);
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

impl Activity {
    /// A request arrived: counted, and in flight until the returned guard is dropped.
    pub(crate) fn request(self: &Arc<Self>) -> InFlight {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(Arc::clone(self))
    }
}

/// A request in flight; counted out when dropped (answered or cancelled).
pub(crate) struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.0.finished.fetch_add(1, Ordering::SeqCst);
    }
}

/// A response being sent; counted out when hyper drops its body.
struct Sending {
    activity: Arc<Activity>,
    /// The body's last poll found its producer with nothing yet.
    producing: bool,
}

impl Sending {
    fn producing(&mut self, now: bool) {
        if now != self.producing {
            self.producing = now;
            if now {
                self.activity.producing.fetch_add(1, Ordering::Relaxed);
            } else {
                self.activity.producing.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        self.producing(false);
        self.activity.sending.fetch_sub(1, Ordering::SeqCst);
        self.activity.finished.fetch_add(1, Ordering::SeqCst);
    }
}

pin_project! {
    /// The response future of a request of a tracked connection.
    pub(crate) struct TrackedFuture<F> {
        #[pin]
        inner: F,
        guard: Option<InFlight>,
    }
}

impl<F> TrackedFuture<F> {
    /// `inner`, the response future of the request `in_flight` counts.
    pub(crate) fn new(inner: F, in_flight: InFlight) -> Self {
        Self {
            inner,
            guard: Some(in_flight),
        }
    }
}

impl<F> Future for TrackedFuture<F>
where
    F: Future<Output = Result<Response<ResponseBody>, Infallible>>,
{
    type Output = Result<Response<TrackedBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Ok(response) = ready!(this.inner.poll(cx));
        let sending = this.guard.take().map(|in_flight| {
            let activity = Arc::clone(&in_flight.0);
            // Counted as sending before it stops being in flight, so the watcher never sees a
            // moment with neither.
            activity.sending.fetch_add(1, Ordering::SeqCst);
            drop(in_flight);
            Sending {
                activity,
                producing: false,
            }
        });
        Poll::Ready(Ok(response.map(|body| TrackedBody {
            inner: body,
            sending,
        })))
    }
}

pin_project! {
    /// A response body counted as being sent until hyper drops it.
    pub(crate) struct TrackedBody {
        #[pin]
        inner: ResponseBody,
        sending: Option<Sending>,
    }
}

impl Body for TrackedBody {
    type Data = bytes::Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<bytes::Bytes>, BoxError>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        if let Some(sending) = this.sending.as_mut() {
            sending.producing(polled.is_pending());
        }
        let frame = ready!(polled);
        if let (Some(Ok(_)), Some(sending)) = (&frame, &this.sending) {
            sending
                .activity
                .body_progress
                .fetch_add(1, Ordering::Relaxed);
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::poll_fn;

    /// A socket that takes every write and whose flush waits while `flush_waits` is set, as
    /// a TLS stream's does while its buffer drains to a client that does not read.
    struct Socket {
        flush_waits: Arc<AtomicBool>,
    }

    impl AsyncRead for Socket {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            _: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Poll::Pending
        }
    }

    impl AsyncWrite for Socket {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            data: &[u8],
        ) -> Poll<io::Result<usize>> {
            Poll::Ready(Ok(data.len()))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            if self.flush_waits.load(Ordering::Relaxed) {
                Poll::Pending
            } else {
                Poll::Ready(Ok(()))
            }
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    const DEADLINES: Deadlines = Deadlines {
        idle: Duration::from_secs(60),
        write: Duration::from_secs(30),
        head: Duration::from_secs(10),
    };

    fn socket() -> (Pin<Box<ActivityIo<Socket>>>, Arc<Activity>, Arc<AtomicBool>) {
        let activity = Arc::new(Activity::default());
        let flush_waits = Arc::new(AtomicBool::new(false));
        let io = ActivityIo::new(
            Socket {
                flush_waits: Arc::clone(&flush_waits),
            },
            Arc::clone(&activity),
        );
        (Box::pin(io), activity, flush_waits)
    }

    async fn flush(io: &mut Pin<Box<ActivityIo<Socket>>>) -> bool {
        poll_fn(|cx| Poll::Ready(io.as_mut().poll_flush(cx).is_ready())).await
    }

    async fn write(io: &mut Pin<Box<ActivityIo<Socket>>>) {
        poll_fn(|cx| io.as_mut().poll_write(cx, b"data"))
            .await
            .unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_flush_is_not_a_quiet_connection_but_can_stall() {
        let (mut io, activity, flush_waits) = socket();
        write(&mut io).await;
        flush_waits.store(true, Ordering::Relaxed);
        assert!(!flush(&mut io).await);
        let started = tokio::time::Instant::now();
        // Not cut off at the header-read timeout while the response drains: the write
        // timeout decides, as for a write waiting on the client.
        assert_eq!(activity.watch(DEADLINES).await, Verdict::Stalled);
        assert!(started.elapsed() >= DEADLINES.write);
    }

    #[tokio::test(start_paused = true)]
    async fn the_header_read_timeout_counts_from_the_end_of_a_flush() {
        let (mut io, activity, flush_waits) = socket();
        flush_waits.store(true, Ordering::Relaxed);
        assert!(!flush(&mut io).await);
        let watcher = tokio::spawn({
            let activity = Arc::clone(&activity);
            async move { activity.watch(DEADLINES).await }
        });
        tokio::time::sleep(Duration::from_secs(12)).await;
        assert!(!watcher.is_finished(), "cut off while flushing");
        flush_waits.store(false, Ordering::Relaxed);
        let flushed_at = tokio::time::Instant::now();
        assert!(flush(&mut io).await);
        assert_eq!(watcher.await.unwrap(), Verdict::HeadTimeout);
        assert!(flushed_at.elapsed() >= DEADLINES.head);
    }

    #[tokio::test(start_paused = true)]
    async fn the_header_read_timeout_counts_from_the_last_write() {
        let (mut io, activity, _) = socket();
        let watcher = tokio::spawn({
            let activity = Arc::clone(&activity);
            async move { activity.watch(DEADLINES).await }
        });
        // Between two looks of the watcher (every 2.5 s here), as the last piece of a slow
        // download leaves.
        tokio::time::sleep(Duration::from_millis(3_700)).await;
        write(&mut io).await;
        let written_at = tokio::time::Instant::now();
        assert_eq!(watcher.await.unwrap(), Verdict::HeadTimeout);
        assert!(
            written_at.elapsed() >= DEADLINES.head,
            "fired {:?} after the last write",
            written_at.elapsed()
        );
    }

    #[test]
    fn the_http2_preface_is_recognised_across_reads() {
        let http2 = AtomicBool::new(false);
        let matched = match_preface(0, b"PRI * HTTP/2.0\r", &http2);
        assert_eq!(matched, 15);
        assert!(!http2.load(Ordering::Relaxed));
        assert_eq!(
            match_preface(matched, b"\n\r\nSM\r\n\r\n\0\0", &http2),
            u8::MAX
        );
        assert!(http2.load(Ordering::Relaxed));
        let http1 = AtomicBool::new(false);
        assert_eq!(match_preface(0, b"GET / HTTP/1.1\r\n", &http1), u8::MAX);
        assert_eq!(match_preface(0, b"PRI * HTTP/1.1", &http1), u8::MAX);
        assert!(!http1.load(Ordering::Relaxed));
    }
}
