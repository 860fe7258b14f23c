//! [`ApiError`]: every failure of every stage, as a value.

use std::borrow::Cow;
use std::fmt;

use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, StatusCode};

/// The boxed error type used for sources and body errors.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What handlers and middleware return: an output or an [`ApiError`].
///
/// It names the output type where nothing else does, as in a handler that only fails, written
/// as an async closure with a return type (an async closure is `Fn` when it captures nothing;
/// shared state reaches it through the context):
///
/// ```
/// use strata_core::{ApiResult, http_error};
///
/// struct Profile;
/// let rate_limited = async |retry_after: u32| -> ApiResult<Profile> {
///     Err(http_error!(429, "Too many requests, retry in {retry_after} s"))
/// };
/// # let _ = rate_limited;
/// ```
pub type ApiResult<T> = Result<T, ApiError>;

/// Which stage or situation produced an [`ApiError`].
///
/// Result handlers and loggers may branch on it; the status code alone decides the response of the
/// default result handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request could not be parsed (malformed JSON, bad percent-encoding, invalid UTF-8).
    Parse,
    /// The body (or a part of it) exceeds a configured limit.
    PayloadTooLarge,
    /// The body has a content type the endpoint cannot read.
    UnsupportedMediaType,
    /// The merged input does not match the input type of a middleware or of the endpoint.
    InputValidation,
    /// An error with an explicit status raised by a middleware or a handler.
    Http,
    /// The handler's output does not satisfy its own rules (a defect of the handler).
    OutputValidation,
    /// An error without a status, a panic, or any other internal failure.
    Internal,
    /// No route for the path, or the method is not allowed on it.
    Routing,
}

/// An error that becomes an HTTP response through the endpoint's result handler.
///
/// It carries a status, a message, whether the message may be shown to clients in production
/// (`expose`), optional extra response headers (e.g. `Retry-After`), its [`ErrorKind`] and an
/// optional source error.
///
/// Any `std::error::Error` converts into an `ApiError` with status 500, so `?` works in handlers:
///
/// ```
/// use strata_core::{http_error, ApiError};
///
/// fn parse_id(raw: &str) -> Result<u32, ApiError> {
///     if raw.is_empty() {
///         return Err(http_error!(400, "id is empty"));
///     }
///     Ok(raw.parse::<u32>()?) // a ParseIntError becomes a 500
/// }
///
/// assert_eq!(parse_id("").unwrap_err().status(), 400);
/// assert_eq!(parse_id("x").unwrap_err().status(), 500);
/// assert_eq!(parse_id("7").unwrap(), 7);
/// ```
pub struct ApiError {
    status: StatusCode,
    message: Cow<'static, str>,
    expose: bool,
    kind: ErrorKind,
    headers: Option<Box<HeaderMap>>,
    source: Option<BoxError>,
}

impl ApiError {
    /// An error with the given status and message.
    ///
    /// The message is exposed to clients when the status is below 500. An error's status is
    /// 4xx or 5xx: any other status becomes 500 (a success or informational status cannot carry
    /// an error).
    pub fn new(status: StatusCode, message: impl Into<Cow<'static, str>>) -> Self {
        let status = if status.is_client_error() || status.is_server_error() {
            status
        } else {
            StatusCode::INTERNAL_SERVER_ERROR
        };
        Self {
            status,
            message: message.into(),
            expose: status.as_u16() < 500,
            kind: if status.is_server_error() {
                ErrorKind::Internal
            } else {
                ErrorKind::Http
            },
            headers: None,
            source: None,
        }
    }

    /// An error from a raw status code; a code outside 400..=599 becomes 500.
    pub fn from_code(code: u16, message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(
            StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            message,
        )
    }

    /// A 400 error of the given kind.
    pub fn bad_request(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message).with_kind(kind)
    }

    /// A 500 error of kind [`ErrorKind::Internal`].
    pub fn internal(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    /// Sets the kind.
    #[must_use]
    pub fn with_kind(mut self, kind: ErrorKind) -> Self {
        self.kind = kind;
        self
    }

    /// Sets whether the message may be shown to clients in production mode.
    #[must_use]
    pub fn exposed(mut self, expose: bool) -> Self {
        self.expose = expose;
        self
    }

    /// Adds a header sent with the error response (e.g. `Retry-After`, `WWW-Authenticate`).
    #[must_use]
    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers
            .get_or_insert_with(Box::default)
            .append(name, value);
        self
    }

    /// Attaches the error that caused this one.
    #[must_use]
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Replaces the message, keeping everything else.
    pub fn set_message(&mut self, message: impl Into<Cow<'static, str>>) {
        self.message = message.into();
    }

    /// Whether the message may be shown to clients in production mode.
    pub fn expose(&self) -> bool {
        self.expose
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Extra headers for the response, if any.
    pub fn headers(&self) -> Option<&HeaderMap> {
        self.headers.as_deref()
    }

    /// Takes the extra headers out of the error.
    pub fn take_headers(&mut self) -> Option<HeaderMap> {
        self.headers.take().map(|h| *h)
    }

    /// The source error, if any.
    pub fn source(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.source.as_deref()
    }
}

