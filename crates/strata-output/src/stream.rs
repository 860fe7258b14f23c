//! Outputs sent as they are, not as JSON: [`FileResponse`] (a file from disk, streamed) and
//! [`StreamResponse`] (any stream of bytes). They bypass the output check, the serialization
//! and the result handler's envelope on success; an error before their first byte (the file
//! cannot be checked, the stream fails at once) is an ordinary error response, and one after it
//! ends the response and is logged.

use std::future::Future;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::SystemTime;

use bytes::Bytes;
use futures_core::Stream;
use futures_util::TryStreamExt;
use garde::Validate;
use http::header::{
    ACCEPT_RANGES, CONTENT_DISPOSITION, CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE, LAST_MODIFIED,
};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::StreamBody;
use schemars::{Schema, json_schema};
use serde::{Serialize, Serializer};
use strata_core::{
    ApiError, Body, BoxError, Output, PollFrame, ResponseDescription, StreamFailure,
};

use crate::range::{RangeHeaders, Wanted};
use crate::reply::HandlerOutput;

/// How many bytes of a file are read at once: the most of it held in memory per response.
const FILE_CHUNK: usize = 64 * 1024;

/// The first chunk read of a file, doubled for each next one up to [`FILE_CHUNK`]: hyper reads
/// an HTTP/2 body's next chunk before the stream has window and holds it, so a download that
/// never gets window holds this much, and one that does is at full size after three chunks.
const FIRST_FILE_CHUNK: usize = 8 * 1024;

/// The media type of bytes whose type is not known.
const OCTET_STREAM: &str = "application/octet-stream";

/// The body type of streamed outputs: binary data, described as `{"type": "string", "format":
/// "binary"}`. Never serialized (a streamed output is sent as it is).
#[derive(Debug, Clone, Copy, Default)]
pub struct Binary;

impl Serialize for Binary {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_unit()
    }
}

impl Validate for Binary {
    type Context = ();

    fn validate_into(&self, (): &(), _: &mut dyn FnMut() -> garde::Path, _: &mut garde::Report) {}
}

strata_input::binary_json_schema!(Binary, "Binary");

/// A 200 of binary data, as the document describes streamed outputs: of any media type (`*/*`),
/// since the type is the file's or the stream's, known only when it is sent; an endpoint that
/// knows it says so with the factory's `success_media_type` (`text/csv`).
fn binary_response(description: &str) -> Vec<ResponseDescription> {
    let schema = json_schema!({ "type": "string", "format": "binary" });
    vec![
        ResponseDescription::new(StatusCode::OK, schema)
            .mime_type("*/*")
            .description(description),
    ]
}

/// A body read from a stream of byte chunks (http-body-util's `StreamBody` over the chunks as
/// data frames). Its length, when known, is the `Content-Length` header the output sets.
fn chunk_body<S, E>(chunks: S) -> Body
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Into<BoxError> + 'static,
{
    Body::new(StreamBody::new(
        chunks.map_ok(Frame::data).map_err(Into::<BoxError>::into),
    ))
}

/// A file from disk, streamed in 64 KiB pieces (never held whole in memory), with its
/// `Content-Type` (guessed from the extension unless set), `Content-Length`, `Last-Modified`
/// and `Accept-Ranges: bytes`.
///
/// [`open`](Self::open) checks the file and keeps no descriptor: the body opens it again for
/// each chunk it reads and closes it after, so a download waiting for an HTTP/2 window or for
/// a slow client holds no descriptor (the head is sent before the first read). If the file is
/// no longer the same (another file, length or modification time), the body fails, cutting
/// the response, rather than send other bytes than announced; the server logs it.
///
/// A GET with one byte range (`Range: bytes=0-9`, `bytes=100-`, `bytes=-500`) gets a 206 with
/// those bytes and `Content-Range`; a range starting past the end a 416 with
/// `Content-Range: bytes */<length>`; several ranges, or a range not understood, the whole
/// file (200). `If-Range` keeps the range only if it names the response's `Last-Modified`
/// date, or its `ETag` when the handler set one with [`header`](Self::header).
///
/// ```
/// use strata_output::FileResponse;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let path = std::env::temp_dir().join(format!("strata-file-doc-{}.csv", std::process::id()));
/// std::fs::write(&path, "a,b\n1,2\n").unwrap();
/// let file = FileResponse::open(&path).await.unwrap().attachment("report.csv");
/// assert_eq!(file.len(), 8);
/// assert_eq!(file.content_type(), "text/csv");
/// # std::fs::remove_file(&path).unwrap();
/// # }
/// ```
#[derive(Debug)]
pub struct FileResponse {
    file: CheckedFile,
    headers: HeaderMap,
}

