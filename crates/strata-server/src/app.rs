//! The tower service a server runs: request ids, compression, the router.

use strata_core::{Config, Logger};
use strata_routing::{Router, Routing};
use tower_http::compression::predicate::{And, NotForContentType, Predicate, SizeAbove};
use tower_http::compression::{Compression, CompressionLayer};
use tower_layer::Layer;

use crate::error::ServerError;
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
pub type App = RequestId<Compression<Router, CompressionPredicate>>;

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
    let enabled = config.compression();
    let compression = CompressionLayer::new()
        .gzip(enabled)
        .br(enabled)
        .compress_when(predicate(enabled));
    Ok(RequestIdLayer::new(logger.clone()).layer(compression.layer(router)))
}
