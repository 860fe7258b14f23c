//! The payload types that travel between stages: each stage changes the request's body type,
//! so the compiler checks that stages are stacked in order.
//!
//! `Request<B>` →(parse)→ `Request<Parsed>` →(combine)→ `Request<Staged<HNil>>`
//! →(middleware)→ `Request<Staged<C>>` →(validate)→ `Request<Validated<I, C>>` →(handler) `O`
//! →(output)→ [`Output`] →(format)→ `Response`.
//!
//! `Parsed` and `Staged` carry the merged input and live with it in `strata-input`; the types
//! here are the ones every later stage, routing and the server share.

use std::fmt;
use std::sync::Arc;

use http::{Extensions, HeaderMap, Method, StatusCode, Uri};
use serde::Serialize;
use serde_json::value::RawValue;

use crate::body::Body;
use crate::ctx::HNil;
use crate::error::ApiError;

/// Path parameters found by routing. Routing inserts them into the request extensions; the parse
/// stage takes them from there. Values are already percent-decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathParams(Vec<(Arc<str>, String)>);

impl PathParams {
    /// No parameters.
    pub fn new() -> Self {
        Self::default()
    }

    /// No parameters yet, room for `capacity`.
    pub fn with_capacity(capacity: usize) -> Self {
        Self(Vec::with_capacity(capacity))
    }

    /// Adds a parameter.
    pub fn push(&mut self, name: Arc<str>, value: String) {
        self.0.push((name, value));
    }

    /// The parameters in path order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (&**k, v.as_str()))
    }

    /// Number of parameters.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `(name, value)` pairs.
    pub fn into_inner(self) -> Vec<(Arc<str>, String)> {
        self.0
    }
}

