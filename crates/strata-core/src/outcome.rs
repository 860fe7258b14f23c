//! Operations with several typed outcomes: each a status (or several), typed headers and a
//! body type, declared once for the server that answers them and the clients that read them.
//!
//! An [`Outcomes`] type is an enum whose variants are the outcomes, written with the facade's
//! `#[derive(strata::Outcomes)]`: a handler returns one variant (it cannot return an
//! undeclared one), the output stage checks that variant's body, the API description lists
//! every variant under its status with its own schema and headers, and a client reads the
//! response back into the variant its status names. The trait's methods are what the derive
//! writes; nothing here needs implementing by hand.
//!
//! A client reads any output through [`FromResponse`]: every `DeserializeOwned` type is read
//! as the envelope's data, an [`Outcomes`] type by its status.

use std::fmt;

use http::header::HeaderValue;
use http::{HeaderMap, StatusCode};
use schemars::{Schema, json_schema};
use serde::Serializer;
use serde::de::DeserializeOwned;

use crate::{ResponseHeader, SchemaFn};

/// One declared outcome of an [`Outcomes`] type: its statuses, what it means, its headers and
/// its body's schema (none: no body).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DeclaredOutcome {
    /// The variant's name, for messages.
    pub name: &'static str,
    /// The statuses it is answered with (one, or several when the variant carries its status).
    pub statuses: Vec<StatusCode>,
    /// What it means (the variant's doc comment; generated descriptions fall back to the
    /// status's reason).
    pub description: Option<String>,
    /// Its headers.
    pub headers: Vec<ResponseHeader>,
    /// Its body's schema, written into a shared generator; `None`: no body.
    pub body: Option<SchemaFn>,
}

impl DeclaredOutcome {
    /// The outcome `name`, answered with `statuses`, without a body or headers.
    pub fn new(name: &'static str, statuses: &[u16]) -> Self {
        Self {
            name,
            statuses: statuses
                .iter()
                .filter_map(|status| StatusCode::from_u16(*status).ok())
                .collect(),
            description: None,
            headers: Vec::new(),
            body: None,
        }
    }

    /// Sets the description (blank text sets none).
    #[must_use]
    pub fn description(mut self, text: &str) -> Self {
        let text = text.trim();
        self.description = (!text.is_empty()).then(|| text.to_owned());
        self
    }

    /// Adds a header.
    #[must_use]
    pub fn header(mut self, header: ResponseHeader) -> Self {
        self.headers.push(header);
        self
    }

    /// Sets the body's schema.
    #[must_use]
    pub fn body(mut self, schema: SchemaFn) -> Self {
        self.body = Some(schema);
        self
    }
}

/// Why a response could not be read as one of an operation's outcomes (or an outcome could not
/// be written as a response): where (a header's name, a path in the body) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutcomeError {
    /// Where: `header location`, or a path in the body (empty: the body as a whole).
    pub path: String,
    /// What.
    pub message: String,
}

impl OutcomeError {
    /// A problem with `path`.
    pub fn new(path: impl Into<String>, message: impl fmt::Display) -> Self {
        Self {
            path: path.into(),
            message: message.to_string(),
        }
    }
}

impl fmt::Display for OutcomeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for OutcomeError {}

/// A type listing an operation's outcomes: an enum written with `#[derive(strata::Outcomes)]`,
/// whose variants are the outcomes. The server answers the variant a handler returns; a client
/// reads a response back into the variant its status names.
pub trait Outcomes: Sized + Send + 'static {
    /// Every outcome, in declaration order.
    fn declared() -> Vec<DeclaredOutcome>;

    /// Whether `status` is one of the declared outcomes' statuses.
    fn declares(status: StatusCode) -> bool;

    /// This outcome's status.
    fn status(&self) -> StatusCode;

    /// This outcome's headers.
    ///
    /// # Errors
    /// A header whose value cannot be sent (a control character in a `String`).
    fn headers(&self) -> Result<HeaderMap, OutcomeError>;

    /// Whether this outcome has a body.
    fn has_body(&self) -> bool;

    /// The doc comment's first line of this outcome, or its status's reason: the message of
    /// an outcome without a body answered as an error.
    fn message(&self) -> &'static str;

    /// Serializes this outcome's body (`null` for an outcome without one).
    ///
    /// # Errors
    /// The serializer's.
    fn serialize_body<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error>;

    /// Runs this outcome's body's garde rules into `report`.
    fn validate_body(&self, parent: &mut dyn FnMut() -> garde::Path, report: &mut garde::Report);

    /// The outcome of a response with `status`, `headers` and the JSON `body` (the envelope's
    /// content: empty when there is none).
    ///
    /// # Errors
    /// An undeclared status, a header or a body that does not read.
    fn from_parts(
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<Self, OutcomeError>;
}

