//! The three servers, started in this process on a loopback port.

mod axum_ref;
mod hyper_ref;
pub(crate) mod soak_app;
mod strata_app;

use std::io;
use std::net::SocketAddr;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::scenario::ServerKind;

/// A server listening on loopback.
pub(crate) struct Running {
    /// Where it listens.
    pub(crate) addr: SocketAddr,
    handle: Handle,
}

enum Handle {
    Task(JoinHandle<()>),
    Strata(Box<strata::Server>),
}

impl Running {
    /// Stops accepting connections.
    pub(crate) async fn stop(self) {
        match self.handle {
            Handle::Task(task) => task.abort(),
            Handle::Strata(server) => server.shutdown().await,
        }
    }
}

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// Starts `kind` with the routes of every scenario (and the 10,000 generated ones when
/// `many_routes`) on 127.0.0.1 and a port the system picks. Call from a tokio runtime.
pub(crate) async fn start(kind: ServerKind, many_routes: bool) -> io::Result<Running> {
    match kind {
        ServerKind::Hyper => {
            let listener = TcpListener::bind(loopback()).await?;
            let addr = listener.local_addr()?;
            let app = hyper_ref::HyperApp::new(many_routes);
            let task = tokio::spawn(async move {
                // The usual hand-written accept loop: one task per connection, HTTP/1.1 or
                // HTTP/2 by preface, like the other two.
                let builder = auto::Builder::new(TokioExecutor::new());
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    let _ = stream.set_nodelay(true);
                    let app = app.clone();
                    let builder = builder.clone();
                    tokio::spawn(async move {
                        let service = service_fn(move |request| app.clone().handle(request));
                        let _ = builder
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            });
            Ok(Running {
                addr,
                handle: Handle::Task(task),
            })
        }
        ServerKind::Axum => {
            use axum::serve::ListenerExt;
            let listener = TcpListener::bind(loopback()).await?;
            let addr = listener.local_addr()?;
            let listener = listener.tap_io(|stream| {
                let _ = stream.set_nodelay(true);
            });
            // `into_make_service` prepares the routes once; `serve(listener, router)` would
            // do it again for every connection (O(routes) each: ~10 ms and ~10 MiB per
            // connection with 10,000 routes).
            let app = axum_ref::app(many_routes).into_make_service();
            let task = tokio::spawn(async move {
                let _ = axum::serve(listener, app).await;
            });
            Ok(Running {
                addr,
                handle: Handle::Task(task),
            })
        }
        ServerKind::Strata => {
            start_strata(
                &strata_app::config(loopback()),
                &strata_app::routing(many_routes),
            )
            .await
        }
    }
}

/// Starts the server of `strata-bench soak` on 127.0.0.1 and a port the system picks. Call from
/// a tokio runtime.
pub(crate) async fn start_soak() -> io::Result<Running> {
    start_strata(&soak_app::config(loopback()), &soak_app::routing()).await
}

async fn start_strata(
    config: &strata::ServerConfig,
    routing: &strata::Routing,
) -> io::Result<Running> {
    let server = strata::create_server(config, routing)
        .await
        .map_err(io::Error::other)?;
    let addr = server
        .servers()
        .iter()
        .find_map(|listening| match &listening.local_addr {
            strata::LocalAddr::Tcp(addr) => Some(*addr),
            strata::LocalAddr::Unix(_) => None,
        })
        .ok_or_else(|| io::Error::other("Strata listens on no TCP address"))?;
    Ok(Running {
        addr,
        handle: Handle::Strata(Box::new(server)),
    })
}
