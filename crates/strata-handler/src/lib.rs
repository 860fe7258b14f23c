//! Stage 5 of the Strata pipeline: the endpoint's handler.
//!
//! [`HandlerService`] is the innermost service of an endpoint: it takes `Request<Validated<I, C>>`
//! and calls user code with the typed input, the context built by middleware, a [`Logger`] and
//! the request parts, returning `Result<O, ApiError>`. An error with a status becomes that status
//! (with its extra headers); any other error becomes a 500. Panics are caught by the format
//! stage, which wraps the whole endpoint.
//!
//! Handlers are async functions wrapped by [`handler_fn`]: the input first, then whatever else
//! they use, each parameter taken by its type from the [`Logger`], the request [`Parts`] and
//! the entries of the context ([`HandlerFunction`]); [`handler_without_input`] for those that
//! read no input; [`handler_with_request`] for the whole context; or any type implementing
//! [`Handler`]. A handler returns `Result<O, ApiError>`, or an [`ApiError`] alone when it only
//! fails.
//!
//! # Example
//!
//! ```
//! use http::Request;
//! use strata_core::{HNil, Logger, Validated, http_error};
//! use strata_handler::{HandlerService, handler_fn};
//! use tower::ServiceExt;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let service = HandlerService::new(handler_fn(async |name: String, logger: Logger| {
//!     if name.is_empty() {
//!         return Err(http_error!(400, "name is empty"));
//!     }
//!     logger.debug("greeting");
//!     Ok(format!("Hello, {name}"))
//! }));
//!
//! let request = Request::new(Validated { input: "Ada".to_owned(), ctx: HNil });
//! assert_eq!(service.clone().oneshot(request).await.unwrap(), "Hello, Ada");
//! let request = Request::new(Validated { input: String::new(), ctx: HNil });
//! assert_eq!(service.oneshot(request).await.unwrap_err().status(), 400);
//! # }
//! ```

use std::any::TypeId;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use derive_where::derive_where;
use http::Request;
use http::request::Parts;
use pin_project_lite::pin_project;
use strata_core::ctx::{HCons, HNil, PluckAll};
use strata_core::{ApiError, Logger, Validated};
use tower_service::Service;

mod never;

pub use never::Never;

/// User code that answers a request.
///
/// `I` is the input type, `C` the context type. Implemented for closures through [`handler_fn`],
/// [`handler_without_input`] and [`handler_with_request`].
pub trait Handler<I, C>: Clone + Send + Sync + 'static {
    /// The output type.
    type Output;
    /// The future of one call.
    type Future: Future<Output = Result<Self::Output, ApiError>> + Send + 'static;

    /// Handles one request.
    fn call(&self, input: I, ctx: C, logger: Logger, request: Parts) -> Self::Future;

    /// Whether [`call`](Handler::call) reads its `logger`. When not, the handler stage passes
    /// [`Logger::default()`] instead of a clone of the request's logger (a look-up in the
    /// request's extensions, a reference count raised and lowered: ~130 instructions per
    /// request). Default: it does.
    fn uses_logger(&self) -> bool {
        true
    }
}

/// What a handler's future may end with: `Result<O, ApiError>` (a success `O` or an error), or
/// an [`ApiError`] alone, for a handler that only fails (its output is [`Never`]).
#[diagnostic::on_unimplemented(
    message = "a handler returns `Result<O, ApiError>` or an `ApiError`, not `{Self}`",
    note = "errors of other types convert with `?` (a plain error becomes a 500) or `http_error!`"
)]
pub trait Outcome: Send + 'static {
    /// The success type.
    type Output;
    /// As a result.
    ///
    /// # Errors
    /// The handler's error.
    fn into_result(self) -> Result<Self::Output, ApiError>;
}

impl<O: Send + 'static> Outcome for Result<O, ApiError> {
    type Output = O;

    fn into_result(self) -> Self {
        self
    }
}

