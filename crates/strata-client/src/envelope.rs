//! Reading a response as the server's result handler wrote it.

use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use strata_core::Outcomes;
use strata_core::outcome::ResponseReader;

use crate::ClientError;

/// The client's counterpart of a result handler: reads the operation's output from a success
/// response and the error from any other.
///
/// [`DefaultEnvelope`] reads what `DefaultResultHandler` writes; a server with a custom result
/// handler gives its clients an implementation of its own.
pub trait Envelope: Clone + Send + Sync + 'static {
    /// The output of a response with `status` and `body`, or the server's error.
    fn read<O: DeserializeOwned>(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<O, ClientError>;

    /// The JSON of a declared outcome's body in a response with `status` and `body` (an
    /// operation whose output is an [`Outcomes`](strata_core::Outcomes) type, read by status):
    /// the whole body by default (a result handler without an envelope); empty for none.
    ///
    /// # Errors
    /// A body that is not the envelope.
    fn outcome_body<'b>(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        body: &'b [u8],
    ) -> Result<&'b [u8], ClientError> {
        let _ = (status, headers);
        Ok(body)
    }
}

/// Reads outputs with an [`Envelope`]: what a call hands an output type
/// ([`FromResponse`](strata_core::FromResponse)) to be read with.
pub(crate) struct EnvelopeReader<'e, E>(pub(crate) &'e E);

impl<E: Envelope> ResponseReader for EnvelopeReader<'_, E> {
    type Error = ClientError;

    fn data<T: DeserializeOwned>(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<T, ClientError> {
        self.0.read(status, headers, body)
    }

    fn outcome<T: Outcomes>(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<T, ClientError> {
        if !T::declares(status) {
            // Not one of the operation's outcomes: the server's error, as the envelope reads it.
            return Err(self
                .0
                .read::<serde::de::IgnoredAny>(status, headers, body)
                .err()
                .unwrap_or_else(|| api_error(status, body)));
        }
        let json = self.0.outcome_body(status, headers, body)?;
        T::from_parts(status, headers, json).map_err(|error| ClientError::Decode {
            status,
            path: error.path,
            message: error.message,
        })
    }
}

/// The default result handler's envelope: `{"status": "success", "data": ..}` on success,
/// `{"status": "error", "error": {"message": ..}}` otherwise.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultEnvelope;

#[derive(Deserialize)]
struct Success<O> {
    data: O,
}

impl Envelope for DefaultEnvelope {
    fn read<O: DeserializeOwned>(
        &self,
        status: StatusCode,
        _headers: &HeaderMap,
        body: &[u8],
    ) -> Result<O, ClientError> {
        if !status.is_success() {
            return Err(api_error(status, body));
        }
        if body.is_empty() {
            return without_body(status);
        }
        decode::<Success<O>>(status, body).map(|success| success.data)
    }

    /// The envelope's `data` (a success) or `error` (an error); empty when the body is.
    fn outcome_body<'b>(
        &self,
        status: StatusCode,
        _headers: &HeaderMap,
        body: &'b [u8],
    ) -> Result<&'b [u8], ClientError> {
        #[derive(Deserialize)]
        struct Members<'a> {
            #[serde(borrow)]
            data: Option<&'a RawValue>,
            #[serde(borrow)]
            error: Option<&'a RawValue>,
        }
        if body.is_empty() {
            return Ok(body);
        }
        let members: Members<'b> =
            serde_json::from_slice(body).map_err(|error| ClientError::Decode {
                status,
                path: String::new(),
                message: format!("not the envelope: {error}"),
            })?;
        let member = if status.is_success() {
            members.data
        } else {
            members.error
        };
        Ok(member.map_or(b"", |raw| raw.get().as_bytes()))
    }
}

/// The output of a success without a body (a 204): whatever reads from nothing (`()`,
/// `None`); for an envelope of one's own.
pub fn without_body<O: DeserializeOwned>(status: StatusCode) -> Result<O, ClientError> {
    O::deserialize(serde_json::Value::Null).map_err(|error| ClientError::Decode {
        status,
        path: String::new(),
        message: error.to_string(),
    })
}

/// `body` as `T`, a failure saying where.
pub fn decode<T: DeserializeOwned>(status: StatusCode, body: &[u8]) -> Result<T, ClientError> {
    // The fast path decodes without tracking paths; only a failure pays for a second pass
    // that says where the problem is.
    if let Ok(value) = serde_json::from_slice(body) {
        return Ok(value);
    }
    let mut reader = serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(&mut reader)
        .map_err(|error| ClientError::Decode {
            status,
            path: error.path().to_string().trim_start_matches('.').to_owned(),
            message: error.into_inner().to_string(),
        })
        .and_then(|value| {
            // Nothing but whitespace after the value.
            reader.end().map_err(|error| ClientError::Decode {
                status,
                path: String::new(),
                message: error.to_string(),
            })?;
            Ok(value)
        })
}

/// The server's error from an error response: the envelope's message, or the body's text.
pub fn api_error(status: StatusCode, body: &[u8]) -> ClientError {
    let json: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let message = json
        .as_ref()
        .and_then(|value| value.pointer("/error/message"))
        .and_then(serde_json::Value::as_str)
        .map_or_else(
            || {
                let text = String::from_utf8_lossy(body);
                let text = text.trim();
                if text.is_empty() {
                    status.canonical_reason().unwrap_or("error").to_owned()
                } else {
                    text.chars().take(500).collect()
                }
            },
            str::to_owned,
        );
    ClientError::Api {
        status,
        message,
        body: json
            .unwrap_or_else(|| serde_json::Value::String(String::from_utf8_lossy(body).into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_reads_data_and_says_where_it_does_not_decode() {
        #[derive(Debug, Deserialize, PartialEq)]
        struct Book {
            id: u32,
        }
        let book: Book = DefaultEnvelope
            .read(
                StatusCode::OK,
                &HeaderMap::new(),
                br#"{"status":"success","data":{"id":7}}"#,
            )
            .unwrap();
        assert_eq!(book, Book { id: 7 });
        let error = DefaultEnvelope
            .read::<Book>(
                StatusCode::OK,
                &HeaderMap::new(),
                br#"{"status":"success","data":{"id":"seven"}}"#,
            )
            .unwrap_err();
        assert!(
            matches!(&error, ClientError::Decode { path, .. } if path == "data.id"),
            "{error:?}"
        );
        let nothing: () = DefaultEnvelope
            .read(StatusCode::NO_CONTENT, &HeaderMap::new(), b"")
            .unwrap();
        assert_eq!(nothing, ());
    }

    #[test]
    fn errors_keep_status_message_and_body() {
        let error = DefaultEnvelope
            .read::<()>(
                StatusCode::NOT_FOUND,
                &HeaderMap::new(),
                br#"{"status":"error","error":{"message":"No book has the id 9"}}"#,
            )
            .unwrap_err();
        assert_eq!(error.status(), Some(StatusCode::NOT_FOUND));
        assert_eq!(error.message(), Some("No book has the id 9"));
        let text = DefaultEnvelope
            .read::<()>(
                StatusCode::BAD_GATEWAY,
                &HeaderMap::new(),
                b"upstream down\n",
            )
            .unwrap_err();
        assert_eq!(text.message(), Some("upstream down"));
    }
}
