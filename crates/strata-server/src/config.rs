//! [`ServerConfig`]: what a running server needs beyond the pipeline's [`Config`]: listeners,
//! TLS material, limits against slow or greedy clients, the default logger, compression,
//! request-id echo and `ETag`s.
//!
//! One builder sets both: [`ServerConfig::builder`] has every setter of
//! [`ConfigBuilder`] as well, and a [`ServerConfig`] dereferences to its [`Config`], so it is
//! passed wherever a `&Config` is expected (endpoints, routing, documentation).
//!
//! ```
//! use strata_core::Mode;
//! use strata_server::ServerConfig;
//!
//! let config = ServerConfig::builder()
//!     .cors(true) // a pipeline setting, kept in the Config
//!     .production()
//!     .listen(8090) // a server setting
//!     .compression(true)
//!     .build();
//! assert_eq!(config.mode(), Mode::Production); // read through the Config
//! assert!(config.compression());
//! assert!(config.cors().is_some());
//! ```

use std::fmt;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::ops::Deref;
use std::path::PathBuf;
use std::time::Duration;

use http::{HeaderMap, Method};
use strata_core::upload::UploadLimits;
use strata_core::{
    Config, ConfigBuilder, CorsRequest, InputSource, Level, MethodLikeRouteBehavior, Mode,
    ResultHandler, WrongMethodBehavior,
};

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
    /// Colored output.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// How long a client may take to send a request's headers (default 10 s): its first bytes
    /// on a new connection, and on HTTP/1 each request head while nothing else is in flight,
    /// so an idle HTTP/1 keep-alive connection is closed after it too. Checked by the
    /// connection's watcher a few times per timeout: it fires up to a quarter of the shortest
    /// connection timeout late.
    pub header_read_timeout: Duration,
    /// The most bytes of request headers accepted (default 64 KiB). HTTP/1 cannot go below
    /// 8 KiB (hyper's smallest read buffer); smaller values apply to HTTP/2 only.
    pub max_header_bytes: usize,
    /// How long graceful shutdown waits for requests in flight (default 10 s).
    pub shutdown_timeout: Duration,
    /// How long a request body may pause between two pieces (default 10 s); then the request
    /// gets a 408 and its connection is closed.
    pub body_idle_timeout: Duration,
    /// How long a whole request body may take to arrive (default 60 s; at the default 1 MiB
    /// body limit, about 17 KiB/s); then the request gets a 408 and its connection is closed.
    pub body_read_timeout: Duration,
    /// The most connections served at once, over all listeners; at the cap the server stops
    /// accepting (new clients wait in the kernel's backlog) and keeps serving the ones it has.
    /// `None` (the default): the process's open-file limit less 64, at least 16.
    pub max_connections: Option<usize>,
    /// How long a connection may go without a request before it is closed gracefully (HTTP/2:
    /// GOAWAY, even while it answers pings; default 60 s). An idle HTTP/1 keep-alive connection
    /// is closed sooner, by the header-read timeout.
    pub idle_timeout: Duration,
    /// How long responses may wait without a byte written (a client that does not read, or
    /// gives no HTTP/2 window) before the connection is dropped (default 30 s).
    pub write_timeout: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            max_header_bytes: 64 * 1024,
            shutdown_timeout: Duration::from_secs(10),
            body_idle_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(60),
            max_connections: None,
            idle_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(30),
        }
    }
}

/// The configuration of a server: the pipeline's [`Config`] (which it dereferences to) and the
/// server's own settings. Built with [`ServerConfig::builder`] (the facade's `create_config()`),
/// or from a [`Config`] with the server defaults (`ServerConfig::from(config)`).
#[derive(Debug, Clone)]
pub struct ServerConfig {
    app: Config,
    server: Settings,
}

/// The server's own settings.
#[derive(Debug, Clone)]
struct Settings {
    listen: Option<Listen>,
    https: Https,
    logger: Option<LoggerOptions>,
    compression: bool,
    request_id_echo: bool,
    etag: bool,
    server_limits: ServerLimits,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            listen: None,
            https: Https::default(),
            logger: None,
            compression: false,
            request_id_echo: true,
            etag: false,
            server_limits: ServerLimits::default(),
        }
    }
}

impl From<Config> for ServerConfig {
    fn from(app: Config) -> Self {
        Self {
            app,
            server: Settings::default(),
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self::from(Config::default())
    }
}

impl Deref for ServerConfig {
    type Target = Config;

    fn deref(&self) -> &Config {
        &self.app
    }
}

impl AsRef<Config> for ServerConfig {
    fn as_ref(&self) -> &Config {
        &self.app
    }
}

impl ServerConfig {
    /// A builder starting from the defaults (the pipeline's as [`Config::builder`] gives them:
    /// production mode unless `STRATA_MODE` names another).
    pub fn builder() -> ServerConfigBuilder {
        ServerConfigBuilder {
            app: Config::builder(),
            server: Settings::default(),
        }
    }

    /// The pipeline's configuration.
    pub fn app(&self) -> &Config {
        &self.app
    }

    /// Where the HTTP server listens.
    pub fn listen(&self) -> Option<&Listen> {
        self.server.listen.as_ref()
    }

    /// The HTTPS server's TLS material and listener.
    pub fn https(&self) -> &Https {
        &self.server.https
    }

    /// The default logger's setup, when configured.
    pub fn logger(&self) -> Option<&LoggerOptions> {
        self.server.logger.as_ref()
    }

    /// Whether responses are compressed.
    pub fn compression(&self) -> bool {
        self.server.compression
    }

    /// Whether responses carry the request's id in `x-request-id` (default: yes).
    pub fn request_id_echo(&self) -> bool {
        self.server.request_id_echo
    }

