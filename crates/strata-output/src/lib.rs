//! Stage 6 of the Strata pipeline: check and serialize the handler's output.
//!
//! [`OutputLayer<O>`] wraps a service that returns `O` (the handler) and returns an
//! [`Output`](strata_core::Output): `O`'s garde rules run and `O` is serialized once. A rule
//! violation is a defect of the handler: a 500 whose message names the field as
//! `output.<path>: <rule text>` (hidden behind `Internal Server Error` in production).
//!
//! Success is 200; a handler that means another 2xx, or adds headers, returns [`Reply`].
//! Anything implementing [`HandlerOutput`] may be returned. A handler's errors pass through,
//! but one: the early answer to a conditional request
//! ([`ApiError::not_modified`](strata_core::ApiError::not_modified)) becomes the `304 Not
//! Modified` response here ([`Output::not_modified`](strata_core::Output::not_modified)), so
//! that no middleware mistakes it for an error.
//!
//! # Example
//!
//! ```
//! use garde::Validate;
//! use http::Request;
//! use schemars::JsonSchema;
//! use serde::Serialize;
//! use strata_core::ApiError;
//! use strata_output::OutputLayer;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//!
//! #[derive(Serialize, Validate, JsonSchema)]
//! struct Greeting {
//!     #[garde(length(chars, min = 1))]
//!     text: String,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let service = ServiceBuilder::new()
//!     .layer(OutputLayer::<Greeting>::new())
//!     .service(service_fn(|request: Request<String>| async move {
//!         Ok::<_, ApiError>(Greeting { text: request.into_body() })
//!     }));
//!
//! let output = service.clone().oneshot(Request::new("hi".to_owned())).await.unwrap();
//! assert_eq!(output.data().get(), r#"{"text":"hi"}"#);
//!
//! let error = service.oneshot(Request::new(String::new())).await.unwrap_err();
//! assert_eq!(error.status(), 500);
//! assert_eq!(error.message(), "output.text: length is lower than 1");
//! # }
//! ```

mod future;
mod layer;
pub mod outcome;
mod range;
mod reply;
mod service;
mod stream;

pub use future::ResponseFuture;
pub use layer::OutputLayer;
pub use outcome::OutcomeBody;
pub use range::RangeHeaders;
pub use reply::{HandlerOutput, Reply};
pub use service::OutputService;
pub use stream::{Binary, CheckedFile, FileResponse, OneChunk, StreamResponse};

#[cfg(test)]
mod tests;
