//! Strata: typed, validated JSON APIs as a stack of tower layers.
//!
//! Declare endpoints with an input type, an output type and an async handler; attach middleware
//! that add typed context; get a plain tower `Service<http::Request<B>>` per endpoint. Every
//! request goes through seven stages, each its own crate and `tower::Layer`:
//!
//! | stage | crate | layer |
//! |---|---|---|
//! | parse | [`parse`] | [`ParseLayer`](parse::ParseLayer) |
//! | combine | [`combine`] | [`CombineLayer`](combine::CombineLayer) |
//! | middleware | [`middleware`] | [`MiddlewareLayer`](middleware::MiddlewareLayer) |
//! | validate | [`validate`] | [`ValidateLayer`](validate::ValidateLayer) |
//! | handle | [`handler`] | [`HandlerService`](handler::HandlerService) |
//! | output check | [`output`] | [`OutputLayer`](output::OutputLayer) |
//! | format | [`format`](mod@format) | [`FormatLayer`](format::FormatLayer) |
//!
//! # Example
//!
//! ```
//! use http::Request;
//! use http_body_util::BodyExt;
//! use strata::prelude::*;
//! use tower::ServiceExt;
//!
//! #[strata::model(input)]
//! struct HelloInput {
//!     #[garde(length(chars, min = 1))]
//!     name: Option<String>,
//! }
//!
//! #[strata::model(output)]
//! struct HelloOutput {
//!     greetings: String,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let hello = default_endpoints_factory()
//!     .get()
//!     .tag("greetings")
//!     .short_description("Says hello")
//!     .handler(async |input: HelloInput, logger: Logger| {
//!         logger.debug("greeting");
//!         let name = input.name.as_deref().unwrap_or("World");
//!         Ok(HelloOutput { greetings: format!("Hello, {name}") })
//!     });
//!
//! let request = Request::get("/v1/hello?name=Ada").body(String::new()).unwrap();
//! let response = hello.service().oneshot(request).await.unwrap();
//! let body = response.into_body().collect().await.unwrap().to_bytes();
//! assert_eq!(body, r#"{"status":"success","data":{"greetings":"Hello, Ada"}}"#);
//! # }
//! ```

mod factory;

pub use factory::{
    EndpointBuilder, EndpointsFactory, InputType, OutputType, Returns, StateFactory,
    default_endpoints_factory,
};
pub use strata_core::{
    ApiError, ApiResult, BoxError, Ctx, DeclaredError, DefaultResultHandler, ErrorHandler,
    ErrorKind, Events, Get, HCons, HNil, IncomingBody, Level, Logger, Mode, Operation, Output,
    PathParams, RequestBody, RequestInfo, ResponseBody, ResponseDescription, ResponseHeader,
    ResultHandler, Security, Validated, http_error,
};
pub use strata_decode::{Decoder, not_null};
pub use strata_handler::Never;
pub use strata_input::{
    Input, InputSource, InputSources, InputValue, Parsed, ParsedBody, Query, RawBody, Staged,
    TextValue, UploadedFile,
};
pub use strata_middleware::{Middleware, MiddlewareChain};
pub use strata_output::{Binary, FileResponse, HandlerOutput, Reply, StreamResponse};
pub use strata_upload::{MoveError, MultipartForm, UploadLimits, UploadedFileExt};

