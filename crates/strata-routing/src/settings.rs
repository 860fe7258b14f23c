//! The settings routing reads, as plain values: its own ([`RouterSettings`]) and the ones it
//! builds every endpoint's stages with ([`PipelineSettings`]).
//!
//! A server's configuration (`strata_server::Config`, the facade's `create_config()`) holds
//! both beside the server's own settings and lends them to routing ([`AsRef`]); routing alone
//! takes a [`RoutingSettings`].
//!
//! ```
//! use strata_cors::Cors;
//! use strata_endpoint::PipelineSettings;
//! use strata_routing::RoutingSettings;
//!
//! let mut config = RoutingSettings::new(Cors::Enabled);
//! config.pipeline = PipelineSettings::default().body_limit(64 * 1024);
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
#[non_exhaustive]
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
    /// The defaults with `cors` chosen.
    pub fn new(cors: Cors) -> Self {
        Self {
            cors: Some(cors),
            ..Self::default()
        }
    }

    strata_core::setters! {
        /// Sets [`cors`](Self::cors).
        cors(cors: Cors) => cors = Some(cors);
        /// Sets [`wrong_method_behavior`](Self::wrong_method_behavior).
        wrong_method_behavior(behavior: WrongMethodBehavior) => wrong_method_behavior = behavior;
        /// Sets [`method_like_route_behavior`](Self::method_like_route_behavior).
        method_like_route_behavior(behavior: MethodLikeRouteBehavior) =>
            method_like_route_behavior = behavior;
        /// Sets [`error_handler`](Self::error_handler).
        error_handler(handler: Option<ErrorHandler>) => error_handler = handler;
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
#[non_exhaustive]
pub struct RoutingSettings {
    /// The router's settings.
    pub router: RouterSettings,
    /// The pipeline's settings.
    pub pipeline: PipelineSettings,
}

impl RoutingSettings {
    /// The router's and the pipeline's settings together.
    pub fn from_parts(router: RouterSettings, pipeline: PipelineSettings) -> Self {
        Self { router, pipeline }
    }

    /// The defaults with `cors` chosen.
    pub fn new(cors: Cors) -> Self {
        Self {
            router: RouterSettings::new(cors),
            pipeline: PipelineSettings::default(),
        }
    }
}

strata_core::as_ref_parts!(RoutingSettings {
    router: RouterSettings,
    pipeline: PipelineSettings
});
