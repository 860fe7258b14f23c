//! Request metrics: over real sockets on 127.0.0.1:0, a known mix of requests gives exact
//! counters by route template, method and status, refusals by reason and body bytes; label
//! cardinality stays bounded whatever paths, query strings and methods clients send; and the
//! metrics of a routing attached to an application of its own, mounted in axum.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::collections::BTreeMap;
use std::net::SocketAddr;

use garde::Validate;
use http_body_util::BodyExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::prelude::*;
use strata::{Metrics, Routing};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

#[path = "common/probe.rs"]
mod probe;
use probe::Started;

#[derive(Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct BookId {
    id: String,
}

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
struct Greeting {
    #[garde(length(min = 1, max = 8))]
    name: String,
}

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Book {
    id: String,
    title: String,
}

fn routing() -> Routing {
    let book = default_endpoints_factory()
        .get()
        .handler(async |input: BookId| {
            Ok(Book {
                title: format!("Book {}", input.id),
                id: input.id,
            })
        });
    let hello = default_endpoints_factory()
        .get()
        .handler(async |input: Greeting| Ok(input));
    let echo = default_endpoints_factory()
        .post()
        .handler(async |input: Greeting| Ok(input));
    routing! {
        "v1" => {
            "books" => { ":id" => book },
            "hello" => hello,
            "echo" => echo,
        },
    }
}

/// Sends `request` (a whole HTTP/1.1 request) on a connection of its own: the status code and
/// the body.
async fn send(addr: SocketAddr, request: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let (_, body) = answer.split_once("\r\n\r\n").unwrap();
    (status, body.to_owned())
}

async fn request(addr: SocketAddr, method: &str, path: &str) -> (u16, String) {
    send(
        addr,
        &format!("{method} {path} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"),
    )
    .await
}

/// The exposition's samples: each series (name and labels, as written) and its value.
fn samples(exposition: &str) -> BTreeMap<String, String> {
    exposition
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').unwrap();
            (series.to_owned(), value.to_owned())
        })
        .collect()
}

/// The body of the one well-formed POST.
const ECHOED: &str = r#"{"name":"carl"}"#;

/// The known mix: eleven requests, their statuses checked; the bytes of the three book
/// answers read.
async fn send_the_mix(addr: SocketAddr) -> usize {
    let mut book_bytes = 0;
    for id in ["1", "2", "three"] {
        let (status, body) = request(addr, "GET", &format!("/v1/books/{id}")).await;
        assert_eq!(status, 200, "{body}");
        book_bytes += body.len();
    }
    // A trailing slash is the same route.
    assert_eq!(request(addr, "GET", "/v1/books/4/").await.0, 200);
    for name in ["ann", "bob"] {
        assert_eq!(
            request(addr, "GET", &format!("/v1/hello?name={name}"))
                .await
                .0,
            200
        );
    }
    assert_eq!(request(addr, "GET", "/v1/nowhere").await.0, 404);
    assert_eq!(request(addr, "DELETE", "/v1/hello").await.0, 405);
    assert_eq!(
        request(addr, "GET", "/v1/hello?name=far-too-long").await.0,
        400
    );
    let json = ECHOED;
    let (status, _) = send(
        addr,
        &format!(
            "POST /v1/echo HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{json}",
            json.len()
        ),
    )
    .await;
    assert_eq!(status, 200);
    // A malformed body: refused by the parse stage.
    let (status, _) = send(
        addr,
        "POST /v1/echo HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: 1\r\n\r\n{",
    )
    .await;
    assert_eq!(status, 400);

    book_bytes
}

/// A server on 127.0.0.1:0 with metrics at `/metrics`.
async fn serve() -> (strata::Server, SocketAddr) {
    let config = create_config()
        .cors(Cors::Enabled)
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .metrics(Metrics::new())
        .build();
    let server = create_server(&config, &routing()).await.unwrap();
    let strata::server::LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    (server, addr)
}

