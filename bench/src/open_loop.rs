//! The open-loop load generator of `strata-bench latency`: requests sent on a schedule at a
//! fixed rate, whatever the server does, and each request's latency measured from the time it
//! was *meant* to be sent (coordinated-omission correction, as wrk2 does).
//!
//! Request `n` (0, 1, 2, …) is due `n / rate` seconds after the start, on connection
//! `n mod C`: each of the C keep-alive connections carries `rate / C` requests per second, the
//! connections staggered so that the whole is evenly spaced. One ticker releases requests
//! when they fall due; a connection sends its next request as soon as it is released *and* the
//! previous response has arrived. When the server is slow, that waiting counts in the latency
//! of the requests that waited, as it would for a client that cannot wait (a closed-loop
//! generator would instead slow down and hide it).
//!
//! Everything runs on the caller's runtime (`strata-bench latency` uses a current-thread one,
//! pinned to its own core) as local tasks sharing plain cells, no locks or atomics. Requests are
//! microseconds apart and tokio's timer has millisecond granularity, so on Linux the ticker
//! sleeps on a timerfd set to the next due time (to the microsecond, registered with the
//! runtime like a socket) rather than spinning, which on a shared machine would make the
//! generator a CPU hog that the scheduler preempts for whole time slices. Its lateness is
//! recorded (`lag`). Per request: prebuilt bytes written, the response read into a reused
//! buffer (`load::read_response`), two clock reads and two histogram increments; no
//! allocation.

use std::cell::{Cell, RefCell};
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::Notify;

use crate::histogram::Histogram;
use crate::load;

/// After the last due time, how long connections in arrears may go on sending: what is not
/// sent by then is missing from the count (and the round falls short).
pub(crate) const GRACE: Duration = Duration::from_secs(1);
/// A round whose achieved rate is below this share of the rate asked is flagged short.
pub(crate) const SHORTFALL: f64 = 0.98;

/// When each request is due, and on which connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Schedule {
    rate: u64,
    connections: usize,
    total: u64,
}

impl Schedule {
    /// `rate` requests per second (at least 1) over `connections` (at least 1) for `duration`.
    pub(crate) fn new(rate: u64, connections: usize, duration: Duration) -> Self {
        let rate = rate.max(1);
        // The requests due before `duration`: n with n / rate < duration.
        let total = (duration.as_nanos() * u128::from(rate)).div_ceil(1_000_000_000);
        Self {
            rate,
            connections: connections.max(1),
            total: u64::try_from(total).unwrap_or(u64::MAX),
        }
    }

