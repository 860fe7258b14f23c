//! The application's own tower layers around the app ([`CreateServer::layers`]).
//!
//! [`CreateServer::layers`]: crate::CreateServer::layers

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, Uri, Version};
use http_body::Body as HttpBody;
use pin_project_lite::pin_project;
use strata_core::{ApiError, Body, BoxError, ErrorHandler, Logger, Mode, error_response};
use strata_endpoint::layer_error;
use tower_service::Service;

/// Turns what a user's stack answers into the server's responses: any body becomes a
/// [`Body`] (without boxing when it already is one), and an error of a layer becomes
/// an error response: tower's timeout a 504, load shedding a 503 with `Retry-After: 1`, a
/// Strata stage's error (boxed by a layer between stages) what it was, anything else a 500 (its
/// text shown in development mode only). Server errors are logged with their causes; the
/// response comes from the router's error handler when one is set, as every error outside an
/// endpoint does.
#[derive(Debug)]
pub struct Layered<S> {
    inner: S,
    errors: Errors,
    /// The stack failed to get ready: the next request gets this error, without calling it.
    unready: Option<BoxError>,
}

/// How a layer's error is answered: shared by every clone of the stack.
#[derive(Debug, Clone)]
pub(crate) struct Errors {
    pub(crate) mode: Mode,
    pub(crate) handler: Option<ErrorHandler>,
    pub(crate) logger: Logger,
    /// The server's metrics, which count these refusals (the router's metrics do not see
    /// them).
    pub(crate) metrics: Option<crate::Metrics>,
}

impl<S: Clone> Clone for Layered<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            errors: self.errors.clone(),
            unready: None,
        }
    }
}

impl<S> Layered<S> {
    pub(crate) fn new(inner: S, errors: Errors) -> Self {
        Self {
            inner,
            errors,
            unready: None,
        }
    }
}

/// What a failed request was, for its error response and its log line.
#[derive(Debug)]
struct Seen {
    method: Method,
    uri: Uri,
    /// Kept only when the error handler reads request headers.
    headers: HeaderMap,
    /// An HTTP/1 request with a body, which may still be arriving: a layer's error answer
    /// closes the connection (the rest of the body would be read as the next request).
    closes: bool,
}

impl Errors {
    fn seen<B: HttpBody>(&self, request: &Request<B>) -> Seen {
        let reads_headers = self
            .handler
            .as_ref()
            .is_some_and(ErrorHandler::reads_headers);
        Seen {
            method: request.method().clone(),
            uri: request.uri().clone(),
            headers: if reads_headers {
                request.headers().clone()
            } else {
                HeaderMap::new()
            },
            closes: request.version() < Version::HTTP_2 && !request.body().is_end_stream(),
        }
    }

    #[allow(clippy::needless_pass_by_value)] // the error ends here
    fn respond(&self, error: BoxError, seen: &Seen) -> Response<Body> {
        // Our own texts for tower's errors say nothing internal: shown in production too.
        let own_text = error.is::<tower::timeout::error::Elapsed>()
            || error.is::<tower::load_shed::error::Overloaded>();
        let mut api = layer_error(error);
        if api.status().is_server_error() {
            let line = format_args!(
                "{} {}: {} {} (a layer of the application)",
                seen.method,
                seen.uri.path(),
                api.status().as_u16(),
                api.message()
            );
            // Shed load is the clients' doing: a rate-limited warning.
            strata_log::server_error(&self.logger, line, &api);
        }
        if let Some(metrics) = &self.metrics {
            metrics.refused(api.status(), Some(&api.kind()));
        }
        if seen.closes {
            api = api.with_connection_close();
        }
        let hidden = api.status().is_server_error() || !api.expose();
        if self.mode == Mode::Production && hidden && !own_text {
            api.set_message(api.status().canonical_reason().unwrap_or("Error"));
        }
        match &self.handler {
            Some(handler) => {
                handler.respond(api, &seen.method, &seen.uri, &seen.headers, &self.logger)
            }
            None => error_response(api),
        }
    }
}

impl<S, RB, B> Service<Request<RB>> for Layered<S>
where
    RB: HttpBody,
    S: Service<Request<RB>, Response = Response<B>>,
    S::Error: Into<BoxError>,
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<Body>;
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

    fn call(&mut self, request: Request<RB>) -> Self::Future {
        let seen = self.errors.seen(&request);
        let state = match self.unready.take() {
            None => LayeredState::Inner {
                inner: self.inner.call(request),
                failure: Some((self.errors.clone(), seen)),
            },
            Some(error) => LayeredState::Failed {
                response: Some(self.errors.respond(error, &seen)),
            },
        };
        LayeredFuture { state }
    }
}

