//! [`Response`]: a call's output with the status and headers of its response.

use http::{HeaderMap, StatusCode, Version};

/// The output of a successful call with its response's status and headers, from
/// [`Call::response`](crate::Call::response): a 201's `Location`, a `Retry-After`, an `ETag`.
///
/// Awaiting a call gives the output alone; [`into_inner`](Self::into_inner) is the way back to
/// it.
#[derive(Debug, Clone)]
pub struct Response<O> {
    inner: http::Response<O>,
}

impl<O> Response<O> {
    pub(crate) fn new(inner: http::Response<O>) -> Self {
        Self { inner }
    }

    /// The status (200, 201, 204, ...).
    pub fn status(&self) -> StatusCode {
        self.inner.status()
    }

    /// The headers.
    pub fn headers(&self) -> &HeaderMap {
        self.inner.headers()
    }

    /// The HTTP version the response came with.
    pub fn version(&self) -> Version {
        self.inner.version()
    }

    /// The output.
    pub fn get_ref(&self) -> &O {
        self.inner.body()
    }

    /// The output, mutably.
    pub fn get_mut(&mut self) -> &mut O {
        self.inner.body_mut()
    }

    /// The output alone.
    pub fn into_inner(self) -> O {
        self.inner.into_body()
    }

    /// The response's head (status, version, headers, extensions) and the output.
    pub fn into_parts(self) -> (http::response::Parts, O) {
        self.inner.into_parts()
    }
}

/// The same response as an `http::Response` whose body is the output.
impl<O> From<Response<O>> for http::Response<O> {
    fn from(response: Response<O>) -> Self {
        response.inner
    }
}