impl FileResponse {
    /// Checks the file at `path`: it is opened (and closed at once) to see that it can be
    /// read, and must be a regular file. A missing file (or a directory, a device) is a 404
    /// (`File not found`, the path is not sent); a shortage of descriptors or memory a 503 with
    /// `Retry-After: 1`; another failure (no permission) a 500 whose cause is logged.
    ///
    /// # Errors
    /// As said.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, ApiError> {
        let path: Arc<Path> = Arc::from(path.as_ref());
        let checked = Arc::clone(&path);
        let file = tokio::task::spawn_blocking(move || CheckedFile::check(&checked))
            .await
            .unwrap_or_else(|stopped| Err(io::Error::other(stopped)))
            .map_err(|error| unreadable(&path, error))?;
        let guessed = mime_guess::from_path(&path)
            .first_raw()
            .unwrap_or(OCTET_STREAM);
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(guessed));
        Ok(Self { file, headers })
    }

    /// The length in bytes, sent as `Content-Length` (of a 200).
    pub fn len(&self) -> u64 {
        self.file.len()
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.file.is_empty()
    }

    /// The `Content-Type` that will be sent.
    pub fn content_type(&self) -> &str {
        self.headers
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or(OCTET_STREAM)
    }

    /// Sends `media_type` as `Content-Type` instead of the guess.
    #[must_use]
    pub fn with_content_type(mut self, media_type: HeaderValue) -> Self {
        self.headers.insert(CONTENT_TYPE, media_type);
        self
    }

    /// Asks browsers to save the file as `file_name` (`Content-Disposition: attachment`; the
    /// name's quotes, backslashes and control characters are replaced by `_`).
    #[must_use]
    pub fn attachment(mut self, file_name: &str) -> Self {
        let safe: String = file_name
            .chars()
            .map(|c| match c {
                '"' | '\\' => '_',
                c if c.is_control() || !c.is_ascii() => '_',
                c => c,
            })
            .collect();
        if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{safe}\"")) {
            self.headers.insert(CONTENT_DISPOSITION, value);
        }
        self
    }

    /// Adds a response header (`Cache-Control`, `ETag`, ...). An `ETag` is what an `If-Range`
    /// entity tag is compared with; a `Last-Modified` replaces the file's.
    #[must_use]
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }
}

impl strata_core::StreamedOutput for FileResponse {}

impl HandlerOutput for FileResponse {
    type Body = Binary;

    const READS_RANGE: bool = true;

    fn into_parts(self) -> (StatusCode, HeaderMap, Binary) {
        (StatusCode::OK, self.headers, Binary)
    }

    fn into_streamed(self, request: &RangeHeaders) -> Result<Output, Self> {
        let Self { file, mut headers } = self;
        let (len, modified) = (file.identity.len, file.identity.modified);
        headers.insert(ACCEPT_RANGES, HeaderValue::from_static("bytes"));
        if !headers.contains_key(LAST_MODIFIED)
            && let Some(date) = modified.and_then(http_date)
        {
            headers.insert(LAST_MODIFIED, date);
        }
        let (status, first, count) = match request.wanted(len, &headers) {
            Wanted::Whole => (StatusCode::OK, 0, len),
            Wanted::Part { first, last } => {
                headers.insert(
                    CONTENT_RANGE,
                    content_range(&format!("{first}-{last}"), len),
                );
                (StatusCode::PARTIAL_CONTENT, first, last - first + 1)
            }
            Wanted::Unsatisfiable => {
                headers.insert(CONTENT_RANGE, content_range("*", len));
                // No body, so not one of the file's type.
                headers.remove(CONTENT_TYPE);
                headers.insert(CONTENT_LENGTH, HeaderValue::from(0));
                return Ok(Output::streamed(
                    StatusCode::RANGE_NOT_SATISFIABLE,
                    headers,
                    Body::empty(),
                ));
            }
        };
        headers.insert(CONTENT_LENGTH, HeaderValue::from(count));
        Ok(Output::streamed(status, headers, file.body(first, count)))
    }

