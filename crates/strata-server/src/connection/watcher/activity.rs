//! What one connection does ([`Activity`]: counters of reads, writes and requests) and when
//! it has done too little ([`Watcher`]: the deadlines, looked at a few times per timeout).

use super::shed::IdleEntry;
use super::track::EventStreams;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};

use crate::metrics::{Closed, Metrics};
use std::time::Duration;

/// What one connection does, counted as it happens and read by its watcher.
#[derive(Debug, Default)]
pub(crate) struct Activity {
    /// Writes to the socket that made progress.
    pub(super) written: AtomicU64,
    /// Requests being handled or answered, and events: one word, so that the watcher reads
    /// both at once (a request moving from one state to the next is never seen half done). Its
    /// low half counts requests received whose response hyper has not finished sending (or
    /// that were dropped unanswered); its high half counts every request started, response
    /// ready and response sent: a change restarts the idle count.
    pub(super) requests: AtomicU64,
    /// The clock of response bodies, advanced by the watcher every
    /// [`EPOCHS_PER_WRITE_TIMEOUT`]th of the write timeout.
    pub(super) epoch: AtomicU64,
    /// The last write to the socket is waiting for the client to read.
    pub(super) write_blocked: AtomicBool,
    /// The last flush is waiting for the client to read: behind TLS, the end of a response
    /// leaves the encryption layer's buffer while flushing, after every write returned.
    pub(super) flush_blocked: AtomicBool,
    /// The server is shutting down: event streams end now.
    pub(super) closing: AtomicBool,
    /// The shutdown timeout has passed: requests not answered yet get a 503.
    pub(super) cut: AtomicBool,
    /// The client opened with the HTTP/2 preface: no header-read deadline between requests
    /// (HTTP/2 has its pings and the idle timeout).
    pub(super) http2: AtomicBool,
    /// Response bodies hyper holds and waits on (not their producer), by the epoch of their
    /// last progress (slot `epoch % BODY_EPOCHS`): a body left in a slot for the write timeout
    /// is stalled, whatever the connection's other streams do.
    pub(super) waiting_bodies: [AtomicUsize; BODY_EPOCHS],
    /// The wakers of event streams waiting on their producer, woken to end at shutdown.
    pub(super) event_streams: Mutex<EventStreams>,
    /// The server's metrics, when it has them.
    pub(crate) metrics: Option<Metrics>,
    /// A response that closes the connection said why ([`CLOSED_BY_BODY_TIMEOUT`], ...; 0:
    /// none), for the metrics.
    pub(super) closed_by: AtomicU8,
}

/// [`Activity::closed_by`]: a 408 for a body too slow.
pub(super) const CLOSED_BY_BODY_TIMEOUT: u8 = 1;
/// [`Activity::closed_by`]: a 413 before the body's end.
pub(super) const CLOSED_BY_PAYLOAD_TOO_LARGE: u8 = 2;
/// [`Activity::closed_by`]: a 431 for a head too large.
pub(super) const CLOSED_BY_HEADER_TOO_LARGE: u8 = 3;

impl Activity {
    /// A connection's activity, counted in `metrics` when given.
    pub(crate) fn new(metrics: Option<Metrics>) -> Self {
        Self {
            metrics,
            ..Self::default()
        }
    }

    /// Whether the shutdown timeout cut the connection (its unanswered requests got a 503).
    pub(crate) fn was_cut(&self) -> bool {
        self.cut.load(Ordering::Relaxed)
    }

    /// Why a response closed the connection, if one did.
    pub(crate) fn closed_by(&self) -> Option<Closed> {
        match self.closed_by.load(Ordering::Relaxed) {
            CLOSED_BY_BODY_TIMEOUT => Some(Closed::BodyTimeout),
            CLOSED_BY_PAYLOAD_TOO_LARGE => Some(Closed::PayloadTooLarge),
            CLOSED_BY_HEADER_TOO_LARGE => Some(Closed::HeaderTooLarge),
            _ => None,
        }
    }
}

