//! The three Rust servers (hyper, axum, Strata), started in this process on a loopback port.

pub(crate) mod axum_ref;
pub(crate) mod client_app;
pub(crate) mod fanout_app;
pub(crate) mod hyper_ref;
pub(crate) mod middleware_app;
pub(crate) mod protocols_app;
pub(crate) mod soak_app;
pub(crate) mod strata_app;
pub(crate) mod upload_app;

use std::io;
use std::net::SocketAddr;

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
    /// Strata and a task of its own (the fan-out's publisher), stopped with it.
    StrataWithTask(Box<strata::Server>, JoinHandle<()>),
}

impl Running {
    /// Stops accepting connections.
    pub(crate) async fn stop(self) {
        match self.handle {
            Handle::Task(task) => task.abort(),
            Handle::Strata(server) => server.shutdown().await,
            Handle::StrataWithTask(server, task) => {
                task.abort();
                server.shutdown().await;
            }
        }
    }
}

pub(crate) fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// Starts `kind` with the routes of every scenario (and the 10,000 generated ones when
/// `many_routes`) on 127.0.0.1 and a port the system picks. Call from a tokio runtime.
pub(crate) async fn start(kind: ServerKind, many_routes: bool) -> io::Result<Running> {
    match kind {
        ServerKind::Hyper => {
            let (addr, task) = hyper_ref::spawn(loopback(), many_routes).await?;
            Ok(Running {
                addr,
                handle: Handle::Task(task),
            })
        }
        ServerKind::Axum => {
            let (addr, task) = axum_ref::spawn(loopback(), many_routes).await?;
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
        ServerKind::ExpressZodApi | ServerKind::QuickStart => Err(io::Error::other(format!(
            "{kind} is another program, not served by this binary"
        ))),
    }
}

/// The body of the fixed-bytes server's answer: what the others answer to `hello`.
const FIXED_BODY: &str = r#"{"status":"success","data":{"greetings":"Hello, World"}}"#;

/// Starts the ceiling reference (`strata-bench serve fixed`): no HTTP stack, no routing, every
/// request (bodiless, pipelining allowed) answered with the same bytes. What the load generator
/// gets out of it is the most it can measure on this machine: a server measured close to it is
/// measured against the generator, not on its own. Call from a tokio runtime.
pub(crate) async fn start_fixed() -> io::Result<Running> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let response: std::sync::Arc<[u8]> = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{FIXED_BODY}",
        FIXED_BODY.len()
    )
    .into_bytes()
    .into();
    let listener = TcpListener::bind(loopback()).await?;
    let addr = listener.local_addr()?;
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let response = std::sync::Arc::clone(&response);
            tokio::spawn(async move {
                let (mut pending, mut out) = (Vec::with_capacity(4096), Vec::new());
                let mut chunk = [0u8; 4096];
                loop {
                    let Ok(n) = stream.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    pending.extend_from_slice(&chunk[..n]);
                    // Each complete head is a request; keep a partial one for the next read.
                    let mut start = 0;
                    while let Some(end) = pending[start..].windows(4).position(|w| w == b"\r\n\r\n")
                    {
                        start += end + 4;
                        out.extend_from_slice(&response);
                    }
                    pending.drain(..start);
                    if !out.is_empty() {
                        if stream.write_all(&out).await.is_err() {
                            return;
                        }
                        out.clear();
                    }
                }
            });
        }
    });
    Ok(Running {
        addr,
        handle: Handle::Task(task),
    })
}

/// Starts the server of `strata-bench soak` on 127.0.0.1 and a port the system picks. Call from
/// a tokio runtime.
pub(crate) async fn start_soak() -> io::Result<Running> {
    start_strata(&soak_app::config(loopback()), &soak_app::routing()).await
}

/// Starts the server of `strata-bench client` on 127.0.0.1 and a port the system picks. Call
/// from a tokio runtime.
pub(crate) async fn start_client_app() -> io::Result<Running> {
    start_strata(&strata_app::config(loopback()), &client_app::routing()).await
}

