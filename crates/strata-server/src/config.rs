//! [`Config`]: everything a running server reads, as three plain values, one per owner: the
//! server's own settings ([`ServerSettings`]: listeners, TLS material, limits against slow or
//! greedy clients, the default logger, compression, the request-id echo, `ETag`s), the
//! router's ([`RouterSettings`]: CORS, method behaviours, the error handler) and the
//! pipeline's ([`PipelineSettings`]: mode, input sources, body limits, the body budget,
//! uploads).
//!
//! [`Config::builder`] (the facade's `create_config()`) sets any of them in one chain; each
//! setter writes its field, nothing is forwarded. The fields are public, so a part can also be
//! written or read directly. Everything that needs part of a configuration takes the whole
//! (`create_server`, `attach_routing`) or borrows the parts it reads through [`AsRef`]
//! (`Router::new`, API descriptions, `Endpoint::service_with`): no call can drop the server's
//! settings by being given the wrong half.
//!
//! ```
//! use strata_core::Mode;
//! use strata_server::Config;
//!
//! let config = Config::builder()
//!     .cors(true) // the router's
//!     .production() // the pipeline's
//!     .listen(8090) // the server's
//!     .compression(true)
//!     .build();
//! assert_eq!(config.pipeline.mode, Mode::Production);
//! assert!(config.server.compression);
//! assert!(config.router.cors.is_some());
//! ```

use std::fmt;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use http::Request;
use http::{HeaderMap, Method};
use strata_core::{BoxError, Output};
use strata_core::{ErrorHandler, Level, Mode, ResultHandler};
use strata_cors::{Cors, CorsRequest};
use strata_endpoint::{AfterBody, AfterBodyInner, PipelineSettings};
use strata_input::InputSource;
use strata_input::Parsed;
use strata_input::cookies::CookieKeys;
use strata_parse::BodyBudget;
use strata_routing::{MethodLikeRouteBehavior, RouterSettings, RoutingConfig, WrongMethodBehavior};
use strata_upload::UploadLimits;
use tower_layer::Layer;
use tower_service::Service;

use crate::deadline::MinDataRate;

/// Where a server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// A TCP port on all IPv4 interfaces (`0` picks a free one).
    Port(u16),
    /// A TCP socket address.
    Addr(SocketAddr),
    /// A UNIX domain socket at this path.
    Unix(PathBuf),
}

impl From<u16> for Listen {
    fn from(port: u16) -> Self {
        Listen::Port(port)
    }
}

impl From<SocketAddr> for Listen {
    fn from(addr: SocketAddr) -> Self {
        Listen::Addr(addr)
    }
}

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

impl fmt::Debug for Pem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pem::File(path) => f.debug_tuple("File").field(path).finish(),
            // Never print key material.
            Pem::Bytes(bytes) => write!(f, "Bytes({} bytes)", bytes.len()),
        }
    }
}

/// The HTTPS part of the config (spec `https.options` and `https.listen`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Https {
    /// The certificate chain.
    pub cert: Option<Pem>,
    /// The private key.
    pub key: Option<Pem>,
    /// Where to listen.
    pub listen: Option<Listen>,
}

/// The default logger's setup (spec `logger`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoggerOptions {
    /// The lowest level recorded.
    pub level: Level,
    /// Coloured output: used only when standard output is a terminal and `NO_COLOR` is unset
    /// or empty, so log files and pipes never get escape codes.
    pub color: bool,
}

impl Default for LoggerOptions {
    fn default() -> Self {
        Self {
            level: Level::Info,
            color: false,
        }
    }
}

