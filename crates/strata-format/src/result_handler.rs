use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Response, StatusCode};
use schemars::{Schema, json_schema};
use strata_core::{
    ApiError, Logger, Output, RequestInfo, ResponseBody, ResponseDescription, ResultHandler,
};

const JSON: &str = "application/json; charset=utf-8";

/// A response with `status`, a JSON `body` and `Content-Type: application/json; charset=utf-8`.
pub fn json_response(status: StatusCode, body: impl Into<Bytes>) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::from(body.into()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(JSON));
    response
}

/// The default error response for `error`: its status, any extra headers still in it, and
/// `{"status":"error","error":{"message":...}}`.
pub fn error_response(mut error: ApiError) -> Response<ResponseBody> {
    let mut body = Vec::with_capacity(error.message().len() + 44);
    body.extend_from_slice(br#"{"status":"error","error":{"message":"#);
    // Writing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut body, error.message());
    body.extend_from_slice(b"}}");
    let mut response = json_response(error.status(), body);
    if let Some(headers) = error.take_headers() {
        response.headers_mut().extend(headers);
    }
    response
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

    fn handle(
        &self,
        result: Result<Output, ApiError>,
        _request: &RequestInfo,
        _logger: &Logger,
    ) -> Response<ResponseBody> {
        match result {
            Ok(output) => {
                let status = output.status();
                // Written around the serialized output in its own buffer: no copy of the JSON.
                json_response(
                    status,
                    output.into_body_with(br#"{"status":"success","data":"#, b"}"),
                )
            }
            Err(error) => error_response(error),
        }
    }
}
