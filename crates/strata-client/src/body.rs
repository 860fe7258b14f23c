//! [`Body`]: what a client's requests carry — bytes in memory, or a stream (a form with a file
//! read from disk as it is sent, or a [`StreamedFile`](strata_input::StreamedFile)).

use std::fmt;
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use futures_core::Stream;
use http_body::{Frame, SizeHint};
use strata_core::BoxError;

/// A stream of chunks.
type Chunks = Pin<Box<dyn Stream<Item = Result<Bytes, BoxError>> + Send>>;

/// The body of a client's request: bytes held in memory (JSON, a query-less form, a small
/// file), or chunks sent as they are read (a file on disk, any stream of bytes), never held
/// whole.
///
/// A [`Transport`](crate::Transport) is a service of `http::Request<Body>`. It is an
/// [`http_body::Body`] of [`Bytes`]: hyper, hyper-util's pool and a `Router` take it as it is;
/// a test service reads it with `http_body_util::BodyExt::collect`.
///
/// ```
/// use http_body_util::BodyExt;
/// use strata_client::Body;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let body = Body::from("hello");
/// assert_eq!(body.collect().await.unwrap().to_bytes(), "hello");
/// # }
/// ```
pub struct Body(Inner);

enum Inner {
    /// Bytes in memory, taken by the first poll.
    Full(Option<Bytes>),
    /// Chunks, and the size when every piece's is known (a form of text and files on disk).
    Chunks { chunks: Chunks, size: Option<u64> },
}

impl Body {
    /// No bytes.
    pub fn empty() -> Self {
        Self(Inner::Full(None))
    }

    /// The chunks of `stream`, sent as they come (the length unknown: chunked over HTTP/1.1).
    pub fn from_stream<S, E>(stream: S) -> Self
    where
        S: Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        Self::sized(Box::pin(MapErr(Box::pin(stream))), None)
    }

    /// A copy of a body held in memory (the bytes are shared, not copied), for a layer that
    /// sends a request again (`tower::retry`'s `clone_request`); `None` for one of chunks,
    /// which are read once.
    ///
    /// ```
    /// use strata_client::Body;
    ///
    /// assert!(Body::from("again").try_clone().is_some());
    /// let chunks = [Ok::<_, std::io::Error>(bytes::Bytes::from_static(b"once"))];
    /// assert!(Body::from_stream(futures_util::stream::iter(chunks)).try_clone().is_none());
    /// ```
    pub fn try_clone(&self) -> Option<Self> {
        match &self.0 {
            Inner::Full(bytes) => Some(Self(Inner::Full(bytes.clone()))),
            Inner::Chunks { .. } => None,
        }
    }

    /// The bytes of a body held in memory; `None` for one of chunks.
    pub(crate) fn into_bytes(self) -> Option<Bytes> {
        match self.0 {
            Inner::Full(bytes) => Some(bytes.unwrap_or_default()),
            Inner::Chunks { .. } => None,
        }
    }

    pub(crate) fn sized(chunks: Chunks, size: Option<u64>) -> Self {
        Self(Inner::Chunks { chunks, size })
    }
}

impl Default for Body {
    fn default() -> Self {
        Self::empty()
    }
}

impl From<Bytes> for Body {
    fn from(bytes: Bytes) -> Self {
        Self(Inner::Full((!bytes.is_empty()).then_some(bytes)))
    }
}

impl From<Vec<u8>> for Body {
    fn from(bytes: Vec<u8>) -> Self {
        Bytes::from(bytes).into()
    }
}

impl From<String> for Body {
    fn from(text: String) -> Self {
        Bytes::from(text).into()
    }
}

