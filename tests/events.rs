//! Server-sent events over real sockets: order and promptness, keep-alives, a client that
//! leaves, errors and panics before and after the first event, `Last-Event-ID`, the document.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use garde::Validate;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use strata::prelude::*;
use strata::{EventStreamOptions, LocalAddr, Server};
use tokio::net::TcpStream;

#[derive(Serialize, Validate, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[garde(allow_unvalidated)]
enum Clock {
    Tick { n: u32 },
    Resumed { after: String },
    Done,
}

#[derive(Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Ticks {
    count: u32,
    #[serde(default)]
    gap_ms: u64,
    #[serde(default)]
    fail: Option<String>,
}

/// A flag a test can wait for: set once, seen by every waiter.
#[derive(Default)]
struct Flag {
    set: AtomicBool,
    changed: tokio::sync::Notify,
}

impl Flag {
    fn set(&self) {
        self.set.store(true, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    /// Whether the flag is set within `limit`.
    async fn wait(&self, limit: Duration) -> bool {
        tokio::time::timeout(limit, async {
            loop {
                // Registered before the check: a `set` in between still wakes it.
                let changed = self.changed.notified();
                if self.set.load(Ordering::SeqCst) {
                    return;
                }
                changed.await;
            }
        })
        .await
        .is_ok()
    }
}

/// Sets its flag when dropped: the handler's future is gone.
struct Gone(Arc<Flag>);

impl Drop for Gone {
    fn drop(&mut self) {
        self.0.set();
    }
}

#[derive(Default, Clone)]
struct Probe {
    gone: Arc<Flag>,
}

fn routing(probe: &Probe) -> Routing {
    let probe = probe.clone();
    let factory = default_endpoints_factory();
    let ticks = factory
        .get()
        .event_stream(move |input: Ticks, _ctx, emitter, _logger| {
            let probe = probe.clone();
            async move {
                let _gone = Gone(Arc::clone(&probe.gone));
                match input.fail.as_deref() {
                    Some("before") => return Err(http_error!(401, "No ticks for you")),
                    Some("panic-before") => panic!("the clock broke"),
                    _ => {}
                }
                if let Some(after) = emitter.last_event_id() {
                    let after = after.to_owned();
                    emitter.emit(Clock::Resumed { after }).await?;
                }
                for n in 1..=input.count {
                    emitter
                        .emit_with_id(Clock::Tick { n }, &n.to_string())
                        .await?;
                    assert!(
                        input.fail.as_deref() != Some("panic-after"),
                        "the clock broke after {n}"
                    );
                    tokio::time::sleep(Duration::from_millis(input.gap_ms)).await;
                }
                if input.fail.as_deref() == Some("after") {
                    return Err(http_error!(500, "lost the time"));
                }
                emitter.emit(Clock::Done).await?;
                Ok(())
            }
        });
    let quiet = factory.get().event_stream_with(
        EventStreamOptions {
            keep_alive: Some(Duration::from_millis(100)),
        },
        |(): (), _ctx, emitter, _logger| async move {
            emitter.emit(Clock::Tick { n: 1 }).await?;
            tokio::time::sleep(Duration::from_millis(450)).await;
            emitter.emit(Clock::Done).await?;
            Ok(())
        },
    );
    let slow = factory.get().event_stream_with(
        EventStreamOptions { keep_alive: None },
        |(): (), _ctx, emitter, _logger| async move {
            for n in 1..=3 {
                emitter.emit(Clock::Tick { n }).await?;
                tokio::time::sleep(Duration::from_millis(700)).await;
            }
            Ok(())
        },
    );
    routing! { "ticks" => ticks, "quiet" => quiet, "slow" => slow }
}

async fn serve(routing: &Routing) -> (Server, SocketAddr) {
    let config = create_config()
        .cors(false)
        .compression(true)
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        // Short, so that a quiet stream proves it is not taken for a stalled client.
        .server_limits(strata::ServerLimits {
            write_timeout: Some(Duration::from_millis(300)),
            ..strata::ServerLimits::default()
        })
        .build();
    let server = create_server(&config, routing).await.unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("a TCP listener")
    };
    (server, addr)
}

async fn open(addr: SocketAddr, uri: &str, headers: &[(&str, &str)]) -> http::Response<Incoming> {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut request = Request::get(uri).header("host", "localhost");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Full::new(Bytes::new())).unwrap();
    tokio::time::timeout(Duration::from_secs(5), sender.send_request(request))
        .await
        .unwrap()
        .unwrap()
}

