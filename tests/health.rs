//! Health probes over real sockets on 127.0.0.1:0: readiness turns 503 the moment a graceful
//! shutdown starts while the server still serves (the drain delay), the application's checks
//! fail readiness by name, a hung check times out; and the probes of a routing attached to an
//! application of its own.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::net::SocketAddr;
use std::time::Duration;

use garde::Validate;
use http_body_util::BodyExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::prelude::*;
use strata::{Health, Routing};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

#[path = "common/probe.rs"]
mod probe;
use probe::{Started, until};

#[derive(Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Wait {
    hold: bool,
}

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Waited {
    held: bool,
}

/// `/wait?hold=true`: held in its handler until the test releases `started`.
fn routing(started: &Started) -> Routing {
    let started = started.clone();
    let wait = default_endpoints_factory()
        .get()
        .handler(move |input: Wait| {
            started.mark();
            let started = started.clone();
            async move {
                if input.hold {
                    started.hold().await;
                }
                Ok(Waited { held: input.hold })
            }
        });
    routing! { "wait" => wait }
}

/// A server on 127.0.0.1:0 with these probes.
async fn serve(health: Health, started: &Started) -> (strata::Server, SocketAddr) {
    let config = create_config()
        .cors(Cors::Enabled)
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .health(health)
        .build();
    let server = create_server(&config, &routing(started)).await.unwrap();
    let strata::server::LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    (server, addr)
}

/// GETs `path` on a connection of its own: the status code and the body, or `None` when the
/// server does not accept the connection.
async fn fetch(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.ok()?;
    let answer = String::from_utf8(answer).unwrap();
    let status = answer.get(9..12)?.parse().ok()?;
    let (_, body) = answer.split_once("\r\n\r\n")?;
    Some((status, body.to_owned()))
}

#[tokio::test]
async fn readiness_answers_503_from_the_start_of_the_shutdown_while_requests_still_complete() {
    let started = Started::default();
    // A drain delay longer than the test: the listener stays open for all of it.
    let health = Health::new().drain_delay(Duration::from_secs(600));
    let (server, addr) = serve(health, &started).await;
    let ok = Some((200, r#"{"status":"ok"}"#.to_owned()));
    assert_eq!(fetch(addr, "/health/ready").await, ok);
    assert_eq!(fetch(addr, "/health/live").await, ok);
    let slow = tokio::spawn(async move { fetch(addr, "/wait?hold=true").await });
    started.reached(1).await;
    let shutdown = tokio::spawn(server.shutdown());
    // Probed until it answers 503 (on a new connection: the server still accepts).
    let draining = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match fetch(addr, "/health/ready").await {
                Some((503, body)) => return body,
                Some((200, _)) => tokio::task::yield_now().await,
                other => panic!("readiness answered {other:?} during the drain"),
            }
        }
    })
    .await
    .expect("readiness never answered 503");
    assert_eq!(
        draining,
        r#"{"reason":"shutting down","status":"unavailable"}"#
    );
    // Meanwhile the replica serves as before: liveness, and new requests.
    assert_eq!(fetch(addr, "/health/live").await, ok);
    assert_eq!(
        fetch(addr, "/wait?hold=false").await,
        Some((
            200,
            r#"{"status":"success","data":{"held":false}}"#.to_owned()
        ))
    );
    assert!(!shutdown.is_finished(), "the drain is not over");
    started.release();
    assert_eq!(
        slow.await.unwrap(),
        Some((
            200,
            r#"{"status":"success","data":{"held":true}}"#.to_owned()
        )),
        "the request in flight completed"
    );
    // A `Server` dropped during its drain stops at once.
    shutdown.abort();
    let _ = shutdown.await;
    until("the dropped server stops listening", || {
        std::net::TcpStream::connect(addr).is_err()
    })
    .await;
}

#[tokio::test]
async fn after_the_drain_delay_the_server_stops_listening_and_shuts_down() {
    let started = Started::default();
    let health = Health::new().drain_delay(Duration::from_millis(50));
    let (server, addr) = serve(health, &started).await;
    let handle = server.shutdown_handle();
    let running = tokio::spawn(server.run());
    assert_eq!(fetch(addr, "/health/ready").await.unwrap().0, 200);
    handle.shutdown();
    until("the server stops listening", || {
        std::net::TcpStream::connect(addr).is_err()
    })
    .await;
    tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("the shutdown ends after its drain delay")
        .unwrap();
}

