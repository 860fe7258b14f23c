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
    /// Clients hold too much of something shared right now (the body budget, a layer's
    /// capacity): a 503 with `Retry-After` that clients caused, not a fault of the server.
    /// Logged at warn level, at most one line per message every few seconds
    /// (`strata_log::server_error`), since clients can cause it at will.
    /// The rate limiter's 503 when its shared store is down under a closed failure policy has
    /// this kind too: the outage fails every request, and the limiter logs its cause itself.
    Overload,
    /// Not a failure: the client's copy of the representation is current, and a handler
    /// stopped early with [`ApiError::not_modified`] to answer `304 Not Modified`. The output
    /// stage turns it into that response (`Output::not_modified`) before any middleware sees
    /// the outcome, so middleware see a success with status 304, never this error.
    NotModified,
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
///
/// That conversion is why `ApiError` is not itself a `std::error::Error` (it would convert
/// into itself twice, as `anyhow::Error` would). Where one is needed it lends one: a
/// [`BoxError`] (`BoxError::from(error)`, what tower's `Timeout`, `Buffer` and `LoadShed` ask
/// of the services they wrap) that converts back into the same `ApiError`
/// ([`ApiError::from_boxed`]), and [`ApiError::as_error`] for another error's `source()`:
///
/// ```
/// use std::error::Error;
/// use strata_core::{ApiError, BoxError, http_error};
///
/// let boxed: BoxError = http_error!(413, "Too large").into();
/// let back = ApiError::from_boxed(boxed);
/// assert_eq!((back.status().as_u16(), back.message()), (413, "Too large"));
///
/// #[derive(Debug)]
/// struct Upstream(ApiError);
/// impl std::fmt::Display for Upstream {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str("the inventory refused")
///     }
/// }
/// impl Error for Upstream {
///     fn source(&self) -> Option<&(dyn Error + 'static)> {
///         Some(self.0.as_error())
///     }
/// }
/// let upstream = Upstream(http_error!(409, "Out of stock"));
/// assert_eq!(upstream.source().unwrap().to_string(), "409 Out of stock");
/// ```
pub struct ApiError(Repr);

/// What an [`ApiError`] holds; the `std::error::Error` it lends.
struct Repr {
    status: StatusCode,
    message: Cow<'static, str>,
    expose: bool,
    kind: ErrorKind,
    headers: Option<Box<HeaderMap>>,
    source: Option<BoxError>,
    /// The message is the source's own text (an error converted with `?`): the source chain
    /// then goes on from the source's source, so nothing is printed twice.
    transparent: bool,
}

/// The most characters of a method or path echoed in a message.
pub const ECHO_LIMIT: usize = 100;

