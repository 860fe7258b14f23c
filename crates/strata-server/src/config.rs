//! [`Config`]: everything a running server reads, in three parts, one per owner: the server's
//! own settings ([`ServerSettings`]: listeners, TLS material, limits against slow or greedy
//! clients, the default logger, compression, request ids, `ETag`s), the router's
//! ([`RouterSettings`]: CORS, method behaviours, the error handler) and the pipeline's
//! ([`PipelineSettings`]: mode, input sources, body limits, the body budget, uploads).
//!
//! [`Config::builder`] (the facade's `create_config()`) sets any of them in one chain; each
//! setter writes its field, nothing is forwarded, and nothing is read from the environment.
//! The fields can be read (`config.pipeline.mode`); the types are `#[non_exhaustive]`, so that
//! a new setting is not a breaking change: they are built with their setters. Everything that
//! needs part of a configuration takes the whole (`create_server`, `attach_routing`) or
//! borrows the parts it reads through [`AsRef`] (`Router::new`, API descriptions,
//! `Endpoint::service_with`).
//!
//! The names say what a type is: `Config` is the whole, `*Settings` its three parts,
//! `*Limits` bounds on what clients may send or hold, `*Options` the choices of one feature.
//!
//! ```
//! use strata_core::Mode;
//! use strata_cors::Cors;
//! use strata_server::{Compression, Config};
//!
//! let config = Config::builder()
//!     .cors(Cors::Enabled) // the router's
//!     .mode(Mode::Development) // the pipeline's
//!     .listen(8090) // the server's
//!     .compression(Compression::GzipAndBrotli)
//!     .build();
//! assert_eq!(config.pipeline.mode, Mode::Development);
//! assert_eq!(config.server.compression, Compression::GzipAndBrotli);
//! assert!(config.router.cors.is_some());
//! ```

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use http::Method;
use http::Request;
use strata_core::{BoxError, Output};
use strata_core::{ErrorHandler, Level, Mode, ResultHandler};
use strata_cors::Cors;
use strata_endpoint::{AfterBody, AfterBodyInner, PipelineSettings};
use strata_input::InputSource;
use strata_input::Parsed;
use strata_input::cookies::CookieKeys;
use strata_parse::BodyBudget;
use strata_routing::{
    MethodLikeRouteBehavior, RouterSettings, RoutingSettings, WrongMethodBehavior,
};
use strata_upload::UploadLimits;
use tower_layer::Layer;
use tower_service::Service;

use crate::connection::deadline::MinDataRate;
use crate::health::Health;
use crate::metrics::Metrics;

/// Where a server listens (a listener you bound yourself goes to
/// [`CreateServer::listener`](crate::CreateServer::listener)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Listen {
    /// A TCP port on all IPv4 interfaces (`0` picks a free one).
    Port(u16),
    /// A TCP socket address.
    Addr(SocketAddr),
    /// A UNIX domain socket at this path.
    Unix(PathBuf),
}

strata_core::from_variants!(Listen { Port(u16), Addr(SocketAddr) });

impl Listen {
    /// The TCP address, `None` for a UNIX socket.
    pub fn socket_addr(&self) -> Option<SocketAddr> {
        match self {
            Listen::Port(port) => Some(SocketAddr::from((Ipv4Addr::UNSPECIFIED, *port))),
            Listen::Addr(addr) => Some(*addr),
            Listen::Unix(_) => None,
        }
    }
}

/// PEM material: a file to read at startup, or the bytes themselves.
#[derive(Clone, PartialEq, Eq)]
pub enum Pem {
    /// A file path.
    File(PathBuf),
    /// The PEM text.
    Bytes(Vec<u8>),
}

impl Https {
    strata_core::setters! {
        /// Sets the certificate chain.
        cert(pem: Pem) => cert = Some(pem);
        /// Sets the private key.
        key(pem: Pem) => key = Some(pem);
        /// Sets where to listen.
        listen(listen: impl Into<Listen>) => listen = Some(listen.into());
    }
}

impl fmt::Debug for Pem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pem::File(path) => f.debug_tuple("File").field(path).finish(),
            // Never print key material.
            Pem::Bytes(bytes) => write!(f, "Bytes({} bytes)", bytes.len()),
        }
    }
}

