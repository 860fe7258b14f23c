use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::request::Parts;
use http::{HeaderMap, Request, StatusCode};
use http_body::Body;
use strata_core::{ApiError, BoxError, ClientAddr, ErrorKind, PathParams};
use strata_input::text::{DecodeTextError, PlainQuery, parse_urlencoded};
use strata_input::{
    InputSource, JsonObject, JsonObjectError, Parsed, ParsedBody, Query, UploadedFile,
};
use tower_service::Service;

#[cfg(feature = "upload")]
use crate::future::{Metered, Metering};
use crate::future::{Pending, ResponseFuture};
use crate::layer::{Options, ParseLayer};

/// Parses query, path parameters and body; see the [crate docs](crate).
#[derive(Debug, Clone)]
pub struct ParseService<S> {
    inner: S,
    options: Arc<Options>,
}

impl<S> ParseService<S> {
    /// Wraps `inner` with the default options.
    pub fn new(inner: S) -> Self {
        tower_layer::Layer::layer(&ParseLayer::new(), inner)
    }

    pub(crate) fn from_options(inner: S, options: Arc<Options>) -> Self {
        Self { inner, options }
    }

    /// A [`ParseLayer`] with the default options.
    pub fn layer() -> ParseLayer {
        ParseLayer::new()
    }

    strata_core::inner_service_accessors!();
}

/// How the body will be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyKind {
    Json,
    Form,
    /// `multipart/form-data`, read by `strata-upload` (only when uploads are on).
    Multipart,
    /// Any content type, kept as bytes (an endpoint whose input has a `RawBody`).
    Raw,
}

/// Whether a multipart body can be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Uploads {
    Off,
    /// Uploads are set, but this build has no multipart reader (the `upload` feature).
    NotBuilt,
    /// Uploads are on, but the method's input sources take no files.
    NotForMethod,
    On,
}

/// The content type of a raw body, as sent (empty when there is none).
fn raw_content_type(headers: &HeaderMap) -> &str {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
}

/// An empty raw body: zero bytes of its content type when it has one (as express's raw parser
/// gives an empty buffer), no body at all without one.
fn empty_raw(headers: &HeaderMap) -> ParsedBody {
    if headers.contains_key(CONTENT_TYPE) {
        ParsedBody::Raw(UploadedFile::new("", raw_content_type(headers), Vec::new()))
    } else {
        ParsedBody::Empty
    }
}

fn body_kind(headers: &HeaderMap, uploads: Uploads, raw: bool) -> Result<BodyKind, ApiError> {
    if raw {
        return Ok(BodyKind::Raw);
    }
    let Some(value) = headers.get(CONTENT_TYPE) else {
        return Err(unsupported("Request body has no Content-Type".into()));
    };
    let raw = value.to_str().unwrap_or_default();
    let essence = raw.split(';').next().unwrap_or_default().trim();
    let (kind, subtype) = essence.split_once('/').unwrap_or((essence, ""));
    if kind.eq_ignore_ascii_case("application") && subtype.eq_ignore_ascii_case("json")
        || subtype.len() >= 5 && subtype[subtype.len() - 5..].eq_ignore_ascii_case("+json")
    {
        Ok(BodyKind::Json)
    } else if essence.eq_ignore_ascii_case("application/x-www-form-urlencoded") {
        Ok(BodyKind::Form)
    } else if essence.eq_ignore_ascii_case("multipart/form-data") {
        match uploads {
            Uploads::On => Ok(BodyKind::Multipart),
            Uploads::Off => Err(unsupported(format!(
                "Unsupported Content-Type: {essence} (uploads are not enabled)"
            ))),
            Uploads::NotBuilt => Err(unsupported(format!(
                "Unsupported Content-Type: {essence} (this server is built without Strata's \
                 `upload` feature)"
            ))),
            // Its files would be read and dropped: refuse it rather than buffer it.
            Uploads::NotForMethod => Err(unsupported(format!(
                "Unsupported Content-Type: {essence} (this method's input takes no files)"
            ))),
        }
    } else {
        Err(unsupported(format!("Unsupported Content-Type: {essence}")))
    }
}