impl<K: Into<Arc<str>>, V: Into<String>> FromIterator<(K, V)> for PathParams {
    fn from_iter<T: IntoIterator<Item = (K, V)>>(iter: T) -> Self {
        Self(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

/// The request after the validate stage: the typed input and the context.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Validated<I, C = HNil> {
    /// The typed, validated input.
    pub input: I,
    /// The context.
    pub ctx: C,
}

/// Room kept in front of a serialized output, so that an envelope's opening (the default
/// result handler's `{"status":"success","data":` is 27 bytes) is written in place.
const ENVELOPE_ROOM: usize = 32;

/// [`ENVELOPE_ROOM`] spaces, pushed as one string: pushed a `char` at a time (`extend` of
/// `repeat_n`) they cost ~350 instructions per output.
const ROOM: &str = "                                ";
const _: () = assert!(ROOM.len() == ENVELOPE_ROOM);

/// Headers a response has room for when a middleware or a handler adds one: see
/// [`Output::headers_mut`].
const RESPONSE_HEADERS_ROOM: usize = 12;

/// Spare capacity a response body may keep from serializing (more, and more than a quarter of
/// the body, is given back).
const SPARE_KEPT_MAX: usize = 4096;

/// A checked, serialized handler output with its success status (200 unless the handler chose
/// another) and any headers the handler added; or a body sent as it is ([`Output::streamed`]:
/// a file, a stream, events), which bypasses the result handler's envelope.
///
/// ```
/// use strata_core::Output;
///
/// let output = Output::new(&serde_json::json!({"n": 1})).unwrap();
/// assert_eq!(output.json(), r#"{"n":1}"#);
/// assert_eq!(output.data().get(), r#"{"n":1}"#);
/// let body = output.into_body_with(b"{\"data\":", b"}");
/// assert_eq!(&body[..], br#"{"data":{"n":1}}"#);
/// ```
pub struct Output {
    status: StatusCode,
    /// Empty (no allocation) unless a handler or a middleware added headers: kept inline, a
    /// box would cost one more allocation for every middleware that adds one.
    headers: HeaderMap,
    /// [`ENVELOPE_ROOM`] spaces, then the JSON text: bytes, as `serde_json` writes them (UTF-8,
    /// but a `String` would check that again on every output: ~120 instructions on hello).
    buffer: Vec<u8>,
    stream: Option<Body>,
    /// Extensions for the response (an event stream's [`StreamShutdown`]); empty, and then
    /// not allocated, for nearly every output.
    extensions: Extensions,
}

impl Output {
    /// Serializes `value` once.
    pub fn new<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        let mut buffer = Vec::with_capacity(128);
        buffer.resize(ENVELOPE_ROOM, b' ');
        serde_json::to_writer(&mut buffer, value)?;
        Ok(Self::from_buffer(buffer))
    }

    /// An output from an already serialized JSON value.
    // Takes the box, as `to_raw_value` gives it, though only its text is copied.
    #[allow(clippy::boxed_local, clippy::needless_pass_by_value)]
    pub fn from_raw(data: Box<RawValue>) -> Self {
        let json = data.get();
        let mut buffer = Vec::with_capacity(ENVELOPE_ROOM + json.len() + 2);
        buffer.extend_from_slice(ROOM.as_bytes());
        buffer.extend_from_slice(json.as_bytes());
        Self::from_buffer(buffer)
    }

    fn from_buffer(buffer: Vec<u8>) -> Self {
        Self {
            status: StatusCode::OK,
            headers: HeaderMap::new(),
            buffer,
            stream: None,
            extensions: Extensions::new(),
        }
    }

    /// An output whose body is sent as it is, with `headers` (its `Content-Type`, its
    /// `Content-Length` when known): the format stage answers with it directly once its first
    /// piece is ready, and gives an error before that to the result handler.
    pub fn streamed(status: StatusCode, headers: HeaderMap, body: Body) -> Self {
        // No buffer: its JSON reads as `null` (an allocation fewer for every file, stream and
        // 304).
        let mut output = Self::from_buffer(Vec::new());
        output.status = status;
        output.stream = Some(body);
        output.with_headers(headers)
    }

    /// Whether the body is sent as it is ([`Output::streamed`]).
    pub fn is_streamed(&self) -> bool {
        self.stream.is_some()
    }

    /// Takes a streamed body out.
    pub fn take_stream(&mut self) -> Option<Body> {
        self.stream.take()
    }

    /// Sets the success status.
    #[must_use]
    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    /// Adds headers to send with the response.
    #[must_use]
    pub fn with_headers(mut self, headers: HeaderMap) -> Self {
        if self.headers.is_empty() {
            self.headers = headers;
        } else {
            self.headers.extend(headers);
        }
        self
    }

    /// The success status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// Headers the handler added, if any.
    pub fn headers(&self) -> Option<&HeaderMap> {
        (!self.headers.is_empty()).then_some(&self.headers)
    }

    /// The headers to send, to add to or change (a middleware amending the response).
    ///
    /// The first call sizes the map for a whole response's headers (twelve): the format stage
    /// makes it the response's map, and the layers around it add theirs (CORS, the request
    /// id). A map of the default size holds six, and a seventh grows it (a reallocation and a
    /// rehash), which two middleware headers and the CORS headers reached.
    pub fn headers_mut(&mut self) -> &mut HeaderMap {
        if self.headers.capacity() == 0 {
            self.headers.reserve(RESPONSE_HEADERS_ROOM);
        }
        &mut self.headers
    }

    /// A `304 Not Modified` with `headers` and no body: the answer to a conditional request
    /// whose validators still match (RFC 9110 §15.4.5).
    pub fn not_modified(headers: HeaderMap) -> Self {
        Self::streamed(StatusCode::NOT_MODIFIED, headers, Body::empty())
    }

    /// Extensions the format stage puts on the response, for the layers and the server
    /// around it (an event stream's [`StreamShutdown`]).
    pub fn extensions_mut(&mut self) -> &mut Extensions {
        &mut self.extensions
    }

    /// Takes the response's extensions out.
    pub fn take_extensions(&mut self) -> Extensions {
        std::mem::take(&mut self.extensions)
    }

    /// Takes the handler's headers out.
    pub fn take_headers(&mut self) -> Option<HeaderMap> {
        (!self.headers.is_empty()).then(|| std::mem::take(&mut self.headers))
    }

    /// The serialized JSON text (`null` for a streamed output), checked as UTF-8 at each call:
    /// a pass over the text, which the usual way out, [`Output::into_body_with`], does not
    /// need. `serde_json` wrote it, so the check cannot fail.
    pub fn json(&self) -> &str {
        let json = std::str::from_utf8(self.json_bytes());
        debug_assert!(json.is_ok(), "serialized output is not UTF-8");
        json.unwrap_or("null")
    }

    /// The JSON text's bytes: `null` without a buffer (a streamed output).
    fn json_bytes(&self) -> &[u8] {
        self.buffer.get(ENVELOPE_ROOM..).unwrap_or(b"null")
    }

    /// The serialized JSON as a [`RawValue`], to embed in a serialized envelope (read again
    /// to make it: [`Output::json`] and [`Output::into_body_with`] are cheaper).
    pub fn data(&self) -> &RawValue {
        let data = serde_json::from_slice(self.json_bytes());
        // What serde_json wrote, it reads: only a `Serialize` misusing serde_json's raw-value
        // token could get here, and then `null` stands in.
        debug_assert!(
            data.is_ok(),
            "serialized output is not JSON: {}",
            self.json()
        );
        data.unwrap_or_else(|_| null_value())
    }

    /// The response body `prefix`, the JSON, `suffix`: written around the serialized output in
    /// its own buffer when `prefix` fits the room kept in front of it (32 bytes), so the JSON
    /// is neither copied nor allocated again.
    pub fn into_body_with(self, prefix: &[u8], suffix: &[u8]) -> bytes::Bytes {
        let start = ENVELOPE_ROOM
            .checked_sub(prefix.len())
            .filter(|_| !self.buffer.is_empty());
        let Some(start) = start else {
            let json = self.json_bytes();
            let mut body = Vec::with_capacity(prefix.len() + json.len() + suffix.len());
            body.extend_from_slice(prefix);
            body.extend_from_slice(json);
            body.extend_from_slice(suffix);
            return body.into();
        };
        let mut buffer = self.buffer;
        buffer[start..ENVELOPE_ROOM].copy_from_slice(prefix);
        buffer.extend_from_slice(suffix);
        // The buffer grew by doubling: a large body gives back what it does not use rather
        // than keep it while a slow client reads.
        let spare = buffer.capacity() - buffer.len();
        if spare > SPARE_KEPT_MAX && spare > buffer.len() / 4 {
            buffer.shrink_to_fit();
        }
        let mut body = bytes::Bytes::from(buffer);
        bytes::Buf::advance(&mut body, start);
        body
    }
}

impl fmt::Debug for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Output")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .field("json", &self.json())
            .field("stream", &self.stream)
            .field("extensions", &self.extensions)
            // The buffer shown as its JSON text, not as bytes.
            .finish_non_exhaustive()
    }
}

