use std::convert::Infallible;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::task::{Context, Poll, ready};

use http::{HeaderMap, Request, Response};
use strata_core::{ApiError, Body, BoxError, Logger, Mode, Output, RequestInfo};
use tower_service::Service;

use crate::future::{Finish, ResponseFuture, panic_error};
use crate::layer::FormatLayer;
use strata_core::ResultHandler;

/// Formats the inner service's outcome with a result handler; see the [crate docs](crate).
#[derive(Debug)]
pub struct FormatService<S, R> {
    inner: S,
    result_handler: R,
    mode: Mode,
    /// An error of the inner service's `poll_ready`, answered to the next request.
    not_ready: Option<ApiError>,
}

impl<S: Clone, R: Clone> Clone for FormatService<S, R> {
    fn clone(&self) -> Self {
        Self::from_parts(self.inner.clone(), self.result_handler.clone(), self.mode)
    }
}

impl<S, R> FormatService<S, R> {
    /// Wraps `inner`, in production mode (internal messages hidden).
    pub fn new(inner: S, result_handler: R) -> Self {
        Self::from_parts(inner, result_handler, Mode::Production)
    }

    pub(crate) fn from_parts(inner: S, result_handler: R, mode: Mode) -> Self {
        Self {
            inner,
            result_handler,
            mode,
            not_ready: None,
        }
    }

    /// A [`FormatLayer`] formatting with `result_handler`.
    pub fn layer(result_handler: R) -> FormatLayer<R> {
        FormatLayer::new(result_handler)
    }

    strata_core::inner_service_accessors!();
}

impl<S, R, B> Service<Request<B>> for FormatService<S, R>
where
    S: Service<Request<B>, Response = Output>,
    S::Error: Into<BoxError> + 'static,
    R: ResultHandler,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = ResponseFuture<S::Future, R>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // This service cannot fail: an inner readiness error is the next request's response.
        if self.not_ready.is_none()
            && let Err(error) = ready!(self.inner.poll_ready(cx))
        {
            self.not_ready = Some(ApiError::from_inner(error));
        }
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let finish = Finish {
            result_handler: self.result_handler.clone(),
            mode: self.mode,
            info: RequestInfo {
                method: request.method().clone(),
                uri: request.uri().clone(),
                headers: if R::REQUEST_HEADERS {
                    request.headers().clone()
                } else {
                    HeaderMap::new()
                },
            },
            logger: Logger::from_extensions(request.extensions()),
        };
        if let Some(error) = self.not_ready.take() {
            return ResponseFuture::failed(error, finish);
        }
        match catch_unwind(AssertUnwindSafe(|| self.inner.call(request))) {
            Ok(future) => ResponseFuture::new(future, finish),
            Err(payload) => ResponseFuture::failed(panic_error(&*payload), finish),
        }
    }
}
