//! The watcher's unit tests: counters, deadlines and tracking over in-memory sockets and
//! bodies, in paused time.

use std::convert::Infallible;
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use http::header::{CONNECTION, CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderValue, Response, StatusCode};
use http_body::{Body as HttpBody, Frame};
use strata_core::{Body, BoxError, StreamShutdown};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::activity::{
    Activity, Deadlines, EPOCHS_PER_WRITE_TIMEOUT, MAX_IDLE_SPREAD, SHED_AFTER, Verdict,
    idle_spread,
};
use super::io::{ActivityIo, JOIN_MAX, match_preface};
use super::track::{TrackedBody, TrackedFuture};

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
    idle_spread: 0,
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
        idle_spread: 0,
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
        idle_spread: 0,
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
fn spawn_watch(activity: &Arc<Activity>, deadlines: Deadlines) -> tokio::task::JoinHandle<Verdict> {
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
        idle_spread: 0,
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
        idle_spread: 0,
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

async fn poll_body(body: &mut TrackedBody) -> Poll<Option<Result<Frame<bytes::Bytes>, BoxError>>> {
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
        idle_spread: 0,
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
async fn event_stream_with(activity: &Arc<Activity>, hook: Option<StreamShutdown>) -> TrackedBody {
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

/// Connections opened together close over the last quarter of the idle timeout, not at one
/// instant, and none early: with one deadline for all, idle HTTP/2 connections from a few
/// hosts closed together and came back together, filling the cap at once.
#[tokio::test(start_paused = true)]
async fn idle_deadlines_are_spread_over_the_last_quarter() {
    let start = tokio::time::Instant::now();
    let mut watching = tokio::task::JoinSet::new();
    for _ in 0..200 {
        watching.spawn(async move {
            let activity = http2();
            let deadlines = Deadlines {
                idle_spread: idle_spread(),
                ..DEADLINES
            };
            assert!(deadlines.idle_spread <= MAX_IDLE_SPREAD);
            assert_eq!(activity.watch(deadlines).await, Verdict::Idle);
            start.elapsed()
        });
    }
    let closed: Vec<Duration> = watching.join_all().await;
    // HTTP/2's idle deadline is the header-read timeout here (10 s), the shorter.
    let (first, last) = (closed.iter().min().unwrap(), closed.iter().max().unwrap());
    assert!(*first >= DEADLINES.head * 3 / 4, "{first:?}");
    assert!(*last <= DEADLINES.head, "{last:?}");
    let spread = last.saturating_sub(*first);
    assert!(spread >= DEADLINES.head / 8, "spread over {spread:?}");
    let distinct: std::collections::BTreeSet<_> = closed.iter().collect();
    assert!(distinct.len() > 50, "{} distinct instants", distinct.len());
}
