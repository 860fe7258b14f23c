//! The tower service a server runs: request ids, compression, the router.

pub(crate) mod attach;
pub(crate) mod etag;
pub(crate) mod layered;
pub(crate) mod request_id;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{Request, Response};
use pin_project_lite::pin_project;
use strata_core::{Body, IncomingBody, Logger};

use strata_routing::{Router, RouterFuture, Routing};
#[cfg(feature = "compression")]
use tower_http::compression::predicate::{And, NotForContentType, Predicate, SizeAbove};
#[cfg(feature = "compression")]
use tower_http::compression::{Compression, CompressionLayer};
use tower_layer::Layer;
use tower_service::Service;

use crate::config::Config;

use crate::app::etag::{ETag, ETagFuture};
use crate::app::request_id::{RequestId, RequestIdLayer};
use crate::error::ServerError;

/// Smaller bodies are sent as they are: compressing them costs more than it saves.
#[cfg(feature = "compression")]
pub const COMPRESSION_THRESHOLD: u64 = 1024;

/// When a response is compressed: the body is large enough, and it is not already compressed
/// media (with compression off the layer is not in the stack at all).
#[cfg(feature = "compression")]
#[derive(Debug, Clone)]
pub struct CompressionPredicate {
    worth_it: And<And<SizeAbove, NotForContentType>, NotForContentType>,
}

#[cfg(feature = "compression")]
impl Predicate for CompressionPredicate {
    fn should_compress<B: http_body::Body>(&self, response: &http::Response<B>) -> bool {
        self.worth_it.should_compress(response)
    }
}

/// The application service: request ids and per-request loggers, compression (when
/// configured), then the router. It is `Clone + Send + Sync` and never fails.
pub type App = RequestId<MaybeCompressed>;

/// The router, behind tower-http's compression only when compression is configured; either way
/// the response body is a [`Body`].
///
/// tower-http's `CompressionBody` holds its encoders' state inline, which makes every response
/// hundreds of bytes larger, moved several times on its way to the socket; measured with the
/// benchmark crate, that was the largest single cost of a small response. Without compression
/// the router's responses pass untouched; with it, the response future and the compressed body
/// are boxed.
#[derive(Clone)]
pub struct MaybeCompressed {
    inner: Compressing,
}

impl std::fmt::Debug for MaybeCompressed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let compression = !matches!(self.inner, Compressing::Off(_) | Compressing::OffTagged(_));
        f.debug_struct("MaybeCompressed")
            .field("compression", &compression)
            .finish_non_exhaustive()
    }
}

/// The four stacks, so that the default one (no compression, no `ETag`) pays for neither.
#[derive(Clone)]
enum Compressing {
    Off(Router),
    /// `ETag`s over the uncompressed bytes.
    OffTagged(ETag<Router>),
    #[cfg(feature = "compression")]
    On(Compression<Router, CompressionPredicate>),
    #[cfg(feature = "compression")]
    OnTagged(Compression<ETag<Router>, CompressionPredicate>),
}

impl MaybeCompressed {
    /// The router with `ETag`s when asked; compressed when asked, which needs the
    /// `compression` feature.
    #[cfg_attr(feature = "compression", allow(clippy::unnecessary_wraps))] // fails without it
    fn new(router: Router, compression: bool, etag: bool) -> Result<Self, ServerError> {
        let inner = match (compression, etag) {
            (false, false) => Compressing::Off(router),
            (false, true) => Compressing::OffTagged(ETag::new(router)),
            #[cfg(feature = "compression")]
            (true, false) => Compressing::On(compression_layer().layer(router)),
            #[cfg(feature = "compression")]
            (true, true) => Compressing::OnTagged(compression_layer().layer(ETag::new(router))),
            #[cfg(not(feature = "compression"))]
            (true, _) => {
                return Err(ServerError::Config(
                    "compression needs Strata's `compression` feature".into(),
                ));
            }
        };
        Ok(Self { inner })
    }

    /// The router.
    pub fn get_ref(&self) -> &Router {
        match &self.inner {
            Compressing::Off(router) => router,
            Compressing::OffTagged(tagged) => tagged.get_ref(),
            #[cfg(feature = "compression")]
            Compressing::On(compression) => compression.get_ref(),
            #[cfg(feature = "compression")]
            Compressing::OnTagged(compression) => compression.get_ref().get_ref(),
        }
    }
}