    fn describe(_: &Schema) -> Option<Vec<ResponseDescription>> {
        Some(binary_response(
            "The file, of the type its name's extension says",
        ))
    }
}

/// `Content-Range: bytes <range>/<len>`.
fn content_range(range: &str, len: u64) -> HeaderValue {
    HeaderValue::from_str(&format!("bytes {range}/{len}"))
        .unwrap_or_else(|_| unreachable!("digits, '-' and '*' are header text"))
}

/// `time` as an HTTP date (none for a time an HTTP date cannot say: before 1970, after 9999).
fn http_date(time: SystemTime) -> Option<HeaderValue> {
    // httpdate panics outside those years.
    const YEAR_10000: u64 = 253_402_300_800;
    let seconds = time.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs();
    (seconds < YEAR_10000)
        .then(|| HeaderValue::from_str(&httpdate::fmt_http_date(time)).ok())
        .flatten()
}

/// What a file was when checked: the file the body reopens must still be it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    len: u64,
    modified: Option<SystemTime>,
    /// The device and inode: another file put in its place is not it, whatever its length
    /// and time.
    #[cfg(unix)]
    node: (u64, u64),
}

impl Identity {
    fn of(metadata: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        use std::os::unix::fs::MetadataExt as _;
        Self {
            len: metadata.len(),
            modified: metadata.modified().ok(),
            #[cfg(unix)]
            node: (metadata.dev(), metadata.ino()),
        }
    }
}

/// A regular file on disk, checked (its length, modification time and, on Unix, device and
/// inode), to be sent a chunk at a time from the file opened for each chunk and closed after:
/// a download that waits (an HTTP/2 stream without window, a client that does not read) holds
/// no descriptor. [`FileResponse`] sends one; so does the routing's `ServeStatic`.
///
/// ```
/// use http_body::Body;
/// use strata_output::CheckedFile;
///
/// let path = std::env::temp_dir().join(format!("strata-checked-doc-{}", std::process::id()));
/// std::fs::write(&path, "0123456789").unwrap();
/// let file = CheckedFile::check(&path).unwrap(); // blocking: on a blocking thread in servers
/// assert_eq!(file.len(), 10);
/// assert_eq!(file.body(2, 5).size_hint().exact(), Some(5));
/// # std::fs::remove_file(&path).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct CheckedFile {
    path: Arc<Path>,
    identity: Identity,
}

impl CheckedFile {
    /// Checks the file at `path`; it is opened and closed at once (so that a file that cannot
    /// be read, or a shortage of descriptors, shows now). Blocking. Not a regular file (a
    /// directory, a FIFO, a device): `NotFound`.
    ///
    /// # Errors
    /// What the system said.
    pub fn check(path: impl AsRef<Path>) -> io::Result<Self> {
        let path: Arc<Path> = Arc::from(path.as_ref());
        let identity = check(&path)?;
        Ok(Self { path, identity })
    }

    /// The length in bytes when checked.
    pub fn len(&self) -> u64 {
        self.identity.len
    }

    /// Whether the file was empty when checked.
    pub fn is_empty(&self) -> bool {
        self.identity.len == 0
    }

    /// The `count` bytes from byte `first`, as a body: each chunk is read on a blocking thread
    /// from the file opened for it, which must still be the file checked (else the body fails:
    /// the response is cut rather than other bytes sent). Its first frame is empty and reads
    /// nothing, so that a response's head never waits for the disk.
    pub fn body(&self, first: u64, count: u64) -> Body {
        if count == 0 {
            return Body::empty();
        }
        Body::new(FileBody {
            path: Arc::clone(&self.path),
            identity: self.identity,
            next: first,
            remaining: count,
            chunk: FIRST_FILE_CHUNK,
            state: Reading::Head,
        })
    }
}

