//! Outputs sent as they are, not as JSON: [`FileResponse`] (a file from disk, streamed) and
//! [`StreamResponse`] (any stream of bytes). They bypass the output check, the serialization
//! and the result handler's envelope on success; an error before their first byte (the file
//! cannot be opened, the stream fails at once) is an ordinary error response, and one after it
//! ends the response and is logged.

use std::io;
use std::path::Path;

use bytes::Bytes;
use futures_core::Stream;
use futures_util::TryStreamExt;
use garde::Validate;
use http::header::{CONTENT_DISPOSITION, CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use http_body::Frame;
use http_body_util::StreamBody;
use schemars::{Schema, json_schema};
use serde::{Serialize, Serializer};
use strata_core::{ApiError, BoxError, Output, ResponseBody, ResponseDescription};
use tokio_util::io::ReaderStream;

use crate::reply::HandlerOutput;

/// How many bytes of a file are read at once: the most of it held in memory per response.
const FILE_CHUNK: usize = 64 * 1024;

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

/// A 200 of binary data, as the document describes streamed outputs.
fn binary_response(description: &str) -> Vec<ResponseDescription> {
    let schema = json_schema!({ "type": "string", "format": "binary" });
    vec![
        ResponseDescription::new(StatusCode::OK, schema)
            .mime_type(OCTET_STREAM)
            .description(description),
    ]
}

/// A body read from a stream of byte chunks (http-body-util's `StreamBody` over the chunks as
/// data frames). Its length, when known, is the `Content-Length` header the output sets.
fn chunk_body<S, E>(chunks: S) -> ResponseBody
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Into<BoxError> + 'static,
{
    ResponseBody::stream(StreamBody::new(
        chunks.map_ok(Frame::data).map_err(Into::<BoxError>::into),
    ))
}

/// A file from disk, streamed in 64 KiB pieces (never held whole in memory), with its
/// `Content-Type` (guessed from the extension unless set) and `Content-Length`.
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
    file: tokio::fs::File,
    len: u64,
    headers: HeaderMap,
}

impl FileResponse {
    /// Opens the file at `path`. A missing file is a 404 (`File not found`, the path is not
    /// sent); another failure (no permission, a directory) a 500 whose cause is logged.
    ///
    /// # Errors
    /// As said.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, ApiError> {
        let path = path.as_ref();
        let failed = |error: io::Error| match error.kind() {
            io::ErrorKind::NotFound => ApiError::new(StatusCode::NOT_FOUND, "File not found"),
            _ => ApiError::internal(format!("Cannot read {}", path.display())).with_source(error),
        };
        let file = tokio::fs::File::open(path).await.map_err(failed)?;
        let metadata = file.metadata().await.map_err(failed)?;
        if !metadata.is_file() {
            // A directory (or a device) is no file to download.
            return Err(failed(io::Error::from(io::ErrorKind::NotFound)));
        }
        let guessed = mime_guess::from_path(path)
            .first_raw()
            .unwrap_or(OCTET_STREAM);
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(guessed));
        Ok(Self {
            file,
            len: metadata.len(),
            headers,
        })
    }

    /// The length in bytes, sent as `Content-Length`.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
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

    /// Adds a response header (`Cache-Control`, `ETag`, ...).
    #[must_use]
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }
}

impl HandlerOutput for FileResponse {
    type Body = Binary;

    fn into_parts(self) -> (StatusCode, HeaderMap, Binary) {
        (StatusCode::OK, self.headers, Binary)
    }

    fn into_streamed(self) -> Result<Output, Self> {
        let mut headers = self.headers;
        headers.insert(CONTENT_LENGTH, HeaderValue::from(self.len));
        // No more than the length sent, should the file grow meanwhile.
        let file = tokio::io::AsyncReadExt::take(self.file, self.len);
        let body = chunk_body(ReaderStream::with_capacity(file, FILE_CHUNK));
        Ok(Output::streamed(StatusCode::OK, headers, body))
    }

    fn describe(_: &Schema) -> Option<Vec<ResponseDescription>> {
        Some(binary_response("The file"))
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

impl<S, E> HandlerOutput for StreamResponse<S>
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Into<BoxError> + 'static,
{
    type Body = Binary;

    fn into_parts(self) -> (StatusCode, HeaderMap, Binary) {
        (StatusCode::OK, self.headers, Binary)
    }

    fn into_streamed(self) -> Result<Output, Self> {
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
