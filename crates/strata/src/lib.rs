//! Strata: typed, validated JSON APIs as a stack of tower layers.
//!
//! Declare endpoints with an input type, an output type and an async handler; attach middleware
//! that add typed context; get a plain tower `Service<http::Request<B>>` per endpoint. Every
//! request goes through seven stages, each its own crate and `tower::Layer`:
//!
//! | stage | module | layer |
//! |---|---|---|
//! | parse | [`stages::parse`] | [`ParseLayer`](stages::parse::ParseLayer) |
//! | combine | [`stages::combine`] | [`CombineLayer`](stages::combine::CombineLayer) |
//! | middleware | [`stages::middleware`] | [`MiddlewareLayer`](stages::middleware::MiddlewareLayer) |
//! | validate | [`stages::validate`] | [`ValidateLayer`](stages::validate::ValidateLayer) |
//! | handle | [`stages::handler`] | [`HandlerService`](stages::handler::HandlerService) |
//! | output check | [`stages::output`] | [`OutputLayer`](stages::output::OutputLayer) |
//! | format | [`stages::format`] | [`FormatLayer`](stages::format::FormatLayer) |
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
#[cfg(doctest)]
mod guide;

// Declaring endpoints: a factory (its middleware and result handler), the endpoints it builds,
// the types they read and answer, and operations declared once for servers and clients.
pub use factory::{EndpointBuilder, EndpointsFactory, default_endpoints_factory};
pub use strata_core::{Ctx, Events, Operation, Outcomes, Security};
pub use strata_endpoint::Endpoint;
pub use strata_input::{InputSource, RawBody, StreamedFile, UploadedFile};
pub use strata_middleware::Middleware;
pub use strata_output::{FileResponse, Reply, StreamResponse};
pub use strata_upload::{UploadLimits, UploadedFileExt};

// Errors and logs.
pub use strata_core::{ApiError, Level, Logger, http_error};

// Result handlers: the envelope of every response, yours or the default one.
pub use strata_core::{
    Body, DefaultResultHandler, RequestInfo, ResponseDescription, ResultHandler,
};

// Routing and serving.
pub use strata_core::Mode;
pub use strata_cors::Cors;
pub use strata_routing::{Nest, Router, Routing, routing};
/// Traces of requests with OpenTelemetry, exported over OTLP/HTTP (feature `otel`).
#[cfg(feature = "otel")]
pub use strata_server::Tracing;
pub use strata_server::{
    Config, ConfigBuilder, Health, Metrics, Server, attach_routing, create_server,
};
pub use strata_static::ServeStatic;

/// The OpenTelemetry API (feature `otel`): a handler's own spans (children of the request's,
/// whose context is current while it runs) need no dependency of their own on it.
#[cfg(feature = "otel")]
pub use opentelemetry;

/// The `http` crate Strata is built on (`StatusCode`, `HeaderValue`, `header::*`), so that an
/// application needs no dependency of its own on it.
pub use http;

/// What an endpoint is once built ([`Endpoint`], its [`EndpointMeta`](endpoint::EndpointMeta)),
/// the settings its stages are built with, the application's layers after the body, and the
/// traits that say what a factory's endpoints read and answer.
pub mod endpoint {
    pub use crate::factory::{InputType, OutputType, Returns, StateFactory};
    pub use strata_endpoint::{
        AfterBody, AfterBodyInner, AfterBodyService, AnyBody, Endpoint, EndpointFuture, EndpointId,
        EndpointMeta, EndpointService, EndpointStack, MULTIPART, PipelineSettings, SharedService,
        into_request_body, layer_error,
    };
    pub use strata_middleware::MiddlewareChain;
}

/// Routing: the tree ([`Routing`], [`routing!`]), the router it compiles into ([`Router`]:
/// the trie, method dispatch, 404, 405, HEAD, OPTIONS), static directories ([`ServeStatic`])
/// and CORS ([`Cors`]).
pub mod router {
    pub use strata_cors::{Cors, CorsFn, CorsFuture, CorsRequest, is_preflight};
    pub use strata_routing::{
        MethodLikeRouteBehavior, Nest, Route, RouteInfo, Router, RouterFuture, RouterSettings,
        Routing, RoutingError, RoutingSettings, StaticMount, WrongMethodBehavior,
    };
    pub use strata_static::{DEFAULT_CACHE_CONTROL, Dotfiles, ServeStatic, StaticOptions};
}

