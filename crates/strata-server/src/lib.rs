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

mod activity;
mod app;
mod attach;
mod config;
mod connection;
mod deadline;
mod error;
mod etag;
mod layered;
mod logging;
mod request_id;
mod server;
#[cfg(feature = "tls")]
mod tls;

pub use app::{App, MaybeCompressed, MaybeCompressedFuture};
#[cfg(feature = "compression")]
pub use app::{COMPRESSION_THRESHOLD, CompressionPredicate};
pub use attach::{Attached, attach_routing};
pub use config::{
    Compression, Config, ConfigBuilder, ETags, Https, Listen, LogColor, LoggerOptions, Pem,
    RequestIds, ServerLimits, ServerSettings,
};
pub use deadline::{BodyDeadline, MinDataRate, ServerBody};
pub use error::ServerError;
pub use etag::{ETag, ETagFuture, ETagLayer};
pub use logging::install_default_subscriber;
pub use request_id::{RequestId, RequestIdLayer, X_REQUEST_ID};
pub use server::{
    AroundApp, CreateServer, Listener, ListeningServer, LocalAddr, NoLayers, Protocol, ServedApp,
    Server, ShutdownHandle, WithLayers, create_server,
};
