//! Connection metrics over real sockets on 127.0.0.1:0: connections open, accepted and
//! closed by each policing reason, and the refusals answered before the router (by hyper, the
//! connection, the application's layers, the shutdown) counted with the router's.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use garde::Validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::prelude::*;
use strata::server::{LocalAddr, ServerLimits};
use strata::{Metrics, Routing};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[path = "common/probe.rs"]
mod probe;
use probe::Started;

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
struct Greeting {
    #[garde(length(min = 1, max = 8))]
    name: String,
}

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
struct Nothing {}

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Big {
    text: String,
}

/// Bytes of `GET /big`'s text: more than the socket buffers of both ends hold.
const BIG: usize = 16 * 1024 * 1024;

/// `GET /hello`, `POST /echo`, and `GET /wait`, which waits until `held` is released.
fn routing(held: &Started) -> Routing {
    let hello = default_endpoints_factory()
        .get()
        .handler(async |_: Nothing| Ok(Nothing {}));
    let echo = default_endpoints_factory()
        .post()
        .handler(async |input: Greeting| Ok(input));
    let wait = default_endpoints_factory().get().handler({
        let held = held.clone();
        move |_: Nothing| {
            held.mark();
            let held = held.clone();
            async move {
                held.hold().await;
                Ok(Nothing {})
            }
        }
    });
    let big = default_endpoints_factory()
        .get()
        .handler(async |_: Nothing| {
            Ok(Big {
                text: "x".repeat(BIG),
            })
        });
    routing! { "hello" => hello, "echo" => echo, "wait" => wait, "big" => big }
}

/// A server on 127.0.0.1:0 with `limits`, its metrics, and its address.
async fn serve(limits: ServerLimits, held: &Started) -> (strata::Server, Metrics, SocketAddr) {
    let metrics = Metrics::new();
    let config = create_config()
        .cors(Cors::Disabled)
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .limits(limits)
        .metrics(metrics.clone())
        .build();
    let server = create_server(&config, &routing(held)).await.unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    (server, metrics, addr)
}

/// The exposition's samples: each series (name and labels, as written) and its value.
fn samples(metrics: &Metrics) -> BTreeMap<String, String> {
    metrics
        .encode()
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').unwrap();
            (series.to_owned(), value.to_owned())
        })
        .collect()
}

fn value(metrics: &Metrics, series: &str) -> Option<String> {
    samples(metrics).get(series).cloned()
}

fn closed(reason: &str) -> String {
    format!("strata_http_connections_closed_total{{reason=\"{reason}\"}}")
}

fn refusals(reason: &str) -> String {
    format!("strata_http_refusals_total{{reason=\"{reason}\"}}")
}

/// Probes the exposition (every 10 ms, at most 10 s) until `series` has `expected`.
async fn wait_for(metrics: &Metrics, series: &str, expected: &str) {
    let start = Instant::now();
    while value(metrics, series).as_deref() != Some(expected) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{series} is not {expected}:\n{}",
            metrics.encode()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Sends `request` on `stream` and reads one response: its status and head.
async fn exchange(stream: &mut TcpStream, request: &str) -> (u16, String) {
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut byte = [0; 1];
    while !answer.ends_with(b"\r\n\r\n") {
        assert_eq!(
            stream.read(&mut byte).await.unwrap(),
            1,
            "the head ended early"
        );
        answer.push(byte[0]);
    }
    let head = String::from_utf8(answer).unwrap();
    let length: usize = head
        .lines()
        .find_map(|line| {
            line.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(str::to_owned)
        })
        .map_or(0, |length| length.trim().parse().unwrap());
    let mut body = vec![0; length];
    stream.read_exact(&mut body).await.unwrap();
    (head[9..12].parse().unwrap(), head)
}

const HELLO: &str = "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n";

/// Reads until the server closes `stream` (or resets it).
async fn until_closed(mut stream: TcpStream) {
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest).await;
}

#[tokio::test]
async fn connections_are_counted_open_accepted_and_closed_when_the_client_closes() {
    let held = Started::default();
    let (server, metrics, addr) = serve(ServerLimits::default(), &held).await;
    let mut clients = Vec::new();
    for _ in 0..3 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        assert_eq!(exchange(&mut stream, HELLO).await.0, 200);
        clients.push(stream);
    }
    assert_eq!(
        value(&metrics, "strata_http_connections_accepted_total").as_deref(),
        Some("3")
    );
    assert_eq!(
        value(&metrics, "strata_http_connections_open").as_deref(),
        Some("3")
    );
    drop(clients);
    wait_for(&metrics, &closed("ended"), "3").await;
    assert_eq!(
        value(&metrics, "strata_http_connections_open").as_deref(),
        Some("0")
    );
    server.shutdown().await;
}