    /// How many requests the schedule holds.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// When request `n` is due, from the start: `n / rate` seconds, to the nanosecond below.
    pub(crate) fn due(&self, n: u64) -> Duration {
        let nanos = u128::from(n) * 1_000_000_000 / u128::from(self.rate);
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// The connection that sends request `n`.
    #[allow(clippy::cast_possible_truncation)]
    pub(crate) fn connection(&self, n: u64) -> usize {
        (n % self.connections as u64) as usize
    }
}

/// What one open-loop run measured. Latencies in nanoseconds.
#[derive(Debug, Clone)]
pub(crate) struct OpenLoopResult {
    /// The rate asked, requests per second.
    pub(crate) rate: u64,
    /// Requests the schedule held.
    pub(crate) scheduled: u64,
    /// Responses received (each with the expected status).
    pub(crate) completed: u64,
    /// From the start to the last response, at least the schedule's length.
    pub(crate) elapsed: Duration,
    /// From each request's due time to its response: the latency reported.
    pub(crate) latency: Histogram,
    /// From each request's actual sending to its response (what a closed-loop generator
    /// reports; below `latency` by the time spent waiting for the connection).
    pub(crate) service: Histogram,
    /// How late the ticker released each request: the generator's own scheduling error, part
    /// of `latency` for every server alike.
    pub(crate) lag: Histogram,
}

impl OpenLoopResult {
    /// Responses per second over `elapsed`.
    pub(crate) fn achieved(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let completed = self.completed as f64;
        completed / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Whether the run fell short of its rate: a request not sent by the end of the grace
    /// period, or an achieved rate more than 2 % below the rate asked.
    pub(crate) fn short(&self) -> bool {
        #[allow(clippy::cast_precision_loss)]
        let rate = self.rate as f64;
        self.completed < self.scheduled || self.achieved() < SHORTFALL * rate
    }
}

/// State shared by the ticker and the connections (all on one thread).
struct Shared {
    schedule: Schedule,
    start: Instant,
    /// Requests `0..released` have fallen due.
    released: Cell<u64>,
    /// One per connection: the ticker released one of its requests.
    wake: Box<[Notify]>,
    latency: RefCell<Histogram>,
    service: RefCell<Histogram>,
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// Opens `connections` connections to `addr` (each sends `request` once, untimed), then sends
/// `request` at `rate` per second for `duration`; fails on any I/O error or a status other
/// than `expected`.
pub(crate) async fn run(
    addr: SocketAddr,
    request: Arc<[u8]>,
    expected: u16,
    rate: u64,
    connections: usize,
    duration: Duration,
) -> io::Result<OpenLoopResult> {
    let schedule = Schedule::new(rate, connections, duration);
    let mut streams = Vec::with_capacity(connections);
    for _ in 0..connections {
        streams.push(load::connect(addr, &request, expected).await?);
    }
    // A server that stops answering must not hang the run.
    let limit = duration + GRACE + Duration::from_secs(10);
    let local = tokio::task::LocalSet::new();
    tokio::time::timeout(
        limit,
        local.run_until(drive(schedule, streams, request, expected, duration)),
    )
    .await
    .map_err(|_| {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the round did not end within {limit:?}"),
        )
    })?
}

/// The ticker and the connections, from the start signal to the last response.
async fn drive(
    schedule: Schedule,
    streams: Vec<(TcpStream, Vec<u8>)>,
    request: Arc<[u8]>,
    expected: u16,
    duration: Duration,
) -> io::Result<OpenLoopResult> {
    let start = Instant::now();
    let shared = Rc::new(Shared {
        schedule,
        start,
        released: Cell::new(0),
        wake: streams.iter().map(|_| Notify::new()).collect(),
        latency: RefCell::new(Histogram::new()),
        service: RefCell::new(Histogram::new()),
    });
    let stop = start + duration + GRACE;
    let tasks: Vec<_> = streams
        .into_iter()
        .enumerate()
        .map(|(index, (stream, buf))| {
            tokio::task::spawn_local(connection(
                Rc::clone(&shared),
                index,
                stream,
                buf,
                Arc::clone(&request),
                expected,
                stop,
            ))
        })
        .collect();
    let lag = tick(&shared).await?;
    let mut last = start;
    for task in tasks {
        last = last.max(task.await.map_err(io::Error::other)??);
    }
    let latency = shared.latency.take();
    Ok(OpenLoopResult {
        rate: schedule.rate,
        scheduled: schedule.total(),
        // One value per response.
        completed: latency.count(),
        elapsed: (last - start).max(duration),
        latency,
        service: shared.service.take(),
        lag,
    })
}

/// Releases each request when it falls due and wakes its connection; returns how late each
/// release was.
async fn tick(shared: &Shared) -> io::Result<Histogram> {
    #[cfg(target_os = "linux")]
    let alarm = Alarm::new()?;
    let schedule = shared.schedule;
    let mut lag = Histogram::new();
    let mut next = 0;
    while next < schedule.total() {
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(shared.start);
        while next < schedule.total() {
            let due = schedule.due(next);
            if due > elapsed {
                break;
            }
            lag.record(nanos(elapsed.saturating_sub(due)));
            shared.released.set(next + 1);
            shared.wake[schedule.connection(next)].notify_one();
            next += 1;
        }
        if next >= schedule.total() {
            break;
        }
        let due = shared.start + schedule.due(next);
        #[cfg(target_os = "linux")]
        alarm.until(due).await?;
        // Elsewhere, tokio's timer: to the millisecond.
        #[cfg(not(target_os = "linux"))]
        tokio::time::sleep_until(due.into()).await;
    }
    Ok(lag)
}

/// Wakes the ticker at an instant to the microsecond without holding the CPU: a timerfd
/// (whose expiry, unlike `nanosleep`'s or `epoll_wait`'s, gets no timer slack), waited for
/// through the runtime.
#[cfg(target_os = "linux")]
struct Alarm(tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>);

#[cfg(target_os = "linux")]
impl Alarm {
    fn new() -> io::Result<Self> {
        use rustix::time::{TimerfdClockId, TimerfdFlags, timerfd_create};
        let fd = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        // `AsyncFd::new` is deprecated for types whose descriptor may be closed or replaced
        // behind its back (its replacement is `unsafe`, forbidden here); an `OwnedFd` moved
        // into it cannot be.
        #[allow(deprecated)]
        let fd = tokio::io::unix::AsyncFd::new(fd)?;
        Ok(Self(fd))
    }

