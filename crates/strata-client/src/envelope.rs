//! Reading a response as the server's result handler wrote it.

use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde::de::DeserializeOwned;

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
