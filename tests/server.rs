//! The server over real sockets on 127.0.0.1:0: HTTP/1.1, HTTP/2, HTTPS, UNIX sockets, graceful
//! shutdown, slow clients, compression, request ids, configuration errors.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::sync::Arc;
use std::time::{Duration, Instant};
use strata::Routing;
use strata::server::Compression;

use garde::Validate;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::prelude::*;
use strata::server::{Listen, LocalAddr, Pem, ServerError, ServerLimits};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

#[path = "common/probe.rs"]
mod probe;
use probe::{Started, all_read, sleeps_through, until};

#[derive(Deserialize, Validate, JsonSchema)]
struct Wait {
    #[garde(range(max = 5000))]
    ms: Option<u64>,
    #[garde(range(max = 100_000))]
    size: Option<usize>,
    /// Held until the test releases its `Started` (then `ms` more).
    #[garde(skip)]
    hold: Option<bool>,
}

#[derive(Serialize, Validate, JsonSchema)]
struct Waited {
    #[garde(skip)]
    request_id: Option<String>,
    #[garde(skip)]
    padding: String,
}

fn routing() -> Routing {
    routing_with(&Started::default())
}

/// The routing, its `/wait` handler marking `started` as it begins (and held by it when
/// asked, `?hold=true`).
fn routing_with(started: &Started) -> Routing {
    let started = started.clone();
    let wait = default_endpoints_factory()
        .get()
        .handler(move |input: Wait, logger: Logger| {
            started.mark();
            let started = started.clone();
            async move {
                if input.hold == Some(true) {
                    started.hold().await;
                }
                if let Some(ms) = input.ms {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                Ok(Waited {
                    request_id: logger.request_id().map(str::to_owned),
                    padding: "x".repeat(input.size.unwrap_or(0)),
                })
            }
        });
    let echo = default_endpoints_factory()
        .post()
        .handler(async |input: Echo| Ok(input));
    routing! { "wait" => wait, "echo" => echo }
}

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Echo {
    text: String,
}

/// Tests listen on loopback only, on a port the system picks.
fn loopback() -> std::net::SocketAddr {
    std::net::SocketAddr::from(([127, 0, 0, 1], 0))
}

fn config() -> strata::ConfigBuilder {
    create_config().cors(Cors::Enabled)
}

fn tcp_addr(server: &strata::Server, index: usize) -> std::net::SocketAddr {
    match &server.servers()[index].local_addr {
        LocalAddr::Tcp(addr) => *addr,
        LocalAddr::Unix(path) => panic!("not TCP: {}", path.display()),
    }
}

async fn http1<IO>(io: IO, request: Request<Empty<Bytes>>) -> Response<Incoming>
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .unwrap();
    tokio::spawn(connection);
    sender.send_request(request).await.unwrap()
}

async fn http2<IO>(io: IO, request: Request<Empty<Bytes>>) -> Response<Incoming>
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io))
            .await
            .unwrap();
    tokio::spawn(connection);
    sender.send_request(request).await.unwrap()
}

fn get(uri: &str) -> Request<Empty<Bytes>> {
    Request::get(uri)
        .header("host", "localhost")
        .body(Empty::new())
        .unwrap()
}

async fn text(response: Response<Incoming>) -> String {
    String::from_utf8(
        response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec(),
    )
    .unwrap()
}