/// The `http` crate Strata is built on (`StatusCode`, `HeaderValue`, `header::*`), so that an
/// application needs no dependency of its own on it.
pub use http;
/// Caching: a `Cache-Control` policy per factory or per response, `ETag` and `Last-Modified`
/// set by the handler, conditional requests answered 304, `Vary` (feature `cache`).
#[cfg(feature = "cache")]
pub use strata_cache as cache;
/// The typed Rust client: calls the [`Operation`]s a server implements, with their own types,
/// over any tower service (feature `client`).
#[cfg(feature = "client")]
pub use strata_client as client;
/// Stage 2: combine input sources.
pub use strata_combine as combine;
/// Cookies: the cookie middleware ([`cookies::CookieMiddleware`], `Cookies` in the context),
/// signed-cookie keys ([`cookies::CookieKeys`], for `create_config().cookie_keys(..)`).
pub use strata_cookies as cookies;
/// The shared vocabulary ([`strata_core`]).
pub use strata_core as core;
pub use strata_cors::{Cors, CorsRequest};
/// How values are checked: the decoder every checking stage uses ([`strata_decode`]).
pub use strata_decode as decode;
pub use strata_endpoint::{
    AfterBody, AnyBody, Endpoint, EndpointFuture, EndpointMeta, EndpointService, PipelineSettings,
    SharedService,
};
/// Server-sent events: typed events, an emitter, keep-alives (feature `events`).
#[cfg(feature = "events")]
pub use strata_events as events;
#[cfg(feature = "events")]
pub use strata_events::{EmitError, Emitter, EventStream, EventStreamOptions};
/// Stage 7: result handlers and the format layer.
pub use strata_format as format;
/// Stage 5: handlers.
pub use strata_handler as handler;
/// The merged input: its model, text decoding and deserializer ([`strata_input`]).
pub use strata_input as input;
/// Stage 3: middleware.
pub use strata_middleware as middleware;
/// API descriptions: an OpenAPI 3.2 (or 3.1) document from a routing, routes serving it
/// (feature `openapi`).
#[cfg(feature = "openapi")]
pub use strata_openapi as openapi;
/// Stage 6: output checks.
pub use strata_output as output;
/// Pagination: offset and cursor page inputs and outputs.
pub use strata_paginate as paginate;
/// Stage 1: parsing.
pub use strata_parse as parse;
/// Rate limits: a GCRA middleware keyed by client address, credential or function, with
/// `429`, `Retry-After` and the IETF `RateLimit` headers (feature `rate-limit`).
#[cfg(feature = "rate-limit")]
pub use strata_ratelimit as ratelimit;
/// The rate limiter's Redis store: replicas behind a load balancer share each client's budget
/// (feature `redis`, off by default).
#[cfg(feature = "redis")]
pub use strata_redis as redis;
/// Routing: the tree, the trie, method dispatch, CORS, static files.
pub use strata_routing as routing;
pub use strata_routing::{
    MethodLikeRouteBehavior, Nest, Route, Router, RouterSettings, Routing, RoutingConfig,
    RoutingError, WrongMethodBehavior, routing,
};
/// Running a routing: `create_server`, `attach_routing`.
pub use strata_server as server;
pub use strata_server::{
    Attached, Config, ConfigBuilder, ETagLayer, Https, Listen, ListeningServer, LocalAddr,
    LoggerOptions, MinDataRate, Pem, Server, ServerBody, ServerError, ServerLimits, ServerSettings,
    ShutdownHandle, attach_routing, create_server, create_server_with,
};
pub use strata_static::{Dotfiles, ServeStatic, StaticOptions};
/// Test utilities: `test_endpoint`, `test_middleware` (feature `testing`).
#[cfg(feature = "testing")]
pub use strata_testing as testing;
/// The generated TypeScript client: typed requests and responses, `provide` and `hasMore`
/// (feature `typescript`).
#[cfg(feature = "typescript")]
pub use strata_typescript as typescript;
/// File uploads: multipart reading with limits, [`UploadedFile`], [`MultipartForm`].
pub use strata_upload as upload;
/// Stage 4: input validation.
pub use strata_validate as validate;

/// Starts a [`ConfigBuilder`] with the defaults: production mode (or the one `STRATA_MODE`
/// names), 1 MiB body limit, the input sources of spec table 2.2, CORS not chosen yet, no
/// listener. One chain sets the server's, the router's and the pipeline's settings; the
/// [`Config`] it builds is given whole to everything that reads a configuration.
///
/// ```
/// use strata::{InputSource, Mode, create_config};
///
/// let config = create_config()
///     .input_sources(&http::Method::GET, [InputSource::Query, InputSource::Params, InputSource::Headers])
///     .production()
///     .cors(true)
///     .build();
/// assert_eq!(config.pipeline.mode, Mode::Production);
/// ```
pub fn create_config() -> ConfigBuilder {
    Config::builder()
}