fn unsupported(message: String) -> ApiError {
    ApiError::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, message)
        .with_kind(ErrorKind::UnsupportedMediaType)
}

pub(crate) fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("Request body exceeds the limit of {limit} bytes"),
    )
    .with_kind(ErrorKind::PayloadTooLarge)
}

/// The boundary of a multipart body, or the error refusing it before a byte is read: a
/// malformed `Content-Type`, or a declared length over the multipart limit.
#[cfg(feature = "upload")]
fn multipart_boundary(
    headers: &HeaderMap,
    limits: &strata_upload::UploadLimits,
    declared: Option<u64>,
) -> Result<String, ApiError> {
    let content_type = headers.get(CONTENT_TYPE).map(http::HeaderValue::to_str);
    let boundary = strata_upload::boundary(match content_type {
        Some(Ok(content_type)) => content_type,
        _ => "",
    })?;
    let limit = limits.body_size();
    if declared.is_some_and(|n| n > limit) {
        return Err(multipart_too_large(limit));
    }
    Ok(boundary)
}

/// The whole multipart body is over its limit (said before reading, from `Content-Length`).
#[cfg(feature = "upload")]
fn multipart_too_large(limit: u64) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("Multipart body exceeds the limit of {limit} bytes"),
    )
    .with_kind(ErrorKind::PayloadTooLarge)
}

fn text_error(what: &str, error: &DecodeTextError) -> ApiError {
    ApiError::bad_request(ErrorKind::Parse, format!("Invalid {what}: {error}"))
}

pub(crate) fn parse_body(
    kind: BodyKind,
    bytes: Vec<u8>,
    max_fields: usize,
    defer_json_check: bool,
    headers: &HeaderMap,
) -> Result<ParsedBody, ApiError> {
    if bytes.is_empty() {
        return Ok(match kind {
            BodyKind::Raw => empty_raw(headers),
            _ => ParsedBody::Empty,
        });
    }
    match kind {
        BodyKind::Raw => Ok(ParsedBody::Raw(UploadedFile::new(
            "",
            raw_content_type(headers),
            bytes,
        ))),
        BodyKind::Json if defer_json_check => JsonObject::deferred(bytes)
            .map(ParsedBody::JsonObject)
            .map_err(JsonObjectError::into_api_error),
        BodyKind::Json => JsonObject::new(bytes)
            .map(ParsedBody::JsonObject)
            .map_err(JsonObjectError::into_api_error),
        BodyKind::Form => parse_urlencoded(&bytes, max_fields)
            .map(ParsedBody::Form)
            .map_err(|e| text_error("form body", &e)),
        BodyKind::Multipart => Err(ApiError::internal(
            "a multipart body is read as it streams, not buffered",
        )),
    }
}

fn parse_query(parts: &Parts, max_fields: usize) -> Result<Query, ApiError> {
    let error = |e| text_error("query string", &e);
    // Most queries need no decoding: kept as they are, read in place when decoded.
    if let Some(plain) = PlainQuery::check(&parts.uri, max_fields).map_err(error)? {
        return Ok(Query::from(plain));
    }
    match parts.uri.query() {
        Some(query) => parse_urlencoded(query.as_bytes(), max_fields)
            .map(Query::from)
            .map_err(error),
        None => Ok(Query::new()),
    }
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers.get(CONTENT_LENGTH)?.to_str().ok()?.parse().ok()
}

/// The read is asynchronous: the future takes the ready service and leaves a fresh clone here.
fn take_ready<S: Clone>(inner: &mut S) -> S {
    let clone = inner.clone();
    std::mem::replace(inner, clone)
}

/// The multipart read of `body`, drawing on the budget as it arrives (the pending request's
/// reservation moves into it).
#[cfg(feature = "upload")]
fn read_multipart<B, S>(
    body: B,
    boundary: String,
    limits: strata_upload::UploadLimits,
    options: &Options,
    pending: &mut Pending<S>,
) -> crate::future::ReadMultipart
where
    B: Body + Send + 'static,
    B::Error: Into<BoxError>,
{
    let reservation = pending.reservation.take();
    let mut read_options = strata_upload::ReadOptions::new();
    if let Some(streamed) = &options.streamed_file {
        read_options = read_options.stream_field(streamed.name.clone());
        pending.streamed = Some(streamed.clone());
    }
    Box::pin(async move {
        let released = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let metering = Metering::new(reservation, Arc::clone(&released));
        let read = strata_upload::read_multipart_with(
            Metered::new(body, metering.clone()),
            boundary,
            &limits,
            &read_options.count_released(released),
        )
        .await;
        metering.finish(read)
    })
}

