//! [`ClientError`]: what can go wrong with a call, told apart.

use std::fmt;
use std::time::Duration;

use http::StatusCode;
use serde::de::DeserializeOwned;
use strata_core::BoxError;

/// Why a call did not return the operation's output.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered with an error: its status, the message of its error envelope, and
    /// the whole body (read it as a typed error body with [`ClientError::error_body`]).
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
    Transport(BoxError),
    /// The response was a success, but its body is not the operation's output.
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
    Input(String),
    /// No response within the client's timeout.
    Timeout(Duration),
    /// The response's body is larger than the client reads (`max_response_body`).
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

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Api {
                status, message, ..
            } => write!(f, "the server answered {status}: {message}"),
            Self::Transport(error) => write!(f, "transport: {error}"),
            Self::Decode {
                status,
                path,
                message,
            } => {
                let at = if path.is_empty() { "the body" } else { path };
                write!(
                    f,
                    "the {status} response does not decode at {at}: {message}"
                )
            }
            Self::Input(problem) => write!(f, "the input cannot be sent: {problem}"),
            Self::Timeout(after) => write!(f, "no response within {after:?}"),
            Self::TooLarge { limit } => {
                write!(f, "the response's body is larger than {limit} bytes")
            }
        }
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Transport(error) => Some(error.as_ref()),
            _ => None,
        }
    }
}
