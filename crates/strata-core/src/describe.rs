//! Descriptions for generated API documents: security schemes, responses, declared errors,
//! and schema functions that write into a shared generator.

use std::fmt;
use std::sync::Arc;

use http::StatusCode;
use schemars::{Schema, SchemaGenerator};

/// How a middleware authenticates, for generated API descriptions (spec section 5), and which
/// credentials it needs: the middleware stage answers 401 to a request in which one of them is
/// absent, before the middleware runs. Whether a credential is valid is the middleware's to
/// check.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Security {
    /// A credential in the header `name` (lower-case).
    #[non_exhaustive]
    Header {
        /// The header name.
        name: String,
        /// What the credential is, for readers of the API description.
        description: Option<String>,
    },
    /// A credential in the cookie `name`.
    #[non_exhaustive]
    Cookie {
        /// The cookie name.
        name: String,
        /// What the credential is, for readers of the API description.
        description: Option<String>,
    },
    /// A credential in the input field `name`.
    #[non_exhaustive]
    Input {
        /// The input field.
        name: String,
        /// What the credential is, for readers of the API description.
        description: Option<String>,
    },
    /// All of these together.
    And(Vec<Security>),
}

impl Security {
    /// A header credential.
    pub fn header(name: impl Into<String>) -> Self {
        Security::Header {
            name: name.into().to_ascii_lowercase(),
            description: None,
        }
    }

    /// A cookie credential (a session cookie, say): documented as an API key in a cookie.
    pub fn cookie(name: impl Into<String>) -> Self {
        Security::Cookie {
            name: name.into(),
            description: None,
        }
    }

    /// An input field credential.
    pub fn input(name: impl Into<String>) -> Self {
        Security::Input {
            name: name.into(),
            description: None,
        }
    }

    /// A combination.
    pub fn and(all: impl IntoIterator<Item = Security>) -> Self {
        Security::And(all.into_iter().collect())
    }

    /// Describes the credential (`Header`, `Cookie` and `Input`; a combination ignores it).
    #[must_use]
    pub fn description(mut self, text: impl Into<String>) -> Self {
        match &mut self {
            Security::Header { description, .. }
            | Security::Cookie { description, .. }
            | Security::Input { description, .. } => {
                *description = Some(text.into());
            }
            Security::And(_) => {}
        }
        self
    }

    /// The single credentials this one stands for, in order (a combination's parts, flattened).
    pub fn leaves(&self) -> Vec<&Security> {
        match self {
            Security::And(all) => all.iter().flat_map(Security::leaves).collect(),
            leaf => vec![leaf],
        }
    }
}

/// A header of a documented response (for example `Retry-After`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ResponseHeader {
    /// The header name (lower-case).
    pub name: String,
    /// What the header says.
    pub description: String,
    /// The schema of its value.
    pub schema: Schema,
    /// Whether every such response carries it (default: no).
    pub required: bool,
}

impl ResponseHeader {
    /// A header `name` described by `description`, whose value is a string, which a response
    /// may leave out.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into().to_ascii_lowercase(),
            description: description.into(),
            schema: schemars::json_schema!({ "type": "string" }),
            required: false,
        }
    }

    /// Sets the schema of the value.
    #[must_use]
    pub fn schema(mut self, schema: Schema) -> Self {
        self.schema = schema;
        self
    }

    /// Says whether every such response carries the header (a client may then rely on it).
    #[must_use]
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }
}

/// One documented response of an endpoint: status, body schema, MIME types, a description and
/// headers.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ResponseDescription {
    /// The status.
    pub status: StatusCode,
    /// The body schema.
    pub schema: Schema,
    /// The MIME types the body may have; none means no body.
    pub mime_types: Vec<String>,
    /// What the response means (generated descriptions fall back to the status's reason).
    pub description: Option<String>,
    /// Headers the response carries.
    pub headers: Vec<ResponseHeader>,
    /// The kinds of error that get this response instead of the status the pipeline gives
    /// them (a result handler answering invalid input with 422, not 400): generated
    /// descriptions leave them out of that other status.
    pub kinds: Vec<crate::ErrorKind>,
}