impl Outcome for ApiError {
    type Output = Never;

    fn into_result(self) -> Result<Never, ApiError> {
        Err(self)
    }
}

pin_project! {
    /// The future of a handler function: the closure's future, its end read as a result
    /// ([`Outcome`]).
    pub struct OutcomeFuture<F> {
        #[pin]
        future: F,
    }
}

impl<F> Future for OutcomeFuture<F>
where
    F: Future<Output: Outcome>,
{
    type Output = Result<<F::Output as Outcome>::Output, ApiError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().future.poll(cx).map(Outcome::into_result)
    }
}

impl<F> fmt::Debug for OutcomeFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutcomeFuture").finish_non_exhaustive()
    }
}

/// What a handler's parameters after the input are taken from, each by its type: the
/// [`Logger`], the request [`Parts`], and the entries of the context `C`.
pub type Arguments<C> = HCons<Logger, HCons<Parts, C>>;

/// An async function that handles an endpoint's requests: its first parameter is the input
/// `I`, and each further one is taken by its type from the [`Logger`], the request [`Parts`]
/// and the entries of the context `C` (state, what middleware provided). `M` is inferred: it
/// records which parameters the function takes.
///
/// ```
/// use strata_core::ctx::HNil;
/// use strata_core::{ApiError, Logger};
/// use strata_handler::HandlerFunction;
///
/// fn check<F: HandlerFunction<u32, HNil, M>, M>(_: F) {}
///
/// check(async |n: u32| Ok::<_, ApiError>(n + 1));
/// check(async |n: u32, logger: Logger| {
///     logger.debug("adding one");
///     Ok(n + 1)
/// });
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a handler of this endpoint",
    label = "not a handler of this endpoint's context `{C}`",
    note = "a handler's first parameter is its input; each further parameter names its type: `Logger`, `Parts` or an entry of the context `{C}` (each once, by value: `user: User`, not `&User`; at most six after the input), for example `async |input: MyInput, user: User, logger: Logger| ..`",
    note = "a handler returns `Result<O, ApiError>` for an output type `O`, or an `ApiError` when it only fails"
)]
pub trait HandlerFunction<I, C, M>: Clone + Send + Sync + 'static {
    /// The output type.
    type Output;
    /// The future of one call.
    type Future: Future<Output = Result<Self::Output, ApiError>> + Send + 'static;

    /// Calls the function with the input and the arguments it takes.
    fn call(&self, input: I, arguments: Arguments<C>) -> Self::Future;

    /// Whether one of the function's parameters is the [`Logger`] (see
    /// [`Handler::uses_logger`]). Default: yes.
    fn takes_logger(&self) -> bool {
        true
    }
}

/// An async function that handles an endpoint's requests without reading input: each
/// parameter is taken by its type as in [`HandlerFunction`] (the [`Logger`], the request
/// [`Parts`], the entries of the context `C`), and it may have none.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a handler without input of this endpoint",
    label = "not a handler without input of this endpoint's context `{C}`",
    note = "each parameter of a handler without input names its type: `Logger`, `Parts` or an entry of the context `{C}` (each once, by value: `user: User`, not `&User`; at most six), for example `async |user: User| ..`; a function whose first parameter is the input goes to `handler`",
    note = "a handler returns `Result<O, ApiError>` for an output type `O`, or an `ApiError` when it only fails"
)]
pub trait HandlerFunctionWithoutInput<C, M>: Clone + Send + Sync + 'static {
    /// The output type.
    type Output;
    /// The future of one call.
    type Future: Future<Output = Result<Self::Output, ApiError>> + Send + 'static;

    /// Calls the function with the arguments it takes.
    fn call(&self, arguments: Arguments<C>) -> Self::Future;

    /// Whether one of the function's parameters is the [`Logger`] (see
    /// [`Handler::uses_logger`]). Default: yes.
    fn takes_logger(&self) -> bool {
        true
    }
}