#[tokio::test]
async fn http1_and_http2_on_one_port() {
    let server = create_server(&config().listen(loopback()).build(), &routing())
        .await
        .unwrap();
    let addr = tcp_addr(&server, 0);
    let response = http1(TcpStream::connect(addr).await.unwrap(), get("/wait")).await;
    assert_eq!(response.version(), http::Version::HTTP_11);
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    let response = http2(
        TcpStream::connect(addr).await.unwrap(),
        get("http://localhost/wait"),
    )
    .await;
    assert_eq!(response.version(), http::Version::HTTP_2);
    assert_eq!(response.status(), 200);
    assert!(text(response).await.starts_with(r#"{"status":"success""#));
    let response = http1(TcpStream::connect(addr).await.unwrap(), get("/nope")).await;
    assert_eq!(response.status(), 404);
    server.shutdown().await;
}

struct Tls {
    cert_pem: String,
    key_pem: String,
}

fn certificate() -> Tls {
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    Tls {
        cert_pem: generated.cert.pem(),
        key_pem: generated.signing_key.serialize_pem(),
    }
}

async fn tls_connect(
    addr: std::net::SocketAddr,
    tls: &Tls,
    alpn: &[u8],
) -> tokio_rustls::client::TlsStream<TcpStream> {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
    use tokio_rustls::rustls::{ClientConfig, RootCertStore, crypto::ring};

    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(tls.cert_pem.as_bytes()).unwrap())
        .unwrap();
    let mut client = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.alpn_protocols = vec![alpn.to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
    let stream = TcpStream::connect(addr).await.unwrap();
    connector
        .connect(ServerName::try_from("localhost").unwrap(), stream)
        .await
        .unwrap()
}

#[tokio::test]
async fn https_and_http_at_once() {
    let tls = certificate();
    let config = config()
        .listen(loopback())
        .https(
            Pem::Bytes(tls.cert_pem.clone().into_bytes()),
            Pem::Bytes(tls.key_pem.clone().into_bytes()),
            0u16,
        )
        .build();
    let server = create_server(&config, &routing()).await.unwrap();
    assert_eq!(server.servers().len(), 2);
    let plain = tcp_addr(&server, 0);
    let secure = tcp_addr(&server, 1);
    assert_eq!(
        server.servers()[1].protocol,
        strata::server::Protocol::Https
    );

    let response = http1(TcpStream::connect(plain).await.unwrap(), get("/wait")).await;
    assert_eq!(response.status(), 200);
    let stream = tls_connect(secure, &tls, b"h2").await;
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let response = http2(stream, get("https://localhost/wait")).await;
    assert_eq!(
        (response.version(), response.status()),
        (http::Version::HTTP_2, StatusCode::OK)
    );
    let response = http1(tls_connect(secure, &tls, b"http/1.1").await, get("/wait")).await;
    assert_eq!(
        (response.version(), response.status()),
        (http::Version::HTTP_11, StatusCode::OK)
    );
    // plain HTTP on the TLS port gets no answer
    let mut raw = TcpStream::connect(secure).await.unwrap();
    raw.write_all(b"GET /wait HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buffer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), raw.read_to_end(&mut buffer)).await;
    assert!(!String::from_utf8_lossy(&buffer).contains("200 OK"));
    server.shutdown().await;
}

/// Listeners the application bound itself, as `axum::serve(listener, app)` takes one: plain
/// TCP, a UNIX socket (whose file stays the application's), and TLS with the application's own
/// rustls configuration, all at once, with no listener in the configuration.
#[cfg(unix)]
#[tokio::test]
async fn listeners_of_the_applications_own() {
    use tokio_rustls::rustls::ServerConfig;
    use tokio_rustls::rustls::crypto::ring;
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let tcp = tokio::net::TcpListener::bind(loopback()).await.unwrap();
    let tcp_addr = tcp.local_addr().unwrap();
    let path = std::env::temp_dir().join(format!("strata-own-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let unix = tokio::net::UnixListener::bind(&path).unwrap();
    let tls = certificate();
    let mut rustls = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(tls.cert_pem.as_bytes()).unwrap()],
            PrivateKeyDer::from_pem_slice(tls.key_pem.as_bytes()).unwrap(),
        )
        .unwrap();
    rustls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(rustls));
    let secure = tokio::net::TcpListener::bind(loopback()).await.unwrap();
    let secure_addr = secure.local_addr().unwrap();

    let server = create_server(&config().build(), &routing())
        .listener(tcp)
        .listener(unix)
        .listener(strata::server::Listener::tls(secure, acceptor))
        .await
        .unwrap();
    let listening: Vec<_> = server
        .servers()
        .iter()
        .map(|s| (s.protocol, s.local_addr.clone()))
        .collect();
    assert_eq!(
        listening,
        [
            (strata::server::Protocol::Http, LocalAddr::Tcp(tcp_addr)),
            (
                strata::server::Protocol::Http,
                LocalAddr::Unix(path.clone())
            ),
            (strata::server::Protocol::Https, LocalAddr::Tcp(secure_addr)),
        ]
    );
    let response = http1(TcpStream::connect(tcp_addr).await.unwrap(), get("/wait")).await;
    assert_eq!(response.status(), 200);
    let stream = tokio::net::UnixStream::connect(&path).await.unwrap();
    assert_eq!(http1(stream, get("/wait")).await.status(), 200);
    let stream = tls_connect(secure_addr, &tls, b"h2").await;
    let response = http2(stream, get("https://localhost/wait")).await;
    assert_eq!(
        (response.version(), response.status()),
        (http::Version::HTTP_2, StatusCode::OK)
    );
    server.shutdown().await;
    assert!(
        path.exists(),
        "a socket file the application made stays its own"
    );
    let _ = std::fs::remove_file(&path);
}

#[cfg(unix)]
#[tokio::test]
async fn unix_socket_listener() {
    let path = std::env::temp_dir().join(format!("strata-test-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let server = create_server(
        &config().listen(Listen::Unix(path.clone())).build(),
        &routing(),
    )
    .await
    .unwrap();
    assert_eq!(
        server.servers()[0].local_addr,
        LocalAddr::Unix(path.clone())
    );
    let stream = tokio::net::UnixStream::connect(&path).await.unwrap();
    let response = http1(stream, get("/wait")).await;
    assert_eq!(response.status(), 200);
    server.shutdown().await;
    assert!(!path.exists(), "the socket file is removed on shutdown");
}

#[tokio::test]
async fn graceful_shutdown_lets_a_slow_request_finish() {
    let started = Started::default();
    let server = create_server(
        &config().listen(loopback()).build(),
        &routing_with(&started),
    )
    .await
    .unwrap();
    let addr = tcp_addr(&server, 0);
    // Held in its handler until the test releases it.
    let slow = tokio::spawn(async move {
        let response = http1(
            TcpStream::connect(addr).await.unwrap(),
            get("/wait?hold=true"),
        )
        .await;
        (response.status(), text(response).await)
    });
    started.reached(1).await;
    let shutdown = tokio::spawn(server.shutdown());
    // The shutdown has begun (the listener is closed), and waits for the request in flight.
    until("the server no longer accepts", || {
        std::net::TcpStream::connect(addr).is_err()
    })
    .await;
    assert!(
        !shutdown.is_finished(),
        "the shutdown did not wait for the request in flight"
    );
    started.release();
    let (status, body) = slow.await.unwrap();
    assert_eq!(status, 200, "the request in flight completed: {body}");
    tokio::time::timeout(Duration::from_secs(10), shutdown)
        .await
        .expect("the shutdown ends once its request is answered")
        .unwrap();
}

#[tokio::test]
async fn the_shutdown_handle_stops_a_running_server() {
    let server = create_server(&config().listen(loopback()).build(), &routing())
        .await
        .unwrap();
    let addr = tcp_addr(&server, 0);
    let handle = server.shutdown_handle();
    let running = tokio::spawn(server.run());
    assert_eq!(
        http1(TcpStream::connect(addr).await.unwrap(), get("/wait"))
            .await
            .status(),
        200
    );
    handle.shutdown();
    tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn slow_header_clients_are_cut_off_while_others_are_served() {
    let limits = ServerLimits::default().header_read_timeout(Some(Duration::from_millis(300)));
    let server = create_server(
        &config().listen(loopback()).limits(limits).build(),
        &routing(),
    )
    .await
    .unwrap();
    let addr = tcp_addr(&server, 0);
    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /wait HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
        .await
        .unwrap();
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let mut half_preface = TcpStream::connect(addr).await.unwrap();
    half_preface.write_all(b"PRI * HTTP/2.0\r\n").await.unwrap();
    let mut preface_only = TcpStream::connect(addr).await.unwrap();
    preface_only
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .unwrap();
    // a well-behaved client is served meanwhile
    assert_eq!(
        http1(TcpStream::connect(addr).await.unwrap(), get("/wait"))
            .await
            .status(),
        200
    );
    // Each cut off (the guard is far beyond the 300 ms timeout: only a connection left open
    // meets it).
    for stream in [&mut slow, &mut silent, &mut half_preface, &mut preface_only] {
        let mut buffer = Vec::new();
        let read =
            tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut buffer)).await;
        assert!(read.is_ok(), "the connection was not closed by the server");
        assert!(!String::from_utf8_lossy(&buffer).contains("200 OK"));
    }
    server.shutdown().await;
}

/// Sends `head` on a new connection and reads until the server closes it (at most 10 s): the
/// answer, and whether it was closed.
async fn answer_to_head(addr: std::net::SocketAddr, head: &str) -> (String, bool) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let _ = stream.write_all(head.as_bytes()).await;
    let mut buffer = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut buffer))
        .await
        .is_ok();
    (String::from_utf8_lossy(&buffer).into_owned(), closed)
}