/// Running a routing: [`create_server`] (listeners, HTTP/1.1 and HTTP/2, TLS, connection
/// limits, graceful shutdown), [`attach_routing`] (a tower service for an existing app), and
/// their configuration.
pub use strata_server as server;

/// The seven stages, each a crate and a `tower::Layer` usable alone in any tower stack.
pub mod stages {
    /// Stage 2: merging the input sources of the request's method.
    pub use strata_combine as combine;
    /// Stage 7: the result handler's response, panics caught.
    pub use strata_format as format;
    /// Stage 5: the handler.
    pub use strata_handler as handler;
    /// Stage 3: middleware, each adding to the typed context.
    pub use strata_middleware as middleware;
    /// Stage 6: checking and serializing the handler's output.
    pub use strata_output as output;
    /// Stage 1: parsing the body, the query and the path parameters.
    pub use strata_parse as parse;
    /// Stage 4: validating the merged input into the endpoint's input type.
    pub use strata_validate as validate;
}

/// Caching: a `Cache-Control` policy per factory or per response, `ETag` and `Last-Modified`
/// set by the handler, conditional requests answered 304, `Vary` (feature `cache`).
#[cfg(feature = "cache")]
pub use strata_cache as cache;
/// The typed Rust client: calls the [`Operation`]s a server implements, with their own types,
/// over any tower service (feature `client`).
#[cfg(feature = "client")]
pub use strata_client as client;
/// Cookies: the cookie middleware (`Cookies` in the context), signed-cookie keys.
pub use strata_cookies as cookies;
/// The shared vocabulary of the stages ([`strata_core`]): errors, the typed context, payloads,
/// result handlers, descriptions for API documents.
pub use strata_core as core;
/// How values are checked: the decoder every checking stage uses ([`strata_decode`]).
pub use strata_decode as decode;
/// Server-sent events: typed events, an emitter, keep-alives, topics (feature `events`).
#[cfg(feature = "events")]
pub use strata_events as events;
/// The merged input: its model, text decoding and deserializer ([`strata_input`]).
pub use strata_input as input;
/// API descriptions: an OpenAPI 3.2 (or 3.1) document from a routing, routes serving it
/// (feature `openapi`).
#[cfg(feature = "openapi")]
pub use strata_openapi as openapi;
/// Pagination: offset and cursor page inputs and outputs.
pub use strata_paginate as paginate;
/// Rate limits: a GCRA middleware keyed by client address, credential or function, with
/// `429`, `Retry-After` and the IETF `RateLimit` headers (feature `rate-limit`).
#[cfg(feature = "rate-limit")]
pub use strata_ratelimit as ratelimit;
/// What replicas share through Redis: the rate limiter's store and the event streams'
/// broadcaster (feature `redis`, off by default).
#[cfg(feature = "redis")]
pub use strata_redis as redis;
/// Test utilities: `test_endpoint`, `test_middleware` (feature `testing`).
#[cfg(feature = "testing")]
pub use strata_testing as testing;
/// The generated TypeScript client: typed requests and responses, `provide` and `hasMore`
/// (feature `typescript`).
#[cfg(feature = "typescript")]
pub use strata_typescript as typescript;
/// File uploads: multipart reading with limits, [`UploadedFile`], `MultipartForm`.
pub use strata_upload as upload;

/// Starts a [`ConfigBuilder`] with the defaults: production mode, 1 MiB body limit, the
/// input sources of spec table 2.2, CORS not chosen yet, no listener. One chain sets the
/// server's, the router's and the pipeline's settings; the [`Config`] it builds is given whole
/// to everything that reads a configuration. Nothing comes from the environment unless asked
/// for (`.mode(Mode::from_env().unwrap_or_default())` reads `STRATA_MODE`).
///
/// ```
/// use strata::{Cors, InputSource, Mode, create_config};
///
/// let config = create_config()
///     .input_sources(&http::Method::GET, [InputSource::Query, InputSource::Params, InputSource::Headers])
///     .mode(Mode::Development)
///     .cors(Cors::Enabled)
///     .build();
/// assert_eq!(config.pipeline.mode, Mode::Development);
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

