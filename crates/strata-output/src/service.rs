use std::task::{Context, Poll};

use derive_where::derive_where;

use garde::Validate;
use http::Request;
use schemars::JsonSchema;
use serde::Serialize;
use strata_core::{ApiError, BoxError, Output};
use strata_decode::Decoder;
use tower_service::Service;

use crate::future::ResponseFuture;
use crate::layer::OutputLayer;
use crate::range::RangeHeaders;
use crate::reply::HandlerOutput;

/// Checks and serializes the inner service's output, whose body type is `O`; see the
/// [crate docs](crate). It takes an `http::Request`, whose `Range` and `If-Range` it keeps for
/// a streamed output ([`RangeHeaders`]).
#[derive_where(Clone, Debug; S)]
pub struct OutputService<S, O> {
    inner: S,
    checker: Decoder<O>,
}

impl<S, O> OutputService<S, O> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        Self::from_checker(inner, Decoder::new())
    }

    pub(crate) fn from_checker(inner: S, checker: Decoder<O>) -> Self {
        Self { inner, checker }
    }

    /// An [`OutputLayer`] for `O`.
    pub fn layer() -> OutputLayer<O> {
        OutputLayer::new()
    }

    strata_core::inner_service_accessors!();
}

impl<S, O, B> Service<Request<B>> for OutputService<S, O>
where
    S: Service<Request<B>>,
    S::Error: Into<BoxError> + 'static,
    S::Response: HandlerOutput<Body = O>,
    O::Context: Default,
    O: Serialize + Validate + JsonSchema,
{
    type Response = Output;
    type Error = ApiError;
    type Future = ResponseFuture<S::Future, O>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(ApiError::from_inner)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // Kept before the handler takes the request: a file answers them with part of itself.
        let range = if S::Response::READS_RANGE {
            RangeHeaders::boxed(request.method(), request.headers())
        } else {
            None
        };
        ResponseFuture::new(self.inner.call(request), self.checker.clone(), range)
    }
}
