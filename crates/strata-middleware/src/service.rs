use std::sync::Arc;
use std::task::{Context, Poll};

use derive_where::derive_where;

use garde::Validate;
use http::Request;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use strata_core::{ApiError, BoxError, HCons, Logger};
use strata_input::Staged;
use tower_service::Service;

use crate::amend::Amend;
use crate::future::ResponseFuture;
use crate::layer::MiddlewareLayer;
use crate::middleware::{Middleware, MiddlewareHandler};
use crate::span::Span;

/// Runs one middleware, then the inner service with the grown context; see the
/// [crate docs](crate).
// Bounds on `S` alone: the middleware is shared.
#[derive_where(Clone, Debug; S)]
pub struct MiddlewareService<S, I, H> {
    inner: S,
    middleware: Arc<Middleware<I, H>>,
}

impl<S, I, H> MiddlewareService<S, I, H> {
    /// Wraps `inner`.
    pub fn new(inner: S, middleware: Middleware<I, H>) -> Self {
        Self::from_shared(inner, Arc::new(middleware))
    }

    pub(crate) fn from_shared(inner: S, middleware: Arc<Middleware<I, H>>) -> Self {
        Self { inner, middleware }
    }

    /// A [`MiddlewareLayer`] running `middleware`.
    pub fn layer(middleware: Middleware<I, H>) -> MiddlewareLayer<I, H> {
        MiddlewareLayer::new(middleware)
    }

    strata_core::inner_service_accessors!();
}

impl<S, I, H, C> Service<Request<Staged<C>>> for MiddlewareService<S, I, H>
where
    S: Service<Request<Staged<HCons<H::Output, C>>>> + Clone,
    S::Response: Amend,
    S::Error: Into<BoxError> + 'static,
    H: MiddlewareHandler<I, C>,
    I: DeserializeOwned + JsonSchema + Validate,
    I::Context: Default,
{
    type Response = S::Response;
    type Error = ApiError;
    type Future = ResponseFuture<H::Future, S, C, H::Amends>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(ApiError::from_inner)
    }

    fn call(&mut self, request: Request<Staged<C>>) -> Self::Future {
        let (parts, staged) = request.into_parts();
        // The stage's span (under a traced request) covers the middleware's checks and run,
        // and ends before the rest of the chain is called.
        let span = Span::start(self.middleware.name_or_output_type::<C>());
        // Credentials first: a request without them learns nothing of the input's rules.
        if let Some(error) = self
            .middleware
            .missing_credentials(&parts.headers, &staged.input)
        {
            span.end(Some(&error));
            return ResponseFuture::error(error, H::amends);
        }
        let input = match self.middleware.decoder.decode(&staged.input) {
            Ok(input) => input,
            Err(error) => {
                span.end(Some(&error));
                return ResponseFuture::error(error, H::amends);
            }
        };
        // Borrowed, not cloned (`Logger::from_extensions`): the call only lends it.
        let default_logger;
        let logger = if let Some(logger) = parts.extensions.get::<Logger>() {
            logger
        } else {
            default_logger = Logger::default();
            &default_logger
        };
        // An outcome known at once (a `std::future::Ready`: the cookie and cache middleware's,
        // most `Middleware::custom` ones; a rate limiter on a memory store): the inner service
        // is called now, and the stage's future starts in its last state instead of taking the
        // request's parts and context through a first one (~300 instructions per request).
        let outcome = span.in_scope(|| {
            self.middleware
                .handler
                .call_now(input, &parts, &staged.ctx, logger)
        });
        let running = match outcome {
            Ok(Ok(output)) => {
                span.end(None);
                let amends = H::amends(&output);
                let Staged { input, ctx } = staged;
                let staged = Staged {
                    input,
                    ctx: HCons {
                        head: output,
                        tail: ctx,
                    },
                };
                let future = self.inner.call(Request::from_parts(parts, staged));
                return ResponseFuture::inner(future, amends, H::amends);
            }
            Ok(Err(error)) => {
                span.end(Some(&error));
                return ResponseFuture::error(error, H::amends);
            }
            Err(running) => running,
        };
        // The inner service is called after the middleware's future: take the ready one along.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        ResponseFuture::running(running, span, inner, parts, staged, H::amends)
    }
}
