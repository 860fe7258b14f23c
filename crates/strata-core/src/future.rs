//! Response futures shared by the stage crates.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::error::{ApiError, BoxError};
use pin_project_lite::pin_project;

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Inner { #[pin] future: F },
        Error { error: Option<ApiError> },
    }
}

pin_project! {
    /// A response future that is either the inner service's future or an error decided before
    /// calling it (a stage that short-circuits). Stage crates export it as their `ResponseFuture`.
    pub struct ShortCircuit<F> {
        #[pin]
        state: State<F>,
    }
}

impl<F> ShortCircuit<F> {
    /// The inner future.
    pub fn inner(future: F) -> Self {
        Self {
            state: State::Inner { future },
        }
    }

    /// An immediate error.
    pub fn error(error: ApiError) -> Self {
        Self {
            state: State::Error { error: Some(error) },
        }
    }
}

/// The inner service's error, whatever its type, becomes an [`ApiError`] (a foreign error is a
/// 500 carrying it as its source).
impl<F, T, E> Future for ShortCircuit<F>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError> + 'static,
{
    type Output = Result<T, ApiError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Inner { future } => future.poll(cx).map_err(ApiError::from_inner),
            StateProj::Error { error } => Poll::Ready(Err(error
                .take()
                .unwrap_or_else(|| ApiError::internal("polled after completion")))),
        }
    }
}