/// A header field of an outcome, its value typed: `String`, `HeaderValue`, an integer, or an
/// `Option` of one for a header the outcome may leave out.
pub trait HeaderField: Sized {
    /// Whether the outcome always sends the header (`false` for an `Option`): API descriptions
    /// mark it required.
    const REQUIRED: bool = true;

    /// The value to send, `None` for none.
    ///
    /// # Errors
    /// A value that cannot be a header's (a control character).
    fn to_header(&self) -> Result<Option<HeaderValue>, String>;

    /// The field read from the response's header (`None`: absent).
    ///
    /// # Errors
    /// An absent required header, or a value that does not read.
    fn from_header(value: Option<&HeaderValue>) -> Result<Self, String>;

    /// The schema of the value, for API descriptions.
    fn header_schema() -> Schema;
}

impl HeaderField for String {
    fn to_header(&self) -> Result<Option<HeaderValue>, String> {
        HeaderValue::try_from(self.as_str())
            .map(Some)
            .map_err(|_| "a header value cannot hold control characters".to_owned())
    }

    fn from_header(value: Option<&HeaderValue>) -> Result<Self, String> {
        let value = value.ok_or_else(|| "missing".to_owned())?;
        value
            .to_str()
            .map(str::to_owned)
            .map_err(|_| "not visible ASCII".to_owned())
    }

    fn header_schema() -> Schema {
        json_schema!({ "type": "string" })
    }
}

impl HeaderField for HeaderValue {
    fn to_header(&self) -> Result<Option<HeaderValue>, String> {
        Ok(Some(self.clone()))
    }

    fn from_header(value: Option<&HeaderValue>) -> Result<Self, String> {
        value.cloned().ok_or_else(|| "missing".to_owned())
    }

    fn header_schema() -> Schema {
        json_schema!({ "type": "string" })
    }
}

/// Integers as headers (`Retry-After`, `X-Total-Count`).
macro_rules! integer_header {
    ($($integer:ty),*) => {$(
        impl HeaderField for $integer {
            fn to_header(&self) -> Result<Option<HeaderValue>, String> {
                Ok(Some(HeaderValue::from(*self)))
            }

            fn from_header(value: Option<&HeaderValue>) -> Result<Self, String> {
                let value = value.ok_or_else(|| "missing".to_owned())?;
                value
                    .to_str()
                    .ok()
                    .and_then(|text| text.trim().parse().ok())
                    .ok_or_else(|| format!("not an integer: {value:?}"))
            }

            fn header_schema() -> Schema {
                json_schema!({ "type": "integer" })
            }
        }
    )*};
}

integer_header!(u16, u32, u64, i32, i64);

impl<T: HeaderField> HeaderField for Option<T> {
    const REQUIRED: bool = false;

    fn to_header(&self) -> Result<Option<HeaderValue>, String> {
        match self {
            Some(value) => value.to_header(),
            None => Ok(None),
        }
    }

    fn from_header(value: Option<&HeaderValue>) -> Result<Self, String> {
        value.map(|value| T::from_header(Some(value))).transpose()
    }

    fn header_schema() -> Schema {
        T::header_schema()
    }
}

