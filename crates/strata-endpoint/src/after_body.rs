//! The application's own tower layers placed after the body is read ([`AfterBody`]).
//!
//! Layers given to `create_server(..).layers(..)` wrap the whole app: they see a request as soon as its
//! head has arrived, so a concurrency limit counts uploads still arriving and a timeout counts
//! the client's upload time. Layers given to `PipelineSettings::after_body` sit inside each
//! endpoint, between the parse stage (which reads the body) and the combine stage: they see
//! the request once its body is in (parsed, or on disk for uploads), and time only the work.
//!
//! ```
//! use std::time::Duration;
//! use strata_endpoint::AfterBody;
//! use tower::ServiceBuilder;
//! use tower::limit::GlobalConcurrencyLimitLayer;
//!
//! // One limit shared by every endpoint (a `ConcurrencyLimitLayer` would give each endpoint
//! // its own), and a timeout of the work alone.
//! let after_body = AfterBody::new(
//!     ServiceBuilder::new()
//!         .timeout(Duration::from_secs(30))
//!         .layer(GlobalConcurrencyLimitLayer::new(1024)),
//! );
//! # let _ = after_body;
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::RETRY_AFTER;
use http::{HeaderValue, Request, StatusCode};
use strata_core::{ApiError, BoxError, ErrorKind, Output};
use strata_input::Parsed;
use tower::ServiceExt;
use tower::util::BoxCloneSyncService;
use tower_layer::Layer;
use tower_service::Service;

/// The rest of an endpoint's pipeline, as an [`AfterBody`] layer gets it: a parsed request in,
/// the handler's output (or a Strata error) out.
pub type AfterBodyInner = BoxCloneSyncService<Request<Parsed>, Output, ApiError>;

type Wrapped = BoxCloneSyncService<Request<Parsed>, Output, BoxError>;

/// Tower layers around every endpoint's work, after its body has been read (see the [module
/// docs](self)). Layers generic over the request fit: tower's timeout, concurrency and rate
/// limits, load shedding, your own. Their errors become responses: a timeout a 504, load
/// shedding a 503 with `Retry-After: 1`, a Strata error what it was, anything else a 500.
///
/// Each endpoint gets its own instance of the layers (`Layer::layer` is called once per
/// endpoint): a limit meant for the whole application must share its state, as
/// `tower::limit::GlobalConcurrencyLimitLayer` does.
#[derive(Clone)]
pub struct AfterBody(Arc<dyn Fn(AfterBodyInner) -> Wrapped + Send + Sync>);

impl fmt::Debug for AfterBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AfterBody(..)")
    }
}

impl AfterBody {
    /// `layer` placed after the body is read.
    pub fn new<L>(layer: L) -> Self
    where
        L: Layer<AfterBodyInner> + Send + Sync + 'static,
        L::Service: Service<Request<Parsed>, Response = Output> + Clone + Send + Sync + 'static,
        <L::Service as Service<Request<Parsed>>>::Error: Into<BoxError>,
        <L::Service as Service<Request<Parsed>>>::Future: Send + 'static,
    {
        Self(Arc::new(move |inner| {
            BoxCloneSyncService::new(layer.layer(inner).map_err(Into::into))
        }))
    }

    /// `inner` (the rest of an endpoint's pipeline) inside the layers.
    pub fn wrap<S>(&self, inner: S) -> AfterBodyService
    where
        S: Service<Request<Parsed>, Response = Output, Error = ApiError>
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        AfterBodyService {
            stack: (self.0)(BoxCloneSyncService::new(inner)),
        }
    }
}

/// An endpoint's work inside its [`AfterBody`] layers. It is always ready: the layers are
/// asked whether they are (a concurrency limit's place) only once the body has been read, in
/// the request's own future.
#[derive(Clone)]
pub struct AfterBodyService {
    stack: Wrapped,
}

impl fmt::Debug for AfterBodyService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AfterBodyService(..)")
    }
}

impl Service<Request<Parsed>> for AfterBodyService {
    type Response = Output;
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Output, ApiError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ApiError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Parsed>) -> Self::Future {
        let stack = self.stack.clone();
        Box::pin(async move { stack.oneshot(request).await.map_err(layer_error) })
    }
}

/// The error response of a tower layer's `error`: tower's timeout a 504, its load shedding a
/// 503 with `Retry-After: 1` (an [`ErrorKind::Overload`]), a Strata error (boxed by a layer)
/// what it was, anything else a 500 (an internal error).
pub fn layer_error(error: BoxError) -> ApiError {
    if error.is::<tower::timeout::error::Elapsed>() {
        ApiError::new(StatusCode::GATEWAY_TIMEOUT, "The request took too long").with_source(error)
    } else if error.is::<tower::load_shed::error::Overloaded>() {
        // The clients' doing: logged as a rate-limited warning.
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "The server is overloaded")
            .with_kind(ErrorKind::Overload)
            .with_header(RETRY_AFTER, HeaderValue::from_static("1"))
            .with_source(error)
    } else {
        let api = ApiError::from_boxed(error);
        if api.status().is_server_error() && api.kind() != ErrorKind::Overload {
            api.with_kind(ErrorKind::Internal)
        } else {
            api
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn request() -> Request<Parsed> {
        Request::new(Parsed::default())
    }

    #[tokio::test]
    async fn the_layers_see_the_request_after_the_body_and_their_errors_become_responses() {
        let slow = tower::service_fn(|_: Request<Parsed>| async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            Ok::<_, ApiError>(Output::streamed(
                StatusCode::OK,
                http::HeaderMap::new(),
                strata_core::Body::empty(),
            ))
        });
        let timeout = AfterBody::new(tower::timeout::TimeoutLayer::new(Duration::from_millis(50)));
        let error = timeout.wrap(slow).oneshot(request()).await.err().unwrap();
        assert_eq!(error.status(), StatusCode::GATEWAY_TIMEOUT);
        let refused = tower::service_fn(|_: Request<Parsed>| async {
            Err::<Output, _>(ApiError::new(StatusCode::FORBIDDEN, "no"))
        });
        let error = timeout
            .wrap(refused)
            .oneshot(request())
            .await
            .err()
            .unwrap();
        assert_eq!(
            (error.status(), error.message()),
            (StatusCode::FORBIDDEN, "no")
        );
    }

    #[tokio::test]
    async fn a_limit_is_asked_for_its_place_only_when_the_request_comes() {
        let limit = AfterBody::new(tower::limit::GlobalConcurrencyLimitLayer::new(1));
        let done = tower::service_fn(|_: Request<Parsed>| async {
            Ok::<_, ApiError>(Output::streamed(
                StatusCode::OK,
                http::HeaderMap::new(),
                strata_core::Body::empty(),
            ))
        });
        let mut service = limit.wrap(done);
        // Ready without taking the only place: the parse stage asks before reading a body.
        for _ in 0..3 {
            std::future::poll_fn(|cx| service.poll_ready(cx))
                .await
                .unwrap();
        }
        for _ in 0..3 {
            service.clone().oneshot(request()).await.unwrap();
        }
    }
}
