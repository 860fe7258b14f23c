//! Stage 2 of the Strata pipeline: combine the input sources.
//!
//! [`CombineLayer`] turns `Request<Parsed>` into `Request<Staged<HNil>>`: the sources configured
//! for the request's method (spec table 2.2, or the config's `input_sources`) are merged into
//! one [`Input`](strata_input::Input), later sources overwriting earlier ones key by key.
//!
//! | method | default sources, in merge order |
//! |---|---|
//! | GET (and HEAD) | query, params |
//! | POST | body, params, files |
//! | PUT, PATCH | body, params |
//! | DELETE | query, params |
//! | QUERY | query, body, params |
//!
//! `headers` may be added as a source: names are lower-case, repeated headers are lists. A
//! header never overrides a path parameter, wherever it is in the list: a header named like a
//! parameter of the route is left out (routing warns of such names at startup). Otherwise the
//! configured order holds, as in express-zod-api.
//!
//! # Example
//!
//! ```
//! use http::Request;
//! use strata_core::{ApiError, HNil, PathParams};
//! use strata_input::{Parsed, Staged, TextValue};
//! use strata_combine::CombineLayer;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let service = ServiceBuilder::new()
//!     .layer(CombineLayer::new())
//!     .service(service_fn(|request: Request<Staged<HNil>>| async move {
//!         Ok::<_, ApiError>(request.into_body().input)
//!     }));
//!
//! let parsed = Parsed {
//!     query: vec![("id".into(), TextValue::One("from query".into()))].into(),
//!     params: [("id", "from path")].into_iter().collect::<PathParams>(),
//!     ..Parsed::default()
//! };
//! let input = service.oneshot(Request::get("/").body(parsed).unwrap()).await.unwrap();
//! assert_eq!(input.get("id"), Some(&"from path".into()));
//! # }
//! ```

mod future;
mod layer;
mod service;

pub use future::ResponseFuture;
pub use layer::CombineLayer;
pub use service::CombineService;

#[cfg(test)]
mod tests;