pin_project! {
    #[project = LayeredProj]
    enum LayeredState<F> {
        Inner { #[pin] inner: F, failure: Option<(Errors, Seen)> },
        Failed { response: Option<Response<Body>> },
    }
}

pin_project! {
    /// The response future of [`Layered`].
    pub struct LayeredFuture<F> {
        #[pin]
        state: LayeredState<F>,
    }
}

impl<F, B, E> Future for LayeredFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
    E: Into<BoxError>,
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            LayeredProj::Inner { inner, failure } => {
                Poll::Ready(Ok(match ready!(inner.poll(cx)) {
                    Ok(response) => response.map(Body::new),
                    Err(error) => match failure.take() {
                        Some((errors, seen)) => errors.respond(error.into(), &seen),
                        None => error_response(ApiError::internal("polled after completion")),
                    },
                }))
            }
            LayeredProj::Failed { response } => Poll::Ready(Ok(response
                .take()
                .unwrap_or_else(|| error_response(ApiError::internal("polled after completion"))))),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;
    use std::sync::{Arc, Mutex};

    use http::StatusCode;
    use http_body_util::BodyExt;
    use schemars::Schema;
    use strata_core::{
        Level, LogSink, Output, Record, RequestInfo, ResponseDescription, ResultHandler,
        json_response,
    };

    use super::*;

    /// Every record, with its fields, as one line.
    #[derive(Default)]
    struct Lines(Mutex<Vec<String>>);

    impl LogSink for Lines {
        fn log(&self, level: Level, message: std::fmt::Arguments<'_>) {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(format!("{level:?} {message}"));
        }

        fn record(&self, record: &Record<'_>) {
            let mut line = format!("{:?} {}", record.level, record.message);
            for (name, value) in record.fields {
                let _ = write!(line, " {name}={value}");
            }
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(line);
        }
    }

    /// An application's own envelope: `{"problem": <message>}`.
    #[derive(Clone)]
    struct Problems;

    impl ResultHandler for Problems {
        fn positive(&self, _output: &Schema) -> Vec<ResponseDescription> {
            Vec::new()
        }

        fn negative(&self) -> Vec<ResponseDescription> {
            Vec::new()
        }

        fn handle(
            &self,
            result: Result<Output, ApiError>,
            _request: &RequestInfo,
            _logger: &Logger,
        ) -> Response<Body> {
            let message = result
                .err()
                .map(|e| e.message().to_owned())
                .unwrap_or_default();
            let mut response = json_response(
                StatusCode::OK,
                serde_json::json!({ "problem": message }).to_string(),
            );
            *response.status_mut() = StatusCode::IM_A_TEAPOT;
            response
        }
    }

    fn errors(mode: Mode, handler: Option<ErrorHandler>) -> (Errors, Arc<Lines>) {
        let lines = Arc::new(Lines::default());
        let logger = Logger::with_sink(Arc::clone(&lines) as Arc<dyn LogSink>);
        (
            Errors {
                mode,
                handler,
                logger,
                metrics: None,
            },
            lines,
        )
    }

    fn seen() -> Seen {
        Seen {
            method: Method::GET,
            uri: Uri::from_static("/books?page=2"),
            headers: HeaderMap::new(),
            closes: false,
        }
    }

    async fn body(response: Response<Body>) -> String {
        let bytes = response
            .into_body()
            .collect()
            .await
            .map(http_body_util::Collected::to_bytes);
        String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned()
    }

    #[tokio::test]
    async fn a_layers_timeout_is_logged_and_goes_through_the_error_handler() {
        let (errors, lines) = errors(Mode::Development, Some(ErrorHandler::new(Problems)));
        let elapsed: BoxError = tower::timeout::error::Elapsed::new().into();
        let response = errors.respond(elapsed, &seen());
        assert_eq!(
            response.status(),
            StatusCode::IM_A_TEAPOT,
            "the handler's answer"
        );
        assert_eq!(
            body(response).await,
            r#"{"problem":"The request took too long"}"#
        );
        let lines = lines.0.lock().map(|l| l.clone()).unwrap_or_default();
        assert_eq!(
            lines,
            [
                "Error GET /books: 504 The request took too long (a layer of the application) \
                 sources=request timed out"
            ]
        );
    }

    #[tokio::test]
    async fn a_stages_error_boxed_by_a_layer_keeps_its_status_and_is_not_logged() {
        let (errors, lines) = errors(Mode::Production, None);
        let boxed: BoxError = ApiError::from_code(413, "Request body exceeds the limit").into();
        let response = errors.respond(boxed, &seen());
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(
            body(response).await,
            r#"{"status":"error","error":{"message":"Request body exceeds the limit"}}"#
        );
        assert!(lines.0.lock().is_ok_and(|l| l.is_empty()));
    }

    #[tokio::test]
    async fn production_hides_a_layers_own_message_but_logs_it() {
        let (errors, lines) = errors(Mode::Production, None);
        let failure: BoxError = std::io::Error::other("pool exhausted").into();
        let response = errors.respond(failure, &seen());
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            body(response).await,
            r#"{"status":"error","error":{"message":"Internal Server Error"}}"#
        );
        let lines = lines.0.lock().map(|l| l.clone()).unwrap_or_default();
        assert_eq!(
            lines,
            ["Error GET /books: 500 pool exhausted (a layer of the application)"]
        );
    }
}