/// Opens the file at `path` and says what it is; it is closed on return. Not a regular file:
/// `NotFound`.
fn check(path: &Path) -> io::Result<Identity> {
    let not_a_file = || io::Error::from(io::ErrorKind::NotFound);
    // Looked at before opening: opening a FIFO would wait for a writer.
    if !std::fs::metadata(path)?.is_file() {
        return Err(not_a_file());
    }
    let metadata = std::fs::File::open(path)?.metadata()?;
    if !metadata.is_file() {
        return Err(not_a_file());
    }
    Ok(Identity::of(&metadata))
}

/// Opens the file at `path` again, at byte `offset`, if it is still the one `identity` says.
fn reopen(path: &Path, identity: Identity, offset: u64) -> io::Result<std::fs::File> {
    let changed = || io::Error::other("the file changed after its response began");
    // Compared before opening too: a FIFO put in its place would make the open wait.
    if Identity::of(&std::fs::metadata(path)?) != identity {
        return Err(changed());
    }
    let mut file = std::fs::File::open(path)?;
    if Identity::of(&file.metadata()?) != identity {
        return Err(changed());
    }
    file.seek(SeekFrom::Start(offset))?;
    Ok(file)
}

/// The next `count` bytes of `file`, which is closed on return; fewer is an error (the file
/// shrank meanwhile).
fn read_chunk(mut file: std::fs::File, count: usize) -> io::Result<Bytes> {
    let mut chunk = vec![0; count];
    file.read_exact(&mut chunk).map_err(|error| {
        if error.kind() == io::ErrorKind::UnexpectedEof {
            io::Error::other("the file shrank while it was sent")
        } else {
            error
        }
    })?;
    Ok(Bytes::from(chunk))
}

/// The answer to a file that cannot be checked.
fn unreadable(path: &Path, error: io::Error) -> ApiError {
    if error.kind() == io::ErrorKind::NotFound {
        return ApiError::new(StatusCode::NOT_FOUND, "File not found");
    }
    ApiError::from_shortage(error).unwrap_or_else(|error| {
        ApiError::internal(format!("Cannot read {}", path.display())).with_source(error)
    })
}

/// The bytes `next..next + remaining` of a checked file, read a chunk at a time on the
/// blocking threads, each from the file opened for that chunk and closed after it.
///
/// Hyper (1.12) polls an HTTP/2 body for its next chunk before the stream has window, and
/// holds that chunk until it has; an HTTP/1 body waits likewise while the client does not
/// read. Were the file kept open between chunks, every such stream would hold a descriptor:
/// a few thousand stalled downloads would take the process's limit.
struct FileBody {
    path: Arc<Path>,
    identity: Identity,
    /// The next byte to send.
    next: u64,
    /// How many bytes are left to send.
    remaining: u64,
    /// How many bytes the next chunk reads.
    chunk: usize,
    state: Reading,
}

/// Where a [`FileBody`] is.
enum Reading {
    /// Not polled yet. The first poll yields an empty chunk and reads nothing: the format
    /// stage reads a streamed body's first chunk before it sends the head, and the head need
    /// not wait for the disk, nor a HEAD or a stream that never gets window open the file.
    Head,
    /// Between two chunks: the file is closed.
    Idle,
    /// A chunk being read.
    Busy(tokio::task::JoinHandle<io::Result<Bytes>>),
    /// Every byte sent, or failed.
    Done,
}

impl FileBody {
    /// A failure after the head: the response is cut, and the format stage logs why.
    fn failed(&self, error: io::Error) -> BoxError {
        // Out of descriptors or memory: an overload many clients cause, logged as such.
        let failure = ApiError::from_shortage(error).unwrap_or_else(|error| {
            let message = format!("Cannot read {}", self.path.display());
            ApiError::internal(message).with_source(error)
        });
        StreamFailure(failure).into()
    }
}