/// The HTTPS part of the config (spec `https.options` and `https.listen`): a certificate chain,
/// its private key and where to listen ([`ConfigBuilder::https`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Https {
    /// The certificate chain.
    pub cert: Option<Pem>,
    /// The private key.
    pub key: Option<Pem>,
    /// Where to listen.
    pub listen: Option<Listen>,
}

/// Whether the default logger colours its lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogColor {
    /// Coloured when standard output is a terminal and `NO_COLOR` is unset or empty, so that
    /// log files and pipes never get escape codes (the default).
    #[default]
    Auto,
    /// Never coloured.
    Never,
}

/// How the default logger writes its lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum LogFormat {
    /// Text for people, one record a line (the default).
    #[default]
    Text,
    /// One JSON object a line, for machines (a log shipper, Loki, Elasticsearch): `timestamp`,
    /// `level`, `target`, `message` and the record's fields at the top level (`request_id` in
    /// a request's records), never coloured. Each request the router answers gets a line of
    /// its own, target `strata::request`, message `request`, with `request_id`, `route` (the
    /// routing's template, `(unmatched)` for an unknown path), `method`, `status` and
    /// `duration_ms`, and `trace_id` and `span_id` of the request's span when it is traced and
    /// sampled (`create_config().tracing(..)`, the `otel` feature). The health probes and the metrics' exposition get no line.
    Json,
}

/// The default logger's setup (spec `logger`): from which level it records, whether it
/// colours its lines, and their format. A [`Level`] converts into it (text, coloured on a
/// terminal).
///
/// ```
/// use strata_core::Level;
/// use strata_server::{LogColor, LogFormat, LoggerOptions};
///
/// let plain = LoggerOptions::new(Level::Warn).color(LogColor::Never);
/// assert_eq!((plain.level, plain.color), (Level::Warn, LogColor::Never));
/// assert_eq!(LoggerOptions::from(Level::Info).color, LogColor::Auto);
///
/// // For machines: JSON lines, one more for each request.
/// let json = LoggerOptions::new(Level::Info).format(LogFormat::Json);
/// assert_eq!(json.format, LogFormat::Json);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoggerOptions {
    /// The lowest level recorded.
    pub level: Level,
    /// Whether lines are coloured (text only).
    pub color: LogColor,
    /// Text, or JSON with a line for each request.
    pub format: LogFormat,
}

impl LoggerOptions {
    /// Records from `level` up, coloured on a terminal.
    pub fn new(level: Level) -> Self {
        Self {
            level,
            color: LogColor::Auto,
            format: LogFormat::Text,
        }
    }

    strata_core::setters! {
        /// Sets whether lines are coloured.
        color(color: LogColor) => color = color;
        /// Sets the format of the lines.
        format(format: LogFormat) => format = format;
    }
}

impl Default for LoggerOptions {
    fn default() -> Self {
        Self::new(Level::Info)
    }
}

impl From<Level> for LoggerOptions {
    fn from(level: Level) -> Self {
        Self::new(level)
    }
}

/// Whether responses are compressed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compression {
    /// Sent as they are (the default).
    #[default]
    Off,
    /// gzip or brotli, as the request's `Accept-Encoding` prefers, for bodies above 1 KiB that
    /// are not images or event streams (the `compression` feature).
    GzipAndBrotli,
}

/// What the server does with each request's id (`x-request-id`: the client's when it is sane,
/// generated otherwise). Either way the id reaches the request's logger.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RequestIds {
    /// Echoed in the response's `x-request-id` (the default).
    #[default]
    Echoed,
    /// Logged only: for a server behind a proxy that sets the header itself.
    LoggedOnly,
}

/// Whether the server tags responses with an `ETag` of their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ETags {
    /// None (the default): hashing every body costs a little on every response. Static
    /// files, and handlers through the cache middleware, have their own.
    #[default]
    Off,
    /// A weak `ETag` over the bytes of each successful GET response with a body in memory
    /// (JSON, text), and a matching `If-None-Match` answered with 304 and no body, as express
    /// does.
    Weak,
}

