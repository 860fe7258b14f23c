//! Serving one connection: hyper's connection builder, the connection task, and the orders
//! the watcher ([`watcher`]) gives it (close gracefully, drop, cut at the shutdown timeout).

pub(crate) mod deadline;
pub(crate) mod service;
pub(crate) mod watcher;

use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use std::convert::Infallible;

use http::{Request, Response};

use strata_core::{Body, ClientAddr, ErrorHandler, Logger};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinSet;
use tower_service::Service;

use self::watcher::{Activity, ActivityIo, Deadlines, IdleConnections, Order, Shutdown};
use crate::config::ServerLimits;
use crate::connection::deadline::{FirstByteDeadline, ServerBody, deadline_after};
use crate::connection::service::ConnectionService;
use crate::listen::Place;
use crate::metrics::{Closed, Metrics, OpenConnection};

/// As long as any timeout needs to be: hyper adds its keep-alive durations to an `Instant`,
/// which cannot hold `Duration::MAX`, so longer ones are "never" (an interval) or this.
pub(crate) const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The shortest HTTP/2 ping interval: an answer counts as activity, so a shorter one would
/// make a connection ping back and forth without pause.
pub(crate) const MIN_PING_INTERVAL: Duration = Duration::from_secs(1);

/// hyper's own largest read buffer (its `max_buf_size` by default).
const HYPER_READ_BUFFER: usize = 8192 + 4096 * 100;

/// The largest read buffer of an HTTP/1 connection: hyper's own, or the head limit when it is
/// larger. hyper reads heads and bodies into this one buffer and refuses a head that does not
/// fit it; a buffer as small as the head limit (64 KiB by default) made a large body arrive in
/// four times as many reads. The head limit below it is checked on the parsed head
/// (`ConnectionService`).
pub(crate) fn read_buffer_size(limits: &ServerLimits) -> usize {
    limits.max_header_bytes.max(HYPER_READ_BUFFER)
}

pub(crate) fn connection_builder(limits: &ServerLimits) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        // The header-read timeout is the connection watcher's (`watcher`): hyper's
        // arms a timer for every request.
        .header_read_timeout(None)
        // A client that shuts its sending side after the request still gets the response.
        .half_close(true)
        .max_buf_size(read_buffer_size(limits));
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(limits.max_header_bytes).unwrap_or(u32::MAX))
        .max_concurrent_streams(limits.http2_max_concurrent_streams)
        // A peer that stops answering pings is dropped. (Not the header-read timeout: a head
        // is not what a ping waits for, and `Duration::MAX` there overflowed hyper's ping timer.)
        .keep_alive_interval(
            limits
                .http2_keep_alive_interval
                .filter(|d| *d < FOREVER)
                .map(|d| d.max(MIN_PING_INTERVAL)),
        )
        .keep_alive_timeout(limits.http2_keep_alive_timeout.min(FOREVER));
    builder
}

/// What a connection runs: the app in the application's layers, answering every request.
#[doc(hidden)]
pub trait ServedApp:
    Service<
        Request<ServerBody>,
        Response = Response<Body>,
        Error = Infallible,
        Future: Send + 'static,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> ServedApp for S where
    S: Service<
            Request<ServerBody>,
            Response = Response<Body>,
            Error = Infallible,
            Future: Send + 'static,
        > + Clone
        + Send
        + Sync
        + 'static
{
}

/// What accepts TLS connections: rustls's acceptor, or nothing in a build without the `tls`
/// feature (where an HTTPS listener is a configuration error).
#[cfg(feature = "tls")]
pub(crate) type Acceptor = tokio_rustls::TlsAcceptor;
#[cfg(not(feature = "tls"))]
pub(crate) type Acceptor = Infallible;

#[cfg(feature = "tls")]
pub(crate) use crate::tls::acceptor;

/// Without the `tls` feature there is no TLS: say so when HTTPS is configured.
#[cfg(not(feature = "tls"))]
pub(crate) fn acceptor(_: &crate::config::Https) -> Result<Acceptor, crate::error::ServerError> {
    Err(crate::error::ServerError::Config(
        "https needs Strata's `tls` feature".into(),
    ))
}

/// Everything a connection task needs.
#[derive(Clone)]
pub(crate) struct Serving<S> {
    pub(crate) app: S,
    /// The router's error handler, for the connection's own 400s.
    pub(crate) errors: Option<ErrorHandler>,
    pub(crate) builder: Arc<auto::Builder<TokioExecutor>>,
    pub(crate) tls: Option<Acceptor>,
    pub(crate) header_timeout: Duration,
    pub(crate) limits: ServerLimits,
    pub(crate) logger: Logger,
    /// The idle connections, the one idle longest asked to close when the server is at its
    /// connection cap.
    pub(crate) idle: Arc<IdleConnections>,
    /// The server's metrics, when it has them: connections, and the refusals answered here.
    pub(crate) metrics: Option<Metrics>,
}

