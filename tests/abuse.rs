//! A hostile client over real sockets on 127.0.0.1: each test is one attack, bounded in count and
//! time, against a server started in the test with small limits.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::time::Duration;
use strata::{
    Endpoint, FileResponse, InputSource, Mode, RequestInfo, ResultHandler, Routing, ServeStatic,
    UploadLimits, UploadedFile,
};

use garde::Validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::prelude::*;
use strata::server::{LocalAddr, ServerLimits};
use strata::upload::MultipartForm;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[path = "common/probe.rs"]
mod probe;
use probe::{Started, all_read, sleeps_through, until};

#[derive(Deserialize, Validate, JsonSchema)]
struct Wait {
    #[garde(range(max = 2000))]
    ms: Option<u64>,
    /// Held until the test releases its `Started` (then `ms` more).
    #[garde(skip)]
    hold: Option<bool>,
}

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Done {
    waited: u64,
}

/// The size of `/big`: more than the socket buffers of both ends hold.
const BIG: usize = 16 * 1024 * 1024;

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Padding {
    padding: String,
}

#[derive(Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Note {
    text: String,
}

#[derive(Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Upload {
    file: UploadedFile,
}

fn routing() -> Routing {
    routing_with(&Started::default())
}

/// The routing, its `/wait` handler entering `started` as it begins (and held by it when
/// asked, `?hold=true`).
fn routing_with(started: &Started) -> Routing {
    let started = started.clone();
    let wait = default_endpoints_factory()
        .get()
        .handler(move |input: Wait| {
            let running = started.enter();
            let started = started.clone();
            async move {
                let _running = running;
                if input.hold == Some(true) {
                    started.hold().await;
                }
                let ms = input.ms.unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(Done { waited: ms })
            }
        });
    let note = default_endpoints_factory()
        .post()
        .handler(async |input: Note| {
            Ok(Done {
                waited: input.text.len() as u64,
            })
        });
    let upload = default_endpoints_factory()
        .post()
        .handler(async |input: Upload| {
            Ok(Done {
                waited: input.file.size() as u64,
            })
        });
    let big = default_endpoints_factory()
        .get()
        .handler_without_input(async || {
            Ok(Padding {
                padding: "x".repeat(BIG),
            })
        });
    // A path short enough for a whole request head of 27 bytes, and a handler slower than the
    // header-read timeouts of the tests.
    let slow = default_endpoints_factory()
        .get()
        .handler_without_input(async || {
            tokio::time::sleep(Duration::from_millis(600)).await;
            Ok(Done { waited: 600 })
        });
    let cover = default_endpoints_factory()
        .post()
        .handler(async |input: Upload| {
            input.file.mv(scratch().join("cover")).await?;
            Ok(Done {
                waited: input.file.size() as u64,
            })
        });
    routing! {
        "wait" => wait, "note" => note, "upload" => upload, "big" => big, "cover" => cover,
        "s" => slow,
        "public" => ServeStatic::dir(scratch()),
        "files" => { ":name" => file_download() },
    }
}

