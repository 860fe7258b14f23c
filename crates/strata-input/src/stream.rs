//! [`StreamedFile`]: an uploaded file the handler reads as it arrives.
//!
//! An input field of type `StreamedFile` makes its endpoint read a `multipart/form-data` body
//! up to that file's part and no further before the pipeline goes on: the fields sent before
//! it are combined and validated as usual, and a request whose fields are wrong is refused
//! before one byte of the file is read. The handler then reads the file a chunk at a time,
//! as the client sends it (to hash it, or forward it to object storage), never holding it
//! whole. The size limit per file, the body limit, the minimum data rate and the body budget
//! apply to it as to any upload.
//!
//! **The file is the form's last part.** Every other field of the input comes before it;
//! a form that sends the file before a required field is refused with a 400 naming the field,
//! and a part after the file ends the stream with a 400. The generated clients send it last.
//! An input has at most one `StreamedFile`.
//!
//! ```
//! use bytes::Bytes;
//! use strata_input::StreamedFile;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! // What a handler receives (here made from chunks, as a client or a test makes one).
//! let chunks = [Ok::<_, std::io::Error>(Bytes::from_static(b"hello, ")), Ok(Bytes::from_static(b"world"))];
//! let mut file = StreamedFile::new("greeting.txt", "text/plain", futures_util::stream::iter(chunks));
//! let mut size = 0;
//! while let Some(chunk) = file.chunk().await.unwrap() {
//!     size += chunk.len();
//! }
//! assert_eq!((file.name(), size), ("greeting.txt", 12));
//! # }
//! ```

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_core::Stream;
use strata_core::{ApiError, BoxError};

use crate::file::UploadedFile;

/// The keyword marking [`StreamedFile`]'s schema, so that endpoints and documents recognise it.
pub const STREAM_MARKER: &str = "x-streamed-file";

/// The bytes of a [`StreamedFile`], a chunk at a time.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, ApiError>> + Send>>;

/// A file of a `multipart/form-data` request read as it arrives; see the [module
/// docs](self).
///
/// It is a [`Stream`] of chunks; [`chunk`](Self::chunk) reads the next one. A chunk that breaks
/// a limit, or a body that fails to arrive, is an `Err` carrying the response to give (a 413,
/// a 408, a 400): a handler returns it with `?`. A file that is dropped unread ends the
/// request's body there.
pub struct StreamedFile {
    name: String,
    mimetype: String,
    /// Shared with the copy a client's capture of the input's files makes (serialization
    /// cannot move it out of the input), and taken when the request's body is made; a `Mutex`
    /// keeps the file `Sync`, so that a handler may hold a reference to its input across an
    /// `await` (it is never contended: one task reads the file).
    bytes: Arc<Mutex<Option<ByteStream>>>,
}

impl StreamedFile {
    /// A file named `name` (the client's file name) of media type `mimetype` (empty:
    /// `application/octet-stream`), whose bytes are `stream`'s chunks. The multipart reader
    /// makes the server's; a client sends one made of a file on disk or any stream of bytes
    /// without holding it in memory.
    pub fn new<S, E>(name: impl Into<String>, mimetype: impl Into<String>, stream: S) -> Self
    where
        S: Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: Into<BoxError> + 'static,
    {
        let named = UploadedFile::new(name, mimetype, Bytes::new());
        Self {
            name: named.name().to_owned(),
            mimetype: named.mimetype().to_owned(),
            bytes: Arc::new(Mutex::new(Some(Box::pin(ApiErrors { stream })))),
        }
    }

    /// The file name the client gave.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The media type the client declared for the part (`application/octet-stream` when none).
    pub fn mimetype(&self) -> &str {
        &self.mimetype
    }

    /// The next chunk of the file; `None` once it has all been read.
    ///
    /// # Errors
    ///
    /// What stopped the file: a limit (413), a body that stopped arriving or too slowly
    /// (408), a malformed body or a part after the file (400); the error is the response.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, ApiError> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx))
            .await
            .transpose()
    }

    /// The stream of bytes, taken out (a client sending the file); `None` once taken.
    #[doc(hidden)]
    pub fn take_bytes(&self) -> Option<ByteStream> {
        self.bytes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

impl Stream for StreamedFile {
    type Item = Result<Bytes, ApiError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut bytes = self
            .bytes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match &mut *bytes {
            Some(stream) => stream.as_mut().poll_next(cx),
            None => Poll::Ready(None),
        }
    }
}

impl fmt::Debug for StreamedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamedFile")
            .field("name", &self.name)
            .field("mimetype", &self.mimetype)
            .finish_non_exhaustive()
    }
}

pin_project_lite::pin_project! {
    /// A stream's errors as the responses they are ([`ApiError::from_inner`]).
    struct ApiErrors<S> {
        #[pin]
        stream: S,
    }
}

impl<S, E> Stream for ApiErrors<S>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: Into<BoxError> + 'static,
{
    type Item = Result<Bytes, ApiError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.project()
            .stream
            .poll_next(cx)
            .map(|item| item.map(|chunk| chunk.map_err(ApiError::from_inner)))
    }
}