/// Limits that protect a server from slow or greedy clients.
///
/// A timeout that can be turned off is an `Option`: `None` is off. The connection's watcher
/// checks them a few times per timeout (every quarter of the shortest one, 10 ms at least) and
/// when one is due: a timeout fires within one such interval after it is due, never before.
/// `Duration::ZERO` fires at the first look, and `Duration::MAX` is as good as `None`; neither
/// panics nor spins.
///
/// ```
/// use std::time::Duration;
/// use strata_server::ServerLimits;
///
/// let limits = ServerLimits::default()
///     .header_read_timeout(Some(Duration::from_secs(5)))
///     .max_connections(Some(10_000));
/// assert_eq!(limits.max_connections, Some(10_000));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerLimits {
    /// How long a client may take to send a request's headers (default 10 s): its first bytes
    /// (and TLS handshake) on a new connection, and on HTTP/1 each request head while nothing
    /// else is in flight, so an idle HTTP/1 keep-alive connection is closed after it too.
    pub header_read_timeout: Option<Duration>,
    /// The most bytes of request headers accepted (default 64 KiB): over HTTP/1, the request
    /// line and header lines, refused with a 431 naming the limit and the connection closed;
    /// over HTTP/2, the header list as HPACK counts it. (HTTP/1 heads over about 400 KiB, or
    /// this limit when larger, are refused by hyper, which holds no more in its buffer.)
    pub max_header_bytes: usize,
    /// How long graceful shutdown waits for requests in flight (default 10 s); `None` waits
    /// for every one.
    pub shutdown_timeout: Option<Duration>,
    /// How long a request body may pause between two pieces (default 10 s); then the request
    /// gets a 408 and its connection is closed. `None` for long streaming uploads.
    pub body_idle_timeout: Option<Duration>,
    /// How long a whole request body may take to arrive (default 60 s; at the default 1 MiB
    /// body limit, about 17 KiB/s); then the request gets a 408 and its connection is closed.
    pub body_read_timeout: Option<Duration>,
    /// The most connections served at once, over all listeners. At the cap, each new client
    /// takes the place of the connection idle longest (nothing in flight for a quarter of a
    /// second at least), which is closed (HTTP/2: GOAWAY); when none is idle, the server
    /// stops accepting (new clients wait in the kernel's backlog) and keeps serving the ones
    /// it has. `None` (the default): the process's open-file limit less 64, at least 16.
    pub max_connections: Option<usize>,
    /// The most connections one client address may have at once (IPv6: one /64); past it a new
    /// connection from that address is closed at once, so that one host cannot take every
    /// place under the cap. `None` (the default): a quarter of `max_connections`, and no more
    /// connections than HTTP/2 streams worth a 128th of the process's memory (its cgroup's
    /// limit, else the machine's) fill, at about 10 KiB a stream: 196 on 24 GiB with 100
    /// streams a connection; at least 16.
    /// Behind a reverse proxy every client has the proxy's address: set it to the cap (or
    /// more), which turns it off. A client past its share is refused as soon as it is
    /// accepted, even at the cap, without costing another connection its place.
    pub max_connections_per_client: Option<usize>,
    /// How long a connection may go without a request before it is closed gracefully (HTTP/2:
    /// GOAWAY, even while it answers pings; default 60 s). An idle HTTP/1 keep-alive connection
    /// is closed sooner, by the header-read timeout, and an idle HTTP/2 one by the shorter of
    /// the two. Each connection's deadline is brought forward by up to a quarter, at random,
    /// so that connections opened together do not close, and come back, together. `None`:
    /// kept until the client closes it.
    pub idle_timeout: Option<Duration>,
    /// How long responses may wait without a byte written (a client that does not read, or
    /// gives no HTTP/2 window) before the connection is dropped (default 30 s). `None` behind a
    /// proxy that buffers responses.
    pub write_timeout: Option<Duration>,
    /// HTTP/2: how long a connection may send nothing before it gets a ping (default 20 s, at
    /// least 1 s: an answer counts as activity); `None` sends none.
    pub http2_keep_alive_interval: Option<Duration>,
    /// HTTP/2: the most streams (requests) a client may have open at once on one connection
    /// (default 100): with the connection cap, it bounds the responses, files and buffers one
    /// client can hold.
    pub http2_max_concurrent_streams: u32,
    /// The slowest a request body may arrive (default 1 KiB/s on average once the server has
    /// waited 5 s for it); then the request gets a 408 and its connection is closed. Time the
    /// application did not read does not count. `None`: no minimum (the body idle and read
    /// timeouts still apply).
    pub min_body_rate: Option<MinDataRate>,
    /// How long a request may wait for the application's own layers to take it (a place
    /// under a concurrency limit) before it gets a 503 with `Retry-After: 1` (default 5 s).
    /// `None`: as long as they take.
    pub admission_timeout: Option<Duration>,
    /// HTTP/2: how long the answer to a ping may take before the connection is dropped, a peer
    /// gone without closing (default 20 s). An idle peer that answers is closed by the idle
    /// timeout instead.
    pub http2_keep_alive_timeout: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Some(Duration::from_secs(10)),
            max_header_bytes: 64 * 1024,
            shutdown_timeout: Some(Duration::from_secs(10)),
            body_idle_timeout: Some(Duration::from_secs(10)),
            body_read_timeout: Some(Duration::from_secs(60)),
            max_connections: None,
            max_connections_per_client: None,
            idle_timeout: Some(Duration::from_secs(60)),
            write_timeout: Some(Duration::from_secs(30)),
            http2_keep_alive_interval: Some(Duration::from_secs(20)),
            http2_keep_alive_timeout: Duration::from_secs(20),
            http2_max_concurrent_streams: 100,
            min_body_rate: Some(MinDataRate {
                bytes_per_second: 1024,
                grace: Duration::from_secs(5),
            }),
            admission_timeout: Some(Duration::from_secs(5)),
        }
    }
}