/// Limits that protect a server from slow or greedy clients.
///
/// A timeout that can be turned off is an `Option`: `None` is off. The connection's watcher
/// checks them a few times per timeout (every quarter of the shortest one, 10 ms at least) and
/// when one is due: a timeout fires within one such interval after it is due, never before.
/// `Duration::ZERO` fires at the first look, and `Duration::MAX` is as good as `None`; neither
/// panics nor spins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// How long a client may take to send a request's headers (default 10 s): its first bytes
    /// (and TLS handshake) on a new connection, and on HTTP/1 each request head while nothing
    /// else is in flight, so an idle HTTP/1 keep-alive connection is closed after it too.
    pub header_read_timeout: Option<Duration>,
    /// The most bytes of request headers accepted (default 64 KiB). HTTP/1 cannot go below
    /// 8 KiB (hyper's smallest read buffer); smaller values apply to HTTP/2 only.
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
    /// The most connections served at once, over all listeners; at the cap the server stops
    /// accepting (new clients wait in the kernel's backlog) and keeps serving the ones it has.
    /// `None` (the default): the process's open-file limit less 64, at least 16.
    pub max_connections: Option<usize>,
    /// The most connections one client address may have at once (IPv6: one /64); past it a new
    /// connection from that address is closed at once, so that one host cannot take every
    /// place under the cap. `None` (the default): a quarter of `max_connections`, at least 16.
    /// Behind a reverse proxy every client has the proxy's address: set it to the cap.
    pub max_connections_per_client: Option<usize>,
    /// How long a connection may go without a request before it is closed gracefully (HTTP/2:
    /// GOAWAY, even while it answers pings; default 60 s). An idle HTTP/1 keep-alive connection
    /// is closed sooner, by the header-read timeout. `None`: kept until the client closes it.
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
    /// `timeout`, or `Duration::MAX` (which never fires) when it is off.
    pub(crate) fn or_never(timeout: Option<Duration>) -> Duration {
        timeout.unwrap_or(Duration::MAX)
    }
}

/// The server's own settings: what only a running server or `attach_routing` reads.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    /// Where the HTTP server listens (spec `http.listen`); `None`: no plain HTTP listener.
    pub listen: Option<Listen>,
    /// The HTTPS server's TLS material and listener (spec `https`).
    pub https: Https,
    /// The default logger's setup (spec `logger`); `None`: no subscriber is installed.
    pub logger: Option<LoggerOptions>,
    /// Whether responses are compressed (gzip or brotli, by `Accept-Encoding`).
    pub compression: bool,
    /// Whether responses carry the request's id in `x-request-id` (default: yes). Turn it off
    /// where a proxy sets the header; the id still reaches the request's logger.
    pub request_id_echo: bool,
    /// Whether successful GET responses with a body in memory get a weak `ETag` over their
    /// bytes and a matching `If-None-Match` is answered with 304 (default: no; hashing every
    /// body costs a little on every response). Static files have their own `ETag`.
    pub etag: bool,
    /// Limits against slow or greedy clients.
    pub limits: ServerLimits,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            listen: None,
            https: Https::default(),
            logger: None,
            compression: false,
            request_id_echo: true,
            etag: false,
            limits: ServerLimits::default(),
        }
    }
}

/// The configuration of a server: the server's, the router's and the pipeline's settings.
/// Built with [`Config::builder`] (the facade's `create_config()`), or written field by field.
///
/// `Config::default()` is production mode with CORS not chosen (routing refuses to start until
/// it is) and no listener; [`Config::builder`] starts from it and reads `STRATA_MODE`.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The server's own settings.
    pub server: ServerSettings,
    /// The router's settings.
    pub router: RouterSettings,
    /// What every endpoint's stages are built with.
    pub pipeline: PipelineSettings,
}

impl From<RoutingConfig> for Config {
    /// The routing's settings with the server's defaults.
    fn from(routing: RoutingConfig) -> Self {
        Self {
            server: ServerSettings::default(),
            router: routing.router,
            pipeline: routing.pipeline,
        }
    }
}

impl AsRef<ServerSettings> for Config {
    fn as_ref(&self) -> &ServerSettings {
        &self.server
    }
}

impl AsRef<RouterSettings> for Config {
    fn as_ref(&self) -> &RouterSettings {
        &self.router
    }
}

impl AsRef<PipelineSettings> for Config {
    fn as_ref(&self) -> &PipelineSettings {
        &self.pipeline
    }
}