impl fmt::Debug for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiError")
            .field("status", &self.status)
            .field("message", &self.message)
            .field("expose", &self.expose)
            .field("kind", &self.kind)
            .field("headers", &self.headers)
            .field("source", &self.source)
            .finish()
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.message)
    }
}

/// Any error becomes a 500 whose message is the error's text (hidden in production).
impl<E> From<E> for ApiError
where
    E: std::error::Error + Send + Sync + 'static,
{
    fn from(error: E) -> Self {
        ApiError::internal(error.to_string()).with_source(error)
    }
}

/// Builds an [`ApiError`] with a status code and a message (a literal or a format string).
///
/// ```
/// use strata_core::http_error;
///
/// let denied = http_error!(401, "Invalid key");
/// assert_eq!(denied.status(), 401);
/// let limited = http_error!(429, "Slow down, {}", "friend")
///     .with_header(http::header::RETRY_AFTER, http::HeaderValue::from_static("30"));
/// assert_eq!(limited.message(), "Slow down, friend");
/// assert_eq!(limited.headers().unwrap()["retry-after"], "30");
///
/// // Variables named in the literal, and messages made at runtime.
/// let id = 7;
/// assert_eq!(http_error!(404, "No book {id}").message(), "No book 7");
/// let reason = format!("Book {id} is out");
/// assert_eq!(http_error!(409, reason).message(), "Book 7 is out");
/// let borrowed: &str = &String::from("Gone");
/// assert_eq!(http_error!(410, borrowed).status(), 410);
/// ```
#[macro_export]
macro_rules! http_error {
    // A literal: borrowed as it is, or formatted when it names variables (`"No user {id}"`).
    ($status:expr, $message:literal $(,)?) => {
        match ::std::format_args!($message).as_str() {
            ::std::option::Option::Some(text) => $crate::ApiError::from_code($status, text),
            ::std::option::Option::None => {
                $crate::ApiError::from_code($status, ::std::format!($message))
            }
        }
    };
    ($status:expr, $format:literal, $($arg:tt)+) => {
        $crate::ApiError::from_code($status, ::std::format!($format, $($arg)+))
    };
    // Any other message: a `String`, a `&str`, anything `Display`.
    ($status:expr, $message:expr $(,)?) => {
        $crate::ApiError::from_code($status, ::std::string::ToString::to_string(&$message))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposes_client_errors_only() {
        assert!(ApiError::from_code(404, "x").expose());
        assert!(!ApiError::from_code(503, "x").expose());
        assert_eq!(ApiError::from_code(503, "x").kind(), ErrorKind::Internal);
        assert_eq!(ApiError::from_code(401, "x").kind(), ErrorKind::Http);
    }

    #[test]
    fn non_error_codes_become_500() {
        for code in [42, 100, 200, 204, 302, 600, 999] {
            assert_eq!(ApiError::from_code(code, "x").status(), 500, "{code}");
        }
        assert_eq!(ApiError::from_code(418, "x").status(), 418);
        assert_eq!(ApiError::from_code(599, "x").status(), 599);
    }

    #[test]
    fn std_errors_convert_with_source() {
        let err: ApiError = "x".parse::<u8>().unwrap_err().into();
        assert_eq!(err.status(), 500);
        assert!(err.source().is_some());
        assert_eq!(err.message(), "invalid digit found in string");
    }
}

/// A request body that stopped arriving in time: the error a server's body deadline gives the
/// body reader. [`ApiError::from_body_timeout`] makes it a 408 that closes the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyTimeout {
    idle: bool,
    after: std::time::Duration,
}

impl BodyTimeout {
    /// No piece of the body arrived for `after`.
    pub fn idle(after: std::time::Duration) -> Self {
        Self { idle: true, after }
    }

    /// The whole body did not arrive within `after`.
    pub fn total(after: std::time::Duration) -> Self {
        Self { idle: false, after }
    }
}

impl fmt::Display for BodyTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.idle {
            write!(
                f,
                "no part of the request body arrived for {:?}",
                self.after
            )
        } else {
            write!(f, "the request body did not arrive within {:?}", self.after)
        }
    }
}

impl std::error::Error for BodyTimeout {}

impl ApiError {
    /// The error for a body that failed with a [`BodyTimeout`]: a 408 whose response closes the
    /// connection (the rest of the body will not be read); `None` for any other failure.
    pub fn from_body_timeout(error: &BoxError) -> Option<Self> {
        let timeout = error.downcast_ref::<BodyTimeout>()?;
        Some(
            ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                format!("Request timeout: {timeout}"),
            )
            .with_kind(ErrorKind::Parse)
            .with_header(
                http::header::CONNECTION,
                http::HeaderValue::from_static("close"),
            ),
        )
    }
}
