//! A typed TypeScript client for a Strata API, generated from the routing (no Node needed).
//!
//! [`Integration`] describes the routing exactly as [`strata_openapi::Documentation`] does and
//! writes one dependency-free TypeScript file:
//!
//! - one type per named schema (`components/schemas`), and per operation an input type (path,
//!   query, header and body fields together, typed as the server reads them: a numeric query
//!   parameter is a `number`), a positive and a negative response type and their union,
//!   discriminated by the envelope's `status`, and the body of each documented status code
//!   (`ListBooksResponseByStatus = { 200: ListBooksPositiveResponse; 400: …; 404: … }`; no
//!   body, as for 204, is `undefined`), and the headers each status declares
//!   (`CreateBookHeadersByStatus = { 201: { location: string } }`: lower-case names, values as
//!   sent, optional unless the document says they are required);
//! - `Request` (`"get /v1/books" | "post /v1/books" | …`), the maps `Input`, `Response`,
//!   `ResponseByStatus` and `HeadersByStatus` keyed by it, `StatusResponse<K>` (`{ status: 201;
//!   headers: …; body: … } | { status: 404; headers: …; body: … } | …`: a `switch` on `status`
//!   narrows `body` and `headers`) and `PaginatedRequest`;
//! - with [`Variant::Client`], `class Client { provide(request, params, options?);
//!   provideWithStatus(request, params, options?); static hasMore(response) }`: `provide`
//!   substitutes and percent-encodes path parameters, sends header fields as headers, the other
//!   fields in the query string (GET, DELETE: lists as repeated keys), as JSON, or as
//!   `multipart/form-data` when the input has files, and resolves with the body;
//!   `provideWithStatus` sends the same and resolves with a `StatusResponse`; the default
//!   implementation uses `fetch` and a custom one can be passed (credentials, another HTTP
//!   stack; with a `withStatus`, resolving with `{ status, headers, body }`, for
//!   `provideWithStatus`); `hasMore` tells whether a page of an
//!   offset (`offset + limit < total`) or cursor (`nextCursor !== null`) pagination has a
//!   successor. `new Client(implementation, { traceContext })` sends W3C Trace Context
//!   (`traceparent`, `tracestate`) with each request, from a function called per request (wired
//!   to `@opentelemetry/api`'s propagation, say); off by default: no trace header.
//!
//! The file compiles with `tsc --strict`, `noUncheckedIndexedAccess` and
//! `exactOptionalPropertyTypes`. HEAD operations are left out (they have no body to read).
//! A schema without a TypeScript type (`not`, `if`/`then`, a reference outside the document's
//! components) is an [`IntegrationError`] naming the request and the place in the schema:
//! never a silent `any`.
//!
//! # Example
//!
//! ```
//! use http::Method;
//! use strata_endpoint::{Endpoint, EndpointMeta};
//! use strata_routing::routing;
//! use strata_typescript::{Integration, Variant};
//!
//! # let endpoint = || {
//! #     let mut meta = EndpointMeta::default();
//! #     meta.methods = vec![Method::GET];
//! #     Endpoint::from_parts(meta, |_| tower::util::BoxCloneSyncService::new(tower::service_fn(|_| async {
//! #         Ok::<_, std::convert::Infallible>(http::Response::new(strata_core::Body::empty()))
//! #     })))
//! # };
//! let api = routing! { "v1" => { "hello" => endpoint() } };
//! let config = strata_routing::RoutingSettings::new(strata_cors::Cors::Enabled);
//! let client = Integration::new(&api, &config)
//!     .server_url("http://localhost:8090")
//!     .variant(Variant::Client)
//!     .build()
//!     .expect("a typable API")
//!     .to_string();
//! assert!(client.contains(r#"export type Request = "get /v1/hello";"#));
//! assert!(client.contains("export class Client {"));
//! ```

mod error;
mod integration;
mod runtime;
mod schema;
mod ts;

pub use error::IntegrationError;
pub use integration::{Integration, TypeScript, Variant};