/// The headers of an outcome, each field written with its name (what the derive calls).
///
/// # Errors
/// The first field whose value cannot be sent, named.
pub fn write_headers(
    fields: &[(&'static str, Result<Option<HeaderValue>, String>)],
) -> Result<HeaderMap, OutcomeError> {
    let mut headers = HeaderMap::with_capacity(fields.len());
    for (name, value) in fields {
        match value {
            Ok(Some(value)) => {
                let name = http::header::HeaderName::from_static(name);
                headers.append(name, value.clone());
            }
            Ok(None) => {}
            Err(message) => return Err(OutcomeError::new(format!("header {name}"), message)),
        }
    }
    Ok(headers)
}

/// The header `name` of `headers` as the field `T` (what the derive calls).
///
/// # Errors
/// The header's problem, named.
pub fn read_header<T: HeaderField>(headers: &HeaderMap, name: &str) -> Result<T, OutcomeError> {
    T::from_header(headers.get(name))
        .map_err(|message| OutcomeError::new(format!("header {name}"), message))
}

/// `body` as `T` (what the derive calls).
///
/// # Errors
/// Where the body does not read as `T`.
pub fn read_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, OutcomeError> {
    let body = if body.is_empty() { b"null" } else { body };
    // The fast path does not track where; only a failure pays for a second pass that does.
    serde_json::from_slice(body).or_else(|_| {
        let mut reader = serde_json::Deserializer::from_slice(body);
        let value = serde_path_to_error::deserialize(&mut reader).map_err(|error| {
            let path = error.path().to_string();
            let path = if path == "." { String::new() } else { path };
            OutcomeError::new(path, error.into_inner())
        })?;
        reader.end().map_err(|error| OutcomeError::new("", error))?;
        Ok(value)
    })
}

/// What reads an operation's output from a response for a client: the client's envelope.
pub trait ResponseReader {
    /// The client's error.
    type Error;

    /// The output read as the envelope's data.
    ///
    /// # Errors
    /// The server's error, or a body that does not read.
    fn data<T: DeserializeOwned>(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<T, Self::Error>;

    /// The output read as one of the outcomes `T` declares, by status.
    ///
    /// # Errors
    /// An undeclared status (the server's error), or an outcome that does not read.
    fn outcome<T: Outcomes>(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<T, Self::Error>;
}

/// What a client reads an operation's output as: any `DeserializeOwned` type (the envelope's
/// data), or an [`Outcomes`] type (the outcome its status names; the derive implements this).
pub trait FromResponse: Sized {
    /// Reads `Self` from the response with `reader`.
    ///
    /// # Errors
    /// `reader`'s.
    fn from_response<R: ResponseReader>(
        reader: &R,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<Self, R::Error>;
}

impl<T: DeserializeOwned> FromResponse for T {
    fn from_response<R: ResponseReader>(
        reader: &R,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<Self, R::Error> {
        reader.data(status, headers, body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields_write_and_read_back() {
        let written = write_headers(&[
            ("location", "/books/7".to_owned().to_header()),
            ("retry-after", 30_u32.to_header()),
            ("x-absent", None::<String>.to_header()),
        ])
        .unwrap();
        assert_eq!(written.len(), 2);
        assert_eq!(
            read_header::<String>(&written, "location").unwrap(),
            "/books/7"
        );
        assert_eq!(read_header::<u32>(&written, "retry-after").unwrap(), 30);
        assert_eq!(
            read_header::<Option<String>>(&written, "x-absent").unwrap(),
            None
        );
        let missing = read_header::<String>(&written, "x-absent").unwrap_err();
        assert_eq!(missing.to_string(), "header x-absent: missing");
        let refused = write_headers(&[("location", "a\r\nb".to_owned().to_header())]);
        assert_eq!(refused.unwrap_err().path, "header location");
    }

    #[test]
    fn bodies_read_or_say_why() {
        assert_eq!(read_body::<Option<u32>>(b"").unwrap(), None);
        assert_eq!(read_body::<u32>(b"7").unwrap(), 7);
        assert!(read_body::<u32>(b"\"seven\"").is_err());
        let nested = read_body::<Vec<(u32, String)>>(br#"[[1, "a"], [2, 3]]"#).unwrap_err();
        assert_eq!(nested.path, "[1][1]");
    }
}
