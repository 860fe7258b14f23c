//! The shared vocabulary of the Strata pipeline.
//!
//! Every stage crate depends on this one and on nothing else of Strata. It defines:
//!
//! - [`ApiError`] and [`http_error!`]: every failure, as a value with a status;
//! - [`Input`], [`InputValue`], [`InputSource`]: the merged input object and where it comes from,
//!   deserializable leniently (text) and strictly (JSON) through [`Decoder`];
//! - the payload types that travel between stages ([`Parsed`], [`Staged`], [`Validated`],
//!   [`Output`]) and the extension routing uses to hand over path parameters ([`PathParams`]);
//! - the typed context ([`ctx`], [`Ctx!`]);
//! - [`Logger`], [`Config`], the body types, and [`Endpoint`], the seam to routing.

pub mod body;
pub mod budget;
pub mod config;
pub mod ctx;
mod de;
mod decode;
pub mod endpoint;
mod error;
mod explain;
pub mod future;
pub mod input;
pub mod logger;
pub mod payload;
pub mod raw;
mod result_handler;
pub mod text;
pub mod upload;

pub use body::{IncomingBody, RequestBody, ResponseBody};
pub use budget::{BodyBudget, BodyReservation, DEFAULT_BODY_BUDGET};
pub use config::{
    Config, ConfigBuilder, Cors, CorsFn, CorsFuture, CorsRequest, InputSources, MODE_VARIABLE,
    MethodLikeRouteBehavior, Mode, WrongMethodBehavior, is_query, query_method,
};
pub use ctx::{Get, HCons, HNil};
pub use de::DeError;
pub use decode::{Decoder, not_null};
pub use endpoint::{
    AnyBody, DeclaredError, Endpoint, EndpointFuture, EndpointId, EndpointMeta, EndpointService,
    MiddlewareInput, PositiveFn, ResponseDescription, ResponseHeader, SchemaFn, Security,
    SharedService,
};
pub use error::{ApiError, ApiResult, BodyTimeout, BoxError, ErrorKind};
pub use input::{Input, InputSource, InputValue, JsonObject, JsonObjectError, TextValue};
pub use logger::{Fields, Level, LogSink, Logger, Record};
pub use payload::{
    Output, Parsed, ParsedBody, PathParams, Query, RequestInfo, Staged, StreamFailure, Validated,
};
pub use result_handler::{ErrorHandler, ResultHandler};
pub use upload::{UploadLimits, UploadLimitsBuilder, UploadedFile};

/// Writes a layer's service accessors, `get_ref`, `get_mut` and `into_inner`, for a struct
/// whose inner service is the field `inner` of type `S` (as tower-http's services have them).
///
/// ```
/// pub struct Counted<S> {
///     inner: S,
///     count: usize,
/// }
///
/// impl<S> Counted<S> {
///     strata_core::inner_service_accessors!();
/// }
///
/// let mut counted = Counted { inner: 5_u8, count: 0 };
/// *counted.get_mut() += 1;
/// assert_eq!(*counted.get_ref(), 6);
/// assert_eq!(counted.into_inner(), 6);
/// ```
#[macro_export]
macro_rules! inner_service_accessors {
    () => {
        /// The inner service.
        pub fn get_ref(&self) -> &S {
            &self.inner
        }

        /// The inner service, mutably.
        pub fn get_mut(&mut self) -> &mut S {
            &mut self.inner
        }

        /// Unwraps the inner service.
        pub fn into_inner(self) -> S {
            self.inner
        }
    };
}