impl ResponseDescription {
    /// A response with `status` and a body of `schema` (add its MIME types with
    /// [`mime_type`](Self::mime_type)).
    pub fn new(status: StatusCode, schema: Schema) -> Self {
        Self {
            status,
            schema,
            mime_types: Vec::new(),
            description: None,
            headers: Vec::new(),
            kinds: Vec::new(),
        }
    }

    /// Says that errors of `kind` get this response, not the status the pipeline gives them
    /// (`ErrorKind::InputValidation` answered with 422 rather than 400): the document then
    /// leaves them out of that status's description, or leaves the status out when nothing
    /// else answers with it.
    #[must_use]
    pub fn for_kind(mut self, kind: crate::ErrorKind) -> Self {
        if !self.kinds.contains(&kind) {
            self.kinds.push(kind);
        }
        self
    }

    /// Adds a MIME type of the body.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_types.push(mime_type.into());
        self
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }

    /// Adds a header.
    #[must_use]
    pub fn header(mut self, header: ResponseHeader) -> Self {
        self.headers.push(header);
        self
    }
}

/// An error status an endpoint or a middleware declares it may answer with (for example 401 from
/// an authentication middleware, 404 from a handler), for generated API descriptions. The body
/// is the result handler's negative response.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DeclaredError {
    /// The status.
    pub status: StatusCode,
    /// When and why it is sent.
    pub description: String,
    /// Headers it carries (for example `Retry-After` with a 429).
    pub headers: Vec<ResponseHeader>,
}

impl DeclaredError {
    /// `status`, sent when `description` says.
    pub fn new(status: StatusCode, description: impl Into<String>) -> Self {
        Self {
            status,
            description: description.into(),
            headers: Vec::new(),
        }
    }

    /// Adds a header.
    #[must_use]
    pub fn header(mut self, header: ResponseHeader) -> Self {
        self.headers.push(header);
        self
    }
}

/// Writes the JSON Schema of one type into a generator shared by a whole API description, so
/// named types land once in its definitions and are referenced from everywhere else.
pub type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// The success responses of a result handler for an output schema (its `positive`), kept so
/// that a description generator can call it with the output schema of its own generator.
#[derive(Clone)]
pub struct PositiveFn(Arc<DescribePositive>);

type DescribePositive = dyn Fn(&Schema) -> Vec<ResponseDescription> + Send + Sync;

impl PositiveFn {
    /// Wraps `f`.
    pub fn new(f: impl Fn(&Schema) -> Vec<ResponseDescription> + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// The success responses for `output`.
    pub fn call(&self, output: &Schema) -> Vec<ResponseDescription> {
        (self.0)(output)
    }
}

impl fmt::Debug for PositiveFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PositiveFn")
    }
}

/// A result handler's response to a declared outcome (its
/// [`outcome`](crate::ResultHandler::outcome)), kept so that a description generator can call
/// it with the body schema of its own generator.
#[derive(Clone)]
pub struct OutcomeFn(Arc<DescribeOutcome>);

type DescribeOutcome = dyn Fn(StatusCode, Option<&Schema>) -> ResponseDescription + Send + Sync;

impl OutcomeFn {
    /// Wraps `f`.
    pub fn new(
        f: impl Fn(StatusCode, Option<&Schema>) -> ResponseDescription + Send + Sync + 'static,
    ) -> Self {
        Self(Arc::new(f))
    }

    /// The response to an outcome with `status` and a body of `body` (`None`: no body).
    pub fn call(&self, status: StatusCode, body: Option<&Schema>) -> ResponseDescription {
        (self.0)(status, body)
    }
}

impl fmt::Debug for OutcomeFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OutcomeFn")
    }
}

/// The input schema of a middleware, with what it is called in messages.
#[derive(Debug, Clone, Copy)]
pub struct MiddlewareInput {
    /// The Rust type name of the middleware's input.
    pub type_name: &'static str,
    /// Its JSON Schema, written inline (its properties are the middleware's fields).
    pub schema: SchemaFn,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_security_is_lower_case() {
        assert_eq!(
            Security::header("X-Key"),
            Security::Header {
                name: "x-key".into(),
                description: None
            }
        );
    }
}