/// `text`, cut to [`ECHO_LIMIT`] characters with `…` when longer: what an error message
/// repeats of a request.
pub fn echoed(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(ECHO_LIMIT) {
        None => text.into(),
        Some((end, _)) => format!("{}…", &text[..end]).into(),
    }
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
        Self(Repr {
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
            transparent: false,
        })
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

    /// The early answer `304 Not Modified` to a conditional request whose validators still
    /// match, for a handler to return with `?` before its expensive part (what
    /// `strata_cache::Cache::etag` returns). Not an error: the output stage, the first to
    /// see what the handler returned, answers it with the 304 response (no body, this
    /// value's headers), so the middleware around the endpoint see a success whose status is
    /// 304. Its kind is [`ErrorKind::NotModified`]; outside a Strata endpoint (where no
    /// output stage turns it into the response) it is a 500.
    ///
    /// An `ApiError` is a 4xx or 5xx, which a 304 is not: this value travels from the
    /// handler to the output stage only, through the `?` a handler can use.
    pub fn not_modified() -> Self {
        Self::internal("Not Modified: the client's copy is current")
            .with_kind(ErrorKind::NotModified)
    }

    /// Whether this is the early answer [`ApiError::not_modified`].
    pub fn is_not_modified(&self) -> bool {
        self.0.kind == ErrorKind::NotModified
    }

    /// A 500 error of kind [`ErrorKind::Internal`].
    pub fn internal(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    /// The 404 of a request that no route (or static file) answers: `Can not <METHOD>
    /// <path>`, each cut to 100 characters (a client may send kilobytes; the message needs
    /// enough to recognize the request).
    pub fn route_not_found(method: &http::Method, path: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            format!("Can not {} {}", echoed(method.as_str()), echoed(path)),
        )
        .with_kind(ErrorKind::Routing)
    }

    /// Sets the kind.
    #[must_use]
    pub fn with_kind(mut self, kind: ErrorKind) -> Self {
        self.0.kind = kind;
        self
    }

    /// Sets whether the message may be shown to clients in production mode.
    #[must_use]
    pub fn exposed(mut self, expose: bool) -> Self {
        self.0.expose = expose;
        self
    }

    /// Adds a header sent with the error response (e.g. `Retry-After`, `WWW-Authenticate`).
    #[must_use]
    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.0
            .headers
            .get_or_insert_with(Box::default)
            .append(name, value);
        self
    }

    /// Makes the response close the connection (`Connection: close`, once however often it is
    /// called): for an error answered before the request's body was read whole, whose rest will
    /// not be read.
    ///
    /// ```
    /// let error = strata_core::http_error!(413, "Too large")
    ///     .with_connection_close()
    ///     .with_connection_close();
    /// let headers = error.headers().unwrap();
    /// assert_eq!(headers.get_all("connection").iter().collect::<Vec<_>>(), ["close"]);
    /// ```
    #[must_use]
    pub fn with_connection_close(mut self) -> Self {
        self.0
            .headers
            .get_or_insert_with(Box::default)
            .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
        self
    }

    /// Attaches the error that caused this one.
    #[must_use]
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.0.source = Some(source.into());
        self.0.transparent = false;
        self
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.0.status
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// Replaces the message, keeping everything else.
    pub fn set_message(&mut self, message: impl Into<Cow<'static, str>>) {
        self.0.message = message.into();
        self.0.transparent = false;
    }

    /// Whether the message may be shown to clients in production mode.
    pub fn expose(&self) -> bool {
        self.0.expose
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }

    /// Extra headers for the response, if any.
    pub fn headers(&self) -> Option<&HeaderMap> {
        self.0.headers.as_deref()
    }

    /// The extra headers, to add to or change (a middleware amending an error response: the
    /// cookies set before the error, a rate limit's state).
    pub fn headers_mut(&mut self) -> &mut HeaderMap {
        self.0.headers.get_or_insert_with(Box::default)
    }

    /// Takes the extra headers out of the error.
    pub fn take_headers(&mut self) -> Option<HeaderMap> {
        self.0.headers.take().map(|h| *h)
    }

    /// The error this one was made from or given ([`with_source`](Self::with_source)), to
    /// inspect or downcast; for an error converted with `?`, that error itself.
    pub fn source(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.0.source.as_deref()
    }

    /// This error as a `std::error::Error`: for another error's `source()`, or to walk the
    /// chain of causes (`as_error().source()`, which skips an error whose text is already the
    /// message).
    pub fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &self.0
    }

    /// What caused this error, innermost last, for logs: `Display` writes them `; `-separated
    /// (none when the error has no cause beyond its message).
    pub fn causes(&self) -> Causes<'_> {
        Causes(std::error::Error::source(&self.0))
    }

    /// An error whose message lists several problems, joined with `"; "`: `ends` are the byte
    /// offsets where each problem's text ends in `message` (the last is its length), so that
    /// [`problems`](Self::problems) gives them one by one even when a value quoted in one
    /// contains `"; "`. The validation stage's errors are made so.
    ///
    /// ```
    /// use strata_core::{ApiError, ErrorKind};
    ///
    /// let message = r#"limit: expected integer, received string "a; b"; name: required"#;
    /// let error = ApiError::bad_request(ErrorKind::InputValidation, "")
    ///     .with_problems(message.to_owned(), vec![message.find("; name").unwrap(), message.len()]);
    /// let problems: Vec<&str> = error.problems().collect();
    /// assert_eq!(problems, [r#"limit: expected integer, received string "a; b""#, "name: required"]);
    /// ```
    #[must_use]
    pub fn with_problems(mut self, message: String, ends: Vec<usize>) -> Self {
        let problems = Problems {
            length: message.len(),
            ends,
        };
        self.0.message = Cow::Owned(message);
        // The problems are the message itself: logs print it once.
        self.0.source = Some(Box::new(problems));
        self.0.transparent = true;
        self
    }

    /// The problems the message lists, each its own text (`path: message` for an input that
    /// fails validation); the whole message as one problem when it was not made with
    /// [`with_problems`](Self::with_problems), or was changed since.
    pub fn problems(&self) -> impl Iterator<Item = &str> {
        let message = self.message();
        let ends = self
            .0
            .source
            .as_deref()
            .and_then(|source| source.downcast_ref::<Problems>())
            .filter(|problems| {
                problems.length == message.len()
                    && problems
                        .ends
                        .iter()
                        .all(|&end| message.is_char_boundary(end))
            })
            .map_or(&[][..], |problems| &problems.ends[..]);
        // Without recorded ends, the whole message is the one problem.
        let whole = ends.is_empty().then_some(message.len());
        let mut start = 0;
        ends.iter().copied().chain(whole).filter_map(move |end| {
            let text = message.get(start..end)?;
            start = end;
            let text = text.strip_prefix("; ").unwrap_or(text);
            (!text.is_empty()).then_some(text)
        })
    }
}

