//! The guide (`docs/guide/`) and the README, as documentation tests: every Rust block of them
//! is compiled and run by `cargo test`, so that they cannot go stale. A chapter about a feature
//! is tested when the feature is built (all of them but `redis` are on by default).

#[doc = include_str!("../../../README.md")]
mod readme {}

#[doc = include_str!("../../../docs/guide/endpoints.md")]
mod endpoints {}

#[cfg(all(feature = "cache", feature = "rate-limit"))]
#[doc = include_str!("../../../docs/guide/middleware.md")]
mod middleware {}

#[doc = include_str!("../../../docs/guide/routing.md")]
mod routing {}

#[doc = include_str!("../../../docs/guide/server.md")]
mod server {}

#[cfg(feature = "upload")]
#[doc = include_str!("../../../docs/guide/uploads.md")]
mod uploads {}

#[cfg(feature = "events")]
#[doc = include_str!("../../../docs/guide/streams.md")]
mod streams {}

#[cfg(all(feature = "client", feature = "typescript"))]
#[doc = include_str!("../../../docs/guide/clients.md")]
mod clients {}

#[cfg(feature = "openapi")]
#[doc = include_str!("../../../docs/guide/openapi.md")]
mod openapi {}

#[cfg(feature = "testing")]
#[doc = include_str!("../../../docs/guide/testing.md")]
mod testing {}

// Needs a Redis to run and the `redis` feature to compile: `.ci/run` compiles it with that
// feature.
#[cfg(feature = "redis")]
#[doc = include_str!("../../../docs/guide/scaling.md")]
mod scaling {}
