//! [`ResultHandler`]: how outcomes become responses; [`DefaultResultHandler`], the spec's
//! envelope; and [`ErrorHandler`], the one routing keeps for errors outside any endpoint.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use http::{HeaderMap, Method, Response, StatusCode, Uri};
use schemars::{Schema, json_schema};

use crate::{ApiError, Body, Logger, Output, RequestInfo, ResponseDescription};

/// Turns the outcome of an endpoint into a response, and describes the responses it produces.
///
/// Descriptions are kept in the endpoint's metadata for API description generation. Headers
/// carried by the error ([`ApiError::with_header`]) or the output (a handler's `Reply`, a
/// middleware's amendments) are not seen by `handle`: the format layer gives an outcome that
/// carries some to [`handle_with_headers`](Self::handle_with_headers) instead, whose default
/// calls `handle` and adds them to its response.
pub trait ResultHandler: Clone + Send + Sync + 'static {
    /// Whether `handle` reads the request headers: when `true`, the format layer copies them
    /// into [`RequestInfo::headers`] (a copy per request, so it is off by default).
    const REQUEST_HEADERS: bool = false;

    /// Success responses, given the schema of the endpoint's output.
    fn positive(&self, output: &Schema) -> Vec<ResponseDescription>;

    /// Error responses.
    fn negative(&self) -> Vec<ResponseDescription>;

    /// The response of a declared outcome (an [`Outcomes`](crate::Outcomes) variant) with
    /// `status` and a body of `body` (`None`: no body), for API descriptions. `handle` gets a
    /// declared outcome as an `Ok` output with its status, an error status included; one
    /// without a body and with an error status comes as an [`ApiError`] of that status.
    ///
    /// The default: a success gets [`positive`](Self::positive)'s first response around the
    /// body, at `status`; an error the body as it is, as JSON; an error without a body
    /// [`negative`](Self::negative)'s response for `status` (or its first).
    fn outcome(&self, status: StatusCode, body: Option<&Schema>) -> ResponseDescription {
        outcome_description(self, status, body, |body| {
            ResponseDescription::new(status, body.clone()).mime_type("application/json")
        })
    }

    /// Builds the response. When `result` is an error, its status is usually the response's.
    fn handle(
        &self,
        result: Result<Output, ApiError>,
        request: &RequestInfo,
        logger: &Logger,
    ) -> Response<Body>;

    /// Builds the response to an outcome that carries `headers` (the output's or the error's,
    /// taken out of it: a handler's `Reply`, a middleware's amendments). They win over the
    /// handler's own headers of the same name and come first, as [`merge_headers_under`]
    /// orders them.
    ///
    /// The default calls [`handle`](Self::handle), then takes `headers` and adds the
    /// response's own under them. A handler may instead take the map
    /// (`std::mem::take(headers)`) and build its response on it, adding its own headers where
    /// the map does not name them: one map per response instead of two, and no copy (the
    /// [`DefaultResultHandler`] does). Whatever is left in `headers` when it returns (all of
    /// them if it panics first) is added to the response by [`merge_headers_under`].
    fn handle_with_headers(
        &self,
        result: Result<Output, ApiError>,
        headers: &mut HeaderMap,
        request: &RequestInfo,
        logger: &Logger,
    ) -> Response<Body> {
        let mut response = self.handle(result, request, logger);
        merge_headers_under(&mut response, std::mem::take(headers));
        response
    }
}

/// What [`ResultHandler::outcome`] describes, with `error_body` describing an error outcome's
/// body.
fn outcome_description<R: ResultHandler>(
    handler: &R,
    status: StatusCode,
    body: Option<&Schema>,
    error_body: impl FnOnce(&Schema) -> ResponseDescription,
) -> ResponseDescription {
    let mut description = match body {
        Some(body) if status.is_success() => handler
            .positive(body)
            .into_iter()
            .next()
            .unwrap_or_else(|| ResponseDescription::new(status, body.clone())),
        Some(body) => error_body(body),
        // No body: nothing to send for a success; an error is the handler's error.
        None if status.is_success() => ResponseDescription::new(status, json_schema!({})),
        None => {
            let negative = handler.negative();
            negative
                .iter()
                .find(|d| d.status == status)
                .or_else(|| negative.first())
                .cloned()
                .unwrap_or_else(|| ResponseDescription::new(status, json_schema!({})))
        }
    };
    if description.status != status {
        // Another status's response lends its body only: what it means, and the kinds of
        // error it answers, are its own (a 422 "the input fails validation" is not a 404).
        description.description = None;
        description.kinds.clear();
    }
    description.status = status;
    description
}