/// Where each problem of an [`ApiError`] made with [`ApiError::with_problems`] ends in its
/// message (its source, read by [`ApiError::problems`]).
#[derive(Debug, thiserror::Error)]
#[error("{} problems", .ends.len())]
struct Problems {
    /// The message's length when made: a changed message is one problem again.
    length: usize,
    ends: Vec<usize>,
}

/// The causes of an [`ApiError`] ([`ApiError::causes`]): written `; `-separated, innermost
/// last, at most 16 (a chain that loops ends there).
#[derive(Debug, Clone, Copy)]
pub struct Causes<'a>(Option<&'a (dyn std::error::Error + 'static)>);

impl Causes<'_> {
    /// Whether there is no cause to tell.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }
}

impl fmt::Display for Causes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut next = self.0;
        for index in 0..16 {
            let Some(cause) = next else { break };
            if index > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{cause}")?;
            next = cause.source();
        }
        Ok(())
    }
}

impl fmt::Debug for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Debug for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiError")
            .field("status", &self.status)
            .field("message", &self.message)
            .field("expose", &self.expose)
            .field("kind", &self.kind)
            .field("headers", &self.headers)
            .field("source", &self.source)
            .field("transparent", &self.transparent)
            .finish()
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.message)
    }
}

impl std::error::Error for Repr {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        let source = self.source.as_deref()?;
        if self.transparent {
            source.source()
        } else {
            Some(source)
        }
    }
}

/// Any error becomes a 500 whose message is the error's text (hidden in production); the error
/// is kept as the [source](ApiError::source), its own causes after it.
impl<E> From<E> for ApiError
where
    E: std::error::Error + Send + Sync + 'static,
{
    fn from(error: E) -> Self {
        let mut api = ApiError::internal(error.to_string()).with_source(error);
        api.0.transparent = true;
        api
    }
}

/// An `ApiError` as a boxed `std::error::Error` (what tower's middleware need of the services
/// they wrap); [`ApiError::from_boxed`] gets it back unchanged.
impl From<ApiError> for BoxError {
    fn from(error: ApiError) -> Self {
        Box::new(error.0)
    }
}

