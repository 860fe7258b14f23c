//! The settings routing reads, as plain values: its own ([`RouterSettings`]) and the ones it
//! builds every endpoint's stages with ([`PipelineSettings`]).
//!
//! A server's configuration (`strata_server::Config`, the facade's `create_config()`) holds
//! both beside the server's own settings and lends them to routing ([`AsRef`]); routing alone
//! takes a [`RoutingConfig`].
//!
//! ```
//! use strata_routing::{Cors, PipelineSettings, RouterSettings, RoutingConfig};
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

use std::fmt;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use strata_combine::CombineLayer;
use strata_input::cookies::CookieKeys;

use http::HeaderMap;
use http::request::Parts;
use strata_core::{ErrorHandler, Logger, Mode};
use strata_input::InputSources;
use strata_parse::{
    BodyBudget, DEFAULT_BODY_BUDGET, DEFAULT_BODY_LIMIT, DEFAULT_MAX_FIELDS, ParseLayer,
};
use strata_upload::UploadLimits;

use crate::after_body::AfterBody;
use crate::endpoint::EndpointMeta;

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

/// What a CORS function is given for one request.
#[derive(Debug)]
pub struct CorsRequest<'a> {
    /// The headers `cors: true` would send for this request.
    pub default_headers: &'a HeaderMap,
    /// The request.
    pub request: &'a Parts,
    /// The endpoint the request is routed to, if any.
    pub endpoint: Option<&'a EndpointMeta>,
    /// The request's logger.
    pub logger: &'a Logger,
}

/// The future of an asynchronous CORS function.
pub type CorsFuture = Pin<Box<dyn Future<Output = HeaderMap> + Send>>;

type SyncCorsFn = dyn Fn(&CorsRequest<'_>) -> HeaderMap + Send + Sync;
type AsyncCorsFn = dyn Fn(&CorsRequest<'_>) -> CorsFuture + Send + Sync;

/// Cross-origin behaviour (spec section 6a). It must be chosen explicitly.
#[derive(Clone)]
pub enum Cors {
    /// No CORS headers; `OPTIONS` is an unsupported method like any other.
    Disabled,
    /// The default headers on every response, and `OPTIONS` answered with 200.
    Enabled,
    /// Headers computed per request by a function; an empty map sends none.
    Custom(CorsFn),
}

/// A function computing the CORS headers of a request.
#[derive(Clone)]
pub enum CorsFn {
    /// Answers at once.
    Sync(Arc<SyncCorsFn>),
    /// Answers with a future. It runs synchronously first with borrowed request data: copy what
    /// the future needs.
    Async(Arc<AsyncCorsFn>),
}

impl fmt::Debug for Cors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cors::Disabled => f.write_str("Disabled"),
            Cors::Enabled => f.write_str("Enabled"),
            Cors::Custom(CorsFn::Sync(_)) => f.write_str("Custom(sync fn)"),
            Cors::Custom(CorsFn::Async(_)) => f.write_str("Custom(async fn)"),
        }
    }
}

impl From<bool> for Cors {
    /// `true`: [`Cors::Enabled`]; `false`: [`Cors::Disabled`].
    fn from(enabled: bool) -> Self {
        if enabled {
            Cors::Enabled
        } else {
            Cors::Disabled
        }
    }
}

impl Cors {
    /// Whether routing answers `OPTIONS` and lists it in `Allow`.
    pub fn is_enabled(&self) -> bool {
        !matches!(self, Cors::Disabled)
    }

    /// Headers computed by `f` for each request; an empty map sends none.
    pub fn with(f: impl Fn(&CorsRequest<'_>) -> HeaderMap + Send + Sync + 'static) -> Self {
        Cors::Custom(CorsFn::Sync(Arc::new(f)))
    }

    /// Headers computed by an asynchronous `f` for each request.
    pub fn with_async<F, Fut>(f: F) -> Self
    where
        F: Fn(&CorsRequest<'_>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HeaderMap> + Send + 'static,
    {
        let boxed = move |request: &CorsRequest<'_>| -> CorsFuture { Box::pin(f(request)) };
        Cors::Custom(CorsFn::Async(Arc::new(boxed)))
    }
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

/// What every endpoint's stages are built with: the mode, the input sources, the body limits,
/// the body budget and uploads. Routing gives it to each endpoint once, at startup.
#[derive(Debug, Clone)]
pub struct PipelineSettings {
    /// Development shows every error message; production (the default) hides internal ones.
    pub mode: Mode,
    /// The sources merged into the input, per method (spec table 2.2).
    pub input_sources: InputSources,
    /// The most body bytes read for one request (default 1 MiB); a larger body is a 413.
    pub body_limit: usize,
    /// The most parameters in a query string or a form body (default 1000); more is a 400.
    pub max_fields: usize,
    /// Bytes of request bodies held in memory at once, over all requests (default 256 MiB, of
    /// which one client address may hold a quarter; a handle, shared by clones), counted as
    /// bodies arrive: a request whose next chunk would go over it gets a 503 with
    /// `Retry-After` and a closed connection. `None`: no such budget.
    pub body_budget: Option<BodyBudget>,
    /// File uploads (spec 2.3 `upload`): `multipart/form-data` bodies are read within these
    /// limits, their text parts as a form and their files into the `files` source. `None` (the
    /// default): uploads are off and such bodies are refused with 415.
    pub uploads: Option<UploadLimits>,
    /// The application's own tower layers around each endpoint's work, after its body has
    /// been read ([`AfterBody`]): a timeout or a concurrency limit there does not count
    /// uploads still arriving. `None` (the default): none.
    pub after_body: Option<AfterBody>,
    /// The keys signed cookies are verified with ([`InputSource::SignedCookies`]); the first
    /// also signs what the cookie middleware sets. `None` (the default): no signed cookies.
    ///
    /// [`InputSource::SignedCookies`]: strata_input::InputSource::SignedCookies
    pub cookie_keys: Option<CookieKeys>,
}

impl Default for PipelineSettings {
    fn default() -> Self {
        Self {
            mode: Mode::Production,
            input_sources: InputSources::default(),
            body_limit: DEFAULT_BODY_LIMIT,
            max_fields: DEFAULT_MAX_FIELDS,
            body_budget: Some(BodyBudget::new(DEFAULT_BODY_BUDGET)),
            uploads: None,
            after_body: None,
            cookie_keys: None,
        }
    }
}

impl PipelineSettings {
    /// The combine stage as these settings say: the sources, and the keys of signed cookies.
    pub fn combine_layer(&self) -> CombineLayer {
        let combine = CombineLayer::with_sources(self.input_sources.clone());
        match &self.cookie_keys {
            Some(keys) => combine.cookie_keys(keys.clone()),
            None => combine,
        }
    }

    /// The parse stage as these settings say: the limits, the sources, the shared body budget
    /// and uploads (what the facade's endpoints and the testing crate build it with).
    pub fn parse_layer(&self) -> ParseLayer {
        let mut parse = ParseLayer::new()
            .body_limit(self.body_limit)
            .max_fields(self.max_fields)
            .input_sources(self.input_sources.clone());
        if let Some(budget) = &self.body_budget {
            parse = parse.body_budget(budget.clone());
        }
        if let Some(limits) = &self.uploads {
            parse = parse.upload(limits.clone());
        }
        parse
    }
}

impl AsRef<PipelineSettings> for PipelineSettings {
    fn as_ref(&self) -> &PipelineSettings {
        self
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