#[tokio::test]
async fn a_known_mix_of_requests_gives_exact_counters_by_route_method_and_status() {
    let (server, addr) = serve().await;
    let book_bytes = send_the_mix(addr).await;
    // As Prometheus asks for it.
    let (status, exposition) = send(
        addr,
        "GET /metrics HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\
         Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n\r\n",
    )
    .await;
    assert_eq!(status, 200);
    assert!(exposition.ends_with("# EOF\n"), "{exposition}");
    let samples = samples(&exposition);
    let value = |series: &str| samples.get(series).map(String::as_str);
    let requests = |route: &str, method: &str, status: u16| {
        value(&format!(
            "strata_http_requests_total{{route=\"{route}\",method=\"{method}\",status=\"{status}\"}}"
        ))
    };
    assert_eq!(requests("/v1/books/:id", "GET", 200), Some("4"));
    assert_eq!(requests("/v1/hello", "GET", 200), Some("2"));
    assert_eq!(requests("/v1/hello", "GET", 400), Some("1"));
    assert_eq!(requests("/v1/hello", "DELETE", 405), Some("1"));
    assert_eq!(requests("(unmatched)", "GET", 404), Some("1"));
    assert_eq!(requests("/v1/echo", "POST", 200), Some("1"));
    assert_eq!(requests("/v1/echo", "POST", 400), Some("1"));
    let total: u64 = samples
        .iter()
        .filter(|(series, _)| series.starts_with("strata_http_requests_total{"))
        .map(|(_, count)| count.parse::<u64>().unwrap())
        .sum();
    assert_eq!(
        total, 11,
        "neither the exposition nor anything else counted: {exposition}"
    );

    let refusals = |reason: &str| {
        value(&format!(
            "strata_http_refusals_total{{reason=\"{reason}\"}}"
        ))
    };
    assert_eq!(refusals("not_found"), Some("1"));
    assert_eq!(refusals("method_not_allowed"), Some("1"));
    assert_eq!(refusals("validation"), Some("1"));
    assert_eq!(refusals("parse"), Some("1"));

    let duration = |route: &str, method: &str, what: &str| {
        value(&format!(
            "strata_http_request_duration_seconds_{what}{{route=\"{route}\",method=\"{method}\"}}"
        ))
    };
    assert_eq!(duration("/v1/books/:id", "GET", "count"), Some("4"));
    assert_eq!(duration("/v1/hello", "GET", "count"), Some("3"));
    assert_eq!(
        value(
            "strata_http_request_duration_seconds_bucket{le=\"+Inf\",route=\"/v1/hello\",method=\"GET\"}"
        ),
        Some("3")
    );
    assert_eq!(value("strata_http_requests_in_flight"), Some("0"));

    // Three of the four book answers were read above; the fourth has the same shape.
    let fourth = r#"{"status":"success","data":{"id":"4","title":"Book 4"}}"#.len();
    assert_eq!(
        value("strata_http_response_body_bytes_total{route=\"/v1/books/:id\",method=\"GET\"}"),
        Some((book_bytes + fourth).to_string().as_str())
    );
    // The one well-formed body and the one byte of the malformed one.
    assert_eq!(
        value("strata_http_request_body_bytes_total{route=\"/v1/echo\",method=\"POST\"}"),
        Some((ECHOED.len() + 1).to_string().as_str())
    );
    server.shutdown().await;
}

/// The series of `service`'s exposition at `/metrics`: each sample's name and labels.
async fn exposition_series<S>(service: &S) -> std::collections::BTreeSet<String>
where
    S: tower::Service<
            http::Request<String>,
            Response = http::Response<strata::core::Body>,
            Error = std::convert::Infallible,
        > + Clone,
{
    let request = http::Request::get("/metrics").body(String::new()).unwrap();
    let response = service.clone().oneshot(request).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    samples(std::str::from_utf8(&body).unwrap())
        .into_keys()
        .collect()
}

