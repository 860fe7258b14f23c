//! Stage 3 of the Strata pipeline: middleware.
//!
//! A [`Middleware`] reads its own typed input from the merged input (validated like an
//! endpoint's, a 400 on failure), the request parts, the context built so far and the logger. It
//! grants by returning a value, which joins the context, or denies by returning an
//! [`ApiError`](strata_core::ApiError) with a status (e.g. 401), which stops processing. An
//! optional [`Security`](strata_core::Security) describes the scheme for API descriptions and
//! names the credentials the middleware needs: a request without one of them is answered 401
//! (`Missing credential: key`) before the middleware's input is read; one that is present but
//! malformed is the input's to refuse (400) or the middleware's to deny.
//!
//! [`MiddlewareLayer`] runs one middleware: `Request<Staged<C>>` in, `Request<Staged<HCons<O, C>>>`
//! to the inner service. Stack one layer per middleware, in attachment order.
//!
//! The middleware function runs synchronously with borrowed request parts and context, and
//! returns a `'static` future: copy what the async part needs (a header value, an id) before the
//! `async move` block.
//!
//! # Example
//!
//! ```
//! use garde::Validate;
//! use http::Request;
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use strata_core::{ApiError, Has, HCons, HNil, Security, http_error};
//! use strata_input::{Input, Staged};
//! use strata_middleware::{Middleware, MiddlewareLayer};
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//!
//! struct User {
//!     name: String,
//! }
//!
//! #[derive(Deserialize, Validate, JsonSchema)]
//! struct AuthInput {
//!     #[garde(length(min = 1))]
//!     key: String,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let auth = Middleware::new(|input: AuthInput, request, _logger| {
//!     let token = request.headers.get("token").cloned();
//!     async move {
//!         match token {
//!             Some(token) if input.key == "123" && token == "456" => Ok(User { name: "Jane".into() }),
//!             _ => Err(http_error!(401, "Invalid key")),
//!         }
//!     }
//! })
//! .security(Security::and([Security::input("key"), Security::header("token")]));
//!
//! let service = ServiceBuilder::new()
//!     .layer(MiddlewareLayer::new(auth))
//!     .service(service_fn(|request: Request<Staged<HCons<User, HNil>>>| async move {
//!         let user: &User = request.body().ctx.get();
//!         Ok::<_, ApiError>(http::Response::new(user.name.clone()))
//!     }));
//!
//! let mut input = Input::new();
//! input.insert("key", "123".into());
//! let request = Request::builder().header("token", "456").body(Staged { input, ctx: HNil }).unwrap();
//! assert_eq!(service.clone().oneshot(request).await.unwrap().into_body(), "Jane");
//!
//! let mut input = Input::new();
//! input.insert("key", "123".into());
//! let request = Request::builder().header("token", "nope").body(Staged { input, ctx: HNil }).unwrap();
//! assert_eq!(service.oneshot(request).await.unwrap_err().status(), 401);
//! # }
//! ```

mod amend;
mod chain;
mod future;
mod layer;
mod middleware;
mod service;
mod span;

pub use amend::{Amend, AmendResponse, outcome_headers};
pub use chain::{Chain, MiddlewareChain, NoMiddleware, StagedService};
pub use future::ResponseFuture;
pub use layer::MiddlewareLayer;
pub use middleware::{
    Immediate, Middleware, MiddlewareHandler, Owned, State, Stateless, WithContext,
};
pub use service::MiddlewareService;

#[cfg(test)]
mod tests;
