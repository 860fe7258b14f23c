//! Caching for Strata endpoints: a `Cache-Control` policy per factory or per response,
//! `ETag` and `Last-Modified` set by the handler, conditional requests answered
//! `304 Not Modified`, `Vary`.
//!
//! [`Caching`] is a middleware ([`Caching::middleware`], attached with `add_middleware`); the
//! endpoints behind it find a [`Cache`] in their context (a handler parameter `cache: Cache`).
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use http::Request;
//! use strata::prelude::*;
//! use strata_cache::{Cache, CacheControl, Caching, ETag};
//! use tower::ServiceExt;
//! # #[derive(serde::Serialize, garde::Validate, schemars::JsonSchema)]
//! # #[garde(allow_unvalidated)]
//! # struct Report { total: u64 }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let policy = CacheControl::builder().public().max_age(Duration::from_secs(60)).build().unwrap();
//! let factory = default_endpoints_factory()
//!     .add_middleware(Caching::new(policy).vary([http::header::ACCEPT_LANGUAGE]).middleware());
//!
//! let report = factory.get().handler_without_input(async |cache: Cache| {
//!     let version = 7; // cheap to know
//!     cache.etag(ETag::strong(format!("r{version}"))?)?; // 304 here for a client that has it
//!     Ok(Report { total: 42 }) // the expensive part
//! });
//!
//! let first = report.service().oneshot(Request::get("/").body(String::new()).unwrap()).await.unwrap();
//! assert_eq!(first.status(), 200);
//! assert_eq!(first.headers()["cache-control"], "max-age=60, public");
//! assert_eq!(first.headers()["etag"], "\"r7\"");
//! assert_eq!(first.headers()["vary"], "accept-language");
//!
//! let again = Request::get("/").header("if-none-match", "\"r7\"").body(String::new()).unwrap();
//! let cached = report.service().oneshot(again).await.unwrap();
//! assert_eq!(cached.status(), 304);
//! assert_eq!(cached.headers()["etag"], "\"r7\"");
//! # }
//! ```
//!
//! # A policy per endpoint
//!
//! The middleware's [`CacheControl`] goes on every response of the endpoints behind it. For
//! one endpoint, either its handler chooses another for its response
//! ([`Cache::set_policy`], `cache.set_policy(CacheControl::no_cache())`), or the endpoint is
//! declared on another factory with a differently configured middleware
//! (`base.add_middleware(Caching::new(immutable).middleware())` for the group of endpoints
//! serving immutable content). Attach one [`Caching`] per factory (a second would put two
//! `Cache` entries in the context, which a handler parameter, taken by type, could not tell
//! apart), and attach it first, so that it amends the errors of the middleware attached after
//! it. A `Cache-Control` the response already has (a header of the handler's `Reply`) wins
//! over both.
//!
//! # Conditional requests
//!
//! The handler gives the validators of the representation: [`Cache::etag`] (strong or weak,
//! checked: [`ETag`]) and [`Cache::last_modified`] (a `SystemTime`, sent as an HTTP date in
//! whole seconds). Each setter evaluates the request's preconditions with what it knows so far
//! and returns `Err` when the answer is already decided, so `cache.etag(tag)?;` early in a
//! handler stops it before its expensive part and before the output check: the "not
//! modified" it returns ([`ApiError::not_modified`](strata_core::ApiError::not_modified)) is
//! turned into the `304 Not Modified` response (no body) by the output stage, the first to see
//! it, and this middleware gives the 304 its headers. It is a response, not an error, on its
//! whole way out: a middleware attached after this one sees a success whose status is 304
//! (and may add headers to it, a cookie, a rate limit's state), never a 500. A
//! handler that sets the validators late (or ignores the setter's error) and returns normally
//! still gets a 304 for a matching request: the middleware evaluates again once the response
//! is there, but the handler's work and the output check have run by then.
//!
//! The evaluation follows RFC 9110 §13.2.2, in its order, for GET and HEAD:
//! 1. `If-Match` (strong comparison; `*` holds): 412 when it fails;
//! 2. `If-Unmodified-Since`, only without `If-Match`: 412 when modified since;
//! 3. `If-None-Match` (weak comparison, a list or `*`): 304 when it matches;
//! 4. `If-Modified-Since`, only without `If-None-Match`: 304 when not modified since.
//!
//! A date field that is not one valid HTTP date (any of its three formats) is ignored, as
//! §13.1.3-4 say; a list member that is not an entity tag never matches (so garbage in
//! `If-None-Match` gets the full response, and in `If-Match` a 412); nothing a client sends
//! makes it panic. A list is compared in one pass over its bytes, without allocating; its size
//! is bounded by the server's limit on request headers. A condition
//! whose validator the handler never set is not evaluated (the middleware cannot know it):
//! an `If-None-Match` on an endpoint that sets only `Last-Modified` gets the full response
//! (and `If-Modified-Since` is still ignored, as the RFC says when `If-None-Match` is there).
//!
//! Other methods are left alone: their preconditions must be checked against the
//! representation *before* the change, while the validators a handler sets on a write's
//! response describe the one after it; an endpoint offering optimistic concurrency compares
//! `If-Match` itself before writing.
//!
//! The 304 carries what RFC 9110 §15.4.5 lists for caches: `Cache-Control`, `ETag`, `Vary`
//! (and `Content-Location`), `Last-Modified` only when there is no `ETag`, plus what other
//! middleware added (a cookie, a rate limit's state); no `Content-*` header. `Date` is the
//! server's.
//!
//! # Errors, Vary
//!
//! Error responses of the endpoints behind the middleware get `Cache-Control: no-store`
//! ([`Caching::error_policy`] says why, and changes it) and the `Vary` list, never the
//! validators. `Vary` goes on every response: the middleware's names are added to a `Vary`
//! the response already has (each name once; `*` stays `*`).
//!
//! # Cookies
//!
//! A response that sets a cookie is meant for one client, and a shared cache (a CDN, a
//! proxy) that stored it would hand the cookie (a session, say) to the next clients:
//! `Set-Cookie` does not keep a shared cache from storing a response. So a response with
//! `Set-Cookie` (the handler's, or the cookie middleware's when it is attached after this
//! one, as it should be) gets its policy made private instead of the policy as configured
//! ([`CacheControl::to_private`]: `public` becomes `private`, `s-maxage` and
//! `proxy-revalidate` go): `public, max-age=60` goes out as `max-age=60, private`, and
//! `no-cache` as `no-cache, private`, for successes, 304s and errors alike. The response is
//! not refused: a cookie on a cacheable endpoint (a session refreshed by a middleware) is
//! common and legitimate, and only shared caches must stay out; the client's own cache still
//! follows the rest of the policy. A `Cache-Control` the handler wrote itself (a header of
//! its `Reply`) is left as it is.
//!
//! # With the server's `etag(true)`
//!
//! `create_config().etags(ETags::Weak)` gives a successful GET whose body is in memory a weak tag
//! hashed from the body, and answers a matching `If-None-Match` with a 304, outside the
//! endpoint. It leaves a response that has an `ETag` alone, so the handler's tag (and this
//! middleware's evaluation) wins where the handler sets one; where it does not, the server's
//! hash tag does, and its 304 keeps this middleware's `Cache-Control`, `Last-Modified` and
//! `Vary`. The difference: the server's tag costs the whole handler and serialization on every
//! request, the handler's lets `?` stop before them.
//!
//! # In the API document
//!
//! [`Caching::middleware`] declares `Cache-Control`, `ETag`, `Last-Modified` and `Vary` (when
//! configured) as headers of the success responses, and the 304 (without a body) and the 412
//! among the endpoints' responses.

mod conditions;
mod control;
mod date;
mod etag;
mod middleware;

pub use control::{CacheControl, CacheControlBuilder, InvalidCacheControl};
pub use etag::{ETag, InvalidETag};
pub use middleware::{Cache, Caching};

#[cfg(test)]
mod tests;