/// Epochs in a write timeout: a stalled body is found within an eighth of it after it is due.
pub(super) const EPOCHS_PER_WRITE_TIMEOUT: u32 = 8;
/// Slots of [`Activity::waiting_bodies`]: more than the epochs of a write timeout and one.
pub(super) const BODY_EPOCHS: usize = 16;
/// Epochs between a body's last progress and the look that finds it stalled: a body that
/// progressed in epoch `e` (at the latest just before `e + 1` began) is stalled once epoch
/// `e + 9` has begun, at least eight epochs, the write timeout, later.
pub(super) const STALL_EPOCHS: u64 = EPOCHS_PER_WRITE_TIMEOUT as u64 + 1;

/// A connection with nothing in flight for this long may be closed to make room when the
/// server is at its connection cap (one that has just connected is about to send its request).
pub(crate) const SHED_AFTER: Duration = Duration::from_millis(250);

/// The slot of `epoch` in [`Activity::waiting_bodies`].
pub(super) fn body_slot(epoch: u64) -> usize {
    // The remainder is below 16: it fits.
    usize::try_from(epoch % BODY_EPOCHS as u64).unwrap_or_default()
}

/// One event in [`Activity::requests`].
pub(super) const EVENT: u64 = 1 << 32;
/// The requests counted in [`Activity::requests`].
pub(super) const BUSY: u64 = EVENT - 1;

/// The connection timeouts the watcher applies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadlines {
    /// No request for this long: close gracefully (`None`: not watched, while closing).
    pub(crate) idle: Option<Duration>,
    /// Responses waiting and nothing written for this long: drop the connection.
    pub(crate) write: Duration,
    /// HTTP/1: no complete request head for this long while nothing is in flight: drop it.
    pub(crate) head: Duration,
    /// How much sooner this connection's idle deadline falls, in thousandths of it (at most
    /// [`MAX_IDLE_SPREAD`]; [`idle_spread`] picks one at random): connections opened together
    /// do not all close together, to come back together.
    pub(crate) idle_spread: u16,
}

/// The most an idle deadline is brought forward, in thousandths: a quarter.
pub(crate) const MAX_IDLE_SPREAD: u16 = 250;

/// A connection's [`Deadlines::idle_spread`], at random.
pub(crate) fn idle_spread() -> u16 {
    use std::hash::BuildHasher;
    // Each `RandomState` has keys of its own: its hash of anything is as good as random here.
    let random = std::collections::hash_map::RandomState::new().hash_one(0_u8);
    // Below 251: it fits.
    u16::try_from(random % (u64::from(MAX_IDLE_SPREAD) + 1)).unwrap_or_default()
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
pub(super) struct Since(Option<tokio::time::Instant>);

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
pub(super) struct Look {
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
            idle_entry: None,
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
    /// The connection's place among the idle ones the accept loop may ask to close.
    idle_entry: Option<IdleEntry>,
}

impl Watcher<'_> {
    /// Lists the connection among the idle ones while it is idle (from now, and at each
    /// look), so that the accept loop can ask it to close to make room.
    pub(crate) fn list_idle_in(&mut self, mut entry: IdleEntry) {
        entry.set(self.idle_since());
        self.idle_entry = Some(entry);
    }

    /// Since when the connection is idle, while its idle timeout is watched.
    fn idle_since(&self) -> Option<tokio::time::Instant> {
        self.deadlines.idle.and(self.idle.0)
    }

    /// The accept loop asked the connection to make room (and took it off the list).
    pub(crate) fn asked_to_make_room(&mut self) -> Option<Verdict> {
        let verdict = self.shed();
        if let Some(entry) = &mut self.idle_entry {
            // Off the list either way; listed again at the next look if it stays idle.
            entry.forget();
        }
        verdict
    }

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
        let after = if http2 {
            idle.min(self.deadlines.head)
        } else {
            idle
        };
        // Brought forward by the connection's spread (a quarter at most).
        let spread = after / 1000 * u32::from(self.deadlines.idle_spread.min(MAX_IDLE_SPREAD));
        Some(after.saturating_sub(spread))
    }

    /// Stops watching the idle timeout (the connection closes gracefully already).
    pub(crate) fn without_idle(&mut self) {
        self.deadlines.idle = None;
        if let Some(entry) = &mut self.idle_entry {
            entry.set(None);
        }
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
        let idle_since = self.idle_since();
        if let Some(entry) = &mut self.idle_entry {
            entry.set(idle_since);
        }
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
