use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::Request;
use http::request::Parts;
use pin_project_lite::pin_project;
use strata_core::{ApiError, BoxError, HCons};
use strata_input::Staged;
use tower_service::Service;

use crate::amend::{Amend, AmendResponse};
use crate::span::Span;

pin_project! {
    #[project = StateProj]
    enum State<M, S, F, C, A> {
        // Boxed: the request's parts, its context and the inner service make this state the
        // largest by far, and every future around the stage would be as large, moved whole
        // at each layer, even when the middleware decided in the stage's call and this state
        // never exists.
        Running { waiting: Pin<Box<Waiting<M, S, C>>> },
        Inner { #[pin] future: F, amends: Option<A> },
        Error { error: Option<ApiError> },
    }
}

pin_project! {
    /// The middleware's future, its span, and what the inner service is called with once it
    /// is done.
    struct Waiting<M, S, C> {
        #[pin]
        middleware: M,
        span: Option<Span>,
        rest: Option<(S, Parts, Staged<C>)>,
    }
}

pin_project! {
    /// Response future of [`MiddlewareService`](crate::MiddlewareService): the middleware's
    /// future, then the inner service's.
    pub struct ResponseFuture<M, S, C, A>
    where
        M: Future,
        M::Output: HasOk,
        S: Service<Request<Staged<HCons<<M::Output as HasOk>::Ok, C>>>>,
    {
        #[pin]
        state: State<M, S, S::Future, C, A>,
        // What the middleware keeps of its output to amend the response.
        keep: fn(&<M::Output as HasOk>::Ok) -> A,
    }
}

/// The success type of a `Result`, to name the context entry a middleware future yields.
pub trait HasOk {
    /// The success type.
    type Ok;
}

impl<T, E> HasOk for Result<T, E> {
    type Ok = T;
}

impl<M, S, C, O, A> ResponseFuture<M, S, C, A>
where
    M: Future<Output = Result<O, ApiError>>,
    S: Service<Request<Staged<HCons<O, C>>>>,
{
    pub(crate) fn error(error: ApiError, keep: fn(&O) -> A) -> Self {
        Self {
            state: State::Error { error: Some(error) },
            keep,
        }
    }

    /// The inner service's future, the middleware's outcome known when it was called.
    pub(crate) fn inner(future: S::Future, amends: A, keep: fn(&O) -> A) -> Self {
        Self {
            state: State::Inner {
                future,
                amends: Some(amends),
            },
            keep,
        }
    }

    pub(crate) fn running(
        middleware: M,
        span: Span,
        inner: S,
        parts: Parts,
        staged: Staged<C>,
        keep: fn(&O) -> A,
    ) -> Self {
        Self {
            state: State::Running {
                waiting: Box::pin(Waiting {
                    middleware,
                    span: Some(span),
                    rest: Some((inner, parts, staged)),
                }),
            },
            keep,
        }
    }
}

impl<M, S, C, O, A> Future for ResponseFuture<M, S, C, A>
where
    M: Future<Output = Result<O, ApiError>>,
    S: Service<Request<Staged<HCons<O, C>>>>,
    S::Response: Amend,
    S::Error: Into<BoxError> + 'static,
    A: AmendResponse,
{
    type Output = Result<S::Response, ApiError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            match this.state.as_mut().project() {
                StateProj::Inner { future, amends } => {
                    let mut outcome = ready!(future.poll(cx)).map_err(ApiError::from_inner);
                    if let Some(amends) = amends.take() {
                        amends.amend(&mut outcome);
                    }
                    return Poll::Ready(outcome);
                }
                StateProj::Error { error } => {
                    let error = error
                        .take()
                        .unwrap_or_else(|| ApiError::internal("polled after completion"));
                    return Poll::Ready(Err(error));
                }
                StateProj::Running { waiting } => {
                    let waiting = waiting.as_mut().project();
                    let (middleware, rest) = (waiting.middleware, waiting.rest);
                    let outcome = match waiting.span {
                        Some(span) => ready!(span.in_scope(|| middleware.poll(cx))),
                        None => ready!(middleware.poll(cx)),
                    };
                    // Ended before the inner service is called: its stages are siblings.
                    if let Some(span) = waiting.span.take() {
                        span.end(outcome.as_ref().err());
                    }
                    let next = match outcome {
                        Ok(output) => match rest.take() {
                            Some((mut inner, parts, Staged { input, ctx })) => {
                                let amends = Some((this.keep)(&output));
                                let staged = Staged {
                                    input,
                                    ctx: HCons {
                                        head: output,
                                        tail: ctx,
                                    },
                                };
                                State::Inner {
                                    future: inner.call(Request::from_parts(parts, staged)),
                                    amends,
                                }
                            }
                            None => State::Error { error: None },
                        },
                        Err(error) => State::Error { error: Some(error) },
                    };
                    this.state.set(next);
                }
            }
        }
    }
}
