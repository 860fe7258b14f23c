//! The tower service a server runs: request ids, compression, the router.

pub(crate) mod attach;
pub(crate) mod etag;
pub(crate) mod layered;
pub(crate) mod request_id;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response};
use strata_core::{Body, IncomingBody, Logger};

use strata_routing::{Router, Routing};
use tower::util::BoxCloneSyncService;
#[cfg(feature = "compression")]
use tower_http::compression::CompressionLayer;
#[cfg(feature = "compression")]
use tower_http::compression::predicate::{And, NotForContentType, Predicate, SizeAbove};
use tower_layer::Layer;
use tower_service::Service;

use crate::config::{Config, LogFormat};
use crate::health::Health;
use crate::logging::RequestLine;
use crate::metrics::Metered;

use crate::app::etag::ETag;
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

/// The application service: request ids and per-request loggers, then the router inside the
/// response layers configured (`ETag`s, compression). It is `Clone + Send + Sync` and never
/// fails.
pub type App = RequestId<RouterStack>;

/// A response future of [`RouterStack`].
pub type RouterStackFuture =
    Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

/// The router inside the response layers the configuration asks for (`ETag`s, then tower-http's
/// compression), boxed: one type whatever is configured.
///
/// (Measured with `strata-bench compare`, a stack of four unboxed variants, so that the default
/// one paid for no box, was worth under 2 % of requests per second on every scenario: less
/// than its code cost. See `docs/architecture.md`.)
#[derive(Clone, Debug)]
pub struct RouterStack {
    inner: BoxCloneSyncService<Request<Body>, Response<Body>, Infallible>,
    /// The probes, answered before the router (and its CORS, `ETag`s, compression).
    /// (Each optional part behind one `Arc`: the stack is cloned for every request.)
    health: Option<Arc<Health>>,
    /// The metrics (with the router that names each request's route), their exposition
    /// answered before the router.
    metrics: Option<Arc<Metered>>,
    /// The router that names each request's route in its log line, when requests get one
    /// (`LogFormat::Json`).
    request_lines: Option<Router>,
    /// The tracer of requests' spans (the `otel` feature), when configured.
    #[cfg(feature = "otel")]
    traced: Option<Arc<crate::traces::Traced>>,
}

impl RouterStack {
    /// The router with `ETag`s when asked; compressed when asked, which needs the
    /// `compression` feature.
    #[cfg_attr(feature = "compression", allow(clippy::unnecessary_wraps))] // fails without it
    fn new(router: Router, compression: bool, etags: bool) -> Result<Self, ServerError> {
        let inner = match (compression, etags) {
            (false, false) => BoxCloneSyncService::new(router),
            (false, true) => BoxCloneSyncService::new(ETag::new(router)),
            #[cfg(feature = "compression")]
            (true, false) => boxed_compressed(compression_layer().layer(router)),
            #[cfg(feature = "compression")]
            (true, true) => boxed_compressed(compression_layer().layer(ETag::new(router))),
            #[cfg(not(feature = "compression"))]
            (true, _) => {
                return Err(ServerError::Config(
                    "compression needs Strata's `compression` feature".into(),
                ));
            }
        };
        Ok(Self {
            inner,
            health: None,
            metrics: None,
            request_lines: None,
            #[cfg(feature = "otel")]
            traced: None,
        })
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

/// A compressing service boxed, its compressed bodies made [`Body`]s.
#[cfg(feature = "compression")]
fn boxed_compressed<S, B>(
    service: S,
) -> BoxCloneSyncService<Request<Body>, Response<Body>, Infallible>
where
    S: Service<Request<Body>, Response = Response<B>, Error = Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<strata_core::BoxError>,
{
    BoxCloneSyncService::new(tower::ServiceExt::map_response(
        service,
        |response: Response<B>| response.map(Body::new),
    ))
}

impl<B> Service<Request<B>> for RouterStack
where
    B: IncomingBody,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = RouterStackFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> RouterStackFuture {
        if let Some(metered) = &self.metrics
            && let Some(answer) = metered.metrics().answer(&request)
        {
            return answer;
        }
        if let Some(health) = &self.health
            && let Some(answer) = health.answer(request.method(), request.uri().path())
        {
            return answer;
        }
        #[cfg(feature = "otel")]
        let span = self
            .traced
            .as_ref()
            .and_then(|traced| traced.begin(&request));
        // Current while the stages are called too: a stage may call the next at once (the
        // handler's span starts when its future is made).
        #[cfg(feature = "otel")]
        let _current = span.as_ref().map(|span| span.context().clone().attach());
        let line = self
            .request_lines
            .as_ref()
            .map(|router| RequestLine::begin(router, &request));
        let answer = if let Some(metered) = &self.metrics {
            let inner = &mut self.inner;
            metered.measure(request, |request| inner.call(request))
        } else {
            self.inner.call(request.map(Body::new))
        };
        #[cfg(feature = "otel")]
        if let Some(span) = span {
            use opentelemetry::context::FutureExt as _;
            // The request's context is current whenever its future is polled: the router, the
            // middlewares and the handler see it.
            let answer = answer.with_context(span.context().clone());
            return Box::pin(async move {
                let Ok(response) = answer.await;
                if let Some(line) = line {
                    line.end(response.status(), span.sampled_ids());
                }
                span.end(response.status());
                Ok(response)
            });
        }
        match line {
            None => answer,
            Some(line) => Box::pin(async move {
                let Ok(response) = answer.await;
                line.end(response.status(), None);
                Ok(response)
            }),
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
    let metrics = config
        .server
        .metrics
        .clone()
        .map(|metrics| Arc::new(Metered::new(metrics, router.clone())));
    let json_lines = config
        .server
        .logger
        .is_some_and(|options| options.format == LogFormat::Json);
    let request_lines = json_lines.then(|| router.clone());
    #[cfg(feature = "otel")]
    let traced = match &config.server.tracing {
        Some(tracing) => Some(Arc::new(crate::traces::Traced::new(
            tracing,
            router.clone(),
        )?)),
        None => None,
    };
    let mut app = RouterStack::new(router, compress, etags)?;
    #[cfg(feature = "otel")]
    {
        app.traced = traced;
    }
    app.request_lines = request_lines;
    app.health = config.server.health.clone().map(Arc::new);
    app.metrics = metrics;
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

    // What compression does to responses is tested over sockets (tests/server.rs); here, that
    // asking for it without the feature is a configuration error, not a silent no-op.
    #[test]
    fn compression_is_there_when_built_in() {
        let built = RouterStack::new(router(), true, true);
        if cfg!(feature = "compression") {
            assert!(built.is_ok());
        } else {
            let error = built.err().map(|e| e.to_string()).unwrap_or_default();
            assert_eq!(
                error,
                "invalid server configuration: compression needs Strata's `compression` feature"
            );
        }
    }
}
