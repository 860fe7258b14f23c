//! Server-sent events over real sockets: order and promptness, the head and keep-alives from
//! the start, a client that leaves, errors and panics before and after the first event (and a
//! middleware's 401), `Last-Event-ID`, the document, graceful shutdown.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use strata::events::Emitter;
use strata::server::Compression;
use strata::{Endpoint, Routing};

use garde::Validate;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use strata::Server;
use strata::events::EventStreamOptions;
use strata::prelude::*;
use strata::server::LocalAddr;
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
    /// After each tick, waits for the test to let it go on ([`Probe::next_event`]).
    #[serde(default)]
    gated: bool,
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

#[derive(Clone)]
struct Probe {
    gone: Arc<Flag>,
    /// Emitters that saw the server's shutdown.
    told: Arc<AtomicUsize>,
    /// What gated handlers wait for before their next event: a permit each.
    gate: Arc<tokio::sync::Semaphore>,
}

impl Default for Probe {
    fn default() -> Self {
        Self {
            gone: Arc::default(),
            told: Arc::default(),
            gate: Arc::new(tokio::sync::Semaphore::new(0)),
        }
    }
}

impl Probe {
    /// Lets a gated handler emit its next event.
    fn next_event(&self) {
        self.gate.add_permits(1);
    }

    /// In a gated handler: waits for the test's [`next_event`](Self::next_event).
    async fn gate(&self) {
        self.gate.acquire().await.unwrap().forget();
    }
}

fn routing(probe: &Probe) -> Routing {
    let told = Arc::clone(&probe.told);
    let factory = default_endpoints_factory();
    let ticking = probe.clone();
    let ticks = factory
        .get()
        .event_stream(move |input: Ticks, emitter: Emitter<Clock>| {
            let probe = ticking.clone();
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
                    if input.gated {
                        probe.gate().await;
                    }
                    tokio::time::sleep(Duration::from_millis(input.gap_ms)).await;
                }
                if input.fail.as_deref() == Some("after") {
                    return Err(http_error!(500, "lost the time"));
                }
                emitter.emit(Clock::Done).await?;
                Ok(())
            }
        });
    // A tick, then silence until the test lets it end.
    let gated = probe.clone();
    let quiet = factory.get().event_stream_with(
        EventStreamOptions::default().keep_alive(Some(Duration::from_millis(100))),
        move |(): (), emitter: Emitter<Clock>| {
            let gated = gated.clone();
            async move {
                emitter.emit(Clock::Tick { n: 1 }).await?;
                gated.gate().await;
                emitter.emit(Clock::Done).await?;
                Ok(())
            }
        },
    );
    let slow = factory.get().event_stream_with(
        EventStreamOptions::default().keep_alive(None),
        async |(): (), emitter: Emitter<Clock>| {
            for n in 1..=3 {
                emitter.emit(Clock::Tick { n }).await?;
                tokio::time::sleep(Duration::from_millis(700)).await;
            }
            Ok(())
        },
    );
    // The first event when the test lets it come (after keep-alives).
    let gated = probe.clone();
    let late = factory.get().event_stream_with(
        EventStreamOptions::default().keep_alive(Some(Duration::from_millis(100))),
        move |(): (), emitter: Emitter<Clock>| {
            let gated = gated.clone();
            async move {
                gated.gate().await;
                emitter.emit(Clock::Done).await?;
                Ok(())
            }
        },
    );
    // Ignores the shutdown: its stream ends after the grace.
    let stubborn = factory.get().event_stream_with(
        EventStreamOptions::default().shutdown_grace(Duration::from_millis(300)),
        async |(): (), emitter: Emitter<Clock>| {
            tokio::time::sleep(Duration::from_secs(100)).await;
            emitter.emit(Clock::Done).await?;
            Ok(())
        },
    );
    routing! {
        "ticks" => ticks, "quiet" => quiet, "slow" => slow, "late" => late,
        "until-shutdown" => until_shutdown(told), "stubborn" => stubborn, "guarded" => guarded(),
    }
}

/// Waits for the server's shutdown, says goodbye and returns; counts the emitters told.
fn until_shutdown(told: Arc<AtomicUsize>) -> Endpoint {
    default_endpoints_factory()
        .get()
        .event_stream_without_input(move |emitter: Emitter<Clock>| {
            let told = Arc::clone(&told);
            async move {
                emitter.closed().await;
                if emitter.is_shutting_down() {
                    told.fetch_add(1, Ordering::SeqCst);
                }
                emitter.emit(Clock::Done).await?;
                Ok(())
            }
        })
}