impl Config {
    /// A builder starting from the defaults: production mode unless `STRATA_MODE` names another
    /// (read now), 1 MiB body limit, the input sources of spec table 2.2, no listener.
    pub fn builder() -> ConfigBuilder {
        let mut config = Config::default();
        if let Some(mode) = Mode::from_env() {
            config.pipeline.mode = mode;
        }
        ConfigBuilder { config }
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
        /// from `level` up: installed when the server starts (or routing is attached) and only
        /// when the application has none; `color` only on a terminal and without `NO_COLOR`.
        /// Without this call Strata installs nothing: its events go to the application's
        /// subscriber.
        logger(level: Level, color: bool) =>
            config.server.logger = Some(LoggerOptions { level, color });
        /// Compresses responses (gzip or brotli, by `Accept-Encoding`).
        compression(enabled: bool) => config.server.compression = enabled;
        /// Echoes each request's id in the response's `x-request-id` (default: on). Turn it off
        /// where a proxy sets the header; the id still reaches the request's logger.
        request_id_echo(enabled: bool) => config.server.request_id_echo = enabled;
        /// Gives successful GET responses with a body in memory (JSON, text) a weak `ETag` over
        /// their bytes, and answers a matching `If-None-Match` with 304 and no body, as express
        /// does (default: off; hashing every body costs a little on every response). Static
        /// files have their own `ETag`.
        etag(enabled: bool) => config.server.etag = enabled;
        /// Sets the limits against slow or greedy clients.
        server_limits(limits: ServerLimits) => config.server.limits = limits;
        /// Turns CORS on (`true`: the default headers, `OPTIONS` answered) or off. It must be
        /// chosen: routing refuses to start otherwise.
        cors(enabled: bool) => config.router.cors = Some(Cors::from(enabled));
        /// Computes the CORS headers of each request with `f`; an empty map sends none.
        cors_with(f: impl Fn(&CorsRequest<'_>) -> HeaderMap + Send + Sync + 'static) =>
            config.router.cors = Some(Cors::with(f));
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
        /// 256 MiB), counted as bodies arrive: a request whose next chunk would go over it, or
        /// over its client address's share (a quarter), gets a 503 with `Retry-After` and the
        /// connection is closed. `None` turns the budget off. Behind a reverse proxy, give the
        /// proxy's address the whole budget: set `pipeline.body_budget` of the built
        /// configuration to `BodyBudget::new(n).per_client(n)` (see `BodyBudget`).
        body_budget(bytes: impl Into<Option<usize>>) =>
            config.pipeline.body_budget = bytes.into().map(BodyBudget::new);
        /// Sets the mode.
        mode(mode: Mode) => config.pipeline.mode = mode;
    }

    /// Places the application's own tower `layer` around each endpoint's work, after its body
    /// has been read ([`AfterBody`]): a timeout or a concurrency limit there counts neither
    /// uploads still arriving nor the time they take. (Layers given to `create_server_with`
    /// see every request from its head on.)
    ///
    /// ```
    /// use std::time::Duration;
    /// use strata_server::Config;
    /// use tower::ServiceBuilder;
    /// use tower::limit::GlobalConcurrencyLimitLayer;
    ///
    /// let config = Config::builder()
    ///     .cors(false)
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

    /// Serves HTTPS on `listen` with the certificate chain `cert` and private key `key`.
    pub fn https(mut self, cert: Pem, key: Pem, listen: impl Into<Listen>) -> Self {
        self.config.server.https = Https {
            cert: Some(cert),
            key: Some(key),
            listen: Some(listen.into()),
        };
        self
    }

    /// Computes the CORS headers of each request with an asynchronous `f`.
    pub fn cors_with_async<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(&CorsRequest<'_>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HeaderMap> + Send + 'static,
    {
        self.config.router.cors = Some(Cors::with_async(f));
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
    /// use strata_input::cookies::CookieKeys;
    /// use strata_server::Config;
    ///
    /// let keys = CookieKeys::new(["a random secret of at least 32 bytes"]).unwrap();
    /// let config = Config::builder().cors(false).cookie_keys(keys).build();
    /// assert!(config.pipeline.cookie_keys.is_some());
    /// ```
    pub fn cookie_keys(mut self, keys: CookieKeys) -> Self {
        self.config.pipeline.cookie_keys = Some(keys);
        self
    }

    /// Production mode (the default): internal error messages are hidden.
    pub fn production(self) -> Self {
        self.mode(Mode::Production)
    }

    /// Development mode: every error message, 5xx and panics included, reaches the client.
    /// For local work only.
    pub fn development(self) -> Self {
        self.mode(Mode::Development)
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
            .development()
            .cors(false)
            .listen(0)
            .etag(true)
            .request_id_echo(false)
            .build();
        assert_eq!(config.pipeline.body_limit, 1234);
        assert_eq!(config.pipeline.mode, Mode::Development);
        assert!(config.router.cors.as_ref().is_some_and(|c| !c.is_enabled()));
        assert_eq!(config.server.listen, Some(Listen::Port(0)));
        assert!(config.server.etag);
        assert!(!config.server.request_id_echo);
        assert!(!config.server.compression);
    }

    #[test]
    fn a_routing_config_gets_the_server_defaults() {
        let mut routing = RoutingConfig::new(true);
        routing.pipeline.body_limit = 7;
        let config = Config::from(routing);
        assert_eq!(config.pipeline.body_limit, 7);
        assert!(config.server.request_id_echo);
        assert_eq!(config.server.listen, None);
        assert_eq!(config.server.limits, ServerLimits::default());
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