impl ServerLimits {
    strata_core::setters! {
        /// Sets [`header_read_timeout`](Self::header_read_timeout).
        header_read_timeout(timeout: Option<Duration>) => header_read_timeout = timeout;
        /// Sets [`max_header_bytes`](Self::max_header_bytes).
        max_header_bytes(bytes: usize) => max_header_bytes = bytes;
        /// Sets [`shutdown_timeout`](Self::shutdown_timeout).
        shutdown_timeout(timeout: Option<Duration>) => shutdown_timeout = timeout;
        /// Sets [`body_idle_timeout`](Self::body_idle_timeout).
        body_idle_timeout(timeout: Option<Duration>) => body_idle_timeout = timeout;
        /// Sets [`body_read_timeout`](Self::body_read_timeout).
        body_read_timeout(timeout: Option<Duration>) => body_read_timeout = timeout;
        /// Sets [`max_connections`](Self::max_connections).
        max_connections(connections: Option<usize>) => max_connections = connections;
        /// Sets [`max_connections_per_client`](Self::max_connections_per_client).
        max_connections_per_client(connections: Option<usize>) =>
            max_connections_per_client = connections;
        /// Sets [`idle_timeout`](Self::idle_timeout).
        idle_timeout(timeout: Option<Duration>) => idle_timeout = timeout;
        /// Sets [`write_timeout`](Self::write_timeout).
        write_timeout(timeout: Option<Duration>) => write_timeout = timeout;
        /// Sets [`http2_keep_alive_interval`](Self::http2_keep_alive_interval).
        http2_keep_alive_interval(interval: Option<Duration>) =>
            http2_keep_alive_interval = interval;
        /// Sets [`http2_max_concurrent_streams`](Self::http2_max_concurrent_streams).
        http2_max_concurrent_streams(streams: u32) => http2_max_concurrent_streams = streams;
        /// Sets [`min_body_rate`](Self::min_body_rate).
        min_body_rate(rate: Option<MinDataRate>) => min_body_rate = rate;
        /// Sets [`admission_timeout`](Self::admission_timeout).
        admission_timeout(timeout: Option<Duration>) => admission_timeout = timeout;
        /// Sets [`http2_keep_alive_timeout`](Self::http2_keep_alive_timeout).
        http2_keep_alive_timeout(timeout: Duration) => http2_keep_alive_timeout = timeout;
    }

    /// `timeout`, or `Duration::MAX` (which never fires) when it is off.
    pub(crate) fn or_never(timeout: Option<Duration>) -> Duration {
        timeout.unwrap_or(Duration::MAX)
    }
}

