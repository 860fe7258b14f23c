//! Stage 7 of the Strata pipeline: turn the outcome into an HTTP response.
//!
//! [`FormatLayer`] is the outermost layer of an endpoint. Its inner service yields
//! `Result<Output, ApiError>`; the layer hands that to a [`ResultHandler`], which builds the
//! response, so its service never fails (`Error = Infallible`). It also
//!
//! - catches panics of the inner service (in `call` or while polling) and answers 500, so a
//!   panicking handler does not take the connection down;
//! - in [`Mode::Production`](strata_core::Mode), replaces the message of 5xx errors and of errors
//!   marked not exposed with the status's reason phrase (`Internal Server Error`);
//! - logs 5xx errors with their real message through the request's logger: at error level,
//!   except overloads that clients caused ([`ErrorKind::Overload`](strata_core::ErrorKind), such
//!   as the body budget's 503), at warn level and at most one line per message every 5 s
//!   ([`strata_log::server_error`]).
//!
//! [`DefaultResultHandler`] produces the spec's envelope:
//! `{"status":"success","data":...}` and `{"status":"error","error":{"message":"..."}}`, as
//! `application/json; charset=utf-8`.
//!
//! # Example
//!
//! ```
//! use http::Request;
//! use http_body_util::BodyExt;
//! use strata_core::{ApiError, Output, http_error};
//! use strata_format::{DefaultResultHandler, FormatLayer};
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let service = ServiceBuilder::new()
//!     .layer(FormatLayer::new(DefaultResultHandler))
//!     .service(service_fn(|request: Request<String>| async move {
//!         match request.uri().path() {
//!             "/ok" => Ok(Output::new(&serde_json::json!({"n": 1}))?),
//!             _ => Err(http_error!(404, "Nothing here")),
//!         }
//!     }));
//!
//! let response = service.clone().oneshot(Request::get("/ok").body(String::new()).unwrap()).await.unwrap();
//! assert_eq!(response.status(), 200);
//! assert_eq!(response.headers()["content-type"], "application/json; charset=utf-8");
//! let body = response.into_body().collect().await.unwrap().to_bytes();
//! assert_eq!(body, r#"{"status":"success","data":{"n":1}}"#);
//!
//! let response = service.oneshot(Request::get("/x").body(String::new()).unwrap()).await.unwrap();
//! assert_eq!(response.status(), 404);
//! let body = response.into_body().collect().await.unwrap().to_bytes();
//! assert_eq!(body, r#"{"status":"error","error":{"message":"Nothing here"}}"#);
//! # }
//! ```

mod future;
mod layer;
mod service;

pub use future::ResponseFuture;
pub use layer::FormatLayer;
pub use service::FormatService;
/// Defined in `strata-core`, with the default envelope: routing and the server answer their
/// own errors with them without depending on this stage.
pub use strata_core::{DefaultResultHandler, ResultHandler, error_response, json_response};

#[cfg(test)]
mod tests;