impl<S: ServedApp> Serving<S> {
    pub(crate) fn spawn<IO>(
        &self,
        io: IO,
        client: Option<ClientAddr>,
        shutdown: Shutdown,
        slot: Place,
        connections: &mut JoinSet<()>,
    ) where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let serving = self.clone();
        let open = self.metrics.as_ref().map(Metrics::connection_opened);
        // Plain and TLS connections are tasks of their own types: a plain connection's task
        // does not carry room for a TLS handshake and stream (kilobytes per connection).
        match &self.tls {
            None => {
                connections.spawn(async move {
                    let io = FirstByteDeadline::new(io, serving.header_timeout);
                    serving.serve(io, client, shutdown, slot, open).await;
                });
            }
            #[cfg(not(feature = "tls"))]
            Some(never) => match *never {},
            #[cfg(feature = "tls")]
            Some(tls) => {
                let tls = tls.clone();
                let mut open = open;
                connections.spawn(async move {
                    // The connection's place under the cap, given back when it ends.
                    let io = FirstByteDeadline::new(io, serving.header_timeout);
                    match tokio::time::timeout(serving.header_timeout, tls.accept(io)).await {
                        // The handshake used the first deadline; the request gets its own.
                        Ok(Ok(stream)) => {
                            let stream = FirstByteDeadline::new(stream, serving.header_timeout);
                            serving.serve(stream, client, shutdown, slot, open).await;
                        }
                        Ok(Err(error)) => {
                            closing(&mut open, Closed::TlsHandshake);
                            serving
                                .logger
                                .debug(format_args!("TLS handshake failed: {error}"));
                        }
                        Err(_) => {
                            closing(&mut open, Closed::TlsHandshake);
                            serving.logger.debug("TLS handshake timed out");
                        }
                    }
                });
            }
        }
    }

    /// Serves `io` until it ends; `place` (under the cap) is kept by its watcher; `open`
    /// counts the connection until it closes, and says why.
    async fn serve<IO>(
        &self,
        io: IO,
        client: Option<ClientAddr>,
        shutdown: Shutdown,
        place: Place,
        mut open: Option<OpenConnection>,
    ) where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let activity = Arc::new(Activity::new(self.metrics.clone()));
        let service = ConnectionService::new(
            self.app.clone(),
            Arc::clone(&activity),
            client,
            &self.limits,
            self.errors.clone(),
            self.logger.clone(),
        );
        let io = ActivityIo::new(io, Arc::clone(&activity));
        let connection = self
            .builder
            .serve_connection_with_upgrades(TokioIo::new(io), service)
            .into_owned();
        let mut connection = std::pin::pin!(connection);
        // The timeouts and the server's stop signal are watched by a task of their own, which
        // sends its orders here: this task, woken for every read and write of the connection,
        // then polls the connection and one channel, not a stop signal and timers each time.
        let deadlines = Deadlines {
            idle: Some(ServerLimits::or_never(self.limits.idle_timeout)),
            write: ServerLimits::or_never(self.limits.write_timeout),
            head: self.header_timeout,
            idle_spread: watcher::idle_spread(),
        };
        let (watcher, mut ordered) = watcher::spawn(
            Arc::clone(&activity),
            shutdown,
            Arc::clone(&self.idle),
            deadlines,
            place,
        );
        let mut orders_open = true;
        // Once cut (the shutdown timeout has passed), how long unanswered requests have to
        // get their 503 before the connection is dropped.
        // (Not polled, so not in the timer wheel, until then.)
        let mut cut_grace = std::pin::pin!(tokio::time::sleep(FOREVER));
        let mut cut = false;
        let result = loop {
            tokio::select! {
                biased;
                result = connection.as_mut() => break result,
                () = cut_grace.as_mut(), if cut => {
                    self.logger.debug("connection closed at the shutdown timeout");
                    return;
                }
                order = &mut ordered, if orders_open => match order {
                    Ok(Order::CloseGracefully { then, reason }) => {
                        closing(&mut open, reason);
                        connection.as_mut().graceful_shutdown();
                        match then {
                            Some(next) => ordered = next,
                            None => orders_open = false,
                        }
                    }
                    Ok(Order::Drop(reason, closed)) => {
                        if let Some(closed) = closed {
                            closing(&mut open, closed);
                        }
                        self.logger.debug(reason);
                        return;
                    }
                    Ok(Order::Cut) => {
                        closing(&mut open, Closed::ShutdownTimeout);
                        // The connection is polled on: an HTTP/1 request without an answer
                        // gets its 503 (the activity says so), then the connection closes.
                        orders_open = false;
                        cut = true;
                        cut_grace.as_mut().reset(deadline_after(CUT_GRACE));
                    }
                    Err(_) => orders_open = false,
                },
            }
        };
        drop(watcher);
        // Its 503s sent, the connection may end before the order to cut it is read.
        if activity.was_cut() {
            closing(&mut open, Closed::ShutdownTimeout);
        }
        match result {
            Ok(()) => {
                // hyper closed it after a response that said `Connection: close`.
                if let Some(closed) = activity.closed_by()
                    && open
                        .as_ref()
                        .is_some_and(|open| open.reason() == Closed::Ended)
                {
                    closing(&mut open, closed);
                }
            }
            Err(error) => {
                if let Some(open) = open.as_mut() {
                    let (closed, answered) = ended_by(&*error);
                    if let (Some(status), Some(metrics)) = (answered, &self.metrics) {
                        metrics.refused(status, None);
                    }
                    // A close ordered before (idle, shutdown) stays the reason.
                    if open.reason() == Closed::Ended {
                        open.closing(closed);
                    }
                }
                self.logger.debug(format_args!("connection ended: {error}"));
            }
        }
    }
}

