//! The specification's error format through a custom result handler:
//! `{"errors": {"body": ["..."]}}`, with 422 for invalid input.

use schemars::{Schema, json_schema};
use strata::core::json_response;
use strata::http::{Response, StatusCode};
use strata::prelude::*;
use strata::{ErrorKind, Output, ResponseBody, ResponseDescription};

/// Answers a success with the output as it is (the specification's bodies are the outputs
/// themselves: `{"user": {..}}`), and an error as `{"errors": {"body": [messages]}}`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Conduit;

/// The specification's `GenericErrorModel`.
fn generic_error() -> Schema {
    json_schema!({
        "type": "object",
        "properties": {
            "errors": {
                "type": "object",
                "properties": { "body": { "type": "array", "items": { "type": "string" } } },
                "required": ["body"]
            }
        },
        "required": ["errors"]
    })
}

/// The messages of an error: each problem of an input that fails validation
/// (`user.email: required`, `user.password: required`), or the error's message.
fn messages(error: &ApiError) -> Vec<&str> {
    error.problems().collect()
}

/// The status the specification gives an error: 422 for input that breaks the rules (Strata's
/// 400), the error's own otherwise.
fn status(error: &ApiError) -> StatusCode {
    match error.kind() {
        ErrorKind::InputValidation => StatusCode::UNPROCESSABLE_ENTITY,
        _ => error.status(),
    }
}

/// The response to `error`, in the specification's format.
pub fn error_body(error: &ApiError) -> Response<ResponseBody> {
    let body = serde_json::json!({ "errors": { "body": messages(error) } });
    json_response(status(error), body.to_string())
}

impl ResultHandler for Conduit {
    fn positive(&self, output: &Schema) -> Vec<ResponseDescription> {
        vec![ResponseDescription::new(StatusCode::OK, output.clone()).mime_type("application/json")]
    }

    fn negative(&self) -> Vec<ResponseDescription> {
        vec![
            ResponseDescription::new(StatusCode::UNPROCESSABLE_ENTITY, generic_error())
                .mime_type("application/json")
                .description("Unexpected error"),
        ]
    }

    fn handle(
        &self,
        result: Result<Output, ApiError>,
        _request: &RequestInfo,
        _logger: &Logger,
    ) -> Response<ResponseBody> {
        match result {
            // A 204 (a deletion) has no body.
            Ok(output) if output.status() == StatusCode::NO_CONTENT => {
                let mut response = Response::new(ResponseBody::empty());
                *response.status_mut() = StatusCode::NO_CONTENT;
                response
            }
            Ok(output) => {
                let status = output.status();
                json_response(status, output.into_body_with(b"", b""))
            }
            Err(error) => error_body(&error),
        }
    }
}
