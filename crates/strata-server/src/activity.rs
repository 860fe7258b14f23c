//! Connection timeouts beyond hyper's: an idle connection (no request for a while, HTTP/2
//! keep-alive pings notwithstanding) is closed gracefully, and a connection whose responses make
//! no write progress (a client that does not read, a zero HTTP/2 window) is closed.
//!
//! Counting is cheap (relaxed counters on reads, writes and requests); a timer per connection
//! samples the counters a few times per timeout.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use strata_core::{BoxError, ResponseBody};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tower_service::Service;

/// What one connection does.
#[derive(Debug, Default)]
pub(crate) struct Activity {
    /// Writes to the socket that made progress.
    written: AtomicU64,
    /// The last write to the socket is waiting for the client to read.
    write_blocked: AtomicBool,
    /// Pieces of response bodies taken by hyper to send.
    body_progress: AtomicU64,
    /// Requests received.
    requests: AtomicU64,
    /// Requests whose response is not ready yet (the handler is working).
    in_flight: AtomicUsize,
    /// Responses handed to hyper whose body it still holds (being sent).
    sending: AtomicUsize,
    /// Of those, bodies whose producer has nothing yet (a quiet event stream): hyper waits on
    /// them, which is not a stall.
    producing: AtomicUsize,
}

/// Why a connection should end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No request for the idle timeout: close gracefully (HTTP/2 GOAWAY).
    Idle,
    /// Responses waiting to be sent, and no byte written for the write timeout: drop it.
    Stalled,
}

impl Activity {
    /// Resolves when the connection has been idle for `idle` or stalled for `write`: with a
    /// write waiting on the client, or a response whose body hyper still holds and does not
    /// take (a body waiting on its producer, a quiet event stream, is not stalled), and no
    /// byte written.
    pub(crate) async fn watch(&self, idle: Duration, write: Duration) -> Verdict {
        let tick = (idle.min(write) / 4).max(Duration::from_millis(10));
        let mut written = self.written.load(Ordering::Relaxed);
        let mut bodies = self.body_progress.load(Ordering::Relaxed);
        let mut requests = self.requests.load(Ordering::Relaxed);
        let (mut stalled_for, mut idle_for) = (Duration::ZERO, Duration::ZERO);
        loop {
            tokio::time::sleep(tick).await;
            let now_written = self.written.load(Ordering::Relaxed);
            let now_bodies = self.body_progress.load(Ordering::Relaxed);
            let now_requests = self.requests.load(Ordering::Relaxed);
            let sending = self.sending.load(Ordering::Relaxed);
            let in_flight = self.in_flight.load(Ordering::Relaxed);
            // Stuck: a socket write waits on the client and nothing was written, or a body
            // waits to be sent and hyper took nothing of it (HTTP/2 without window). Pings are
            // writes too, which is why bodies are watched on their own.
            let socket_stuck = self.write_blocked.load(Ordering::Relaxed) && now_written == written;
            let producing = self.producing.load(Ordering::Relaxed);
            let body_stuck = sending > producing && now_bodies == bodies;
            stalled_for = if socket_stuck || body_stuck {
                stalled_for + tick
            } else {
                Duration::ZERO
            };
            idle_for = if sending == 0 && in_flight == 0 && now_requests == requests {
                idle_for + tick
            } else {
                Duration::ZERO
            };
            (written, bodies, requests) = (now_written, now_bodies, now_requests);
            if stalled_for >= write {
                return Verdict::Stalled;
            }
            if idle_for >= idle {
                return Verdict::Idle;
            }
        }
    }
}

impl Activity {
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
    /// A socket whose write progress is counted.
    pub(crate) struct ActivityIo<IO> {
        #[pin]
        io: IO,
        activity: Arc<Activity>,
    }
}

impl<IO> ActivityIo<IO> {
    pub(crate) fn new(io: IO, activity: Arc<Activity>) -> Self {
        Self { io, activity }
    }
}

impl<IO: AsyncRead> AsyncRead for ActivityIo<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.project().io.poll_read(cx, buf)
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
        self.project().io.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().io.poll_shutdown(cx)
    }
}

/// Counts the requests of a connection and the responses it is sending.
#[derive(Debug, Clone)]
pub(crate) struct Tracked<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S> Tracked<S> {
    pub(crate) fn new(inner: S, activity: Arc<Activity>) -> Self {
        Self { inner, activity }
    }
}

impl<S, B> Service<Request<B>> for Tracked<S>
where
    S: Service<Request<B>, Response = Response<ResponseBody>, Error = Infallible>,
{
    type Response = Response<TrackedBody>;
    type Error = Infallible;
    type Future = TrackedFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        self.activity.requests.fetch_add(1, Ordering::Relaxed);
        self.activity.in_flight.fetch_add(1, Ordering::Relaxed);
        TrackedFuture {
            inner: self.inner.call(request),
            guard: Some(InFlight(Arc::clone(&self.activity))),
        }
    }
}

/// A request in flight; counted out when dropped (answered or cancelled).
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
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
        self.activity.sending.fetch_sub(1, Ordering::Relaxed);
    }
}

pin_project! {
    /// The response future of [`Tracked`].
    pub(crate) struct TrackedFuture<F> {
        #[pin]
        inner: F,
        guard: Option<InFlight>,
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
            activity.sending.fetch_add(1, Ordering::Relaxed);
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
