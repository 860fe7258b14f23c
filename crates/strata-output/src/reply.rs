use garde::Validate;
use http::StatusCode;
use schemars::JsonSchema;
use serde::Serialize;

/// What a handler may return: a body to check and serialize, and a success status.
///
/// Every `Serialize + Validate + JsonSchema` type is one (status 200); [`WithStatus`] chooses
/// another 2xx.
pub trait HandlerOutput: Send + 'static {
    /// The body: checked with its garde rules, serialized, described by its JSON Schema.
    type Body: Serialize + Validate + JsonSchema;

    /// Splits into status and body.
    fn into_parts(self) -> (StatusCode, Self::Body);
}

impl<T> HandlerOutput for T
where
    T: Serialize + Validate + JsonSchema + Send + 'static,
{
    type Body = T;

    fn into_parts(self) -> (StatusCode, T) {
        (StatusCode::OK, self)
    }
}

/// A handler output with a success status other than 200.
///
/// A status outside 2xx is a defect of the handler (errors are `ApiError`s) and becomes a 500.
///
/// ```
/// use garde::Validate;
/// use http::StatusCode;
/// use schemars::JsonSchema;
/// use serde::Serialize;
/// use strata_output::{HandlerOutput, WithStatus};
///
/// #[derive(Serialize, Validate, JsonSchema)]
/// struct Created {
///     #[garde(skip)]
///     id: u32,
/// }
///
/// let (status, body) = WithStatus::created(Created { id: 7 }).into_parts();
/// assert_eq!((status, body.id), (StatusCode::CREATED, 7));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WithStatus<T> {
    status: StatusCode,
    body: T,
}

impl<T> WithStatus<T> {
    /// `body` answered with `status`.
    pub fn new(status: StatusCode, body: T) -> Self {
        Self { status, body }
    }

    /// `body` answered with 201 Created.
    pub fn created(body: T) -> Self {
        Self::new(StatusCode::CREATED, body)
    }
}

impl<T> HandlerOutput for WithStatus<T>
where
    T: Serialize + Validate + JsonSchema + Send + 'static,
{
    type Body = T;

    fn into_parts(self) -> (StatusCode, T) {
        (self.status, self.body)
    }
}
