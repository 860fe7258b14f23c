//! What hyper calls for each request of a connection ([`ConnectionService`]): the server's own
//! checks, which belong to the server and not the router (the router stays usable with requests
//! built in tests and inside other servers), the connection's activity counters, and the
//! application's stack:
//!
//! - RFC 9112 section 3.2: an HTTP/1.1 request carries exactly one `Host` header; any other
//!   gets a 400;
//! - the body gets the server's deadlines ([`BodyDeadline`]);
//! - the request is counted and its response tracked until sent ([`Activity`]).
//!
//! The application's stack is a tower service; hyper's services are called through `&self`.
//! This is a hyper service of its own rather than hyper-util's `TowerToHyperService` because
//! the adapter calls `poll_ready` and `call` inside the future it returns: the request would be
//! counted in flight only once the application is ready, so one waiting for a place under an
//! application's concurrency limit would look like an idle connection and be cut off at the
//! header-read timeout (`tests/abuse.rs` has the case; it fails with the adapter). Measured,
//! the adapter also costs ~140 instructions per request more (its `Oneshot` moves the request
//! twice), no allocation.
//!
//! Here the request is counted when hyper hands it over; for HTTP/1 the stack is cloned and,
//! being ready at once (as every Strata stage is), called directly. A stack that is not ready
//! at once (an application's concurrency limit) is waited for in the returned future, and so
//! is every HTTP/2 request: hyper calls an HTTP/2 service on the connection's task and spawns
//! only the future it returns, so the stack's own work (and a panic in a user's layer) belongs
//! in that future, in the stream's task. The wait is bounded by the admission timeout: then
//! the request gets a 503 with `Retry-After` (and an HTTP/1 connection whose request body is
//! unread is closed), instead of queueing without end behind a full limit.
//!
//! Every request gets the peer's [`ClientAddr`] in its extensions, for limits kept per client
//! (the body budget's share, a rate limiter keyed by address).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker, ready};
use std::time::Duration;

use http::header::{HOST, RETRY_AFTER};
use http::{HeaderValue, Request, Response, StatusCode, Version};
use hyper::body::Incoming;
use pin_project_lite::pin_project;
use strata_core::{ApiError, Body, ClientAddr, ErrorHandler, ErrorKind, Logger, error_response};
use tokio::time::Sleep;
use tower_service::Service;

use crate::config::ServerLimits;
use crate::connection::deadline::{BodyDeadline, BodyLimits, ServerBody};
use crate::connection::watcher::{Activity, TrackedBody, TrackedFuture};
use crate::metrics::Metrics;

/// The bytes of an HTTP/1 request's head as it was sent (its request line, header lines and
/// the blank line after them), counted from what hyper parsed: the spaces around a header's
/// value, which hyper drops, are not counted.
fn head_bytes<B>(request: &Request<B>) -> usize {
    let uri = request.uri();
    let target = uri.scheme_str().map_or(0, |scheme| scheme.len() + 3)
        + uri
            .authority()
            .map_or(0, |authority| authority.as_str().len())
        + uri.path_and_query().map_or(0, |path| path.as_str().len());
    // "<method> <target> HTTP/1.1\r\n", each "<name>: <value>\r\n", then "\r\n".
    let line = request.method().as_str().len() + 1 + target + 11;
    let headers: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + 2 + value.len() + 2)
        .sum();
    line + headers + 2
}

/// The 431 of an HTTP/1 request whose head is over `limit` bytes: its connection is closed,
/// as hyper closes one whose head does not fit its buffer.
fn head_too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        format!("The request's headers exceed the limit of {limit} bytes"),
    )
    .with_connection_close()
}

/// Why `request` cannot be served, if it cannot.
fn host_problem<B>(request: &Request<B>) -> Option<&'static str> {
    if request.version() != Version::HTTP_11 {
        return None;
    }
    let mut hosts = request.headers().get_all(HOST).iter();
    match (hosts.next(), hosts.next()) {
        (Some(_), None) => None,
        (None, _) => Some("An HTTP/1.1 request needs a Host header"),
        (Some(_), Some(_)) => Some("An HTTP/1.1 request has one Host header, not several"),
    }
}

/// The hyper service of one connection: answers HTTP/1.1 requests without a `Host` header, or
/// with several, with a 400 (through the router's error handler when one is set, the default
/// envelope otherwise); gives the others deadlines on their body and passes them to the
/// application's stack `S`; counts every request and tracks its response.
pub(crate) struct ConnectionService<S> {
    app: S,
    activity: Arc<Activity>,
    /// The peer's address, put in the extensions of every request.
    client: Option<ClientAddr>,
    body_limits: Arc<BodyLimits>,
    /// What a request that waits too long for the application needs to be refused.
    admission: Arc<Admission>,
    /// The most bytes of an HTTP/1 request's head, when hyper's buffer holds more (see
    /// [`read_buffer_size`](super::read_buffer_size)).
    max_head_bytes: Option<usize>,
}