/// The next piece of the stream as text, within 2 s (`None` at its end).
async fn next(body: &mut Incoming) -> Option<Result<String, hyper::Error>> {
    let frame = tokio::time::timeout(Duration::from_secs(2), body.frame())
        .await
        .expect("a piece promptly")?;
    Some(frame.map(|frame| String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap()))
}

#[tokio::test]
async fn events_arrive_in_order_and_as_they_are_emitted() {
    let probe = Probe::default();
    let (server, addr) = serve(&routing(&probe)).await;
    let started = Instant::now();
    // gzip is asked for and on: event streams are never compressed (it would hold them back).
    let response = open(
        addr,
        "/ticks?count=3&gap_ms=300",
        &[("accept-encoding", "gzip")],
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert_eq!(response.headers()["cache-control"], "no-cache");
    assert!(response.headers().get("content-encoding").is_none());
    let mut body = response.into_body();
    let mut arrivals = Vec::new();
    let mut text = String::new();
    while let Some(piece) = next(&mut body).await {
        text.push_str(&piece.unwrap());
        arrivals.push(started.elapsed());
    }
    assert_eq!(
        text,
        "event: tick\nid: 1\ndata: {\"n\":1}\n\n\
         event: tick\nid: 2\ndata: {\"n\":2}\n\n\
         event: tick\nid: 3\ndata: {\"n\":3}\n\n\
         event: done\ndata: null\n\n"
    );
    // One piece per event, each as it is emitted (300 ms apart), none held back for the next
    // (buffered events would arrive together).
    assert_eq!(arrivals.len(), 4, "{arrivals:?}");
    assert!(arrivals[0] < Duration::from_secs(1), "{arrivals:?}");
    for pair in arrivals.windows(2) {
        assert!(
            pair[1].checked_sub(pair[0]).unwrap() >= Duration::from_millis(100),
            "{arrivals:?}"
        );
    }
    drop(server);
}

#[tokio::test]
async fn a_client_that_leaves_stops_the_handler_within_a_second() {
    let probe = Probe::default();
    let (server, addr) = serve(&routing(&probe)).await;
    let response = open(addr, "/ticks?count=100000&gap_ms=20", &[]).await;
    let mut body = response.into_body();
    for _ in 0..3 {
        next(&mut body).await.unwrap().unwrap();
    }
    drop(body); // the connection closes
    assert!(
        probe.gone.wait(Duration::from_secs(1)).await,
        "the handler runs on"
    );
    // Its future is dropped: nothing can emit any more.
    drop(server);
}

#[tokio::test]
async fn keep_alives_fill_the_silence() {
    let (server, addr) = serve(&routing(&Probe::default())).await;
    let mut body = open(addr, "/quiet", &[]).await.into_body();
    let mut text = String::new();
    while let Some(piece) = next(&mut body).await {
        text.push_str(&piece.unwrap());
    }
    // Every 100 ms of a 450 ms silence (fewer on a loaded machine, never none).
    let comments = text.matches(": keep-alive\n\n").count();
    assert!((1..=5).contains(&comments), "{comments} in {text:?}");
    assert!(text.starts_with("event: tick\ndata: {\"n\":1}\n\n: keep-alive\n\n"));
    assert!(text.ends_with("event: done\ndata: null\n\n"));
    drop(server);
}

#[tokio::test]
async fn errors_and_panics_before_the_first_event_are_error_responses() {
    let probe = Probe::default();
    let (server, addr) = serve(&routing(&probe)).await;
    let response = open(addr, "/ticks?count=1&fail=before", &[]).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        response.headers()["content-type"],
        "application/json; charset=utf-8"
    );
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&bytes).unwrap(),
        json!({"status": "error", "error": {"message": "No ticks for you"}})
    );

    let response = open(addr, "/ticks?count=1&fail=panic-before", &[]).await;
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);

    // After the first event: the stream ends there (what was emitted arrives), the error is
    // logged, the server serves on.
    for fail in ["after", "panic-after"] {
        let response = open(addr, &format!("/ticks?count=1&fail={fail}"), &[]).await;
        assert_eq!(response.status(), StatusCode::OK);
        let mut body = response.into_body();
        assert_eq!(
            next(&mut body).await.unwrap().unwrap(),
            "event: tick\nid: 1\ndata: {\"n\":1}\n\n"
        );
        assert!(next(&mut body).await.is_none(), "{fail}: ended");
    }
    let response = open(addr, "/ticks?count=1", &[]).await;
    assert_eq!(response.status(), StatusCode::OK);
    drop(server);
}

