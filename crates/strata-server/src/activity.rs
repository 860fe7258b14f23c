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
    /// Pieces of response bodies taken by hyper to send, and bodies whose producer had nothing
    /// and now has.
    body_progress: AtomicU64,
    /// Requests being handled or answered, and events: one word, so that the watcher reads
    /// both at once (a request moving from one state to the next is never seen half done). Its
    /// low half counts requests received whose response hyper has not finished sending (or
    /// that were dropped unanswered); its high half counts every request started, response
    /// ready and response sent: a change restarts the idle count.
    requests: AtomicU64,
    /// Responses handed to hyper whose body it still holds (being sent).
    sending: AtomicUsize,
    /// Of those, bodies whose producer has nothing yet (a quiet event stream): hyper waits on
    /// them, which is not a stall.
    producing: AtomicUsize,
    /// The client opened with the HTTP/2 preface: no header-read deadline between requests
    /// (HTTP/2 has its pings and the idle timeout).
    http2: AtomicBool,
}

/// One event in [`Activity::requests`].
const EVENT: u64 = 1 << 32;
/// The requests counted in [`Activity::requests`].
const BUSY: u64 = EVENT - 1;

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
    /// No request for this long: close gracefully (`None`: not watched, while closing).
    pub(crate) idle: Option<Duration>,
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

/// Since when, as far as the watcher's looks can tell, a condition has held without progress:
/// the first look that found it so (the progress before it may have been just before that
/// look), never earlier. A deadline counted from it is never early, and late by less than the
/// time between two looks.
#[derive(Debug, Clone, Copy)]
struct Since(Option<tokio::time::Instant>);

impl Since {
    /// At the start of watching: the condition holds from now, if it holds.
    fn start(holds: bool, now: tokio::time::Instant) -> Self {
        Self(holds.then_some(now))
    }

    /// At a look: kept while the condition held at the previous look and still does with no
    /// progress since; from now when it holds again or progress was made; none otherwise.
    fn look(self, holds: bool, progressed: bool, now: tokio::time::Instant) -> Self {
        match self.0 {
            Some(since) if holds && !progressed => Self(Some(since)),
            _ => Self(holds.then_some(now)),
        }
    }

    /// When `after` has passed since then; `None` when the condition does not hold or the
    /// time is beyond any clock (`Duration::MAX`: never).
    fn due(self, after: Duration) -> Option<tokio::time::Instant> {
        self.0?.checked_add(after)
    }
}

/// One look at the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Look {
    written: u64,
    write_blocked: bool,
    bodies: u64,
    requests: u64,
    sending: usize,
    producing: usize,
}

impl Look {
    /// A socket write or flush waits on the client.
    fn socket_waits(&self) -> bool {
        self.write_blocked
    }

    /// A response body waits for hyper to take it (not for its producer): HTTP/2 without
    /// window.
    fn body_waits(&self) -> bool {
        self.sending > self.producing
    }

    /// Nothing in flight, being sent, written or flushed: waiting for the next request.
    fn quiet(&self) -> bool {
        self.requests & BUSY == 0 && !self.write_blocked
    }
}

impl Activity {
    fn look(&self) -> Look {
        Look {
            written: self.written.load(Ordering::Relaxed),
            write_blocked: self.write_blocked.load(Ordering::Relaxed)
                || self.flush_blocked.load(Ordering::Relaxed),
            bodies: self.body_progress.load(Ordering::Relaxed),
            requests: self.requests.load(Ordering::Relaxed),
            sending: self.sending.load(Ordering::Relaxed),
            producing: self.producing.load(Ordering::Relaxed),
        }
    }

    /// A watcher of this connection's timeouts, counting from now.
    pub(crate) fn watcher(&self, deadlines: Deadlines) -> Watcher<'_> {
        let shortest = deadlines
            .write
            .min(deadlines.head)
            .min(deadlines.idle.unwrap_or(Duration::MAX));
        let now = tokio::time::Instant::now();
        let last = self.look();
        Watcher {
            activity: self,
            deadlines,
            tick: (shortest / 4).max(Duration::from_millis(10)),
            socket_stall: Since::start(last.socket_waits(), now),
            body_stall: Since::start(last.body_waits(), now),
            idle: Since::start(last.quiet(), now),
            head: Since::start(last.quiet(), now),
            last,
        }
    }

    /// The first verdict of a new [`Watcher`].
    #[cfg(test)]
    pub(crate) async fn watch(&self, deadlines: Deadlines) -> Verdict {
        self.watcher(deadlines).next().await
    }
}

