//! The OTLP/HTTP receiver of `strata-bench middleware`'s traced servers (`tracing-0`,
//! `tracing-1`): a tiny HTTP/1.1 server on 127.0.0.1, on a thread of its own, that answers 200
//! to each `POST <prefix>/v1/traces` and counts, per prefix (one per traced server), the posts,
//! their bytes and the spans in them (decoded with the OpenTelemetry protocol's definitions).
//! The servers' exporters pay the real cost of exporting (encoding, the HTTP round trip), with
//! no collector to install.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message as _;
use serde::Serialize;
use tokio::net::TcpListener;

/// What one traced server exported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Exported {
    /// Posts to `<prefix>/v1/traces`.
    pub(crate) posts: u64,
    /// Their bodies' bytes.
    pub(crate) bytes: u64,
    /// The spans in them.
    pub(crate) spans: u64,
}

#[derive(Default)]
struct Counts {
    /// By prefix (`/tracing-1`).
    by_prefix: HashMap<String, Exported>,
    /// Posts that were not an export a server of ours made: their path, or why they failed.
    refused: Vec<String>,
}

#[derive(Default)]
struct Shared {
    counts: Mutex<Counts>,
    /// Notified at each post.
    posted: Condvar,
}

/// The receiver, serving until the process ends.
pub(crate) struct Sink {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Sink {
    /// Starts the receiver on 127.0.0.1 and a port the system picks.
    pub(crate) fn start() -> Result<Self, String> {
        let shared = Arc::new(Shared::default());
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")
            .map_err(|e| format!("OTLP sink: bind: {e}"))?;
        let addr = std_listener
            .local_addr()
            .map_err(|e| format!("OTLP sink: {e}"))?;
        std_listener
            .set_nonblocking(true)
            .map_err(|e| format!("OTLP sink: {e}"))?;
        let kept = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("otlp-sink".to_owned())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap_or_else(|e| panic!("OTLP sink: runtime: {e}"));
                runtime.block_on(serve(std_listener, kept));
            })
            .map_err(|e| format!("OTLP sink: thread: {e}"))?;
        Ok(Self { addr, shared })
    }

    /// The OTLP endpoint (base URL) of the server named `name`: its exports are counted apart.
    pub(crate) fn endpoint(&self, name: &str) -> String {
        format!("http://{}/{name}", self.addr)
    }

    /// What the server named `name` exported so far.
    pub(crate) fn exported(&self, name: &str) -> Exported {
        self.lock()
            .by_prefix
            .get(&prefix(name))
            .copied()
            .unwrap_or_default()
    }

    /// Waits until the server named `name` has exported at least `spans` spans, for at most
    /// `timeout` (a batch exporter posts every few seconds, or when its batch is full).
    pub(crate) fn wait_for_spans(
        &self,
        name: &str,
        spans: u64,
        timeout: Duration,
    ) -> Result<Exported, String> {
        let deadline = Instant::now() + timeout;
        let mut counts = self.lock();
        loop {
            if let Some(refused) = counts.refused.first() {
                return Err(format!("OTLP sink: refused a post: {refused}"));
            }
            let exported = counts
                .by_prefix
                .get(&prefix(name))
                .copied()
                .unwrap_or_default();
            if exported.spans >= spans {
                return Ok(exported);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!(
                    "{name}: {} span(s) exported in {timeout:?}, expected at least {spans}",
                    exported.spans
                ));
            }
            counts = self
                .shared
                .posted
                .wait_timeout(counts, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Posts that were not a traced server's export, if any (a wrong path, an undecodable body).
    pub(crate) fn refused(&self) -> Vec<String> {
        self.lock().refused.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.shared
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

fn prefix(name: &str) -> String {
    format!("/{name}")
}

async fn serve(listener: std::net::TcpListener, shared: Arc<Shared>) {
    let Ok(listener) = TcpListener::from_std(listener) else {
        return;
    };
    while let Ok((stream, _)) = listener.accept().await {
        let shared = Arc::clone(&shared);
        let service =
            hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
                let shared = Arc::clone(&shared);
                async move {
                    let path = request.uri().path().to_owned();
                    let body = request
                        .into_body()
                        .collect()
                        .await
                        .map(http_body_util::Collected::to_bytes);
                    let status = record(&shared, &path, body);
                    let response = http::Response::builder()
                        .status(status)
                        .header("content-type", "application/x-protobuf")
                        .body(Full::new(Bytes::new()))
                        .unwrap_or_default();
                    Ok::<_, Infallible>(response)
                }
            });
        tokio::spawn(
            hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service),
        );
    }
}

/// Counts one post; the status to answer it with.
fn record(shared: &Shared, path: &str, body: Result<Bytes, hyper::Error>) -> u16 {
    let decoded = body.map_err(|e| e.to_string()).and_then(|body| {
        let spans = ExportTraceServiceRequest::decode(body.clone())
            .map_err(|e| e.to_string())?
            .resource_spans
            .iter()
            .flat_map(|resource| &resource.scope_spans)
            .map(|scope| scope.spans.len() as u64)
            .sum::<u64>();
        Ok((body.len() as u64, spans))
    });
    let mut counts = shared.counts.lock().unwrap_or_else(PoisonError::into_inner);
    let status = match (path.strip_suffix("/v1/traces"), decoded) {
        (Some(prefix), Ok((bytes, spans))) => {
            let exported = counts.by_prefix.entry(prefix.to_owned()).or_default();
            exported.posts += 1;
            exported.bytes += bytes;
            exported.spans += spans;
            200
        }
        (None, _) => {
            counts
                .refused
                .push(format!("{path}: not /<server>/v1/traces"));
            404
        }
        (Some(_), Err(error)) => {
            counts.refused.push(format!("{path}: {error}"));
            400
        }
    };
    drop(counts);
    shared.posted.notify_all();
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A traced server's spans arrive, counted under its own name; another name has none.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn counts_the_spans_of_each_server_apart() {
        let sink = Sink::start().unwrap();
        let server = crate::servers::start_middleware(
            crate::middleware::Server::Tracing1,
            Some(&sink.endpoint("tracing-1")),
        )
        .await
        .unwrap();
        let answer =
            crate::preflight::send(server.addr, &crate::middleware::Variant::Tracing1.request())
                .await
                .unwrap();
        assert_eq!(answer.status(), 200);
        // Shutting down flushes the exporter: the server's span and its handler's.
        server.stop().await;
        let exported = sink.exported("tracing-1");
        assert_eq!(exported.spans, 2, "{exported:?}");
        assert!(exported.posts >= 1 && exported.bytes > 0, "{exported:?}");
        assert_eq!(sink.exported("tracing-0"), Exported::default());
        assert!(sink.refused().is_empty(), "{:?}", sink.refused());
    }
}