/// The server's own settings: what only a running server or `attach_routing` reads.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ServerSettings {
    /// Where the HTTP server listens (spec `http.listen`); `None`: no plain HTTP listener.
    pub listen: Option<Listen>,
    /// The HTTPS server's TLS material and listener (spec `https`).
    pub https: Https,
    /// The default logger's setup (spec `logger`); `None`: no subscriber is installed.
    pub logger: Option<LoggerOptions>,
    /// Whether responses are compressed.
    pub compression: Compression,
    /// Whether responses carry the request's id.
    pub request_ids: RequestIds,
    /// Whether successful GET responses get an `ETag` of their bytes.
    pub etags: ETags,
    /// Limits against slow or greedy clients.
    pub limits: ServerLimits,
    /// The liveness and readiness probes, answered ahead of the router; `None`: none.
    pub health: Option<Health>,
    /// The request metrics, their exposition answered ahead of the router; `None`: none
    /// (nothing counted).
    pub metrics: Option<Metrics>,
    /// Traces of requests, exported over OTLP; `None`: none (the `otel` feature).
    #[cfg(feature = "otel")]
    pub tracing: Option<crate::Tracing>,
}

/// The configuration of a server: the server's, the router's and the pipeline's settings,
/// built with [`Config::builder`] (the facade's `create_config()`).
///
/// `Config::default()` is production mode with CORS not chosen (routing refuses to start until
/// it is) and no listener; [`Config::builder`] starts from it.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Config {
    /// The server's own settings.
    pub server: ServerSettings,
    /// The router's settings.
    pub router: RouterSettings,
    /// What every endpoint's stages are built with.
    pub pipeline: PipelineSettings,
}

impl From<RoutingSettings> for Config {
    /// The routing's settings with the server's defaults.
    fn from(routing: RoutingSettings) -> Self {
        Self {
            server: ServerSettings::default(),
            router: routing.router,
            pipeline: routing.pipeline,
        }
    }
}

strata_core::as_ref_parts!(Config {
    server: ServerSettings,
    router: RouterSettings,
    pipeline: PipelineSettings
});

impl Config {
    /// A builder starting from the defaults: production mode, 1 MiB body limit, the input
    /// sources of spec table 2.2, no listener. Nothing is read from the environment: a server
    /// that wants `STRATA_MODE` to choose its mode says so (`.mode(Mode::from_env()
    /// .unwrap_or_default())`).
    pub fn builder() -> ConfigBuilder {
        ConfigBuilder {
            config: Config::default(),
        }
    }
}

/// Builds a [`Config`]: one setter per setting, each writing its field of the server's, the
/// router's or the pipeline's part.
#[derive(Debug, Clone)]
#[must_use]
pub struct ConfigBuilder {
    config: Config,
}

impl From<Config> for ConfigBuilder {
    /// Continues from `config`.
    fn from(config: Config) -> Self {
        Self { config }
    }
}

