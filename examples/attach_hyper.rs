//! `attach_routing` in a bare hyper-util server: the application accepts connections itself and
//! hands each one Strata's service.
//!
//! `cargo run --example attach_hyper`, then `curl localhost:8092/v1/hello?name=hyper`.

use std::net::SocketAddr;
use strata::attach_routing;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use strata::prelude::*;

#[path = "quick_start.rs"]
#[allow(dead_code)]
mod quick_start;

/// Accepts connections on `listener` forever, serving Strata's routing on each.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let config = create_config().cors(Cors::Enabled).build();
    let attached = attach_routing(&config, &quick_start::quick_start_routing())?;
    loop {
        let (stream, _) = listener.accept().await?;
        let service = TowerToHyperService::new(attached.service.clone());
        let logger = attached.logger.clone();
        tokio::spawn(async move {
            let connection = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(error) = connection {
                logger.debug(format_args!("connection ended: {error}"));
            }
        });
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 8092))).await?;
    println!("Listening on http://{}", listener.local_addr()?);
    serve(listener).await
}