    /// Whether successful GET responses carry a weak `ETag` and `If-None-Match` is answered
    /// with 304 (default: no).
    pub fn etag(&self) -> bool {
        self.server.etag
    }

    /// Limits against slow or greedy clients.
    pub fn server_limits(&self) -> &ServerLimits {
        &self.server.server_limits
    }
}

/// Builds a [`ServerConfig`]: the server's setters, and every setter of [`ConfigBuilder`]
/// (documented there) for the pipeline's part.
#[derive(Debug, Clone)]
#[must_use]
pub struct ServerConfigBuilder {
    app: ConfigBuilder,
    server: Settings,
}

impl From<ConfigBuilder> for ServerConfigBuilder {
    fn from(app: ConfigBuilder) -> Self {
        Self {
            app,
            server: Settings::default(),
        }
    }
}

/// Setters handed to the pipeline's [`ConfigBuilder`], so that one chain sets everything.
macro_rules! pipeline_setters {
    ($($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, $($arg: $ty),*) -> Self {
                self.app = self.app.$name($($arg),*);
                self
            }
        )*
    };
}

impl ServerConfigBuilder {
    pipeline_setters! {
        /// See [`ConfigBuilder::input_sources`].
        input_sources(method: &Method, sources: impl Into<Vec<InputSource>>);
        /// See [`ConfigBuilder::body_limit`].
        body_limit(bytes: usize);
        /// See [`ConfigBuilder::upload`].
        upload(limits: impl Into<UploadLimits>);
        /// See [`ConfigBuilder::body_budget`].
        body_budget(bytes: usize);
        /// See [`ConfigBuilder::max_fields`].
        max_fields(fields: usize);
        /// See [`ConfigBuilder::mode`].
        mode(mode: Mode);
        /// See [`ConfigBuilder::production`].
        production();
        /// See [`ConfigBuilder::development`].
        development();
        /// See [`ConfigBuilder::cors`].
        cors(enabled: bool);
        /// See [`ConfigBuilder::cors_with`].
        cors_with(f: impl Fn(&CorsRequest<'_>) -> HeaderMap + Send + Sync + 'static);
        /// See [`ConfigBuilder::wrong_method_behavior`].
        wrong_method_behavior(behavior: WrongMethodBehavior);
        /// See [`ConfigBuilder::method_like_route_behavior`].
        method_like_route_behavior(behavior: MethodLikeRouteBehavior);
        /// See [`ConfigBuilder::error_handler`].
        error_handler(handler: impl ResultHandler);
    }

    /// See [`ConfigBuilder::cors_with_async`].
    pub fn cors_with_async<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(&CorsRequest<'_>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HeaderMap> + Send + 'static,
    {
        self.app = self.app.cors_with_async(f);
        self
    }

    /// Serves HTTP on `listen`: a port, a socket address, or `Listen::Unix(path)`.
    pub fn listen(mut self, listen: impl Into<Listen>) -> Self {
        self.server.listen = Some(listen.into());
        self
    }

    /// Serves HTTPS on `listen` with the certificate chain `cert` and private key `key`.
    pub fn https(mut self, cert: Pem, key: Pem, listen: impl Into<Listen>) -> Self {
        self.server.https = Https {
            cert: Some(cert),
            key: Some(key),
            listen: Some(listen.into()),
        };
        self
    }

    /// Sets the HTTPS part field by field (checked when the server starts).
    pub fn https_options(mut self, https: Https) -> Self {
        self.server.https = https;
        self
    }

    /// Sets up the default logger (installed only when the application has none).
    pub fn logger(mut self, level: Level, color: bool) -> Self {
        self.server.logger = Some(LoggerOptions { level, color });
        self
    }

    /// Compresses responses (gzip or brotli, by `Accept-Encoding`).
    pub fn compression(mut self, enabled: bool) -> Self {
        self.server.compression = enabled;
        self
    }

    /// Echoes each request's id in the response's `x-request-id` (default: on). Turn it off
    /// where a proxy sets the header; the id still reaches the request's logger.
    pub fn request_id_echo(mut self, enabled: bool) -> Self {
        self.server.request_id_echo = enabled;
        self
    }

    /// Gives successful GET responses with a body in memory (JSON, text) a weak `ETag` over
    /// their bytes, and answers a matching `If-None-Match` with 304 and no body, as express
    /// does (default: off; hashing every body costs a little on every response). Static files
    /// have their own `ETag`.
    pub fn etag(mut self, enabled: bool) -> Self {
        self.server.etag = enabled;
        self
    }

    /// Sets the limits against slow or greedy clients.
    pub fn server_limits(mut self, limits: ServerLimits) -> Self {
        self.server.server_limits = limits;
        self
    }

    /// The configuration.
    pub fn build(self) -> ServerConfig {
        ServerConfig {
            app: self.app.build(),
            server: self.server,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_chain_sets_pipeline_and_server_settings() {
        let config = ServerConfig::builder()
            .body_limit(1234)
            .development()
            .listen(0)
            .etag(true)
            .request_id_echo(false)
            .build();
        assert_eq!(config.body_limit(), 1234);
        assert_eq!(config.app().mode(), Mode::Development);
        assert_eq!(config.listen(), Some(&Listen::Port(0)));
        assert!(config.etag());
        assert!(!config.request_id_echo());
        assert!(!config.compression());
    }

    #[test]
    fn a_pipeline_config_gets_the_server_defaults() {
        let config = ServerConfig::from(Config::builder().body_limit(7).build());
        assert_eq!(config.body_limit(), 7);
        assert!(config.request_id_echo());
        assert_eq!(config.listen(), None);
        assert_eq!(config.server_limits(), &ServerLimits::default());
    }
}