/// A client that sends nothing, a head too large, a head hyper cannot parse, a request
/// without `Host`: each closed (or refused) for its reason.
#[tokio::test]
async fn heads_late_too_large_or_malformed_are_counted_closed_and_refused() {
    let held = Started::default();
    let limits = ServerLimits::default().header_read_timeout(Some(Duration::from_millis(200)));
    let (server, metrics, addr) = serve(limits, &held).await;
    // Nothing at all.
    until_closed(TcpStream::connect(addr).await.unwrap()).await;
    wait_for(&metrics, &closed("header_timeout"), "1").await;
    // A head past the 64 KiB of headers: hyper's 431.
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let large = format!(
        "GET /hello HTTP/1.1\r\nHost: a\r\nX-Large: {}\r\n\r\n",
        "x".repeat(70 * 1024)
    );
    let _ = stream.write_all(large.as_bytes()).await;
    until_closed(stream).await;
    wait_for(&metrics, &closed("header_too_large"), "1").await;
    assert_eq!(
        value(&metrics, &refusals("header_too_large")).as_deref(),
        Some("1")
    );
    // A header line without a colon: hyper's 400.
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /hello HTTP/1.1\r\nHost: a\r\nno colon\r\n\r\n")
        .await
        .unwrap();
    until_closed(stream).await;
    wait_for(&metrics, &closed("bad_request"), "1").await;
    // No `Host`: the connection's own 400; the connection stays open.
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let (status, _) = exchange(&mut stream, "GET /hello HTTP/1.1\r\n\r\n").await;
    assert_eq!(status, 400);
    assert_eq!(
        value(&metrics, &refusals("bad_request")).as_deref(),
        Some("2")
    );
    // None of them reached the router.
    assert!(
        !metrics.encode().contains("strata_http_requests_total{"),
        "{}",
        metrics.encode()
    );
    drop(stream);
    wait_for(&metrics, &closed("ended"), "1").await;
    assert_eq!(
        value(&metrics, "strata_http_connections_accepted_total").as_deref(),
        Some("4")
    );
    server.shutdown().await;
}

/// A body too slow gets a 408 and its connection closes; a body too large, a 413 before it is
/// read, and the same. Their refusals are the router's, counted once.
#[tokio::test]
async fn bodies_too_slow_or_too_large_close_their_connections_for_their_reason() {
    let held = Started::default();
    let limits = ServerLimits::default().body_idle_timeout(Some(Duration::from_millis(200)));
    let (server, metrics, addr) = serve(limits, &held).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let slow = "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n\
                Content-Length: 100\r\n\r\n{\"name\":";
    let (status, answer) = exchange(&mut stream, slow).await;
    assert_eq!(status, 408, "{answer}");
    until_closed(stream).await;
    wait_for(&metrics, &closed("body_timeout"), "1").await;
    assert_eq!(
        value(&metrics, &refusals("timeout")).as_deref(),
        Some("1"),
        "{}",
        metrics.encode()
    );

    let mut stream = TcpStream::connect(addr).await.unwrap();
    let large = "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n\
                 Content-Length: 100000000\r\n\r\n";
    let (status, answer) = exchange(&mut stream, large).await;
    assert_eq!(status, 413, "{answer}");
    until_closed(stream).await;
    wait_for(&metrics, &closed("payload_too_large"), "1").await;
    assert_eq!(
        value(&metrics, &refusals("payload_too_large")).as_deref(),
        Some("1")
    );
    server.shutdown().await;
}

/// An idle connection closed at the idle timeout, one closed to make room at the cap, one
/// past its address's share, one open at shutdown.
#[tokio::test]
async fn idle_shed_over_its_share_and_shut_down_connections_are_counted_so() {
    let held = Started::default();
    // Idle: the idle timeout before the header-read timeout.
    let limits = ServerLimits::default().idle_timeout(Some(Duration::from_millis(200)));
    let (server, metrics, addr) = serve(limits, &held).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    assert_eq!(exchange(&mut stream, HELLO).await.0, 200);
    until_closed(stream).await;
    wait_for(&metrics, &closed("idle"), "1").await;
    server.shutdown().await;

    // At a cap of one connection, the idle one makes room for the next.
    let limits = ServerLimits::default().max_connections(Some(1));
    let (server, metrics, addr) = serve(limits, &held).await;
    let mut first = TcpStream::connect(addr).await.unwrap();
    assert_eq!(exchange(&mut first, HELLO).await.0, 200);
    let mut second = TcpStream::connect(addr).await.unwrap();
    assert_eq!(exchange(&mut second, HELLO).await.0, 200);
    until_closed(first).await;
    wait_for(&metrics, &closed("shed"), "1").await;
    // Open at shutdown: closed for it.
    server.shutdown().await;
    assert_eq!(value(&metrics, &closed("shutdown")).as_deref(), Some("1"));
    assert_eq!(
        value(&metrics, "strata_http_connections_open").as_deref(),
        Some("0")
    );
    drop(second);

    // One connection per address: the second is closed once accepted.
    let limits = ServerLimits::default()
        .max_connections(Some(8))
        .max_connections_per_client(Some(1));
    let (server, metrics, addr) = serve(limits, &held).await;
    let mut first = TcpStream::connect(addr).await.unwrap();
    assert_eq!(exchange(&mut first, HELLO).await.0, 200);
    until_closed(TcpStream::connect(addr).await.unwrap()).await;
    wait_for(&metrics, &closed("client_share"), "1").await;
    assert_eq!(
        value(&metrics, "strata_http_connections_accepted_total").as_deref(),
        Some("2")
    );
    assert_eq!(
        value(&metrics, "strata_http_connections_open").as_deref(),
        Some("1")
    );
    server.shutdown().await;
}

