//! Rate limits for Strata: a middleware that lets each client send a [`Quota`] of requests per
//! window and answers the rest `429 Too Many Requests`.
//!
//! - **Whose budget**: a [`Key`] per request. The client's address (behind [`TrustedProxies`]
//!   only when told: nobody's `X-Forwarded-For` is believed by default), a value of the typed
//!   context (`Key::context(|user: &User| user.id)`), a header, or any function of the
//!   request. A request without a key gets the [`Keyless`] decision (by default all such
//!   requests share one budget).
//! - **The answer**: a 429 through the result handler, like every error, with `Retry-After`
//!   (seconds, rounded up) and the `RateLimit` and `RateLimit-Policy` headers of
//!   [draft-ietf-httpapi-ratelimit-headers-11](https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/11/)
//!   (`RateLimit-Policy: "default";q=100;w=60`, `RateLimit: "default";r=0;t=12`): `r` is the
//!   available quota, the requests the client may send now, and `t` the effective window,
//!   the seconds within which it can use no more than `r` (section 4.1.2), which under GCRA
//!   is the time until one more request is allowed; `w` is whole seconds, so a window that is
//!   not is written as the same rate over whole seconds (5 per 1.5 s: `q=10;w=3`). With
//!   [`RateLimit::headers`]`(true)`, successes and other errors carry the two `RateLimit`
//!   headers too (added after the handler answered), so that a client can slow down before
//!   it is refused; by default they are left out, for their cost on every response.
//! - **In the context**: a [`RateLimitState`], the client's remaining budget, for handlers and
//!   later middleware.
//! - **In the API document**: the 429 with its headers, and with
//!   `headers(HeadersOn::EveryResponse)` the headers of success responses.
//!
//! # Example
//!
//! ```
//! use garde::Validate;
//! use http::Request;
//! use schemars::JsonSchema;
//! use serde::Serialize;
//! use strata::core::ClientAddr;
//! use strata::prelude::*;
//! use strata_ratelimit::{HeadersOn, Key, Quota, RateLimit, RateLimitState};
//! use tower::ServiceExt;
//!
//! #[derive(Serialize, Validate, JsonSchema)]
//! #[garde(allow_unvalidated)]
//! struct Budget {
//!     remaining: u32,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let limited = default_endpoints_factory()
//!     // The `RateLimit` headers on every response, not only on the 429.
//!     .add_middleware(
//!         RateLimit::new(Quota::per_minute(2), Key::client_addr())
//!             .headers(HeadersOn::EveryResponse)
//!             .middleware(),
//!     );
//! let budget = limited.get().handler_without_input(async |state: RateLimitState| {
//!     Ok(Budget { remaining: state.remaining })
//! });
//!
//! // The server puts the peer's address in every request; here, by hand.
//! let request = || {
//!     let mut request = Request::get("/budget").body(String::new()).unwrap();
//!     request.extensions_mut().insert(ClientAddr([192, 0, 2, 1].into()));
//!     request
//! };
//! let service = budget.service();
//! let first = service.clone().oneshot(request()).await.unwrap();
//! assert_eq!(first.headers()["ratelimit-policy"], r#""default";q=2;w=60"#);
//! assert_eq!(first.headers()["ratelimit"], r#""default";r=1;t=30"#);
//! service.clone().oneshot(request()).await.unwrap();
//! let third = service.oneshot(request()).await.unwrap();
//! assert_eq!(third.status(), 429);
//! assert_eq!(third.headers()["retry-after"], "30");
//! # }
//! ```
//!
//! # The algorithm: GCRA, written here
//!
//! The generic cell rate algorithm ([`Gcra`]) keeps one number per key, its theoretical
//! arrival time, and decides with a comparison and an addition: no counters, no fixed windows
//! (whose boundaries let a client send two quotas in a moment), and an entry whose time is
//! past can be forgotten, which bounds the store. The `governor` crate implements the same
//! algorithm, but its state store is synchronous: its `StateStore` compares and swaps inside
//! a plain function call, which cannot be implemented over an asynchronous Redis call. The
//! shared store of `strata-redis` (`strata::redis`) runs this very formula inside Redis (a Lua
//! script, one atomic step per request) behind the same [`RateLimitStore`] trait, so the
//! formula is a dozen lines of integer arithmetic in microseconds ([`Gcra::decide`]), easy to
//! port and to check against, rather than a dependency's internals.
//!
//! # The store
//!
//! A [`RateLimitStore`] checks and records one request atomically, asynchronously. The
//! default [`MemoryStore`] keeps at most 100,000 keys (configurable) in 64 shards, forgets
//! keys whose time is past, and evicts the clients with the most budget left when a shard is
//! full: a million distinct clients cost no more than its capacity. A store that fails
//! (never the in-memory one) lets the request through by default ([`FailPolicy`]).
//!
//! # The client's address
//!
//! [`Key::client_addr`] reads the [`ClientAddr`](strata_core::ClientAddr) that Strata's
//! server puts in the extensions of every request (the connection's peer). An application
//! that serves the routing with its own server (`attach_routing`) inserts it itself; without
//! it a request has no address, and no key.

mod clock;
mod gcra;
mod key;
mod limiter;
mod proxy;
mod quota;
mod store;

pub use clock::{Clock, ManualClock, MonotonicClock, SystemClock};
pub use gcra::{Decision, Gcra};
pub use key::{
    ClientAddrKey, ContextKey, FnKey, HeaderKey, IntoKey, Key, KeyExtractor, RateLimitKey,
};
pub use limiter::{
    FailPolicy, HeadersOn, Keyless, RATELIMIT, RATELIMIT_POLICY, RateLimit, RateLimitFuture,
    RateLimitHeaders, RateLimitState, RateLimiter,
};
pub use proxy::{ForwardedHeader, InvalidNetwork, MAX_HOPS, Network, TrustedProxies};
pub use quota::Quota;
pub use store::{DEFAULT_CAPACITY, MemoryStore, RateLimitStore, StoreError};

#[cfg(test)]
mod tests;
