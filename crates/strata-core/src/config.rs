//! [`Config`]: the options every stage reads, built once at startup.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use http::request::Parts;
use http::{HeaderMap, Method};

use crate::budget::{BodyBudget, DEFAULT_BODY_BUDGET};
use crate::endpoint::EndpointMeta;
use crate::input::InputSource;
use crate::logger::Logger;
use crate::result_handler::{ErrorHandler, ResultHandler};
use crate::upload::UploadLimits;

/// Development shows every error message; production hides the messages of 5xx errors and of
/// errors marked not exposed behind the status's reason phrase.
///
/// Production is the default, so that internal details (a database error's text, a panic
/// message) never reach clients unless development was chosen: with
/// [`ConfigBuilder::development`], or the environment variable `STRATA_MODE=development` read
/// when a builder is created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// Show every message.
    Development,
    /// Hide internal messages (the default).
    #[default]
    Production,
}

/// The environment variable choosing the mode when the code does not (`development` or
/// `production`).
pub const MODE_VARIABLE: &str = "STRATA_MODE";

impl Mode {
    /// The mode `STRATA_MODE` names, if it names one.
    pub fn from_env() -> Option<Self> {
        Self::from_name(&std::env::var(MODE_VARIABLE).ok()?)
    }

    /// `development` or `production` (surrounding spaces and case ignored).
    pub fn from_name(name: &str) -> Option<Self> {
        let name = name.trim();
        if name.eq_ignore_ascii_case("development") {
            Some(Self::Development)
        } else if name.eq_ignore_ascii_case("production") {
            Some(Self::Production)
        } else {
            None
        }
    }
}

/// The HTTP `QUERY` method: safe and idempotent like GET, with a body that says what to find
/// (express-zod-api routes it since version 29). `http` has no constant for it.
pub fn query_method() -> Method {
    // A valid token: `from_bytes` cannot fail here, and keeps short names inline (no heap).
    Method::from_bytes(b"QUERY").unwrap_or_default()
}

/// Whether `method` is `QUERY`.
pub fn is_query(method: &Method) -> bool {
    method.as_str() == "QUERY"
}

/// Which sources are merged into the input, per method (spec table 2.2).
///
/// HEAD uses GET's sources. Methods outside the six use body, query, params.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputSources {
    get: Vec<InputSource>,
    post: Vec<InputSource>,
    put: Vec<InputSource>,
    patch: Vec<InputSource>,
    delete: Vec<InputSource>,
    query: Vec<InputSource>,
}

const FALLBACK_SOURCES: &[InputSource] =
    &[InputSource::Body, InputSource::Query, InputSource::Params];

impl Default for InputSources {
    fn default() -> Self {
        use InputSource::{Body, Files, Params, Query};
        Self {
            get: vec![Query, Params],
            post: vec![Body, Params, Files],
            put: vec![Body, Params],
            patch: vec![Body, Params],
            delete: vec![Query, Params],
            // express-zod-api 29: the query string, then the body, then path parameters.
            query: vec![Query, Body, Params],
        }
    }
}

impl InputSources {
    /// The sources of `method`, in merge order (later ones win).
    ///
    /// ```
    /// use http::Method;
    /// use strata_core::{InputSource, InputSources};
    ///
    /// let sources = InputSources::default();
    /// assert_eq!(sources.for_method(&Method::HEAD), [InputSource::Query, InputSource::Params]);
    /// ```
    pub fn for_method(&self, method: &Method) -> &[InputSource] {
        match *method {
            Method::GET | Method::HEAD => &self.get,
            Method::POST => &self.post,
            Method::PUT => &self.put,
            Method::PATCH => &self.patch,
            Method::DELETE => &self.delete,
            ref other if is_query(other) => &self.query,
            _ => FALLBACK_SOURCES,
        }
    }

    /// Replaces the sources of `method`, one of GET, POST, PUT, PATCH, DELETE, QUERY, and
    /// returns `true`; other methods (HEAD follows GET) have no list of their own, and `false`
    /// is returned.
    pub fn set(&mut self, method: &Method, sources: impl Into<Vec<InputSource>>) -> bool {
        let slot = match *method {
            Method::GET => &mut self.get,
            Method::POST => &mut self.post,
            Method::PUT => &mut self.put,
            Method::PATCH => &mut self.patch,
            Method::DELETE => &mut self.delete,
            ref other if is_query(other) => &mut self.query,
            _ => return false,
        };
        *slot = sources.into();
        true
    }

