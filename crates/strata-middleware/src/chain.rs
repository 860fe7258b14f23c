//! [`MiddlewareChain`]: the middleware of a factory as one nameable type.
//!
//! A plain `tower::layer::util::Stack` of [`MiddlewareLayer`](crate::MiddlewareLayer)s works, but
//! its bounds depend on the inner service, so a function cannot return "a factory with these
//! middleware" without naming every endpoint's handler type. A chain states its bound once, for
//! every inner service: `impl MiddlewareChain<Ctx![User]>` is a complete return type.

use std::sync::Arc;

use derive_where::derive_where;

use garde::Validate;
use http::Request;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use strata_core::{ApiError, HCons, HNil};
use strata_input::Staged;
use tower_service::Service;

use crate::amend::Amend;
use crate::middleware::{Middleware, MiddlewareHandler};
use crate::service::MiddlewareService;

/// A service that takes the request with context `C`: what a middleware chain wraps and yields.
pub trait StagedService<C>:
    Service<Request<Staged<C>>, Response: Amend, Error = ApiError, Future: Send + 'static>
    + Clone
    + Send
    + Sync
    + 'static
{
}

impl<T, C> StagedService<C> for T where
    T: Service<Request<Staged<C>>, Response: Amend, Error = ApiError, Future: Send + 'static>
        + Clone
        + Send
        + Sync
        + 'static
{
}

/// Middleware that turn a request with an empty context into one with context `C`.
pub trait MiddlewareChain<C>: Clone + Send + Sync + 'static {
    /// `S` wrapped in the chain's middleware.
    type Wrapped<S: StagedService<C>>: StagedService<HNil>
        + Service<Request<Staged<HNil>>, Response = <S as Service<Request<Staged<C>>>>::Response>;

    /// Wraps `inner`: the first middleware runs first.
    fn wrap<S: StagedService<C>>(&self, inner: S) -> Self::Wrapped<S>;

    /// Whether the chain has no middleware (then nothing reads the input between the combine
    /// and validate stages). `false` unless a chain says otherwise.
    fn is_empty(&self) -> bool {
        false
    }
}

/// The chain without middleware.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoMiddleware;

impl MiddlewareChain<HNil> for NoMiddleware {
    type Wrapped<S: StagedService<HNil>> = S;

    fn wrap<S: StagedService<HNil>>(&self, inner: S) -> S {
        inner
    }

    fn is_empty(&self) -> bool {
        true
    }
}

/// The chain `rest` followed by one more middleware.
// Bounds on `Rest` alone: the middleware is shared.
#[derive_where(Clone, Debug; Rest)]
pub struct Chain<I, H, Rest> {
    last: Arc<Middleware<I, H>>,
    rest: Rest,
}

impl<I, H, Rest> Chain<I, H, Rest> {
    /// `rest`, then `last`.
    pub fn new(rest: Rest, last: Middleware<I, H>) -> Self {
        Self {
            last: Arc::new(last),
            rest,
        }
    }
}

impl<I, H, Rest, C> MiddlewareChain<HCons<H::Output, C>> for Chain<I, H, Rest>
where
    Rest: MiddlewareChain<C>,
    H: MiddlewareHandler<I, C>,
    I: DeserializeOwned + JsonSchema + Validate + 'static,
    I::Context: Default,
    C: Send + 'static,
{
    type Wrapped<S: StagedService<HCons<H::Output, C>>> = Rest::Wrapped<MiddlewareService<S, I, H>>;

    fn wrap<S: StagedService<HCons<H::Output, C>>>(&self, inner: S) -> Self::Wrapped<S> {
        self.rest.wrap(MiddlewareService::from_shared(
            inner,
            Arc::clone(&self.last),
        ))
    }
}