    /// Returns at `when` (at once when it has passed).
    async fn until(&self, when: Instant) -> io::Result<()> {
        use rustix::time::{Itimerspec, TimerfdTimerFlags, Timespec, timerfd_settime};
        let delay = when.saturating_duration_since(Instant::now());
        if delay.is_zero() {
            // A zero expiry would disarm the timer.
            return Ok(());
        }
        let value = Timespec {
            tv_sec: i64::try_from(delay.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: delay.subsec_nanos().into(),
        };
        timerfd_settime(
            self.0.get_ref(),
            TimerfdTimerFlags::empty(),
            &Itimerspec {
                it_interval: Timespec::default(),
                it_value: value,
            },
        )?;
        // Setting the timer cleared any expiry not yet read; a read that would block (the
        // readiness of an earlier expiry) clears the readiness and waits again.
        let mut expirations = [0u8; 8];
        loop {
            let mut ready = self.0.readable().await?;
            if let Ok(read) =
                ready.try_io(|fd| Ok(rustix::io::read(fd.get_ref(), &mut expirations[..])?))
            {
                return read.map(|_| ());
            }
        }
    }
}

/// One connection: its requests (`index`, `index + C`, …), each sent once released and once
/// the previous response is in; returns when the last response came.
async fn connection(
    shared: Rc<Shared>,
    index: usize,
    mut stream: TcpStream,
    mut buf: Vec<u8>,
    request: Arc<[u8]>,
    expected: u16,
    stop: Instant,
) -> io::Result<Instant> {
    let schedule = shared.schedule;
    let stride = schedule.connections as u64;
    let (mut n, mut last) = (index as u64, shared.start);
    while n < schedule.total() {
        // `notify_one` keeps a permit when nobody waits, so no release is missed.
        while shared.released.get() <= n {
            shared.wake[index].notified().await;
        }
        let sent = Instant::now();
        if sent >= stop {
            break;
        }
        stream.write_all(&request).await?;
        let status = load::read_response(&mut stream, &mut buf).await?;
        let done = Instant::now();
        if status != expected {
            return Err(io::Error::other(format!(
                "answered {status}, expected {expected}"
            )));
        }
        let due = shared.start + schedule.due(n);
        shared
            .latency
            .borrow_mut()
            .record(nanos(done.saturating_duration_since(due)));
        shared.service.borrow_mut().record(nanos(done - sent));
        last = done;
        n += stride;
    }
    Ok(last)
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use bytes::Bytes;
    use http_body_util::Full;
    use hyper::server::conn::http1;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;

    use super::*;

    #[test]
    fn requests_are_evenly_spaced_and_dealt_round_robin() {
        // 4 per second over 2 connections for 1 s: at 0, 250, 500 and 750 ms.
        let schedule = Schedule::new(4, 2, Duration::from_secs(1));
        assert_eq!(schedule.total(), 4);
        let due: Vec<_> = (0..4).map(|n| schedule.due(n).as_millis()).collect();
        assert_eq!(due, [0, 250, 500, 750]);
        let on: Vec<_> = (0..4).map(|n| schedule.connection(n)).collect();
        assert_eq!(on, [0, 1, 0, 1]);
        // Each connection carries rate / C, staggered by 1 / rate.
        let schedule = Schedule::new(20_000, 64, Duration::from_secs(2));
        assert_eq!(schedule.total(), 40_000);
        for n in [0, 1, 63, 64, 12_345, 39_999] {
            assert_eq!(schedule.due(n), Duration::from_micros(50 * n));
            assert_eq!(
                schedule.due(n + 64).saturating_sub(schedule.due(n)),
                Duration::from_micros(3200)
            );
        }
        assert_eq!(schedule.connection(64 * 7 + 5), 5);
    }

    #[test]
    fn uneven_rates_and_lengths() {
        // 3 per second: a third of a second apart, rounded down to the nanosecond.
        let schedule = Schedule::new(3, 1, Duration::from_secs(1));
        assert_eq!(schedule.total(), 3);
        assert_eq!(schedule.due(1), Duration::from_nanos(333_333_333));
        assert_eq!(schedule.due(2), Duration::from_nanos(666_666_666));
        assert_eq!(schedule.due(3), Duration::from_secs(1));
        // Due strictly before the end: 0, 0.5 and 1.0 s are in 1.5 s, 1.5 s is not in it.
        assert_eq!(Schedule::new(2, 8, Duration::from_millis(1500)).total(), 3);
        assert_eq!(Schedule::new(2, 8, Duration::from_millis(1501)).total(), 4);
        // No rate and no connection are one.
        let degenerate = Schedule::new(0, 0, Duration::from_secs(2));
        assert_eq!((degenerate.total(), degenerate.connection(5)), (2, 0));
    }

    #[test]
    fn a_round_is_short_when_requests_are_missing_or_late() {
        let result = |completed: u64, elapsed_ms: u64| OpenLoopResult {
            rate: 1000,
            scheduled: 1000,
            completed,
            elapsed: Duration::from_millis(elapsed_ms),
            latency: Histogram::new(),
            service: Histogram::new(),
            lag: Histogram::new(),
        };
        assert!(!result(1000, 1000).short());
        assert!((result(1000, 1000).achieved() - 1000.0).abs() < 1e-6);
        // Every request answered, but the last 3 % late: the server fell behind.
        assert!(result(1000, 1030).short());
        assert!(!result(1000, 1015).short());
        assert!(result(999, 1000).short());
    }

    /// A hyper server on 127.0.0.1:0, on a thread of its own: answers `ok`, and stalls its
    /// `stall_at`-th request (counting from 0 over every connection) for 100 ms.
    fn tiny_server(stall_at: Option<usize>) -> SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let seen = Arc::new(AtomicUsize::new(0));
                loop {
                    let (stream, _) = listener.accept().await.unwrap();
                    let seen = Arc::clone(&seen);
                    tokio::spawn(async move {
                        let service = service_fn(move |_request| {
                            let nth = seen.fetch_add(1, Ordering::Relaxed);
                            async move {
                                if Some(nth) == stall_at {
                                    tokio::time::sleep(Duration::from_millis(100)).await;
                                }
                                Ok::<_, Infallible>(http::Response::new(Full::new(
                                    Bytes::from_static(b"ok"),
                                )))
                            }
                        });
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            });
        });
        addr
    }