/// Whether `parameters` (a handler's, by `TypeId`) include a `T`. Known when the function is
/// compiled: the check folds away.
#[inline]
fn takes<T: 'static>(parameters: &[TypeId]) -> bool {
    parameters.contains(&TypeId::of::<T>())
}

/// Builds an `HCons` pattern or type from a list.
macro_rules! hlist {
    () => { HNil };
    ($head:tt $(, $tail:tt)*) => { HCons { head: $head, tail: hlist!($($tail),*) } };
}

macro_rules! hlist_type {
    () => { HNil };
    ($head:ident $(, $tail:ident)*) => { HCons<$head, hlist_type!($($tail),*)> };
}

macro_rules! handler_functions {
    ($(($($param:ident $arg:ident),*)),* $(,)?) => {$(
        impl<F, Fut, I, C, Is, $($param),*> HandlerFunction<I, C, (Is, fn($($param),*))> for F
        where
            F: Fn(I, $($param),*) -> Fut + Clone + Send + Sync + 'static,
            Fut: Future<Output: Outcome> + Send + 'static,
            Arguments<C>: PluckAll<hlist_type!($($param),*), Is>,
            Is: 'static,
            $($param: 'static,)*
        {
            type Output = <Fut::Output as Outcome>::Output;
            type Future = OutcomeFuture<Fut>;

            #[allow(unused_variables)] // no parameters after the input
            fn call(&self, input: I, arguments: Arguments<C>) -> Self::Future {
                let hlist!($($arg),*) = arguments.pluck_all();
                OutcomeFuture { future: self(input, $($arg),*) }
            }

            fn takes_logger(&self) -> bool {
                takes::<Logger>(&[$(TypeId::of::<$param>()),*])
            }
        }

        impl<F, Fut, C, Is, $($param),*> HandlerFunctionWithoutInput<C, (Is, fn($($param),*))> for F
        where
            F: Fn($($param),*) -> Fut + Clone + Send + Sync + 'static,
            Fut: Future<Output: Outcome> + Send + 'static,
            Arguments<C>: PluckAll<hlist_type!($($param),*), Is>,
            Is: 'static,
            $($param: 'static,)*
        {
            type Output = <Fut::Output as Outcome>::Output;
            type Future = OutcomeFuture<Fut>;

            #[allow(unused_variables)] // no parameters
            fn call(&self, arguments: Arguments<C>) -> Self::Future {
                let hlist!($($arg),*) = arguments.pluck_all();
                OutcomeFuture { future: self($($arg),*) }
            }

            fn takes_logger(&self) -> bool {
                takes::<Logger>(&[$(TypeId::of::<$param>()),*])
            }
        }
    )*};
}

handler_functions! {
    (),
    (A a),
    (A a, B b),
    (A a, B b, D d),
    (A a, B b, D d, E e),
    (A a, B b, D d, E e, G g),
    (A a, B b, D d, E e, G g, H h),
}

/// A [`Handler`] from a [`HandlerFunction`] (input first, then what it takes by type); see
/// [`handler_fn`].
// Bounds on `F` alone (`M` only marks the parameters); a function is not `Debug`.
#[derive_where(Clone; F)]
#[derive_where(Debug)]
pub struct HandlerFn<F, M> {
    #[derive_where(skip)]
    f: F,
    marker: PhantomData<fn() -> M>,
}

/// A [`Handler`] from an async function of the input and what else it takes by type (see
/// [`HandlerFunction`]).
pub fn handler_fn<F, M>(f: F) -> HandlerFn<F, M> {
    HandlerFn {
        f,
        marker: PhantomData,
    }
}

impl<F, M, I, C> Handler<I, C> for HandlerFn<F, M>
where
    F: HandlerFunction<I, C, M>,
    M: 'static,
{
    type Output = F::Output;
    type Future = F::Future;

    fn call(&self, input: I, ctx: C, logger: Logger, request: Parts) -> F::Future {
        self.f.call(input, arguments(logger, request, ctx))
    }

    fn uses_logger(&self) -> bool {
        self.f.takes_logger()
    }
}

/// A [`Handler`] of input `()` from a [`HandlerFunctionWithoutInput`]; see
/// [`handler_without_input`].
#[derive_where(Clone; F)]
#[derive_where(Debug)]
pub struct WithoutInputFn<F, M> {
    #[derive_where(skip)]
    f: F,
    marker: PhantomData<fn() -> M>,
}

/// A [`Handler`] (of input `()`, any input is ignored) from an async function of what it
/// takes by type (see [`HandlerFunctionWithoutInput`]).
pub fn handler_without_input<F, M>(f: F) -> WithoutInputFn<F, M> {
    WithoutInputFn {
        f,
        marker: PhantomData,
    }
}

impl<F, M, C> Handler<(), C> for WithoutInputFn<F, M>
where
    F: HandlerFunctionWithoutInput<C, M>,
    M: 'static,
{
    type Output = F::Output;
    type Future = F::Future;

    fn call(&self, (): (), ctx: C, logger: Logger, request: Parts) -> F::Future {
        self.f.call(arguments(logger, request, ctx))
    }

    fn uses_logger(&self) -> bool {
        self.f.takes_logger()
    }
}

/// The [`Arguments`] of one call: what a [`HandlerFunction`] takes its parameters from.
pub fn arguments<C>(logger: Logger, request: Parts, ctx: C) -> Arguments<C> {
    HCons {
        head: logger,
        tail: HCons {
            head: request,
            tail: ctx,
        },
    }
}

/// A [`Handler`] from an async closure of `(input, ctx, logger, request parts)`; see
/// [`handler_with_request`].
#[derive(Clone, Copy)]
#[derive_where(Debug)]
pub struct RequestHandlerFn<F> {
    #[derive_where(skip)]
    f: F,
}

/// A [`Handler`] from an async closure of `(input, ctx, logger, request parts)`.
pub fn handler_with_request<F>(f: F) -> RequestHandlerFn<F> {
    RequestHandlerFn { f }
}

impl<F, Fut, I, C, O> Handler<I, C> for RequestHandlerFn<F>
where
    F: Fn(I, C, Logger, Parts) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ApiError>> + Send + 'static,
{
    type Output = O;
    type Future = Fut;

    fn call(&self, input: I, ctx: C, logger: Logger, request: Parts) -> Fut {
        (self.f)(input, ctx, logger, request)
    }
}

/// The innermost service of an endpoint: calls a [`Handler`] with the validated input, the
/// context, the request's logger (from the extensions, or the default) and the request parts.
///
/// The handler is shared: cloning the service (as outer stages do per request) does not clone
/// what the handler captured.
///
/// It is a leaf, not a layer: there is nothing inside the handler to wrap.
#[derive(Debug)]
#[derive_where(Clone)]
pub struct HandlerService<H> {
    handler: Arc<H>,
}

impl<H> HandlerService<H> {
    /// A service calling `handler`.
    pub fn new(handler: H) -> Self {
        Self {
            handler: Arc::new(handler),
        }
    }

    /// The handler.
    pub fn get_ref(&self) -> &H {
        &self.handler
    }

    /// The handler, mutably, unless clones of this service share it.
    pub fn get_mut(&mut self) -> Option<&mut H> {
        Arc::get_mut(&mut self.handler)
    }

    /// Unwraps the handler, shared with clones of this service.
    pub fn into_inner(self) -> Arc<H> {
        self.handler
    }
}

impl<H, I, C> Service<Request<Validated<I, C>>> for HandlerService<H>
where
    H: Handler<I, C>,
{
    type Response = H::Output;
    type Error = ApiError;
    #[cfg(not(feature = "otel"))]
    type Future = H::Future;
    /// In a span named `handler` under a traced request (the `otel` feature).
    #[cfg(feature = "otel")]
    type Future = strata_core::trace::InSpan<H::Future>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ApiError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Validated<I, C>>) -> Self::Future {
        let (parts, Validated { input, ctx }) = request.into_parts();
        let logger = if self.handler.uses_logger() {
            Logger::from_extensions(&parts.extensions)
        } else {
            Logger::default()
        };
        let future = self.handler.call(input, ctx, logger, parts);
        #[cfg(feature = "otel")]
        let future = strata_core::trace::InSpan::start("handler", future);
        future
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use http::header::RETRY_AFTER;
    use http::{HeaderValue, Request};
    use strata_core::logger::{Level, LogSink};
    use strata_core::{HCons, HNil, Logger, Validated, http_error};
    use tower::ServiceExt;

    use super::*;

    #[derive(Default)]
    struct Capture(Mutex<Vec<(Level, String)>>);

    impl LogSink for Capture {
        fn log(&self, level: Level, message: std::fmt::Arguments<'_>) {
            self.0.lock().unwrap().push((level, message.to_string()));
        }
    }

    #[tokio::test]
    async fn handler_reads_ctx_logger_and_request() {
        let capture = Arc::new(Capture::default());
        let service = HandlerService::new(handler_with_request(
            |input: u32, ctx: HCons<&'static str, HNil>, logger: Logger, request: Parts| async move {
                logger.info(format_args!("{} asked", ctx.head));
                Ok(format!("{} {} {input}", request.method, request.uri.path()))
            },
        ));
        let mut request = Request::post("/sum")
            .body(Validated {
                input: 3u32,
                ctx: HNil.push("ada"),
            })
            .unwrap();
        request
            .extensions_mut()
            .insert(Logger::with_sink(capture.clone()));
        assert_eq!(service.oneshot(request).await.unwrap(), "POST /sum 3");
        assert_eq!(
            capture.0.lock().unwrap()[0],
            (Level::Info, "ada asked".to_owned())
        );
    }

    #[tokio::test]
    async fn clones_share_the_handler() {
        let captured = Arc::new(());
        let probe = Arc::clone(&captured);
        let service = HandlerService::new(handler_fn::<_, (HNil, fn())>(move |(): ()| {
            let holders = Arc::strong_count(&probe);
            async move { Ok::<usize, ApiError>(holders) }
        }));
        let before = Arc::strong_count(&captured);
        let clones: Vec<_> = (0..3).map(|_| service.clone()).collect();
        assert_eq!(
            Arc::strong_count(&captured),
            before,
            "the closure was not cloned"
        );
        drop(clones);
        assert!(
            service.clone().get_mut().is_none(),
            "shared while a clone lives"
        );
    }

    #[tokio::test]
    async fn errors_keep_status_and_headers() {
        let service = HandlerService::new(handler_without_input(async || {
            http_error!(429, "Too many").with_header(RETRY_AFTER, HeaderValue::from_static("5"))
        }));
        let error = service
            .oneshot(Request::new(Validated {
                input: (),
                ctx: HNil,
            }))
            .await
            .unwrap_err();
        assert_eq!(error.status(), 429);
        assert_eq!(error.headers().unwrap()[RETRY_AFTER], "5");
    }

    #[tokio::test]
    async fn plain_errors_become_500() {
        let service = HandlerService::new(handler_fn(async |raw: String| Ok(raw.parse::<u8>()?)));
        let request = Request::new(Validated {
            input: "x".to_owned(),
            ctx: HNil,
        });
        let error = service.oneshot(request).await.unwrap_err();
        assert_eq!(error.status(), 500);
        assert_eq!(error.message(), "invalid digit found in string");
    }

    #[derive(Debug, PartialEq)]
    struct User(&'static str);

    #[tokio::test]
    async fn parameters_are_taken_by_type_in_any_order() {
        let service = HandlerService::new(handler_fn(
            async |input: u32, request: Parts, user: User, count: u8, _logger: Logger| {
                Ok(format!("{} {input} {} {count}", user.0, request.uri.path()))
            },
        ));
        let request = Request::post("/sum")
            .body(Validated {
                input: 3u32,
                ctx: HNil.push(User("ada")).push(9u8),
            })
            .unwrap();
        assert_eq!(service.oneshot(request).await.unwrap(), "ada 3 /sum 9");
    }

    /// A request with a header, as the validate stage passes it on.
    fn with_header<I>(input: I, ctx: Ctx) -> Request<Validated<I, Ctx>> {
        let mut request = Request::get("/")
            .header("x-token", "secret")
            .body(Validated { input, ctx })
            .unwrap();
        request.extensions_mut().insert(Logger::default());
        request
    }

    type Ctx = HCons<User, HNil>;

    #[tokio::test]
    async fn a_handler_takes_the_context_it_names_with_or_without_input() {
        let service = HandlerService::new(handler_fn(async |input: u8, user: User| {
            Ok(format!("{} {input}", user.0))
        }));
        let answer = service
            .oneshot(with_header(7u8, HNil.push(User("ada"))))
            .await;
        assert_eq!(answer.unwrap(), "ada 7");

        let without_input =
            HandlerService::new(handler_without_input(async |user: User| Ok(user.0.len())));
        let answer = without_input
            .oneshot(with_header((), HNil.push(User("ada"))))
            .await;
        assert_eq!(answer.unwrap(), 3);
    }

    #[tokio::test]
    async fn a_handler_that_takes_the_parts_reads_every_header() {
        let service = HandlerService::new(handler_fn(async |input: u8, request: Parts| {
            Ok(format!("{:?} {input}", request.headers.get("x-token")))
        }));
        let answer = service
            .oneshot(with_header(7u8, HNil.push(User("ada"))))
            .await;
        assert_eq!(answer.unwrap(), "Some(\"secret\") 7");
    }

    /// A request of `input` whose logger records into `capture`.
    fn request<I>(input: I, capture: &Arc<Capture>) -> Request<Validated<I, HNil>> {
        let mut request = Request::new(Validated { input, ctx: HNil });
        request
            .extensions_mut()
            .insert(Logger::with_sink(capture.clone()));
        request
    }

    #[tokio::test]
    async fn only_a_handler_taking_the_logger_is_given_the_request_s() {
        let takes = handler_fn(async |n: u32, logger: Logger| {
            logger.info(format_args!("got {n}"));
            Ok(n)
        });
        let ignores = handler_fn(async |n: u32| Ok(n));
        let without_input = handler_without_input(async |logger: Logger| {
            logger.info("no input");
            Ok(0u32)
        });
        assert!(Handler::<u32, HNil>::uses_logger(&takes));
        assert!(!Handler::<u32, HNil>::uses_logger(&ignores));
        assert!(Handler::<(), HNil>::uses_logger(&without_input));
        assert!(!Handler::<(), HNil>::uses_logger(&handler_without_input(
            async || Ok(0u32)
        )));
        let capture = Arc::new(Capture::default());
        let service = HandlerService::new(takes);
        assert_eq!(service.oneshot(request(7, &capture)).await.unwrap(), 7);
        let service = HandlerService::new(ignores);
        assert_eq!(service.oneshot(request(8, &capture)).await.unwrap(), 8);
        let service = HandlerService::new(without_input);
        assert_eq!(service.oneshot(request((), &capture)).await.unwrap(), 0);
        let lines: Vec<_> = capture
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|l| l.1.clone())
            .collect();
        assert_eq!(lines, ["got 7", "no input"]);
    }

    #[tokio::test]
    async fn handlers_without_input_take_only_what_they_use() {
        let service =
            HandlerService::new(handler_without_input(async |user: User| Ok(user.0.len())));
        let request = Request::new(Validated {
            input: (),
            ctx: HNil.push(User("ada")),
        });
        assert_eq!(service.oneshot(request).await.unwrap(), 3);
    }
}
