//! `create_server`: listeners, connections, graceful shutdown.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use std::convert::Infallible;

use http::{Request, Response};
use std::sync::atomic::Ordering;

use strata_core::{ApiError, Body, BoxError, ClientAddr, ErrorHandler, ErrorKind, Logger};
use strata_log::LogRateLimit;
use strata_parse::PerClient;
use strata_routing::Routing;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, TryAcquireError, oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};
use tower_layer::Layer;
use tower_service::Service;

use crate::activity::{Activity, ActivityIo, Deadlines, Verdict};
use crate::app::{App, build_app};
use crate::config::{Config, Listen, ServerLimits};
use crate::connection::ConnectionService;
use crate::deadline::{FirstByteDeadline, ServerBody, deadline_after};
use crate::error::ServerError;
use crate::layered::{Errors, Layered};
use crate::logging::install_default_subscriber;

/// Plain or TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP.
    Http,
    /// HTTPS.
    Https,
}

/// Where a server is listening, once bound (a port of `0` shows the port chosen).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalAddr {
    /// A TCP socket.
    Tcp(SocketAddr),
    /// A UNIX domain socket.
    Unix(PathBuf),
}

/// One listening server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListeningServer {
    /// Plain or TLS.
    pub protocol: Protocol,
    /// The bound address.
    pub local_addr: LocalAddr,
}

/// Triggers a graceful shutdown of every listener of a [`Server`].
#[derive(Debug, Clone)]
pub struct ShutdownHandle {
    sender: Arc<watch::Sender<bool>>,
}

impl ShutdownHandle {
    /// Stops accepting connections; requests in flight finish (within the shutdown timeout).
    pub fn shutdown(&self) {
        self.sender.send_replace(true);
    }
}

/// A running server: the app, the logger and the listening servers (spec `createServer`).
///
/// Keep it (or call [`Server::run`]): dropping it shuts the listeners down gracefully.
pub struct Server {
    app: App,
    logger: Logger,
    servers: Vec<ListeningServer>,
    handle: ShutdownHandle,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("servers", &self.servers)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// The application service every connection runs.
    pub fn app(&self) -> &App {
        &self.app
    }

    /// The logger.
    pub fn logger(&self) -> &Logger {
        &self.logger
    }

    /// The listening servers, with their bound addresses.
    pub fn servers(&self) -> &[ListeningServer] {
        &self.servers
    }