/// An error a streamed body yields to end itself with an [`ApiError`]: before the first byte,
/// the format stage answers with that error (its status and message) through the result
/// handler; after it, the error ends the response and is logged.
#[derive(Debug)]
pub struct StreamFailure(pub ApiError);

impl fmt::Display for StreamFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.message())
    }
}

impl std::error::Error for StreamFailure {}

/// Put by a stream that has no end of its own (server-sent events) in its response's
/// extensions ([`Output::extensions_mut`]): the server calls it once when its graceful
/// shutdown begins, and then lets the body end by itself (it should, promptly: the
/// server cuts what is left at its shutdown timeout). A stream without one is ended by the
/// server at once.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use strata_core::StreamShutdown;
///
/// let told = Arc::new(AtomicBool::new(false));
/// let hook = StreamShutdown::new({
///     let told = Arc::clone(&told);
///     move || told.store(true, Ordering::Relaxed)
/// });
/// hook.begin();
/// assert!(told.load(Ordering::Relaxed));
/// ```
#[derive(Clone)]
pub struct StreamShutdown(Arc<dyn Fn() + Send + Sync>);

impl StreamShutdown {
    /// A hook calling `begin` at shutdown.
    pub fn new(begin: impl Fn() + Send + Sync + 'static) -> Self {
        Self(Arc::new(begin))
    }

    /// The server's graceful shutdown has begun.
    pub fn begin(&self) {
        (self.0)();
    }
}

impl fmt::Debug for StreamShutdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StreamShutdown")
    }
}

fn null_value() -> &'static RawValue {
    serde_json::from_str("null").unwrap_or_else(|_| unreachable!("null is JSON"))
}

/// What a result handler knows of the request it answers.
#[derive(Debug, Clone, Default)]
pub struct RequestInfo {
    /// The method.
    pub method: Method,
    /// The URI.
    pub uri: Uri,
    /// The request headers, when the result handler asks for them
    /// (`ResultHandler::REQUEST_HEADERS`); empty otherwise, to spare a copy per request.
    pub headers: HeaderMap,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_is_its_json_wherever_it_came_from() {
        let raw = serde_json::value::to_raw_value(&serde_json::json!({"a": [1, "é"]})).unwrap();
        for output in [
            Output::new(&serde_json::json!({"a": [1, "é"]})).unwrap(),
            Output::from_raw(raw),
        ] {
            assert_eq!(output.json(), r#"{"a":[1,"é"]}"#);
            assert_eq!(output.data().get(), output.json());
            assert!(format!("{output:?}").contains(r#"json: "{\"a\":[1,\"é\"]}""#));
            let body = output.into_body_with(b"[", b"]");
            assert_eq!(&body[..], r#"[{"a":[1,"é"]}]"#.as_bytes());
        }
        let streamed = Output::streamed(StatusCode::OK, HeaderMap::new(), Body::empty());
        assert_eq!(streamed.json(), "null");
        assert_eq!(streamed.data().get(), "null");
        assert_eq!(&streamed.into_body_with(b"[", b"]")[..], b"[null]");
    }

    #[test]
    fn a_large_body_keeps_no_large_spare_capacity() {
        let text = "x".repeat(100_000);
        let body = Output::new(&text).unwrap().into_body_with(b"[", b"]");
        assert_eq!(body.len(), 100_004);
        // `Bytes` does not say its capacity; converting back to a vector shows it when unique.
        let vec = Vec::from(body);
        assert!(
            vec.capacity() - vec.len() <= SPARE_KEPT_MAX,
            "{}",
            vec.capacity()
        );
    }

    #[test]
    fn a_prefix_longer_than_the_room_is_copied_around_the_json() {
        let prefix = format!("{{\"{}\":", "k".repeat(40));
        let body = Output::new(&5)
            .unwrap()
            .into_body_with(prefix.as_bytes(), b"}");
        assert_eq!(body, format!("{prefix}5}}").into_bytes());
        let body = Output::new("x").unwrap().into_body_with(b"", b"");
        assert_eq!(&body[..], b"\"x\"");
    }
}

/// The address of the client that sent a request, as the server saw it (the peer of the TCP
/// connection; none for a UNIX socket). The server puts it in the extensions of every request,
/// for limits kept per client (the body budget's share, a rate limit keyed by address); behind
/// a proxy it is the proxy's. An application serving a routing with `attach_routing` inserts
/// it itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientAddr(pub std::net::IpAddr);
