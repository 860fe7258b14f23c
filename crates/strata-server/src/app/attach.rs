//! `attach_routing`: the routing as a tower service for an application that runs its own server.

use strata_core::Logger;

use crate::config::Config;
use strata_routing::{Router, Routing};

use crate::app::{App, build_app};
use crate::error::ServerError;
use crate::logging::install_default_subscriber;

/// What [`attach_routing`] returns (spec `attachRouting`).
#[derive(Clone, Debug)]
pub struct Attached {
    /// The routing as a tower service (`Service<http::Request<B>>`, `Error = Infallible`):
    /// request ids, compression when configured, the router.
    pub service: App,
    /// The logger.
    pub logger: Logger,
    /// The JSON 404 (`Can not <METHOD> <path>`, with CORS headers when on), for the caller to
    /// mount as the fallback of its own app.
    pub not_found_handler: Router,
}

/// Prepares `routing` for an existing application: synchronous, binds nothing.
///
/// The listeners, TLS material and `ServerLimits` of `config` are ignored (the application's
/// own server has its own); compression, `ETag`s, the request-id echo and the logger apply.
/// From a [`RoutingSettings`](strata_routing::RoutingSettings) alone, pass `&Config::from(routing)`
/// (the server's defaults).
pub fn attach_routing(config: &Config, routing: &Routing) -> Result<Attached, ServerError> {
    if let Some(options) = config.server.logger.as_ref() {
        install_default_subscriber(options);
    }
    let logger = Logger::tracing();
    let service = build_app(config, routing, &logger)?;
    let not_found_handler = Router::new(&Routing::new(), config)?;
    Ok(Attached {
        service,
        logger,
        not_found_handler,
    })
}