    /// A handle that shuts the server down gracefully.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.handle.clone()
    }

    /// Serves until the shutdown handle is used or the process gets SIGINT or SIGTERM, then
    /// shuts down gracefully. On Unix, called within a tokio runtime, the signal handlers are
    /// installed by this call, before its future is first polled: a signal sent once `run` has
    /// returned its future is seen, however late the future starts. Called outside a runtime
    /// (a future for `block_on`), they are installed at the first poll.
    pub fn run(self) -> impl Future<Output = ()> + Send {
        // Installing needs a runtime; outside one (a future made for `block_on`), it waits
        // for the first poll.
        let installed = tokio::runtime::Handle::try_current()
            .is_ok()
            .then(Signals::install);
        async move {
            let signals = installed.unwrap_or_else(Signals::install);
            let mut triggered = self.handle.sender.subscribe();
            tokio::select! {
                _ = triggered.wait_for(|stop| *stop) => {}
                () = signals.received() => self.logger.info("Signal received, shutting down"),
            }
            self.shutdown().await;
        }
    }

    /// Shuts down gracefully: stops accepting, lets requests in flight finish within the
    /// shutdown timeout, then closes.
    pub async fn shutdown(self) {
        self.handle.shutdown();
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// SIGINT and SIGTERM, listened for from the moment they are installed.
struct Signals {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn install() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Self {
                interrupt: signal(SignalKind::interrupt()).ok(),
                terminate: signal(SignalKind::terminate()).ok(),
            }
        }
        #[cfg(not(unix))]
        {
            Self {}
        }
    }

    /// Resolves at the first signal (never, when neither could be installed).
    async fn received(mut self) {
        #[cfg(unix)]
        {
            let interrupt = async {
                match &mut self.interrupt {
                    Some(signal) => signal.recv().await,
                    None => std::future::pending().await,
                }
            };
            let terminate = async {
                match &mut self.terminate {
                    Some(signal) => signal.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = interrupt => {}
                _ = terminate => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

fn describe(listen: &Listen) -> String {
    match listen {
        Listen::Port(port) => format!("port {port}"),
        Listen::Addr(addr) => addr.to_string(),
        Listen::Unix(path) => format!("unix:{}", path.display()),
    }
}

enum Bound {
    Tcp(TcpListener),
    Unix(UnixListener, UnixSocketFile),
}

/// The socket file a UNIX listener created, identified so that shutdown removes it only if it
/// is still ours (not a file someone put there since).
struct UnixSocketFile {
    path: PathBuf,
    identity: Option<(u64, u64)>,
}

#[cfg(unix)]
fn file_identity(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

impl UnixSocketFile {
    fn remove_if_ours(&self) {
        if self.identity.is_some() && file_identity(&self.path) == self.identity {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Binds a UNIX socket; a socket file left by a process that died (nobody accepts on it) is
/// replaced, anything else is an error.
async fn bind_unix(path: &std::path::Path) -> std::io::Result<UnixListener> {
    match UnixListener::bind(path) {
        Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => {
            use std::os::unix::fs::FileTypeExt;
            let is_socket =
                std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket());
            let refused = matches!(
                tokio::net::UnixStream::connect(path).await,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused
            );
            if is_socket && refused {
                std::fs::remove_file(path)?;
                UnixListener::bind(path)
            } else {
                Err(error)
            }
        }
        other => other,
    }
}

/// The kernel's queue of connections not accepted yet (the system's `somaxconn` may lower it):
/// tokio's `TcpListener::bind` asks for 128, and while one host opens connections as fast as
/// the server closes them (past its share), a full queue drops other clients' SYNs, which they
/// send again only a second later.
const LISTEN_BACKLOG: u32 = 1024;

/// A TCP listener on `addr`, with address reuse as `TcpListener::bind` has it and a queue of
/// [`LISTEN_BACKLOG`].
fn listen_tcp(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

async fn bind(listen: &Listen) -> Result<(Bound, LocalAddr), ServerError> {
    let failed = |source| ServerError::Bind {
        listen: describe(listen),
        source,
    };
    match listen {
        Listen::Unix(path) => {
            let listener = bind_unix(path).await.map_err(failed)?;
            let socket = UnixSocketFile {
                path: path.clone(),
                identity: file_identity(path),
            };
            Ok((Bound::Unix(listener, socket), LocalAddr::Unix(path.clone())))
        }
        tcp => {
            let addr = tcp
                .socket_addr()
                .ok_or_else(|| ServerError::Config("no address".into()))?;
            let listener = listen_tcp(addr).map_err(failed)?;
            let local = listener.local_addr().map_err(failed)?;
            Ok((Bound::Tcp(listener), LocalAddr::Tcp(local)))
        }
    }
}

/// A listener the application bound: its address, and its TLS acceptor if it has one. A UNIX
/// socket's file is the application's (left where it is at shutdown).
fn adopt(
    listener: Listener,
) -> Result<(Protocol, Bound, LocalAddr, Option<Acceptor>), ServerError> {
    let failed = |source| ServerError::Bind {
        listen: "a listener of the application's".to_owned(),
        source,
    };
    Ok(match listener {
        Listener::Tcp(listener) => {
            let local = listener.local_addr().map_err(failed)?;
            (
                Protocol::Http,
                Bound::Tcp(listener),
                LocalAddr::Tcp(local),
                None,
            )
        }
        Listener::Unix(listener) => {
            let local = listener.local_addr().map_err(failed)?;
            let path = local.as_pathname().map(PathBuf::from).unwrap_or_default();
            let socket = UnixSocketFile {
                path: path.clone(),
                identity: None,
            };
            (
                Protocol::Http,
                Bound::Unix(listener, socket),
                LocalAddr::Unix(path),
                None,
            )
        }
        #[cfg(feature = "tls")]
        Listener::Tls(listener, acceptor) => {
            let local = listener.local_addr().map_err(failed)?;
            (
                Protocol::Https,
                Bound::Tcp(listener),
                LocalAddr::Tcp(local),
                Some(acceptor),
            )
        }
    })
}

/// As long as any timeout needs to be: hyper adds its keep-alive durations to an `Instant`,
/// which cannot hold `Duration::MAX`, so longer ones are "never" (an interval) or this.
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The shortest HTTP/2 ping interval: an answer counts as activity, so a shorter one would
/// make a connection ping back and forth without pause.
const MIN_PING_INTERVAL: Duration = Duration::from_secs(1);

fn connection_builder(limits: &ServerLimits) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        // The header-read timeout is the connection watcher's (`Activity::watch`): hyper's
        // arms a timer for every request.
        .header_read_timeout(None)
        // A client that shuts its sending side after the request still gets the response.
        .half_close(true)
        // hyper refuses buffers under 8 KiB.
        .max_buf_size(limits.max_header_bytes.max(8192));
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
type Acceptor = tokio_rustls::TlsAcceptor;
#[cfg(not(feature = "tls"))]
type Acceptor = Infallible;

#[cfg(feature = "tls")]
use crate::tls::acceptor;

/// Without the `tls` feature there is no TLS: say so when HTTPS is configured.
#[cfg(not(feature = "tls"))]
fn acceptor(_: &crate::config::Https) -> Result<Acceptor, ServerError> {
    Err(ServerError::Config(
        "https needs Strata's `tls` feature".into(),
    ))
}

/// Everything a connection task needs.
#[derive(Clone)]
struct Serving<S> {
    app: S,
    /// The router's error handler, for the connection's own 400s.
    errors: Option<ErrorHandler>,
    builder: Arc<auto::Builder<TokioExecutor>>,
    tls: Option<Acceptor>,
    header_timeout: Duration,
    limits: ServerLimits,
    logger: Logger,
    /// Told when the server is at its connection cap: idle connections close to make room.
    pressure: Arc<Notify>,
}

impl<S: ServedApp> Serving<S> {
    fn spawn<IO>(
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
        // Plain and TLS connections are tasks of their own types: a plain connection's task
        // does not carry room for a TLS handshake and stream (kilobytes per connection).
        match &self.tls {
            None => {
                connections.spawn(async move {
                    // The connection's place under the cap, given back when it ends.
                    let _slot = slot;
                    let io = FirstByteDeadline::new(io, serving.header_timeout);
                    serving.serve(io, client, shutdown).await;
                });
            }
            #[cfg(not(feature = "tls"))]
            Some(never) => match *never {},
            #[cfg(feature = "tls")]
            Some(tls) => {
                let tls = tls.clone();
                connections.spawn(async move {
                    let _slot = slot;
                    let io = FirstByteDeadline::new(io, serving.header_timeout);
                    match tokio::time::timeout(serving.header_timeout, tls.accept(io)).await {
                        // The handshake used the first deadline; the request gets its own.
                        Ok(Ok(stream)) => {
                            let stream = FirstByteDeadline::new(stream, serving.header_timeout);
                            serving.serve(stream, client, shutdown).await;
                        }
                        Ok(Err(error)) => serving
                            .logger
                            .debug(format_args!("TLS handshake failed: {error}")),
                        Err(_) => serving.logger.debug("TLS handshake timed out"),
                    }
                });
            }
        }
    }

    async fn serve<IO>(&self, io: IO, client: Option<ClientAddr>, shutdown: Shutdown)
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let activity = Arc::new(Activity::default());
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
        let (orders, ordered) = oneshot::channel();
        let mut ordered = Orders::new(ordered, Arc::clone(&activity));
        let deadlines = Deadlines {
            idle: Some(ServerLimits::or_never(self.limits.idle_timeout)),
            write: ServerLimits::or_never(self.limits.write_timeout),
            head: self.header_timeout,
        };
        let watcher = AbortOnDrop(tokio::spawn(watch_connection(
            Arc::clone(&activity),
            shutdown,
            Arc::clone(&self.pressure),
            deadlines,
            orders,
        )));
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
                    Ok(Order::CloseGracefully { then }) => {
                        connection.as_mut().graceful_shutdown();
                        match then {
                            Some(next) => ordered.replace(next),
                            None => orders_open = false,
                        }
                    }
                    Ok(Order::Drop(reason)) => {
                        self.logger.debug(reason);
                        return;
                    }
                    Ok(Order::Cut) => {
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
        if let Err(error) = result {
            self.logger.debug(format_args!("connection ended: {error}"));
        }
    }
}

/// The watcher's orders to a connection, as its task reads them: the channel is polled once
/// (which leaves the task's waker with it), then only once the watcher says it has sent an
/// order. The task is woken for every read and write of its connection, and the channel's
/// state is memory of its own: reading it each time cost ~75 instructions and a cache miss
/// per request.
struct Orders {
    receiver: oneshot::Receiver<Order>,
    /// Polled since it was made or replaced: the task's waker is with the channel.
    registered: bool,
    activity: Arc<Activity>,
}

impl Orders {
    fn new(receiver: oneshot::Receiver<Order>, activity: Arc<Activity>) -> Self {
        Self {
            receiver,
            registered: false,
            activity,
        }
    }

    /// The channel of the next order: polled at the next wake.
    fn replace(&mut self, receiver: oneshot::Receiver<Order>) {
        self.receiver = receiver;
        self.registered = false;
    }
}

impl Future for Orders {
    type Output = Result<Order, oneshot::error::RecvError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // The flag is set before the order is sent and never cleared: a wake that finds it set
        // and the channel still empty polls again at the sending's own wake.
        if self.registered && !self.activity.was_ordered() {
            return Poll::Pending;
        }
        self.registered = true;
        // Outside tokio's task budget: a channel polled with the budget spent (the connection,
        // polled first, may spend it) returns without leaving the waker, and the flag would
        // then keep it from being looked at again.
        Pin::new(&mut tokio::task::unconstrained(&mut self.receiver)).poll(cx)
    }
}

/// What the watcher of a connection tells it.
enum Order {
    /// Finish what is in flight, take nothing new (server shutdown, idle connection); `then`
    /// brings the next order (a drop), if one may follow.
    CloseGracefully {
        then: Option<oneshot::Receiver<Order>>,
    },
    /// Drop the connection now, for this reason.
    Drop(&'static str),
    /// The shutdown timeout has passed: answer what has no answer yet with a 503, then close
    /// (dropped after [`CUT_GRACE`]).
    Cut,
}

/// What a connection hears of the server's shutdown.
#[derive(Clone)]
struct Shutdown {
    /// Graceful shutdown has begun.
    stop: watch::Receiver<bool>,
    /// The shutdown timeout has passed.
    cut: watch::Receiver<bool>,
}

/// How long a connection cut at the shutdown timeout has to send its 503s.
const CUT_GRACE: Duration = Duration::from_secs(1);

/// Aborts a task when dropped: a connection's watcher ends with its connection.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Watches a connection's activity and the server's stop signal, and orders the connection
/// closed when one of them says so.
async fn watch_connection(
    activity: Arc<Activity>,
    mut shutdown: Shutdown,
    pressure: Arc<Notify>,
    deadlines: Deadlines,
    orders: oneshot::Sender<Order>,
) {
    let mut watcher = activity.watcher(deadlines);
    // Whether the connection closes to make room (the server is at its cap).
    let mut shed = false;
    let verdict = loop {
        tokio::select! {
            _ = shutdown.stop.wait_for(|stop| *stop) => break None,
            verdict = watcher.next() => break Some(verdict),
            // The server is at its cap: an idle connection makes room.
            () = pressure.notified() => if let Some(verdict) = watcher.shed() {
                shed = verdict == Verdict::Idle;
                break Some(verdict);
            },
        }
    };
    let give_up = match verdict {
        // Server shutdown: finish what is in flight, take nothing new, end event streams (the
        // accept loop's shutdown timeout ends what does not finish).
        None => {
            activity.end_event_streams();
            None
        }
        // Made room: nothing was in flight; the client hears GOAWAY, not a long goodbye (an
        // HTTP/2 close waits for a ping's answer).
        Some(Verdict::Idle) if shed => Some(SHED_GRACE),
        // An idle connection closing gracefully still has its streams to finish; one that
        // cannot (a stream without window) is dropped after the write timeout.
        Some(Verdict::Idle) => Some(deadlines.write),
        Some(verdict) => {
            activity.mark_ordered();
            let _ = orders.send(Order::Drop(drop_reason(verdict)));
            return;
        }
    };
    let (next, then) = oneshot::channel();
    activity.mark_ordered();
    if orders
        .send(Order::CloseGracefully { then: Some(then) })
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
        verdict = watcher.next() => Order::Drop(drop_reason(verdict)),
        () = out_of_time => Order::Drop("idle connection closed: its streams did not finish"),
        () = still_quiet, if closing_idle => {
            Order::Drop("idle connection closed: the peer did not finish the goodbye")
        }
        _ = shutdown.cut.wait_for(|cut| *cut) => {
            activity.cut();
            Order::Cut
        }
    };
    activity.mark_ordered();
    let _ = next.send(order);
}

/// Why a connection is dropped for `verdict` (not `Idle`, which closes gracefully).
fn drop_reason(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Stalled => "connection closed: its responses made no write progress",
        Verdict::HeadTimeout | Verdict::Idle => {
            "connection closed: no request head within the header-read timeout"
        }
    }
}

/// The default connection cap: the open-file limit (read from `/proc/self/limits`, 1024 when
/// it cannot be read) less 64 for listeners, files and logs, at least 16.
fn default_max_connections() -> usize {
    let soft = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| {
            let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
            line["Max open files".len()..]
                .split_whitespace()
                .next()?
                .parse::<usize>()
                .ok()
        })
        .unwrap_or(1024);
    soft.saturating_sub(64).max(16)
}

/// A connection's place: under the cap, and among its address's connections.
struct Place {
    _permit: OwnedSemaphorePermit,
    _client: Option<ClientConnection>,
}

/// Connections per client address, within a share of the cap (`max_connections_per_client`).
struct ClientConnections {
    counts: PerClient,
    share: usize,
    /// Refusals are logged at most once per period.
    refusals: LogRateLimit,
}

/// A connection counted for its address until it ends.
struct ClientConnection {
    clients: Arc<ClientConnections>,
    slot: usize,
}

impl ClientConnections {
    fn new(share: usize) -> Self {
        Self {
            counts: PerClient::new(),
            share,
            refusals: LogRateLimit::new(Duration::from_secs(5)),
        }
    }

    /// Counts a connection of `client`, unless its address holds its share.
    fn take(self: &Arc<Self>, client: ClientAddr) -> Option<ClientConnection> {
        let slot = self.counts.slot(client);
        let counter = self.counts.counter_in(slot);
        let mut held = counter.load(Ordering::Relaxed);
        loop {
            if held >= self.share {
                return None;
            }
            match counter.compare_exchange_weak(held, held + 1, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    return Some(ClientConnection {
                        clients: Arc::clone(self),
                        slot,
                    });
                }
                Err(now) => held = now,
            }
        }
    }

    fn refused(&self, client: ClientAddr, logger: &Logger) {
        let error = ApiError::new(
            http::StatusCode::SERVICE_UNAVAILABLE,
            format!("{} connections from one address at most", self.share),
        )
        .with_kind(ErrorKind::Overload);
        let line = format_args!(
            "connection from {} refused: its address holds its share",
            client.0
        );
        strata_log::warn_rate_limited(logger, &self.refusals, line, &error);
    }
}

impl Drop for ClientConnection {
    fn drop(&mut self) {
        self.clients
            .counts
            .counter_in(self.slot)
            .fetch_sub(1, Ordering::AcqRel);
    }
}

/// The default share of the connection cap one address may hold: a quarter, at least 16 (and
/// at most the cap).
fn default_client_share(cap: usize) -> usize {
    (cap / 4).max(16).min(cap)
}

/// How long a connection closed for idleness may stay quiet before it is dropped.
const QUIET_GOODBYE: Duration = Duration::from_secs(1);

/// How long a connection closed to make room has to say goodbye.
const SHED_GRACE: Duration = Duration::from_millis(100);

/// At the connection cap, idle connections are asked to close at most once per this period.
const SHED_PERIOD: Duration = Duration::from_millis(100);

/// Accept errors are logged at most once per this period, with the count of the others.
const ACCEPT_LOG_PERIOD: Duration = Duration::from_secs(5);

/// Logs accept failures without flooding the log: the first, then one line per period.
struct AcceptErrors {
    last_logged: Option<tokio::time::Instant>,
    suppressed: u64,
}

impl AcceptErrors {
    fn record(&mut self, error: &std::io::Error, logger: &Logger) {
        let now = tokio::time::Instant::now();
        if self
            .last_logged
            .is_some_and(|last| now.duration_since(last) < ACCEPT_LOG_PERIOD)
        {
            self.suppressed += 1;
            return;
        }
        logger.warn(format_args!(
            "accept failed: {error} ({} more since the last report); backing off",
            self.suppressed
        ));
        self.last_logged = Some(now);
        self.suppressed = 0;
    }
}

/// Whether an accept error is about the server's resources (back off) rather than one
/// connection that went away before it was accepted (go on at once).
fn is_resource_error(error: &std::io::Error) -> bool {
    !matches!(
        error.kind(),
        std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::Interrupted
            | std::io::ErrorKind::WouldBlock
    )
}

async fn accept_loop<S: ServedApp>(
    bound: Bound,
    serving: Serving<S>,
    mut stop: watch::Receiver<bool>,
    shutdown_timeout: Duration,
    slots: Arc<Semaphore>,
    clients: Arc<ClientConnections>,
) {
    let mut connections = JoinSet::new();
    let (cut, cut_heard) = watch::channel(false);
    let shutdown = Shutdown {
        stop: stop.clone(),
        cut: cut_heard,
    };
    let mut errors = AcceptErrors {
        last_logged: None,
        suppressed: 0,
    };
    // When idle connections were last asked to make room.
    let mut shed_at: Option<tokio::time::Instant> = None;
    loop {
        // At the cap, idle connections are asked to close, and the next client is accepted
        // when a connection ends: clients queue in the kernel's backlog instead of costing
        // memory and file descriptors here.
        let slot = match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => slot,
            Err(TryAcquireError::Closed) => break,
            Err(TryAcquireError::NoPermits) => {
                let freed = loop {
                    if shed_at.is_none_or(|at| at.elapsed() >= SHED_PERIOD) {
                        serving.pressure.notify_waiters();
                        shed_at = Some(tokio::time::Instant::now());
                    }
                    tokio::select! {
                        _ = stop.wait_for(|stop| *stop) => break None,
                        slot = Arc::clone(&slots).acquire_owned() => break slot.ok(),
                        // Connections busy at the last call may be idle now.
                        () = tokio::time::sleep(SHED_PERIOD) => {}
                    }
                };
                match freed {
                    Some(slot) => slot,
                    None => break,
                }
            }
        };
        let accepted = tokio::select! {
            // A dropped `Server` (closed channel) stops too.
            _ = stop.wait_for(|stop| *stop) => break,
            accepted = accept(&bound) => accepted,
        };
        // Reap finished connections so the set stays as small as the live ones.
        while connections.try_join_next().is_some() {}
        match accepted {
            Ok(Accepted::Tcp(stream, peer)) => {
                let client = ClientAddr(peer.ip());
                let Some(counted) = clients.take(client) else {
                    // One address holds its share of the cap: the others keep theirs.
                    clients.refused(client, &serving.logger);
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let place = Place {
                    _permit: slot,
                    _client: Some(counted),
                };
                serving.spawn(
                    stream,
                    Some(client),
                    shutdown.clone(),
                    place,
                    &mut connections,
                );
            }
            Ok(Accepted::Unix(stream)) => {
                let place = Place {
                    _permit: slot,
                    _client: None,
                };
                serving.spawn(stream, None, shutdown.clone(), place, &mut connections);
            }
            Err(error) => {
                errors.record(&error, &serving.logger);
                if is_resource_error(&error) {
                    // Out of file descriptors and the like: back off instead of spinning, as
                    // the well-known servers do.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
    if let Bound::Unix(_, socket) = &bound {
        socket.remove_if_ours();
    }
    drop(bound);
    // Each connection saw the stop signal and is closing gracefully; wait for them.
    let drained = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(shutdown_timeout, drained)
        .await
        .is_err()
    {
        serving.logger.warn(format_args!(
            "Shutdown timeout: closing {} connection(s) still open",
            connections.len()
        ));
        // Requests without an answer get a 503 and their connections close, briefly.
        cut.send_replace(true);
        let closed = async { while connections.join_next().await.is_some() {} };
        let _ = tokio::time::timeout(CUT_GRACE, closed).await;
        connections.abort_all();
    }
    while connections.join_next().await.is_some() {}
}

enum Accepted {
    Tcp(tokio::net::TcpStream, SocketAddr),
    Unix(tokio::net::UnixStream),
}

async fn accept(bound: &Bound) -> std::io::Result<Accepted> {
    match bound {
        Bound::Tcp(listener) => listener
            .accept()
            .await
            .map(|(stream, peer)| Accepted::Tcp(stream, peer)),
        Bound::Unix(listener, _) => listener
            .accept()
            .await
            .map(|(stream, _)| Accepted::Unix(stream)),
    }
}

/// Starts serving `routing` on every listener of `config` (HTTP and HTTPS at once when both
/// are configured), each speaking HTTP/1.1 and HTTP/2: `create_server(&config, &routing).await`.
///
/// What it returns is a [`CreateServer`] to await, which can first be given the application's
/// own tower layers ([`layers`](CreateServer::layers)) and listeners bound by the application
/// ([`listener`](CreateServer::listener)): a `TcpListener`, a `UnixListener`, or either with a
/// TLS acceptor of its own.
///
/// Errors are reported before anything is served: no listener, HTTPS without a key, unreadable
/// TLS material, an invalid routing, an address in use.
///
/// ```no_run
/// use strata_cors::Cors;
/// use strata_routing::Routing;
/// use strata_server::{Config, create_server};
///
/// # async fn demo(routing: Routing) -> Result<(), Box<dyn std::error::Error>> {
/// // Where the configuration says.
/// let config = Config::builder().cors(Cors::Enabled).listen(8090).build();
/// create_server(&config, &routing).await?.run().await;
///
/// // On a listener of your own (a port chosen by the OS, here).
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let config = Config::builder().cors(Cors::Enabled).build();
/// let server = create_server(&config, &routing).listener(listener).await?;
/// println!("listening on {:?}", server.servers()[0].local_addr);
/// server.run().await;
/// # Ok(())
/// # }
/// ```
pub fn create_server<'a>(config: &'a Config, routing: &'a Routing) -> CreateServer<'a, NoLayers> {
    CreateServer {
        config,
        routing,
        layers: NoLayers,
        listeners: Vec::new(),
    }
}

/// A server to start ([`create_server`]): await it, after giving it layers or listeners.
#[must_use = "a server starts when awaited"]
pub struct CreateServer<'a, L> {
    config: &'a Config,
    routing: &'a Routing,
    layers: L,
    listeners: Vec<Listener>,
}

impl<L> std::fmt::Debug for CreateServer<'_, L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreateServer")
            .field("listeners", &self.listeners.len())
            .finish_non_exhaustive()
    }
}

/// No layers of the application's: the app answers every request itself.
#[derive(Debug, Clone, Copy)]
pub struct NoLayers;

/// The application's own layers ([`CreateServer::layers`]).
#[derive(Debug, Clone)]
pub struct WithLayers<L>(L);

impl<'a, L> CreateServer<'a, L> {
    /// Puts the application's own tower layers around the app: a timeout, a concurrency or
    /// rate limit, anything `tower` or `tower-http` offers.
    ///
    /// The layers see every request after the server's checks (`Host`, body deadlines) and
    /// before request ids, routing and the reading of its body: a concurrency limit or a
    /// timeout here counts uploads still arriving (to place layers after the body is read, use
    /// `create_config().after_body(..)`). A request the layers do not take within
    /// `ServerLimits::admission_timeout` gets a 503. Their errors become error responses:
    /// tower's `Timeout` a 504, its `LoadShed` a 503 with `Retry-After: 1`, a Strata stage's
    /// error what it was, anything else a 500; server errors are logged with their causes, and
    /// the router's error handler (`create_config().error_handler(..)`) formats them when one
    /// is set.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use strata_cors::Cors;
    /// use strata_routing::Routing;
    /// use strata_server::{Config, create_server};
    /// use tower::ServiceBuilder;
    ///
    /// # async fn demo(routing: Routing) -> Result<(), strata_server::ServerError> {
    /// let config = Config::builder().cors(Cors::Enabled).listen(8090).build();
    /// let layers = ServiceBuilder::new()
    ///     .timeout(Duration::from_secs(30)) // a 504 for a request that takes longer
    ///     .concurrency_limit(512); // at most 512 requests at once
    /// let server = create_server(&config, &routing).layers(layers).await?;
    /// server.run().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn layers<M>(self, layers: M) -> CreateServer<'a, WithLayers<M>> {
        CreateServer {
            config: self.config,
            routing: self.routing,
            layers: WithLayers(layers),
            listeners: self.listeners,
        }
    }

    /// Serves on a listener the application bound itself, besides the configuration's (which
    /// may then have none): a `tokio::net::TcpListener` or `UnixListener`, or
    /// [`Listener::tls`] with a TLS acceptor of the application's own (`tls` feature).
    pub fn listener(mut self, listener: impl Into<Listener>) -> Self {
        self.listeners.push(listener.into());
        self
    }
}

/// How the app is served: as it is ([`NoLayers`]), or inside the application's layers
/// ([`WithLayers`]).
pub trait AroundApp: Send + 'static {
    /// What each connection runs.
    #[doc(hidden)]
    type Served: ServedApp;

    /// The app, wrapped, its errors answered as `config` says.
    #[doc(hidden)]
    fn around(self, app: App, config: &Config) -> Self::Served;
}

impl AroundApp for NoLayers {
    type Served = App;

    // The app answers every request itself: the layer that turns a user stack's errors and
    // bodies into responses is not needed (one layer less per request).
    fn around(self, app: App, _: &Config) -> App {
        app
    }
}

impl<L, B> AroundApp for WithLayers<L>
where
    L: Layer<App> + Send + 'static,
    L::Service:
        Service<Request<ServerBody>, Response = Response<B>> + Clone + Send + Sync + 'static,
    <L::Service as Service<Request<ServerBody>>>::Error: Into<BoxError>,
    <L::Service as Service<Request<ServerBody>>>::Future: Send + 'static,
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Served = Layered<L::Service>;

    fn around(self, app: App, config: &Config) -> Self::Served {
        let errors = Errors {
            mode: config.pipeline.mode,
            handler: config.router.error_handler.clone(),
            logger: Logger::tracing(),
        };
        Layered::new(self.0.layer(app), errors)
    }
}

impl<'a, L: AroundApp> std::future::IntoFuture for CreateServer<'a, L> {
    type Output = Result<Server, ServerError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(start(self))
    }
}

/// A listener bound by the application ([`CreateServer::listener`]).
pub enum Listener {
    /// Plain TCP.
    Tcp(TcpListener),
    /// A UNIX domain socket (its file is the application's: the server does not remove it).
    Unix(UnixListener),
    /// TLS over TCP with the application's own acceptor (its `rustls` configuration; the
    /// server asks for nothing but the handshake, within the header-read timeout).
    #[cfg(feature = "tls")]
    Tls(TcpListener, tokio_rustls::TlsAcceptor),
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listener::Tcp(listener) => f.debug_tuple("Tcp").field(listener).finish(),
            Listener::Unix(listener) => f.debug_tuple("Unix").field(listener).finish(),
            #[cfg(feature = "tls")]
            Listener::Tls(listener, _) => f.debug_tuple("Tls").field(listener).finish(),
        }
    }
}