/// Every series a client can make (the issue's figures: 100,000 unknown paths, 10,000 query
/// strings; and 1,000 made-up methods) adds no series to an exposition that has seen one
/// request of each kind.
#[tokio::test]
async fn distinct_paths_queries_and_methods_leave_the_series_bounded() {
    let config = create_config()
        .cors(Cors::Enabled)
        .metrics(Metrics::new())
        .build();
    let service = strata::attach_routing(&config, &routing()).unwrap().service;
    let call = |method: &str, path: &str| {
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .body(String::new())
            .unwrap();
        let service = service.clone();
        async move { service.oneshot(request).await.unwrap().status().as_u16() }
    };
    // One of each kind first: the series that exist whatever comes next.
    assert_eq!(call("GET", "/unknown/0").await, 404);
    assert_eq!(call("GET", "/v1/hello?name=a").await, 200);
    assert_eq!(call("GET", "/v1/books/0?q=0").await, 200);
    assert_eq!(call("BREW", "/v1/hello").await, 405);
    assert_eq!(call("BREW", "/unknown/0").await, 404);
    let before = exposition_series(&service).await;
    let requests = before
        .iter()
        .filter(|series| series.starts_with("strata_http_requests_total{"))
        .count();
    assert_eq!(requests, 5, "{before:#?}");
    for i in 0..100_000 {
        // Paths of every shape: deep, percent-encoded, long.
        let path = match i % 4 {
            0 => format!("/unknown/{i}"),
            1 => format!("/v1/books/{i}/x/{i}"),
            2 => format!("/%F0%9F%A6%80{i}/%20/{i}"),
            _ => format!("/{}{i}", "a".repeat(200)),
        };
        assert_eq!(call("GET", &path).await, 404, "{path}");
    }
    for i in 0..10_000 {
        let query = format!("name=a&q{i}={i}&%F0%9F%A6%80={i}");
        assert_eq!(call("GET", &format!("/v1/hello?{query}")).await, 200);
        assert_eq!(call("GET", &format!("/v1/books/{i}?{query}")).await, 200);
        assert_eq!(call("GET", &format!("/unknown?{query}")).await, 404);
    }
    for i in 0..1_000 {
        assert_eq!(call(&format!("BREW{i}"), "/v1/hello").await, 405);
        assert_eq!(call(&format!("BREW{i}"), &format!("/x{i}")).await, 404);
    }
    let after = exposition_series(&service).await;
    assert_eq!(
        before.len(),
        after.len(),
        "series grew with what clients sent: {:#?}",
        after.difference(&before).take(10).collect::<Vec<_>>()
    );
    assert_eq!(before, after);
}

/// In an application of its own: the configuration's `Metrics` counts the attached routing,
/// a clone mounted in axum answers the exposition.
#[tokio::test]
async fn metrics_of_an_attached_routing_mount_in_an_axum_application() {
    let metrics = Metrics::new();
    let config = create_config()
        .cors(Cors::Enabled)
        .metrics(metrics.clone())
        .build();
    let attached = strata::attach_routing(&config, &routing()).unwrap();
    let app = axum::Router::new()
        .route_service("/metrics", metrics)
        .fallback_service(attached.service);
    let get = |path: &str| {
        let request = http::Request::get(path)
            .body(axum::body::Body::empty())
            .unwrap();
        let app = app.clone();
        async move {
            let response = app.oneshot(request).await.unwrap();
            let status = response.status().as_u16();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            (status, String::from_utf8(body.to_vec()).unwrap())
        }
    };
    assert_eq!(get("/v1/books/7").await.0, 200);
    let (status, exposition) = get("/metrics").await;
    assert_eq!(status, 200);
    let samples = samples(&exposition);
    assert_eq!(
        samples
            .get(
                "strata_http_requests_total{route=\"/v1/books/:id\",method=\"GET\",status=\"200\"}"
            )
            .map(String::as_str),
        Some("1"),
        "{exposition}"
    );
}

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
struct Nothing {}