/// Errors found before streaming belong in a middleware: it can still answer 401.
fn guarded() -> Endpoint {
    let signed_in = Middleware::new(|(): (), request: &http::request::Parts, _logger: &Logger| {
        let signed_in = request.headers.contains_key("authorization");
        async move {
            if signed_in {
                Ok(())
            } else {
                Err(http_error!(401, "No ticks for you"))
            }
        }
    });
    default_endpoints_factory()
        .add_middleware(signed_in)
        .get()
        .event_stream_without_input(async |emitter: Emitter<Clock>| {
            emitter.emit(Clock::Done).await?;
            Ok(())
        })
}

async fn serve(routing: &Routing) -> (Server, SocketAddr) {
    serve_with(routing, strata::server::ServerLimits::default()).await
}

/// A server of `routing` with `limits` and a short write timeout.
async fn serve_with(
    routing: &Routing,
    limits: strata::server::ServerLimits,
) -> (Server, SocketAddr) {
    let config = create_config()
        .cors(Cors::Disabled)
        .compression(Compression::GzipAndBrotli)
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        // Short, so that a quiet stream proves it is not taken for a stalled client.
        .limits(limits.write_timeout(Some(Duration::from_millis(300))))
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
    tokio::time::timeout(Duration::from_secs(10), sender.send_request(request))
        .await
        .expect("the head within 10 s")
        .unwrap()
}

/// The next piece of the stream as text, within 10 s (`None` at its end).
async fn next(body: &mut Incoming) -> Option<Result<String, hyper::Error>> {
    let frame = tokio::time::timeout(Duration::from_secs(10), body.frame())
        .await
        .expect("a piece within 10 s")?;
    Some(frame.map(|frame| String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap()))
}