/// The head limit holds for HTTP/1 heads below hyper's buffer (which now reads large bodies in
/// large pieces), at any size: a head one byte over it is a 431 naming it, then the connection
/// closes; a head at it is served.
#[tokio::test]
async fn oversized_headers_are_refused() {
    let limit = 4096;
    let limits = ServerLimits::default().max_header_bytes(limit);
    let server = create_server(
        &config().listen(loopback()).limits(limits).build(),
        &routing(),
    )
    .await
    .unwrap();
    let addr = tcp_addr(&server, 0);
    // A head of `limit + over` bytes; `connection` the value of its `Connection` header.
    let head = |over: usize, connection: &str| {
        let around =
            format!("GET /wait HTTP/1.1\r\nhost: x\r\nconnection: {connection}\r\nx-big: \r\n\r\n");
        let value = "a".repeat(limit + over - around.len());
        around.replace("x-big: ", &format!("x-big: {value}"))
    };
    let (answer, closed) = answer_to_head(addr, &head(0, "close")).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(closed);
    // Kept alive as the client asks, but for the 431.
    let (answer, closed) = answer_to_head(addr, &head(1, "keep-alive")).await;
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    assert!(
        answer.contains("exceed the limit of 4096 bytes"),
        "{answer}"
    );
    assert!(closed, "the connection stays open after the 431");
    // Past hyper's own buffer too: its 431.
    let (answer, closed) = answer_to_head(addr, &head(600 * 1024, "keep-alive")).await;
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 431"),
        "{answer}"
    );
    assert!(closed);
    server.shutdown().await;
}