/// The in-flight gauge of `metrics` as exposed.
fn in_flight(metrics: &Metrics) -> String {
    samples(&metrics.encode())["strata_http_requests_in_flight"].clone()
}

/// A request is in flight from its arrival until it is answered, or dropped unanswered (a
/// client that went away).
#[tokio::test]
async fn in_flight_counts_requests_until_answered_or_dropped() {
    let started = Started::default();
    let wait = default_endpoints_factory().get().handler({
        let started = started.clone();
        move |_: Nothing| {
            started.mark();
            let started = started.clone();
            async move {
                started.hold().await;
                Ok(Nothing {})
            }
        }
    });
    let metrics = Metrics::new();
    let config = create_config()
        .cors(Cors::Enabled)
        .metrics(metrics.clone())
        .build();
    let service = strata::attach_routing(&config, &routing! { "wait" => wait })
        .unwrap()
        .service;
    let get = || http::Request::get("/wait").body(String::new()).unwrap();
    let answered = tokio::spawn(service.clone().oneshot(get()));
    let dropped = tokio::spawn(service.clone().oneshot(get()));
    started.reached(2).await;
    assert_eq!(in_flight(&metrics), "2");
    dropped.abort();
    assert!(dropped.await.unwrap_err().is_cancelled());
    assert_eq!(in_flight(&metrics), "1");
    started.release();
    assert_eq!(answered.await.unwrap().unwrap().status(), 200);
    assert_eq!(in_flight(&metrics), "0");
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !value.is_empty() && value != "false")
}

/// `promtool check metrics` (Debian's `prometheus` package) accepts the exposition a client
/// without `Accept` gets, after the known mix. Where promtool is not installed: in CI the test
/// fails (CI installs it: `tests/tools/install.sh debian`); elsewhere it says `SKIPPED`.
#[tokio::test]
async fn promtool_accepts_the_exposition() {
    use std::process::{Command, Stdio};
    let installed = Command::new("promtool")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !installed {
        assert!(
            !in_ci(),
            "promtool is not installed: CI installs it (bash tests/tools/install.sh debian)"
        );
        eprintln!("SKIPPED promtool_accepts_the_exposition: promtool is not installed");
        return;
    }
    let (server, addr) = serve().await;
    send_the_mix(addr).await;
    let (status, exposition) = request(addr, "GET", "/metrics").await;
    assert_eq!(status, 200);
    assert!(exposition.contains("strata_http_refusals_total{reason=\"validation\"} 1"));
    server.shutdown().await;
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut promtool.stdin.take().unwrap(), exposition.as_bytes()).unwrap();
    let checked = promtool.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    assert!(checked.status.success(), "promtool: {said}\n{exposition}");
    assert_eq!(said, "", "promtool's lint found problems");
}

/// A body whose length is not known before it is sent (here compressed) is counted as it
/// goes: the bytes the client received.
#[cfg(feature = "compression")]
#[tokio::test]
async fn a_compressed_answer_counts_the_bytes_sent() {
    let config = create_config()
        .cors(Cors::Enabled)
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .compression(strata::server::Compression::GzipAndBrotli)
        .metrics(Metrics::new())
        .build();
    let server = create_server(&config, &routing()).await.unwrap();
    let strata::server::LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    // Above the 1 KiB threshold: compressed.
    let id = "x".repeat(2000);
    // reqwest without its decompression features: the bytes as they came.
    let response = reqwest::Client::new()
        .get(format!("http://{addr}/v1/books/{id}"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-encoding"], "gzip");
    let sent = response.bytes().await.unwrap().len();
    assert!(sent < 2000, "compressed: {sent} bytes");
    let (_, exposition) = request(addr, "GET", "/metrics").await;
    assert_eq!(
        samples(&exposition)
            .get("strata_http_response_body_bytes_total{route=\"/v1/books/:id\",method=\"GET\"}")
            .map(String::as_str),
        Some(sent.to_string().as_str()),
        "{exposition}"
    );
    server.shutdown().await;
}