/// Declares an operation's outcomes: an enum whose variants are the responses a handler may
/// answer, each with its status, typed headers and body type (or none). A handler returns one
/// variant and cannot return an undeclared one; the output stage checks that variant's body;
/// the API description lists every variant under its status; a client
/// (`strata::client`) reads a response back into the variant its status names.
///
/// - `#[outcome(status = 201)]` on each variant (or `status(200, 203)`, with a field
///   `#[outcome(status)] status: StatusCode` carrying the one sent);
/// - a tuple variant of one field: that field is the body; a unit variant: no body (a success
///   is sent empty, a `204`; an error is answered as an [`ApiError`] of its status, its doc
///   comment's first line the message);
/// - named fields: `#[outcome(body)]` (at most one), `#[outcome(header = "location")]` (a
///   `String`, `HeaderValue`, integer, or an `Option` of one), `#[outcome(status)]`;
/// - doc comments describe variants and header fields in the API description;
/// - `#[outcome(crate = "path::to::strata")]` on the enum where strata is renamed.
///
/// Body types are models (`#[strata::model]`: serialized by the server, deserialized by
/// clients). With the default result handler a success's body is the envelope's `data` and an
/// error's is its `error`: `{"status":"error","error":{"existingId":7}}`.
///
/// ```
/// use strata::prelude::*;
/// use strata::{Operation, Outcomes, Routing};
///
/// #[strata::model]
/// pub struct NewBook {
///     #[garde(length(min = 1))]
///     title: String,
/// }
/// #[strata::model]
/// pub struct Book {
///     id: u32,
///     title: String,
/// }
/// #[strata::model]
/// pub struct Conflict {
///     existing_id: u32,
/// }
///
/// #[derive(Outcomes)]
/// pub enum CreateBook {
///     /// The book, added.
///     #[outcome(status = 201)]
///     Created {
///         #[outcome(body)]
///         book: Book,
///         /// Where the book is.
///         #[outcome(header = "location")]
///         location: String,
///     },
///     /// A book with this title exists.
///     #[outcome(status = 409)]
///     Conflict(Conflict),
/// }
///
/// pub const CREATE_BOOK: Operation<NewBook, CreateBook> = Operation::post("/books");
///
/// let create = default_endpoints_factory().endpoint().implement(
///     &CREATE_BOOK,
///     async |input: NewBook| {
///         Ok(if input.title == "Dune" {
///             CreateBook::Conflict(Conflict { existing_id: 1 })
///         } else {
///             let book = Book { id: 2, title: input.title };
///             CreateBook::Created { location: format!("/books/{}", book.id), book }
///         })
///     },
/// );
/// let routing = Routing::new().operation(create);
/// # let _ = routing;
/// ```
///
/// A client (`strata::client`, feature `client`) reads the response back into its variant:
/// `match client.call(&CREATE_BOOK, input).await? { CreateBook::Created { book, location } =>
/// .., CreateBook::Conflict(conflict) => .. }`; a status the enum does not declare is a
/// `ClientError`, as for any operation.
pub use strata_macros::Outcomes;

/// Declared outcomes: the trait [`Outcomes`](trait@Outcomes) the derive implements, what it
/// declares, the header field types, and what a client reads a response with.
pub mod outcome {
    pub use strata_core::outcome::{
        DeclaredOutcome, FromResponse, HeaderField, OutcomeError, Outcomes, ResponseReader,
    };
    pub use strata_output::OutcomeBody;
}

/// What `#[strata::model]` expands to names; not an API.
#[doc(hidden)]
pub mod __private {
    pub use garde;
    pub use http;
    pub use schemars;
    pub use serde;
    pub use strata_core;
    pub use strata_decode::coerce;
    pub use strata_decode::not_null;
    pub use strata_output;

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

/// What the quick start and the first examples of the guide use: `use strata::prelude::*;`.
pub mod prelude {
    pub use crate::{
        ApiError, Cors, Logger, Middleware, Nest, Reply, UploadedFileExt, create_config,
        create_server, default_endpoints_factory, http_error, routing,
    };
    /// The request's method, URI, headers and extensions, for a handler parameter
    /// `request: Parts`.
    pub use http::request::Parts;
}