// The parse stage hands the file over as an uploaded file whose contents are the stream: the
// input's files already travel from the parse stage to the typed input, untouched.
impl<'de> serde::Deserialize<'de> for StreamedFile {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let file = UploadedFile::deserialize(deserializer)?;
        file.take_stream().ok_or_else(|| {
            serde::de::Error::custom(
                "a streamed file is read as it arrives: this file was received whole (or \
                 already taken)",
            )
        })
    }
}

/// As a file: the generated clients send it as the form's last part. Inside a client's capture
/// ([`capture_files`](crate::capture_files)) the captured file shares this one's stream, which
/// the client takes when it makes the request's body (a stream is sent once); outside, it
/// serializes as its name and media type.
impl serde::Serialize for StreamedFile {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let file = UploadedFile::streamed(StreamedFile {
            name: self.name.clone(),
            mimetype: self.mimetype.clone(),
            bytes: Arc::clone(&self.bytes),
        });
        serde::Serialize::serialize(&file, serializer)
    }
}

crate::binary_json_schema!(StreamedFile, "StreamedFile", STREAM_MARKER => true);

/// The name of the input schema's [`StreamedFile`] field, if it has one (an object's property
/// marked [`STREAM_MARKER`]); the names of every such field, when there are several.
pub fn streamed_fields(input_schema: &serde_json::Value) -> Vec<String> {
    input_schema
        .get("properties")
        .and_then(serde_json::Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .filter(|(_, schema)| {
                    schema
                        .get(STREAM_MARKER)
                        .is_some_and(|marker| marker == true)
                })
                .map(|(name, _)| name.clone())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;

    use super::*;
    use crate::{Input, InputValue};

    fn chunks(parts: &[&'static str]) -> StreamedFile {
        let items: Vec<Result<Bytes, std::io::Error>> = parts
            .iter()
            .map(|part| Ok(Bytes::from_static(part.as_bytes())))
            .collect();
        StreamedFile::new("f.txt", "", futures_util::stream::iter(items))
    }

    #[derive(Deserialize, JsonSchema)]
    struct Upload {
        #[allow(dead_code)]
        title: String,
        file: StreamedFile,
    }

    #[tokio::test]
    async fn a_streamed_file_reaches_the_typed_input_through_the_files_and_reads_in_chunks() {
        let mut input = Input::new();
        input.insert("title", "T".into());
        let file = UploadedFile::streamed(chunks(&["ab", "cd"]));
        input.insert("file", InputValue::Files(vec![file]));
        let mut upload = Upload::deserialize(&input).unwrap();
        assert_eq!(upload.file.mimetype(), "application/octet-stream");
        assert_eq!(upload.file.chunk().await.unwrap().unwrap().as_ref(), b"ab");
        assert_eq!(upload.file.chunk().await.unwrap().unwrap().as_ref(), b"cd");
        assert!(upload.file.chunk().await.unwrap().is_none());
        // Taken once: a second reading of the same input finds no stream.
        let again = Upload::deserialize(&input).err().unwrap();
        assert!(again.to_string().contains("already taken"), "{again}");
    }

    #[test]
    fn a_file_received_whole_is_not_a_streamed_file() {
        let mut input = Input::new();
        input.insert("title", "T".into());
        let whole = UploadedFile::new("f", "", &b"x"[..]);
        input.insert("file", InputValue::Files(vec![whole]));
        assert!(Upload::deserialize(&input).is_err());
    }

    #[test]
    fn the_schema_marks_the_streamed_field() {
        let schema = schemars::schema_for!(Upload);
        assert_eq!(streamed_fields(schema.as_value()), ["file"]);
    }

    #[tokio::test]
    async fn errors_of_the_stream_are_responses() {
        let items: Vec<Result<Bytes, ApiError>> = vec![
            Ok(Bytes::from_static(b"a")),
            Err(ApiError::new(
                http::StatusCode::PAYLOAD_TOO_LARGE,
                "too big",
            )),
        ];
        let mut file = StreamedFile::new("f", "", futures_util::stream::iter(items));
        assert!(file.chunk().await.unwrap().is_some());
        let error = file.chunk().await.unwrap_err();
        assert_eq!((error.status().as_u16(), error.message()), (413, "too big"));
    }

    #[test]
    fn a_captured_file_shares_the_stream_which_is_taken_once() {
        let file = chunks(&["x"]);
        let value = serde_json::to_value(&file).unwrap();
        assert_eq!(value["name"], "f.txt");
        // Captured twice (a client tries JSON first), taken once, when the body is made.
        let _ = crate::capture_files(|| serde_json::to_value(&file));
        let (_, files) = crate::capture_files(|| serde_json::to_value(&file));
        let captured = files[0].take_stream().unwrap();
        assert!(captured.take_bytes().is_some(), "shared with the input");
        assert!(file.take_bytes().is_none(), "taken once");
    }
}