impl HttpBody for FileBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> PollFrame {
        let this = self.get_mut();
        loop {
            this.state = match std::mem::replace(&mut this.state, Reading::Done) {
                Reading::Head => {
                    this.state = Reading::Idle;
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::new()))));
                }
                Reading::Idle if this.remaining == 0 => Reading::Done,
                Reading::Idle => {
                    let count = usize::try_from(this.remaining.min(this.chunk as u64))
                        .unwrap_or(this.chunk);
                    this.chunk = (this.chunk * 2).min(FILE_CHUNK);
                    let (path, identity, next) = (Arc::clone(&this.path), this.identity, this.next);
                    Reading::Busy(tokio::task::spawn_blocking(move || {
                        read_chunk(reopen(&path, identity, next)?, count)
                    }))
                }
                Reading::Busy(mut reading) => {
                    let read = match Pin::new(&mut reading).poll(cx) {
                        Poll::Pending => {
                            this.state = Reading::Busy(reading);
                            return Poll::Pending;
                        }
                        Poll::Ready(read) => {
                            read.unwrap_or_else(|stopped| Err(io::Error::other(stopped)))
                        }
                    };
                    let chunk = match read {
                        Ok(chunk) => chunk,
                        Err(error) => return Poll::Ready(Some(Err(this.failed(error)))),
                    };
                    this.next += chunk.len() as u64;
                    this.remaining -= chunk.len() as u64;
                    if this.remaining > 0 {
                        this.state = Reading::Idle;
                    }
                    return Poll::Ready(Some(Ok(Frame::data(chunk))));
                }
                Reading::Done => return Poll::Ready(None),
            };
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.state, Reading::Done)
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

/// Any stream of byte chunks sent as the response body, of the given media type, as the
/// chunks come (each one is sent when it is ready; nothing is buffered).
///
/// ```
/// use bytes::Bytes;
/// use http::HeaderValue;
/// use strata_output::StreamResponse;
///
/// struct Countdown(u8);
/// impl futures_core::Stream for Countdown {
///     type Item = Result<Bytes, std::io::Error>;
///     fn poll_next(
///         mut self: std::pin::Pin<&mut Self>,
///         _: &mut std::task::Context<'_>,
///     ) -> std::task::Poll<Option<Self::Item>> {
///         let n = self.0;
///         self.0 = n.saturating_sub(1);
///         std::task::Poll::Ready((n > 0).then(|| Ok(Bytes::from(format!("{n}\n")))))
///     }
/// }
/// let csv = StreamResponse::new(HeaderValue::from_static("text/plain"), Countdown(3));
/// # let _ = csv;
/// ```
pub struct StreamResponse<S> {
    chunks: S,
    headers: HeaderMap,
}

impl<S> std::fmt::Debug for StreamResponse<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamResponse")
            .field("headers", &self.headers)
            .finish_non_exhaustive()
    }
}

impl<S> StreamResponse<S> {
    /// `chunks` sent as a body of `media_type`.
    pub fn new(media_type: HeaderValue, chunks: S) -> Self {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, media_type);
        Self { chunks, headers }
    }

    /// Adds a response header.
    #[must_use]
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }
}

impl StreamResponse<OneChunk> {
    /// Bytes already in memory sent as a body of `media_type` (an image from a store, a
    /// generated PDF): one chunk, with its `Content-Length`.
    ///
    /// ```
    /// use http::HeaderValue;
    /// use strata_output::StreamResponse;
    ///
    /// let png = StreamResponse::from_bytes(HeaderValue::from_static("image/png"), vec![0x89, b'P']);
    /// # let _ = png;
    /// ```
    pub fn from_bytes(media_type: HeaderValue, bytes: impl Into<Bytes>) -> Self {
        let bytes = bytes.into();
        let length = HeaderValue::from(bytes.len());
        Self::new(media_type, OneChunk(Some(bytes))).header(CONTENT_LENGTH, length)
    }
}

/// The stream of [`StreamResponse::from_bytes`]: one chunk, then the end.
#[derive(Debug)]
pub struct OneChunk(Option<Bytes>);

impl Stream for OneChunk {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.0.take().map(Ok))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::from(self.0.is_some());
        (left, Some(left))
    }
}

