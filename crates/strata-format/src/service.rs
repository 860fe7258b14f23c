use std::convert::Infallible;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::task::{Context, Poll};

use http::{Request, Response};
use strata_core::{ApiError, Logger, Mode, Output, RequestInfo, ResponseBody};
use tower_service::Service;

use crate::future::{Finish, ResponseFuture, panic_error};
use crate::result_handler::ResultHandler;

/// Formats the inner service's outcome with a result handler; see the [crate docs](crate).
#[derive(Debug, Clone)]
pub struct FormatService<S, R> {
    inner: S,
    result_handler: R,
    mode: Mode,
}

impl<S, R> FormatService<S, R> {
    /// Wraps `inner`, in development mode.
    pub fn new(inner: S, result_handler: R) -> Self {
        Self::from_parts(inner, result_handler, Mode::Development)
    }

    pub(crate) fn from_parts(inner: S, result_handler: R, mode: Mode) -> Self {
        Self {
            inner,
            result_handler,
            mode,
        }
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Unwraps the inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, R, B> Service<Request<B>> for FormatService<S, R>
where
    S: Service<Request<B>, Response = Output, Error = ApiError>,
    R: ResultHandler,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = ResponseFuture<S::Future, R>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // An inner service that is not ready because it failed is answered per request instead.
        match self.inner.poll_ready(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(_) => Poll::Ready(Ok(())),
        }
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let finish = Finish {
            result_handler: self.result_handler.clone(),
            mode: self.mode,
            info: RequestInfo {
                method: request.method().clone(),
                uri: request.uri().clone(),
            },
            logger: Logger::from_extensions(request.extensions()),
        };
        match catch_unwind(AssertUnwindSafe(|| self.inner.call(request))) {
            Ok(future) => ResponseFuture::new(future, finish),
            Err(payload) => ResponseFuture::failed(panic_error(&*payload), finish),
        }
    }
}
