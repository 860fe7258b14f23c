//! What the server's metrics count beyond requests, over real sockets on 127.0.0.1:0: the
//! rate limiter's decisions by outcome and store (a store that fails included), event streams
//! open and the events they sent, and the bytes of uploads.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::collections::BTreeMap;
use std::net::SocketAddr;

use strata::prelude::*;
use strata::ratelimit::{
    Decision, Gcra, Key, Quota, RateLimit, RateLimitKey, RateLimitStore, StoreError,
};
use strata::upload::MultipartForm;
use strata::{Metrics, Routing, UploadLimits, UploadedFile};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[allow(dead_code)]
#[path = "../examples/events.rs"]
mod events;

/// A store that fails every call.
struct Down;

impl RateLimitStore for Down {
    type Future = std::future::Ready<Result<Decision, StoreError>>;

    fn check(&self, _key: &RateLimitKey<'_>, _gcra: Gcra, _now: u64) -> Self::Future {
        std::future::ready(Err(StoreError::new("connection refused")))
    }
}

#[strata::model(input)]
struct Upload {
    #[garde(skip)]
    file: UploadedFile,
}

#[strata::model(output)]
struct Size {
    size: u64,
}

fn routing() -> Routing {
    let limited = default_endpoints_factory()
        .add_middleware(RateLimit::new(Quota::per_hour(2), Key::client_addr()).middleware())
        .get()
        .handler_without_input(async || Ok(Size { size: 0 }));
    let unlimited = default_endpoints_factory()
        .add_middleware(
            RateLimit::new(Quota::per_hour(2), Key::client_addr())
                .store(Down)
                .middleware(),
        )
        .get()
        .handler_without_input(async || Ok(Size { size: 0 }));
    let upload = default_endpoints_factory()
        .post()
        .handler(async |input: Upload| {
            Ok(Size {
                size: input.file.len(),
            })
        });
    events::events_routing()
        .route("limited", limited)
        .route("unlimited", unlimited)
        .route("upload", upload)
}

/// Sends `request` (a whole HTTP/1.1 request) on a connection of its own: the status and the
/// body.
async fn send(addr: SocketAddr, request: &[u8]) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let (_, body) = answer.split_once("\r\n\r\n").unwrap();
    (status, body.to_owned())
}

async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let request = format!("GET {path} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    send(addr, request.as_bytes()).await
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

#[tokio::test]
async fn rate_limit_decisions_event_streams_and_uploads_are_counted() {
    let config = create_config()
        .cors(Cors::Disabled)
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .upload(UploadLimits::default())
        .metrics(Metrics::new())
        .build();
    let server = create_server(&config, &routing()).await.unwrap();
    let strata::server::LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };

    // Two allowed, then a 429; the failing store lets three through (fail open).
    for want in [200, 200, 429] {
        assert_eq!(get(addr, "/limited").await.0, want);
    }
    for _ in 0..3 {
        assert_eq!(get(addr, "/unlimited").await.0, 200);
    }
    // A countdown from 3: three ticks and the liftoff, read to the stream's end.
    let (status, stream) = get(addr, "/countdown?from=3&every_ms=1").await;
    assert_eq!(status, 200);
    assert!(stream.contains("event: liftoff"), "{stream}");
    // An upload: its whole body counted.
    let form =
        MultipartForm::new().file("file", UploadedFile::new("a.bin", "", vec![7_u8; 10_000]));
    let content_type = form.content_type();
    let body = form.into_bytes();
    let mut request = format!(
        "POST /upload HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(&body);
    let (status, answer) = send(addr, &request).await;
    assert_eq!(status, 200, "{answer}");

    let (_, exposition) = get(addr, "/metrics").await;
    let samples = samples(&exposition);
    let value = |series: &str| samples.get(series).map(String::as_str);
    let decisions = "strata_http_rate_limit_decisions_total";
    assert_eq!(
        value(&format!(
            r#"{decisions}{{outcome="allowed",store="memory"}}"#
        )),
        Some("2")
    );
    assert_eq!(
        value(&format!(
            r#"{decisions}{{outcome="limited",store="memory"}}"#
        )),
        Some("1")
    );
    assert_eq!(
        value(&format!(
            r#"{decisions}{{outcome="store_failed_open",store="custom"}}"#
        )),
        Some("3"),
        "{exposition}"
    );
    assert_eq!(
        value(r#"strata_http_events_sent_total{route="/countdown"}"#),
        Some("4"),
        "{exposition}"
    );
    assert_eq!(
        value(r#"strata_http_event_streams_open{route="/countdown"}"#),
        Some("0"),
        "closed once sent"
    );
    assert_eq!(
        value(r#"strata_http_upload_bytes_total{route="/upload",method="POST"}"#),
        Some(body.len().to_string().as_str()),
        "{exposition}"
    );
    server.shutdown().await;
}
