//! Stage 1 of the Strata pipeline: parse a request.
//!
//! [`ParseLayer`] turns `Request<B>` into `Request<Parsed>`: the query string (repeated keys
//! become lists, strict UTF-8 percent-decoding), the path parameters routing put into the
//! extensions ([`PathParams`](strata_core::PathParams)), and the body when the method reads one
//! (per the configured input sources): JSON (`application/json`, `*/*+json`; checked to be one
//! object and kept as bytes, [`JsonObject`](strata_input::JsonObject)), urlencoded forms,
//! and, when uploads are on ([`ParseLayer::upload`]), `multipart/form-data`, read as it streams
//! by [`strata_upload`]: its text parts become a form body, its files
//! [`Parsed::files`](strata_input::Parsed::files). Failures are
//! [`ApiError`](strata_core::ApiError)s:
//!
//! | problem | status |
//! |---|---|
//! | body over the limit (default 1 MiB), checked before and while reading | 413 |
//! | a chunk over the [body budget](BodyBudget) or its client address's share of it, as it arrives | 503, `Retry-After: 1` |
//! | body with a content type that cannot be read (multipart while uploads are off) | 415 |
//! | a file, a field, their count or a multipart body over its [upload limit](strata_upload::UploadLimits), or its files past the disk a request may take | 413 |
//! | files past the spool threshold that the uploads' disk budget cannot hold now | 503, `Retry-After: 5` |
//! | malformed multipart (no boundary, truncated, bad part headers) | 400 |
//! | malformed JSON (with line and column), JSON that is not an object | 400 |
//! | bad percent-encoding or invalid UTF-8 in the query or a form | 400 |
//! | more query or form parameters than the limit (default 1000) | 400 |
//!
//! A JSON body's check may be left to the reading of the input into its type
//! ([`ParseLayer::defer_json_check`], what the facade does for an endpoint without middleware):
//! the body is then read once, and a malformed one gets the same 400 and message from the
//! validate stage.
//!
//! An empty body is an empty object. Bodies are read only up to the limit: the rest is never
//! buffered. An error met while reading a body, before its end (a limit, the budget, a body
//! that stalls), makes the response close the connection (`Connection: close`): the rest of
//! the body is not read.
//!
//! # Example
//!
//! ```
//! use http::Request;
//! use strata_core::ApiError;
//! use strata_input::{Parsed, ParsedBody, TextValue};
//! use strata_parse::ParseLayer;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let service = ServiceBuilder::new()
//!     .layer(ParseLayer::new().body_limit(16))
//!     .service(service_fn(|request: Request<Parsed>| async move {
//!         Ok::<_, ApiError>(request.into_body())
//!     }));
//!
//! let request = Request::post("/?tag=a&tag=b")
//!     .header("content-type", "application/json")
//!     .body(r#"{"name":"x"}"#.to_owned())
//!     .unwrap();
//! let parsed = service.clone().oneshot(request).await.unwrap();
//! assert_eq!(parsed.query.to_pairs()[0].1, TextValue::Many(vec!["a".into(), "b".into()]));
//! assert!(matches!(parsed.body, ParsedBody::JsonObject(ref json) if json.to_map()["name"] == "x"));
//!
//! let too_big = Request::post("/")
//!     .header("content-type", "application/json")
//!     .body(r#"{"name":"much too long"}"#.to_owned())
//!     .unwrap();
//! let error = service.oneshot(too_big).await.unwrap_err();
//! assert_eq!(error.status(), 413);
//! assert_eq!(error.message(), "Request body exceeds the limit of 16 bytes");
//! # }
//! ```

mod budget;
mod future;
mod layer;
mod memory;
mod per_client;
mod service;

pub use budget::{
    BodyBudget, BodyReservation, DEFAULT_BODY_BUDGET, OverBudget, default_body_budget,
};
pub use memory::memory_limit;

/// Whether this build reads `multipart/form-data` bodies (the `upload` feature): without it a
/// multipart body is refused with a 415 that names the feature, and routing refuses to start
/// with uploads configured.
pub const MULTIPART: bool = cfg!(feature = "upload");
pub use future::ResponseFuture;
pub use layer::{DEFAULT_BODY_LIMIT, DEFAULT_MAX_FIELDS, ParseLayer, StreamedField};
pub use per_client::{ClientKey, PerClient};
pub use service::ParseService;

#[cfg(test)]
mod tests;