    /// Whether the body is read for `method` (it is a source, directly or through files).
    pub fn reads_body(&self, method: &Method) -> bool {
        self.for_method(method)
            .iter()
            .any(|s| matches!(s, InputSource::Body | InputSource::Files))
    }
}

/// The default body limit: 1 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;
/// The default limit of parameters in a query string or form body.
pub const DEFAULT_MAX_FIELDS: usize = 1000;

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

impl Cors {
    /// Whether routing answers `OPTIONS` and lists it in `Allow`.
    pub fn is_enabled(&self) -> bool {
        !matches!(self, Cors::Disabled)
    }
}

/// The configuration shared by the stages of every endpoint and by routing.
///
/// Build it with [`Config::builder`] for the pipeline alone; a server's configuration
/// (`strata_server::ServerConfig`, the facade's `create_config()`) holds one and dereferences
/// to it.
#[derive(Debug, Clone)]
pub struct Config {
    // Shared by the stages of every endpoint built from this configuration.
    input_sources: Arc<InputSources>,
    body_limit: usize,
    max_fields: usize,
    mode: Mode,
    cors: Option<Cors>,
    wrong_method_behavior: WrongMethodBehavior,
    method_like_route_behavior: MethodLikeRouteBehavior,
    error_handler: Option<ErrorHandler>,
    upload: Option<UploadLimits>,
    body_budget: Arc<BodyBudget>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            input_sources: Arc::default(),
            body_limit: DEFAULT_BODY_LIMIT,
            max_fields: DEFAULT_MAX_FIELDS,
            mode: Mode::Production,
            cors: None,
            wrong_method_behavior: WrongMethodBehavior::default(),
            method_like_route_behavior: MethodLikeRouteBehavior::default(),
            error_handler: None,
            body_budget: BodyBudget::new(DEFAULT_BODY_BUDGET),
            upload: None,
        }
    }
}

impl Config {
    /// A builder starting from the defaults.
    pub fn builder() -> ConfigBuilder {
        let mut config = Config::default();
        if let Some(mode) = Mode::from_env() {
            config.mode = mode;
        }
        ConfigBuilder { config }
    }

    /// Input sources per method.
    pub fn input_sources(&self) -> &InputSources {
        &self.input_sources
    }

    /// Input sources per method, shared: the stages of every endpoint hold this one copy.
    pub fn shared_input_sources(&self) -> &Arc<InputSources> {
        &self.input_sources
    }

    /// The budget of request bodies held in memory at once, shared by everything built from
    /// this configuration (default 256 MiB).
    pub fn body_budget(&self) -> &Arc<BodyBudget> {
        &self.body_budget
    }

    /// The most body bytes read for one request.
    pub fn body_limit(&self) -> usize {
        self.body_limit
    }

    /// The limits of `multipart/form-data` bodies; `None` (the default) when uploads are off.
    pub fn upload(&self) -> Option<&UploadLimits> {
        self.upload.as_ref()
    }

    /// The most parameters accepted in a query string or a form body.
    pub fn max_fields(&self) -> usize {
        self.max_fields
    }

    /// Development or production.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The CORS behaviour, `None` when it was not chosen (routing refuses to start then).
    pub fn cors(&self) -> Option<&Cors> {
        self.cors.as_ref()
    }

    /// The answer to a known path with an unsupported method.
    pub fn wrong_method_behavior(&self) -> WrongMethodBehavior {
        self.wrong_method_behavior
    }

    /// How routing keys named after methods are read.
    pub fn method_like_route_behavior(&self) -> MethodLikeRouteBehavior {
        self.method_like_route_behavior
    }

    /// The result handler of errors outside endpoints (404, 405, bad path parameters); `None`
    /// (the default): the default envelope.
    pub fn error_handler(&self) -> Option<&ErrorHandler> {
        self.error_handler.as_ref()
    }
}

/// Builds a [`Config`].
///
/// ```
/// use http::Method;
/// use strata_core::{Config, InputSource, Mode};
///
/// let config = Config::builder()
///     .input_sources(&Method::GET, [InputSource::Headers, InputSource::Query, InputSource::Params])
///     .body_limit(64 * 1024)
///     .production()
///     .build();
/// assert_eq!(config.mode(), Mode::Production);
/// assert_eq!(config.body_limit(), 65536);
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct ConfigBuilder {
    config: Config,
}

impl ConfigBuilder {
    /// Replaces the input sources of one method (GET, POST, PUT, PATCH, DELETE or QUERY; HEAD
    /// follows GET; other methods are ignored).
    pub fn input_sources(mut self, method: &Method, sources: impl Into<Vec<InputSource>>) -> Self {
        Arc::make_mut(&mut self.config.input_sources).set(method, sources);
        self
    }

