//! Routing for Strata: a [`Routing`] tree compiled at startup into a path trie
//! ([matchit](https://docs.rs/matchit)) with a method table per path, served as one tower
//! `Service<http::Request<B>>` with `Error = Infallible` ([`Router`]).
//!
//! - An endpoint without a declared method serves GET; GET endpoints answer HEAD (same status
//!   and headers, `Content-Length` of the body GET would send, no body).
//! - Unknown path: 404 `Can not <METHOD> <path>`. Known path, other method: 405 with `Allow`
//!   (or 404 with `WrongMethodBehavior::NotFound`), message `<METHOD> is not allowed`. These
//!   errors use the router's error handler ([`RouterSettings::error_handler`]), or the default
//!   envelope.
//! - A trailing slash matches the same route; matching is case-sensitive; path parameters are
//!   percent-decoded (a malformed escape is a 400).
//! - CORS (must be chosen in the config): `true` adds `Access-Control-Allow-Origin: *`, the
//!   path's methods and `Access-Control-Allow-Headers: content-type, authorization` to every
//!   response and answers `OPTIONS` with 200; a function computes the headers per request.
//! - [`ServeStatic`] serves a directory (tower-http's `ServeDir`).
//!
//! Everything per path (the `Allow` list, the CORS methods) is computed once, at startup, and
//! the tree is checked then: duplicates, unsupported explicit methods, unknown `:param`s and
//! invalid keys are a [`RoutingError`], never a panic or a request-time surprise.
//!
//! # Example
//!
//! ```
//! use http::Request;
//! use strata_routing::{Endpoint, EndpointMeta, Router, RoutingConfig, routing};
//! use tower::ServiceExt;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! # let hello = Endpoint::from_parts(EndpointMeta::default(), |_| {
//! #     tower::util::BoxCloneSyncService::new(tower::service_fn(|_| async {
//! #         Ok::<_, std::convert::Infallible>(http::Response::new(strata_core::ResponseBody::from("hi")))
//! #     }))
//! # });
//! let tree = routing! {
//!     "v1" => {
//!         "hello" => hello,
//!     },
//! };
//! let config = RoutingConfig::new(true); // CORS on
//! let router = Router::new(&tree, &config).expect("a valid tree");
//!
//! let response = router.clone().oneshot(Request::get("/v1/hello").body(String::new()).unwrap()).await.unwrap();
//! assert_eq!(response.status(), 200);
//! assert_eq!(response.headers()["access-control-allow-methods"], "GET, HEAD, OPTIONS");
//!
//! let response = router.clone().oneshot(Request::post("/v1/hello").body(String::new()).unwrap()).await.unwrap();
//! assert_eq!(response.status(), 405);
//! assert_eq!(response.headers()["allow"], "GET, HEAD, OPTIONS");
//!
//! let response = router.oneshot(Request::get("/nope").body(String::new()).unwrap()).await.unwrap();
//! assert_eq!(response.status(), 404);
//! # }
//! ```

pub mod after_body;
mod compile;
pub mod endpoint;
mod error;
mod router;
mod settings;
mod statics;
mod tree;
mod walk;

pub use after_body::{AfterBody, AfterBodyInner, AfterBodyService, layer_error};
pub use endpoint::{
    AnyBody, Endpoint, EndpointFuture, EndpointId, EndpointMeta, EndpointService, EndpointStack,
    SharedService, into_request_body,
};
pub use error::RoutingError;
pub use router::{Router, RouterFuture};
pub use settings::{
    Cors, CorsFn, CorsFuture, CorsRequest, MethodLikeRouteBehavior, PipelineSettings,
    RouterSettings, RoutingConfig, WrongMethodBehavior,
};
pub use tree::{DEFAULT_CACHE_CONTROL, Dotfiles, Nest, Route, Routing, ServeStatic, StaticOptions};
pub use walk::{RouteInfo, StaticMount};

#[doc(hidden)]
pub use strata_macros::routing_impl as __routing_impl;
