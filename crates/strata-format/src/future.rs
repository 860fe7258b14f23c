use std::any::Any;
use std::convert::Infallible;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Extensions, HeaderMap, Response, StatusCode};
use http_body::{Body as HttpBody, Frame, SizeHint};
use pin_project_lite::pin_project;
use strata_core::{
    ApiError, Body, BoxError, Logger, Mode, Output, PollFrame, RequestInfo, StreamFailure,
    merge_headers_under,
};

use strata_core::ResultHandler;

/// What is needed to build the response once the outcome is known.
pub(crate) struct Finish<R> {
    pub(crate) result_handler: R,
    pub(crate) mode: Mode,
    pub(crate) info: RequestInfo,
    pub(crate) logger: Logger,
}

impl<R: ResultHandler> Finish<R> {
    fn respond(self, result: Result<Output, ApiError>) -> Response<Body> {
        let mut result = result.map_err(|mut error| {
            if error.status().is_server_error() {
                let line = format_args!(
                    "{} {}: {} {}",
                    self.info.method,
                    self.info.uri.path(),
                    error.status().as_u16(),
                    error.message()
                );
                // The causes, innermost last: what the message alone does not say. An overload
                // clients caused is a rate-limited warning: they can cause it at will.
                strata_log::server_error(&self.logger, line, &error);
            }
            if self.mode == Mode::Production
                && (error.status().is_server_error() || !error.expose())
            {
                error.set_message(error.status().canonical_reason().unwrap_or("Error"));
            }
            error
        });
        let (mut extra_headers, mut extensions) = match &mut result {
            Ok(output) => (output.take_headers(), output.take_extensions()),
            Err(error) => (error.take_headers(), Extensions::new()),
        };
        // An error's kind goes with its response, for the layers above that say why requests
        // failed (metrics count validation failures by it); successes carry none.
        if let Err(error) = &result {
            extensions.insert(error.kind());
        }
        // An outcome that carries headers: the result handler builds the response on them
        // (the default handler's response takes this map as its own: no second map, no copy).
        let handled = catch_unwind(AssertUnwindSafe(|| match &mut extra_headers {
            None => self.result_handler.handle(result, &self.info, &self.logger),
            Some(headers) => {
                self.result_handler
                    .handle_with_headers(result, headers, &self.info, &self.logger)
            }
        }));
        let mut response = handled.unwrap_or_else(|payload| {
            let error = panic_error(&*payload);
            self.logger
                .error(format_args!("Result handler failed: {}", error.message()));
            crate::error_response(ApiError::internal("Internal Server Error"))
        });
        // What the handler left (all of them when it panicked).
        if let Some(headers) = extra_headers.filter(|headers| !headers.is_empty()) {
            merge_headers_under(&mut response, headers);
        }
        // Nearly always empty: then nothing is moved.
        if !extensions.is_empty() {
            response.extensions_mut().extend(extensions);
        }
        response
    }
}

pub(crate) fn panic_error(payload: &(dyn Any + Send)) -> ApiError {
    ApiError::internal(format!("Panic: {}", strata_core::panic_message(payload)))
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Running { #[pin] future: F },
        // A streamed output waits for its first piece: an error before it is still an error
        // response from the result handler; after it, the status line is sent. A stream
        // whose head must go at once (an event stream, a file) yields an empty first piece.
        Peeking { head: Option<(StatusCode, HeaderMap, Extensions)>, body: Body },
        Failed { error: Option<ApiError> },
    }
}

/// A streamed body whose first frame was read ahead; errors after it end the stream, logged.
struct Prefixed {
    first: Option<Frame<Bytes>>,
    rest: Body,
    logger: Logger,
    info: RequestInfo,
}

impl HttpBody for Prefixed {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> PollFrame {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(first)));
        }
        let polled = catch_unwind(AssertUnwindSafe(|| Pin::new(&mut self.rest).poll_frame(cx)));
        let error = match polled {
            Ok(Poll::Ready(Some(Err(error)))) => match error.downcast::<StreamFailure>() {
                Ok(failure) => failure.0,
                Err(error) => ApiError::internal("The response stream failed").with_source(error),
            },
            Ok(other) => return other,
            Err(payload) => panic_error(&*payload),
        };
        // The status line is gone: cut the response (a truncated body must never look
        // complete) and say why.
        let line = format_args!(
            "{} {}: {} after the response started",
            self.info.method,
            self.info.uri.path(),
            error.message()
        );
        // An overload (a shortage of descriptors while a file is sent) is a rate-limited
        // warning, anything else an error.
        strata_log::server_error(&self.logger, line, &error);
        Poll::Ready(Some(Err(error.message().to_owned().into())))
    }

    fn is_end_stream(&self) -> bool {
        self.first.is_none() && self.rest.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let mut hint = self.rest.size_hint();
        let first = self
            .first
            .as_ref()
            .and_then(Frame::data_ref)
            .map_or(0, |data| data.len() as u64);
        // Upper first: a lower bound above the upper one panics.
        if let Some(upper) = hint.upper() {
            hint.set_upper(upper.saturating_add(first));
        }
        hint.set_lower(hint.lower().saturating_add(first));
        hint
    }
}

