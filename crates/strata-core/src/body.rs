//! The request and response body types of an endpoint's boxed service.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;

use crate::error::BoxError;

/// What `Body::poll_frame` returns for the bodies of Strata's responses: a frame of bytes, an
/// error, or the end.
pub type PollFrame = Poll<Option<Result<Frame<Bytes>, BoxError>>>;

/// What both body types hold: bytes in memory (sent in one frame), or any body, boxed.
enum Kind {
    Full(Option<Bytes>),
    Boxed(UnsyncBoxBody<Bytes, BoxError>),
}

impl Kind {
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> PollFrame {
        match self {
            Kind::Full(data) => Poll::Ready(data.take().map(|d| Ok(Frame::data(d)))),
            Kind::Boxed(body) => Pin::new(body).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Kind::Full(data) => data.is_none(),
            Kind::Boxed(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Kind::Full(data) => SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64)),
            Kind::Boxed(body) => body.size_hint(),
        }
    }

    fn from_bytes(data: Bytes) -> Self {
        Kind::Full((!data.is_empty()).then_some(data))
    }
}

/// The request body an endpoint service reads: any `http_body::Body`, boxed only when it is not
/// already in memory.
///
/// ```
/// use http_body::Body;
/// use strata_core::RequestBody;
///
/// assert_eq!(RequestBody::from("{}").size_hint().exact(), Some(2));
/// assert!(RequestBody::empty().is_end_stream());
/// ```
pub struct RequestBody(Kind);

impl std::fmt::Debug for RequestBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestBody")
    }
}

impl Default for RequestBody {
    fn default() -> Self {
        Self::empty()
    }
}

/// Any request body Strata's services accept: an [`http_body::Body`] that is `Send + 'static`,
/// whose chunks are `Send` and whose error converts into a [`BoxError`] (hyper's `Incoming`,
/// axum's `Body`, `String`, `Full<Bytes>`, [`RequestBody`] itself).
///
/// A trait alias, implemented for every such type: `B: IncomingBody` says the three bounds in
/// one, where the router, the app and the endpoint services take `Request<B>`.
pub trait IncomingBody: Body<Data: Send, Error: Into<BoxError>> + Send + 'static {}

impl<B> IncomingBody for B
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
}

impl RequestBody {
    /// Wraps any body.
    pub fn new<B: IncomingBody>(body: B) -> Self {
        Self(Kind::Boxed(
            body.map_frame(|frame| frame.map_data(|mut data| data.copy_to_bytes(data.remaining())))
                .map_err(Into::into)
                .boxed_unsync(),
        ))
    }

    /// An empty body.
    pub fn empty() -> Self {
        Self(Kind::Full(None))
    }
}

macro_rules! full_from {
    ($($ty:ty),*) => {$(
        impl From<$ty> for RequestBody {
            fn from(data: $ty) -> Self {
                Self(Kind::from_bytes(Bytes::from(data)))
            }
        }
    )*};
}

full_from!(Bytes, Vec<u8>, String, &'static str, &'static [u8]);

/// `Body` for a newtype over [`Kind`]: each call goes to the kind.
macro_rules! body_over_kind {
    ($($body:ty),*) => {$(
        impl Body for $body {
            type Data = Bytes;
            type Error = BoxError;

            fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> PollFrame {
                self.0.poll_frame(cx)
            }

            fn is_end_stream(&self) -> bool {
                self.0.is_end_stream()
            }

            fn size_hint(&self) -> SizeHint {
                self.0.size_hint()
            }
        }
    )*};
}

body_over_kind!(RequestBody, ResponseBody);

/// The response body of endpoints and routing: bytes in memory (what result handlers produce),
/// or a stream (static files).
pub struct ResponseBody(Kind);

impl std::fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Kind::Full(data) => f.debug_tuple("ResponseBody").field(data).finish(),
            Kind::Boxed(_) => f.write_str("ResponseBody(stream)"),
        }
    }
}

impl Default for ResponseBody {
    fn default() -> Self {
        Self::empty()
    }
}

impl ResponseBody {
    /// An empty body.
    pub fn empty() -> Self {
        Self(Kind::Full(None))
    }

    /// A streamed body (a `ResponseBody` is kept as it is, not boxed again).
    pub fn stream<B>(body: B) -> Self
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let mut slot = Some(body);
        // A type-id comparison known at compile time: the optimizer removes the loser.
        if let Some(body) = (&mut slot as &mut dyn std::any::Any)
            .downcast_mut::<Option<ResponseBody>>()
            .and_then(Option::take)
        {
            return body;
        }
        match slot {
            Some(body) => Self(Kind::Boxed(body.map_err(Into::into).boxed_unsync())),
            None => Self::empty(),
        }
    }

    /// The bytes not yet sent, when the body is in memory.
    pub fn bytes(&self) -> Option<&[u8]> {
        match &self.0 {
            Kind::Full(data) => Some(data.as_deref().unwrap_or_default()),
            Kind::Boxed(_) => None,
        }
    }

    /// The bytes not yet sent, when the body is in memory (no copy).
    pub fn into_bytes(self) -> Option<Bytes> {
        match self.0 {
            Kind::Full(data) => Some(data.unwrap_or_default()),
            Kind::Boxed(_) => None,
        }
    }
}

/// The body a HEAD response would have had, had it been a GET's, when that body was in memory:
/// the router answers HEAD with an empty body and keeps these bytes in the response's
/// extensions, for layers above it that describe the body (an `ETag` must be the GET's).
#[derive(Debug, Clone)]
pub struct HeadBody(pub Bytes);

impl<T: Into<Bytes>> From<T> for ResponseBody {
    fn from(data: T) -> Self {
        Self(Kind::from_bytes(data.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn boxed_bodies_are_read_whole() {
        let body = RequestBody::new(http_body_util::Full::new(Bytes::from_static(b"abc")));
        let bytes = body.collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], b"abc");
    }

    #[tokio::test]
    async fn streamed_responses() {
        let body = ResponseBody::stream(http_body_util::Full::new(Bytes::from_static(b"file")));
        assert!(body.bytes().is_none());
        assert_eq!(&body.collect().await.unwrap().to_bytes()[..], b"file");
    }

    #[tokio::test]
    async fn full_bodies_are_read_once() {
        let bytes = RequestBody::from("xyz").collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], b"xyz");
        let response = ResponseBody::from("ok").collect().await.unwrap().to_bytes();
        assert_eq!(&response[..], b"ok");
    }
}