/// Watches a connection's timeouts ([`Activity::watcher`]).
pub(crate) struct Watcher<'a> {
    activity: &'a Activity,
    deadlines: Deadlines,
    tick: Duration,
    last: Look,
    socket_stall: Since,
    body_stall: Since,
    idle: Since,
    head: Since,
}

impl Watcher<'_> {
    /// Resolves when the connection has been idle for `deadlines.idle` (no request started
    /// or finished, nothing in flight, being sent or flushed), has waited `deadlines.head`
    /// for an HTTP/1 request head (idle, and nothing written either), or stalled for
    /// `deadlines.write`: a write waiting on the client and no byte written, or a response
    /// whose body hyper still holds and does not take (a body waiting on its producer, a
    /// quiet event stream, is not stalled).
    ///
    /// The counters are looked at every quarter of the shortest deadline (10 ms at least),
    /// and at each deadline when it is due: a deadline fires within one look's interval after
    /// it is due, never before. `Duration::MAX` never fires; `Duration::ZERO` fires at the
    /// first look that finds its condition.
    ///
    /// Once it has said [`Verdict::Idle`], the idle timeout is no longer watched; the others
    /// go on counting (a connection closing gracefully is still cut off when it stalls or
    /// leaves a head unfinished). Cancelling it between looks loses nothing.
    pub(crate) async fn next(&mut self) -> Verdict {
        loop {
            let http2 = self.activity.http2.load(Ordering::Relaxed);
            let dues = [
                self.socket_stall.due(self.deadlines.write),
                self.body_stall.due(self.deadlines.write),
                self.deadlines.idle.and_then(|after| self.idle.due(after)),
                self.head.due(self.deadlines.head).filter(|_| !http2),
            ];
            let next_look = crate::deadline::deadline_after(self.tick);
            // (A due deadline has fired: every one left is still ahead.)
            let next = dues.into_iter().flatten().fold(next_look, std::cmp::min);
            tokio::time::sleep_until(next).await;
            if let Some(verdict) = self.look() {
                return verdict;
            }
        }
    }

    /// Stops watching the idle timeout (the connection closes gracefully already).
    pub(crate) fn without_idle(&mut self) {
        self.deadlines.idle = None;
    }

    /// Looks at the counters now: the verdict, if a deadline has passed.
    fn look(&mut self) -> Option<Verdict> {
        let now = tokio::time::Instant::now();
        let look = self.activity.look();
        let last = std::mem::replace(&mut self.last, look);
        let wrote = look.written != last.written;
        let events = look.requests >> 32 != last.requests >> 32;
        self.socket_stall = self.socket_stall.look(look.socket_waits(), wrote, now);
        self.body_stall = self
            .body_stall
            .look(look.body_waits(), look.bodies != last.bodies, now);
        self.idle = self.idle.look(look.quiet(), events, now);
        // Waiting for the next request head also means nothing written: the end of a slow
        // download restarts it. (HTTP/1 only: HTTP/2's pings are writes, so the idle count
        // cannot ask the same; HTTP/2 has no head deadline.)
        self.head = self.head.look(look.quiet(), events || wrote, now);
        let passed = |since: Since, after: Duration| since.due(after).is_some_and(|due| due <= now);
        let write_timeout = self.deadlines.write;
        if passed(self.socket_stall, write_timeout) || passed(self.body_stall, write_timeout) {
            return Some(Verdict::Stalled);
        }
        if passed(self.head, self.deadlines.head) && !self.activity.http2.load(Ordering::Relaxed) {
            return Some(Verdict::HeadTimeout);
        }
        if self
            .deadlines
            .idle
            .is_some_and(|after| passed(self.idle, after))
        {
            self.without_idle();
            return Some(Verdict::Idle);
        }
        None
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
        self.requests.fetch_add(EVENT + 1, Ordering::Relaxed);
        InFlight(Some(Arc::clone(self)))
    }
}

/// A request in flight; counted out when dropped unanswered, or handed on to [`Sending`] when
/// its response is ready.
pub(crate) struct InFlight(Option<Arc<Activity>>);