impl Listener {
    /// TLS on `listener` with `acceptor`.
    #[cfg(feature = "tls")]
    pub fn tls(listener: TcpListener, acceptor: tokio_rustls::TlsAcceptor) -> Self {
        Listener::Tls(listener, acceptor)
    }
}

impl From<TcpListener> for Listener {
    fn from(listener: TcpListener) -> Self {
        Listener::Tcp(listener)
    }
}

impl From<UnixListener> for Listener {
    fn from(listener: UnixListener) -> Self {
        Listener::Unix(listener)
    }
}

/// Refuses a configuration that cannot serve: HTTPS half configured, or no listener at all
/// (`given`: the application gave listeners of its own).
fn check_listeners(config: &Config, given: bool) -> Result<(), ServerError> {
    let https = &config.server.https;
    if https.listen.is_some() && (https.cert.is_none() || https.key.is_none()) {
        return Err(ServerError::Config(
            "https needs both `cert` and `key`".into(),
        ));
    }
    if https.listen.is_none() && (https.cert.is_some() || https.key.is_some()) {
        return Err(ServerError::Config(
            "https has a certificate but no `listen`".into(),
        ));
    }
    if config.server.listen.is_none() && https.listen.is_none() && !given {
        return Err(ServerError::Config(
            "no listener: set `listen` (http) and/or `https` in the config, or give one to \
             `create_server(..).listener(..)`"
                .into(),
        ));
    }
    Ok(())
}