impl From<&'static str> for Body {
    fn from(text: &'static str) -> Self {
        Bytes::from_static(text.as_bytes()).into()
    }
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Inner::Full(bytes) => f
                .debug_tuple("Body")
                .field(&bytes.as_ref().map_or(0, Bytes::len))
                .finish(),
            Inner::Chunks { size, .. } => f.debug_struct("Body").field("size", size).finish(),
        }
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match &mut self.get_mut().0 {
            Inner::Full(bytes) => Poll::Ready(bytes.take().map(|bytes| Ok(Frame::data(bytes)))),
            Inner::Chunks { chunks, .. } => loop {
                match ready!(chunks.as_mut().poll_next(cx)) {
                    // An empty chunk is no frame (hyper would end a chunked body with it).
                    Some(Ok(chunk)) if chunk.is_empty() => {}
                    Some(Ok(chunk)) => return Poll::Ready(Some(Ok(Frame::data(chunk)))),
                    Some(Err(error)) => return Poll::Ready(Some(Err(error))),
                    None => return Poll::Ready(None),
                }
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.0, Inner::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            Inner::Full(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            Inner::Chunks {
                size: Some(size), ..
            } => SizeHint::with_exact(*size),
            Inner::Chunks { size: None, .. } => SizeHint::default(),
        }
    }
}

/// A stream's errors boxed.
struct MapErr<S>(S);

impl<S, E> Stream for MapErr<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: Into<BoxError>,
{
    type Item = Result<Bytes, BoxError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.0)
            .poll_next(cx)
            .map(|item| item.map(|chunk| chunk.map_err(Into::into)))
    }
}

/// One piece of a body made of pieces (a form): bytes, a file on disk, or a stream.
pub(crate) enum Piece {
    Bytes(Bytes),
    /// The first `len` bytes of the file at the path, read as they are sent.
    Disk(PathBuf, u64),
    Stream(Chunks),
}

impl Piece {
    fn size(&self) -> Option<u64> {
        match self {
            Piece::Bytes(bytes) => Some(bytes.len() as u64),
            Piece::Disk(_, len) => Some(*len),
            Piece::Stream(_) => None,
        }
    }
}

/// The pieces one after another, as one body.
pub(crate) fn concat(pieces: Vec<Piece>) -> Body {
    let size = pieces
        .iter()
        .map(Piece::size)
        .try_fold(0_u64, |total, size| Some(total + size?));
    let mut pieces = pieces.into_iter();
    let stream = sequence::unfold_pieces(move || pieces.next());
    Body::sized(Box::pin(stream), size)
}

/// How much of a file on disk is read at a time.
const DISK_CHUNK: usize = 64 * 1024;

mod sequence {
    //! The pieces as one stream, each read as its turn comes (a file opened only then).

    use std::io;
    use std::pin::Pin;
    use std::task::{Context, Poll, ready};

    use bytes::{Bytes, BytesMut};
    use futures_core::Stream;
    use strata_core::BoxError;
    use tokio::io::AsyncRead;

    use super::{Chunks, DISK_CHUNK, Piece};

    type Opening = Pin<Box<dyn std::future::Future<Output = io::Result<tokio::fs::File>> + Send>>;

    enum Current {
        Idle,
        Opening(Opening, std::path::PathBuf, u64),
        Reading(tokio::fs::File, std::path::PathBuf, u64),
        Stream(Chunks),
    }

    pub(super) struct Pieces<F> {
        next: F,
        current: Current,
    }

    pub(super) fn unfold_pieces<F: FnMut() -> Option<Piece>>(next: F) -> Pieces<F> {
        Pieces {
            next,
            current: Current::Idle,
        }
    }

    fn cannot_read(path: &std::path::Path, error: &io::Error) -> BoxError {
        format!(
            "cannot read the file {} to send it: {error}",
            path.display()
        )
        .into()
    }

    impl<F: FnMut() -> Option<Piece> + Unpin> Stream for Pieces<F> {
        type Item = Result<Bytes, BoxError>;

        fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            let this = self.get_mut();
            loop {
                match &mut this.current {
                    Current::Idle => match (this.next)() {
                        None => return Poll::Ready(None),
                        Some(Piece::Bytes(bytes)) => return Poll::Ready(Some(Ok(bytes))),
                        Some(Piece::Stream(chunks)) => this.current = Current::Stream(chunks),
                        Some(Piece::Disk(path, len)) => {
                            let opening = Box::pin(tokio::fs::File::open(path.clone()));
                            this.current = Current::Opening(opening, path, len);
                        }
                    },
                    Current::Opening(opening, path, len) => {
                        let file = match ready!(opening.as_mut().poll(cx)) {
                            Ok(file) => file,
                            Err(error) => {
                                let error = cannot_read(path, &error);
                                this.current = Current::Idle;
                                return Poll::Ready(Some(Err(error)));
                            }
                        };
                        this.current = Current::Reading(file, std::mem::take(path), *len);
                    }
                    Current::Reading(file, path, left) => {
                        if *left == 0 {
                            this.current = Current::Idle;
                            continue;
                        }
                        let want = usize::try_from(*left).unwrap_or(usize::MAX).min(DISK_CHUNK);
                        let mut buffer = BytesMut::zeroed(want);
                        let mut read = tokio::io::ReadBuf::new(&mut buffer);
                        let polled = Pin::new(&mut *file).poll_read(cx, &mut read);
                        let n = match ready!(polled) {
                            Ok(()) => read.filled().len(),
                            Err(error) => {
                                let error = cannot_read(path, &error);
                                this.current = Current::Idle;
                                return Poll::Ready(Some(Err(error)));
                            }
                        };
                        if n == 0 {
                            // Shorter than said: the body would not match its length.
                            let error = cannot_read(
                                path,
                                &io::Error::new(
                                    io::ErrorKind::UnexpectedEof,
                                    "it is shorter than its size",
                                ),
                            );
                            this.current = Current::Idle;
                            return Poll::Ready(Some(Err(error)));
                        }
                        buffer.truncate(n);
                        *left -= n as u64;
                        return Poll::Ready(Some(Ok(buffer.freeze())));
                    }
                    Current::Stream(chunks) => match ready!(chunks.as_mut().poll_next(cx)) {
                        Some(item) => return Poll::Ready(Some(item)),
                        None => this.current = Current::Idle,
                    },
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test]
    async fn pieces_are_sent_in_order_a_file_on_disk_read_as_its_turn_comes() {
        let path = std::env::temp_dir().join(format!("strata-client-body-{}", std::process::id()));
        let data: Vec<u8> = (0..200_000_u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let chunks: Vec<Result<Bytes, std::io::Error>> = vec![Ok(Bytes::from_static(b"<s>"))];
        let body = concat(vec![
            Piece::Bytes(Bytes::from_static(b"head|")),
            Piece::Disk(path.clone(), 150_000),
            Piece::Bytes(Bytes::from_static(b"|")),
            Piece::Stream(Box::pin(MapErr(futures_util::stream::iter(chunks)))),
        ]);
        assert_eq!(
            http_body::Body::size_hint(&body).exact(),
            None,
            "a stream's size is unknown"
        );
        let sent = body.collect().await.unwrap().to_bytes();
        let mut expected = b"head|".to_vec();
        expected.extend_from_slice(&data[..150_000]);
        expected.extend_from_slice(b"|<s>");
        assert_eq!(sent, expected);
        let sized = concat(vec![
            Piece::Bytes(Bytes::from_static(b"ab")),
            Piece::Disk(path.clone(), 10),
        ]);
        assert_eq!(http_body::Body::size_hint(&sized).exact(), Some(12));
        std::fs::remove_file(&path).unwrap();
    }

    #[tokio::test]
    async fn a_file_that_cannot_be_read_is_an_error_naming_it() {
        let body = concat(vec![Piece::Disk(
            PathBuf::from("/nonexistent/strata/file"),
            10,
        )]);
        let error = body.collect().await.unwrap_err();
        assert!(
            error.to_string().contains("/nonexistent/strata/file"),
            "{error}"
        );
    }
}
