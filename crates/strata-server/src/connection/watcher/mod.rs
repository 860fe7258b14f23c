//! The connection watcher: the timeouts hyper does not keep, kept for each connection by a
//! task of its own that counts what the connection does and orders it closed.
//!
//! - An idle connection (no request for the idle timeout; HTTP/2 keep-alive pings
//!   notwithstanding) is closed gracefully.
//! - An HTTP/1 connection that sends no complete request head within the header-read timeout
//!   (a slow or silent client, an idle keep-alive connection) is dropped.
//! - A connection whose responses make no write progress for the write timeout (a client that
//!   does not read, one HTTP/2 stream without window) is dropped.
//! - At the connection cap, the connection idle longest (for a quarter of a second at least)
//!   closes to make room, one for each newcomer, and gives its place at once; at shutdown,
//!   every connection closes gracefully, event streams end, and at the shutdown timeout what
//!   has no answer yet gets a 503.
//!
//! Counting is cheap (relaxed counters on writes and requests, [`Activity`]); the watcher
//! looks at the counters a few times per timeout ([`activity::Watcher`]). hyper's own
//! header-read timeout is off: it arms a timer for every request, where this one timer per
//! connection covers every request of it.
//!
//! # The interface
//!
//! A connection's task gives the watcher what it sees and gets orders back; nothing else
//! crosses:
//!
//! 1. `Arc<Activity>`, shared by the pieces below (`Activity::default()`);
//! 2. the socket wrapped in [`ActivityIo`] (writes counted, the HTTP/2 preface noticed);
//! 3. each request counted with [`Activity::request`] and its response future wrapped in
//!    [`TrackedFuture`], whose body ([`TrackedBody`]) is counted until hyper drops it;
//! 4. [`spawn`] starts the watcher's task with the connection's [`Deadlines`], the server's
//!    [`Shutdown`], its [`IdleConnections`] and the connection's place under the cap; the
//!    connection reads [`Order`]s from the channel it returns, and drops the [`WatcherTask`]
//!    when it ends.
//!
//! # What it relies on in hyper
//!
//! hyper does not document these; each is covered by a test that fails when it changes:
//!
//! | hyper's behaviour | what breaks without it | test |
//! | --- | --- | --- |
//! | A response body is dropped once sent (HTTP/1 and HTTP/2) | a request stays counted: an idle connection is never closed | `tests/abuse.rs` `an_idle_http1_keep_alive_connection_is_closed`, `an_idle_http2_connection_is_closed_even_while_it_answers_pings` |
//! | A body is polled only when it can be sent (an HTTP/2 stream without window takes nothing) | a starved stream looks like progress: never dropped | `tests/abuse.rs` `an_http2_stream_without_window_is_dropped`, `one_http2_stream_without_progress_ends_its_connection_while_others_progress` |
//! | HTTP/2 pings are written on the socket | a peer that stops answering pings is not dropped, or one that answers them is held past the header-read timeout | `connection::tests` `an_http2_peer_that_stops_answering_pings_is_dropped`, `an_idle_http2_peer_that_answers_pings_is_closed_at_the_header_read_timeout` |
//! | An HTTP/1 connection closing gracefully still waits for a head it has begun | a graceful shutdown is held by a head never finished | `tests/abuse.rs` `a_head_left_unfinished_does_not_hold_a_graceful_shutdown` |
//! | hyper's header-read timer is off with `header_read_timeout(None)`, although a timer is set | heads are cut off at hyper's 30 s, whatever the configuration | `connection::tests` `hypers_own_header_read_timer_is_off` |
//! | hyper-util's auto builder tells HTTP/2 by its preface, on the bytes the watcher sees | HTTP/2 connections get HTTP/1's head deadline, or the reverse | `tests/server.rs` `http1_and_http2_on_one_port`, `tests/abuse.rs` `a_request_head_shorter_than_the_http2_preface_is_served_and_its_connection_kept` |
//!
//! The socket tests pass from hyper 1.5.0 with hyper-util 0.1.10; the paused-time tests of
//! HTTP/2 keep-alive need hyper 1.8.0 and hyper-util 0.1.18 (`strata-server/Cargo.toml`).

mod activity;
mod io;
mod shed;
mod track;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::listen::Place;
use crate::metrics::Closed;
pub(crate) use activity::{Activity, Deadlines, SHED_AFTER, Verdict, idle_spread};
pub(crate) use io::{ActivityIo, HTTP2_PREFACE, continues_preface};
pub(crate) use shed::IdleConnections;
pub(crate) use track::{TrackedBody, TrackedFuture};

/// Starts watching a connection: a task of its own, which sends the connection its orders on
/// the channel returned, and keeps the connection's `place` under the cap (given back early
/// when it closes to make room). Dropping the [`WatcherTask`] stops it.
pub(crate) fn spawn(
    activity: Arc<Activity>,
    shutdown: Shutdown,
    idle: Arc<IdleConnections>,
    deadlines: Deadlines,
    place: Place,
) -> (WatcherTask, oneshot::Receiver<Order>) {
    let (orders, ordered) = oneshot::channel();
    let task = tokio::spawn(watch(activity, shutdown, idle, deadlines, orders, place));
    (WatcherTask(task), ordered)
}