/// Gives `response` the map `headers`, with the response's own headers added where `headers`
/// does not name them (what extending the response's map with `headers` gives: theirs win;
/// they come first). The map becomes the response's rather than being copied into it:
/// [`Output::headers_mut`] sized it for the headers the layers around still add.
pub fn merge_headers_under(response: &mut Response<Body>, headers: HeaderMap) {
    let own = std::mem::replace(response.headers_mut(), headers);
    let headers = response.headers_mut();
    // The name of the values being kept; `None` while skipping a name the output has.
    let mut kept: Option<HeaderName> = None;
    for (name, value) in own {
        if let Some(name) = name {
            kept = (!headers.contains_key(&name)).then_some(name);
        }
        if let Some(name) = &kept {
            headers.append(name.clone(), value);
        }
    }
}

/// The configuration's result handler for errors outside endpoints: a 404 or 405 of the
/// router, a malformed path parameter, a refused static path, the server's own 400 (`Host`)
/// and the errors of the application's own tower layers (the spec: every error goes through
/// the result handler). Set in the router's settings
/// (`strata_routing::RouterSettings::error_handler`); without one, those errors use the
/// default envelope. Cloning is cheap.
#[derive(Clone)]
pub struct ErrorHandler(Arc<dyn FormatsErrors>);

impl fmt::Debug for ErrorHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ErrorHandler").field(&self.0.name()).finish()
    }
}

/// What an [`ErrorHandler`] needs of a [`ResultHandler`], without its generic parts.
trait FormatsErrors: Send + Sync + 'static {
    fn respond(&self, error: ApiError, request: &RequestInfo, logger: &Logger) -> Response<Body>;
    fn negative(&self) -> Vec<ResponseDescription>;
    fn reads_headers(&self) -> bool;
    fn name(&self) -> &'static str;
}

impl<R: ResultHandler> FormatsErrors for R {
    fn respond(&self, error: ApiError, request: &RequestInfo, logger: &Logger) -> Response<Body> {
        self.handle(Err(error), request, logger)
    }

    fn negative(&self) -> Vec<ResponseDescription> {
        ResultHandler::negative(self)
    }

    fn reads_headers(&self) -> bool {
        R::REQUEST_HEADERS
    }

    fn name(&self) -> &'static str {
        std::any::type_name::<R>()
    }
}

impl ErrorHandler {
    /// Formats errors outside endpoints with `handler`.
    pub fn new<R: ResultHandler>(handler: R) -> Self {
        Self(Arc::new(handler))
    }

    /// The handler's response to `error` for a request of `method` to `uri`, with the headers
    /// the error carries (`Allow` of a 405) added after, as the format stage does. A handler
    /// that panics gives a plain 500 (logged), never a dropped connection.
    pub fn respond(
        &self,
        mut error: ApiError,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        logger: &Logger,
    ) -> Response<Body> {
        let extra = error.take_headers();
        let info = RequestInfo {
            method: method.clone(),
            uri: uri.clone(),
            headers: if self.0.reads_headers() {
                headers.clone()
            } else {
                HeaderMap::new()
            },
        };
        let handled = catch_unwind(AssertUnwindSafe(|| self.0.respond(error, &info, logger)));
        let mut response = handled.unwrap_or_else(|payload| {
            logger.error(format_args!(
                "the error handler panicked: {}",
                crate::panic_message(&*payload)
            ));
            let mut response = Response::new(Body::from("Internal Server Error"));
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            response.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            response
        });
        if let Some(extra) = extra {
            response.headers_mut().extend(extra);
        }
        response
    }

