//! The application's own tower layers around the app ([`create_server_with`]).
//!
//! [`create_server_with`]: crate::create_server_with

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::header::RETRY_AFTER;
use http::{HeaderValue, Response, StatusCode};
use http_body::Body;
use pin_project_lite::pin_project;
use strata_core::error_response;
use strata_core::{ApiError, BoxError, ErrorKind, Mode, ResponseBody};
use tower_service::Service;

/// Turns what a user's stack answers into the server's responses: any body becomes a
/// [`ResponseBody`] (without boxing when it already is one), and an error of a layer becomes a
/// JSON error: tower's timeout a 504, load shedding a 503 with `Retry-After: 1`, anything else a
/// 500 (its text shown in development mode only).
#[derive(Debug)]
pub(crate) struct Layered<S> {
    inner: S,
    mode: Mode,
    /// The stack failed to get ready: the next request gets this error, without calling it.
    unready: Option<BoxError>,
}

impl<S: Clone> Clone for Layered<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            mode: self.mode,
            unready: None,
        }
    }
}

impl<S> Layered<S> {
    pub(crate) fn new(inner: S, mode: Mode) -> Self {
        Self {
            inner,
            mode,
            unready: None,
        }
    }
}

#[allow(clippy::needless_pass_by_value)] // the error ends here
fn layer_error(error: BoxError, mode: Mode) -> Response<ResponseBody> {
    let api = if error.is::<tower::timeout::error::Elapsed>() {
        ApiError::new(StatusCode::GATEWAY_TIMEOUT, "The request took too long")
    } else if error.is::<tower::load_shed::error::Overloaded>() {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "The server is overloaded")
            .with_header(RETRY_AFTER, HeaderValue::from_static("1"))
    } else {
        let message = match mode {
            Mode::Development => error.to_string(),
            Mode::Production => "Internal Server Error".to_owned(),
        };
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message).with_kind(ErrorKind::Internal)
    };
    error_response(api)
}

impl<S, R, B> Service<R> for Layered<S>
where
    S: Service<R, Response = Response<B>>,
    S::Error: Into<BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = LayeredFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // A layer that is not ready (a concurrency limit at its cap) makes hyper wait; one
        // that fails would close the connection, so its error answers the request instead.
        if let Err(error) = ready!(self.inner.poll_ready(cx)) {
            self.unready = Some(error.into());
        }
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: R) -> Self::Future {
        match self.unready.take() {
            None => LayeredFuture::Inner {
                inner: self.inner.call(request),
                mode: self.mode,
            },
            Some(error) => LayeredFuture::Failed {
                response: Some(layer_error(error, self.mode)),
            },
        }
    }
}

pin_project! {
    /// The response future of [`Layered`].
    #[project = LayeredProj]
    pub(crate) enum LayeredFuture<F> {
        Inner { #[pin] inner: F, mode: Mode },
        Failed { response: Option<Response<ResponseBody>> },
    }
}

impl<F, B, E> Future for LayeredFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
    E: Into<BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Output = Result<Response<ResponseBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            LayeredProj::Inner { inner, mode } => Poll::Ready(Ok(match ready!(inner.poll(cx)) {
                Ok(response) => response.map(ResponseBody::stream),
                Err(error) => layer_error(error.into(), *mode),
            })),
            LayeredProj::Failed { response } => Poll::Ready(Ok(response
                .take()
                .unwrap_or_else(|| error_response(ApiError::internal("polled after completion"))))),
        }
    }
}
