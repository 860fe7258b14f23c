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
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use http::header::{CONNECTION, CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderValue, Response, StatusCode};
use http_body::{Body as HttpBody, Frame, SizeHint};
use pin_project_lite::pin_project;
use strata_core::{ApiError, Body, BoxError, StreamShutdown, error_response};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What one connection does, counted as it happens and read by its watcher.
#[derive(Debug, Default)]
pub(crate) struct Activity {
    /// Writes to the socket that made progress.
    written: AtomicU64,
    /// Requests being handled or answered, and events: one word, so that the watcher reads
    /// both at once (a request moving from one state to the next is never seen half done). Its
    /// low half counts requests received whose response hyper has not finished sending (or
    /// that were dropped unanswered); its high half counts every request started, response
    /// ready and response sent: a change restarts the idle count.
    requests: AtomicU64,
    /// The clock of response bodies, advanced by the watcher every
    /// [`EPOCHS_PER_WRITE_TIMEOUT`]th of the write timeout.
    epoch: AtomicU64,
    /// The last write to the socket is waiting for the client to read.
    write_blocked: AtomicBool,
    /// The last flush is waiting for the client to read: behind TLS, the end of a response
    /// leaves the encryption layer's buffer while flushing, after every write returned.
    flush_blocked: AtomicBool,
    /// The server is shutting down: event streams end now.
    closing: AtomicBool,
    /// The shutdown timeout has passed: requests not answered yet get a 503.
    cut: AtomicBool,
    /// The client opened with the HTTP/2 preface: no header-read deadline between requests
    /// (HTTP/2 has its pings and the idle timeout).
    http2: AtomicBool,
    /// Response bodies hyper holds and waits on (not their producer), by the epoch of their
    /// last progress (slot `epoch % BODY_EPOCHS`): a body left in a slot for the write timeout
    /// is stalled, whatever the connection's other streams do.
    waiting_bodies: [AtomicUsize; BODY_EPOCHS],
    /// The wakers of event streams waiting on their producer, woken to end at shutdown.
    event_streams: Mutex<EventStreams>,
}

/// Epochs in a write timeout: a stalled body is found within an eighth of it after it is due.
const EPOCHS_PER_WRITE_TIMEOUT: u32 = 8;
/// Slots of [`Activity::waiting_bodies`]: more than the epochs of a write timeout and one.
const BODY_EPOCHS: usize = 16;
/// Epochs between a body's last progress and the look that finds it stalled: a body that
/// progressed in epoch `e` (at the latest just before `e + 1` began) is stalled once epoch
/// `e + 9` has begun, at least eight epochs, the write timeout, later.
const STALL_EPOCHS: u64 = EPOCHS_PER_WRITE_TIMEOUT as u64 + 1;

/// A connection with nothing in flight for this long may be closed to make room when the
/// server is at its connection cap (one that has just connected is about to send its request).
pub(crate) const SHED_AFTER: Duration = Duration::from_millis(250);

/// The slot of `epoch` in [`Activity::waiting_bodies`].
fn body_slot(epoch: u64) -> usize {
    // The remainder is below 16: it fits.
    usize::try_from(epoch % BODY_EPOCHS as u64).unwrap_or_default()
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
    requests: u64,
}