impl InFlight {
    /// The response is ready: an event; the request stays counted until its body is sent.
    fn answered(mut self) -> Option<Sending> {
        let activity = self.0.take()?;
        activity.sending.fetch_add(1, Ordering::Relaxed);
        activity.requests.fetch_add(EVENT, Ordering::Relaxed);
        Some(Sending {
            activity,
            producing: false,
        })
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(activity) = &self.0 {
            // One request fewer, one event more.
            activity
                .requests
                .fetch_add(EVENT.wrapping_sub(1), Ordering::Relaxed);
        }
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
                // The producer has something again: what hyper does with it is new.
                self.activity.body_progress.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        self.producing(false);
        self.activity.sending.fetch_sub(1, Ordering::Relaxed);
        self.activity
            .requests
            .fetch_add(EVENT.wrapping_sub(1), Ordering::Relaxed);
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
        let sending = this.guard.take().and_then(InFlight::answered);
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
        idle: Some(Duration::from_secs(60)),
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

    #[tokio::test(start_paused = true)]
    async fn zero_timeouts_end_only_what_they_apply_to() {
        let activity = Arc::new(Activity::default());
        let zero = Deadlines {
            idle: Some(Duration::ZERO),
            write: Duration::ZERO,
            head: Duration::ZERO,
        };
        let in_flight = activity.request();
        let watcher = tokio::spawn({
            let activity = Arc::clone(&activity);
            async move { activity.watch(zero).await }
        });
        // A request in flight is neither stalled, idle nor waiting for a head.
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!watcher.is_finished());
        drop(in_flight);
        let answered = tokio::time::Instant::now();
        assert_eq!(watcher.await.unwrap(), Verdict::HeadTimeout);
        // Looked at every 10 ms (the shortest tick), not in a loop without sleeping.
        assert!(answered.elapsed() <= Duration::from_millis(20));
    }

    #[tokio::test(start_paused = true)]
    async fn timeouts_of_duration_max_never_fire_and_never_overflow() {
        let (mut io, activity, flush_waits) = socket();
        let never = Deadlines {
            idle: Some(Duration::MAX),
            write: Duration::MAX,
            head: Duration::MAX,
        };
        flush_waits.store(true, Ordering::Relaxed);
        assert!(!flush(&mut io).await);
        // A stalled connection, looked at every quarter of `Duration::MAX` (tokio sleeps 30
        // years at most): five looks would overflow a plain sum of ticks.
        let year = Duration::from_secs(365 * 24 * 60 * 60);
        let watched = tokio::time::timeout(200 * year, activity.watch(never)).await;
        assert!(watched.is_err(), "{watched:?}");
    }

    /// A watcher of `activity` under `deadlines` on a task of its own.
    fn spawn_watch(
        activity: &Arc<Activity>,
        deadlines: Deadlines,
    ) -> tokio::task::JoinHandle<Verdict> {
        let activity = Arc::clone(activity);
        tokio::spawn(async move { activity.watch(deadlines).await })
    }