impl<S, B> Service<Request<B>> for ParseService<S>
where
    S: Service<Request<Parsed>> + Clone,
    S::Error: Into<BoxError> + 'static,
    B: Body + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = ApiError;
    type Future = ResponseFuture<B, S>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(ApiError::from_inner)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let (mut parts, body) = request.into_parts();
        let options = &*self.options;
        let params = parts.extensions.remove::<PathParams>().unwrap_or_default();
        let query = match parse_query(&parts, options.max_fields) {
            Ok(query) => query,
            Err(error) => return ResponseFuture::error(error),
        };
        let empty = body.is_end_stream() || body.size_hint().exact() == Some(0);
        let reads_body = options.input_sources.reads_body(&parts.method);
        if empty || !reads_body {
            let body = if options.raw_body && reads_body {
                empty_raw(&parts.headers)
            } else {
                ParsedBody::Empty
            };
            let parsed = Parsed {
                query,
                body,
                params,
                files: Vec::new(),
            };
            return ResponseFuture::inner(self.inner.call(Request::from_parts(parts, parsed)));
        }
        let declared = declared_length(&parts.headers).or(body.size_hint().exact());
        let uploads = match &options.upload {
            None => Uploads::Off,
            Some(_) if !cfg!(feature = "upload") => Uploads::NotBuilt,
            Some(_)
                if options
                    .input_sources
                    .for_method(&parts.method)
                    .contains(&InputSource::Files) =>
            {
                Uploads::On
            }
            Some(_) => Uploads::NotForMethod,
        };
        let (kind, unreadable) = match body_kind(&parts.headers, uploads, options.raw_body) {
            Ok(kind) => (kind, None),
            // A body of unknown length may still be empty: find out before refusing it.
            Err(error) if declared.is_none() => (BodyKind::Json, Some(error)),
            Err(error) => return ResponseFuture::error(error),
        };
        let multipart = match (kind, &options.upload) {
            (BodyKind::Multipart, Some(limits)) => Some(limits),
            _ => None,
        };
        // Limits first, from the declared length: nothing is read from a body refused anyway.
        // (Without the `upload` feature `multipart` is always `None`: see `Uploads::NotBuilt`.)
        #[cfg_attr(not(feature = "upload"), allow(unused_variables))]
        let boundary = match multipart {
            #[cfg(feature = "upload")]
            Some(limits) => match multipart_boundary(&parts.headers, limits, declared) {
                Ok(boundary) => Some(boundary),
                Err(error) => return ResponseFuture::error(error),
            },
            None if declared.is_some_and(|n| n > options.body_limit as u64) => {
                return ResponseFuture::error(too_large(options.body_limit));
            }
            _ => None::<String>,
        };
        // The budget is drawn on as the body arrives: a declared length costs a client
        // nothing, so it reserves nothing.
        let client = parts.extensions.get::<ClientAddr>().copied();
        let reservation = options
            .budget
            .as_ref()
            .map(|budget| budget.reservation(client));
        #[cfg_attr(not(feature = "upload"), allow(unused_mut))]
        let mut pending = Pending {
            reservation,
            parts,
            query,
            params,
            kind,
            unreadable,
            limit: options.body_limit,
            declared: declared.and_then(|n| usize::try_from(n).ok()),
            max_fields: options.max_fields,
            defer_json_check: options.defer_json_check,
            inner: take_ready(&mut self.inner),
            streamed: None,
        };
        #[cfg(feature = "upload")]
        if let (Some(limits), Some(boundary)) = (multipart, boundary) {
            let read = read_multipart(body, boundary, limits.clone(), options, &mut pending);
            return ResponseFuture::multipart(read, pending);
        }
        ResponseFuture::reading(body, pending)
    }
}