    /// `error` for the request of `parts`, as `handler` answers it, or the default envelope
    /// without one: how every error outside an endpoint is answered (the router's 404 and
    /// 405, static files', the server's own).
    pub fn respond_or_default(
        handler: Option<&ErrorHandler>,
        error: ApiError,
        parts: &http::request::Parts,
    ) -> Response<Body> {
        match handler {
            None => error_response(error),
            Some(handler) => {
                let logger = Logger::from_extensions(&parts.extensions);
                handler.respond(error, &parts.method, &parts.uri, &parts.headers, &logger)
            }
        }
    }

    /// Whether the handler reads request headers (so callers keep them for it).
    pub fn reads_headers(&self) -> bool {
        self.0.reads_headers()
    }

    /// The handler's error responses, for API descriptions.
    pub fn negative(&self) -> Vec<ResponseDescription> {
        self.0.negative()
    }
}

const JSON: &str = "application/json; charset=utf-8";

/// A response with `status`, a JSON `body` and `Content-Type: application/json; charset=utf-8`.
pub fn json_response(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(Body::from(body.into()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(JSON));
    response
}

/// A JSON response built on `headers`, with `Content-Type` added unless they name one.
fn json_response_on(status: StatusCode, body: Bytes, headers: HeaderMap) -> Response<Body> {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
        .headers_mut()
        .entry(CONTENT_TYPE)
        .or_insert(HeaderValue::from_static(JSON));
    response
}

/// `{"status":"error","error":{"message":...}}` for `error`.
fn error_body(error: &ApiError) -> Vec<u8> {
    let mut body = Vec::with_capacity(error.message().len() + 44);
    body.extend_from_slice(br#"{"status":"error","error":{"message":"#);
    // Writing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut body, error.message());
    body.extend_from_slice(b"}}");
    body
}

/// The default error response for `error`: its status, any extra headers still in it, and
/// `{"status":"error","error":{"message":...}}`.
pub fn error_response(mut error: ApiError) -> Response<Body> {
    let body = error_body(&error);
    match error.take_headers() {
        // The error's own map becomes the response's (a `Content-Type` in it wins, as
        // before): no second map allocated and filled.
        Some(headers) => json_response_on(error.status(), body.into(), headers),
        None => json_response(error.status(), body),
    }
}

/// The envelope around an output: `{"status":"success","data":...}`, or
/// `{"status":"error","error":...}` for a declared error outcome (an output with an error
/// status).
fn enveloped(output: Output) -> Bytes {
    if output.status().is_success() {
        output.into_body_with(br#"{"status":"success","data":"#, b"}")
    } else {
        output.into_body_with(br#"{"status":"error","error":"#, b"}")
    }
}

/// The spec's envelope: `{"status":"success","data":...}` and
/// `{"status":"error","error":{"message":...}}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultResultHandler;

impl ResultHandler for DefaultResultHandler {
    fn positive(&self, output: &Schema) -> Vec<ResponseDescription> {
        vec![
            ResponseDescription::new(
                StatusCode::OK,
                json_schema!({
                    "type": "object",
                    "properties": { "status": { "const": "success" }, "data": output },
                    "required": ["status", "data"]
                }),
            )
            .mime_type("application/json"),
        ]
    }

    fn negative(&self) -> Vec<ResponseDescription> {
        vec![
            ResponseDescription::new(
                StatusCode::BAD_REQUEST,
                json_schema!({
                    "type": "object",
                    "properties": {
                        "status": { "const": "error" },
                        "error": {
                            "type": "object",
                            "properties": { "message": { "type": "string" } },
                            "required": ["message"]
                        }
                    },
                    "required": ["status", "error"]
                }),
            )
            .mime_type("application/json"),
        ]
    }

    /// An error outcome's body is the envelope's `error`: `{"status":"error","error":<body>}`.
    fn outcome(&self, status: StatusCode, body: Option<&Schema>) -> ResponseDescription {
        outcome_description(self, status, body, |body| {
            ResponseDescription::new(
                status,
                json_schema!({
                    "type": "object",
                    "properties": { "status": { "const": "error" }, "error": body },
                    "required": ["status", "error"]
                }),
            )
            .mime_type("application/json")
        })
    }

    fn handle(
        &self,
        result: Result<Output, ApiError>,
        _request: &RequestInfo,
        _logger: &Logger,
    ) -> Response<Body> {
        match result {
            Ok(output) => {
                let status = output.status();
                // Written around the serialized output in its own buffer: no copy of the JSON.
                json_response(status, enveloped(output))
            }
            Err(error) => error_response(error),
        }
    }

    /// The response built on `headers` (no map of its own, nothing copied), `Content-Type`
    /// added unless they name one: what the default method gives, without its second map.
    fn handle_with_headers(
        &self,
        result: Result<Output, ApiError>,
        headers: &mut HeaderMap,
        request: &RequestInfo,
        logger: &Logger,
    ) -> Response<Body> {
        match result {
            Ok(output) => {
                let status = output.status();
                json_response_on(status, enveloped(output), std::mem::take(headers))
            }
            Err(error) if error.headers().is_none() => {
                let body = error_body(&error);
                json_response_on(error.status(), body.into(), std::mem::take(headers))
            }
            // Headers still in the error come between the two: the general way.
            Err(error) => {
                let mut response = self.handle(Err(error), request, logger);
                merge_headers_under(&mut response, std::mem::take(headers));
                response
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::{ALLOW, CONTENT_TYPE};

    /// A result handler whose one error response is a described 422 answering invalid input.
    #[derive(Clone)]
    struct Unprocessable;

    impl ResultHandler for Unprocessable {
        fn positive(&self, output: &Schema) -> Vec<ResponseDescription> {
            vec![ResponseDescription::new(StatusCode::OK, output.clone()).description("Done")]
        }

        fn negative(&self) -> Vec<ResponseDescription> {
            vec![
                ResponseDescription::new(StatusCode::UNPROCESSABLE_ENTITY, json_schema!({}))
                    .description("The input fails validation")
                    .for_kind(crate::ErrorKind::InputValidation),
            ]
        }

        fn handle(
            &self,
            _result: Result<Output, ApiError>,
            _request: &RequestInfo,
            _logger: &Logger,
        ) -> Response<Body> {
            Response::new(Body::empty())
        }
    }

    #[test]
    fn an_outcome_described_with_another_status_s_response_takes_its_body_only() {
        let not_found = Unprocessable.outcome(StatusCode::NOT_FOUND, None);
        assert_eq!(not_found.status, StatusCode::NOT_FOUND);
        assert_eq!(not_found.description, None);
        assert!(not_found.kinds.is_empty());
        let created = Unprocessable.outcome(StatusCode::CREATED, Some(&json_schema!({})));
        assert_eq!(
            (created.status, created.description),
            (StatusCode::CREATED, None)
        );
        // Its own status's response is described as it is.
        let invalid = Unprocessable.outcome(StatusCode::UNPROCESSABLE_ENTITY, None);
        assert_eq!(
            invalid.description.as_deref(),
            Some("The input fails validation")
        );
        let done = Unprocessable.outcome(StatusCode::OK, Some(&json_schema!({})));
        assert_eq!(done.description.as_deref(), Some("Done"));
    }

    #[test]
    fn an_error_s_headers_join_the_envelope_s_and_its_content_type_wins() {
        let allowed = ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "DELETE is not allowed")
            .with_header(ALLOW, HeaderValue::from_static("GET, HEAD"));
        let response = error_response(allowed);
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(response.headers()[ALLOW], "GET, HEAD");
        assert_eq!(response.headers()[CONTENT_TYPE], JSON);
        assert_eq!(response.headers().len(), 2);

        let problem = ApiError::new(StatusCode::BAD_REQUEST, "no").with_header(
            CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        let response = error_response(problem);
        let types: Vec<_> = response.headers().get_all(CONTENT_TYPE).iter().collect();
        assert_eq!(types, ["application/problem+json"]);

        let plain = error_response(ApiError::new(StatusCode::NOT_FOUND, "gone"));
        assert_eq!(plain.headers()[CONTENT_TYPE], JSON);
        assert_eq!(plain.headers().len(), 1);
    }
}