/// Starts serving on every listener of the configuration and every listener given, each
/// connection running the app inside the layers given.
async fn start<L: AroundApp>(create: CreateServer<'_, L>) -> Result<Server, ServerError> {
    let CreateServer {
        config,
        routing,
        layers,
        listeners: given,
    } = create;
    check_listeners(config, !given.is_empty())?;
    let https = &config.server.https;
    if let Some(options) = config.server.logger.as_ref() {
        install_default_subscriber(options);
    }
    let logger = Logger::tracing();
    let app = build_app(config, routing, &logger)?;
    let served = layers.around(app.clone(), config);
    let tls = if https.listen.is_some() {
        Some(acceptor(https)?)
    } else {
        None
    };
    let limits = &config.server.limits;
    let builder = Arc::new(connection_builder(limits));
    let (sender, receiver) = watch::channel(false);
    let slots = Arc::new(Semaphore::new(
        limits
            .max_connections
            .unwrap_or_else(default_max_connections)
            .clamp(1, Semaphore::MAX_PERMITS),
    ));
    let pressure = Arc::new(Notify::new());
    let clients = Arc::new(ClientConnections::new(
        limits
            .max_connections_per_client
            .unwrap_or_else(|| default_client_share(slots.available_permits())),
    ));
    // The configuration's listeners, bound now, then the application's own.
    let mut bound = Vec::new();
    let configured = [
        (Protocol::Http, config.server.listen.as_ref(), None),
        (Protocol::Https, https.listen.as_ref(), tls),
    ];
    for (protocol, listen, tls) in configured {
        if let Some(listen) = listen {
            let (listener, local_addr) = bind(listen).await?;
            bound.push((protocol, listener, local_addr, tls));
        }
    }
    for listener in given {
        bound.push(adopt(listener)?);
    }
    let mut servers = Vec::new();
    let mut tasks = Vec::new();
    for (protocol, listener, local_addr, tls) in bound {
        logger.info(format_args!("Listening on {local_addr:?} ({protocol:?})"));
        servers.push(ListeningServer {
            protocol,
            local_addr,
        });
        let serving = Serving {
            app: served.clone(),
            errors: config.router.error_handler.clone(),
            builder: Arc::clone(&builder),
            tls,
            header_timeout: ServerLimits::or_never(limits.header_read_timeout),
            limits: *limits,
            logger: logger.clone(),
            pressure: Arc::clone(&pressure),
        };
        tasks.push(tokio::spawn(accept_loop(
            listener,
            serving,
            receiver.clone(),
            ServerLimits::or_never(limits.shutdown_timeout),
            Arc::clone(&slots),
            Arc::clone(&clients),
        )));
    }
    Ok(Server {
        app,
        logger,
        servers,
        handle: ShutdownHandle {
            sender: Arc::new(sender),
        },
        tasks,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests fail loudly by design

    use super::*;

    #[test]
    fn run_outside_a_runtime_waits_for_its_first_poll_to_listen_for_signals() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let config = crate::config::Config::builder()
            .cors(strata_cors::Cors::Disabled)
            .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
            .build();
        let server = runtime
            .block_on(create_server(&config, &Routing::new()).into_future())
            .unwrap();
        let stop = server.shutdown_handle();
        // Here no runtime is current: making the future must not panic.
        let running = server.run();
        runtime.block_on(async move {
            stop.shutdown();
            running.await;
        });
    }

    /// The connection's task reads the watcher's channel once, then only after the watcher
    /// marks an order: an order sent unmarked stays unread (what the mark saves: the channel
    /// is not read at every wake), a marked one is read, and a replaced channel is read once.
    #[test]
    fn orders_are_read_once_then_only_when_marked() {
        use std::task::Waker;
        let mut cx = Context::from_waker(Waker::noop());
        let activity = Arc::new(Activity::default());
        let (orders, receiver) = oneshot::channel();
        let mut ordered = Orders::new(receiver, Arc::clone(&activity));
        assert!(Pin::new(&mut ordered).poll(&mut cx).is_pending());
        assert!(orders.send(Order::Drop("first")).is_ok());
        assert!(Pin::new(&mut ordered).poll(&mut cx).is_pending());
        activity.mark_ordered();
        let first = Pin::new(&mut ordered).poll(&mut cx);
        assert!(matches!(first, Poll::Ready(Ok(Order::Drop("first")))));

        let fresh = Arc::new(Activity::default());
        let (_kept, receiver) = oneshot::channel();
        let mut ordered = Orders::new(receiver, fresh);
        assert!(Pin::new(&mut ordered).poll(&mut cx).is_pending());
        let (next, receiver) = oneshot::channel();
        ordered.replace(receiver);
        assert!(next.send(Order::Cut).is_ok());
        // A replaced channel is read at the next wake, marked or not.
        assert!(matches!(
            Pin::new(&mut ordered).poll(&mut cx),
            Poll::Ready(Ok(Order::Cut))
        ));
    }

    /// The first look leaves the task's waker with the channel even when the task's budget is
    /// spent: a marked order sent afterwards wakes the task.
    #[tokio::test(flavor = "current_thread")]
    async fn orders_reach_a_task_whose_first_look_found_its_budget_spent() {
        struct Woken(std::sync::atomic::AtomicBool);
        impl std::task::Wake for Woken {
            fn wake(self: Arc<Self>) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let activity = Arc::new(Activity::default());
        let (orders, receiver) = oneshot::channel();
        let mut ordered = Orders::new(receiver, Arc::clone(&activity));
        let woken = Arc::new(Woken(std::sync::atomic::AtomicBool::new(false)));
        let waker = std::task::Waker::from(Arc::clone(&woken));
        let (sender, mut spending) = tokio::sync::mpsc::unbounded_channel();
        for n in 0..1_000 {
            sender.send(n).unwrap();
        }
        std::future::poll_fn(|cx| {
            // Each ready message spends a unit of the task's budget, until a poll says Pending.
            while spending.poll_recv(cx).is_ready() {}
            let mut own = Context::from_waker(&waker);
            assert!(Pin::new(&mut ordered).poll(&mut own).is_pending());
            Poll::Ready(())
        })
        .await;
        activity.mark_ordered();
        assert!(orders.send(Order::Cut).is_ok());
        assert!(woken.0.load(std::sync::atomic::Ordering::SeqCst));
    }

    /// Built without the `tls` feature (`cargo test -p strata-server --no-default-features`),
    /// an HTTPS listener is a configuration error that names the feature.
    #[cfg(not(feature = "tls"))]
    #[tokio::test]
    async fn https_needs_the_tls_feature() {
        use crate::config::{Config, Pem};
        let config = Config::builder()
            .cors(strata_cors::Cors::Disabled)
            .https(Pem::Bytes(b"cert".to_vec()), Pem::Bytes(b"key".to_vec()), 0)
            .build();
        let error = create_server(&config, &Routing::new()).await.err();
        assert_eq!(
            error.map(|e| e.to_string()).as_deref(),
            Some("invalid server configuration: https needs Strata's `tls` feature")
        );
    }
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
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
            pressure: Arc::new(Notify::new()),
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
            serving.serve(server, None, shutdown).await;
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
        io.write_all(crate::activity::HTTP2_PREFACE).await.unwrap();
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
        assert!(goaway >= head && goaway <= head + head / 4, "{seen:?}");
        // Not the write timeout (30 s) later: the connection has nothing in flight.
        assert!(
            seen.closed >= goaway + QUIET_GOODBYE && seen.closed <= goaway + 2 * QUIET_GOODBYE,
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
        assert!(goaway >= head && goaway <= head + tick, "{seen:?}");
        // Closed once the client has seen the GOAWAY (it answers the ping that follows).
        assert!(seen.closed <= goaway + Duration::from_secs(1), "{seen:?}");
    }
}
