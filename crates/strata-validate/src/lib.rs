//! Stage 4 of the Strata pipeline: validate the merged input.
//!
//! [`ValidateLayer<I>`] turns `Request<Staged<C>>` into `Request<Validated<I, C>>`: the merged
//! input is deserialized into `I` (text values leniently, JSON values strictly) and `I`'s garde
//! rules run. Any failure is a 400 whose message lists every problem as `path: message`, joined
//! by `"; "`, with the names clients use (serde renames applied).
//!
//! How the input is decoded and a failure explained is `strata-decode`'s ([`Decoder`]), which
//! the other stages that check values use too.
//!
//! [`Decoder`]: strata_decode::Decoder
//!
//! # Example
//!
//! ```
//! use garde::Validate;
//! use http::Request;
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use strata_core::{ApiError, HNil, Validated};
//! use strata_input::{Input, Staged};
//! use strata_validate::ValidateLayer;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//!
//! #[derive(Debug, Deserialize, Validate, JsonSchema)]
//! struct Paging {
//!     #[garde(range(min = 1, max = 100))]
//!     limit: u32,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let service = ServiceBuilder::new()
//!     .layer(ValidateLayer::<Paging>::new())
//!     .service(service_fn(|request: Request<Validated<Paging, HNil>>| async move {
//!         Ok::<_, ApiError>(request.into_body().input.limit)
//!     }));
//!
//! let mut input = Input::new();
//! input.insert("limit", "20".into()); // text, e.g. from the query string
//! let request = Request::new(Staged { input, ctx: HNil });
//! assert_eq!(service.clone().oneshot(request).await.unwrap(), 20);
//!
//! let mut input = Input::new();
//! input.insert("limit", "500".into());
//! let error = service.oneshot(Request::new(Staged { input, ctx: HNil })).await.unwrap_err();
//! assert_eq!(error.status(), 400);
//! assert_eq!(error.message(), "limit: greater than 100");
//! # }
//! ```

mod layer;
mod service;

pub use layer::ValidateLayer;
pub use service::ValidateService;

/// Response future of [`ValidateService`]: the inner service's future, or the 400.
pub type ResponseFuture<F> = strata_core::future::ShortCircuit<F>;

#[cfg(test)]
mod tests;