impl ApiError {
    /// A boxed error: the [`ApiError`] it carries when it was one (a stage's error that went
    /// through a tower layer keeps its status, message and headers); otherwise a 500 with the
    /// error's text as the message and the error as the source.
    ///
    /// (Not a `From` impl: the standard library keeps the right to make `BoxError` an `Error`,
    /// which the conversion of every `Error` already covers.)
    pub fn from_boxed(error: BoxError) -> Self {
        match error.downcast::<Repr>() {
            Ok(repr) => ApiError(*repr),
            Err(other) => {
                let mut api = ApiError::internal(other.to_string());
                api.0.source = Some(other);
                api.0.transparent = true;
                api
            }
        }
    }

    /// The error of a stage's inner service, whatever its type: an `ApiError` as it is (no
    /// boxing: the check is on types, resolved at compile time), anything else through
    /// [`from_boxed`](Self::from_boxed). What the stages bound their inner services by:
    /// `S::Error: Into<BoxError>`, so that tower's own middleware (`Timeout`, `Buffer`,
    /// `LoadShed`, whose errors are `BoxError`s) fit between them.
    pub fn from_inner<E: Into<BoxError> + 'static>(error: E) -> Self {
        let mut slot = Some(error);
        let any: &mut dyn std::any::Any = &mut slot;
        if let Some(api) = any
            .downcast_mut::<Option<ApiError>>()
            .and_then(Option::take)
        {
            return api;
        }
        match slot {
            Some(error) => Self::from_boxed(error.into()),
            None => ApiError::internal("an error was taken twice"),
        }
    }
}

/// The text a panic was raised with (`panic!("...")`'s message), or `unknown cause`.
///
/// ```
/// let payload = std::panic::catch_unwind(|| panic!("the clock broke {}", 2)).unwrap_err();
/// assert_eq!(strata_core::panic_message(&*payload), "the clock broke 2");
/// ```
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("unknown cause")
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

    /// An error with a cause, like a database error wrapping an I/O error.
    #[derive(Debug)]
    struct Outer(std::io::Error);

    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("query failed")
        }
    }

    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    fn chain(error: &dyn std::error::Error) -> Vec<String> {
        let mut texts = vec![error.to_string()];
        let mut next = error.source();
        while let Some(cause) = next {
            texts.push(cause.to_string());
            next = cause.source();
        }
        texts
    }

    #[test]
    fn a_converted_error_is_not_printed_twice() {
        let api = ApiError::from(Outer(std::io::Error::other("disk gone")));
        assert_eq!(chain(api.as_error()), ["500 query failed", "disk gone"]);
        // The converted error itself is still there to downcast.
        assert!(api.source().unwrap().downcast_ref::<Outer>().is_some());
        // A message of one's own, with the error as its cause, shows both.
        let api =
            ApiError::internal("could not load").with_source(Outer(std::io::Error::other("x")));
        assert_eq!(
            chain(api.as_error()),
            ["500 could not load", "query failed", "x"]
        );
        assert_eq!(api.causes().to_string(), "query failed; x");
        assert!(ApiError::internal("alone").causes().is_empty());
        let api = ApiError::from(std::io::Error::other("reset"));
        assert!(api.causes().is_empty(), "the message already says it");
    }

    #[test]
    fn a_boxed_api_error_comes_back_whole() {
        let original = ApiError::from_code(429, "Slow down")
            .with_header(http::header::RETRY_AFTER, HeaderValue::from_static("3"))
            .with_kind(ErrorKind::Http);
        let boxed: BoxError = original.into();
        assert_eq!(boxed.to_string(), "429 Slow down");
        let back = ApiError::from_boxed(boxed);
        assert_eq!(back.status(), 429);
        assert_eq!(back.message(), "Slow down");
        assert_eq!(back.headers().unwrap()["retry-after"], "3");
        // Any other boxed error is a 500 with its text, not printed twice.
        let other = ApiError::from_boxed(BoxError::from(Outer(std::io::Error::other("gone"))));
        assert_eq!(other.status(), 500);
        assert_eq!(chain(other.as_error()), ["500 query failed", "gone"]);
    }

    #[test]
    fn an_inner_services_error_of_any_type_becomes_an_api_error() {
        let api = ApiError::from_inner(ApiError::from_code(404, "No book"));
        assert_eq!((api.status().as_u16(), api.message()), (404, "No book"));
        let boxed: BoxError = ApiError::from_code(413, "Too large").into();
        assert_eq!(ApiError::from_inner(boxed).status(), 413);
        let io = ApiError::from_inner(std::io::Error::other("reset"));
        assert_eq!((io.status().as_u16(), io.message()), (500, "reset"));
    }
}

