//! [`Body`]: the one body type of Strata's requests and responses.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;

use crate::error::BoxError;

/// What `Body::poll_frame` returns for the bodies of Strata's responses: a frame of bytes, an
/// error, or the end.
pub type PollFrame = Poll<Option<Result<Frame<Bytes>, BoxError>>>;

/// What a [`Body`] holds: bytes in memory (sent in one frame), or any body, boxed.
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

/// The body of Strata's requests and responses: bytes in memory (one frame; what result
/// handlers write and most requests carry), or any other body, boxed once.
///
/// Every part of Strata speaks it: the router and the endpoints take `Request<Body>` (any other
/// request body is converted at the edge, without boxing a `String` or `Bytes`), and answer
/// `Response<Body>`.
///
/// ```
/// use http_body::Body as _;
/// use strata_core::Body;
///
/// assert_eq!(Body::from("{}").size_hint().exact(), Some(2));
/// assert!(Body::empty().is_end_stream());
/// assert_eq!(Body::from("ok").bytes(), Some(&b"ok"[..]));
/// ```
pub struct Body(Kind);

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Kind::Full(data) => f.debug_tuple("Body").field(data).finish(),
            Kind::Boxed(_) => f.write_str("Body(stream)"),
        }
    }
}

impl Default for Body {
    fn default() -> Self {
        Self::empty()
    }
}

/// Any body Strata's services accept: an [`http_body::Body`] that is `Send + 'static`, whose
/// chunks are `Send` and whose error converts into a [`BoxError`] (hyper's `Incoming`, axum's
/// `Body`, `String`, `Full<Bytes>`, [`Body`] itself).
///
/// A trait alias, implemented for every such type: `B: IncomingBody` says the three bounds in
/// one, where the router, the app and the endpoint services take `Request<B>`.
pub trait IncomingBody: HttpBody<Data: Send, Error: Into<BoxError>> + Send + 'static {}

impl<B> IncomingBody for B
where
    B: HttpBody + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
}

impl Body {
    /// An empty body.
    pub fn empty() -> Self {
        Self(Kind::Full(None))
    }

    /// Wraps any body: a [`Body`] is kept as it is, any other is boxed (its chunks as
    /// `Bytes`, which costs nothing when they are).
    pub fn new<B: IncomingBody>(body: B) -> Self {
        let mut slot = Some(body);
        // A type-id comparison known at compile time: the optimizer removes the loser.
        if let Some(body) = (&mut slot as &mut dyn std::any::Any)
            .downcast_mut::<Option<Body>>()
            .and_then(Option::take)
        {
            return body;
        }
        match slot {
            Some(body) => Self(Kind::Boxed(
                AsBytes { inner: body }.map_err(Into::into).boxed_unsync(),
            )),
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

pin_project_lite::pin_project! {
    /// A body whose chunks are read as `Bytes` (free when they are `Bytes` already), its
    /// length and end passed on: http-body-util's `MapFrame` cannot know that a mapping keeps
    /// the length, and drops both, which would cost a file its `Content-Length`.
    struct AsBytes<B> {
        #[pin]
        inner: B,
    }
}

impl<B: HttpBody> HttpBody for AsBytes<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        self.project().inner.poll_frame(cx).map(|frame| {
            frame.map(|frame| {
                frame.map(|frame| frame.map_data(|mut data| data.copy_to_bytes(data.remaining())))
            })
        })
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl HttpBody for Body {
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

impl<T: Into<Bytes>> From<T> for Body {
    fn from(data: T) -> Self {
        Self(Kind::from_bytes(data.into()))
    }
}

/// The body a HEAD response would have had, had it been a GET's, when that body was in memory:
/// the router answers HEAD with an empty body and keeps these bytes in the response's
/// extensions, for layers above it that describe the body (an `ETag` must be the GET's).
#[derive(Debug, Clone)]
pub struct HeadBody(pub Bytes);

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn boxed_bodies_are_read_whole() {
        let body = Body::new(http_body_util::Full::new(Bytes::from_static(b"abc")));
        let bytes = body.collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], b"abc");
    }

    #[tokio::test]
    async fn streamed_responses() {
        let body = Body::new(http_body_util::Full::new(Bytes::from_static(b"file")));
        assert!(body.bytes().is_none());
        assert_eq!(&body.collect().await.unwrap().to_bytes()[..], b"file");
    }

    #[test]
    fn a_boxed_body_keeps_its_length() {
        let body = Body::new(http_body_util::Full::new(Bytes::from_static(b"four")));
        assert_eq!(body.size_hint().exact(), Some(4));
        assert!(!body.is_end_stream());
    }

    #[test]
    fn a_body_is_not_boxed_twice() {
        let streamed = Body::new(http_body_util::Full::new(Bytes::from_static(b"x")));
        assert!(streamed.bytes().is_none());
        let full = Body::new(Body::from("kept"));
        assert_eq!(full.bytes(), Some(&b"kept"[..]));
    }

    #[tokio::test]
    async fn full_bodies_are_read_once() {
        let bytes = Body::from("xyz").collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], b"xyz");
        let response = Body::from("ok").collect().await.unwrap().to_bytes();
        assert_eq!(&response[..], b"ok");
    }
}
