//! A hostile client over real sockets on 127.0.0.1: each test is one attack, bounded in count and
//! time, against a server started in the test with small limits.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::time::Duration;

use garde::Validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::LocalAddr;
use strata::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Deserialize, Validate, JsonSchema)]
struct Wait {
    #[garde(range(max = 2000))]
    ms: Option<u64>,
}

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Done {
    waited: u64,
}

fn routing() -> Routing {
    let wait = default_endpoints_factory()
        .get()
        .handler(|input: Wait, _ctx, _logger| async move {
            let ms = input.ms.unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(Done { waited: ms })
        });
    routing! { "wait" => wait }
}

async fn start() -> (strata::Server, std::net::SocketAddr) {
    let config = create_config()
        .cors(false)
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    let server = create_server(&config, &routing()).await.unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    (server, addr)
}

/// Sends `raw`, optionally shuts the sending side, and reads the whole answer (the server
/// closes after it, or within 5 s).
async fn exchange(addr: std::net::SocketAddr, raw: &[u8], half_close: bool) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(raw).await.unwrap();
    if half_close {
        stream.shutdown().await.unwrap();
    }
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn http_1_1_needs_exactly_one_host() {
    let (_server, addr) = start().await;
    let missing = exchange(
        addr,
        b"GET /wait HTTP/1.1\r\nConnection: close\r\n\r\n",
        false,
    )
    .await;
    assert!(missing.starts_with("HTTP/1.1 400"), "{missing}");
    assert!(missing.contains("needs a Host header"), "{missing}");
    let two = exchange(
        addr,
        b"GET /wait HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n",
        false,
    )
    .await;
    assert!(two.starts_with("HTTP/1.1 400"), "{two}");
    assert!(two.contains("not several"), "{two}");
    let one = exchange(
        addr,
        b"GET /wait HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        false,
    )
    .await;
    assert!(one.starts_with("HTTP/1.1 200"), "{one}");
    // HTTP/1.0 has no such rule.
    let old = exchange(addr, b"GET /wait HTTP/1.0\r\n\r\n", false).await;
    assert!(old.starts_with("HTTP/1.0 200"), "{old}");
}

#[tokio::test]
async fn a_client_that_half_closes_still_gets_its_answer() {
    let (_server, addr) = start().await;
    // The handler waits, so the client's FIN arrives before the response is ready.
    let answer = exchange(addr, b"GET /wait?ms=200 HTTP/1.1\r\nHost: a\r\n\r\n", true).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:?}");
    assert!(answer.contains(r#"{"waited":200}"#), "{answer}");
}

#[tokio::test]
async fn methods_and_paths_are_echoed_cut_short() {
    let (_server, addr) = start().await;
    let method = "X".repeat(10_000);
    let raw = format!("{method} /wait HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    let answer = exchange(addr, raw.as_bytes(), false).await;
    assert!(
        answer.starts_with("HTTP/1.1 405"),
        "{}",
        &answer[..answer.len().min(200)]
    );
    let body = answer.split("\r\n\r\n").nth(1).unwrap();
    assert_eq!(
        body,
        format!(
            r#"{{"status":"error","error":{{"message":"{}… is not allowed"}}}}"#,
            "X".repeat(100)
        )
    );
    let path = format!("/{}", "p".repeat(5000));
    let raw = format!("GET {path} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    let answer = exchange(addr, raw.as_bytes(), false).await;
    assert!(
        answer.starts_with("HTTP/1.1 404"),
        "{}",
        &answer[..answer.len().min(200)]
    );
    assert!(
        answer.len() < 1000,
        "the 404 does not echo 5 KB: {} bytes",
        answer.len()
    );
}
