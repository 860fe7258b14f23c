//! The specification's error format through a custom result handler:
//! `{"errors": {"body": ["..."]}}`, with 422 for invalid input; and its counterpart for the
//! Rust client, [`ConduitEnvelope`].

use schemars::Schema;
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

/// The specification's `GenericErrorModel`, as [`GenericError`] describes it (the same schema,
/// so that the document shares one component for both: the errors the pipeline answers and
/// the outcomes handlers declare with it).
fn generic_error() -> Schema {
    schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .subschema_for::<GenericError>()
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
                // The rules of the application that answer 422 too (a username already
                // taken) are the operations' declared outcomes, described with them.
                .description(
                    "Unprocessable: the input fails validation (each problem in errors.body)",
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

/// The specification's `GenericErrorModel`, `{"errors": {"body": ["..."]}}`: what every error
/// of this API answers, and the body of the outcomes that carry their messages (a 422's
/// problems, `CreateUser::Unprocessable`). A client also reads it from any error
/// (`ClientError::error_body::<GenericError>()`).
#[strata::model]
#[derive(Clone, Debug, PartialEq, Eq)]
// Inline, as the specification's responses hold it, and equal to what `Conduit` describes
// its own errors with (`generic_error`); described for the API, not for Rust.
#[schemars(inline, description = "An error: its messages in `errors.body`")]
pub struct GenericError {
    /// The messages.
    #[garde(dive)]
    pub errors: ErrorMessages,
}

impl GenericError {
    /// The error with one message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            errors: ErrorMessages {
                body: vec![message.into()],
            },
        }
    }
}

/// The messages of a [`GenericError`].
#[strata::model]
#[derive(Clone, Debug, PartialEq, Eq)]
#[schemars(inline, description = "")]
pub struct ErrorMessages {
    /// One message per problem.
    pub body: Vec<String>,
}

/// The client's counterpart of [`Conduit`], for `strata::client::Client::envelope`: a
/// success's body is the output itself (no body, a 204, reads as `()`); an error's message is
/// its `errors.body` joined with `"; "` (each apart through
/// `ClientError::error_body::<GenericError>()`). A declared outcome's body is the whole body
/// too (the default `outcome_body`): a 422's [`GenericError`], an operation's output.
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
    use schemars::json_schema;

    /// What the default `ResultHandler::outcome` makes of `Conduit`'s responses: each outcome
    /// as the specification describes its responses (bodies as they are, no envelope; errors
    /// in its `GenericErrorModel`), and nothing of the 422's description on another status.
    #[test]
    fn declared_outcomes_are_described_as_the_specification_has_them() {
        let json = ["application/json".to_owned()];
        let body = json_schema!({ "type": "object", "required": ["user"] });
        let created = Conduit.outcome(StatusCode::CREATED, Some(&body));
        assert_eq!(
            (created.status, &created.schema),
            (StatusCode::CREATED, &body)
        );
        assert_eq!(created.mime_types, json);
        let deleted = Conduit.outcome(StatusCode::NO_CONTENT, None);
        assert!(deleted.mime_types.is_empty(), "{deleted:?}");
        // A 422 with its problems: the body as it is.
        let problems = generic_error();
        let invalid = Conduit.outcome(StatusCode::UNPROCESSABLE_ENTITY, Some(&problems));
        assert_eq!(
            (&invalid.schema, &invalid.mime_types[..]),
            (&problems, &json[..])
        );
        // A 404 without a body of its own: the GenericError `Conduit` answers it with, described
        // by the outcome (not as the 422 that lends it its schema).
        let not_found = Conduit.outcome(StatusCode::NOT_FOUND, None);
        assert_eq!(not_found.status, StatusCode::NOT_FOUND);
        assert_eq!(
            (&not_found.schema, &not_found.mime_types[..]),
            (&problems, &json[..])
        );
        assert_eq!(not_found.description, None);
        assert!(not_found.kinds.is_empty());
    }

    /// `GenericError`'s schema is what `Conduit` describes its errors with, so that the
    /// document shares one: an outcome's 422 and the pipeline's are the same component.
    #[test]
    fn a_generic_error_reads_and_writes_the_specification_s_model() {
        let error = GenericError::new("title: required");
        let json = serde_json::to_value(&error).ok();
        assert_eq!(
            json,
            Some(serde_json::json!({ "errors": { "body": ["title: required"] } }))
        );
        let schema = generic_error();
        assert_eq!(schema.get("required"), Some(&serde_json::json!(["errors"])));
        assert_eq!(
            schema.pointer("/properties/errors/properties/body/items/type"),
            Some(&serde_json::json!("string"))
        );
    }

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
