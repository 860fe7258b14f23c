//! The shared vocabulary of the Strata pipeline.
//!
//! Every Strata crate depends on this one. It defines what they all speak of, and nothing that
//! only one stage or routing needs:
//!
//! - [`ApiError`] and [`http_error!`]: every failure, as a value with a status;
//! - the payloads that leave the pipeline's input half ([`Validated`], [`Output`]) and the
//!   extension routing hands path parameters over in ([`PathParams`]);
//! - the typed context ([`ctx`], [`Ctx!`]) and the request's [`Logger`];
//! - the body types, [`Mode`], and the `QUERY` method;
//! - [`ResultHandler`], the default envelope ([`DefaultResultHandler`]) and [`ErrorHandler`];
//! - descriptions for API documents ([`describe`]);
//! - operations declared once for servers and clients ([`Operation`], [`Events`]), and their
//!   typed outcomes ([`Outcomes`]).
//!
//! The merged input and its decoding live in `strata-input` and `strata-validate`, the
//! type-erased endpoint and the settings in `strata-routing`.

pub mod body;
pub mod ctx;
pub mod describe;
mod error;
pub mod future;
pub mod logger;
mod method;
mod mode;
pub mod observe;
pub mod operation;
pub mod outcome;
pub mod payload;
mod result_handler;
#[cfg(feature = "otel")]
pub mod trace;

pub use body::{Body, HeadBody, IncomingBody, PollFrame};
pub use ctx::{HCons, HNil, Has, Pluck, PluckAll};
pub use describe::{
    DeclaredError, MiddlewareInput, OutcomeFn, PositiveFn, ResponseDescription, ResponseHeader,
    SchemaFn, Security,
};
pub use error::{
    ApiError, ApiResult, BodyTimeout, BoxError, Causes, ECHO_LIMIT, ErrorKind, echoed,
    panic_message,
};
pub use logger::{Fields, Level, LogSink, Logger, Record};
pub use method::{is_query, query_method};
pub use mode::{MODE_VARIABLE, Mode};
pub use operation::{DeclaredRoute, Events, Operation, StreamedOutput};
pub use outcome::{DeclaredOutcome, FromResponse, Outcomes};
pub use payload::{
    ClientAddr, Output, PathParams, RequestInfo, StreamFailure, StreamShutdown, Validated,
};
pub use result_handler::{
    DefaultResultHandler, ErrorHandler, ResultHandler, error_response, json_response,
    merge_headers_under,
};

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

/// Writes builder setters that each set one field: `name(args) => field.path = value;`, with
/// their doc comments and attributes, each `pub fn name(mut self, args) -> Self`.
///
/// ```
/// #[derive(Default)]
/// pub struct Limits {
///     size: u64,
///     name: Option<String>,
/// }
///
/// impl Limits {
///     strata_core::setters! {
///         /// The size.
///         size(bytes: u64) => size = bytes;
///         /// The name.
///         name(name: impl Into<String>) => name = Some(name.into());
///     }
/// }
///
/// let limits = Limits::default().size(5).name("a");
/// assert_eq!((limits.size, limits.name.as_deref()), (5, Some("a")));
/// ```
#[macro_export]
macro_rules! setters {
    ($($(#[$attr:meta])* $name:ident($($arg:ident: $ty:ty),*) => $($field:ident).+ = $value:expr;)*) => {$(
        $(#[$attr])*
        pub fn $name(mut self, $($arg: $ty),*) -> Self {
            self.$($field).+ = $value;
            self
        }
    )*};
}

/// Writes `From<T> for Enum` for each variant of an enum that wraps one value: the enum's
/// constructors as conversions.
///
/// ```
/// pub enum Port {
///     Number(u16),
///     Named(String),
/// }
///
/// strata_core::from_variants!(Port { Number(u16), Named(String) });
///
/// assert!(matches!(Port::from(80), Port::Number(80)));
/// ```
#[macro_export]
macro_rules! from_variants {
    ($enum:ty { $($variant:ident($from:ty)),+ $(,)? }) => {$(
        impl ::core::convert::From<$from> for $enum {
            fn from(value: $from) -> Self {
                Self::$variant(value)
            }
        }
    )+};
}

/// Writes `AsRef<Part>` for each field of a struct made of parts: `Whole { field: Part, .. }`.
///
/// ```
/// pub struct Network { port: u16 }
/// pub struct Storage { path: String }
/// pub struct Settings { network: Network, storage: Storage }
///
/// strata_core::as_ref_parts!(Settings { network: Network, storage: Storage });
///
/// let settings = Settings { network: Network { port: 80 }, storage: Storage { path: "/".into() } };
/// assert_eq!(AsRef::<Network>::as_ref(&settings).port, 80);
/// ```
#[macro_export]
macro_rules! as_ref_parts {
    ($whole:ty { $($field:ident: $part:ty),+ $(,)? }) => {$(
        impl ::core::convert::AsRef<$part> for $whole {
            fn as_ref(&self) -> &$part {
                &self.$field
            }
        }
    )+};
}
