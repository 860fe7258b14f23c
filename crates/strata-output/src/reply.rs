use garde::Validate;
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, StatusCode};
use schemars::{JsonSchema, Schema};
use serde::Serialize;
use strata_core::{ApiError, DeclaredOutcome, Output, ResponseDescription};

use crate::range::RangeHeaders;

/// What a handler may return: a body to check and serialize, a success status and headers.
///
/// Every `Serialize + Validate + JsonSchema` type is one (status 200, no headers); [`Reply`]
/// chooses another 2xx and adds headers.
pub trait HandlerOutput: Send + 'static {
    /// The body: checked with its garde rules, serialized, described by its JSON Schema.
    type Body: Serialize + Validate + JsonSchema;

    /// Whether [`into_streamed`](Self::into_streamed) reads the request's `Range` and
    /// `If-Range` (a file does): only then does the output stage keep them, so that other
    /// endpoints pay no header lookups for it.
    const READS_RANGE: bool = false;

    /// Splits into status, headers and body.
    fn into_parts(self) -> (StatusCode, HeaderMap, Self::Body);

    /// Splits into status, headers and body as the output stage sends them, or the error the
    /// output stands for. The default: [`into_parts`](Self::into_parts), a status outside 2xx
    /// being a defect of the handler (errors are `ApiError`s), a 500. Declared outcomes
    /// ([`Outcomes`](strata_core::Outcomes)) answer their own statuses, errors included.
    ///
    /// # Errors
    /// The response the output stands for when it is not a body to check.
    fn into_checked_parts(self) -> Result<(StatusCode, HeaderMap, Self::Body), ApiError>
    where
        Self: Sized,
    {
        let (status, headers, body) = self.into_parts();
        if !status.is_success() {
            return Err(ApiError::internal(format!(
                "A handler answered success with status {status}; errors are ApiErrors"
            )));
        }
        Ok((status, headers, body))
    }

    /// The output as a body sent as it is (a file, a stream, events), bypassing the check,
    /// the serialization and the envelope; `Err(self)` (the default) for outputs sent as JSON.
    /// `range` is the request's `Range` and `If-Range` when [`READS_RANGE`](Self::READS_RANGE)
    /// says so (empty otherwise), for an output that can send part of itself (a file); others
    /// ignore it.
    ///
    /// # Errors
    /// `self`, for JSON outputs.
    fn into_streamed(self, range: &RangeHeaders) -> Result<Output, Self>
    where
        Self: Sized,
    {
        let _ = range;
        Err(self)
    }

    /// The success responses of an endpoint with this output, given the schema of
    /// [`Self::Body`], when they are not the result handler's envelope around it (streamed
    /// outputs describe their media type); `None` (the default): the result handler's.
    fn describe(body: &Schema) -> Option<Vec<ResponseDescription>> {
        let _ = body;
        None
    }

    /// The declared outcomes, when the output is an [`Outcomes`](strata_core::Outcomes) type
    /// (each described under its status by the result handler's
    /// [`outcome`](strata_core::ResultHandler::outcome)); `None` (the default): one success.
    fn outcomes() -> Option<Vec<DeclaredOutcome>> {
        None
    }
}

impl<T> HandlerOutput for T
where
    T: Serialize + Validate + JsonSchema + Send + 'static,
{
    type Body = T;

    fn into_parts(self) -> (StatusCode, HeaderMap, T) {
        (StatusCode::OK, HeaderMap::new(), self)
    }
}

/// A handler output with a success status other than 200, or with response headers
/// (`Location`, `Set-Cookie`, caching headers).
///
/// A status outside 2xx is a defect of the handler (errors are `ApiError`s) and becomes a 500.
///
/// ```
/// use garde::Validate;
/// use http::StatusCode;
/// use http::header::{HeaderValue, LOCATION};
/// use schemars::JsonSchema;
/// use serde::Serialize;
/// use strata_output::{HandlerOutput, Reply};
///
/// #[derive(Serialize, Validate, JsonSchema)]
/// struct Created {
///     #[garde(skip)]
///     id: u32,
/// }
///
/// let reply = Reply::created(Created { id: 7 }).header(LOCATION, HeaderValue::from_static("/users/7"));
/// let (status, headers, body) = reply.into_parts();
/// assert_eq!((status, body.id), (StatusCode::CREATED, 7));
/// assert_eq!(headers[LOCATION], "/users/7");
/// ```
#[derive(Debug, Clone)]
pub struct Reply<T> {
    status: StatusCode,
    headers: HeaderMap,
    body: T,
}

impl<T> Reply<T> {
    /// `body` answered with 200.
    pub fn new(body: T) -> Self {
        Self {
            status: StatusCode::OK,
            headers: HeaderMap::new(),
            body,
        }
    }

    /// `body` answered with 201 Created.
    pub fn created(body: T) -> Self {
        Self::new(body).status(StatusCode::CREATED)
    }

    strata_core::setters! {
        /// Sets the success status.
        #[must_use]
        status(status: StatusCode) => status = status;
    }

    /// Adds a response header.
    #[must_use]
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }
}

impl<T> HandlerOutput for Reply<T>
where
    T: Serialize + Validate + JsonSchema + Send + 'static,
{
    type Body = T;

    fn into_parts(self) -> (StatusCode, HeaderMap, T) {
        (self.status, self.headers, self.body)
    }
}