/// How long a request may wait for the application's layers to take it, and how it is refused
/// then.
pub(crate) struct Admission {
    timeout: Option<Duration>,
    errors: Option<ErrorHandler>,
    logger: Logger,
    /// The server's metrics, which count the refusals answered here.
    metrics: Option<Metrics>,
}

impl Admission {
    /// `error` for a request of `method` to `uri` as the router's error handler (or the default
    /// envelope) answers it.
    fn respond(
        &self,
        error: ApiError,
        method: &http::Method,
        uri: &http::Uri,
        headers: &http::HeaderMap,
    ) -> Response<Body> {
        if let Some(metrics) = &self.metrics {
            metrics.refused(error.status(), Some(&error.kind()));
        }
        match &self.errors {
            Some(handler) => handler.respond(error, method, uri, headers, &self.logger),
            None => error_response(error),
        }
    }
}

impl<S> ConnectionService<S> {
    pub(crate) fn new(
        app: S,
        activity: Arc<Activity>,
        client: Option<ClientAddr>,
        limits: &ServerLimits,
        errors: Option<ErrorHandler>,
        logger: Logger,
    ) -> Self {
        let metrics = activity.metrics.clone();
        Self {
            app,
            activity,
            client,
            body_limits: Arc::new(BodyLimits {
                idle: ServerLimits::or_never(limits.body_idle_timeout),
                total: ServerLimits::or_never(limits.body_read_timeout),
                min_rate: limits.min_body_rate,
            }),
            admission: Arc::new(Admission {
                timeout: limits.admission_timeout,
                errors,
                logger,
                metrics,
            }),
            max_head_bytes: (limits.max_header_bytes < super::read_buffer_size(limits))
                .then_some(limits.max_header_bytes),
        }
    }

    /// Why `request` cannot be served, if it cannot: a head over the limit (431), an HTTP/1.1
    /// request without one `Host` (400).
    fn problem<B>(&self, request: &Request<B>) -> Option<ApiError> {
        if let Some(limit) = self.max_head_bytes
            && request.version() < Version::HTTP_2
            && head_bytes(request) > limit
        {
            return Some(head_too_large(limit));
        }
        host_problem(request).map(|problem| ApiError::new(StatusCode::BAD_REQUEST, problem))
    }
}

impl<S> hyper::service::Service<Request<Incoming>> for ConnectionService<S>
where
    S: Service<Request<ServerBody>, Response = Response<Body>, Error = Infallible> + Clone,
{
    type Response = Response<TrackedBody>;
    type Error = Infallible;
    type Future = TrackedFuture<AppFuture<S>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let in_flight = self.activity.request();
        let future = match self.problem(&request) {
            None => {
                let mut request =
                    request.map(|body| BodyDeadline::with_limits(body, &self.body_limits));
                // Every request: limits kept per client read it, the body budget's share for
                // a body and a rate limiter keyed by address for any request. On a request
                // without a body it costs one small allocation and a map insert (~290
                // instructions with glibc's malloc, measured alone).
                if let Some(client) = self.client {
                    request.extensions_mut().insert(client);
                }
                let mut app = self.app.clone();
                let waiting = |app, request| AppFuture::Waiting {
                    waiting: Box::new(Waiting {
                        app: Some(app),
                        request: Some(request),
                        admission: Arc::clone(&self.admission),
                        deadline: None,
                    }),
                };
                if request.version() == Version::HTTP_2 {
                    return TrackedFuture::new(waiting(app, request), in_flight);
                }
                match app.poll_ready(&mut Context::from_waker(Waker::noop())) {
                    Poll::Ready(Ok(())) => AppFuture::Called {
                        future: app.call(request),
                    },
                    Poll::Ready(Err(never)) => match never {},
                    Poll::Pending => waiting(app, request),
                }
            }
            Some(error) => {
                let response = self.admission.respond(
                    error,
                    request.method(),
                    request.uri(),
                    request.headers(),
                );
                AppFuture::Refused {
                    response: Some(response),
                }
            }
        };
        TrackedFuture::new(future, in_flight)
    }
}

