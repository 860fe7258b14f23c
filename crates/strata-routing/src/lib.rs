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
//! - CORS (must be chosen in the config, `strata-cors` says what headers a response gets):
//!   with CORS on, `OPTIONS` on a known path is answered with 200 without running anything;
//!   only a preflight's answer (`OPTIONS` with `Access-Control-Request-Method`) lists the
//!   path's methods and allowed headers, every response has the origin.
//! - A `ServeStatic` of `strata-static` serves a directory under its key (GET and HEAD).
//!
//! The endpoints it holds are `strata-endpoint`'s type-erased [`Endpoint`]s, built once for the
//! pipeline's settings the router is given.
//!
//! [`Endpoint`]: strata_endpoint::Endpoint
//!
//! Everything per path (the `Allow` list, the CORS methods) is computed once, at startup, and
//! the tree is checked then: duplicates, unsupported explicit methods, unknown `:param`s and
//! invalid keys are a [`RoutingError`], never a panic or a request-time surprise.
//!
//! # Example
//!
//! ```
//! use http::Request;
//! use strata_endpoint::{Endpoint, EndpointMeta};
//! use strata_cors::Cors;
//! use strata_routing::{Router, RoutingSettings, routing};
//! use tower::ServiceExt;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! # let hello = Endpoint::from_parts(EndpointMeta::default(), |_| {
//! #     tower::util::BoxCloneSyncService::new(tower::service_fn(|_| async {
//! #         Ok::<_, std::convert::Infallible>(http::Response::new(strata_core::Body::from("hi")))
//! #     }))
//! # });
//! let tree = routing! {
//!     "v1" => {
//!         "hello" => hello,
//!     },
//! };
//! let config = RoutingSettings::new(Cors::Enabled); // CORS on
//! let router = Router::new(&tree, &config).expect("a valid tree");
//!
//! let response = router.clone().oneshot(Request::get("/v1/hello").body(String::new()).unwrap()).await.unwrap();
//! assert_eq!(response.status(), 200);
//! assert_eq!(response.headers()["access-control-allow-origin"], "*");
//!
//! // A CORS preflight: the path's methods, which only a preflight's answer carries.
//! let preflight = Request::options("/v1/hello")
//!     .header("origin", "https://app.example")
//!     .header("access-control-request-method", "GET")
//!     .body(String::new())
//!     .unwrap();
//! let response = router.clone().oneshot(preflight).await.unwrap();
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

mod compile;
mod error;
mod router;
mod settings;
mod tree;
mod walk;

pub use error::RoutingError;
pub use router::{Router, RouterFuture};
pub use settings::{MethodLikeRouteBehavior, RouterSettings, RoutingSettings, WrongMethodBehavior};
pub use tree::{Nest, Route, Routing};
pub use walk::{RouteInfo, StaticMount};

#[doc(hidden)]
pub use strata_macros::routing_impl as __routing_impl;
