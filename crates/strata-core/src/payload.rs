//! The payload types that travel between stages: each stage changes the request's body type,
//! so the compiler checks that stages are stacked in order.
//!
//! `Request<B>` →(parse)→ `Request<Parsed>` →(combine)→ `Request<Staged<HNil>>`
//! →(middleware)→ `Request<Staged<C>>` →(validate)→ `Request<Validated<I, C>>` →(handler) `O`
//! →(output)→ [`Output`] →(format)→ `Response`.

use std::fmt;
use std::sync::Arc;

use http::{HeaderMap, Method, StatusCode, Uri};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::body::ResponseBody;
use crate::ctx::HNil;
use crate::error::ApiError;
use crate::input::{Input, JsonObject, TextValue};
use crate::upload::UploadedFile;

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

/// A parsed request body.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub enum ParsedBody {
    /// No body, or a body the method does not read.
    #[default]
    Empty,
    /// A JSON object, as values.
    Json(Map<String, Value>),
    /// A JSON object, checked but kept as bytes (what the parse stage gives): when it is the
    /// only input, the typed input is read straight from it.
    JsonObject(JsonObject),
    /// An urlencoded form, or the text parts of a multipart body; repeated keys are lists.
    Form(Vec<(String, TextValue)>),
    /// The exact bytes of a body read raw (an input with a [`RawBody`](crate::raw::RawBody)
    /// field), as a nameless file of the declared content type.
    Raw(UploadedFile),
}

/// The request after the parse stage.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// The query string's parameters; repeated keys are lists.
    pub query: Vec<(String, TextValue)>,
    /// The body.
    pub body: ParsedBody,
    /// The path parameters.
    pub params: PathParams,
    /// The files of a `multipart/form-data` body, by field name (uploads enabled only).
    pub files: Vec<(String, Vec<UploadedFile>)>,
}

/// The request after the combine stage and during the middleware stage: the merged input and the
/// context accumulated so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Staged<C = HNil> {
    /// The merged input.
    pub input: Input,
    /// The context.
    pub ctx: C,
}

/// The request after the validate stage: the typed input and the context.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Validated<I, C = HNil> {
    /// The typed, validated input.
    pub input: I,
    /// The context.
    pub ctx: C,
}

/// A checked, serialized handler output with its success status (200 unless the handler chose
/// another) and any headers the handler added; or a body sent as it is ([`Output::streamed`]:
/// a file, a stream, events), which bypasses the result handler's envelope.
#[derive(Debug)]
pub struct Output {
    status: StatusCode,
    headers: Option<Box<HeaderMap>>,
    data: Box<RawValue>,
    stream: Option<ResponseBody>,
}

impl Output {
    /// Serializes `value` once.
    pub fn new<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        Ok(Self::from_raw(serde_json::value::to_raw_value(value)?))
    }

    /// An output from an already serialized JSON value.
    pub fn from_raw(data: Box<RawValue>) -> Self {
        Self {
            status: StatusCode::OK,
            headers: None,
            data,
            stream: None,
        }
    }

    /// An output whose body is sent as it is, with `headers` (its `Content-Type`, its
    /// `Content-Length` when known): the format stage answers with it directly once its first
    /// piece is ready, and gives an error before that to the result handler.
    pub fn streamed(status: StatusCode, headers: HeaderMap, body: ResponseBody) -> Self {
        Self {
            status,
            headers: None,
            data: null_value(),
            stream: Some(body),
        }
        .with_headers(headers)
    }

    /// Whether the body is sent as it is ([`Output::streamed`]).
    pub fn is_streamed(&self) -> bool {
        self.stream.is_some()
    }

    /// Takes a streamed body out.
    pub fn take_stream(&mut self) -> Option<ResponseBody> {
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
        if !headers.is_empty() {
            self.headers
                .get_or_insert_with(Box::default)
                .extend(headers);
        }
        self
    }

    /// The success status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// Headers the handler added, if any.
    pub fn headers(&self) -> Option<&HeaderMap> {
        self.headers.as_deref()
    }

    /// Takes the handler's headers out.
    pub fn take_headers(&mut self) -> Option<HeaderMap> {
        self.headers.take().map(|h| *h)
    }

    /// The serialized JSON (`null` for a streamed output).
    pub fn data(&self) -> &RawValue {
        &self.data
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

fn null_value() -> Box<RawValue> {
    RawValue::from_string("null".to_owned()).unwrap_or_else(|_| unreachable!("null is JSON"))
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
