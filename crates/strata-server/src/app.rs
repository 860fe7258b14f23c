//! The tower service a server runs: request ids, compression, the router.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::{Request, Response};
use pin_project_lite::pin_project;
use strata_core::{IncomingBody, Logger, ResponseBody};

use crate::config::Config;
use strata_routing::{Router, RouterFuture, Routing};
use tower_http::compression::predicate::{And, NotForContentType, Predicate, SizeAbove};
use tower_http::compression::{Compression, CompressionLayer, ResponseFuture as CompressionFuture};
use tower_layer::Layer;
use tower_service::Service;

use crate::error::ServerError;
use crate::etag::{ETag, ETagFuture};
use crate::request_id::{RequestId, RequestIdLayer};

/// Smaller bodies are sent as they are: compressing them costs more than it saves.
pub const COMPRESSION_THRESHOLD: u64 = 1024;

/// When a response is compressed: compression is on, the body is large enough, and it is not
/// already compressed media.
#[derive(Debug, Clone)]
pub struct CompressionPredicate {
    enabled: bool,
    worth_it: And<And<SizeAbove, NotForContentType>, NotForContentType>,
}

impl Predicate for CompressionPredicate {
    fn should_compress<B: http_body::Body>(&self, response: &http::Response<B>) -> bool {
        // Off means off: no `Vary: Accept-Encoding` either.
        self.enabled && self.worth_it.should_compress(response)
    }
}

/// The application service: request ids and per-request loggers, compression (when
/// configured), then the router. It is `Clone + Send + Sync` and never fails.
pub type App = RequestId<MaybeCompressed>;

/// The router, behind tower-http's compression only when compression is configured; either way
/// the response body is a [`ResponseBody`].
///
/// tower-http's `CompressionBody` holds its encoders' state inline, which makes every response
/// hundreds of bytes larger, moved several times on its way to the socket; measured with the
/// benchmark crate, that was the largest single cost of a small response. Without compression
/// the router's responses pass untouched; with it, compressed bodies are boxed.
#[derive(Clone)]
pub struct MaybeCompressed {
    inner: Compressing,
}

impl std::fmt::Debug for MaybeCompressed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let compression = matches!(self.inner, Compressing::On(_) | Compressing::OnTagged(_));
        f.debug_struct("MaybeCompressed")
            .field("compression", &compression)
            .finish_non_exhaustive()
    }
}

/// The four stacks, so that the default one (no compression, no `ETag`) pays for neither.
#[derive(Clone)]
enum Compressing {
    Off(Router),
    On(Compression<Router, CompressionPredicate>),
    /// `ETag`s over the uncompressed bytes.
    OffTagged(ETag<Router>),
    OnTagged(Compression<ETag<Router>, CompressionPredicate>),
}

impl MaybeCompressed {
    fn new(router: Router, compression: bool, etag: bool) -> Self {
        let layer = || {
            CompressionLayer::new()
                .gzip(true)
                .br(true)
                .compress_when(predicate(true))
        };
        let inner = match (compression, etag) {
            (false, false) => Compressing::Off(router),
            (true, false) => Compressing::On(layer().layer(router)),
            (false, true) => Compressing::OffTagged(ETag::new(router)),
            (true, true) => Compressing::OnTagged(layer().layer(ETag::new(router))),
        };
        Self { inner }
    }

    /// The router.
    pub fn get_ref(&self) -> &Router {
        match &self.inner {
            Compressing::Off(router) => router,
            Compressing::On(compression) => compression.get_ref(),
            Compressing::OffTagged(tagged) => tagged.get_ref(),
            Compressing::OnTagged(compression) => compression.get_ref().get_ref(),
        }
    }
}

impl<B> Service<Request<B>> for MaybeCompressed
where
    B: IncomingBody,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = MaybeCompressedFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        match &mut self.inner {
            Compressing::Off(router) => Service::<Request<B>>::poll_ready(router, cx),
            Compressing::On(compression) => Service::<Request<B>>::poll_ready(compression, cx),
            Compressing::OffTagged(tagged) => Service::<Request<B>>::poll_ready(tagged, cx),
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
            Compressing::On(compression) => FutureState::On {
                future: compression.call(request),
            },
            Compressing::OffTagged(tagged) => FutureState::OffTagged {
                future: tagged.call(request),
            },
            Compressing::OnTagged(compression) => FutureState::OnTagged {
                future: compression.call(request),
            },
        };
        MaybeCompressedFuture { state }
    }
}

pin_project! {
    #[project = FutureStateProj]
    enum FutureState {
        Off { #[pin] future: RouterFuture },
        On { #[pin] future: CompressionFuture<RouterFuture, CompressionPredicate> },
        OffTagged { #[pin] future: ETagFuture<RouterFuture> },
        OnTagged {
            #[pin]
            future: CompressionFuture<ETagFuture<RouterFuture>, CompressionPredicate>,
        },
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
    type Output = Result<Response<ResponseBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            FutureStateProj::Off { future } => future.poll(cx),
            FutureStateProj::On { future } => {
                let response = ready!(future.poll(cx))?;
                Poll::Ready(Ok(response.map(ResponseBody::stream)))
            }
            FutureStateProj::OffTagged { future } => future.poll(cx),
            FutureStateProj::OnTagged { future } => {
                let response = ready!(future.poll(cx))?;
                Poll::Ready(Ok(response.map(ResponseBody::stream)))
            }
        }
    }
}

fn predicate(enabled: bool) -> CompressionPredicate {
    CompressionPredicate {
        enabled,
        worth_it: SizeAbove::new(COMPRESSION_THRESHOLD)
            .and(NotForContentType::IMAGES)
            .and(NotForContentType::SSE),
    }
}

/// Builds the application service for `routing`.
pub(crate) fn build_app(
    config: &Config,
    routing: &Routing,
    logger: &Logger,
) -> Result<App, ServerError> {
    let router = Router::new(routing, config)?;
    let app = MaybeCompressed::new(router, config.server.compression, config.server.etag);
    Ok(RequestIdLayer::new(logger.clone())
        .echo(config.server.request_id_echo)
        .layer(app))
}