impl ConfigBuilder {
    strata_core::setters! {
        /// Serves HTTP on `listen`: a port, a socket address, or `Listen::Unix(path)`.
        listen(listen: impl Into<Listen>) => config.server.listen = Some(listen.into());
        /// Sets the HTTPS part field by field (checked when the server starts).
        https_options(https: Https) => config.server.https = https;
        /// Asks for the default `tracing` subscriber (spec `logger`), writing to standard output
        /// from a level up (a [`Level`], or [`LoggerOptions`] to turn colours off): installed
        /// when the server starts (or routing is attached) and only when the application has
        /// none. Without this call Strata installs nothing: its events go to the application's
        /// subscriber.
        logger(options: impl Into<LoggerOptions>) => config.server.logger = Some(options.into());
        /// Compresses responses (default [`Compression::Off`]).
        compression(compression: Compression) => config.server.compression = compression;
        /// What the server does with request ids (default [`RequestIds::Echoed`]).
        request_ids(request_ids: RequestIds) => config.server.request_ids = request_ids;
        /// Whether successful GET responses get an `ETag` of their bytes (default
        /// [`ETags::Off`]).
        etags(etags: ETags) => config.server.etags = etags;
        /// Sets the limits against slow or greedy clients.
        limits(limits: ServerLimits) => config.server.limits = limits;
        /// Answers liveness and readiness probes ([`Health`]: `/health/live` and
        /// `/health/ready` by default) ahead of the router, readiness turned off when the
        /// server's shutdown starts. Default: no probes.
        health(health: Health) => config.server.health = Some(health);
        /// Counts requests by route template, method and status ([`Metrics`]) and answers
        /// their exposition (`/metrics` by default, the `OpenMetrics` text format) ahead of the
        /// router. Default: no metrics, nothing counted.
        metrics(metrics: Metrics) => config.server.metrics = Some(metrics);
        /// Traces each request the router answers with OpenTelemetry ([`Tracing`]: a server
        /// span named after the route template, in the caller's trace when the request carries
        /// `traceparent`), exported over OTLP/HTTP. Default: no traces. Needs the `otel`
        /// feature.
        ///
        /// [`Tracing`]: crate::Tracing
        #[cfg(feature = "otel")]
        tracing(tracing: crate::Tracing) => config.server.tracing = Some(tracing);
        /// Chooses CORS: [`Cors::Enabled`] (the default headers, `OPTIONS` answered),
        /// [`Cors::Disabled`], or [`Cors::with`] a function computing the headers of each
        /// request. It must be chosen: routing refuses to start otherwise.
        cors(cors: Cors) => config.router.cors = Some(cors);
        /// Sets the answer to a known path with an unsupported method (default 405).
        wrong_method_behavior(behavior: WrongMethodBehavior) =>
            config.router.wrong_method_behavior = behavior;
        /// Sets how routing keys named after methods are read (default: as methods).
        method_like_route_behavior(behavior: MethodLikeRouteBehavior) =>
            config.router.method_like_route_behavior = behavior;
        /// Formats errors that happen outside any endpoint (the router's 404 and 405, a
        /// malformed path parameter, a refused static path, the errors of the application's
        /// own layers) with `handler`, as endpoints built with it format theirs (the spec's
        /// `errorHandler`): an application with its own envelope has it everywhere. Default:
        /// the default envelope.
        error_handler(handler: impl ResultHandler) =>
            config.router.error_handler = Some(ErrorHandler::new(handler));
        /// Sets the body limit in bytes (default 1 MiB).
        body_limit(bytes: usize) => config.pipeline.body_limit = bytes;
        /// Sets the limit of query or form parameters (default 1000).
        max_fields(fields: usize) => config.pipeline.max_fields = fields;
        /// Turns file uploads on with these limits (spec 2.3 `upload`): `multipart/form-data`
        /// bodies are then read, their text parts as a form and their files into the `files`
        /// input source (merged for POST by default). Without it such bodies are refused with
        /// 415.
        upload(limits: impl Into<UploadLimits>) => config.pipeline.uploads = Some(limits.into());
        /// Sets the budget of request bodies held in memory at once, over all requests (default
        /// 256 MiB, or a sixteenth of the process's memory where that is less), counted as bodies arrive: a request whose next chunk would go over it, or
        /// over its client address's share (a quarter), gets a 503 with `Retry-After` and the
        /// connection is closed. `None` turns the budget off. Behind a reverse proxy, give the
        /// proxy's address the whole budget: set `pipeline.body_budget` of the built
        /// configuration to `BodyBudget::new(n).per_client(n)` (see `BodyBudget`).
        body_budget(bytes: impl Into<Option<usize>>) =>
            config.pipeline.body_budget = bytes.into().map(BodyBudget::new);
        /// Sets the mode (default [`Mode::Production`]: internal error messages are hidden;
        /// [`Mode::Development`] shows every error message, 5xx and panics included, for local
        /// work only).
        mode(mode: Mode) => config.pipeline.mode = mode;
    }

    /// Places the application's own tower `layer` around each endpoint's work, after its body
    /// has been read ([`AfterBody`]): a timeout or a concurrency limit there counts neither
    /// uploads still arriving nor the time they take. (Layers given to `create_server(..).layers(..)`
    /// see every request from its head on.)
    ///
    /// ```
    /// use std::time::Duration;
    /// use strata_cors::Cors;
    /// use strata_server::Config;
    /// use tower::ServiceBuilder;
    /// use tower::limit::GlobalConcurrencyLimitLayer;
    ///
    /// let config = Config::builder()
    ///     .cors(Cors::Disabled)
    ///     .after_body(
    ///         ServiceBuilder::new()
    ///             .timeout(Duration::from_secs(30)) // the work, not the upload
    ///             .layer(GlobalConcurrencyLimitLayer::new(1024)), // shared by all endpoints
    ///     )
    ///     .build();
    /// assert!(config.pipeline.after_body.is_some());
    /// ```
    pub fn after_body<L>(mut self, layer: L) -> Self
    where
        L: Layer<AfterBodyInner> + Send + Sync + 'static,
        L::Service: Service<Request<Parsed>, Response = Output> + Clone + Send + Sync + 'static,
        <L::Service as Service<Request<Parsed>>>::Error: Into<BoxError>,
        <L::Service as Service<Request<Parsed>>>::Future: Send + 'static,
    {
        self.config.pipeline.after_body = Some(AfterBody::new(layer));
        self
    }