pin_project! {
    /// Response future of [`FormatService`](crate::FormatService).
    pub struct ResponseFuture<F, R> {
        #[pin]
        state: State<F>,
        finish: Option<Finish<R>>,
    }
}

impl<F, R> ResponseFuture<F, R> {
    pub(crate) fn new(future: F, finish: Finish<R>) -> Self {
        Self {
            state: State::Running { future },
            finish: Some(finish),
        }
    }

    pub(crate) fn failed(error: ApiError, finish: Finish<R>) -> Self {
        Self {
            state: State::Failed { error: Some(error) },
            finish: Some(finish),
        }
    }
}

impl<F, E, R> Future for ResponseFuture<F, R>
where
    F: Future<Output = Result<Output, E>>,
    E: Into<BoxError> + 'static,
    R: ResultHandler,
{
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let result = loop {
            match this.state.as_mut().project() {
                StateProj::Running { future } => {
                    let result = match catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
                        Ok(Poll::Pending) => return Poll::Pending,
                        Ok(Poll::Ready(result)) => result.map_err(ApiError::from_inner),
                        Err(payload) => Err(panic_error(&*payload)),
                    };
                    match result {
                        Ok(mut output) if output.is_streamed() => {
                            let body = output.take_stream().unwrap_or_default();
                            let headers = output.take_headers().unwrap_or_default();
                            let extensions = output.take_extensions();
                            if body.is_end_stream()
                                && matches!(
                                    output.status(),
                                    StatusCode::NOT_MODIFIED | StatusCode::NO_CONTENT
                                )
                            {
                                // A status that never has a body, and nothing to read ahead
                                // or to fail later: sent as it is, without the wrapper (an
                                // allocation, ~300 instructions). An empty `200` keeps it, so
                                // it still reads as streamed (the server's `ETag` layer
                                // leaves streamed bodies, an empty file's too, untagged).
                                this.finish.take();
                                let mut response = Response::new(body);
                                *response.status_mut() = output.status();
                                *response.headers_mut() = headers;
                                *response.extensions_mut() = extensions;
                                return Poll::Ready(Ok(response));
                            }
                            let head = Some((output.status(), headers, extensions));
                            this.state.set(State::Peeking { head, body });
                        }
                        other => break other,
                    }
                }
                StateProj::Peeking { head, body } => {
                    let polled =
                        catch_unwind(AssertUnwindSafe(|| Pin::new(&mut *body).poll_frame(cx)));
                    let first = match polled {
                        Ok(Poll::Pending) => return Poll::Pending,
                        Ok(Poll::Ready(None)) => None,
                        Ok(Poll::Ready(Some(Ok(frame)))) => Some(frame),
                        Ok(Poll::Ready(Some(Err(error)))) => {
                            // A stream that ends itself with an `ApiError` gets that answer.
                            break Err(match error.downcast::<StreamFailure>() {
                                Ok(failure) => failure.0,
                                Err(error) => ApiError::internal(
                                    "The response stream failed before its first byte",
                                )
                                .with_source(error),
                            });
                        }
                        Err(payload) => break Err(panic_error(&*payload)),
                    };
                    let (status, headers, extensions) = head.take().unwrap_or_default();
                    // A body that ended is not polled again (a stream need not be fused).
                    let rest = match first {
                        Some(_) => std::mem::take(body),
                        None => Body::empty(),
                    };
                    let Some(finish) = this.finish.take() else {
                        break Err(ApiError::internal("polled after completion"));
                    };
                    let body = Prefixed {
                        first,
                        rest,
                        logger: finish.logger,
                        info: finish.info,
                    };
                    let mut response = Response::new(Body::new(body));
                    *response.status_mut() = status;
                    *response.headers_mut() = headers;
                    *response.extensions_mut() = extensions;
                    return Poll::Ready(Ok(response));
                }
                StateProj::Failed { error } => {
                    break Err(error
                        .take()
                        .unwrap_or_else(|| ApiError::internal("polled after completion")));
                }
            }
        };
        match this.finish.take() {
            Some(finish) => Poll::Ready(Ok(finish.respond(result))),
            None => Poll::Ready(Ok(crate::error_response(ApiError::internal(
                "polled after completion",
            )))),
        }
    }
}