#[tokio::test]
async fn compression_is_negotiated() {
    let server = create_server(
        &config()
            .listen(loopback())
            .compression(Compression::GzipAndBrotli)
            .build(),
        &routing(),
    )
    .await
    .unwrap();
    let addr = tcp_addr(&server, 0);
    for (accept, expected) in [
        ("gzip", Some("gzip")),
        ("br", Some("br")),
        ("identity", None),
    ] {
        let request = Request::get("/wait?size=5000")
            .header("host", "localhost")
            .header("accept-encoding", accept)
            .body(Empty::new())
            .unwrap();
        let response = http1(TcpStream::connect(addr).await.unwrap(), request).await;
        let encoding = response
            .headers()
            .get("content-encoding")
            .map(|v| v.to_str().unwrap().to_owned());
        assert_eq!(encoding.as_deref(), expected, "{accept}");
        assert_eq!(response.headers()["vary"], "accept-encoding", "{accept}");
        let size = response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .len();
        if expected.is_some() {
            assert!(size < 1000, "{accept}: {size} bytes");
        } else {
            assert!(size > 5000);
        }
    }
    // small bodies are not worth it
    let request = Request::get("/wait")
        .header("host", "x")
        .header("accept-encoding", "gzip")
        .body(Empty::new())
        .unwrap();
    let response = http1(TcpStream::connect(addr).await.unwrap(), request).await;
    assert!(response.headers().get("content-encoding").is_none());
    server.shutdown().await;
}