#[tokio::test]
async fn events_arrive_in_order_and_as_they_are_emitted() {
    let probe = Probe::default();
    let (server, addr) = serve(&routing(&probe)).await;
    // gzip is asked for and on: event streams are never compressed (it would hold them back).
    // After each tick the handler waits for the test, which lets it go on only once it has
    // that tick: an event held back for the next (buffered, compressed) never arrives.
    let response = open(
        addr,
        "/ticks?count=3&gated=true",
        &[("accept-encoding", "gzip")],
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert_eq!(response.headers()["cache-control"], "no-cache");
    assert!(response.headers().get("content-encoding").is_none());
    let mut body = response.into_body();
    let mut pieces = Vec::new();
    while let Some(piece) = next(&mut body).await {
        pieces.push(piece.unwrap());
        probe.next_event();
    }
    // One piece per event, in order, each as it was emitted.
    assert_eq!(
        pieces,
        [
            "event: tick\nid: 1\ndata: {\"n\":1}\n\n",
            "event: tick\nid: 2\ndata: {\"n\":2}\n\n",
            "event: tick\nid: 3\ndata: {\"n\":3}\n\n",
            "event: done\ndata: null\n\n",
        ]
    );
    drop(server);
}

#[tokio::test]
async fn a_client_that_leaves_stops_the_handler() {
    let probe = Probe::default();
    let (server, addr) = serve(&routing(&probe)).await;
    let response = open(addr, "/ticks?count=100000&gap_ms=20", &[]).await;
    let mut body = response.into_body();
    for _ in 0..3 {
        next(&mut body).await.unwrap().unwrap();
    }
    drop(body); // the connection closes
    // (Left to itself, the handler would emit for half an hour.)
    assert!(
        probe.gone.wait(Duration::from_secs(10)).await,
        "the handler runs on 10 s after its client left"
    );
    // Its future is dropped: nothing can emit any more.
    drop(server);
}

/// Reads `body` until it has two keep-alive comments more than `text` has, then lets the
/// handler go on (`probe`) and reads the rest.
async fn read_through_the_silence(body: &mut Incoming, probe: &Probe, text: &mut String) {
    let wanted = text.matches(": keep-alive\n\n").count() + 2;
    while text.matches(": keep-alive\n\n").count() < wanted {
        let piece = next(body).await.expect("the stream ended in its silence");
        text.push_str(&piece.unwrap());
    }
    probe.next_event();
    while let Some(piece) = next(body).await {
        text.push_str(&piece.unwrap());
    }
}

#[tokio::test]
async fn keep_alives_fill_the_silence() {
    let probe = Probe::default();
    let (server, addr) = serve(&routing(&probe)).await;
    let mut body = open(addr, "/quiet", &[]).await.into_body();
    // The silence lasts until the test has two keep-alives (every 100 ms): then the handler
    // ends the stream.
    let mut text = String::new();
    read_through_the_silence(&mut body, &probe, &mut text).await;
    let (first, rest) = text
        .split_once("\n\n")
        .map(|(first, rest)| (format!("{first}\n\n"), rest))
        .unwrap();
    assert_eq!(first, "event: tick\ndata: {\"n\":1}\n\n", "{text:?}");
    let comments = rest
        .strip_suffix("event: done\ndata: null\n\n")
        .unwrap_or_else(|| panic!("{text:?}"));
    // Nothing but whole comments between the two events.
    assert!(
        comments.len() >= 2 * ": keep-alive\n\n".len()
            && comments
                .split_inclusive("\n\n")
                .all(|c| c == ": keep-alive\n\n"),
        "{text:?}"
    );
    drop(server);
}

#[tokio::test]
async fn errors_and_panics_end_the_stream_and_a_middleware_answers_401() {
    let probe = Probe::default();
    let (server, addr) = serve(&routing(&probe)).await;
    // The head went before the handler failed: the stream ends at once, cleanly (the error is
    // logged), before or after its first event; the server serves on.
    for (fail, events) in [
        ("before", ""),
        ("panic-before", ""),
        ("after", "event: tick\nid: 1\ndata: {\"n\":1}\n\n"),
        ("panic-after", "event: tick\nid: 1\ndata: {\"n\":1}\n\n"),
    ] {
        let response = open(addr, &format!("/ticks?count=1&fail={fail}"), &[]).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let mut body = response.into_body();
        let mut text = String::new();
        while let Some(piece) = next(&mut body).await {
            text.push_str(&piece.unwrap());
        }
        assert_eq!(text, events, "{fail}");
    }
    let response = open(addr, "/ticks?count=1", &[]).await;
    assert_eq!(response.status(), StatusCode::OK);

    // Refused before the stream starts: an ordinary error response.
    let response = open(addr, "/guarded", &[]).await;
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
    let response = open(addr, "/guarded", &[("authorization", "Bearer yes")]).await;
    assert_eq!(response.status(), StatusCode::OK);
    drop(server);
}

#[tokio::test]
async fn the_head_goes_before_the_first_event_and_keep_alives_fill_the_wait_for_it() {
    let probe = Probe::default();
    let (server, addr) = serve(&routing(&probe)).await;
    // Nothing will be emitted for 100 s: the head arrives anyway (`open` waits 10 s at most).
    let response = open(addr, "/stubborn", &[]).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    drop(response);

    // The first event once the test has two keep-alives (every 100 ms from the start).
    let response = open(addr, "/late", &[]).await;
    let mut body = response.into_body();
    let mut text = String::new();
    read_through_the_silence(&mut body, &probe, &mut text).await;
    let before: Vec<&str> = text.split_inclusive("\n\n").collect();
    let (last, comments) = before.split_last().unwrap();
    assert_eq!(*last, "event: done\ndata: null\n\n", "{text:?}");
    // Each a whole comment.
    assert!(comments.len() >= 2, "{text:?}");
    assert!(
        comments.iter().all(|c| *c == ": keep-alive\n\n"),
        "{text:?}"
    );
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
    let config = create_config().cors(Cors::Disabled).build();
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
async fn at_shutdown_open_event_streams_end_cleanly_and_their_emitters_are_told() {
    let probe = Probe::default();
    // A shutdown timeout of a minute: a stream that held the shutdown would hold it that long.
    let (server, addr) = serve_with(
        &routing(&probe),
        strata::server::ServerLimits::default().shutdown_timeout(Some(Duration::from_secs(60))),
    )
    .await;
    // Streams that would run for 100 s: five that have sent nothing yet and wait for the
    // signal, one with events that ignores it, one that ignores it with nothing sent.
    let mut bodies = Vec::new();
    for _ in 0..5 {
        bodies.push((
            "until-shutdown",
            open(addr, "/until-shutdown", &[]).await.into_body(),
        ));
    }
    let mut ticks = open(addr, "/ticks?count=100&gap_ms=1000", &[])
        .await
        .into_body();
    assert!(next(&mut ticks).await.unwrap().unwrap().contains("tick"));
    bodies.push(("ticks", ticks));
    bodies.push(("stubborn", open(addr, "/stubborn", &[]).await.into_body()));
    // No event stream holds the shutdown for its timeout (the longest grace is the default
    // 1 s).
    tokio::time::timeout(Duration::from_secs(20), server.shutdown())
        .await
        .expect("an event stream held the shutdown");
    // Each stream ended with its final chunk (a clean end, not a cut connection); those that
    // waited for the signal said goodbye.
    for (name, mut body) in bodies {
        let mut text = String::new();
        while let Some(piece) = next(&mut body).await {
            text.push_str(&piece.unwrap_or_else(|e| panic!("{name}: {e}")));
        }
        if name == "until-shutdown" {
            assert_eq!(text, "event: done\ndata: null\n\n");
        }
    }
    assert_eq!(
        probe.told.load(Ordering::SeqCst),
        5,
        "every emitter was told"
    );
    assert!(
        probe.gone.wait(Duration::from_secs(10)).await,
        "the handler still runs"
    );
}

/// The events of a topic relayed to event streams.
#[derive(Serialize, Validate, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[garde(allow_unvalidated)]
enum Feed {
    Quote {
        n: u32,
    },
    /// The client missed events: it reloads.
    Reload,
}

/// A topic of [`Feed`] keeping the last three events.
fn quotes_topic() -> strata::events::Topic<Feed> {
    use strata::events::{Broadcaster, MemoryBroadcaster, ReplayWindow, Topic};
    let bus: Arc<dyn Broadcaster> = Arc::new(MemoryBroadcaster::new(ReplayWindow::last(3)));
    Topic::new(bus, "quotes")
}

/// Checks `/feed` of the server at `addr`, relaying `topic` with a gap as `reload`: a client
/// resumes after its `Last-Event-ID`, or is told of the gap and gets what the window keeps;
/// shutdown ends both streams cleanly.
async fn check_relay(server: Server, addr: SocketAddr, topic: &strata::events::Topic<Feed>) {
    let mut ids = Vec::new();
    for n in 1..=5 {
        ids.push(topic.publish(&Feed::Quote { n }).await.unwrap());
    }
    let quote = |ids: &[Arc<str>], n: usize| {
        format!("event: quote\nid: {}\ndata: {{\"n\":{n}}}\n\n", ids[n - 1])
    };

    // After the 3rd: exactly the 4th and 5th, then the live ones.
    let response = open(addr, "/feed", &[("last-event-id", &ids[2])]).await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body();
    assert_eq!(next(&mut body).await.unwrap().unwrap(), quote(&ids, 4));
    assert_eq!(next(&mut body).await.unwrap().unwrap(), quote(&ids, 5));
    ids.push(topic.publish(&Feed::Quote { n: 6 }).await.unwrap());
    assert_eq!(next(&mut body).await.unwrap().unwrap(), quote(&ids, 6));

    // After the 2nd, whose successor left the window of three: told, then what is kept.
    let mut late = open(addr, "/feed", &[("last-event-id", &ids[1])])
        .await
        .into_body();
    assert_eq!(
        next(&mut late).await.unwrap().unwrap(),
        "event: reload\ndata: null\n\n"
    );
    for n in 4..=6 {
        assert_eq!(next(&mut late).await.unwrap().unwrap(), quote(&ids, n));
    }
    // Shutdown ends the relays cleanly.
    server.shutdown().await;
    assert!(next(&mut body).await.is_none());
    assert!(next(&mut late).await.is_none());
}

#[tokio::test]
async fn a_relayed_topic_resumes_after_last_event_id_and_says_when_it_cannot() {
    let topic = quotes_topic();
    let relayed = topic.clone();
    let feed = default_endpoints_factory()
        .get()
        .event_stream_without_input(move |emitter: Emitter<Feed>| {
            let topic = relayed.clone();
            async move {
                emitter.relay(&topic, |_gap| Some(Feed::Reload)).await?;
                Ok(())
            }
        });
    let (server, addr) = serve(&routing! { "feed" => feed }).await;
    check_relay(server, addr, &topic).await;
}

/// A handler that returns a relayed topic, read by the response body alone (no task, no
/// channel): the same resumption and gaps as a relay in an event-stream handler.
#[tokio::test]
async fn a_handler_returns_a_relayed_topic_that_the_body_reads_alone() {
    use strata::events::{EventStream, last_event_id};
    let topic = quotes_topic();
    let relayed = topic.clone();
    let feed = default_endpoints_factory().get().handler_without_input(
        move |request: http::request::Parts| {
            let topic = relayed.clone();
            async move {
                let last = last_event_id(&request.headers);
                let stream =
                    EventStream::relay(EventStreamOptions::default(), &topic, last, |_gap| {
                        Some(Feed::Reload)
                    })
                    .await?;
                Ok(stream)
            }
        },
    );
    let (server, addr) = serve(&routing! { "feed" => feed }).await;
    check_relay(server, addr, &topic).await;
}