pin_project! {
    /// The application's response future, as [`ConnectionService`] calls it.
    #[project = AppFutureProj]
    pub(crate) enum AppFuture<S: Service<Request<ServerBody>>> {
        Called { #[pin] future: S::Future },
        // Waiting for the application to be ready (HTTP/2 requests start here: their stack's
        // work belongs to the stream's task), within the admission timeout. Boxed: a request
        // and a service inline would double the size of every request's future, which is
        // moved several times on the way to hyper.
        Waiting { waiting: Box<Waiting<S>> },
        Refused { response: Option<Response<Body>> },
    }
}

/// A request waiting for the application to be ready.
pub(crate) struct Waiting<S> {
    app: Option<S>,
    request: Option<Request<ServerBody>>,
    admission: Arc<Admission>,
    // Made when the application first says it is not ready.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<S> Future for AppFuture<S>
where
    S: Service<Request<ServerBody>, Response = Response<Body>, Error = Infallible>,
{
    type Output = Result<Response<Body>, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match self.as_mut().project() {
                AppFutureProj::Called { future } => return future.poll(cx),
                AppFutureProj::Waiting { waiting } => {
                    let Waiting {
                        app,
                        request,
                        admission,
                        deadline,
                    } = &mut **waiting;
                    let (Some(service), Some(_)) = (app.as_mut(), request.as_ref()) else {
                        return Poll::Ready(Ok(polled_after_completion()));
                    };
                    match service.poll_ready(cx) {
                        Poll::Ready(Ok(())) => {
                            let (Some(mut service), Some(request)) = (app.take(), request.take())
                            else {
                                return Poll::Ready(Ok(polled_after_completion()));
                            };
                            let future = service.call(request);
                            self.set(AppFuture::Called { future });
                        }
                        Poll::Ready(Err(never)) => match never {},
                        Poll::Pending => {
                            let Some(timeout) = admission.timeout else {
                                return Poll::Pending;
                            };
                            let deadline = deadline.get_or_insert_with(|| {
                                Box::pin(tokio::time::sleep_until(
                                    crate::connection::deadline::deadline_after(timeout),
                                ))
                            });
                            ready!(deadline.as_mut().poll(cx));
                            let Some(request) = request.take() else {
                                return Poll::Ready(Ok(polled_after_completion()));
                            };
                            let response = not_admitted(admission, &request, timeout);
                            return Poll::Ready(Ok(response));
                        }
                    }
                }
                AppFutureProj::Refused { response } => {
                    return Poll::Ready(Ok(response
                        .take()
                        .unwrap_or_else(polled_after_completion)));
                }
            }
        }
    }
}

fn polled_after_completion() -> Response<Body> {
    error_response(ApiError::internal("polled after completion"))
}

/// The 503 of a request the application did not take within the admission timeout; an
/// HTTP/1 connection whose request body is unread is closed after it.
fn not_admitted(
    admission: &Admission,
    request: &Request<ServerBody>,
    timeout: Duration,
) -> Response<Body> {
    let mut error = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("The server is busy: the request waited {timeout:?} to be taken; retry shortly"),
    )
    .with_kind(ErrorKind::Overload)
    .with_header(RETRY_AFTER, HeaderValue::from_static("1"));
    if request.version() < Version::HTTP_2 && !http_body::Body::is_end_stream(request.body()) {
        error = error.with_connection_close();
    }
    // Clients can cause it at will: a rate-limited warning.
    let line = format_args!(
        "{} {}: 503 not taken by the application's layers within {timeout:?}",
        request.method(),
        request.uri().path()
    );
    strata_log::server_error(&admission.logger, line, &error);
    admission.respond(error, request.method(), request.uri(), request.headers())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_host_for_http_1_1_any_for_others() {
        let request = |version, hosts: &[&str]| {
            let mut builder = Request::get("/").version(version);
            for host in hosts {
                builder = builder.header(HOST, *host);
            }
            builder.body(()).unwrap_or_default()
        };
        assert_eq!(host_problem(&request(Version::HTTP_11, &["a"])), None);
        assert!(host_problem(&request(Version::HTTP_11, &[])).is_some());
        assert!(host_problem(&request(Version::HTTP_11, &["a", "b"])).is_some());
        assert_eq!(host_problem(&request(Version::HTTP_10, &[])), None);
        assert_eq!(host_problem(&request(Version::HTTP_2, &[])), None);
    }

    #[test]
    fn a_head_is_counted_as_it_was_sent() {
        let request = Request::post("/v1/orders?page=2")
            .header(HOST, "example.com")
            .header("x-id", "abc")
            .body(())
            .unwrap_or_default();
        let sent = "POST /v1/orders?page=2 HTTP/1.1\r\nhost: example.com\r\nx-id: abc\r\n\r\n";
        assert_eq!(head_bytes(&request), sent.len());
        let absolute = Request::get("http://example.com/a")
            .body(())
            .unwrap_or_default();
        assert_eq!(
            head_bytes(&absolute),
            "GET http://example.com/a HTTP/1.1\r\n\r\n".len()
        );
    }
}