/// Gives the connection counted by `open` (if counted) its reason to close.
fn closing(open: &mut Option<OpenConnection>, reason: Closed) {
    if let Some(open) = open {
        open.closing(reason);
    }
}

/// Why a connection that ended with `error` closed, and the status hyper answered the request
/// with when it did (a head too large, or one it cannot parse).
fn ended_by(error: &(dyn std::error::Error + 'static)) -> (Closed, Option<http::StatusCode>) {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if let Some(hyper) = error.downcast_ref::<hyper::Error>() {
            if hyper.is_parse_too_large() {
                return (
                    Closed::HeaderTooLarge,
                    Some(http::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE),
                );
            }
            if hyper.is_parse() {
                return (Closed::BadRequest, Some(http::StatusCode::BAD_REQUEST));
            }
        }
        // The first bytes' deadline (`FirstByteDeadline`) fails the read.
        if let Some(io) = error.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::TimedOut
        {
            return (Closed::HeaderTimeout, None);
        }
        cause = error.source();
    }
    (Closed::Error, None)
}

/// How long a connection cut at the shutdown timeout has to send its 503s.
pub(crate) const CUT_GRACE: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests fail loudly by design

    use super::*;

    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
    use tokio::sync::watch;
    use tokio::task::JoinHandle;
    use tokio::time::Instant;

    /// A connection's task over an in-memory socket, with `limits` and an app answering 200,
    /// and the client's end of the socket; the server's stop signal stays off.
    fn serve(limits: ServerLimits) -> (JoinHandle<()>, DuplexStream) {
        let app = tower::service_fn(|_: Request<ServerBody>| async {
            Ok::<_, Infallible>(Response::new(Body::empty()))
        });
        let serving = Serving {
            app,
            errors: None,
            builder: Arc::new(connection_builder(&limits)),
            tls: None,
            header_timeout: ServerLimits::or_never(limits.header_read_timeout),
            limits,
            logger: Logger::tracing(),
            idle: Arc::default(),
            metrics: None,
        };
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (stop, stopped) = watch::channel(false);
        let (cut, cut_heard) = watch::channel(false);
        let shutdown = Shutdown {
            stop: stopped,
            cut: cut_heard,
        };
        let task = tokio::spawn(async move {
            let _signals = (stop, cut);
            let place = Place::new(
                Arc::new(tokio::sync::Semaphore::new(1))
                    .try_acquire_owned()
                    .unwrap(),
                None,
            );
            serving.serve(server, None, shutdown, place, None).await;
        });
        (task, client)
    }

    /// What an HTTP/2 client that sends nothing but its preface, settings and (when
    /// `answer_pings`) ping answers saw: when the server sent GOAWAY, how many pings it got,
    /// when the connection ended.
    #[derive(Debug)]
    struct Seen {
        goaway: Option<Duration>,
        pings: usize,
        closed: Duration,
    }

    async fn http2_peer(mut io: DuplexStream, answer_pings: bool) -> Seen {
        const SETTINGS: u8 = 4;
        const PING: u8 = 6;
        const GOAWAY: u8 = 7;
        const ACK: u8 = 1;
        let started = Instant::now();
        io.write_all(crate::connection::watcher::HTTP2_PREFACE)
            .await
            .unwrap();
        io.write_all(&[0, 0, 0, SETTINGS, 0, 0, 0, 0, 0])
            .await
            .unwrap();
        let mut seen = Seen {
            goaway: None,
            pings: 0,
            closed: Duration::ZERO,
        };
        loop {
            let mut header = [0; 9];
            if io.read_exact(&mut header).await.is_err() {
                seen.closed = started.elapsed();
                return seen;
            }
            let length =
                usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
            let mut payload = vec![0; length];
            io.read_exact(&mut payload).await.unwrap();
            match (header[3], header[4] & ACK) {
                (SETTINGS, 0) => io
                    .write_all(&[0, 0, 0, SETTINGS, ACK, 0, 0, 0, 0])
                    .await
                    .unwrap(),
                (PING, 0) => {
                    seen.pings += 1;
                    if answer_pings {
                        io.write_all(&[0, 0, 8, PING, ACK, 0, 0, 0, 0])
                            .await
                            .unwrap();
                        io.write_all(&payload).await.unwrap();
                    }
                }
                (GOAWAY, _) => seen.goaway = seen.goaway.or(Some(started.elapsed())),
                _ => {}
            }
        }
    }

    fn limits() -> ServerLimits {
        ServerLimits {
            // Neither is what ends the connections below before their time.
            header_read_timeout: Some(Duration::from_secs(30)),
            idle_timeout: Some(Duration::from_secs(300)),
            http2_keep_alive_interval: Some(Duration::from_secs(2)),
            http2_keep_alive_timeout: Duration::from_secs(3),
            ..ServerLimits::default()
        }
    }

    /// hyper arms a header-read timer of its own (30 s) for every request whenever it has a
    /// timer, unless told `header_read_timeout(None)`: a head finished after 45 s, within the
    /// server's 90 s, is answered.
    #[tokio::test(start_paused = true)]
    async fn hypers_own_header_read_timer_is_off() {
        let limits = limits().header_read_timeout(Some(Duration::from_secs(90)));
        let (_task, mut client) = serve(limits);
        client
            .write_all(b"GET / HTTP/1.1\r\nHost: a\r\n")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(45)).await;
        client.write_all(b"\r\n").await.unwrap();
        let mut answer = [0; 12];
        client.read_exact(&mut answer).await.unwrap();
        assert_eq!(&answer, b"HTTP/1.1 200");
    }

    #[tokio::test(start_paused = true)]
    async fn an_http2_peer_that_stops_answering_pings_is_dropped() {
        let limits = limits();
        let (task, client) = serve(limits);
        let seen = http2_peer(client, false).await;
        task.await.unwrap();
        assert_eq!(seen.pings, 1, "{seen:?}");
        // (hyper says GOAWAY before it closes; the header-read and idle timeouts are further away.)
        let due = limits.http2_keep_alive_interval.unwrap() + limits.http2_keep_alive_timeout;
        assert!(
            seen.closed >= due && seen.closed < due + Duration::from_secs(1),
            "{seen:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_http2_peer_that_ignores_the_goodbye_is_dropped_a_second_later() {
        let limits = limits()
            .header_read_timeout(Some(Duration::from_secs(5)))
            .http2_keep_alive_interval(None);
        let (task, client) = serve(limits);
        let seen = http2_peer(client, false).await;
        task.await.unwrap();
        let goaway = seen.goaway.unwrap();
        let head = limits.header_read_timeout.unwrap();
        // Brought forward by the connection's spread, a quarter at most.
        assert!(
            goaway >= head * 3 / 4 && goaway <= head + head / 4,
            "{seen:?}"
        );
        // Not the write timeout (30 s) later: the connection has nothing in flight.
        assert!(
            seen.closed >= goaway + watcher::QUIET_GOODBYE
                && seen.closed <= goaway + 2 * watcher::QUIET_GOODBYE,
            "{seen:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_http2_peer_that_answers_pings_is_closed_at_the_header_read_timeout() {
        // A connection without a stream is held no longer than one without a request head,
        // however long the idle timeout.
        let limits = limits();
        let (task, client) = serve(limits);
        let seen = http2_peer(client, true).await;
        task.await.unwrap();
        assert!(
            seen.pings >= 10,
            "pinged every {:?}: {seen:?}",
            limits.http2_keep_alive_interval
        );
        let goaway = seen.goaway.unwrap();
        // The watcher looks every quarter of the shortest connection timeout.
        let head = limits.header_read_timeout.unwrap();
        let tick = head / 4;
        // Brought forward by the connection's spread, a quarter at most.
        assert!(goaway >= head * 3 / 4 && goaway <= head + tick, "{seen:?}");
        // Closed once the client has seen the GOAWAY (it answers the ping that follows).
        assert!(seen.closed <= goaway + Duration::from_secs(1), "{seen:?}");
    }
}
