//! The specification's error format through a custom result handler:
//! `{"errors": {"body": ["..."]}}`, with 422 for invalid input; and its counterpart for the
//! Rust client, [`ConduitEnvelope`].

use schemars::{Schema, json_schema};
use serde::de::DeserializeOwned;
use serde_json::Value;
use strata::client::{ClientError, Envelope, api_error, decode, without_body};
use strata::core::json_response;
use strata::core::{ErrorKind, Output};
use strata::http::{HeaderMap, Response, StatusCode};
use strata::prelude::*;
use strata::{Body, ResponseDescription};
use strata::{RequestInfo, ResultHandler};

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
pub fn error_body(error: &ApiError) -> Response<Body> {
    let body = serde_json::json!({ "errors": { "body": messages(error) } });
    json_response(status(error), body.to_string())
}

impl ResultHandler for Conduit {
    fn positive(&self, output: &Schema) -> Vec<ResponseDescription> {
        vec![ResponseDescription::new(StatusCode::OK, output.clone()).mime_type("application/json")]
    }

    fn negative(&self) -> Vec<ResponseDescription> {
        vec![
            // Invalid input is answered here, not with the pipeline's 400 (see `status`).
            ResponseDescription::new(StatusCode::UNPROCESSABLE_ENTITY, generic_error())
                .mime_type("application/json")
                .description(
                    "Unprocessable: the input fails validation (each problem in errors.body), \
                     or breaks a rule of the application (a username already taken)",
                )
                .for_kind(ErrorKind::InputValidation),
        ]
    }

    fn handle(
        &self,
        result: Result<Output, ApiError>,
        _request: &RequestInfo,
        _logger: &Logger,
    ) -> Response<Body> {
        match result {
            // A 204 (a deletion) has no body.
            Ok(output) if output.status() == StatusCode::NO_CONTENT => {
                let mut response = Response::new(Body::empty());
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

/// The specification's `GenericErrorModel` as a client reads it:
/// `ClientError::error_body::<GenericError>()`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
pub struct GenericError {
    /// `{"body": [..]}`.
    pub errors: ErrorMessages,
}

/// The messages of a [`GenericError`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
pub struct ErrorMessages {
    /// One message per problem.
    pub body: Vec<String>,
}

/// The client's counterpart of [`Conduit`], for `strata::client::Client::envelope`: a
/// success's body is the output itself (no body, a 204, reads as `()`); an error's message is
/// its `errors.body` joined with `"; "` (each apart through
/// `ClientError::error_body::<GenericError>()`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ConduitEnvelope;

impl Envelope for ConduitEnvelope {
    fn read<O: DeserializeOwned>(
        &self,
        status: StatusCode,
        _headers: &HeaderMap,
        body: &[u8],
    ) -> Result<O, ClientError> {
        if !status.is_success() {
            let Ok(json) = serde_json::from_slice::<Value>(body) else {
                return Err(api_error(status, body));
            };
            let Some(messages) = json.pointer("/errors/body").and_then(Value::as_array) else {
                return Err(api_error(status, body));
            };
            let message = messages
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("; ");
            return Err(ClientError::Api {
                status,
                message,
                body: json,
            });
        }
        if body.is_empty() {
            return without_body(status);
        }
        decode(status, body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_reads_outputs_as_they_are_and_errors_as_the_specification_has_them() {
        let read = |status: u16, body: &str| {
            ConduitEnvelope.read::<Value>(
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                &HeaderMap::new(),
                body.as_bytes(),
            )
        };
        let tags = read(200, r#"{"tags":["rust"]}"#).ok();
        assert_eq!(tags, Some(serde_json::json!({ "tags": ["rust"] })));
        assert_eq!(
            ConduitEnvelope
                .read::<()>(StatusCode::NO_CONTENT, &HeaderMap::new(), b"")
                .ok(),
            Some(())
        );
        let refused = read(
            422,
            r#"{"errors":{"body":["title: required","body: required"]}}"#,
        )
        .err()
        .unwrap_or(ClientError::Input(String::new()));
        assert_eq!(refused.status(), Some(StatusCode::UNPROCESSABLE_ENTITY));
        assert_eq!(refused.message(), Some("title: required; body: required"));
        let typed = refused.error_body::<GenericError>().and_then(Result::ok);
        assert_eq!(
            typed.map(|e| e.errors.body),
            Some(vec![
                "title: required".to_owned(),
                "body: required".to_owned()
            ])
        );
        // Not this API's format (a proxy's page): the body's text.
        let other = read(502, "Bad Gateway").err();
        assert_eq!(
            other.as_ref().and_then(ClientError::message),
            Some("Bad Gateway")
        );
        // A success that is not the output says where.
        let wrong = ConduitEnvelope
            .read::<ErrorMessages>(StatusCode::OK, &HeaderMap::new(), br#"{"body":[1]}"#)
            .err();
        assert!(
            matches!(wrong, Some(ClientError::Decode { ref path, .. }) if path == "body[0]"),
            "{wrong:?}"
        );
    }
}