    /// Sets the body limit in bytes (default 1 MiB).
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.config.body_limit = bytes;
        self
    }

    /// Turns file uploads on with these limits (spec 2.3 `upload`): `multipart/form-data` bodies
    /// are then read, their text parts as a form and their files into the `files` input source
    /// (merged for POST by default). Without it such bodies are refused with 415.
    pub fn upload(mut self, limits: impl Into<UploadLimits>) -> Self {
        self.config.upload = Some(limits.into());
        self
    }

    /// Sets the budget of request bodies held in memory at once, over all requests (default
    /// 256 MiB): a request whose body would go over it gets a 503 with `Retry-After` before any
    /// of it is read.
    pub fn body_budget(mut self, bytes: usize) -> Self {
        self.config.body_budget = BodyBudget::new(bytes);
        self
    }

    /// Sets the limit of query or form parameters (default 1000).
    pub fn max_fields(mut self, fields: usize) -> Self {
        self.config.max_fields = fields;
        self
    }

    /// Sets the mode.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.config.mode = mode;
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

    /// Turns CORS on (`true`: the default headers, `OPTIONS` answered) or off.
    pub fn cors(mut self, enabled: bool) -> Self {
        self.config.cors = Some(if enabled {
            Cors::Enabled
        } else {
            Cors::Disabled
        });
        self
    }

    /// Computes the CORS headers of each request with `f`; an empty map sends none.
    pub fn cors_with(
        mut self,
        f: impl Fn(&CorsRequest<'_>) -> HeaderMap + Send + Sync + 'static,
    ) -> Self {
        self.config.cors = Some(Cors::Custom(CorsFn::Sync(Arc::new(f))));
        self
    }

    /// Computes the CORS headers of each request with an asynchronous `f`.
    pub fn cors_with_async<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(&CorsRequest<'_>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HeaderMap> + Send + 'static,
    {
        let boxed = move |request: &CorsRequest<'_>| -> CorsFuture { Box::pin(f(request)) };
        self.config.cors = Some(Cors::Custom(CorsFn::Async(Arc::new(boxed))));
        self
    }

    /// Sets the answer to a known path with an unsupported method (default 405).
    pub fn wrong_method_behavior(mut self, behavior: WrongMethodBehavior) -> Self {
        self.config.wrong_method_behavior = behavior;
        self
    }

    /// Sets how routing keys named after methods are read (default: as methods).
    pub fn method_like_route_behavior(mut self, behavior: MethodLikeRouteBehavior) -> Self {
        self.config.method_like_route_behavior = behavior;
        self
    }

    /// Formats errors that happen outside any endpoint (the router's 404 and 405, a malformed
    /// path parameter, a refused static path) with `handler`, as endpoints built with it
    /// format theirs (the spec's `errorHandler`): an application with its own envelope has it
    /// everywhere. Default: the default envelope.
    pub fn error_handler<R: ResultHandler>(mut self, handler: R) -> Self {
        self.config.error_handler = Some(ErrorHandler::new(handler));
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
    fn production_is_the_default_and_development_is_chosen() {
        assert_eq!(Config::default().mode(), Mode::Production);
        assert_eq!(Mode::default(), Mode::Production);
        assert_eq!(
            Config::builder().development().build().mode(),
            Mode::Development
        );
        assert_eq!(Mode::from_name(" Development\n"), Some(Mode::Development));
        assert_eq!(Mode::from_name("production"), Some(Mode::Production));
        assert_eq!(Mode::from_name("dev"), None);
    }

    #[test]
    fn only_the_five_methods_have_their_own_sources() {
        let mut sources = InputSources::default();
        assert!(sources.set(&Method::GET, [InputSource::Headers]));
        assert!(!sources.set(&Method::HEAD, [InputSource::Body]));
        assert!(!sources.set(&Method::OPTIONS, [InputSource::Body]));
        assert_eq!(sources.for_method(&Method::HEAD), [InputSource::Headers]);
        assert!(!sources.reads_body(&Method::GET));
        assert!(sources.reads_body(&Method::POST));
        let query = query_method();
        assert_eq!(
            sources.for_method(&query),
            [InputSource::Query, InputSource::Body, InputSource::Params]
        );
        assert!(sources.reads_body(&query));
        assert!(sources.set(&query, [InputSource::Body]));
        assert_eq!(sources.for_method(&query), [InputSource::Body]);
    }
}
