//! [`ClientError`]: what can go wrong with a call, told apart.

use std::time::Duration;

use http::StatusCode;
use serde::de::DeserializeOwned;
use strata_core::BoxError;

/// Why a call did not return the operation's output.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered with an error: its status, the message of its error envelope, and
    /// the whole body (read it as a typed error body with [`ClientError::error_body`]).
    #[error("the server answered {status}: {message}")]
    Api {
        /// The response's status.
        status: StatusCode,
        /// The error's message (the body's text when it is not an error envelope).
        message: String,
        /// The body as JSON (a string for a body that is not JSON).
        body: serde_json::Value,
    },
    /// The request could not be sent or its response not read (connection refused, reset,
    /// TLS, a body that broke off).
    #[error("transport: {0}")]
    Transport(#[source] BoxError),
    /// The response was a success, but its body is not the operation's output.
    #[error("the {status} response does not decode at {}: {message}", at(.path))]
    Decode {
        /// The response's status.
        status: StatusCode,
        /// Where in the body (`data.books[2].title`; empty for the whole body).
        path: String,
        /// serde's words.
        message: String,
    },
    /// The input cannot be sent as the operation says (not an object, a path parameter
    /// missing or not text).
    #[error("the input cannot be sent: {0}")]
    Input(String),
    /// No response within the client's timeout.
    #[error("no response within {0:?}")]
    Timeout(Duration),
    /// The response's body is larger than the client reads (`max_response_body`).
    #[error("the response's body is larger than {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
}

impl ClientError {
    /// The response's status, when there was a response.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            Self::Api { status, .. } | Self::Decode { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The server's error message, when the server answered with an error.
    pub fn message(&self) -> Option<&str> {
        match self {
            Self::Api { message, .. } => Some(message),
            _ => None,
        }
    }

    /// The body of the server's error as `T` (a custom result handler's error type), when the
    /// server answered with an error.
    pub fn error_body<T: DeserializeOwned>(&self) -> Option<Result<T, serde_json::Error>> {
        match self {
            Self::Api { body, .. } => Some(T::deserialize(body)),
            _ => None,
        }
    }
}

/// Where a body that does not decode went wrong, in words.
fn at(path: &str) -> &str {
    if path.is_empty() { "the body" } else { path }
}