/// `run` stops the server with the handle's own `shutdown` once it sees it: a second call
/// during the drain must not end it.
#[tokio::test]
async fn a_second_shutdown_call_does_not_cut_the_drain_short() {
    let started = Started::default();
    let health = Health::new().drain_delay(Duration::from_secs(600));
    let (server, addr) = serve(health, &started).await;
    let handle = server.shutdown_handle();
    let running = tokio::spawn(server.run());
    handle.shutdown();
    handle.shutdown();
    let draining = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Some((503, _)) = fetch(addr, "/health/ready").await {
                return;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(draining.is_ok(), "readiness never answered 503");
    for _ in 0..20 {
        assert_eq!(
            fetch(addr, "/wait?hold=false")
                .await
                .map(|(status, _)| status),
            Some(200),
            "the server stopped accepting during its drain"
        );
    }
    assert!(!running.is_finished());
    running.abort();
}

#[tokio::test]
async fn a_failing_check_makes_readiness_503_naming_it() {
    let health = Health::new()
        .check("db", || async { Ok::<_, std::io::Error>(()) })
        .check("redis", || async {
            Err::<(), _>(std::io::Error::other("connection refused"))
        });
    let (server, addr) = serve(health, &Started::default()).await;
    assert_eq!(
        fetch(addr, "/health/ready").await,
        Some((
            503,
            r#"{"checks":{"db":"ok","redis":"connection refused"},"status":"unavailable"}"#
                .to_owned()
        ))
    );
    // Liveness runs no check.
    assert_eq!(fetch(addr, "/health/live").await.unwrap().0, 200);
    server.shutdown().await;
}

#[tokio::test]
async fn a_hung_check_times_out_and_the_probe_answers() {
    let health = Health::new()
        .check("db", std::future::pending::<Result<(), String>>)
        .timeout(Duration::from_millis(100));
    let (server, addr) = serve(health, &Started::default()).await;
    let answer = tokio::time::timeout(Duration::from_secs(10), fetch(addr, "/health/ready"))
        .await
        .expect("the probe hung with its check");
    assert_eq!(
        answer,
        Some((
            503,
            r#"{"checks":{"db":"timed out after 100 ms"},"status":"unavailable"}"#.to_owned()
        ))
    );
    server.shutdown().await;
}

/// In an application of its own (`attach_routing`), the probes are answered ahead of the
/// routing, and the application turns readiness off with the `Health` it kept.
#[tokio::test]
async fn attached_routing_answers_the_probes_and_the_application_drains_them() {
    let health = Health::new().live_path("/livez").ready_path("/readyz");
    let config = create_config()
        .cors(Cors::Enabled)
        .health(health.clone())
        .build();
    let attached = strata::attach_routing(&config, &routing(&Started::default())).unwrap();
    let get = |path: &str| {
        let service = attached.service.clone();
        let request = http::Request::get(path).body(String::new()).unwrap();
        async move {
            let response = service.oneshot(request).await.unwrap();
            let status = response.status().as_u16();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            (status, String::from_utf8(body.to_vec()).unwrap())
        }
    };
    assert_eq!(get("/readyz").await, (200, r#"{"status":"ok"}"#.to_owned()));
    // Not the router's: the default paths are not answered.
    assert_eq!(get("/health/ready").await.0, 404);
    // The application's own shutdown starts.
    health.start_draining();
    assert_eq!(get("/readyz").await.0, 503);
    assert_eq!(get("/livez").await.0, 200);
}

/// A `Health` is a tower service: mounted in an axum application, it answers its paths, and
/// the application's own shutdown turns readiness off.
#[tokio::test]
async fn health_mounts_in_an_axum_application() {
    let health = Health::new().check("db", || async { Ok::<_, String>(()) });
    let app = axum::Router::new()
        .route_service("/health/live", health.clone())
        .route_service("/health/ready", health.clone());
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
    assert_eq!(
        get("/health/ready").await,
        (200, r#"{"checks":{"db":"ok"},"status":"ok"}"#.to_owned())
    );
    health.start_draining();
    assert_eq!(get("/health/ready").await.0, 503);
    assert_eq!(get("/health/live").await.0, 200);
}