/// A directory of this test process: covers are moved there, and it is served as `/public`.
fn scratch() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("strata-abuse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Small body deadlines, so that each attack takes well under a second.
fn limits() -> ServerLimits {
    ServerLimits::default()
        .body_idle_timeout(Some(Duration::from_millis(300)))
        .body_read_timeout(Some(Duration::from_secs(1)))
}

async fn start() -> (strata::Server, std::net::SocketAddr) {
    let config = create_config()
        .cors(Cors::Disabled)
        .limits(limits())
        .upload(UploadLimits::builder().file_size(2 * 1024 * 1024))
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

/// Sends `raw` and reads the answer until the server closes the connection, which it must do
/// on its own (the client does not ask it to): panics when it is still open after 10 s.
async fn exchange_until_closed(addr: std::net::SocketAddr, raw: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(raw).await.unwrap();
    let mut answer = Vec::new();
    // A reset is a close too (the server may close with bytes of the request unread).
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
    assert!(
        read.is_ok(),
        "the server has not closed the connection after 10 s: {}",
        String::from_utf8_lossy(&answer)
    );
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

/// Sends `head` and `first` body bytes, then trickles a byte every `every` (never, when
/// `None`) until the server answers and closes the connection (within 10 s, or it panics);
/// returns the answer.
async fn stall(
    addr: std::net::SocketAddr,
    head: &str,
    first: &[u8],
    every: Option<Duration>,
) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(first).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let trickle = tokio::spawn(async move {
        // Holding the writing half open: dropping it would send a FIN (a different attack).
        let Some(every) = every else {
            let _writer = writer;
            return std::future::pending::<()>().await;
        };
        // Bounded: 100 bytes at most, whatever the server does.
        for _ in 0..100 {
            tokio::time::sleep(every).await;
            if writer.write_all(b"a").await.is_err() {
                return;
            }
        }
    });
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), reader.read_to_end(&mut answer)).await;
    trickle.abort();
    assert!(
        read.is_ok(),
        "the server neither answered nor closed within 10 s"
    );
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn a_body_that_stops_arriving_gets_a_408_and_the_connection_closes() {
    let (_server, addr) = start().await;
    let head = "POST /note HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n";
    // (`stall` reads until the server closes the connection.)
    let answer = stall(addr, head, br#"{"text":"abc"#, None).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
    assert!(
        answer.contains("no part of the request body arrived for 300ms"),
        "{answer}"
    );
}

#[tokio::test]
async fn a_body_trickled_slower_than_the_deadline_gets_a_408() {
    // The idle timeout is longer than the whole-body deadline: only the deadline can end the
    // body, however late a busy machine sends the bytes of the trickle.
    let (_server, addr) = start_layered(
        limits()
            .body_idle_timeout(Some(Duration::from_secs(2)))
            .body_read_timeout(Some(Duration::from_secs(1))),
        tower::layer::util::Identity::new(),
        &Started::default(),
    )
    .await;
    let head = "POST /note HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n";
    // A byte every 100 ms: the body keeps arriving, and the whole-body deadline ends it all the
    // same (a deadline set again at each byte would let it trickle for ever).
    let answer = stall(addr, head, b"{", Some(Duration::from_millis(100))).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive within 1s"), "{answer}");
}

#[tokio::test]
async fn a_stalled_multipart_upload_gets_a_408() {
    let (_server, addr) = start().await;
    let head = "POST /upload HTTP/1.1\r\nHost: a\r\nContent-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: 100000\r\n\r\n";
    let first = b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\n\r\nsome bytes";
    let answer = stall(addr, head, first, None).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

#[tokio::test]
async fn at_the_connection_cap_new_clients_wait_and_current_ones_are_served() {
    let config = create_config()
        .cors(Cors::Disabled)
        .limits(limits().max_connections(Some(2)))
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    let server = create_server(&config, &routing()).await.unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    let request = b"GET /wait HTTP/1.1\r\nHost: a\r\n\r\n";
    // Two keep-alive connections take the two places.
    let mut first = TcpStream::connect(addr).await.unwrap();
    let mut second = TcpStream::connect(addr).await.unwrap();
    for stream in [&mut first, &mut second] {
        stream.write_all(request).await.unwrap();
        let mut buffer = [0; 512];
        let n = stream.read(&mut buffer).await.unwrap();
        assert!(buffer[..n].starts_with(b"HTTP/1.1 200"));
    }
    // A third client connects (the kernel's backlog) but is not served...
    let mut third = TcpStream::connect(addr).await.unwrap();
    third.write_all(request).await.unwrap();
    let mut buffer = [0; 512];
    let waited = tokio::time::timeout(Duration::from_millis(300), third.read(&mut buffer)).await;
    assert!(waited.is_err(), "served beyond the cap");
    // ...while the connections it has are still served.
    second.write_all(request).await.unwrap();
    let n = second.read(&mut buffer).await.unwrap();
    assert!(buffer[..n].starts_with(b"HTTP/1.1 200"));
    // When one leaves, the waiting client gets its place.
    drop(first);
    let n = tokio::time::timeout(Duration::from_secs(10), third.read(&mut buffer))
        .await
        .expect("served once a place is free")
        .unwrap();
    assert!(buffer[..n].starts_with(b"HTTP/1.1 200"));
}

#[tokio::test]
async fn the_applications_own_layers_wrap_the_app() {
    let config = create_config()
        .cors(Cors::Disabled)
        .mode(Mode::Production)
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    // A per-request timeout of 300 ms and at most one request at a time.
    let layers = tower::ServiceBuilder::new()
        .timeout(Duration::from_millis(300))
        .concurrency_limit(1);
    let handlers = Started::default();
    let server = strata::create_server(&config, &routing_with(&handlers))
        .layers(layers)
        .await
        .unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    let get = |path: &str| format!("GET {path} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    let quick = exchange(addr, get("/wait?ms=10").as_bytes(), false).await;
    assert!(quick.starts_with("HTTP/1.1 200"), "{quick}");
    let slow = exchange(addr, get("/wait?ms=1000").as_bytes(), false).await;
    assert!(slow.starts_with("HTTP/1.1 504"), "{slow}");
    assert!(
        slow.ends_with(r#"{"status":"error","error":{"message":"The request took too long"}}"#),
        "{slow}"
    );
    // With one place, a second request waits for the first (the limit holds it, not an error):
    // two requests sent together, each 200 ms in its handler, never run at once.
    let request = get("/wait?ms=200");
    let (a, b) = tokio::join!(
        exchange(addr, request.as_bytes(), false),
        exchange(addr, request.as_bytes(), false),
    );
    assert!(
        a.starts_with("HTTP/1.1 200") && b.starts_with("HTTP/1.1 200"),
        "{a}\n{b}"
    );
    assert_eq!(handlers.most_at_once(), 1, "two handlers ran at once");
}

#[tokio::test]
async fn bodies_over_the_memory_budget_wait_their_turn_with_a_503() {
    let mut config = create_config()
        .cors(Cors::Disabled)
        .limits(limits())
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    // Every client here is 127.0.0.1: the address may hold the whole budget, so that this is
    // the budget's own limit (the share has its own tests at the end).
    let budget = strata::stages::parse::BodyBudget::new(3000).per_client(3000);
    config.pipeline.body_budget = Some(budget.clone());
    let server = create_server(&config, &routing()).await.unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    let head = |length: usize| {
        format!(
            "POST /note HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n"
        )
    };
    // A stalled request holds the 2000 bytes that arrived of the 2500 it declared, until its
    // body deadline ends it.
    let sent = format!(r#"{{"text":"{}"#, "s".repeat(1991));
    let stalled =
        tokio::spawn(async move { stall(addr, &head(2500), sent.as_bytes(), None).await });
    until("the stalled body holds what arrived", || {
        budget.used() >= 2000
    })
    .await;
    // Another 2000 bytes do not fit beside them: 503 as they arrive, and the server closes the
    // connection (the client did not ask it to).
    let keep_alive = head(2000).replace("Connection: close\r\n", "");
    let refused =
        exchange_until_closed(addr, format!("{keep_alive}{}", "x".repeat(2000)).as_bytes()).await;
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    let lower = refused.to_ascii_lowercase();
    assert!(lower.contains("retry-after: 1"), "{refused}");
    assert!(lower.contains("connection: close"), "{refused}");
    // A small body still fits beside it.
    let body = r#"{"text":"fits"}"#;
    let small = exchange(
        addr,
        format!("{}{body}", head(body.len())).as_bytes(),
        false,
    )
    .await;
    assert!(small.starts_with("HTTP/1.1 200"), "{small}");
    // Once the stalled request is answered (408), its share is back.
    let answer = stalled.await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert_eq!(budget.used(), 0);
    let body = format!(r#"{{"text":"{}"}}"#, "y".repeat(1980));
    let big = exchange(
        addr,
        format!("{}{body}", head(body.len())).as_bytes(),
        false,
    )
    .await;
    assert!(big.starts_with("HTTP/1.1 200"), "{big}");
}

/// Short connection timeouts: header read, idle and write progress.
async fn start_with_short_timeouts() -> (strata::Server, std::net::SocketAddr) {
    start_with_timeouts(
        Duration::from_millis(300),
        Duration::from_millis(400),
        Duration::from_millis(400),
    )
    .await
}

/// A server with the given header-read, idle and write timeouts.
async fn start_with_timeouts(
    head: Duration,
    idle: Duration,
    write: Duration,
) -> (strata::Server, std::net::SocketAddr) {
    let config = create_config()
        .cors(Cors::Disabled)
        .limits(
            limits()
                .header_read_timeout(Some(head))
                .idle_timeout(Some(idle))
                .write_timeout(Some(write)),
        )
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    let server = create_server(&config, &routing()).await.unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    (server, addr)
}

#[tokio::test]
async fn an_idle_http1_keep_alive_connection_is_closed() {
    let (_server, addr) = start_with_short_timeouts().await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /wait HTTP/1.1\r\nHost: a\r\n\r\n")
        .await
        .unwrap();
    let mut buffer = [0; 512];
    assert!(stream.read(&mut buffer).await.unwrap() > 0);
    // (The guard is far beyond the idle timeout, 400 ms: only a connection left open meets it.)
    let closed = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer)).await;
    assert!(matches!(closed, Ok(Ok(0))), "{closed:?}");
}

#[tokio::test]
async fn an_idle_http2_connection_is_closed_even_while_it_answers_pings() {
    use http_body_util::{BodyExt, Empty};
    let (_server, addr) = start_with_short_timeouts().await;
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .timer(hyper_util::rt::TokioTimer::new())
            // The client pings too: the connection is never silent.
            .keep_alive_interval(Duration::from_millis(100))
            .keep_alive_while_idle(true)
            .handshake::<_, Empty<hyper::body::Bytes>>(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    let connection = tokio::spawn(connection);
    let request = http::Request::get("http://a/wait")
        .body(Empty::new())
        .unwrap();
    // Before the request is sent: the server's count of the connection's quiet starts after
    // it, so a server that waits its timeout is never closed sooner than this says, however
    // slow the machine.
    let sent = std::time::Instant::now();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let _ = response.into_body().collect().await.unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(10), connection).await;
    assert!(
        ended.is_ok(),
        "the idle HTTP/2 connection is still open after 10 s"
    );
    // Not before the header-read timeout, the shortest that applies, brought forward by the
    // connection's spread (a quarter at most).
    assert!(
        sent.elapsed() >= Duration::from_millis(300) * 3 / 4,
        "closed {:?} after its only request was sent",
        sent.elapsed()
    );
}

#[tokio::test]
async fn a_client_that_never_reads_its_response_is_dropped() {
    // One connection at most: the next client is served once the server has dropped this one.
    let (_server, addr) = start_layered(
        limits()
            .header_read_timeout(Some(Duration::from_millis(300)))
            .idle_timeout(Some(Duration::from_millis(400)))
            .write_timeout(Some(Duration::from_millis(400)))
            .max_connections(Some(1)),
        tower::layer::util::Identity::new(),
        &Started::default(),
    )
    .await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /big HTTP/1.1\r\nHost: a\r\n\r\n")
        .await
        .unwrap();
    // The response starts once the server has built it (slow in a debug build on a busy
    // machine): wait for its first byte, so the stall below starts when the writes do.
    let mut first = [0_u8; 1];
    tokio::time::timeout(Duration::from_secs(60), stream.read_exact(&mut first))
        .await
        .expect("the response never started")
        .unwrap();
    // Read nothing more while the server's writes block, until the server has dropped the
    // connection (after its write timeout): then the next client has the only place.
    let mut next = TcpStream::connect(addr).await.unwrap();
    next.write_all(b"GET /wait HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), next.read_to_end(&mut answer))
        .await
        .expect("the stalled connection still holds the only place after 10 s")
        .unwrap();
    assert!(answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");
    // What is left: what the sockets' buffers held, not the whole response.
    let mut received = Vec::new();
    let read =
        tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut received)).await;
    assert!(read.is_ok(), "the connection was not closed");
    assert!(
        received.len() + 1 < BIG,
        "the whole response was sent: {} bytes",
        received.len() + 1
    );
}

#[tokio::test]
async fn an_http2_stream_without_window_is_dropped() {
    use http_body_util::Empty;
    let (_server, addr) = start_with_short_timeouts().await;
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .timer(hyper_util::rt::TokioTimer::new())
            // No flow-control window: the server cannot send a byte of any body.
            .initial_stream_window_size(0)
            .handshake::<_, Empty<hyper::body::Bytes>>(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    let connection = tokio::spawn(connection);
    let request = http::Request::get("http://a/big")
        .body(Empty::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    // Never read the body (never grant a window); the server gives up on the connection.
    let ended = tokio::time::timeout(Duration::from_secs(10), connection).await;
    assert!(
        ended.is_ok(),
        "the stalled HTTP/2 connection is still open after 10 s"
    );
    drop(response);
}

#[tokio::test]
async fn concurrent_uploads_to_one_file_never_leave_a_mix_on_disk() {
    let (_server, addr) = start().await;
    let sizes: Vec<(u8, usize)> = (0..16)
        .map(|i| {
            if i % 2 == 0 {
                (b'A', 1024 * 1024)
            } else {
                (b'b', 16)
            }
        })
        .collect();
    let uploads = sizes.into_iter().map(|(byte, size)| {
        tokio::spawn(async move {
            let form = MultipartForm::new().file(
                "file",
                UploadedFile::new("cover.bin", "application/octet-stream", vec![byte; size]),
            );
            let content_type = form.content_type();
            let body = form.into_bytes();
            let head = format!(
                "POST /cover HTTP/1.1\r\nHost: a\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let mut request = head.into_bytes();
            request.extend_from_slice(&body);
            exchange(addr, &request, false).await
        })
    });
    for upload in uploads.collect::<Vec<_>>() {
        let answer = upload.await.unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 200"),
            "{}",
            &answer[..answer.len().min(300)]
        );
    }
    let on_disk = std::fs::read(scratch().join("cover")).unwrap();
    let whole_big = on_disk.len() == 1024 * 1024 && on_disk.iter().all(|b| *b == b'A');
    let whole_small = on_disk == [b'b'; 16];
    assert!(
        whole_big || whole_small,
        "a file nobody sent: {} bytes",
        on_disk.len()
    );
}

#[tokio::test]
async fn static_paths_the_os_refuses_are_json_errors_over_the_wire() {
    let (_server, addr) = start().await;
    let get = |path: String| format!("GET {path} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    for path in [
        format!("/public/{}", "n".repeat(300)),
        format!("/public{}", "/a".repeat(10_000)),
    ] {
        let answer = exchange(addr, get(path).as_bytes(), false).await;
        assert!(
            answer.starts_with("HTTP/1.1 400"),
            "{}",
            &answer[..answer.len().min(300)]
        );
        assert!(answer.contains("application/json"), "{answer}");
        assert!(answer.contains("is too long"), "{answer}");
    }
}

/// A server with the given header-read and idle timeouts (write timeout 2 s).
async fn start_with(head: Duration, idle: Duration) -> (strata::Server, std::net::SocketAddr) {
    start_with_timeouts(head, idle, Duration::from_secs(2)).await
}

/// Reads one response with a `Content-Length` from `stream`; returns its head.
async fn read_one_response(stream: &mut TcpStream) -> String {
    try_read_one_response(stream)
        .await
        .unwrap_or_else(|received| panic!("closed after {received:?}"))
}

/// Reads one response with a `Content-Length` from `stream`: its head, or what arrived before
/// the connection was closed (or reset).
async fn try_read_one_response(stream: &mut TcpStream) -> Result<String, String> {
    let mut received = Vec::new();
    let mut buffer = [0; 4096];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer))
            .await
            .expect("a response within 10 s")
            .unwrap_or(0);
        if n == 0 {
            return Err(String::from_utf8_lossy(&received).into_owned());
        }
        received.extend_from_slice(&buffer[..n]);
        let text = String::from_utf8_lossy(&received).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(str::to_owned)
                })
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if body.len() >= length {
                return Ok(head.to_owned());
            }
        }
    }
}

/// The previous request on a keep-alive connection: when it was sent, and how long its handler
/// took at least.
struct Previous {
    sent: std::time::Instant,
    handler: Duration,
}

/// Sends `request` on the keep-alive connection `stream` and reads the head of its answer, or
/// `None` when the server had closed the connection. The server may close it at its
/// header-read timeout (`timeout`) counted from the end of the previous response, which ended
/// `previous.handler` after the previous request was sent at the earliest: a close sooner
/// than that fails the test whatever the machine's speed; one later says that the client came
/// too late for this round (a machine too busy), and nothing about the server.
async fn reuse(
    stream: &mut TcpStream,
    request: &str,
    previous: &Previous,
    timeout: Duration,
) -> Option<String> {
    // A write to a closed connection may fail, or go through and be answered by a close.
    let written = stream.write_all(request.as_bytes()).await;
    let answer = match written {
        Ok(()) => try_read_one_response(stream).await,
        Err(error) => Err(error.to_string()),
    };
    match answer {
        Ok(head) => Some(head),
        Err(received) => {
            let after = previous.sent.elapsed();
            assert!(
                after >= previous.handler + timeout,
                "closed {after:?} after the previous request was sent, before the header-read \
                 timeout ({timeout:?}) counted from the end of its response ({received:?})"
            );
            None
        }
    }
}

#[tokio::test]
async fn a_keep_alive_connection_reused_just_before_the_header_timeout_is_served() {
    // The deadline counts from the end of the last response, never from before it: a client
    // whose pool keeps connections a little less than the timeout never meets a closed one.
    // Sampled every 200 ms: a count started when a 600 ms request arrived would drop the
    // connection 200 to 400 ms after its response, before the client comes back at 450 ms.
    let timeout = Duration::from_millis(800);
    let (_server, addr) = start_with(timeout, Duration::from_secs(5)).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut previous: Option<Previous> = None;
    for ms in [600, 0, 600, 0] {
        let request = format!("GET /wait?ms={ms} HTTP/1.1\r\nHost: a\r\n\r\n");
        let sent = std::time::Instant::now();
        let head = match &previous {
            None => Some(read_after_write(&mut stream, &request).await),
            Some(previous) => reuse(&mut stream, &request, previous, timeout).await,
        };
        let Some(head) = head else {
            // Too late for this round: the next one starts on a new connection.
            stream = TcpStream::connect(addr).await.unwrap();
            previous = None;
            continue;
        };
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        previous = Some(Previous {
            sent,
            handler: Duration::from_millis(ms),
        });
        tokio::time::sleep(Duration::from_millis(450)).await;
    }
}

/// Sends `request` on `stream` and reads one response: its head.
async fn read_after_write(stream: &mut TcpStream, request: &str) -> String {
    stream.write_all(request.as_bytes()).await.unwrap();
    read_one_response(stream).await
}

#[tokio::test]
async fn a_request_longer_than_the_header_timeout_is_answered() {
    let (_server, addr) = start_with(Duration::from_millis(200), Duration::from_secs(5)).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /wait?ms=900 HTTP/1.1\r\nHost: a\r\n\r\n")
        .await
        .unwrap();
    let head = read_one_response(&mut stream).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}

#[tokio::test]
async fn an_http2_connection_without_a_stream_is_closed_at_the_header_timeout() {
    use http_body_util::{BodyExt, Empty};
    let head_timeout = Duration::from_millis(300);
    let (_server, addr) = start_with(head_timeout, Duration::from_secs(5)).await;
    // Each connection's idle deadline is brought forward by up to a quarter, at random.
    let soonest = head_timeout * 3 / 4;
    // When the last stream was sent (first, when the connection was opened): the server's
    // count of the time without a stream starts after it, so it cannot end the connection
    // sooner than the timeout after it, however slow the machine.
    let mut last_sent = std::time::Instant::now();
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .handshake::<_, Empty<hyper::body::Bytes>>(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    let connection = tokio::spawn(connection);
    for _ in 0..3 {
        let request = http::Request::get("http://a/wait?ms=0")
            .body(Empty::new())
            .unwrap();
        let sent = std::time::Instant::now();
        let Ok(response) = sender.send_request(request).await else {
            // Closed between two streams: only a client slowed down past the timeout by a
            // busy machine may see that.
            assert!(
                last_sent.elapsed() >= soonest,
                "closed {:?} after its last stream was sent",
                last_sent.elapsed()
            );
            break;
        };
        last_sent = sent;
        assert_eq!(response.status(), 200);
        let _ = response.into_body().collect().await.unwrap();
        // Within the timeout, the connection is reused; the watcher sleeps between looks.
        sleeps_through(Duration::from_millis(10), async {
            tokio::time::sleep(Duration::from_millis(100)).await;
        })
        .await;
    }
    // Then no stream for the header-read timeout (the idle timeout is 5 s): closed as an
    // HTTP/1 connection without a request head is.
    let ended = tokio::time::timeout(Duration::from_secs(10), connection).await;
    assert!(ended.is_ok(), "the connection is still open after 10 s");
    assert!(
        last_sent.elapsed() >= soonest,
        "closed {:?} after its last stream was sent",
        last_sent.elapsed()
    );
}

#[tokio::test]
async fn a_head_left_unfinished_does_not_hold_a_graceful_shutdown() {
    // A shutdown timeout of a minute: a shutdown that waited for the unfinished head would
    // last that long.
    let (server, addr) = start_layered(
        limits()
            .header_read_timeout(Some(Duration::from_millis(300)))
            .idle_timeout(Some(Duration::from_secs(5)))
            .shutdown_timeout(Some(Duration::from_secs(60))),
        tower::layer::util::Identity::new(),
        &Started::default(),
    )
    .await;
    let mut slow = TcpStream::connect(addr).await.unwrap();
    // Past the first bytes' deadline (HTTP/1 from the first byte), short of a whole head.
    slow.write_all(b"GET /wait HTTP/1.1\r\nHost: a\r\nX-Slow: aaaaaaaaaaaa")
        .await
        .unwrap();
    // The server has read the partial head, the case meant here (or has cut the connection
    // off already: not a condition of the outcome, as a head not read yet is cut off by the
    // first bytes' deadline all the same).
    let client = slow.local_addr().unwrap();
    until("the server has read the partial head", || {
        all_read(client, addr)
    })
    .await;
    // The slow client is cut off long before the shutdown timeout.
    tokio::time::timeout(Duration::from_secs(20), server.shutdown())
        .await
        .expect("the shutdown waited for the unfinished head");
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), slow.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the slow connection was not closed");
}

#[tokio::test]
async fn a_request_head_shorter_than_the_http2_preface_is_served_and_its_connection_kept() {
    // The first bytes' deadline (header-read timeout from the connection's start) must not
    // outlive the first byte of an HTTP/1 connection, however short its request head.
    let timeout = Duration::from_millis(300);
    let (_server, addr) = start_with(timeout, Duration::from_secs(5)).await;
    let head = "GET /s HTTP/1.1\r\nHost:a\r\n\r\n";
    assert_eq!(head.len(), 27);
    let mut stream = TcpStream::connect(addr).await.unwrap();
    // The handler takes twice the header-read timeout.
    let sent = std::time::Instant::now();
    let answer = read_after_write(&mut stream, head).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Reused at once, within the header-read timeout (a close sooner than it fails the test;
    // a later one, a client slowed down that long by a busy machine, leaves it unsaid).
    let previous = Previous {
        sent,
        handler: Duration::from_millis(600),
    };
    if let Some(answer) = reuse(&mut stream, head, &previous, timeout).await {
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
}

#[tokio::test]
async fn a_tiny_request_head_then_a_trickled_one_is_cut_off_at_the_header_timeout() {
    // The idle timeout is beyond the time the test waits: only the header-read timeout can
    // cut the connection off within it.
    let head_timeout = Duration::from_millis(300);
    let (_server, addr) = start_with(head_timeout, Duration::from_secs(60)).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = b"GET /wait HTTP/1.1\r\nHost:a\r\n\r\n";
    assert!(
        head.len() < 33,
        "shorter than the HTTP/2 preface and a frame header"
    );
    // Before the request: the server's count for the next head starts after its response,
    // so it cannot end the connection sooner than the timeout after this, however slow the
    // machine.
    let sent = std::time::Instant::now();
    stream.write_all(head).await.unwrap();
    let answer = read_one_response(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let (mut reader, mut writer) = stream.into_split();
    // The next head, a byte every 50 ms for longer than the test waits (20 s), never finished:
    // only a header-read timeout counted from the end of the response, not set again by each
    // byte, ends it within the 10 s the test waits.
    let trickle = tokio::spawn(async move {
        let next = b"GET /wait HTTP/1.1\r\nHost:a\r\nX-Slow: ".iter();
        for byte in next.chain([b'a'; 400].iter()) {
            tokio::time::sleep(Duration::from_millis(50)).await;
            if writer.write_all(&[*byte]).await.is_err() {
                return;
            }
        }
    });
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), reader.read_to_end(&mut rest)).await;
    trickle.abort();
    assert!(
        read.is_ok(),
        "the trickling client was not cut off within 10 s"
    );
    assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
    // Counted from the end of the response, never before it.
    assert!(
        sent.elapsed() >= head_timeout,
        "cut off {:?} after the first request was sent",
        sent.elapsed()
    );
}

#[tokio::test]
async fn a_request_waiting_for_the_applications_concurrency_limit_is_not_cut_off() {
    // The header-read timeout is for heads: a request whose head has arrived and which waits
    // for a place under the application's own concurrency limit is in flight, however long
    // it waits.
    let config = create_config()
        .cors(Cors::Disabled)
        .limits(limits().header_read_timeout(Some(Duration::from_millis(200))))
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    let layers = tower::ServiceBuilder::new().concurrency_limit(1);
    let started = Started::default();
    let server = strata::create_server(&config, &routing_with(&started))
        .layers(layers)
        .await
        .unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    let request = b"GET /wait?ms=800 HTTP/1.1\r\nHost: a\r\n\r\n";
    let mut first = TcpStream::connect(addr).await.unwrap();
    first.write_all(request).await.unwrap();
    started.reached(1).await;
    // Waits 750 ms for the first to finish, then 800 ms of its own.
    let mut second = TcpStream::connect(addr).await.unwrap();
    second.write_all(request).await.unwrap();
    for stream in [&mut first, &mut second] {
        let head = read_one_response(stream).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    }
}

/// An application's own envelope, `{"problem": <message>}` with the error's status.
#[derive(Clone)]
struct Problems;

impl ResultHandler for Problems {
    fn positive(&self, _output: &schemars::Schema) -> Vec<strata::ResponseDescription> {
        Vec::new()
    }

    fn negative(&self) -> Vec<strata::ResponseDescription> {
        Vec::new()
    }

    fn handle(
        &self,
        result: Result<strata::core::Output, ApiError>,
        _request: &RequestInfo,
        _logger: &Logger,
    ) -> http::Response<strata::Body> {
        let (status, message) = match result {
            Ok(_) => (http::StatusCode::OK, String::new()),
            Err(error) => (error.status(), error.message().to_owned()),
        };
        let mut response = http::Response::new(strata::Body::from(
            serde_json::json!({ "problem": message }).to_string(),
        ));
        *response.status_mut() = status;
        response
    }
}

#[tokio::test]
async fn the_servers_own_errors_go_through_the_error_handler() {
    let config = create_config()
        .cors(Cors::Disabled)
        .error_handler(Problems)
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    let layers = tower::ServiceBuilder::new().timeout(Duration::from_millis(200));
    let server = strata::create_server(&config, &routing())
        .layers(layers)
        .await
        .unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    // The connection's own 400.
    let missing = exchange(
        addr,
        b"GET /wait HTTP/1.1\r\nConnection: close\r\n\r\n",
        false,
    )
    .await;
    assert!(missing.starts_with("HTTP/1.1 400"), "{missing}");
    assert!(
        missing.ends_with(r#"{"problem":"An HTTP/1.1 request needs a Host header"}"#),
        "{missing}"
    );
    // The application's layer's 504.
    let slow = exchange(
        addr,
        b"GET /wait?ms=2000 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        false,
    )
    .await;
    assert!(slow.starts_with("HTTP/1.1 504"), "{slow}");
    assert!(
        slow.ends_with(r#"{"problem":"The request took too long"}"#),
        "{slow}"
    );
}

// Availability against one host (issue 25): connections without streams, streams without
// progress, requests waiting for the application, slow bodies, shutdown.

/// A server with `limits` (on top of the small body deadlines) around `layers`, its `/wait`
/// handler marking `started` as it begins.
async fn start_layered<L>(
    limits: ServerLimits,
    layers: L,
    started: &Started,
) -> (strata::Server, std::net::SocketAddr)
where
    L: tower::Layer<strata::server::App> + Send + 'static,
    L::Service: tower::Service<
            http::Request<strata::server::ServerBody>,
            Response = http::Response<strata::Body>,
        > + Clone
        + Send
        + Sync
        + 'static,
    <L::Service as tower::Service<http::Request<strata::server::ServerBody>>>::Error:
        Into<strata::core::BoxError>,
    <L::Service as tower::Service<http::Request<strata::server::ServerBody>>>::Future:
        Send + 'static,
{
    let config = create_config()
        .cors(Cors::Disabled)
        .limits(limits)
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    let server = strata::create_server(&config, &routing_with(started))
        .layers(layers)
        .await
        .unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    (server, addr)
}

/// An HTTP/2 client that sends its preface and settings and nothing more, once the server
/// has sent its first frame (read whole): the connection is served and holds a place.
async fn quiet_http2(addr: std::net::SocketAddr) -> TcpStream {
    quiet_http2_from([127, 0, 0, 1], addr).await
}

/// The next HTTP/2 frame's type and flags (its payload skipped), within 10 s; `None` at the
/// end of the connection.
async fn read_h2_frame(stream: &mut TcpStream) -> Option<(u8, u8)> {
    let mut head = [0; 9];
    tokio::time::timeout(Duration::from_secs(10), stream.read_exact(&mut head))
        .await
        .expect("a frame or the end within 10 s")
        .ok()?;
    let length = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
    let mut payload = vec![0; length];
    stream.read_exact(&mut payload).await.ok()?;
    Some((head[3], head[4]))
}

/// Whether the server answers a PING on `stream` (frames before the answer are skipped).
async fn answers_ping(stream: &mut TcpStream) -> bool {
    let ping = b"\0\0\x08\x06\0\0\0\0\0pingping";
    if stream.write_all(ping).await.is_err() {
        return false;
    }
    while let Some((kind, flags)) = read_h2_frame(stream).await {
        if kind == 6 && flags & 1 == 1 {
            return true;
        }
    }
    false
}

/// A server capped at `cap` connections (`share` per address) whose header-read and idle
/// timeouts are a minute away: idle connections would hold their places that long.
async fn start_at_the_cap(
    cap: usize,
    share: Option<usize>,
) -> (strata::Server, std::net::SocketAddr) {
    start_layered(
        limits()
            .max_connections(Some(cap))
            .max_connections_per_client(share)
            .header_read_timeout(Some(Duration::from_secs(60)))
            .idle_timeout(Some(Duration::from_secs(60))),
        tower::layer::util::Identity::new(),
        &Started::default(),
    )
    .await
}

#[tokio::test]
async fn at_the_connection_cap_only_the_connection_idle_longest_makes_room() {
    let (_server, addr) = start_at_the_cap(6, None).await;
    // Every place taken, oldest first.
    let mut idle = Vec::new();
    for _ in 0..6 {
        idle.push(quiet_http2(addr).await);
    }
    // Long enough that every one of them may be asked to make room (a connection is not
    // asked in its first quarter of a second: it is about to send its request).
    tokio::time::sleep(Duration::from_millis(400)).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /wait HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer))
        .await
        .expect("not served within 20 s: no idle connection made room")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // The oldest was asked to go: GOAWAY, then the end.
    let mut oldest = idle.remove(0);
    let mut frames = Vec::new();
    while let Some((kind, _)) = read_h2_frame(&mut oldest).await {
        frames.push(kind);
    }
    assert!(frames.contains(&7), "GOAWAY before the end: {frames:?}");
    // The others were not: each still answers.
    for (n, stream) in idle.iter_mut().enumerate() {
        assert!(
            answers_ping(stream).await,
            "connection {} was closed too",
            n + 2
        );
    }
}

/// An HTTP/2 client from `from` that sends its preface and settings, once served.
async fn quiet_http2_from(from: [u8; 4], addr: std::net::SocketAddr) -> TcpStream {
    let mut stream = connect_from(from, addr).await;
    stream
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .await
        .unwrap();
    let (kind, _) = read_h2_frame(&mut stream)
        .await
        .expect("the server's SETTINGS");
    assert_eq!(kind, 4, "SETTINGS first");
    stream
}

#[tokio::test]
async fn at_the_cap_a_client_past_its_share_is_refused_without_costing_another_its_place() {
    let (_server, addr) = start_at_the_cap(4, Some(2)).await;
    let (one, other) = ([127, 0, 0, 5], [127, 0, 0, 6]);
    let mut idle = Vec::new();
    for from in [one, one, other, other] {
        idle.push(quiet_http2_from(from, addr).await);
    }
    // Every one of them could be asked to make room.
    tokio::time::sleep(Duration::from_millis(400)).await;
    // A third from an address holding its share: closed at once.
    let mut third = connect_from(one, addr).await;
    let mut buffer = [0; 64];
    let read = tokio::time::timeout(Duration::from_secs(10), third.read(&mut buffer))
        .await
        .expect("refused within 10 s");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    // No connection made room for it: each still answers.
    for (n, stream) in idle.iter_mut().enumerate() {
        assert!(
            answers_ping(stream).await,
            "connection {} was closed",
            n + 1
        );
    }
}

#[tokio::test]
async fn one_http2_stream_without_progress_ends_its_connection_while_others_progress() {
    use http_body_util::{BodyExt, Empty};
    let (_server, addr) = start_with_short_timeouts().await;
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .timer(hyper_util::rt::TokioTimer::new())
            // Room for the small answers; a big one fills it and waits for a reader.
            .initial_stream_window_size(64 * 1024)
            .handshake::<_, Empty<hyper::body::Bytes>>(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    let mut connection = tokio::spawn(connection);
    let big = sender
        .send_request(
            http::Request::get("http://a/big")
                .body(Empty::new())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(big.status(), 200);
    // Never read: its window stays full. Meanwhile other streams come and go every 100 ms,
    // until the connection ends (at the write timeout, 400 ms, and an eighth, and a look; the
    // paused-time tests of the connection watcher hold it to that).
    let others = async {
        loop {
            let request = http::Request::get("http://a/wait")
                .body(Empty::new())
                .unwrap();
            let Ok(response) = sender.send_request(request).await else {
                return;
            };
            if response.into_body().collect().await.is_err() {
                return;
            }
            tokio::select! {
                _ = &mut connection => return,
                () = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
    };
    let ended = tokio::time::timeout(Duration::from_secs(20), others).await;
    drop(big);
    assert!(
        ended.is_ok(),
        "the stalled stream's connection is still served after 20 s"
    );
}

#[tokio::test]
async fn a_request_the_application_does_not_take_in_time_gets_a_503() {
    let handlers = Started::default();
    let (_server, addr) = start_layered(
        limits().admission_timeout(Some(Duration::from_millis(300))),
        tower::ServiceBuilder::new().concurrency_limit(1),
        &handlers,
    )
    .await;
    // Held in its handler until the test releases it.
    let holding = tokio::spawn(async move {
        exchange(
            addr,
            b"GET /wait?hold=true HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
            false,
        )
        .await
    });
    // The only place under the limit is taken once its handler runs.
    handlers.reached(1).await;
    // Before the request: the server's wait for a place starts after it, so a server that
    // waits its timeout never answers sooner than this says, however slow the machine.
    let sent = std::time::Instant::now();
    // With a body still to come: the answer closes the connection.
    let refused = exchange_until_closed(
        addr,
        b"POST /note HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
    )
    .await;
    let took = sent.elapsed();
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    let lower = refused.to_ascii_lowercase();
    assert!(lower.contains("retry-after: 1"), "{refused}");
    assert!(lower.contains("connection: close"), "{refused}");
    // Not before the admission timeout.
    assert!(took >= Duration::from_millis(300), "{took:?}");
    handlers.release();
    assert!(holding.await.unwrap().starts_with("HTTP/1.1 200"));
}

#[tokio::test]
async fn a_body_slower_than_the_minimum_rate_gets_a_408_early() {
    // Early: the idle timeout and the whole-body deadline are far away; the answer says which
    // rule ended the body.
    let (_server, addr) = start_layered(
        limits()
            .body_idle_timeout(Some(Duration::from_secs(30)))
            .body_read_timeout(Some(Duration::from_secs(30)))
            .min_body_rate(Some(strata::server::MinDataRate {
                bytes_per_second: 100,
                grace: Duration::from_millis(500),
            })),
        tower::layer::util::Identity::new(),
        &Started::default(),
    )
    .await;
    let head = "POST /note HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n";
    // A byte every 200 ms: under the idle timeout, far under 100 B/s.
    let answer = stall(addr, head, b"{", Some(Duration::from_millis(200))).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.contains("slower than 100 bytes per second"),
        "{answer}"
    );
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
}

#[tokio::test]
async fn a_layers_timeout_while_the_body_arrives_closes_the_connection() {
    let (_server, addr) = start_layered(
        limits()
            .body_idle_timeout(Some(Duration::from_secs(5)))
            .body_read_timeout(Some(Duration::from_secs(5))),
        tower::ServiceBuilder::new().timeout(Duration::from_millis(300)),
        &Started::default(),
    )
    .await;
    let head = "POST /note HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n";
    let answer = stall(addr, head, b"{", None).await;
    assert!(answer.starts_with("HTTP/1.1 504"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
}

/// A server whose shutdown timeout is 300 ms, its `/wait` handler marking `started`.
async fn start_with_short_shutdown(started: &Started) -> (strata::Server, std::net::SocketAddr) {
    let config = create_config()
        .cors(Cors::Disabled)
        .limits(limits().shutdown_timeout(Some(Duration::from_millis(300))))
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    let server = create_server(&config, &routing_with(started))
        .await
        .unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    (server, addr)
}

#[tokio::test]
async fn at_the_shutdown_timeout_a_request_without_an_answer_gets_a_503() {
    let started_handler = Started::default();
    let (server, addr) = start_with_short_shutdown(&started_handler).await;
    // Held in its handler for as long as the test lasts: only the shutdown timeout ends it.
    let waiting = tokio::spawn(async move {
        exchange(
            addr,
            b"GET /wait?hold=true HTTP/1.1\r\nHost: a\r\n\r\n",
            false,
        )
        .await
    });
    started_handler.reached(1).await;
    tokio::time::timeout(Duration::from_secs(20), server.shutdown())
        .await
        .expect("the shutdown waited for the request beyond its timeout");
    let answer = waiting.await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer:?}");
    assert!(answer.contains("shutting down"), "{answer}");
}

// Path parameters win over headers (issue 25)

#[derive(Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Hook {
    topic: String,
}

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Acted {
    topic: String,
}

#[tokio::test]
async fn a_header_named_like_a_path_parameter_does_not_override_it() {
    // The webhook example's sources: the headers last, for its signature header.
    let config = create_config()
        .cors(Cors::Disabled)
        .input_sources(
            &http::Method::POST,
            [InputSource::Body, InputSource::Params, InputSource::Headers],
        )
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    let hook = default_endpoints_factory()
        .post()
        .handler(async |input: Hook| Ok(Acted { topic: input.topic }));
    let server = create_server(&config, &routing! { "hooks" => { ":topic" => hook } })
        .await
        .unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    let answer = exchange(
        addr,
        b"POST /hooks/orders HTTP/1.1\r\nHost: a\r\nTopic: payments\r\n\
          Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
        false,
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.ends_with(r#""data":{"topic":"orders"}}"#),
        "{answer}"
    );
}

#[tokio::test]
async fn layers_after_the_body_count_neither_uploads_nor_their_time() {
    let mut config = create_config()
        .cors(Cors::Disabled)
        .limits(
            limits()
                .body_idle_timeout(Some(Duration::from_secs(10)))
                .body_read_timeout(Some(Duration::from_secs(20))),
        )
        .after_body(
            tower::ServiceBuilder::new()
                .timeout(Duration::from_millis(300))
                .layer(tower::limit::GlobalConcurrencyLimitLayer::new(1)),
        )
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    // Room for every body here: the budget only shows when the upload's body is arriving.
    let budget = strata::stages::parse::BodyBudget::new(1024 * 1024);
    config.pipeline.body_budget = Some(budget.clone());
    let server = create_server(&config, &routing()).await.unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    // An honest upload taking over 1 s (over the 300 ms timeout of the work): two bytes every
    // 40 ms, its last two held back until the test lets them go.
    let text = "a".repeat(40);
    let body = format!(r#"{{"text":"{text}"}}"#);
    let head = format!(
        "POST /note HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let (finish, finishing) = tokio::sync::oneshot::channel::<()>();
    let upload = tokio::spawn(async move {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(head.as_bytes()).await.unwrap();
        let (pieces, last) = body.as_bytes().split_at(body.len() - 2);
        for piece in pieces.chunks(2) {
            stream.write_all(piece).await.unwrap();
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
        // (Also when the test gave up: the sender is dropped.)
        let _ = finishing.await;
        stream.write_all(last).await.unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.unwrap();
        String::from_utf8_lossy(&answer).into_owned()
    });
    // The upload has started: the parse stage holds its first bytes.
    until("the upload's body is arriving", || budget.used() > 0).await;
    // Meanwhile the only place under the limit is free: another request is served while the
    // upload still arrives (its end is held back until then).
    let health = exchange(
        addr,
        b"GET /wait HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        false,
    )
    .await;
    assert!(
        health.starts_with("HTTP/1.1 200"),
        "not served while an upload arrived: {health:?}"
    );
    finish.send(()).unwrap();
    // And the upload's own time does not count against the timeout of its work.
    let uploaded = upload.await.unwrap();
    assert!(uploaded.starts_with("HTTP/1.1 200"), "{uploaded}");
    // The timeout still times the work.
    let slow = exchange(
        addr,
        b"GET /wait?ms=1000 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        false,
    )
    .await;
    assert!(slow.starts_with("HTTP/1.1 504"), "{slow}");
}

// Files: lazy opening, ranges, shortages (issue 25)

#[derive(Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct FileName {
    name: String,
}

/// `/files/:name`: the file of that name in the scratch directory, sent by a handler.
fn file_download() -> Endpoint {
    default_endpoints_factory()
        .get()
        .handler(async |input: FileName| FileResponse::open(scratch().join(input.name)).await)
}

/// How many descriptors of this process are open on `path` (the server runs in the test's
/// process).
fn descriptors_of(path: &std::path::Path) -> usize {
    let path = path.canonicalize().unwrap();
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| std::fs::read_link(entry.path()).is_ok_and(|target| target == path))
        .count()
}

/// 64 HTTP/2 streams without window download `name` of the scratch directory from `uri`
/// (a route of the test's routing): while they wait, none holds the file open.
async fn http2_downloads_without_window_hold_no_descriptor(name: &str, uri: &str) {
    use http_body_util::Empty;
    const STREAMS: usize = 64;
    let (_server, addr) = start().await;
    let path = scratch().join(name);
    std::fs::write(&path, vec![7_u8; 256 * 1024]).unwrap();
    let stream = TcpStream::connect(addr).await.unwrap();
    let (sender, connection) =
        hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .timer(hyper_util::rt::TokioTimer::new())
            // No flow-control window: the server cannot send a byte of any body.
            .initial_stream_window_size(0)
            .handshake::<_, Empty<hyper::body::Bytes>>(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    let downloads: Vec<_> = (0..STREAMS)
        .map(|_| {
            let mut sender = sender.clone();
            let uri = format!("http://a{uri}");
            tokio::spawn(async move {
                let request = http::Request::get(uri).body(Empty::new()).unwrap();
                sender.send_request(request).await.unwrap()
            })
        })
        .collect();
    let mut responses = Vec::with_capacity(STREAMS);
    for download in downloads {
        let response = download.await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-length"], "262144");
        responses.push(response);
    }
    // Every stream has its head and waits for window: none holds the file open (once the
    // reads of first chunks, which hyper takes before it has window, are over).
    until(
        "no descriptor of the file while the streams wait for window",
        || descriptors_of(&path) == 0,
    )
    .await;
    drop(responses);
}

#[tokio::test]
async fn http2_downloads_without_window_hold_no_descriptor_of_the_file() {
    http2_downloads_without_window_hold_no_descriptor("lazy.bin", "/files/lazy.bin").await;
}

#[tokio::test]
async fn http2_downloads_of_static_files_without_window_hold_no_descriptor() {
    http2_downloads_without_window_hold_no_descriptor("lazy-static.bin", "/public/lazy-static.bin")
        .await;
}

#[tokio::test]
async fn one_byte_range_of_a_file_response_is_a_206_and_if_range_is_checked() {
    let (_server, addr) = start().await;
    std::fs::write(scratch().join("letters.txt"), "abcdefghijklmnopqrstuvwxyz").unwrap();
    let get = |extra: &str| {
        format!("GET /files/letters.txt HTTP/1.1\r\nHost: a\r\n{extra}Connection: close\r\n\r\n")
    };
    let head_of = |answer: &str| {
        answer
            .split("\r\n\r\n")
            .next()
            .unwrap()
            .to_ascii_lowercase()
    };

    let whole = exchange(addr, get("").as_bytes(), false).await;
    assert!(whole.starts_with("HTTP/1.1 200"), "{whole}");
    assert!(head_of(&whole).contains("accept-ranges: bytes"), "{whole}");
    assert!(
        whole.ends_with("\r\n\r\nabcdefghijklmnopqrstuvwxyz"),
        "{whole}"
    );
    let last_modified = whole
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(": ")?;
            name.eq_ignore_ascii_case("last-modified")
                .then(|| value.to_owned())
        })
        .expect("a Last-Modified header");

    let part = exchange(addr, get("Range: bytes=0-9\r\n").as_bytes(), false).await;
    assert!(part.starts_with("HTTP/1.1 206"), "{part}");
    assert!(
        head_of(&part).contains("content-range: bytes 0-9/26"),
        "{part}"
    );
    assert!(head_of(&part).contains("content-length: 10"), "{part}");
    assert!(part.ends_with("\r\n\r\nabcdefghij"), "{part}");

    let suffix = exchange(addr, get("Range: bytes=-3\r\n").as_bytes(), false).await;
    assert!(suffix.starts_with("HTTP/1.1 206"), "{suffix}");
    assert!(suffix.ends_with("\r\n\r\nxyz"), "{suffix}");

    let beyond = exchange(addr, get("Range: bytes=26-\r\n").as_bytes(), false).await;
    assert!(beyond.starts_with("HTTP/1.1 416"), "{beyond}");
    assert!(
        head_of(&beyond).contains("content-range: bytes */26"),
        "{beyond}"
    );

    // `If-Range` naming the file's date keeps the range; another validator gets it all.
    let same = format!("Range: bytes=0-9\r\nIf-Range: {last_modified}\r\n");
    let same = exchange(addr, get(&same).as_bytes(), false).await;
    assert!(same.starts_with("HTTP/1.1 206"), "{same}");
    let other = "Range: bytes=0-9\r\nIf-Range: \"some-other-version\"\r\n";
    let other = exchange(addr, get(other).as_bytes(), false).await;
    assert!(other.starts_with("HTTP/1.1 200"), "{other}");
    assert!(
        other.ends_with("\r\n\r\nabcdefghijklmnopqrstuvwxyz"),
        "{other}"
    );
}

#[tokio::test]
async fn at_the_shutdown_timeout_an_http2_stream_without_an_answer_gets_a_503() {
    use http_body_util::Empty;
    let started_handler = Started::default();
    let (server, addr) = start_with_short_shutdown(&started_handler).await;
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .handshake::<_, Empty<hyper::body::Bytes>>(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    // Held in its handler for as long as the test lasts: only the shutdown timeout ends it.
    let waiting = tokio::spawn(async move {
        let request = http::Request::get("http://a/wait?hold=true")
            .body(Empty::new())
            .unwrap();
        sender.send_request(request).await.map(|r| r.status())
    });
    started_handler.reached(1).await;
    tokio::time::timeout(Duration::from_secs(20), server.shutdown())
        .await
        .expect("the shutdown waited for the stream beyond its timeout");
    let status = waiting.await.unwrap().unwrap();
    assert_eq!(status, 503);
}

// The body budget counts bytes that arrived (issue 25)

/// A server with `budget` and body deadlines long enough for the attacks below to last.
async fn start_with_budget(
    budget: &strata::stages::parse::BodyBudget,
) -> (strata::Server, std::net::SocketAddr) {
    let mut config = create_config()
        .cors(Cors::Disabled)
        .limits(
            ServerLimits::default()
                .body_idle_timeout(Some(Duration::from_secs(5)))
                .body_read_timeout(Some(Duration::from_secs(10))),
        )
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    config.pipeline.body_budget = Some(budget.clone());
    let server = create_server(&config, &routing()).await.unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    (server, addr)
}

/// A connection from `from`, any address of 127/8 (Linux routes them all to loopback): the
/// server sees another client than 127.0.0.1.
async fn connect_from(from: [u8; 4], addr: std::net::SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(std::net::SocketAddr::from((from, 0))).unwrap();
    socket.connect(addr).await.unwrap()
}

#[tokio::test]
async fn bodies_that_promise_much_and_trickle_do_not_starve_other_requests() {
    let budget = strata::stages::parse::BodyBudget::new(64 * 1024);
    let (_server, addr) = start_with_budget(&budget).await;
    // 32 connections from one host declare 16 KiB each and send a byte every 100 ms. Reserved
    // up front, four such promises held the whole budget for as long as they liked.
    let head = "POST /note HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 16384\r\n\r\n";
    let mut trickles = Vec::new();
    for _ in 0..32 {
        let mut stream = connect_from([127, 0, 0, 2], addr).await;
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(b"{").await.unwrap();
        trickles.push(tokio::spawn(async move {
            // Bounded: 5 s at most, whatever the server does.
            for _ in 0..50 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                if stream.write_all(b" ").await.is_err() {
                    return;
                }
            }
        }));
    }
    until("every trickled body has begun", || budget.used() >= 32).await;
    // An ordinary POST from another address is answered, again and again.
    let body = r#"{"text":"an ordinary note"}"#;
    let request = format!(
        "POST /note HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    for _ in 0..5 {
        let answer = exchange(addr, request.as_bytes(), false).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The trickles hold what arrived (a buffer at most twice that), not what they declared.
    assert!(budget.used() < 4096, "{}", budget.used());
    for trickle in trickles {
        trickle.abort();
    }
}

#[tokio::test]
async fn one_address_cannot_take_more_than_its_share_while_another_still_fits() {
    let budget = strata::stages::parse::BodyBudget::new(8000);
    assert_eq!(budget.client_share(), 2000, "a quarter by default");
    let (_server, addr) = start_with_budget(&budget).await;
    let attacker = [127, 0, 0, 2];
    let attackers = strata::core::ClientAddr(attacker.into());
    let head = "POST /note HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n";
    // Three bodies of which 600 bytes arrive, then nothing: the address holds 1800 of its
    // 2000.
    let mut stalled = Vec::new();
    for count in 1..=3 {
        let mut stream = connect_from(attacker, addr).await;
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(&[b' '; 600]).await.unwrap();
        stalled.push(stream);
        until("the body holds what arrived", || {
            budget.used_by(attackers) >= 600 * count
        })
        .await;
    }
    // A fourth goes over the share: a 503 as its bytes arrive, and the connection is closed.
    let mut fourth = connect_from(attacker, addr).await;
    fourth.write_all(head.as_bytes()).await.unwrap();
    fourth.write_all(&[b' '; 600]).await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), fourth.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the connection was not closed");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
    assert_eq!(budget.used_by(attackers), 1800);
    // Another address (one counted apart: the counters are hashed at random) still fits a
    // body as large as the attacker's three.
    let other = (3..=255)
        .map(|last| [127, 0, 0, last])
        .find(|other| budget.used_by(strata::core::ClientAddr((*other).into())) == 0)
        .unwrap();
    let body = format!(r#"{{"text":"{}"}}"#, "o".repeat(1789));
    let mut stream = connect_from(other, addr).await;
    let request = format!(
        "POST /note HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "no answer");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // The attacker's share is given back when its connections go.
    drop(stalled);
    until("the stalled bodies gave their share back", || {
        budget.used() == 0
    })
    .await;
}

#[tokio::test]
async fn one_address_holds_at_most_its_share_of_the_connection_cap() {
    let (_server, addr) = start_layered(
        limits()
            .max_connections(Some(8))
            .max_connections_per_client(Some(3))
            .header_read_timeout(Some(Duration::from_secs(30))),
        tower::layer::util::Identity::new(),
        &Started::default(),
    )
    .await;
    let attacker = [127, 0, 0, 2];
    // Three connections hold the address's share (each has sent a request and keeps the
    // connection).
    let mut share = Vec::new();
    for _ in 0..3 {
        let mut stream = connect_from(attacker, addr).await;
        stream
            .write_all(b"GET /wait HTTP/1.1\r\nHost: a\r\n\r\n")
            .await
            .unwrap();
        let head = read_one_response(&mut stream).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        share.push(stream);
    }
    // A fourth from the same address is closed at once, unanswered.
    let mut refused = connect_from(attacker, addr).await;
    let _ = refused
        .write_all(b"GET /wait HTTP/1.1\r\nHost: a\r\n\r\n")
        .await;
    let mut answer = Vec::new();
    // (Only the header-read timeout, 30 s, would close it otherwise.)
    let read =
        tokio::time::timeout(Duration::from_secs(10), refused.read_to_end(&mut answer)).await;
    assert!(matches!(read, Ok(Ok(0) | Err(_))), "{read:?} {answer:?}");
    // Another address still gets in, under the cap.
    let answer = exchange(
        addr,
        b"GET /wait HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        false,
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Once one of the three closes, the address has a place again, as soon as the server has
    // seen the close (at its next read): until then a new connection is closed unanswered.
    drop(share.pop());
    let served = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let mut again = connect_from(attacker, addr).await;
            let request = "GET /wait HTTP/1.1\r\nHost: a\r\n\r\n";
            if let Ok(head) = async {
                again
                    .write_all(request.as_bytes())
                    .await
                    .map_err(|e| e.to_string())?;
                try_read_one_response(&mut again).await
            }
            .await
            {
                return head;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the address has no place 10 s after one of its connections closed");
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");
}

/// A keep-alive connection whose request was shed (`load_shed` over `concurrency_limit`: the
/// limit, full, queues a wait for the next permit, and the shedding answers 503 at once) does
/// not keep that wait while it sits idle: the next permit goes to the next request, on another
/// connection. (An attempt to call one instance of the stack per connection, instead of a clone
/// per request, left the wait queued on the idle connection's instance.)
#[tokio::test]
async fn a_shed_request_leaves_no_claim_on_the_limit_with_its_idle_connection() {
    let started = Started::default();
    let (_server, addr) = start_layered(
        limits(),
        tower::ServiceBuilder::new()
            .load_shed()
            .concurrency_limit(1),
        &started,
    )
    .await;
    // Held in its handler until the test releases it.
    let holding = tokio::spawn(async move {
        exchange(
            addr,
            b"GET /wait?hold=true HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
            false,
        )
        .await
    });
    started.reached(1).await;
    // Shed while the only place is taken; the connection stays open and idle.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    idle.write_all(b"GET /wait HTTP/1.1\r\nHost: a\r\n\r\n")
        .await
        .unwrap();
    let shed = read_one_response(&mut idle).await;
    assert!(shed.starts_with("HTTP/1.1 503"), "{shed}");
    started.release();
    assert!(holding.await.unwrap().starts_with("HTTP/1.1 200"));
    // The place is free again: another connection gets it, while the shed one idles.
    let next = exchange(
        addr,
        b"GET /wait HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        false,
    )
    .await;
    assert!(next.starts_with("HTTP/1.1 200"), "{next}");
    drop(idle);
}
