//! Starting and stopping a server: `create_server`, the listeners it is given or binds, the
//! signals and the shutdown handle that stop it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use http::{Request, Response};

use strata_core::{BoxError, Logger};
use strata_routing::Routing;
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinHandle;
use tower_layer::Layer;
use tower_service::Service;

use crate::app::layered::{Errors, Layered};
use crate::app::{App, build_app};
use crate::config::{Config, ServerLimits};
use crate::connection::deadline::ServerBody;
use crate::connection::watcher::IdleConnections;
use crate::connection::{ServedApp, Serving, acceptor, connection_builder};
use crate::error::ServerError;
use crate::listen::{
    ClientConnections, accept_loop, adopt, bind, default_client_share, default_max_connections,
};
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
    health: Option<crate::Health>,
}

impl ShutdownHandle {
    /// Stops accepting connections; requests in flight finish (within the shutdown timeout).
    /// With health probes, readiness answers 503 from now on, and the listeners keep
    /// accepting for their drain delay first.
    pub fn shutdown(&self) {
        if let Some(health) = &self.health {
            health.start_draining();
        }
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
    /// Flushed once the listeners have closed: the last requests' spans are exported.
    #[cfg(feature = "otel")]
    tracing: Option<crate::Tracing>,
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
    /// shutdown timeout, then closes (and, with traces, exports the spans still waiting).
    pub async fn shutdown(self) {
        self.handle.shutdown();
        for task in self.tasks {
            let _ = task.await;
        }
        #[cfg(feature = "otel")]
        if let Some(tracing) = self.tracing {
            // The flush waits for the collector: on a thread that may block.
            let flushed = tokio::task::spawn_blocking(move || tracing.force_flush()).await;
            if let Ok(Err(error)) = flushed {
                self.logger
                    .warn(format_args!("Traces not exported at shutdown: {error}"));
            }
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
    /// Puts the application's own tower layers around the app: tracing, headers, anything
    /// `tower` or `tower-http` offers that should see every request as it arrives.
    ///
    /// The layers see every request after the server's checks (`Host`, body deadlines) and
    /// before request ids, routing and the reading of its body: a concurrency limit or a
    /// timeout here counts uploads still arriving, so clients that send bodies slowly can
    /// hold every place. Limits and timeouts of the work belong after the body is read, in
    /// `create_config().after_body(..)`; the server warns at start when these layers include
    /// tower's concurrency limit. A request the layers do not take within
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
    /// let config = Config::builder()
    ///     .cors(Cors::Enabled)
    ///     .listen(8090)
    ///     // The work's limits, once each body is in: a 503 while 512 requests are worked on.
    ///     .after_body(
    ///         ServiceBuilder::new()
    ///             .load_shed()
    ///             .layer(tower::limit::GlobalConcurrencyLimitLayer::new(512)),
    ///     )
    ///     .build();
    /// // Around everything, from the head on: a 504 for a request (upload included) that
    /// // takes longer than 2 minutes.
    /// let layers = ServiceBuilder::new().timeout(Duration::from_secs(120));
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
            metrics: config.server.metrics.clone(),
        };
        if let Some(warning) = limit_before_the_body(std::any::type_name::<L::Service>()) {
            errors.logger.warn(warning);
        }
        Layered::new(self.0.layer(app), errors)
    }
}

/// The warning for layers around the whole app (named by their service's type) that hold a
/// place for each request: tower's concurrency limit (also under `load_shed`). There they take
/// the place when a request's head arrives and keep it while its body trickles in, so clients
/// that send bodies slowly hold every place (12.7 % of health checks answered in an attack).
/// A type name is not a stable format, but it names the type's path, which is enough for a
/// warning; a layer that is not found only misses its warning.
fn limit_before_the_body(service_type: &str) -> Option<String> {
    service_type
        .contains("tower::limit::concurrency::")
        .then(|| {
            "the layers given to `create_server(..).layers(..)` include tower's concurrency \
             limit: in front of the body it holds a place while a request's body is still \
             arriving, so clients that send bodies slowly can take every place; put it in \
             `create_config().after_body(..)`, which sees each request once its body is read"
                .to_owned()
        })
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

strata_core::from_variants!(Listener { Tcp(TcpListener), Unix(UnixListener) });

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

/// The connections per client address under a cap of `cap`: the configured share, or the
/// default.
fn client_connections(limits: &ServerLimits, cap: usize) -> ClientConnections {
    let share = limits.max_connections_per_client.unwrap_or_else(|| {
        default_client_share(
            cap,
            limits.http2_max_concurrent_streams,
            strata_parse::memory_limit(),
        )
    });
    ClientConnections::new(share, cap)
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
    if let Some(uploads) = &config.pipeline.uploads {
        // Now rather than at the first large upload: an unusable directory stops the start,
        // and what a crashed run left is removed.
        uploads
            .prepare_spool()
            .await
            .map_err(|error| ServerError::Config(error.to_string()))?;
    }
    let served = layers.around(app.clone(), config);
    let tls = if https.listen.is_some() {
        Some(acceptor(https)?)
    } else {
        None
    };
    let limits = &config.server.limits;
    let builder = Arc::new(connection_builder(limits));
    let (sender, receiver) = watch::channel(false);
    let receiver = crate::health::after_drain(receiver, config.server.health.as_ref());
    let slots = Arc::new(Semaphore::new(
        limits
            .max_connections
            .unwrap_or_else(default_max_connections)
            .clamp(1, Semaphore::MAX_PERMITS),
    ));
    let idle = Arc::new(IdleConnections::default());
    let cap = slots.available_permits();
    let clients = Arc::new(client_connections(limits, cap));
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
            idle: Arc::clone(&idle),
            metrics: config.server.metrics.clone(),
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
            health: config.server.health.clone(),
        },
        tasks,
        #[cfg(feature = "otel")]
        tracing: config.server.tracing.clone(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests fail loudly by design

    use super::*;
    use std::time::Duration;

    /// Log lines written while `run` runs, as text.
    fn logged(run: impl FnOnce()) -> String {
        #[derive(Clone, Default)]
        struct Lines(Arc<std::sync::Mutex<Vec<u8>>>);
        impl std::io::Write for Lines {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, run);
        String::from_utf8(lines.0.lock().unwrap().clone()).unwrap()
    }

    /// A configuration listening on 127.0.0.1:0, without CORS.
    fn on_a_free_port() -> Config {
        crate::config::Config::builder()
            .cors(strata_cors::Cors::Disabled)
            .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
            .build()
    }

    /// Starts a server on 127.0.0.1:0 with `layers` and stops it.
    fn start_with<M>(layers: M)
    where
        WithLayers<M>: AroundApp,
    {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let config = on_a_free_port();
        let routing = strata_routing::Routing::new();
        runtime.block_on(async {
            let server = create_server(&config, &routing)
                .layers(layers)
                .await
                .unwrap();
            server.shutdown().await;
        });
    }

    #[test]
    fn a_concurrency_limit_in_front_of_the_body_is_warned_about_at_start() {
        use tower::ServiceBuilder;
        let log = logged(|| {
            start_with(
                ServiceBuilder::new()
                    .load_shed()
                    .concurrency_limit(64)
                    .timeout(Duration::from_secs(30)),
            );
        });
        assert!(log.contains("WARN"), "{log}");
        assert!(log.contains("after_body"), "{log}");
        let log = logged(|| {
            start_with(
                ServiceBuilder::new().layer(tower::limit::GlobalConcurrencyLimitLayer::new(8)),
            );
        });
        assert!(log.contains("after_body"), "the global limit too: {log}");
        // Layers that hold no place for a request's body are not warned about.
        let log = logged(|| start_with(ServiceBuilder::new().timeout(Duration::from_secs(30))));
        assert!(!log.contains("after_body"), "{log}");
    }

    #[test]
    fn run_outside_a_runtime_waits_for_its_first_poll_to_listen_for_signals() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let config = on_a_free_port();
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
}
