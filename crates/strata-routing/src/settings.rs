//! The settings routing reads, as plain values: its own ([`RouterSettings`]) and the ones it
//! builds every endpoint's stages with ([`PipelineSettings`]).
//!
//! A server's configuration (`strata_server::Config`, the facade's `create_config()`) holds
//! both beside the server's own settings and lends them to routing ([`AsRef`]); routing alone
//! takes a [`RoutingConfig`].
//!
//! ```
//! use strata_cors::Cors;
//! use strata_endpoint::PipelineSettings;
//! use strata_routing::{RouterSettings, RoutingConfig};
//!
//! let config = RoutingConfig {
//!     router: RouterSettings::new(Cors::Enabled),
//!     pipeline: PipelineSettings {
//!         body_limit: 64 * 1024,
//!         ..PipelineSettings::default()
//!     },
//! };
//! assert!(config.router.cors.as_ref().is_some_and(Cors::is_enabled));
//! ```

use strata_core::ErrorHandler;
use strata_cors::Cors;
use strata_endpoint::PipelineSettings;

/// The answer to a request for a known path with a method it does not serve.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WrongMethodBehavior {
    /// 405 with an `Allow` header (the default).
    #[default]
    MethodNotAllowed,
    /// 404, as for an unknown path.
    NotFound,
}

/// How routing keys named `get`, `post`, `put`, `patch`, `delete` are read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MethodLikeRouteBehavior {
    /// As the method of the parent path, when they hold an endpoint (the default).
    #[default]
    Method,
    /// As ordinary path segments (`/user/get`).
    Path,
}

/// The router's own settings: CORS, the answers to unsupported methods, how method-like keys
/// are read, and the result handler of errors outside endpoints.
#[derive(Debug, Clone, Default)]
pub struct RouterSettings {
    /// The CORS behaviour; `None` (the default) when not chosen, and routing then refuses to
    /// start ([`RoutingError::CorsNotConfigured`](crate::RoutingError::CorsNotConfigured)).
    pub cors: Option<Cors>,
    /// The answer to a known path with an unsupported method (default 405).
    pub wrong_method_behavior: WrongMethodBehavior,
    /// How routing keys named after methods are read (default: as methods).
    pub method_like_route_behavior: MethodLikeRouteBehavior,
    /// The result handler of errors outside endpoints: the router's 404 and 405, a malformed
    /// path parameter, a refused static path, and with a server its own 400 (`Host`) and the
    /// errors of the application's own layers (the spec's `errorHandler`); `None` (the
    /// default): the default envelope.
    pub error_handler: Option<ErrorHandler>,
}

impl RouterSettings {
    /// The defaults with `cors` chosen (a `bool` or a [`Cors`]).
    pub fn new(cors: impl Into<Cors>) -> Self {
        Self {
            cors: Some(cors.into()),
            ..Self::default()
        }
    }
}

impl AsRef<RouterSettings> for RouterSettings {
    fn as_ref(&self) -> &RouterSettings {
        self
    }
}

/// The router's and the pipeline's settings together: what [`Router::new`](crate::Router::new)
/// and API descriptions read when no server is involved. A server's configuration lends the
/// same two parts.
#[derive(Debug, Clone, Default)]
pub struct RoutingConfig {
    /// The router's settings.
    pub router: RouterSettings,
    /// The pipeline's settings.
    pub pipeline: PipelineSettings,
}

impl RoutingConfig {
    /// The defaults with `cors` chosen (a `bool` or a [`Cors`]).
    pub fn new(cors: impl Into<Cors>) -> Self {
        Self {
            router: RouterSettings::new(cors),
            pipeline: PipelineSettings::default(),
        }
    }
}

impl AsRef<RouterSettings> for RoutingConfig {
    fn as_ref(&self) -> &RouterSettings {
        &self.router
    }
}

impl AsRef<PipelineSettings> for RoutingConfig {
    fn as_ref(&self) -> &PipelineSettings {
        &self.pipeline
    }
}