    /// An HTTP/2 connection's activity (no head deadline: the idle timeout alone).
    fn http2() -> Arc<Activity> {
        let activity = Arc::new(Activity::default());
        activity.http2.store(true, Ordering::Relaxed);
        activity
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_fires_within_a_look_after_it_is_due_never_before() {
        // Looks every 2.5 s (a quarter of the head deadline); the idle deadline, 11 s, is not
        // a whole number of looks.
        let deadlines = Deadlines {
            idle: Some(Duration::from_secs(11)),
            write: Duration::from_secs(30),
            head: Duration::from_secs(10),
        };
        let tick = Duration::from_millis(2500);
        let activity = http2();
        let in_flight = activity.request();
        let started = tokio::time::Instant::now();
        let watcher = spawn_watch(&activity, deadlines);
        // Answered between two looks.
        tokio::time::sleep(Duration::from_millis(3700)).await;
        drop(in_flight);
        let due = started + Duration::from_millis(3700) + Duration::from_secs(11);
        assert_eq!(watcher.await.unwrap(), Verdict::Idle);
        let fired = tokio::time::Instant::now();
        assert!(fired >= due, "{:?} early", due - fired);
        assert!(fired - due < tick, "{:?} late", fired - due);
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_starting_or_finishing_restarts_the_idle_count() {
        let idle = Duration::from_secs(10);
        let deadlines = Deadlines {
            idle: Some(idle),
            write: Duration::from_secs(30),
            head: Duration::from_secs(30),
        };
        let activity = http2();
        let watcher = spawn_watch(&activity, deadlines);
        // Started and finished between two looks (every 2.5 s): seen by its count alone.
        tokio::time::sleep(Duration::from_millis(8100)).await;
        drop(activity.request());
        let finished = tokio::time::Instant::now();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!watcher.is_finished());
        assert_eq!(watcher.await.unwrap(), Verdict::Idle);
        assert!(finished.elapsed() >= idle, "{:?}", finished.elapsed());
        // Started, and still in flight past the idle timeout: not idle.
        let watcher = spawn_watch(&activity, deadlines);
        let in_flight = activity.request();
        tokio::time::sleep(3 * idle).await;
        assert!(!watcher.is_finished(), "idle with a request in flight");
        drop(in_flight);
        let finished = tokio::time::Instant::now();
        assert_eq!(watcher.await.unwrap(), Verdict::Idle);
        assert!(finished.elapsed() >= idle, "{:?}", finished.elapsed());
    }

    /// A response body that has nothing until `ready` is set, then one piece.
    struct Producer {
        ready: Arc<AtomicBool>,
        sent: bool,
    }

    impl Body for Producer {
        type Data = bytes::Bytes;
        type Error = BoxError;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<bytes::Bytes>, BoxError>>> {
            if self.sent {
                Poll::Ready(None)
            } else if self.ready.load(Ordering::Relaxed) {
                self.sent = true;
                Poll::Ready(Some(Ok(Frame::data(bytes::Bytes::from_static(b"event")))))
            } else {
                Poll::Pending
            }
        }
    }

    /// A request of `activity` answered with a [`Producer`]'s body; the body as hyper gets it.
    async fn answered(activity: &Arc<Activity>, ready: &Arc<AtomicBool>) -> TrackedBody {
        let body = ResponseBody::stream(Producer {
            ready: Arc::clone(ready),
            sent: false,
        });
        let response = std::future::ready(Ok::<_, Infallible>(Response::new(body)));
        let tracked = TrackedFuture::new(response, activity.request());
        tracked.await.unwrap().into_body()
    }

    async fn poll_body(
        body: &mut TrackedBody,
    ) -> Poll<Option<Result<Frame<bytes::Bytes>, BoxError>>> {
        poll_fn(|cx| Poll::Ready(Pin::new(&mut *body).poll_frame(cx))).await
    }

    #[tokio::test(start_paused = true)]
    async fn a_response_being_sent_is_not_waiting_for_a_head_and_a_waiting_producer_is_no_stall() {
        let activity = Arc::new(Activity::default());
        let ready = Arc::new(AtomicBool::new(false));
        let mut body = answered(&activity, &ready).await;
        // hyper polls the body; its producer has nothing (a quiet event stream).
        assert!(poll_body(&mut body).await.is_pending());
        let watcher = spawn_watch(&activity, DEADLINES);
        tokio::time::sleep(DEADLINES.write * 3).await;
        assert!(!watcher.is_finished(), "{:?}", watcher.await);
        // The producer has an event; hyper takes it, then takes nothing more (no window).
        ready.store(true, Ordering::Relaxed);
        assert!(matches!(
            poll_body(&mut body).await,
            Poll::Ready(Some(Ok(_)))
        ));
        let took = tokio::time::Instant::now();
        assert_eq!(watcher.await.unwrap(), Verdict::Stalled);
        assert!(took.elapsed() >= DEADLINES.write, "{:?}", took.elapsed());
        // Once sent, the head deadline counts from then.
        let watcher = spawn_watch(&activity, DEADLINES);
        tokio::time::sleep(DEADLINES.head).await;
        drop(body);
        let sent = tokio::time::Instant::now();
        assert_eq!(watcher.await.unwrap(), Verdict::HeadTimeout);
        assert!(sent.elapsed() >= DEADLINES.head, "{:?}", sent.elapsed());
    }

    #[tokio::test(start_paused = true)]
    async fn after_the_idle_verdict_the_other_deadlines_go_on_counting() {
        // Idle after 1 s; a head still unfinished is cut off at 3 s from the start, not
        // counted again from the idle verdict (nor put off forever by idle verdicts).
        let deadlines = Deadlines {
            idle: Some(Duration::from_secs(1)),
            write: Duration::from_secs(30),
            head: Duration::from_secs(3),
        };
        let activity = Arc::new(Activity::default());
        let started = tokio::time::Instant::now();
        let mut watcher = activity.watcher(deadlines);
        assert_eq!(watcher.next().await, Verdict::Idle);
        assert_eq!(started.elapsed(), Duration::from_secs(1));
        assert_eq!(watcher.next().await, Verdict::HeadTimeout);
        assert_eq!(started.elapsed(), deadlines.head);
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
