//! Stage 5 of the Strata pipeline: the endpoint's handler.
//!
//! [`HandlerService`] is the innermost service of an endpoint: it takes `Request<Validated<I, C>>`
//! and calls user code with the typed input, the context built by middleware, a [`Logger`] and
//! the request parts, returning `Result<O, ApiError>`. An error with a status becomes that status
//! (with its extra headers); any other error becomes a 500. Panics are caught by the format
//! stage, which wraps the whole endpoint.
//!
//! Handlers are async closures wrapped by [`handler_fn`] (input, context, logger) or
//! [`handler_with_request`] (the same plus the request parts), or any type implementing
//! [`Handler`].
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
//! let service = HandlerService::new(handler_fn(|name: String, _ctx: HNil, logger: Logger| async move {
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

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::Request;
use http::request::Parts;
use strata_core::{ApiError, Logger, Validated};
use tower_service::Service;

/// User code that answers a request.
///
/// `I` is the input type, `C` the context type. Implemented for closures through [`handler_fn`]
/// and [`handler_with_request`].
pub trait Handler<I, C>: Clone + Send + Sync + 'static {
    /// The output type.
    type Output;
    /// The future of one call.
    type Future: Future<Output = Result<Self::Output, ApiError>> + Send + 'static;

    /// Handles one request.
    fn call(&self, input: I, ctx: C, logger: Logger, request: Parts) -> Self::Future;
}

/// A [`Handler`] from an async closure of `(input, ctx, logger)`; see [`handler_fn`].
#[derive(Clone, Copy)]
pub struct HandlerFn<F> {
    f: F,
}

/// A [`Handler`] from an async closure of `(input, ctx, logger)`.
pub fn handler_fn<F>(f: F) -> HandlerFn<F> {
    HandlerFn { f }
}

impl<F> fmt::Debug for HandlerFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerFn")
            .field("f", &std::any::type_name::<F>())
            .finish()
    }
}

impl<F, Fut, I, C, O> Handler<I, C> for HandlerFn<F>
where
    F: Fn(I, C, Logger) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ApiError>> + Send + 'static,
{
    type Output = O;
    type Future = Fut;

    fn call(&self, input: I, ctx: C, logger: Logger, _request: Parts) -> Fut {
        (self.f)(input, ctx, logger)
    }
}

/// A [`Handler`] from an async closure of `(input, ctx, logger, request parts)`; see
/// [`handler_with_request`].
#[derive(Clone, Copy)]
pub struct RequestHandlerFn<F> {
    f: F,
}

/// A [`Handler`] from an async closure of `(input, ctx, logger, request parts)`.
pub fn handler_with_request<F>(f: F) -> RequestHandlerFn<F> {
    RequestHandlerFn { f }
}

impl<F> fmt::Debug for RequestHandlerFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestHandlerFn")
            .field("f", &std::any::type_name::<F>())
            .finish()
    }
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
pub struct HandlerService<H> {
    handler: Arc<H>,
}

impl<H> Clone for HandlerService<H> {
    fn clone(&self) -> Self {
        Self {
            handler: Arc::clone(&self.handler),
        }
    }
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
    type Future = H::Future;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ApiError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Validated<I, C>>) -> Self::Future {
        let (parts, Validated { input, ctx }) = request.into_parts();
        let logger = Logger::from_extensions(&parts.extensions);
        self.handler.call(input, ctx, logger, parts)
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
        let service = HandlerService::new(handler_fn(move |(): (), _: HNil, _: Logger| {
            let holders = Arc::strong_count(&probe);
            async move { Ok::<usize, strata_core::ApiError>(holders) }
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
        let service = HandlerService::new(handler_fn(
            async |(): (), _: HNil, _: Logger| -> strata_core::ApiResult<()> {
                Err(http_error!(429, "Too many")
                    .with_header(RETRY_AFTER, HeaderValue::from_static("5")))
            },
        ));
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
        let service =
            HandlerService::new(handler_fn(|raw: String, _: HNil, _: Logger| async move {
                Ok(raw.parse::<u8>()?)
            }));
        let request = Request::new(Validated {
            input: "x".to_owned(),
            ctx: HNil,
        });
        let error = service.oneshot(request).await.unwrap_err();
        assert_eq!(error.status(), 500);
        assert_eq!(error.message(), "invalid digit found in string");
    }
}
