//! Middleware that change the response: what they keep of their output, and what they do with
//! it once the rest of the chain answered.
//!
//! express-zod-api's middleware hold express's `response` and may set headers on it before the
//! handler runs (a cookie, a rate limit's state); whatever the endpoint answers then, success or
//! error, carries them. A Strata middleware returns a value and is done before the handler
//! runs, so a middleware that must touch the response names, in its
//! [`MiddlewareHandler::Amends`](crate::MiddlewareHandler::Amends), what it keeps of its output
//! (a handle it shares with the context entry, a few numbers) and amends the outcome with it.
//! Middleware that do not (the closures of [`Middleware::new`](crate::Middleware::new) and the
//! like) keep `()`, which does nothing and costs nothing.

use http::{HeaderMap, Response, StatusCode};
use strata_core::{ApiError, Output};

/// A successful response on its way out, as a middleware may amend it.
///
/// Implemented by [`Output`] (what the output stage yields, so what the middleware stage's
/// inner service answers in a Strata pipeline) and by `http::Response` (a middleware stage in
/// another stack).
pub trait Amend {
    /// The status it will be sent with.
    fn status(&self) -> StatusCode;

    /// Its headers, to add to.
    fn headers_mut(&mut self) -> &mut HeaderMap;

    /// The response to a conditional request whose validators still match: `304 Not Modified`
    /// with `headers` and no body.
    #[must_use]
    fn not_modified(headers: HeaderMap) -> Self;
}

impl Amend for Output {
    fn status(&self) -> StatusCode {
        Output::status(self)
    }

    fn headers_mut(&mut self) -> &mut HeaderMap {
        Output::headers_mut(self)
    }

    fn not_modified(headers: HeaderMap) -> Self {
        Output::not_modified(headers)
    }
}

impl<B: Default> Amend for Response<B> {
    fn status(&self) -> StatusCode {
        Response::status(self)
    }

    fn headers_mut(&mut self) -> &mut HeaderMap {
        Response::headers_mut(self)
    }

    fn not_modified(headers: HeaderMap) -> Self {
        let mut response = Response::new(B::default());
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        *response.headers_mut() = headers;
        response
    }
}

/// What a middleware does to the outcome of the rest of the chain, success or error.
///
/// express-zod-api's middleware hold express's `response` and may set headers on it before the
/// handler runs; whatever the endpoint answers then carries them. A Strata middleware returns
/// a value and is done before the handler runs, so one that must touch the response names, in
/// its [`MiddlewareHandler::Amends`](crate::MiddlewareHandler::Amends), what it keeps of its
/// output (a handle it shares with the context entry, a few numbers), and amends the outcome
/// with it once the rest of the chain answered. `()` does nothing and costs nothing.
pub trait AmendResponse: Send + 'static {
    /// Amends `outcome`: headers added to a response or an error (whose headers the error
    /// response carries), or the outcome replaced.
    fn amend<R: Amend>(self, outcome: &mut Result<R, ApiError>);
}

impl AmendResponse for () {
    #[inline]
    fn amend<R: Amend>(self, _outcome: &mut Result<R, ApiError>) {}
}

impl<T: AmendResponse> AmendResponse for Option<T> {
    #[inline]
    fn amend<R: Amend>(self, outcome: &mut Result<R, ApiError>) {
        if let Some(amends) = self {
            amends.amend(outcome);
        }
    }
}

/// Where the headers of `outcome` go, a response's or an error's.
pub fn outcome_headers<R: Amend>(outcome: &mut Result<R, ApiError>) -> &mut HeaderMap {
    match outcome {
        Ok(response) => response.headers_mut(),
        Err(error) => error.headers_mut(),
    }
}