#[tokio::test]
async fn request_ids_are_echoed_or_generated() {
    let server = create_server(&config().listen(loopback()).build(), &routing())
        .await
        .unwrap();
    let addr = tcp_addr(&server, 0);
    let ask = |id: Option<&'static str>| async move {
        let mut request = Request::get("/wait").header("host", "x");
        if let Some(id) = id {
            request = request.header("x-request-id", id);
        }
        let response = http1(
            TcpStream::connect(addr).await.unwrap(),
            request.body(Empty::new()).unwrap(),
        )
        .await;
        let echoed = response.headers()["x-request-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let body: serde_json::Value = serde_json::from_str(&text(response).await).unwrap();
        (
            echoed,
            body["data"]["request_id"].as_str().unwrap().to_owned(),
        )
    };
    assert_eq!(
        ask(Some("trace-42")).await,
        ("trace-42".to_owned(), "trace-42".to_owned())
    );
    let (first, seen) = ask(None).await;
    assert_eq!(first, seen, "the handler's logger carries the echoed id");
    let (second, _) = ask(None).await;
    assert_ne!(first, second);
    let (replaced, _) = ask(Some("no spaces allowed")).await;
    assert_ne!(replaced, "no spaces allowed");
    server.shutdown().await;
}

#[tokio::test]
async fn configuration_errors_are_clear() {
    let error = create_server(&config().build(), &routing())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid server configuration: no listener: set `listen` (http) and/or `https` in the \
         config, or give one to `create_server(..).listener(..)`"
    );
    let https = strata::server::Https::default()
        .cert(Pem::Bytes(b"x".to_vec()))
        .listen(Listen::Addr(loopback()));
    let error = create_server(&config().https_options(https).build(), &routing())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid server configuration: https needs both `cert` and `key`"
    );
    let error = create_server(
        &config()
            .https(
                Pem::Bytes(b"junk".to_vec()),
                Pem::Bytes(b"junk".to_vec()),
                0u16,
            )
            .build(),
        &routing(),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, ServerError::Tls(_)), "{error}");
    let missing = Pem::File("/nonexistent/cert.pem".into());
    let error = create_server(
        &config().https(missing.clone(), missing, loopback()).build(),
        &routing(),
    )
    .await
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("cannot read the certificate /nonexistent/cert.pem"),
        "{error}"
    );
    let error = create_server(&create_config().listen(loopback()).build(), &routing())
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("cors must be configured explicitly"),
        "{error}"
    );
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let error = create_server(&config().listen(addr).build(), &routing())
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with(&format!("cannot listen on {addr}: ")),
        "{error}"
    );
}

/// An HTTPS-only server of `routing()` with `tls`'s certificate and `limits`.
async fn https_server(tls: &Tls, limits: ServerLimits) -> strata::Server {
    let config = config()
        .https(
            Pem::Bytes(tls.cert_pem.clone().into_bytes()),
            Pem::Bytes(tls.key_pem.clone().into_bytes()),
            loopback(),
        )
        .limits(limits)
        .build();
    create_server(&config, &routing()).await.unwrap()
}

#[tokio::test]
async fn a_tls_client_silent_after_its_handshake_is_cut_off() {
    let tls = certificate();
    let server = https_server(
        &tls,
        ServerLimits::default().header_read_timeout(Some(Duration::from_millis(300))),
    )
    .await;
    let mut stream = tls_connect(tcp_addr(&server, 0), &tls, b"http/1.1").await;
    let mut buffer = Vec::new();
    // (The guard is far beyond the 300 ms timeout: only a connection left open meets it.)
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut buffer)).await;
    assert!(read.is_ok(), "not closed by the server");
    server.shutdown().await;
}