/// A request body that stopped arriving in time: the error a server's body deadline gives the
/// body reader. [`ApiError::from_body_timeout`] makes it a 408 that closes the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(transparent)]
pub struct BodyTimeout(Late);

/// How a body was late.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum Late {
    #[error("no part of the request body arrived for {0:?}")]
    Idle(std::time::Duration),
    #[error("the request body did not arrive within {0:?}")]
    Total(std::time::Duration),
    #[error("the request body arrived slower than {0} bytes per second")]
    Slow(u32),
}

impl BodyTimeout {
    /// No piece of the body arrived for `after`.
    pub fn idle(after: std::time::Duration) -> Self {
        Self(Late::Idle(after))
    }

    /// The whole body did not arrive within `after`.
    pub fn total(after: std::time::Duration) -> Self {
        Self(Late::Total(after))
    }

    /// The body arrived slower than `bytes_per_second` on average.
    pub fn too_slow(bytes_per_second: u32) -> Self {
        Self(Late::Slow(bytes_per_second))
    }
}

/// Whether `error` is the system being short of something it will have again shortly (file
/// descriptors, memory) rather than anything about what was asked for.
fn is_shortage(error: &std::io::Error) -> bool {
    // EMFILE (the process's limit) and ENFILE (the system's) are 24 and 23 on Linux, macOS and
    // the BSDs, ERROR_TOO_MANY_OPEN_FILES 4 on Windows; std gives them no kind of their own.
    const TOO_MANY_OPEN_FILES: &[i32] = if cfg!(unix) {
        &[24, 23]
    } else if cfg!(windows) {
        &[4]
    } else {
        &[]
    };
    error.kind() == std::io::ErrorKind::OutOfMemory
        || error
            .raw_os_error()
            .is_some_and(|code| TOO_MANY_OPEN_FILES.contains(&code))
}

impl ApiError {
    /// The error of a request the server cannot serve for want of file descriptors or memory
    /// (EMFILE, ENFILE, out of memory): a 503 with `Retry-After: 1`, an
    /// [`ErrorKind::Overload`] (many clients at once cause it); any other io error is given
    /// back.
    ///
    /// ```
    /// use strata_core::{ApiError, ErrorKind};
    ///
    /// let shortage = ApiError::from_shortage(std::io::Error::from_raw_os_error(24)).unwrap();
    /// assert_eq!((shortage.status().as_u16(), shortage.kind()), (503, ErrorKind::Overload));
    /// assert!(ApiError::from_shortage(std::io::ErrorKind::NotFound.into()).is_err());
    /// ```
    ///
    /// # Errors
    /// `error` itself when it is not a shortage.
    pub fn from_shortage(error: std::io::Error) -> Result<Self, std::io::Error> {
        if !is_shortage(&error) {
            return Err(error);
        }
        Ok(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "The server is short of open files or memory right now; retry shortly",
        )
        .with_kind(ErrorKind::Overload)
        .with_header(http::header::RETRY_AFTER, HeaderValue::from_static("1"))
        .with_source(error))
    }

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
            .with_connection_close(),
        )
    }
}
