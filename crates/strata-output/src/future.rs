use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use garde::Validate;
use pin_project_lite::pin_project;
use schemars::JsonSchema;
use serde::Serialize;
use strata_core::{ApiError, Decoder, ErrorKind, Output};

pin_project! {
    /// Response future of [`OutputService`](crate::OutputService).
    pub struct ResponseFuture<F, O> {
        #[pin]
        inner: F,
        checker: Decoder<O>,
    }
}

impl<F, O> ResponseFuture<F, O> {
    pub(crate) fn new(inner: F, checker: Decoder<O>) -> Self {
        Self { inner, checker }
    }
}

impl<F, O> Future for ResponseFuture<F, O>
where
    F: Future<Output = Result<O, ApiError>>,
    O: Serialize + Validate + JsonSchema,
    O::Context: Default,
{
    type Output = Result<Output, ApiError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let output = ready!(this.inner.poll(cx))?;
        if let Err(message) = this.checker.check(&output, Some("output")) {
            return Poll::Ready(Err(
                ApiError::internal(message).with_kind(ErrorKind::OutputValidation)
            ));
        }
        Poll::Ready(Output::new(&output).map_err(|error| {
            ApiError::internal(format!("Failed to serialize the output: {error}"))
                .with_source(error)
        }))
    }
}