#[tokio::test]
async fn a_reconnecting_client_says_where_it_was() {
    let (server, addr) = serve(&routing(&Probe::default())).await;
    let response = open(addr, "/ticks?count=0", &[("last-event-id", "41")]).await;
    let mut body = response.into_body();
    assert_eq!(
        next(&mut body).await.unwrap().unwrap(),
        "event: resumed\ndata: {\"after\":\"41\"}\n\n"
    );
    drop(server);
}

#[test]
fn the_document_shows_the_events() {
    let routing = routing(&Probe::default());
    let config = create_config().cors(false).build();
    let document = strata::openapi::Documentation::new(&routing, &config)
        .build()
        .unwrap();
    // For the outside validators (`.ci/openapi-checks` sets the path).
    if let Some(path) = std::env::var_os("STRATA_EVENTS_OPENAPI") {
        document.write_file(path).unwrap();
    }
    let document = document.to_value();
    let ok = &document["paths"]["/ticks"]["get"]["responses"]["200"]["content"];
    // OpenAPI 3.2: each event is an item of the stream (`schema` would be the whole stream).
    assert!(ok["text/event-stream"].get("schema").is_none(), "{ok}");
    let frames = ok["text/event-stream"]["itemSchema"]["oneOf"]
        .as_array()
        .unwrap();
    let names: Vec<&str> = frames
        .iter()
        .map(|frame| frame["properties"]["event"]["const"].as_str().unwrap())
        .collect();
    // (schemars lists unit variants first.)
    assert_eq!(names, ["done", "tick", "resumed"]);
    // `data` is what an EventSource receives: JSON text, of the event's type.
    assert_eq!(
        frames[0]["properties"]["data"],
        json!({
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {"type": "null"},
        })
    );
    assert_eq!(
        frames[1]["properties"]["data"]["contentSchema"]["properties"]["n"]["type"],
        "integer"
    );
    assert_eq!(frames[0]["required"], json!(["event", "data"]));

    // OpenAPI 3.1 has no `itemSchema`: `schema` describes one event there.
    let document = strata::openapi::Documentation::new(&routing, &config)
        .openapi_version(strata::openapi::OpenApiVersion::V3_1)
        .build()
        .unwrap()
        .to_value();
    let ok = &document["paths"]["/ticks"]["get"]["responses"]["200"]["content"];
    assert_eq!(
        ok["text/event-stream"]["schema"]["oneOf"],
        json!(frames),
        "{ok}"
    );
    assert!(ok["text/event-stream"].get("itemSchema").is_none());
}

#[tokio::test]
async fn a_quiet_stream_is_not_a_stalled_client() {
    // 700 ms between events, no keep-alives, a write timeout of 300 ms: the server waits on
    // the handler, not on the client, so the connection lives.
    let (server, addr) = serve(&routing(&Probe::default())).await;
    let mut body = open(addr, "/slow", &[]).await.into_body();
    let mut text = String::new();
    while let Some(piece) = next(&mut body).await {
        text.push_str(&piece.unwrap());
    }
    assert_eq!(text.matches("event: tick").count(), 3, "{text:?}");
    drop(server);
}

#[tokio::test]
async fn at_shutdown_an_open_event_stream_ends_at_once() {
    let probe = Probe::default();
    let (server, addr) = serve(&routing(&probe)).await;
    // A stream that would run for 100 s.
    let response = open(addr, "/ticks?count=100&gap_ms=1000", &[]).await;
    let mut body = response.into_body();
    assert!(next(&mut body).await.unwrap().unwrap().contains("tick"));
    let started = Instant::now();
    // The shutdown timeout is 10 s: an event stream does not hold shutdown for it.
    server.shutdown().await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // The stream ended with its final chunk (a clean end, not a cut connection).
    loop {
        match next(&mut body).await {
            None => break,
            Some(piece) => {
                piece.unwrap();
            }
        }
    }
    assert!(
        probe.gone.wait(Duration::from_secs(2)).await,
        "the handler still runs"
    );
}