/// What the watcher of a connection tells it.
pub(crate) enum Order {
    /// Finish what is in flight, take nothing new (server shutdown, idle connection); `then`
    /// brings the next order (a drop), if one may follow.
    CloseGracefully {
        then: Option<oneshot::Receiver<Order>>,
        /// Why, for the metrics.
        reason: Closed,
    },
    /// Drop the connection now, for this reason (logged), and this one for the metrics
    /// (`None`: the reason of the graceful close before it stands).
    Drop(&'static str, Option<Closed>),
    /// The shutdown timeout has passed: answer what has no answer yet with a 503, then close
    /// (dropped after [`CUT_GRACE`](crate::connection::CUT_GRACE)).
    Cut,
}

/// What a connection hears of the server's shutdown.
#[derive(Clone)]
pub(crate) struct Shutdown {
    /// Graceful shutdown has begun.
    pub(crate) stop: watch::Receiver<bool>,
    /// The shutdown timeout has passed.
    pub(crate) cut: watch::Receiver<bool>,
}

/// Aborts a task when dropped: a connection's watcher ends with its connection.
pub(crate) struct WatcherTask(JoinHandle<()>);

impl Drop for WatcherTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Watches a connection's activity and the server's stop signal, and orders the connection
/// closed when one of them says so.
async fn watch(
    activity: Arc<Activity>,
    mut shutdown: Shutdown,
    idle: Arc<IdleConnections>,
    deadlines: Deadlines,
    orders: oneshot::Sender<Order>,
    // Held until the connection ends (this task is aborted then).
    mut place: Place,
) {
    let mut watcher = activity.watcher(deadlines);
    let entry = idle.entry();
    let asked = entry.asked();
    watcher.list_idle_in(entry);
    // Whether the connection closes to make room (the server is at its cap).
    let mut shed = false;
    let verdict = loop {
        tokio::select! {
            _ = shutdown.stop.wait_for(|stop| *stop) => break None,
            verdict = watcher.next() => break Some(verdict),
            // The server is at its cap and this connection has been idle longest: it makes
            // room, and its place goes to the newcomer at once.
            () = asked.notified() => if let Some(verdict) = watcher.asked_to_make_room() {
                shed = verdict == Verdict::Idle;
                if shed {
                    place.make_room(&idle);
                }
                break Some(verdict);
            },
        }
    };
    let (give_up, reason) = match verdict {
        // Server shutdown: finish what is in flight, take nothing new, end event streams (the
        // accept loop's shutdown timeout ends what does not finish).
        None => {
            activity.end_event_streams();
            (None, Closed::Shutdown)
        }
        // Made room: nothing was in flight; the client hears GOAWAY, not a long goodbye (an
        // HTTP/2 close waits for a ping's answer).
        Some(Verdict::Idle) if shed => (Some(SHED_GRACE), Closed::Shed),
        // An idle connection closing gracefully still has its streams to finish; one that
        // cannot (a stream without window) is dropped after the write timeout.
        Some(Verdict::Idle) => (Some(deadlines.write), Closed::Idle),
        Some(verdict) => {
            let _ = orders.send(drop_order(verdict));
            return;
        }
    };
    let (next, then) = oneshot::channel();
    if orders
        .send(Order::CloseGracefully {
            then: Some(then),
            reason,
        })
        .is_err()
    {
        return;
    }
    // While it closes, a client that stalls or never finishes a request head is still cut off
    // (hyper's own header-read timer is off), counted as before the close.
    watcher.without_idle();
    let out_of_time = async {
        match give_up {
            Some(after) => tokio::time::sleep(after).await,
            None => std::future::pending().await,
        }
    };
    // Closing for idleness with nothing in flight a second later: only a peer that does not
    // answer the goodbye (an HTTP/2 close waits for a ping's answer) keeps it open, and it
    // need not keep its place for the write timeout.
    let closing_idle = verdict == Some(Verdict::Idle);
    let still_quiet = async {
        loop {
            tokio::time::sleep(QUIET_GOODBYE).await;
            if activity.is_quiet() {
                break;
            }
        }
    };
    let order = tokio::select! {
        verdict = watcher.next() => drop_order(verdict),
        () = out_of_time => {
            Order::Drop("idle connection closed: its streams did not finish", None)
        }
        () = still_quiet, if closing_idle => {
            Order::Drop("idle connection closed: the peer did not finish the goodbye", None)
        }
        _ = shutdown.cut.wait_for(|cut| *cut) => {
            activity.cut();
            Order::Cut
        }
    };
    let _ = next.send(order);
}

/// The order that drops a connection for `verdict` (not `Idle`, which closes gracefully).
fn drop_order(verdict: Verdict) -> Order {
    match verdict {
        Verdict::Stalled => Order::Drop(
            "connection closed: its responses made no write progress",
            Some(Closed::Stalled),
        ),
        Verdict::HeadTimeout | Verdict::Idle => Order::Drop(
            "connection closed: no request head within the header-read timeout",
            Some(Closed::HeaderTimeout),
        ),
    }
}

/// How long a connection closed for idleness may stay quiet before it is dropped.
pub(super) const QUIET_GOODBYE: Duration = Duration::from_secs(1);

/// How long a connection closed to make room has to say goodbye: time to write its GOAWAY,
/// no more. The accept loop makes room as fast as these end: with 32 closing at once
/// (`shed::CLOSING_BEYOND_THE_CAP`), 3,200 newcomers a second; at 100 ms, idle HTTP/2 from
/// eight addresses kept the listen queue full and health checks waited for seconds.
const SHED_GRACE: Duration = Duration::from_millis(10);
