//! What the server checks of each request before the application sees it, and not the router
//! (which stays usable with requests built in tests and inside other servers):
//!
//! - RFC 9112 section 3.2: an HTTP/1.1 request carries exactly one `Host` header; any other
//!   gets a 400;
//! - the body gets the server's deadlines ([`BodyDeadline`]).

use std::convert::Infallible;
use std::future::{Future, Ready};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::header::HOST;
use http::{Request, Response, StatusCode, Version};
use pin_project_lite::pin_project;
use strata_core::{ApiError, ResponseBody};

use crate::config::ServerLimits;
use strata_format::error_response;
use tower_service::Service;

use crate::deadline::BodyDeadline;

/// Answers HTTP/1.1 requests without a `Host` header, or with several, with a JSON 400; passes
/// the others to `S` with deadlines on their body.
#[derive(Debug, Clone)]
pub(crate) struct HostChecked<S> {
    inner: S,
    body_idle: Duration,
    body_total: Duration,
}

impl<S> HostChecked<S> {
    pub(crate) fn new(inner: S, limits: &ServerLimits) -> Self {
        Self {
            inner,
            body_idle: limits.body_idle_timeout,
            body_total: limits.body_read_timeout,
        }
    }
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

impl<S, B> Service<Request<B>> for HostChecked<S>
where
    S: Service<Request<BodyDeadline<B>>, Response = Response<ResponseBody>, Error = Infallible>,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = HostCheckedFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        match host_problem(&request) {
            None => {
                let (idle, total) = (self.body_idle, self.body_total);
                HostCheckedFuture::Inner {
                    future: self
                        .inner
                        .call(request.map(|body| BodyDeadline::new(body, idle, total))),
                }
            }
            Some(problem) => HostCheckedFuture::Refused {
                response: std::future::ready(Ok(error_response(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    problem,
                )))),
            },
        }
    }
}

pin_project! {
    /// The response future of [`HostChecked`].
    #[project = HostCheckedProj]
    pub(crate) enum HostCheckedFuture<F> {
        Inner { #[pin] future: F },
        Refused { response: Ready<Result<Response<ResponseBody>, Infallible>> },
    }
}

impl<F> Future for HostCheckedFuture<F>
where
    F: Future<Output = Result<Response<ResponseBody>, Infallible>>,
{
    type Output = Result<Response<ResponseBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            HostCheckedProj::Inner { future } => future.poll(cx),
            HostCheckedProj::Refused { response } => Pin::new(response).poll(cx),
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