/// The application's timeout layer answers 504, a request its concurrency limit does not take
/// within the admission timeout a 503, and a request unanswered at the shutdown timeout gets a
/// 503: each counted as a refusal, the connection of the last closed at the shutdown timeout.
#[tokio::test]
async fn refusals_of_the_applications_layers_and_the_shutdown_timeout_are_counted() {
    let held = Started::default();
    let metrics = Metrics::new();
    let config = create_config()
        .cors(Cors::Disabled)
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .limits(ServerLimits::default().shutdown_timeout(Some(Duration::from_millis(100))))
        .metrics(metrics.clone())
        .build();
    let layers = tower::ServiceBuilder::new().timeout(Duration::from_millis(100));
    let server = create_server(&config, &routing(&held))
        .layers(layers)
        .await
        .unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let wait = "GET /wait HTTP/1.1\r\nHost: a\r\n\r\n";
    assert_eq!(exchange(&mut stream, wait).await.0, 504);
    assert_eq!(
        value(&metrics, &refusals("gateway_timeout")).as_deref(),
        Some("1")
    );
    drop(stream);
    server.shutdown().await;

    // A concurrency limit of one, held: the next request is not taken within the admission
    // timeout.
    let metrics = Metrics::new();
    let config = create_config()
        .cors(Cors::Disabled)
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .limits(
            ServerLimits::default()
                .admission_timeout(Some(Duration::from_millis(100)))
                .shutdown_timeout(Some(Duration::from_millis(100))),
        )
        .metrics(metrics.clone())
        .build();
    let layers = tower::ServiceBuilder::new().concurrency_limit(1);
    let server = create_server(&config, &routing(&held))
        .layers(layers)
        .await
        .unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    let mut holding = TcpStream::connect(addr).await.unwrap();
    holding.write_all(wait.as_bytes()).await.unwrap();
    held.reached(2).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    assert_eq!(exchange(&mut stream, HELLO).await.0, 503);
    assert_eq!(value(&metrics, &refusals("overload")).as_deref(), Some("1"));
    drop((holding, stream));
    server.shutdown().await;

    // Without the timeout layer: held past the shutdown timeout.
    let (server, metrics, addr) = serve(
        ServerLimits::default().shutdown_timeout(Some(Duration::from_millis(100))),
        &held,
    )
    .await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(wait.as_bytes()).await.unwrap();
    held.reached(3).await;
    let stopping = tokio::spawn(server.shutdown());
    let (status, _) = exchange(&mut stream, "").await;
    assert_eq!(status, 503);
    stopping.await.unwrap();
    assert_eq!(
        value(&metrics, &refusals("unavailable")).as_deref(),
        Some("1"),
        "{}",
        metrics.encode()
    );
    assert_eq!(
        value(&metrics, &closed("shutdown_timeout")).as_deref(),
        Some("1"),
        "{}",
        metrics.encode()
    );
}

/// A client that speaks plain HTTP to an HTTPS listener fails its TLS handshake.
#[cfg(feature = "tls")]
#[tokio::test]
async fn a_failed_tls_handshake_is_counted_so() {
    use strata::server::Pem;
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let held = Started::default();
    let metrics = Metrics::new();
    let config = create_config()
        .cors(Cors::Disabled)
        .https(
            Pem::Bytes(generated.cert.pem().into_bytes()),
            Pem::Bytes(generated.signing_key.serialize_pem().into_bytes()),
            SocketAddr::from(([127, 0, 0, 1], 0)),
        )
        .metrics(metrics.clone())
        .build();
    let server = create_server(&config, &routing(&held)).await.unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(HELLO.as_bytes()).await.unwrap();
    until_closed(stream).await;
    wait_for(&metrics, &closed("tls_handshake"), "1").await;
    assert_eq!(
        value(&metrics, "strata_http_connections_accepted_total").as_deref(),
        Some("1")
    );
    server.shutdown().await;
}

/// A client that does not read its response: dropped at the write timeout.
#[tokio::test]
async fn a_connection_whose_responses_make_no_progress_is_counted_stalled() {
    let held = Started::default();
    let limits = ServerLimits::default().write_timeout(Some(Duration::from_millis(300)));
    let (server, metrics, addr) = serve(limits, &held).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /big HTTP/1.1\r\nHost: a\r\n\r\n")
        .await
        .unwrap();
    wait_for(&metrics, &closed("stalled"), "1").await;
    drop(stream);
    server.shutdown().await;
}