impl Look {
    /// A socket write or flush waits on the client.
    fn socket_waits(&self) -> bool {
        self.write_blocked
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
            requests: self.requests.load(Ordering::Relaxed),
        }
    }

    /// Nothing in flight, being sent, written or flushed now.
    pub(crate) fn is_quiet(&self) -> bool {
        self.look().quiet()
    }

    /// Starts a new body epoch; whether a body has waited on hyper since `STALL_EPOCHS` or
    /// more epochs before it (slots older than that are checked too, so that a new watcher
    /// of an old connection misses none).
    fn next_epoch(&self) -> bool {
        let epoch = self.epoch.fetch_add(1, Ordering::Relaxed) + 1;
        (STALL_EPOCHS..BODY_EPOCHS as u64)
            .filter_map(|age| epoch.checked_sub(age))
            .any(|old| self.waiting_bodies[body_slot(old)].load(Ordering::Relaxed) > 0)
    }

    /// A watcher of this connection's timeouts, counting from now.
    pub(crate) fn watcher(&self, deadlines: Deadlines) -> Watcher<'_> {
        let shortest = deadlines
            .write
            .min(deadlines.head)
            .min(deadlines.idle.unwrap_or(Duration::MAX));
        let now = tokio::time::Instant::now();
        let last = self.look();
        let tick = (shortest / 4).max(Duration::from_millis(10));
        let epoch = (deadlines.write / EPOCHS_PER_WRITE_TIMEOUT).max(Duration::from_millis(10));
        Watcher {
            activity: self,
            deadlines,
            tick,
            socket_stall: Since::start(last.socket_waits(), now),
            epochs: now.checked_add(epoch).map(|next| (epoch, next)),
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
    /// The length of a body epoch and when the next begins (none for a write timeout too
    /// long to count).
    epochs: Option<(Duration, tokio::time::Instant)>,
    idle: Since,
    head: Since,
}