/// Over TLS the connection watcher tells HTTP/2 by its preface, as on plain TCP: an HTTP/2
/// connection (ALPN `h2`) is reused between its requests and, without a stream for the
/// header-read timeout, closed gracefully (GOAWAY), not cut off as an HTTP/1 one is.
#[tokio::test]
async fn an_http2_connection_over_tls_is_closed_gracefully_without_a_stream() {
    let tls = certificate();
    let server = https_server(
        &tls,
        ServerLimits::default()
            .header_read_timeout(Some(Duration::from_millis(300)))
            .idle_timeout(Some(Duration::from_secs(5))),
    )
    .await;
    let head_timeout = Duration::from_millis(300);
    // Each connection's idle deadline is brought forward by up to a quarter, at random.
    let soonest = head_timeout * 3 / 4;
    // When the last stream was sent (first, when the connection was opened): the server's
    // count of the time without a stream starts after it, so it cannot close the connection
    // sooner than that after it, however slow the machine.
    let mut last_sent = Instant::now();
    let stream = tls_connect(tcp_addr(&server, 0), &tls, b"h2").await;
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    let connection = tokio::spawn(connection);
    for _ in 0..3 {
        let sent = Instant::now();
        let Ok(response) = sender.send_request(get("https://localhost/wait")).await else {
            // Closed between two streams: only a client slowed down past the timeout by a busy
            // machine may see that.
            assert!(
                last_sent.elapsed() >= soonest,
                "closed {:?} after its last stream was sent",
                last_sent.elapsed()
            );
            break;
        };
        last_sent = sent;
        assert_eq!(
            (response.version(), response.status()),
            (http::Version::HTTP_2, StatusCode::OK)
        );
        let _ = response.into_body().collect().await.unwrap();
        // Reused after a quarter of the timeout or more (a look of the connection's watcher).
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ended = tokio::time::timeout(Duration::from_secs(10), connection).await;
    let ended = ended
        .expect("still open 10 s after its last stream")
        .unwrap();
    assert!(ended.is_ok(), "not closed gracefully: {ended:?}");
    assert!(
        last_sent.elapsed() >= soonest,
        "closed {:?} after its last stream was sent",
        last_sent.elapsed()
    );
    server.shutdown().await;
}

#[tokio::test]
async fn the_shutdown_timeout_answers_what_is_still_open_with_a_503() {
    let limits = ServerLimits::default().shutdown_timeout(Some(Duration::from_millis(300)));
    let probe = Started::default();
    let server = create_server(
        &config().listen(loopback()).limits(limits).build(),
        &routing_with(&probe),
    )
    .await
    .unwrap();
    let addr = tcp_addr(&server, 0);
    // Held in its handler for as long as the test lasts: only the shutdown timeout ends it.
    let too_slow = tokio::spawn(async move {
        let stream = TcpStream::connect(addr).await.unwrap();
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(connection);
        sender
            .send_request(get("/wait?hold=true"))
            .await
            .map(|r| r.status())
    });
    probe.reached(1).await;
    tokio::time::timeout(Duration::from_secs(20), server.shutdown())
        .await
        .expect("the shutdown did not keep its timeout");
    let outcome = tokio::time::timeout(Duration::from_secs(10), too_slow)
        .await
        .unwrap()
        .unwrap();
    // Answered, not cut with a bare end of stream.
    assert_eq!(outcome.unwrap(), StatusCode::SERVICE_UNAVAILABLE);
}

#[cfg(unix)]
#[tokio::test]
async fn unix_socket_files_stale_and_foreign() {
    let path = std::env::temp_dir().join(format!("strata-stale-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    // a socket file left behind by a process that is gone
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    let server = create_server(
        &config().listen(Listen::Unix(path.clone())).build(),
        &routing(),
    )
    .await
    .unwrap();
    let response = http1(
        tokio::net::UnixStream::connect(&path).await.unwrap(),
        get("/wait"),
    )
    .await;
    assert_eq!(response.status(), 200);
    // a live socket is not taken over
    let error = create_server(
        &config().listen(Listen::Unix(path.clone())).build(),
        &routing(),
    )
    .await
    .unwrap_err();
    assert!(
        error.to_string().contains("Address already in use"),
        "{error}"
    );
    // someone else's file at that path is not removed on shutdown
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, "not a socket").unwrap();
    server.shutdown().await;
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "not a socket");
    std::fs::remove_file(&path).unwrap();
}

#[tokio::test]
async fn tls_material_from_files_and_https_without_listen() {
    let tls = certificate();
    let dir = std::env::temp_dir().join(format!("strata-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("cert.pem"), &tls.cert_pem).unwrap();
    std::fs::write(dir.join("key.pem"), &tls.key_pem).unwrap();
    let config = config()
        .https(
            Pem::File(dir.join("cert.pem")),
            Pem::File(dir.join("key.pem")),
            loopback(),
        )
        .build();
    let server = create_server(&config, &routing()).await.unwrap();
    let response = http1(
        tls_connect(tcp_addr(&server, 0), &tls, b"http/1.1").await,
        get("/wait"),
    )
    .await;
    assert_eq!(response.status(), 200);
    server.shutdown().await;

    let https = strata::server::Https::default()
        .cert(Pem::File(dir.join("cert.pem")))
        .key(Pem::File(dir.join("key.pem")));
    let error = create_server(&config_builder_with(https), &routing())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid server configuration: https has a certificate but no `listen`"
    );
}

fn config_builder_with(https: strata::server::Https) -> strata::Config {
    config().listen(loopback()).https_options(https).build()
}

#[tokio::test]
async fn without_compression_nothing_varies() {
    let server = create_server(&config().listen(loopback()).build(), &routing())
        .await
        .unwrap();
    let request = Request::get("/wait?size=5000")
        .header("host", "x")
        .header("accept-encoding", "gzip")
        .body(Empty::new())
        .unwrap();
    let response = http1(
        TcpStream::connect(tcp_addr(&server, 0)).await.unwrap(),
        request,
    )
    .await;
    assert!(response.headers().get("content-encoding").is_none());
    assert!(response.headers().get("vary").is_none());
    server.shutdown().await;
}

/// Every timeout of the server's limits set to `timeout`.
fn all_timeouts(timeout: Option<Duration>) -> ServerLimits {
    ServerLimits::default()
        .header_read_timeout(timeout)
        .shutdown_timeout(timeout)
        .body_idle_timeout(timeout)
        .body_read_timeout(timeout)
        .idle_timeout(timeout)
        .write_timeout(timeout)
        .http2_keep_alive_interval(timeout)
        .http2_keep_alive_timeout(timeout.unwrap_or(Duration::MAX))
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn timeouts_of_duration_max_never_fire_panic_or_spin() {
    never_fire(all_timeouts(Some(Duration::MAX))).await;
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn timeouts_turned_off_never_fire_panic_or_spin() {
    never_fire(all_timeouts(None)).await;
}

/// A server with `limits` answers a body that pauses and an HTTP/2 request, keeps both
/// connections, and sleeps while they are idle.
#[cfg(target_os = "linux")]
async fn never_fire(limits: ServerLimits) {
    let server = create_server(
        &config().listen(loopback()).limits(limits).build(),
        &routing(),
    )
    .await
    .unwrap();
    let addr = tcp_addr(&server, 0);
    // A body in two pieces (the idle deadline is set again after the first).
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let body = r#"{"text":"in two pieces"}"#;
    let head = format!(
        "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&body.as_bytes()[..5]).await.unwrap();
    let client = stream.local_addr().unwrap();
    until("the server has read the first piece", || {
        all_read(client, addr)
    })
    .await;
    stream.write_all(&body.as_bytes()[5..]).await.unwrap();
    let mut answer = vec![0; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut answer))
        .await
        .unwrap()
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("in two pieces"), "{answer}");
    // HTTP/2 (its keep-alive pings once took the header-read timeout).
    let h2 = TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(h2))
            .await
            .unwrap();
    let connection = tokio::spawn(connection);
    let response = sender
        .send_request(get("http://localhost/wait"))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // Both connections open and idle, their watchers waiting: the thread sleeps.
    sleeps_through(Duration::from_millis(10), async {
        tokio::time::sleep(Duration::from_millis(500)).await;
    })
    .await;
    assert!(
        !connection.is_finished(),
        "the HTTP/2 connection was closed"
    );
    drop((stream, sender));
    tokio::time::timeout(Duration::from_secs(5), server.shutdown())
        .await
        .unwrap();
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn zero_timeouts_cut_connections_off_without_panic_or_spin() {
    let server = create_server(
        &config()
            .listen(loopback())
            .limits(all_timeouts(Some(Duration::ZERO)))
            .build(),
        &routing(),
    )
    .await
    .unwrap();
    let addr = tcp_addr(&server, 0);
    // At most 300 ms of a handler in flight per connection, watched every 10 ms: the thread
    // mostly sleeps.
    sleeps_through(Duration::from_millis(50), async {
        for _ in 0..3 {
            // The request reaches the server with the connection or just after: answered or
            // cut off, either way the connection ends.
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream
                .write_all(b"GET /wait?ms=300 HTTP/1.1\r\nHost: a\r\n\r\n")
                .await
                .unwrap();
            let mut answer = Vec::new();
            let read =
                tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
                    .await;
            assert!(read.is_ok(), "the connection was not closed");
        }
    })
    .await;
    tokio::time::timeout(Duration::from_secs(5), server.shutdown())
        .await
        .unwrap();
}

#[tokio::test]
async fn a_panic_in_an_applications_layer_ends_one_http2_stream_not_its_connection() {
    // hyper calls an HTTP/2 service on the connection's task: the stack is called in the
    // stream's own task instead, so a panic there resets that stream alone.
    let layers =
        tower::util::MapRequestLayer::new(|request: Request<strata::server::ServerBody>| {
            assert!(request.uri().path() != "/panic", "a user's layer panics");
            request
        });
    let server = strata::create_server(&config().listen(loopback()).build(), &routing())
        .layers(layers)
        .await
        .unwrap();
    let stream = TcpStream::connect(tcp_addr(&server, 0)).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    let connection = tokio::spawn(connection);
    let failed = sender.send_request(get("http://localhost/panic")).await;
    assert!(failed.is_err(), "{failed:?}");
    let response = sender
        .send_request(get("http://localhost/wait"))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(!connection.is_finished());
    server.shutdown().await;
}

/// An extension a user's layer puts on the requests that ask for it.
#[derive(Clone)]
struct Marked;

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Seen {
    marked: bool,
    client: bool,
    request_id: Option<String>,
}

/// What a layer put in one request's extensions is never on the next request on the same
/// thread, while the server's own (the client's address, the logger) are there afresh (until
/// issue 48 requests reused the extension maps of earlier ones, emptied). The test's runtime
/// has one thread.
#[tokio::test(flavor = "current_thread")]
async fn a_request_carries_none_of_an_earlier_requests_extensions() {
    let layers =
        tower::util::MapRequestLayer::new(|mut request: Request<strata::server::ServerBody>| {
            if request.headers().contains_key("x-mark") {
                request.extensions_mut().insert(Marked);
            }
            request
        });
    // A handler that does not take the parts.
    let plain = default_endpoints_factory()
        .get()
        .handler_without_input(async || {
            Ok(Seen {
                marked: false,
                client: false,
                request_id: None,
            })
        });
    // With them: what the request carries.
    let look = default_endpoints_factory().get().handler_without_input(
        async |request: http::request::Parts| {
            let logger = request.extensions.get::<Logger>();
            Ok(Seen {
                marked: request.extensions.get::<Marked>().is_some(),
                client: request
                    .extensions
                    .get::<strata::core::ClientAddr>()
                    .is_some(),
                request_id: logger.and_then(Logger::request_id).map(str::to_owned),
            })
        },
    );
    let routing = routing! { "plain" => plain, "look" => look };
    let server = strata::create_server(&config().listen(loopback()).build(), &routing)
        .layers(layers)
        .await
        .unwrap();
    let stream = TcpStream::connect(tcp_addr(&server, 0)).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    let mut ask = async |path: &str, mark: bool, id: &str| {
        let mut request = Request::get(path)
            .header("host", "localhost")
            .header("x-request-id", id);
        if mark {
            request = request.header("x-mark", "1");
        }
        let response = sender
            .send_request(request.body(Empty::new()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let body: serde_json::Value = serde_json::from_str(&text(response).await).unwrap();
        body["data"].clone()
    };
    assert_eq!(ask("/look", true, "one").await["marked"], true);
    for round in 0..3 {
        ask("/plain", true, "two").await;
        let seen = ask("/look", false, "three").await;
        assert_eq!(
            seen,
            serde_json::json!({"marked": false, "client": true, "request_id": "three"}),
            "round {round}"
        );
    }
    server.shutdown().await;
}
