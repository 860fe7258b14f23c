use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Buf;
use http::request::Parts;
use http::{Request, StatusCode};
use http_body::Body;
use pin_project_lite::pin_project;
use strata_core::{ApiError, BoxError, ErrorKind, PathParams};
use strata_input::{Parsed, ParsedBody, Query, UploadedFile};
use tower_service::Service;

use crate::budget::BodyReservation;
use crate::service::{BodyKind, parse_body, too_large};

/// An error of the body itself: a server's body deadline is a 408; a limit applied by an outer
/// layer (tower-http's `RequestBodyLimit`) is a 413; anything else (a reset connection, a malformed chunk) a 400
/// whose detail is shown in development only.
fn read_error(error: BoxError) -> ApiError {
    if let Some(timeout) = ApiError::from_body_timeout(&error) {
        return timeout.with_source(error);
    }
    if error
        .downcast_ref::<http_body_util::LengthLimitError>()
        .is_some()
    {
        return ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Request body exceeds the limit",
        )
        .with_kind(ErrorKind::PayloadTooLarge)
        .with_source(error);
    }
    ApiError::bad_request(
        ErrorKind::Parse,
        format!("Failed to read the request body: {error}"),
    )
    .exposed(false)
    .with_source(error)
}

/// What is kept while the body is read.
pub(crate) struct Pending<S> {
    pub(crate) parts: Parts,
    pub(crate) query: Query,
    pub(crate) params: PathParams,
    pub(crate) kind: BodyKind,
    /// Set when the content type cannot be read: the error is returned as soon as the body
    /// turns out not to be empty (its length was unknown up front).
    pub(crate) unreadable: Option<ApiError>,
    pub(crate) limit: usize,
    pub(crate) max_fields: usize,
    pub(crate) inner: S,
    /// The body's share of the budget, held until the request is answered.
    pub(crate) reservation: Option<BodyReservation>,
}

impl<S: Service<Request<Parsed>>> Pending<S> {
    /// Calls the inner service with the parsed request; the body's reservation lives on until
    /// it answers.
    fn forward<B>(
        mut self,
        body: ParsedBody,
        files: Vec<(String, Vec<UploadedFile>)>,
    ) -> State<B, S, S::Future> {
        let parsed = Parsed {
            query: self.query,
            body,
            params: self.params,
            files,
        };
        State::Inner {
            future: self.inner.call(Request::from_parts(self.parts, parsed)),
            reservation: self.reservation,
        }
    }
}

/// The multipart read (`strata_upload::read_multipart`, an `async fn`), boxed to be stored.
pub(crate) type ReadMultipart =
    Pin<Box<dyn Future<Output = Result<strata_upload::Multipart, ApiError>> + Send>>;

pin_project! {
    #[project = StateProj]
    enum State<B, S, F> {
        // What waits for the body is boxed: most requests have none, and every request's future
        // (moved through the stack's layers) is as large as its largest state.
        Reading { #[pin] body: B, buffer: Vec<u8>, pending: Option<Box<Pending<S>>> },
        Multipart { read: ReadMultipart, pending: Option<Box<Pending<S>>> },
        Inner { #[pin] future: F, reservation: Option<BodyReservation> },
        Error { error: Option<ApiError> },
    }
}

pin_project! {
    /// Response future of [`ParseService`](crate::ParseService).
    pub struct ResponseFuture<B, S: Service<Request<Parsed>>> {
        #[pin]
        state: State<B, S, S::Future>,
    }
}

impl<B, S: Service<Request<Parsed>>> ResponseFuture<B, S> {
    pub(crate) fn error(error: ApiError) -> Self {
        Self {
            state: State::Error { error: Some(error) },
        }
    }

    pub(crate) fn inner(future: S::Future) -> Self {
        Self {
            state: State::Inner {
                future,
                reservation: None,
            },
        }
    }

    #[cfg_attr(not(feature = "upload"), allow(dead_code))]
    pub(crate) fn multipart(read: ReadMultipart, pending: Pending<S>) -> Self {
        Self {
            state: State::Multipart {
                read,
                pending: Some(Box::new(pending)),
            },
        }
    }

    pub(crate) fn reading(body: B, capacity: usize, pending: Pending<S>) -> Self {
        Self {
            state: State::Reading {
                body,
                buffer: Vec::with_capacity(capacity),
                pending: Some(Box::new(pending)),
            },
        }
    }
}

impl<B, S> Future for ResponseFuture<B, S>
where
    S: Service<Request<Parsed>>,
    S::Error: Into<BoxError> + 'static,
    B: Body,
    B::Error: Into<BoxError>,
{
    type Output = Result<S::Response, ApiError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            match this.state.as_mut().project() {
                StateProj::Inner { future, .. } => {
                    return future.poll(cx).map_err(ApiError::from_inner);
                }
                StateProj::Multipart { read, pending } => {
                    let result = ready!(read.as_mut().poll(cx));
                    let next = match (result, pending.take()) {
                        (Ok(multipart), Some(pending)) => {
                            let body = if multipart.fields.is_empty() {
                                ParsedBody::Empty
                            } else {
                                ParsedBody::Form(multipart.fields)
                            };
                            (*pending).forward(body, multipart.files)
                        }
                        (Err(error), _) => State::Error { error: Some(error) },
                        (Ok(_), None) => State::Error { error: None },
                    };
                    this.state.set(next);
                }
                StateProj::Error { error } => {
                    let error = error
                        .take()
                        .unwrap_or_else(|| ApiError::internal("polled after completion"));
                    return Poll::Ready(Err(error));
                }
                StateProj::Reading {
                    mut body,
                    buffer,
                    pending,
                } => {
                    let limit = pending.as_ref().map_or(0, |p| p.limit);
                    let frame = ready!(body.as_mut().poll_frame(cx));
                    match frame {
                        Some(Ok(frame)) => {
                            let Ok(mut data) = frame.into_data() else {
                                continue;
                            };
                            if data.has_remaining()
                                && let Some(error) =
                                    pending.as_mut().and_then(|p| p.unreadable.take())
                            {
                                this.state.set(State::Error { error: Some(error) });
                                continue;
                            }
                            if buffer.len() + data.remaining() > limit {
                                let error = too_large(limit);
                                this.state.set(State::Error { error: Some(error) });
                                continue;
                            }
                            while data.has_remaining() {
                                let chunk = data.chunk();
                                buffer.extend_from_slice(chunk);
                                let n = chunk.len();
                                data.advance(n);
                            }
                        }
                        Some(Err(error)) => {
                            let error = read_error(error.into());
                            this.state.set(State::Error { error: Some(error) });
                        }
                        None => {
                            let Some(pending) = pending.take() else {
                                this.state.set(State::Error { error: None });
                                continue;
                            };
                            let next = match parse_body(
                                pending.kind,
                                std::mem::take(buffer),
                                pending.max_fields,
                                &pending.parts.headers,
                            ) {
                                Ok(body) => (*pending).forward(body, Vec::new()),
                                Err(error) => State::Error { error: Some(error) },
                            };
                            this.state.set(next);
                        }
                    }
                }
            }
        }
    }
}
