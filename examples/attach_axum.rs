//! `attach_routing` inside an axum app: axum owns the server and its own routes; Strata's
//! routing is mounted under it, and Strata's JSON 404 is the fallback.
//!
//! `cargo run --example attach_axum`, then `curl localhost:8091/v1/hello?name=axum` or
//! `curl localhost:8091/health`.

use std::net::SocketAddr;
use strata::attach_routing;

use strata::prelude::*;

#[path = "quick_start.rs"]
#[allow(dead_code)]
mod quick_start;

/// The axum app with Strata's routing attached.
pub(crate) fn app() -> Result<axum::Router, strata::server::ServerError> {
    let config = create_config().cors(Cors::Enabled).build();
    let attached = attach_routing(&config, &quick_start::quick_start_routing())?;
    attached.logger.info("Strata routing attached to axum");
    Ok(axum::Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        // Strata sees the whole path: its routing is written from the root.
        .route_service("/v1/{*rest}", attached.service.clone())
        .fallback_service(attached.not_found_handler))
}

/// Serves the app on `listener` until `shutdown` resolves.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = app().map_err(std::io::Error::other)?;
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 8091))).await?;
    println!("Listening on http://{}", listener.local_addr()?);
    serve(listener, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    Ok(())
}
