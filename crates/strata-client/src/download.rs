//! Downloads: the body of a file or stream response as bytes, read as they arrive, each piece
//! within a deadline.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use http_body::{Body, Frame, SizeHint};
use http_body_util::{BodyDataStream, BodyExt};
use strata_core::BoxError;
use tokio::time::{Instant, Sleep};

use crate::ClientError;

/// The success response of an operation whose output is a file or a stream
/// ([`StreamedOutput`](strata_core::StreamedOutput)): its status and headers, and its body of
/// type `B` to read as a stream of byte chunks ([`Download::into_stream`]) or whole
/// ([`Download::bytes`]). Each piece of the body must arrive within the call's timeout of
/// asking for it ([`ClientError::Timeout`] otherwise): a server gone silent does not hold the
/// reader, and a large file may take as long as it keeps coming.
#[derive(Debug)]
pub struct Download<B> {
    status: StatusCode,
    headers: HeaderMap,
    body: B,
    idle: Option<Duration>,
}

impl<B> Download<B> {
    pub(crate) fn new(
        status: StatusCode,
        headers: HeaderMap,
        body: B,
        idle: Option<Duration>,
    ) -> Self {
        Self {
            status,
            headers,
            body,
            idle,
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

    /// The body, as the service gave it (without the deadline between pieces).
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
    /// never held whole); a piece the server takes longer than the call's timeout to send is
    /// the stream's last item, a [`ClientError::Timeout`] (boxed: downcast the error).
    pub fn into_stream(self) -> BodyDataStream<Deadlined<B>> {
        BodyDataStream::new(Deadlined::new(self.body, self.idle))
    }

    /// The whole body, read up to `limit` bytes ([`ClientError::TooLarge`] beyond), each piece
    /// within the call's timeout of asking for it ([`ClientError::Timeout`]).
    pub async fn bytes(self, limit: usize) -> Result<Bytes, ClientError> {
        crate::read_limited(Deadlined::new(self.body, self.idle), limit).await
    }
}

/// A body whose every piece (and its end) must come within a time of being asked for: a
/// [`ClientError::Timeout`] otherwise (boxed, as the body's error). The time counts while the
/// body waits for the server, not while the reader works on a piece.
#[derive(Debug)]
pub struct Deadlined<B> {
    body: Pin<Box<B>>,
    /// `None`: no deadline (or it passed, and was told).
    idle: Option<Duration>,
    /// Created at the first wait, reset at each wait after a piece.
    deadline: Option<Pin<Box<Sleep>>>,
    /// The deadline counts the current wait.
    armed: bool,
}

impl<B> Deadlined<B> {
    fn new(body: B, idle: Option<Duration>) -> Self {
        Self {
            body: Box::pin(body),
            idle,
            deadline: None,
            armed: false,
        }
    }
}

impl<B> Body for Deadlined<B>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = this.body.as_mut().poll_frame(cx) {
            this.armed = false;
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        let Some(idle) = this.idle else {
            return Poll::Pending;
        };
        // A deadline too far to count is none.
        let Some(at) = Instant::now().checked_add(idle) else {
            return Poll::Pending;
        };
        let deadline = match (&mut this.deadline, this.armed) {
            (Some(deadline), true) => deadline,
            (Some(deadline), false) => {
                deadline.as_mut().reset(at);
                deadline
            }
            (None, _) => this.deadline.insert(Box::pin(tokio::time::sleep_until(at))),
        };
        this.armed = true;
        if deadline.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        this.idle = None;
        Poll::Ready(Some(Err(Box::new(ClientError::Timeout(idle)))))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
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
                return ClientError::TooLarge { limit };
            }
            match error.downcast::<ClientError>() {
                // A deadline's.
                Ok(error) => *error,
                Err(error) => ClientError::Transport(error),
            }
        })?;
    Ok(collected.to_bytes())
}
