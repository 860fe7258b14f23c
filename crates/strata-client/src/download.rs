//! Downloads: the body of a file or stream response as bytes, read as they arrive.

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use http_body_util::{BodyDataStream, BodyExt};
use strata_core::BoxError;

use crate::ClientError;

/// The success response of an operation whose output is a file or a stream
/// ([`StreamedOutput`](strata_core::StreamedOutput)): its status and headers, and its body of
/// type `B` to read as a stream of byte chunks ([`Download::into_stream`]) or whole
/// ([`Download::bytes`]).
#[derive(Debug)]
pub struct Download<B> {
    status: StatusCode,
    headers: HeaderMap,
    body: B,
}

impl<B> Download<B> {
    pub(crate) fn new(status: StatusCode, headers: HeaderMap, body: B) -> Self {
        Self {
            status,
            headers,
            body,
        }
    }

    /// The status (200, or 206 for a range).
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The headers (`Content-Type`, `Content-Length`, `Content-Disposition`, ...).
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The `Content-Type`, when the response has one that is text.
    pub fn content_type(&self) -> Option<&str> {
        self.headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
    }

    /// The body, as the service gave it.
    pub fn into_body(self) -> B {
        self.body
    }
}

impl<B> Download<B>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    /// The body as a `Stream` of byte chunks, read as the server sends them (a large file is
    /// never held whole).
    pub fn into_stream(self) -> BodyDataStream<B> {
        BodyDataStream::new(self.body)
    }

    /// The whole body, read up to `limit` bytes ([`ClientError::TooLarge`] beyond).
    pub async fn bytes(self, limit: usize) -> Result<Bytes, ClientError> {
        crate::read_limited(self.body, limit).await
    }
}

/// `body` whole, up to `limit` bytes.
pub(crate) async fn read_limited<B>(body: B, limit: usize) -> Result<Bytes, ClientError>
where
    B: http_body::Body,
    B::Error: Into<BoxError>,
{
    let collected = http_body_util::Limited::new(body, limit)
        .collect()
        .await
        .map_err(|error| {
            if error.is::<http_body_util::LengthLimitError>() {
                ClientError::TooLarge { limit }
            } else {
                ClientError::Transport(error)
            }
        })?;
    Ok(collected.to_bytes())
}