impl<S> strata_core::StreamedOutput for StreamResponse<S> {}

impl<S, E> HandlerOutput for StreamResponse<S>
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Into<BoxError> + 'static,
{
    type Body = Binary;

    fn into_parts(self) -> (StatusCode, HeaderMap, Binary) {
        (StatusCode::OK, self.headers, Binary)
    }

    fn into_streamed(self, _: &RangeHeaders) -> Result<Output, Self> {
        Ok(Output::streamed(
            StatusCode::OK,
            self.headers,
            chunk_body(self.chunks),
        ))
    }

    fn describe(_: &Schema) -> Option<Vec<ResponseDescription>> {
        Some(binary_response("The stream"))
    }
}

#[cfg(test)]
mod tests {
    use http::Method;
    use http::header::{ETAG, IF_RANGE, RANGE};
    use http_body_util::BodyExt;

    use super::*;

    /// A file of `len` bytes (`0, 1, 2, ...` modulo 251) in a directory of this test.
    fn file(test: &str, len: usize) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("strata-output-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("data.bin");
        std::fs::write(&path, content(len)).unwrap();
        path
    }

    fn content(len: usize) -> Vec<u8> {
        (0..len).map(|i| u8::try_from(i % 251).unwrap()).collect()
    }

    fn get(headers: &[(HeaderName, &str)]) -> RangeHeaders {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(name, HeaderValue::from_str(value).unwrap());
        }
        RangeHeaders::new(&Method::GET, &map)
    }

    /// The status, headers and body of `file` answered to `request`.
    async fn send(file: FileResponse, request: &RangeHeaders) -> (StatusCode, HeaderMap, Bytes) {
        let mut output = file.into_streamed(request).unwrap();
        let body = output.take_stream().unwrap();
        let headers = output.take_headers().unwrap_or_default();
        let bytes = body.collect().await.unwrap().to_bytes();
        (output.status(), headers, bytes)
    }

    #[tokio::test]
    async fn a_whole_file_says_its_length_date_and_that_ranges_are_accepted() {
        let path = file("whole", 100_000);
        let file = FileResponse::open(&path).await.unwrap();
        assert_eq!(file.len(), 100_000);
        let (status, headers, bytes) = send(file, &get(&[])).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[CONTENT_LENGTH], "100000");
        assert_eq!(headers[ACCEPT_RANGES], "bytes");
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        assert_eq!(
            headers[LAST_MODIFIED],
            httpdate::fmt_http_date(modified).as_str()
        );
        assert_eq!(bytes, content(100_000));
    }

    #[tokio::test]
    async fn one_range_is_a_206_with_those_bytes() {
        let path = file("ranges", 200_000);
        let all = content(200_000);
        for (range, first, last) in [
            ("bytes=0-9", 0, 9),
            ("bytes=199990-", 199_990, 199_999),
            ("bytes=-10", 199_990, 199_999),
            // Across chunks, and past the end.
            ("bytes=65000-140000", 65_000, 140_000),
            ("bytes=150000-999999", 150_000, 199_999),
        ] {
            let file = FileResponse::open(&path).await.unwrap();
            let (status, headers, bytes) = send(file, &get(&[(RANGE, range)])).await;
            assert_eq!(status, StatusCode::PARTIAL_CONTENT, "{range}");
            assert_eq!(
                headers[CONTENT_RANGE],
                format!("bytes {first}-{last}/200000").as_str()
            );
            assert_eq!(
                headers[CONTENT_LENGTH],
                (last - first + 1).to_string().as_str()
            );
            assert_eq!(headers[ACCEPT_RANGES], "bytes");
            assert_eq!(bytes, all[first..=last], "{range}");
        }
    }

    #[tokio::test]
    async fn a_range_past_the_end_is_a_416_naming_the_length() {
        let path = file("unsatisfiable", 100);
        let file = FileResponse::open(&path).await.unwrap();
        let (status, headers, bytes) = send(file, &get(&[(RANGE, "bytes=100-")])).await;
        assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);
        assert_eq!(headers[CONTENT_RANGE], "bytes */100");
        assert_eq!(headers[CONTENT_LENGTH], "0");
        assert!(!headers.contains_key(CONTENT_TYPE));
        assert!(bytes.is_empty());
    }

    #[tokio::test]
    async fn several_ranges_are_answered_with_the_whole_file() {
        let path = file("several", 100);
        let file = FileResponse::open(&path).await.unwrap();
        let (status, headers, bytes) = send(file, &get(&[(RANGE, "bytes=0-1,5-6")])).await;
        assert_eq!(status, StatusCode::OK);
        assert!(!headers.contains_key(CONTENT_RANGE));
        assert_eq!(bytes.len(), 100);
    }

    #[tokio::test]
    async fn if_range_keeps_the_range_only_for_the_same_file() {
        let path = file("if-range", 100);
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        let date = httpdate::fmt_http_date(modified);
        let earlier = httpdate::fmt_http_date(modified - std::time::Duration::from_secs(60));
        let tagged = || async {
            FileResponse::open(&path)
                .await
                .unwrap()
                .header(ETAG, HeaderValue::from_static("\"v1\""))
        };
        for (condition, status) in [
            (date.as_str(), StatusCode::PARTIAL_CONTENT),
            ("\"v1\"", StatusCode::PARTIAL_CONTENT),
            (earlier.as_str(), StatusCode::OK),
            ("\"v0\"", StatusCode::OK),
            ("W/\"v1\"", StatusCode::OK),
        ] {
            let request = get(&[(RANGE, "bytes=0-9"), (IF_RANGE, condition)]);
            let (answered, _, bytes) = send(tagged().await, &request).await;
            assert_eq!(answered, status, "{condition}");
            let expected = if status == StatusCode::OK { 100 } else { 10 };
            assert_eq!(bytes.len(), expected, "{condition}");
        }
        // Without an `ETag`, no entity tag matches.
        let untagged = FileResponse::open(&path).await.unwrap();
        let request = get(&[(RANGE, "bytes=0-9"), (IF_RANGE, "\"v1\"")]);
        assert_eq!(send(untagged, &request).await.0, StatusCode::OK);
    }

    /// The body's first frame (the empty one the head waits for), then what reading gives.
    async fn first_read(file: FileResponse) -> Result<Bytes, BoxError> {
        let mut body = file
            .into_streamed(&RangeHeaders::default())
            .unwrap()
            .take_stream()
            .unwrap();
        let head = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert!(head.is_empty());
        body.frame()
            .await
            .unwrap()
            .map(|frame| frame.into_data().unwrap())
    }

    fn failure_cause(error: &BoxError) -> String {
        let failure = error.downcast_ref::<StreamFailure>().unwrap();
        assert!(failure.0.message().starts_with("Cannot read "), "{failure}");
        failure.0.causes().to_string()
    }

    #[tokio::test]
    async fn a_file_replaced_after_the_check_is_not_sent() {
        let path = file("replaced", 100);
        let file = FileResponse::open(&path).await.unwrap();
        // Another file of the same length put in its place.
        let other = path.with_extension("new");
        std::fs::write(&other, content(100)).unwrap();
        std::fs::rename(&other, &path).unwrap();
        let error = first_read(file).await.unwrap_err();
        assert!(failure_cause(&error).contains("changed"), "{error}");
    }

    #[tokio::test]
    async fn a_file_replaced_during_the_download_cuts_it() {
        let path = file("replaced-later", 200_000);
        let mut body = FileResponse::open(&path)
            .await
            .unwrap()
            .into_streamed(&RangeHeaders::default())
            .unwrap()
            .take_stream()
            .unwrap();
        let head = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert!(head.is_empty());
        let chunk = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(chunk.len(), FIRST_FILE_CHUNK);
        let other = path.with_extension("new");
        std::fs::write(&other, content(200_000)).unwrap();
        std::fs::rename(&other, &path).unwrap();
        let error = body.frame().await.unwrap().unwrap_err();
        assert!(failure_cause(&error).contains("changed"), "{error}");
    }

    #[tokio::test]
    async fn a_file_grown_or_gone_after_the_check_is_not_sent() {
        let path = file("grown", 100);
        let file = FileResponse::open(&path).await.unwrap();
        std::fs::write(&path, content(200)).unwrap();
        let error = first_read(file).await.unwrap_err();
        assert!(failure_cause(&error).contains("changed"), "{error}");

        let file = FileResponse::open(&path).await.unwrap();
        std::fs::remove_file(&path).unwrap();
        let error = first_read(file).await.unwrap_err();
        assert!(failure_cause(&error).contains("No such file"), "{error}");
    }

    #[cfg(target_os = "linux")]
    fn descriptors_of(path: &Path) -> usize {
        let path = path.canonicalize().unwrap();
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(Result::ok)
            .filter(|entry| std::fs::read_link(entry.path()).is_ok_and(|target| target == path))
            .count()
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn the_file_is_open_only_while_a_chunk_is_read() {
        let path = file("descriptors", 200_000);
        let file = FileResponse::open(&path).await.unwrap();
        assert_eq!(descriptors_of(&path), 0, "after the check");
        let mut body = file
            .into_streamed(&RangeHeaders::default())
            .unwrap()
            .take_stream()
            .unwrap();
        let head = body.frame().await.unwrap().unwrap();
        assert!(head.data_ref().unwrap().is_empty());
        assert_eq!(descriptors_of(&path), 0, "before the first chunk");
        let chunk = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(chunk.len(), FIRST_FILE_CHUNK, "a small first chunk");
        assert_eq!(descriptors_of(&path), 0, "between chunks");
        let mut sizes = vec![chunk.len()];
        while let Some(frame) = body.frame().await {
            sizes.push(frame.unwrap().into_data().unwrap().len());
        }
        assert_eq!(sizes.iter().sum::<usize>(), 200_000);
        // Doubled up to the full chunk: 8, 16, 32, 64, 64 KiB, then the rest.
        assert_eq!(&sizes[..5], &[8192, 16_384, 32_768, FILE_CHUNK, FILE_CHUNK]);
        assert_eq!(descriptors_of(&path), 0, "after the last chunk");
    }

    #[tokio::test]
    async fn missing_files_and_directories_are_404_and_unreadable_ones_500() {
        let path = file("missing", 1);
        let missing = FileResponse::open(path.with_extension("none"))
            .await
            .unwrap_err();
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
        assert_eq!(missing.message(), "File not found");
        let directory = FileResponse::open(path.parent().unwrap())
            .await
            .unwrap_err();
        assert_eq!(directory.status(), StatusCode::NOT_FOUND);
        let denied = unreadable(&path, io::Error::from(io::ErrorKind::PermissionDenied));
        assert_eq!(denied.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(denied.message().starts_with("Cannot read "));
    }

    #[test]
    fn a_shortage_of_descriptors_or_memory_is_a_503_to_retry() {
        let path = Path::new("/srv/report.csv");
        let mut errors = vec![io::Error::from(io::ErrorKind::OutOfMemory)];
        if cfg!(unix) {
            // EMFILE, ENFILE, ENOMEM.
            errors.extend([24, 23, 12].map(io::Error::from_raw_os_error));
        }
        for error in errors {
            let text = error.to_string();
            let answer = unreadable(path, error);
            assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE, "{text}");
            assert_eq!(answer.headers().unwrap()[http::header::RETRY_AFTER], "1");
            assert!(answer.message().contains("retry"), "{}", answer.message());
            assert!(answer.causes().to_string().contains(&text));
        }
        // Not found, or anything about the file itself, is not a shortage.
        assert_eq!(
            unreadable(path, io::ErrorKind::NotFound.into()).status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            unreadable(path, io::ErrorKind::PermissionDenied.into()).status(),
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }

    #[tokio::test]
    async fn an_empty_file_has_an_empty_body() {
        let path = file("empty", 0);
        let file = FileResponse::open(&path).await.unwrap();
        assert!(file.is_empty());
        let (status, headers, bytes) = send(file, &get(&[(RANGE, "bytes=0-")])).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[CONTENT_LENGTH], "0");
        assert!(bytes.is_empty());
    }
}
