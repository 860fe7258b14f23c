//! Probes for tests that wait on the server (included with `#[path = "common/probe.rs"] mod
//! probe;`): instead of sleeping "long enough", a test waits for what it needs to be true.
//! Each test binary uses what it needs of them.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// Counts the requests that reached a handler; a test waits until a count is reached. It also
/// counts how many handlers ran at once ([`enter`](Self::enter)), and holds the handlers that
/// ask ([`hold`](Self::hold)) until the test releases them.
#[derive(Clone, Default)]
pub(crate) struct Started(Arc<Count>);

#[derive(Default)]
struct Count {
    value: AtomicUsize,
    changed: Notify,
    running: AtomicUsize,
    most_at_once: AtomicUsize,
    released: AtomicBool,
    release: Notify,
}

impl Started {
    /// One more request reached its handler.
    pub(crate) fn mark(&self) {
        self.0.value.fetch_add(1, Ordering::SeqCst);
        self.0.changed.notify_waiters();
    }

    /// One more request reached its handler, which runs until the guard is dropped (with the
    /// handler's future, whether it finished or was cancelled).
    pub(crate) fn enter(&self) -> Running {
        let now = self.0.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.0.most_at_once.fetch_max(now, Ordering::SeqCst);
        self.mark();
        Running(self.clone())
    }

    /// The most handlers that ran at once (entered, not yet dropped).
    pub(crate) fn most_at_once(&self) -> usize {
        self.0.most_at_once.load(Ordering::SeqCst)
    }

    /// Waits until `count` requests reached their handler (at most 10 s, then panics).
    pub(crate) async fn reached(&self, count: usize) {
        let waited = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                // Registered before the check: a `mark` in between still wakes it.
                let changed = self.0.changed.notified();
                if self.0.value.load(Ordering::SeqCst) >= count {
                    return;
                }
                changed.await;
            }
        })
        .await;
        assert!(waited.is_ok(), "{count} requests never reached a handler");
    }

    /// For a handler: waits until the test calls [`release`](Self::release) (for ever if it
    /// never does). A request held so stays in flight for as long as the test needs it to,
    /// not for a time that a busy machine may outlast.
    pub(crate) async fn hold(&self) {
        loop {
            // Registered before the check: a `release` in between still wakes it.
            let released = self.0.release.notified();
            if self.0.released.load(Ordering::SeqCst) {
                return;
            }
            released.await;
        }
    }

    /// Lets every held handler (and every later one) go on.
    pub(crate) fn release(&self) {
        self.0.released.store(true, Ordering::SeqCst);
        self.0.release.notify_waiters();
    }
}

/// A handler that runs ([`Started::enter`]).
pub(crate) struct Running(Started);

impl Drop for Running {
    fn drop(&mut self) {
        (self.0).0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Waits until `condition` holds, looking every millisecond (at most 10 s, then panics): for
/// state the server keeps but does not announce, like the body budget in use.
pub(crate) async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let waited = tokio::time::timeout(Duration::from_secs(10), async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "never true: {what}");
}

/// Runs `work`, during which the server does at most `allowance` of work on a CPU, and checks
/// that the thread of this test's runtime (a `#[tokio::test]` runs the server's tasks on it
/// too) slept the rest of the time, by two measures that a busy machine can only make smaller:
/// - the runtime parked the thread (as it does when no task has anything to do) at least
///   once, and no more than once per 3 ms and 30 times besides (each connection's watcher
///   wakes at most twice per 10 ms, for a look and for a deadline; a task woken every
///   millisecond parks it a thousand times a second);
/// - the thread was on a CPU (Linux's schedstat, in nanoseconds) for no more than
///   `allowance` and a quarter of the time (a task that wakes itself again and again, made to
///   yield by tokio's budget rather than to sleep, keeps it there).
///
/// Each bound grows with the time `work` took: a slow machine cannot make them fail.
pub(crate) async fn sleeps_through<T>(allowance: Duration, work: impl Future<Output = T>) -> T {
    let (parks_before, cpu_before, started) = (parks(), thread_cpu(), Instant::now());
    let output = work.await;
    let parked = parks() - parks_before;
    let on_cpu = thread_cpu().saturating_sub(cpu_before);
    let elapsed = started.elapsed();
    let most_parks = 30 + u64::try_from(elapsed.as_millis() / 3).unwrap();
    assert!(
        (1..=most_parks).contains(&parked),
        "the runtime parked {parked} times in {elapsed:?}"
    );
    assert!(
        on_cpu <= allowance + elapsed / 4,
        "on a CPU for {on_cpu:?} of {elapsed:?}"
    );
    output
}

/// How many times this test's runtime has parked its thread.
fn parks() -> u64 {
    tokio::runtime::Handle::current()
        .metrics()
        .worker_park_count(0)
}

/// How long this thread has been on a CPU.
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    let nanoseconds = stat.split_whitespace().next().unwrap().parse().unwrap();
    Duration::from_nanos(nanoseconds)
}

/// Linux's queues of the TCP connection from `local` to `remote` (IPv4, on this machine), as
/// `/proc/net/tcp` has them: the bytes sent and not yet acknowledged by the other end, and the
/// bytes received and not yet read by the program; `None` when there is no such connection.
pub(crate) fn tcp_queues(
    local: std::net::SocketAddr,
    remote: std::net::SocketAddr,
) -> Option<(u64, u64)> {
    const ESTABLISHED: &str = "01";
    // The address as the kernel prints it: its four bytes as a number in the machine's own
    // order, and the port, in hexadecimal.
    let hex = |address: std::net::SocketAddr| {
        let std::net::SocketAddr::V4(address) = address else {
            panic!("not IPv4: {address}")
        };
        format!(
            "{:08X}:{:04X}",
            u32::from_ne_bytes(address.ip().octets()),
            address.port()
        )
    };
    let (local, remote) = (hex(local), hex(remote));
    std::fs::read_to_string("/proc/net/tcp")
        .unwrap()
        .lines()
        .skip(1)
        .find_map(|line| {
            // sl local_address rem_address st tx_queue:rx_queue ...
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.get(1..4)? != [local.as_str(), remote.as_str(), ESTABLISHED] {
                return None;
            }
            let (sent, received) = fields.get(4)?.split_once(':')?;
            Some((
                u64::from_str_radix(sent, 16).ok()?,
                u64::from_str_radix(received, 16).ok()?,
            ))
        })
}

/// Whether the server end of the TCP connection from `client` to `server` has read every byte
/// the client sent (acknowledged, and none waiting to be read), or is closed already.
pub(crate) fn all_read(client: std::net::SocketAddr, server: std::net::SocketAddr) -> bool {
    let delivered =
        tcp_queues(client, server).is_some_and(|(unacknowledged, _)| unacknowledged == 0);
    match tcp_queues(server, client) {
        Some((_, unread)) => delivered && unread == 0,
        None => true,
    }
}