/// Starts a server of `strata-bench middleware` (hello alone, with no middleware or behind
/// one) on 127.0.0.1 and a port the system picks; a traced one exports to the OTLP endpoint
/// `otlp`. Call from a tokio runtime.
pub(crate) async fn start_middleware(
    server: crate::middleware::Server,
    otlp: Option<&str>,
) -> io::Result<Running> {
    use crate::middleware::Server;
    let mut config = strata_app::config(loopback());
    if matches!(
        server,
        Server::Metrics | Server::Tracing0 | Server::Tracing1
    ) {
        config.server.metrics = Some(strata::Metrics::new());
    }
    if let Some(ratio) = server.sample_ratio() {
        let endpoint =
            otlp.ok_or_else(|| io::Error::other(format!("{server}: no OTLP endpoint (--otlp)")))?;
        #[cfg(feature = "otel")]
        {
            config.server.tracing = Some(
                strata::Tracing::otlp(endpoint)
                    .service_name("strata-bench")
                    .sample_ratio(ratio),
            );
        }
        #[cfg(not(feature = "otel"))]
        return Err(io::Error::other(format!(
            "{server} (ratio {ratio}, {endpoint}) needs strata-bench built with its `otel` \
             feature (on by default)"
        )));
    }
    start_strata(&config, &middleware_app::routing(server)).await
}

/// Starts `kind`'s server of `strata-bench uploads` in `mode` (`upload_app.rs`) on 127.0.0.1
/// and a port the system picks. Call from a tokio runtime.
pub(crate) async fn start_upload(kind: ServerKind, mode: upload_app::Mode) -> io::Result<Running> {
    if !mode.servers().contains(&kind) || !kind.in_process() {
        return Err(io::Error::other(format!(
            "{kind} has no {mode} upload server here"
        )));
    }
    let (addr, task) = match kind {
        ServerKind::Strata => {
            return start_strata(
                &upload_app::strata_config(loopback()),
                &upload_app::strata_routing(mode),
            )
            .await;
        }
        ServerKind::Axum => upload_app::spawn_axum(loopback(), mode).await?,
        _ => upload_app::spawn_hyper(loopback()).await?,
    };
    Ok(Running {
        addr,
        handle: Handle::Task(task),
    })
}

/// Starts `kind`'s server of `strata-bench fanout` (`fanout_app.rs`, Strata or axum) on
/// 127.0.0.1 and a port the system picks, with its publisher. Call from a tokio runtime.
pub(crate) async fn start_fanout(kind: ServerKind) -> io::Result<Running> {
    match kind {
        ServerKind::Strata => {
            let (routing, publishing) = fanout_app::strata_routing();
            let (addr, server) =
                strata_app::serve(&fanout_app::strata_config(loopback()), &routing).await?;
            Ok(Running {
                addr,
                handle: Handle::StrataWithTask(Box::new(server), tokio::spawn(publishing)),
            })
        }
        ServerKind::Axum => {
            let (addr, task) = fanout_app::spawn_axum(loopback()).await?;
            Ok(Running {
                addr,
                handle: Handle::Task(task),
            })
        }
        other => Err(io::Error::other(format!("{other} has no fan-out server"))),
    }
}

async fn start_strata(config: &strata::Config, routing: &strata::Routing) -> io::Result<Running> {
    let (addr, server) = strata_app::serve(config, routing).await?;
    Ok(Running {
        addr,
        handle: Handle::Strata(Box::new(server)),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::scenario::Scenario;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_fixed_server_answers_every_request_with_a_200() {
        let running = super::start_fixed().await.unwrap();
        let request: Arc<[u8]> = Scenario::Hello.request().to_http1().into();
        // `run` fails on any other status or a malformed response.
        let result = crate::load::run(running.addr, request, 200, 2, Duration::from_millis(200))
            .await
            .unwrap();
        assert!(result.requests > 10, "{} requests", result.requests);
        running.stop().await;
    }
}