/// Everything an input, output or event type needs, in one attribute: serde's derives, garde's
/// `Validate` and schemars' `JsonSchema`, pointed at the versions Strata is built with (your
/// crate needs `garde` 0.23 in its manifest, since garde's derive names it; not serde or
/// schemars).
///
/// - `#[strata::model]` derives `Serialize` and `Deserialize`; `#[strata::model(input)]` only
///   `Deserialize`, `#[strata::model(output)]` only `Serialize` (a type holding something
///   that cannot be read back).
/// - Fields without a rule are not checked beyond their type (`#[garde(allow_unvalidated)]`
///   is implied): text, numbers, booleans and collections of those need nothing. A field of
///   another type, a nested model most likely, must say what it wants, `#[garde(dive)]` to
///   check that type's rules or `#[garde(skip)]`: without it the rules would go unchecked,
///   silently, so the attribute refuses it with that message.
/// - Rules keep garde's syntax (`#[garde(length(min = 1))]`); `#[serde(..)]` and
///   `#[schemars(..)]` attributes work as with the derives.
/// - `#[strata(not_null)]` on an `Option<T>` field: it may be absent (`None`) but not `null`
///   (a 400 naming it); documented as `T`, not required.
/// - `#[strata(coerce)]` on a number or `bool` field (or an `Option` of one): read from its
///   JSON value or from its text (`"42"`, `"true"`; not `"yes"`, `""` or `"+1"`), as zod's
///   `z.coerce`; documented as either ([`decode::coerce`]: one deserializer, one schema).
/// - A `garde` of another version than Strata's is named as such, once.
///
/// ```
/// #[strata::model]
/// struct Author {
///     #[garde(length(chars, min = 1, max = 80))]
///     name: String,
/// }
///
/// #[strata::model]
/// #[serde(rename_all = "camelCase")]
/// struct Book {
///     #[garde(length(chars, min = 1))]
///     title: String,
///     #[strata(coerce)]
///     page_count: Option<u32>,
///     #[strata(not_null)]
///     subtitle: Option<String>,
///     #[garde(dive)]
///     author: Author,
/// }
///
/// let book: Book = serde_json::from_str(r#"{"title": "", "author": {"name": ""}}"#).unwrap();
/// let report = garde::Validate::validate(&book).unwrap_err();
/// assert_eq!(report.iter().count(), 2); // title, and author.name through `dive`
/// let text = r#"{"title": "Dune", "pageCount": "412", "author": {"name": "F"}}"#;
/// assert_eq!(serde_json::from_str::<Book>(text).unwrap().page_count, Some(412));
/// let null = r#"{"title": "Dune", "subtitle": null, "author": {"name": "F"}}"#;
/// assert!(serde_json::from_str::<Book>(null).is_err());
/// ```
pub use strata_macros::model;

/// What `#[strata::model]` expands to names; not an API.
#[doc(hidden)]
pub mod __private {
    pub use garde;
    pub use schemars;
    pub use serde;
    pub use strata_decode::coerce;
    pub use strata_decode::not_null;

    /// Implemented by every type whose `Validate` is the one of Strata's garde.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` implements the `Validate` of another `garde` than Strata's (0.23)",
        label = "derived with the `garde` of your Cargo.toml",
        note = "depend on the garde version Strata uses: garde = \"0.23\" (cargo tree -i garde shows both)"
    )]
    pub trait SameGarde {}

    impl<T: garde::Validate + ?Sized> SameGarde for T {}

    /// Names the garde mismatch once (`#[strata::model]`'s expansion calls it).
    pub fn same_garde<T: SameGarde + ?Sized>() {}
}

/// The names most endpoints need.
pub mod prelude {
    #[cfg(feature = "events")]
    pub use crate::Emitter;
    pub use crate::{
        ApiError, ApiResult, Config, CorsRequest, Ctx, DefaultResultHandler, Endpoint,
        EndpointsFactory, Events, FileResponse, Get, HCons, HNil, InputSource, Level, Logger,
        Middleware, MiddlewareChain, Mode, Nest, Operation, RawBody, Reply, RequestInfo,
        ResultHandler, Router, Routing, Security, ServeStatic, UploadLimits, UploadedFile,
        UploadedFileExt, attach_routing, create_config, create_server, default_endpoints_factory,
        http_error, routing,
    };
    /// The request's method, URI, headers and extensions, for a handler parameter
    /// `request: Parts`.
    pub use http::request::Parts;
}
