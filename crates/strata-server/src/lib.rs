//! Running a Strata routing: [`create_server`] (listeners, HTTP/1.1 and HTTP/2, TLS, graceful
//! shutdown) and [`attach_routing`] (a tower service for an existing app).
//!
//! Both run the same application service: each request gets an id (from `x-request-id` when
//! present and sane, generated otherwise) and a child logger carrying it, the id is echoed in
//! the response, responses are compressed when configured (gzip or brotli by
//! `Accept-Encoding`, above a size threshold), and the router does the rest.
//!
//! Slow clients are cut off: a connection must send its first bytes, and then its headers,
//! within the header-read timeout; headers are limited in size.
//!
//! # Modules by job
//!
//! - `config`: what a server is told (the [`Config`] and its builder);
//! - `server`: starting and stopping ([`create_server`], [`Server`], signals, the shutdown handle);
//! - `listen`: accepting connections (binding or adopting listeners, the caps on connections in
//!   all and per client address, the drain at shutdown);
//! - `connection`: serving and policing one connection (hyper's builder, the connection task, the
//!   watcher of its timeouts, the deadlines of its first bytes and its request bodies, the checks
//!   made on each request before the application sees it);
//! - `app`: the application stack every request runs through ([`App`]: request ids, `ETag`s,
//!   compression, the router; the application's own layers; [`attach_routing`]);
//! - `health`: the liveness and readiness probes ([`Health`]), answered ahead of the router;
//! - `metrics`: request metrics and their exposition ([`Metrics`]), answered ahead of the
//!   router;
//! - `logging` and `tls`: the default log subscriber, and TLS material into an acceptor;
//! - `traces` (the `otel` feature): requests' spans with OpenTelemetry (`Tracing`).
//!
//! # Example
//!
//! ```no_run
//! use strata_cors::Cors;
//! use strata_routing::Routing;
//! use strata_server::{Config, create_server};
//!
//! # async fn demo(routing: Routing) -> Result<(), strata_server::ServerError> {
//! let config = Config::builder().cors(Cors::Enabled).listen(8090).build();
//! let server = create_server(&config, &routing).await?;
//! println!("listening on {:?}", server.servers()[0].local_addr);
//! server.run().await; // until SIGINT/SIGTERM or the shutdown handle
//! # Ok(())
//! # }
//! ```

mod app;
mod config;
mod connection;
mod error;
mod health;
mod listen;
mod logging;
mod metrics;
mod server;
#[cfg(feature = "tls")]
mod tls;
#[cfg(feature = "otel")]
mod traces;

pub use app::attach::{Attached, attach_routing};
pub use app::etag::{ETag, ETagFuture, ETagLayer};
pub use app::request_id::{RequestId, RequestIdLayer, X_REQUEST_ID};
pub use app::{App, RouterStack, RouterStackFuture};
#[cfg(feature = "compression")]
pub use app::{COMPRESSION_THRESHOLD, CompressionPredicate};
pub use config::{
    Compression, Config, ConfigBuilder, ETags, Https, Listen, LogColor, LogFormat, LoggerOptions,
    Pem, RequestIds, ServerLimits, ServerSettings,
};
pub use connection::ServedApp;
pub use connection::deadline::{BodyDeadline, MinDataRate, ServerBody};
pub use error::ServerError;
pub use health::{
    DEFAULT_CHECK_TIMEOUT, DEFAULT_LIVE_PATH, DEFAULT_READY_PATH, Health, HealthFuture,
};
pub use logging::install_default_subscriber;
pub use metrics::{DEFAULT_METRICS_PATH, Metrics, MetricsFuture, UNMATCHED_ROUTE};
pub use server::{
    AroundApp, CreateServer, Listener, ListeningServer, LocalAddr, NoLayers, Protocol, Server,
    ShutdownHandle, WithLayers, create_server,
};
#[cfg(feature = "otel")]
pub use traces::Tracing;