    fn get() -> Arc<[u8]> {
        Arc::from(&b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"[..])
    }

    #[tokio::test(flavor = "current_thread")]
    async fn sends_the_scheduled_count_at_the_rate() {
        let addr = tiny_server(None);
        // 400 per second over 4 connections for 300 ms: 120 requests.
        let result = run(addr, get(), 200, 400, 4, Duration::from_millis(300))
            .await
            .unwrap();
        assert_eq!((result.scheduled, result.completed), (120, 120));
        assert_eq!(result.latency.count(), 120);
        assert_eq!(result.service.count(), 120);
        assert_eq!(result.lag.count(), 120);
        let (min, max) = (result.latency.min().unwrap(), result.latency.max().unwrap());
        assert!(min > 0, "{min} ns");
        // Loopback with a trivial server: well under a second even on a busy machine (whether
        // the rate was achieved within 2 % depends on that machine, so it is not asserted).
        assert!(max < 1_000_000_000, "{max} ns");
        assert!(result.service.max().unwrap() <= max);
        assert!(result.elapsed >= Duration::from_millis(300));
        assert!(
            result.elapsed < Duration::from_secs(2),
            "{:?}",
            result.elapsed
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn waiting_for_a_slow_response_counts_in_the_latency() {
        // One connection, 100 per second for 500 ms; the server's 4th request (the third timed
        // one, after the untimed first) takes 100 ms. The nine due during the stall wait for
        // it: measured from their due time, they took ~90, 80, … 10 ms; from their sending,
        // almost nothing.
        let addr = tiny_server(Some(3));
        let result = run(addr, get(), 200, 100, 1, Duration::from_millis(500))
            .await
            .unwrap();
        assert_eq!(result.completed, 50);
        let ms = |ns: u64| ns / 1_000_000;
        let latency_max = ms(result.latency.max().unwrap());
        assert!((95..400).contains(&latency_max), "{latency_max} ms");
        // Sorted, the last ten are 100, 90, … 20 ms and ~10 ms: the 90th percentile (the 45th
        // of 50) is about 50 ms.
        let p90 = ms(result.latency.quantile(0.9).unwrap());
        assert!((30..150).contains(&p90), "p90 {p90} ms");
        // From sending, only the stalled request was slow.
        assert!(ms(result.service.max().unwrap()) >= 95);
        let service_p90 = ms(result.service.quantile(0.9).unwrap());
        assert!(service_p90 < 20, "p90 {service_p90} ms");
        assert_eq!(result.scheduled, 50);
    }
}
