use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use garde::Validate;
use pin_project_lite::pin_project;
use schemars::JsonSchema;
use serde::Serialize;
use strata_core::{ApiError, BoxError, ErrorKind, Output};
use strata_decode::Decoder;

use crate::range::{NO_RANGE, RangeHeaders};
use crate::reply::HandlerOutput;

pin_project! {
    /// Response future of [`OutputService`](crate::OutputService).
    pub struct ResponseFuture<F, O> {
        #[pin]
        inner: F,
        checker: Decoder<O>,
        // Only for an output that reads them, and only when the request has them.
        range: Option<Box<RangeHeaders>>,
    }
}

impl<F, O> ResponseFuture<F, O> {
    pub(crate) fn new(inner: F, checker: Decoder<O>, range: Option<Box<RangeHeaders>>) -> Self {
        Self {
            inner,
            checker,
            range,
        }
    }
}

impl<F, T, E, O> Future for ResponseFuture<F, O>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError> + 'static,
    T: HandlerOutput<Body = O>,
    O: Serialize + Validate + JsonSchema,
    O::Context: Default,
{
    type Output = Result<Output, ApiError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let output = match ready!(this.inner.poll(cx)) {
            Ok(output) => output,
            Err(error) => {
                let mut error = ApiError::from_inner(error);
                // The handler answered a conditional request early (`ApiError::not_modified`):
                // the 304 is a response, so the middleware around see a success, not a 500.
                if error.is_not_modified() {
                    let headers = error.take_headers().unwrap_or_default();
                    return Poll::Ready(Ok(Output::not_modified(headers)));
                }
                return Poll::Ready(Err(error));
            }
        };
        let range = this.range.as_deref().unwrap_or(&NO_RANGE);
        let (status, headers, body) = match output.into_streamed(range) {
            Ok(streamed) => return Poll::Ready(Ok(streamed)),
            Err(output) => match output.into_checked_parts() {
                Ok(parts) => parts,
                Err(error) => return Poll::Ready(Err(error)),
            },
        };
        if let Err(message) = this.checker.check(&body, Some("output")) {
            return Poll::Ready(Err(
                ApiError::internal(message).with_kind(ErrorKind::OutputValidation)
            ));
        }
        Poll::Ready(match Output::new(&body) {
            Ok(output) => Ok(output.with_status(status).with_headers(headers)),
            Err(error) => Err(ApiError::internal(format!(
                "Failed to serialize the output: {error}"
            ))
            .with_source(error)),
        })
    }
}