#[cfg(feature = "compression")]
fn compression_layer() -> CompressionLayer<CompressionPredicate> {
    CompressionLayer::new()
        .gzip(true)
        .br(true)
        .compress_when(CompressionPredicate {
            worth_it: SizeAbove::new(COMPRESSION_THRESHOLD)
                .and(NotForContentType::IMAGES)
                .and(NotForContentType::SSE),
        })
}

/// A compressed response's future, boxed (compressed bodies are boxed anyway).
#[cfg(feature = "compression")]
fn boxed<F, B>(future: F) -> FutureState
where
    F: Future<Output = Result<Response<B>, Infallible>> + Send + 'static,
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<strata_core::BoxError>,
{
    FutureState::Boxed {
        future: Box::pin(async move { Ok(future.await?.map(Body::new)) }),
    }
}

impl<B> Service<Request<B>> for MaybeCompressed
where
    B: IncomingBody,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = MaybeCompressedFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        match &mut self.inner {
            Compressing::Off(router) => Service::<Request<B>>::poll_ready(router, cx),
            Compressing::OffTagged(tagged) => Service::<Request<B>>::poll_ready(tagged, cx),
            #[cfg(feature = "compression")]
            Compressing::On(compression) => Service::<Request<B>>::poll_ready(compression, cx),
            #[cfg(feature = "compression")]
            Compressing::OnTagged(compression) => {
                Service::<Request<B>>::poll_ready(compression, cx)
            }
        }
    }

    fn call(&mut self, request: Request<B>) -> MaybeCompressedFuture {
        let state = match &mut self.inner {
            Compressing::Off(router) => FutureState::Off {
                future: router.call(request),
            },
            Compressing::OffTagged(tagged) => FutureState::OffTagged {
                future: tagged.call(request),
            },
            #[cfg(feature = "compression")]
            Compressing::On(compression) => boxed(compression.call(request)),
            #[cfg(feature = "compression")]
            Compressing::OnTagged(compression) => boxed(compression.call(request)),
        };
        MaybeCompressedFuture { state }
    }
}

/// A response future, type-erased.
type BoxedFuture = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

pin_project! {
    #[project = FutureStateProj]
    enum FutureState {
        Off { #[pin] future: RouterFuture },
        OffTagged { #[pin] future: ETagFuture<RouterFuture> },
        Boxed { future: BoxedFuture },
    }
}

pin_project! {
    /// Response future of [`MaybeCompressed`].
    pub struct MaybeCompressedFuture {
        #[pin]
        state: FutureState,
    }
}

impl Future for MaybeCompressedFuture {
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            FutureStateProj::Off { future } => future.poll(cx),
            FutureStateProj::OffTagged { future } => future.poll(cx),
            FutureStateProj::Boxed { future } => future.as_mut().poll(cx),
        }
    }
}

/// Builds the application service for `routing`.
pub(crate) fn build_app(
    config: &Config,
    routing: &Routing,
    logger: &Logger,
) -> Result<App, ServerError> {
    let router = Router::new(routing, config)?;
    let compress = config.server.compression != crate::config::Compression::Off;
    let etags = config.server.etags != crate::config::ETags::Off;
    let app = MaybeCompressed::new(router, compress, etags)?;
    Ok(RequestIdLayer::new(logger.clone())
        .echo(config.server.request_ids == crate::config::RequestIds::Echoed)
        .layer(app))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router() -> Router {
        Router::new(
            &Routing::new(),
            &strata_routing::RoutingSettings::new(strata_cors::Cors::Disabled),
        )
        .unwrap_or_else(|error| panic!("{error}"))
    }

    #[test]
    fn compression_is_there_when_built_in() {
        let built = MaybeCompressed::new(router(), true, true);
        if cfg!(feature = "compression") {
            assert!(format!("{:?}", built.ok()).contains("compression: true"));
        } else {
            let error = built.err().map(|e| e.to_string()).unwrap_or_default();
            assert_eq!(
                error,
                "invalid server configuration: compression needs Strata's `compression` feature"
            );
        }
    }
}
