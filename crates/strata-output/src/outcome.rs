//! Declared outcomes as handler outputs: what `#[derive(strata::Outcomes)]` makes of an enum
//! on the server's side.
//!
//! The derive implements [`HandlerOutput`](crate::HandlerOutput) for the enum with
//! [`OutcomeBody`] as its body and the functions here as its methods: the variant's status and
//! headers are answered, its body is checked and serialized as any output is, a variant
//! without a body is sent empty (a success: `204`) or as an error of its status (answered by
//! the result handler like any `ApiError`).

use std::borrow::Cow;

use garde::Validate;
use http::{HeaderMap, StatusCode};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Serialize, Serializer};
use strata_core::{ApiError, Body, Outcomes, Output};

/// The body of the outcome a handler returned: serialized, checked and described through the
/// outcome's own type.
#[derive(Debug)]
pub struct OutcomeBody<T>(pub T);

impl<T: Outcomes> Serialize for OutcomeBody<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_body(serializer)
    }
}

impl<T: Outcomes> Validate for OutcomeBody<T> {
    type Context = ();

    fn validate_into(
        &self,
        _ctx: &(),
        parent: &mut dyn FnMut() -> garde::Path,
        report: &mut garde::Report,
    ) {
        self.0.validate_body(parent, report);
    }
}

impl<T: Outcomes> JsonSchema for OutcomeBody<T> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Cow::Owned(format!("OutcomeBody_{}", std::any::type_name::<T>()))
    }

    /// Any of the outcomes' bodies (the API description lists each under its status).
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let bodies: Vec<Schema> = T::declared()
            .iter()
            .map(|outcome| match outcome.body {
                Some(body) => body(generator),
                None => json_schema!({ "type": "null" }),
            })
            .collect();
        json_schema!({ "anyOf": bodies })
    }
}

/// An outcome without a body and with a success status, sent as it is (what the derive's
/// `into_streamed` calls); any other outcome back.
///
/// # Errors
/// `outcome`, when it is not one.
pub fn streamed<T: Outcomes>(outcome: T) -> Result<Output, T> {
    if outcome.has_body() || !outcome.status().is_success() {
        return Err(outcome);
    }
    match outcome.headers() {
        Ok(headers) => Ok(Output::streamed(outcome.status(), headers, Body::empty())),
        // Left to `checked_parts`, which says what is wrong.
        Err(_) => Err(outcome),
    }
}

/// The status, headers and body of `outcome` (what the derive's `into_checked_parts` calls);
/// an outcome without a body and with an error status is that error, its message the
/// outcome's.
///
/// # Errors
/// The error an outcome without a body stands for; a 500 for a header that cannot be sent or a
/// status the type does not declare.
pub fn checked_parts<T: Outcomes>(
    outcome: T,
) -> Result<(StatusCode, HeaderMap, OutcomeBody<T>), ApiError> {
    let status = outcome.status();
    if !T::declares(status) {
        return Err(ApiError::internal(format!(
            "A handler answered {status}, which {} does not declare",
            std::any::type_name::<T>()
        )));
    }
    let headers = outcome.headers().map_err(|error| {
        ApiError::internal(format!(
            "A handler's outcome {} ({status}) cannot be sent: {error}",
            std::any::type_name::<T>()
        ))
    })?;
    if !outcome.has_body() && !status.is_success() {
        let mut error = ApiError::new(status, outcome.message());
        for (name, value) in &headers {
            error = error.with_header(name.clone(), value.clone());
        }
        return Err(error);
    }
    Ok((status, headers, OutcomeBody(outcome)))
}
