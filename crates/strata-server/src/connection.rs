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
//! at once (an application's concurrency limit) is driven by tower's `Oneshot`, and so is every
//! HTTP/2 request: hyper calls an HTTP/2 service on the connection's task and spawns only the
//! future it returns, so the stack's own work (and a panic in a user's layer) belongs in that
//! future, in the stream's task.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use http::header::HOST;
use http::{Request, Response, StatusCode, Version};
use hyper::body::Incoming;
use pin_project_lite::pin_project;
use strata_core::{ApiError, ClientAddr, ErrorHandler, Logger, ResponseBody, error_response};
use tower::util::Oneshot;
use tower_service::Service;

use crate::activity::{Activity, TrackedBody, TrackedFuture};
use crate::config::ServerLimits;
use crate::deadline::{BodyDeadline, ServerBody};

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
    /// The peer's address, put in the extensions of requests with a body.
    client: Option<ClientAddr>,
    body_idle: Duration,
    body_total: Duration,
    errors: Option<ErrorHandler>,
    logger: Logger,
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
        Self {
            app,
            activity,
            client,
            errors,
            logger,
            body_idle: ServerLimits::or_never(limits.body_idle_timeout),
            body_total: ServerLimits::or_never(limits.body_read_timeout),
        }
    }
}

impl<S> hyper::service::Service<Request<Incoming>> for ConnectionService<S>
where
    S: Service<Request<ServerBody>, Response = Response<ResponseBody>, Error = Infallible> + Clone,
{
    type Response = Response<TrackedBody>;
    type Error = Infallible;
    type Future = TrackedFuture<AppFuture<S>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let in_flight = self.activity.request();
        let future = match host_problem(&request) {
            None => {
                let (idle, total) = (self.body_idle, self.body_total);
                let mut request = request.map(|body| BodyDeadline::new(body, idle, total));
                // Only where a per-client limit may need it: a request without a body costs
                // no extension.
                if let Some(client) = self.client
                    && !http_body::Body::is_end_stream(request.body())
                {
                    request.extensions_mut().insert(client);
                }
                let mut app = self.app.clone();
                if request.version() == Version::HTTP_2 {
                    return TrackedFuture::new(
                        AppFuture::Waiting {
                            oneshot: Oneshot::new(app, request),
                        },
                        in_flight,
                    );
                }
                match app.poll_ready(&mut Context::from_waker(Waker::noop())) {
                    Poll::Ready(Ok(())) => AppFuture::Called {
                        future: app.call(request),
                    },
                    Poll::Ready(Err(never)) => match never {},
                    Poll::Pending => AppFuture::Waiting {
                        oneshot: Oneshot::new(app, request),
                    },
                }
            }
            Some(problem) => {
                let error = ApiError::new(StatusCode::BAD_REQUEST, problem);
                let response = match &self.errors {
                    Some(handler) => handler.respond(
                        error,
                        request.method(),
                        request.uri(),
                        request.headers(),
                        &self.logger,
                    ),
                    None => error_response(error),
                };
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
        Waiting { #[pin] oneshot: Oneshot<S, Request<ServerBody>> },
        Refused { response: Option<Response<ResponseBody>> },
    }
}

impl<S> Future for AppFuture<S>
where
    S: Service<Request<ServerBody>, Response = Response<ResponseBody>, Error = Infallible>,
{
    type Output = Result<Response<ResponseBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            AppFutureProj::Called { future } => future.poll(cx),
            AppFutureProj::Waiting { oneshot } => oneshot.poll(cx),
            AppFutureProj::Refused { response } => Poll::Ready(Ok(response
                .take()
                .unwrap_or_else(|| error_response(ApiError::internal("polled after completion"))))),
        }
    }
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
}