impl Watcher<'_> {
    /// Resolves when the connection has had nothing in flight for the idle timeout (for
    /// HTTP/2, the shorter of it and the header-read timeout: a connection without a stream
    /// is held no longer than one without a request head), has waited `deadlines.head` for
    /// an HTTP/1 request head (idle, and nothing written either), or stalled for
    /// `deadlines.write`: a write waiting on the client and no byte written, or any one
    /// response whose body hyper holds and does not take (one HTTP/2 stream without window
    /// while others progress; a body waiting on its producer, a quiet event stream, is not
    /// stalled).
    ///
    /// The counters are looked at every quarter of the shortest deadline (10 ms at least),
    /// and at each deadline when it is due: a deadline fires within one look's interval after
    /// it is due, never before; a stalled body within an eighth of the write timeout more.
    /// `Duration::MAX` never fires; `Duration::ZERO` fires at the first look that finds its
    /// condition.
    ///
    /// Once it has said [`Verdict::Idle`], the idle timeout is no longer watched; the others
    /// go on counting (a connection closing gracefully is still cut off when it stalls or
    /// leaves a head unfinished). Cancelling it between looks loses nothing.
    pub(crate) async fn next(&mut self) -> Verdict {
        loop {
            let http2 = self.activity.http2.load(Ordering::Relaxed);
            let dues = [
                self.socket_stall.due(self.deadlines.write),
                self.epochs.map(|(_, next)| next),
                self.idle_after(http2)
                    .and_then(|after| self.idle.due(after)),
                self.head.due(self.deadlines.head).filter(|_| !http2),
            ];
            let next_look = crate::connection::deadline::deadline_after(self.tick);
            // (A due deadline has fired: every one left is still ahead.)
            let next = dues.into_iter().flatten().fold(next_look, std::cmp::min);
            tokio::time::sleep_until(next).await;
            if let Some(verdict) = self.look() {
                return verdict;
            }
        }
    }

    /// How long the connection may have nothing in flight, if that is watched.
    fn idle_after(&self, http2: bool) -> Option<Duration> {
        let idle = self.deadlines.idle?;
        Some(if http2 {
            idle.min(self.deadlines.head)
        } else {
            idle
        })
    }

    /// Stops watching the idle timeout (the connection closes gracefully already).
    pub(crate) fn without_idle(&mut self) {
        self.deadlines.idle = None;
    }

    /// Whether the connection may be closed to make room for others (the server is at its
    /// connection cap): it has had nothing in flight for [`SHED_AFTER`] at least. Looks at
    /// the counters now; a verdict due meanwhile is returned too.
    pub(crate) fn shed(&mut self) -> Option<Verdict> {
        if let Some(verdict) = self.look() {
            return Some(verdict);
        }
        let now = tokio::time::Instant::now();
        let quiet_for = self
            .idle
            .0
            .map(|since| now.saturating_duration_since(since));
        (self.deadlines.idle.is_some() && quiet_for.is_some_and(|quiet| quiet >= SHED_AFTER)).then(
            || {
                self.without_idle();
                Verdict::Idle
            },
        )
    }

    /// Looks at the counters now: the verdict, if a deadline has passed.
    fn look(&mut self) -> Option<Verdict> {
        let now = tokio::time::Instant::now();
        let look = self.activity.look();
        let last = std::mem::replace(&mut self.last, look);
        let wrote = look.written != last.written;
        let events = look.requests >> 32 != last.requests >> 32;
        self.socket_stall = self.socket_stall.look(look.socket_waits(), wrote, now);
        self.idle = self.idle.look(look.quiet(), events, now);
        // Waiting for the next request head also means nothing written: the end of a slow
        // download restarts it. (HTTP/1 only: HTTP/2's pings are writes, so the idle count
        // cannot ask the same; HTTP/2 has no head deadline.)
        self.head = self.head.look(look.quiet(), events || wrote, now);
        let passed = |since: Since, after: Duration| since.due(after).is_some_and(|due| due <= now);
        let mut body_stalled = false;
        if let Some((length, next)) = &mut self.epochs
            && *next <= now
        {
            body_stalled = self.activity.next_epoch();
            *next = now + *length;
        }
        if body_stalled || passed(self.socket_stall, self.deadlines.write) {
            return Some(Verdict::Stalled);
        }
        let http2 = self.activity.http2.load(Ordering::Relaxed);
        if passed(self.head, self.deadlines.head) && !http2 {
            return Some(Verdict::HeadTimeout);
        }
        if self
            .idle_after(http2)
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

/// Vectored writes of at most this many bytes in all are copied into one buffer and written
/// with one `write`. hyper hands a response over as its head and its body (two slices, or
/// three with chunked framing): one `writev` of them costs the kernel about 0.2 µs more per
/// response than one `write` of the same bytes (measured on hello: 6.3 against 6.5 µs of
/// system time per request over loopback), far more than copying a few KiB. Larger writes
/// keep their slices: no copy of a large body. Behind TLS the system call is rustls's, which
/// writes its records vectored either way: there the join only hands rustls one slice.
const JOIN_MAX: usize = 4096;

thread_local! {
    /// Where a worker thread joins the slices of small writes (one buffer per thread, not per
    /// connection: an idle connection holds none of it).
    static JOINED: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(Vec::with_capacity(JOIN_MAX));
}

/// How to write the slices of a vectored write.
#[derive(Debug, PartialEq, Eq)]
enum Gather<'a> {
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

/// The wakers of a connection's event streams and of its HTTP/2 requests not answered yet, each
/// in its slot, woken at shutdown.
#[derive(Debug, Default)]
struct EventStreams {
    wakers: Vec<Option<Waker>>,
    free: Vec<usize>,
}

impl Activity {
    /// The server is shutting down: every event stream ends at its next poll, and those
    /// waiting on their producer are woken for it.
    pub(crate) fn end_event_streams(&self) {
        self.closing.store(true, Ordering::Relaxed);
        self.wake_all();
    }

    /// Wakes every waker kept (each is kept again when its task waits again).
    fn wake_all(&self) {
        let woken: Vec<Waker> = {
            let mut streams = self
                .event_streams
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            streams.wakers.iter_mut().filter_map(Option::take).collect()
        };
        woken.into_iter().for_each(Waker::wake);
    }

    /// The shutdown timeout has passed: a request not answered yet is answered with a 503
    /// at its next poll (for HTTP/1 the connection's task polls it while it closes; an HTTP/2
    /// request's task is woken).
    pub(crate) fn cut(&self) {
        self.cut.store(true, Ordering::Relaxed);
        self.wake_all();
    }

    /// Keeps `waker` to wake the event stream or request in `slot` (given one if it has none)
    /// at shutdown.
    fn keep_waker(&self, slot: &mut Option<usize>, waker: &Waker) {
        let mut streams = self
            .event_streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let index = *slot.get_or_insert_with(|| {
            streams.free.pop().unwrap_or_else(|| {
                streams.wakers.push(None);
                streams.wakers.len() - 1
            })
        });
        match &mut streams.wakers[index] {
            Some(kept) if kept.will_wake(waker) => {}
            entry => *entry = Some(waker.clone()),
        }
    }

    /// The event stream or request in `slot` has ended.
    fn forget_waker(&self, slot: usize) {
        let mut streams = self
            .event_streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        streams.wakers[slot] = None;
        streams.free.push(slot);
    }

    /// A request arrived: counted, and in flight until the returned guard is dropped.
    pub(crate) fn request(self: &Arc<Self>) -> InFlight {
        self.requests.fetch_add(EVENT + 1, Ordering::Relaxed);
        InFlight {
            activity: Some(Arc::clone(self)),
            waker_slot: None,
        }
    }
}

/// A request in flight; counted out when dropped unanswered, or handed on to [`Sending`] when
/// its response is ready.
pub(crate) struct InFlight {
    activity: Option<Arc<Activity>>,
    /// An HTTP/2 request's slot among the connection's wakers, while it waits.
    waker_slot: Option<usize>,
}

impl InFlight {
    /// The response is ready: an event; the request stays counted until its body is sent.
    fn answered(mut self) -> Option<Sending> {
        let activity = self.activity.take()?;
        if let Some(slot) = self.waker_slot.take() {
            activity.forget_waker(slot);
        }
        activity.requests.fetch_add(EVENT, Ordering::Relaxed);
        // Handed to hyper: waiting on it from now.
        let epoch = activity.epoch.load(Ordering::Relaxed);
        activity.waiting_bodies[body_slot(epoch)].fetch_add(1, Ordering::Relaxed);
        Some(Sending {
            activity,
            waiting_since: Some(epoch),
            waker_slot: None,
        })
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(activity) = &self.activity {
            if let Some(slot) = self.waker_slot {
                activity.forget_waker(slot);
            }
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
    /// The body epoch of the last piece hyper took, while hyper holds the body and has not
    /// asked for more; `None` while its producer has nothing (a quiet event stream), or once
    /// it has ended.
    waiting_since: Option<u64>,
    /// An event stream's slot among the connection's wakers.
    waker_slot: Option<usize>,
}

impl Sending {
    /// hyper took a piece: waiting on hyper from this epoch. (Two atomic operations once per
    /// epoch, a load for the other pieces.)
    fn progressed(&mut self) {
        let epoch = self.activity.epoch.load(Ordering::Relaxed);
        if self.waiting_since != Some(epoch) {
            self.not_waiting();
            self.activity.waiting_bodies[body_slot(epoch)].fetch_add(1, Ordering::Relaxed);
            self.waiting_since = Some(epoch);
        }
    }

    /// The producer has nothing yet, or the body has ended: nothing waits on hyper.
    fn not_waiting(&mut self) {
        if let Some(epoch) = self.waiting_since.take() {
            self.activity.waiting_bodies[body_slot(epoch)].fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        self.not_waiting();
        if let Some(slot) = self.waker_slot {
            self.activity.forget_waker(slot);
        }
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
    F: Future<Output = Result<Response<Body>, Infallible>>,
{
    type Output = Result<Response<TrackedBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let activity = this
            .guard
            .as_ref()
            .and_then(|guard| guard.activity.as_ref());
        let cut = activity.is_some_and(|activity| activity.cut.load(Ordering::Relaxed));
        let mut response = if cut {
            shutting_down()
        } else {
            match this.inner.poll(cx) {
                Poll::Ready(Ok(response)) => response,
                Poll::Pending => {
                    // An HTTP/2 request runs in a task of its own: kept to be woken for the
                    // cut at the shutdown timeout (an HTTP/1 one is polled by its connection).
                    if let Some(guard) = this.guard.as_mut()
                        && let Some(activity) = &guard.activity
                        && activity.http2.load(Ordering::Relaxed)
                    {
                        activity.keep_waker(&mut guard.waker_slot, cx.waker());
                    }
                    return Poll::Pending;
                }
            }
        };
        let sending = this.guard.take().and_then(InFlight::answered);
        // Only an event stream pays for the look into its extensions: other responses keep
        // their hot path free of new work and allocations (`AtShutdown` replaced a `bool` in
        // the body, on the stack; the output's extensions stay unallocated when empty).
        let event_stream = if is_event_stream(&response) {
            match response.extensions_mut().remove::<StreamShutdown>() {
                Some(hook) => AtShutdown::Tell(hook),
                None => AtShutdown::End,
            }
        } else {
            AtShutdown::Ignore
        };
        let http2 = sending
            .as_ref()
            .is_some_and(|sending| sending.activity.http2.load(Ordering::Relaxed));
        Poll::Ready(Ok(response.map(|body| TrackedBody {
            inner: body,
            sending,
            event_stream,
            http2,
            rest: None,
        })))
    }
}

/// The answer to a request still unanswered at the shutdown timeout.
fn shutting_down() -> Response<Body> {
    let error = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "The server is shutting down; retry shortly",
    )
    .with_header(RETRY_AFTER, HeaderValue::from_static("1"))
    .with_header(CONNECTION, HeaderValue::from_static("close"));
    error_response(error)
}

/// Whether `response` is an event stream (of unknown length, `text/event-stream`): it has
/// no end of its own, so it ends when the server shuts down (its clients reconnect).
fn is_event_stream(response: &Response<Body>) -> bool {
    response.body().size_hint().exact().is_none()
        && response
            .headers()
            .get(CONTENT_TYPE)
            .is_some_and(|value| value.as_bytes().starts_with(b"text/event-stream"))
}

/// What a response body does when the server shuts down.
#[derive(Debug)]
enum AtShutdown {
    /// Not an event stream: it ends by itself, within the shutdown timeout.
    Ignore,
    /// An event stream that cannot be told: it ends at once.
    End,
    /// An event stream with its hook: told once, then it ends by itself (Strata's event
    /// streams let their emitter know, send what it says in a short grace, and end).
    Tell(StreamShutdown),
    /// Told.
    Told,
}

pin_project! {
    /// A response body counted as being sent until hyper drops it.
    pub(crate) struct TrackedBody {
        #[pin]
        inner: Body,
        sending: Option<Sending>,
        // An event stream ends when the server shuts down.
        event_stream: AtShutdown,
        // HTTP/2: data is handed to hyper in pieces of `HTTP2_PIECE` at most, this the rest
        // (boxed: rare, and the body is moved about).
        http2: bool,
        rest: Option<Box<bytes::Bytes>>,
    }
}

/// The most bytes of a response handed to hyper at once on HTTP/2: hyper asks for more only
/// when the stream has window, so a client that gives none holds this much of a response in
/// the server's buffers, not all of it, and its stream is seen waiting (the write timeout).
const HTTP2_PIECE: usize = 64 * 1024;

/// The next piece of `rest` (and none left once it is all taken).
fn next_piece(rest: &mut Option<Box<bytes::Bytes>>) -> bytes::Bytes {
    match rest {
        Some(bytes) if bytes.len() > HTTP2_PIECE => bytes.split_to(HTTP2_PIECE),
        _ => rest.take().map(|bytes| *bytes).unwrap_or_default(),
    }
}

impl HttpBody for TrackedBody {
    type Data = bytes::Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<bytes::Bytes>, BoxError>>> {
        let this = self.project();
        if this.rest.is_some() {
            if let Some(sending) = this.sending.as_mut() {
                sending.progressed();
            }
            return Poll::Ready(Some(Ok(Frame::data(next_piece(this.rest)))));
        }
        if !matches!(this.event_stream, AtShutdown::Ignore)
            && let Some(sending) = this.sending.as_mut()
        {
            if sending.activity.closing.load(Ordering::Relaxed) {
                match std::mem::replace(this.event_stream, AtShutdown::Told) {
                    // The final chunk, at once.
                    AtShutdown::End => {
                        *this.event_stream = AtShutdown::End;
                        sending.not_waiting();
                        return Poll::Ready(None);
                    }
                    AtShutdown::Tell(hook) => hook.begin(),
                    AtShutdown::Ignore | AtShutdown::Told => {}
                }
            }
            let polled = this.inner.poll_frame(cx);
            if polled.is_pending() {
                sending
                    .activity
                    .keep_waker(&mut sending.waker_slot, cx.waker());
            }
            return track(sending, polled);
        }
        let mut polled = this.inner.poll_frame(cx);
        if *this.http2
            && let Poll::Ready(Some(Ok(frame))) = &mut polled
            && let Some(data) = frame.data_mut()
            && data.len() > HTTP2_PIECE
        {
            let rest = data.split_off(HTTP2_PIECE);
            *this.rest = Some(Box::new(rest));
        }
        match this.sending.as_mut() {
            Some(sending) => track(sending, polled),
            None => polled,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let inner = self.inner.size_hint();
        let Some(rest) = &self.rest else {
            return inner;
        };
        let rest = rest.len() as u64;
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + rest);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + rest);
        }
        hint
    }
}

/// Counts what a poll of a body tracked by `sending` gave.
fn track<T>(
    sending: &mut Sending,
    polled: Poll<Option<Result<T, BoxError>>>,
) -> Poll<Option<Result<T, BoxError>>> {
    match &polled {
        Poll::Ready(Some(Ok(_))) => sending.progressed(),
        _ => sending.not_waiting(),
    }
    polled
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
        // Looks every 2.25 s (a quarter of the idle deadline, the shortest); the idle
        // deadline, 9 s, is not a whole number of looks from when the request ends.
        let deadlines = Deadlines {
            idle: Some(Duration::from_secs(9)),
            write: Duration::from_secs(30),
            head: Duration::from_secs(10),
        };
        let tick = Duration::from_millis(2250);
        let activity = http2();
        let in_flight = activity.request();
        let started = tokio::time::Instant::now();
        let watcher = spawn_watch(&activity, deadlines);
        // Answered between two looks.
        tokio::time::sleep(Duration::from_millis(3700)).await;
        drop(in_flight);
        let due = started + Duration::from_millis(3700) + Duration::from_secs(9);
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

    impl HttpBody for Producer {
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
        let body = Body::new(Producer {
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
        // The body ends (hyper takes its end) and is dropped once sent: the head deadline
        // counts from then.
        assert!(matches!(poll_body(&mut body).await, Poll::Ready(None)));
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

    #[tokio::test(start_paused = true)]
    async fn one_stream_without_progress_stalls_the_connection_while_others_progress() {
        let activity = http2();
        let ready = Arc::new(AtomicBool::new(true));
        // Granted no window: hyper never takes a piece of it.
        let _starved = answered(&activity, &ready).await;
        let watcher = spawn_watch(&activity, DEADLINES);
        let started = tokio::time::Instant::now();
        // Another stream takes a piece every second: the connection writes all the time.
        let progress = tokio::spawn({
            let activity = Arc::clone(&activity);
            async move {
                loop {
                    let mut busy = answered(&activity, &Arc::new(AtomicBool::new(true))).await;
                    assert!(matches!(
                        poll_body(&mut busy).await,
                        Poll::Ready(Some(Ok(_)))
                    ));
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        });
        assert_eq!(watcher.await.unwrap(), Verdict::Stalled);
        progress.abort();
        let took = started.elapsed();
        let epoch = DEADLINES.write / EPOCHS_PER_WRITE_TIMEOUT;
        assert!(took >= DEADLINES.write, "{took:?}");
        assert!(took <= DEADLINES.write + 2 * epoch, "{took:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_that_progresses_now_and_then_is_no_stall() {
        let activity = http2();
        let ready = Arc::new(AtomicBool::new(true));
        let watcher = spawn_watch(&activity, DEADLINES);
        for _ in 0..10 {
            let mut body = answered(&activity, &ready).await;
            assert!(matches!(
                poll_body(&mut body).await,
                Poll::Ready(Some(Ok(_)))
            ));
            tokio::time::sleep(DEADLINES.write / 2).await;
            assert!(matches!(poll_body(&mut body).await, Poll::Ready(None)));
        }
        assert!(!watcher.is_finished(), "{:?}", watcher.await);
    }

    #[tokio::test(start_paused = true)]
    async fn at_the_cap_a_connection_idle_for_a_while_is_shed_a_busy_one_is_not() {
        let activity = http2();
        let mut watcher = activity.watcher(DEADLINES);
        // Just connected: about to send its request.
        assert_eq!(watcher.shed(), None);
        tokio::time::sleep(SHED_AFTER).await;
        assert_eq!(watcher.shed(), Some(Verdict::Idle));
        let activity = http2();
        let mut watcher = activity.watcher(DEADLINES);
        let in_flight = activity.request();
        tokio::time::sleep(SHED_AFTER * 4).await;
        assert_eq!(watcher.shed(), None, "a request is in flight");
        drop(in_flight);
        assert_eq!(watcher.shed(), None, "it has just been answered");
    }

    /// An event stream's response to a request of `activity`: a producer with nothing yet.
    async fn event_stream(activity: &Arc<Activity>) -> TrackedBody {
        event_stream_with(activity, None).await
    }

    /// [`event_stream`] with a shutdown hook in its response's extensions.
    async fn event_stream_with(
        activity: &Arc<Activity>,
        hook: Option<StreamShutdown>,
    ) -> TrackedBody {
        let body = Body::new(Producer {
            ready: Arc::new(AtomicBool::new(false)),
            sent: false,
        });
        let mut response = Response::new(body);
        if let Some(hook) = hook {
            response.extensions_mut().insert(hook);
        }
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        let tracked = TrackedFuture::new(
            std::future::ready(Ok::<_, Infallible>(response)),
            activity.request(),
        );
        tracked.await.unwrap().into_body()
    }

    #[tokio::test]
    async fn at_shutdown_a_quiet_event_stream_is_woken_and_ends() {
        let activity = Arc::new(Activity::default());
        let mut stream = event_stream(&activity).await;
        let mut other = answered(&activity, &Arc::new(AtomicBool::new(false))).await;
        let ended = tokio::spawn(async move {
            let frame = poll_fn(|cx| Pin::new(&mut stream).poll_frame(cx)).await;
            (frame.is_none(), stream)
        });
        tokio::task::yield_now().await;
        assert!(!ended.is_finished());
        activity.end_event_streams();
        let (ended, stream) = tokio::time::timeout(Duration::from_secs(5), ended)
            .await
            .expect("the event stream was not woken")
            .unwrap();
        assert!(ended, "the stream ended with its final chunk");
        drop(stream);
        // Another streamed response (a download) is not cut short.
        assert!(poll_body(&mut other).await.is_pending());
        assert_eq!(
            activity
                .event_streams
                .lock()
                .unwrap()
                .wakers
                .iter()
                .flatten()
                .count(),
            0
        );
    }

    #[tokio::test]
    async fn at_shutdown_an_event_stream_with_a_hook_is_told_once_and_ends_by_itself() {
        let activity = Arc::new(Activity::default());
        let told = Arc::new(AtomicUsize::new(0));
        let hook = StreamShutdown::new({
            let told = Arc::clone(&told);
            move || {
                told.fetch_add(1, Ordering::Relaxed);
            }
        });
        let mut stream = event_stream_with(&activity, Some(hook)).await;
        assert!(poll_body(&mut stream).await.is_pending());
        activity.end_event_streams();
        // Told, and left to end by itself: its producer still has nothing.
        assert!(poll_body(&mut stream).await.is_pending());
        assert!(poll_body(&mut stream).await.is_pending());
        assert_eq!(told.load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn after_the_cut_an_unanswered_request_gets_a_503() {
        let activity = Arc::new(Activity::default());
        let never = TrackedFuture::new(
            std::future::pending::<Result<Response<Body>, Infallible>>(),
            activity.request(),
        );
        activity.cut();
        let response = never.await.unwrap();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[CONNECTION], "close");
        assert_eq!(response.headers()[RETRY_AFTER], "1");
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

    /// A socket that records each write (`true` for a vectored one) and takes at most `room`
    /// bytes of it.
    struct Recorder {
        writes: Vec<(bool, Vec<u8>)>,
        room: usize,
    }

    impl AsyncWrite for Recorder {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            data: &[u8],
        ) -> Poll<io::Result<usize>> {
            let taken = data.len().min(self.room);
            self.writes.push((false, data[..taken].to_vec()));
            Poll::Ready(Ok(taken))
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            bufs: &[io::IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            let all: Vec<u8> = bufs.iter().flat_map(|buf| buf.iter().copied()).collect();
            let taken = all.len().min(self.room);
            self.writes.push((true, all[..taken].to_vec()));
            Poll::Ready(Ok(taken))
        }

        fn is_write_vectored(&self) -> bool {
            true
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// Writes `bufs` through an `ActivityIo` over a recorder taking `room` bytes: the count
    /// written, and the recorder's writes.
    fn write_vectored(bufs: &[&[u8]], room: usize) -> (usize, Vec<(bool, Vec<u8>)>) {
        let recorder = Recorder {
            writes: Vec::new(),
            room,
        };
        let mut io = Box::pin(ActivityIo::new(recorder, Arc::new(Activity::default())));
        let slices: Vec<io::IoSlice<'_>> = bufs.iter().map(|buf| io::IoSlice::new(buf)).collect();
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        let Poll::Ready(Ok(written)) = io.as_mut().poll_write_vectored(&mut cx, &slices) else {
            panic!("the recorder is always ready");
        };
        assert!(io.is_write_vectored(), "hyper must keep queueing bodies");
        (written, Pin::into_inner(io).io.writes)
    }

    #[test]
    fn a_small_head_and_body_leave_in_one_plain_write() {
        let head = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n";
        let (written, writes) = write_vectored(&[head, b"", b"{}"], usize::MAX);
        assert_eq!(written, head.len() + 2);
        let mut joined = head.to_vec();
        joined.extend_from_slice(b"{}");
        assert_eq!(writes, [(false, joined)]);
        // A short write counts from the start of the first slice, as a vectored one does.
        let (written, writes) = write_vectored(&[b"abc", b"def"], 4);
        assert_eq!(written, 4);
        assert_eq!(writes, [(false, b"abcd".to_vec())]);
        // One slice with bytes, larger than a join takes: written as it is, plainly.
        let only = vec![b'y'; JOIN_MAX + 1];
        let (_, writes) = write_vectored(&[b"", &only, b""], usize::MAX);
        assert_eq!(writes, [(false, only)]);
        // Nothing: the socket is not asked.
        let (written, writes) = write_vectored(&[b"", b""], usize::MAX);
        assert_eq!((written, writes), (0, vec![]));
    }

    #[test]
    fn a_large_write_keeps_its_slices() {
        let body = vec![b'x'; JOIN_MAX];
        let (written, writes) = write_vectored(&[b"head", &body], usize::MAX);
        assert_eq!(written, JOIN_MAX + 4);
        assert_eq!(writes.len(), 1);
        assert!(writes[0].0, "a vectored write: the body is not copied");
        // At the limit, joined.
        let (_, writes) = write_vectored(&[b"head", &body[4..]], usize::MAX);
        assert!(!writes[0].0);
        assert_eq!(writes[0].1.len(), JOIN_MAX);
    }
}