    /// Serves HTTPS on `listen` with the certificate chain `cert` and private key `key` (TLS
    /// with a `rustls` configuration of your own: [`CreateServer::listener`](crate::CreateServer::listener)
    /// with [`Listener::tls`](crate::Listener::tls)).
    pub fn https(mut self, cert: Pem, key: Pem, listen: impl Into<Listen>) -> Self {
        self.config.server.https = Https {
            cert: Some(cert),
            key: Some(key),
            listen: Some(listen.into()),
        };
        self
    }

    /// Replaces the input sources of one method (GET, POST, PUT, PATCH, DELETE or QUERY; HEAD
    /// follows GET; other methods are ignored).
    pub fn input_sources(mut self, method: &Method, sources: impl Into<Vec<InputSource>>) -> Self {
        self.config.pipeline.input_sources.set(method, sources);
        self
    }

    /// The keys that verify signed cookies (`InputSource::SignedCookies`, and the cookie
    /// middleware's `get_signed`), newest first; the first signs. Rotate by putting a new
    /// secret first and keeping the old one until the cookies it signed have expired.
    ///
    /// ```
    /// use strata_cors::Cors;
    /// use strata_input::cookies::CookieKeys;
    /// use strata_server::Config;
    ///
    /// let keys = CookieKeys::new(["a random secret of at least 32 bytes"]).unwrap();
    /// let config = Config::builder().cors(Cors::Disabled).cookie_keys(keys).build();
    /// assert!(config.pipeline.cookie_keys.is_some());
    /// ```
    pub fn cookie_keys(mut self, keys: CookieKeys) -> Self {
        self.config.pipeline.cookie_keys = Some(keys);
        self
    }

    /// The configuration.
    pub fn build(self) -> Config {
        self.config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_chain_sets_every_part() {
        let config = Config::builder()
            .body_limit(1234)
            .mode(Mode::Development)
            .cors(Cors::Disabled)
            .listen(0)
            .etags(ETags::Weak)
            .request_ids(RequestIds::LoggedOnly)
            .build();
        assert_eq!(config.pipeline.body_limit, 1234);
        assert_eq!(config.pipeline.mode, Mode::Development);
        assert!(config.router.cors.as_ref().is_some_and(|c| !c.is_enabled()));
        assert_eq!(config.server.listen, Some(Listen::Port(0)));
        assert_eq!(config.server.etags, ETags::Weak);
        assert_eq!(config.server.request_ids, RequestIds::LoggedOnly);
        assert_eq!(config.server.compression, Compression::Off);
    }

    #[test]
    fn a_routing_config_gets_the_server_defaults() {
        let mut routing = RoutingSettings::new(Cors::Enabled);
        routing.pipeline.body_limit = 7;
        let config = Config::from(routing);
        assert_eq!(config.pipeline.body_limit, 7);
        assert_eq!(config.server.request_ids, RequestIds::Echoed);
        assert_eq!(config.server.listen, None);
        assert_eq!(config.server.limits, ServerLimits::default());
    }

    #[test]
    fn the_environment_does_not_choose_the_mode() {
        // Whatever `STRATA_MODE` says in the test's environment, the builder reads none of it.
        assert_eq!(Config::builder().build().pipeline.mode, Mode::Production);
    }

    #[test]
    fn the_body_budget_can_be_turned_off() {
        assert!(Config::default().pipeline.body_budget.is_some());
        let config = Config::builder().body_budget(None).build();
        assert!(config.pipeline.body_budget.is_none());
        let config = Config::builder().body_budget(10).build();
        assert_eq!(config.pipeline.body_budget.map(|b| b.capacity()), Some(10));
    }
}
