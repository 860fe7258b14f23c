//! Traces across two services over real sockets (the `otel` feature): service A's handler
//! calls service B through the Rust client; both export their spans over OTLP/HTTP to a
//! receiver in this test (a tiny HTTP server on 127.0.0.1:0 keeping what is posted), which
//! decodes them with the OpenTelemetry protocol's own definitions (`opentelemetry-proto`'s
//! types, generated from the `.proto` files). One trace: A's server span a child of the
//! caller's `traceparent`, A's handler span its child, the client's span of the call to B the
//! handler's child, B's server span a child of the client's (whose context the client sent),
//! the attributes as the semantic conventions name them. Each middleware's span (A's state is
//! put in the context by one) is a sibling of the handler's, a child of the server span. Waits
//! are the exporters' flushes, which return once the receiver has answered.
//!
//! A second test runs itself as a child process whose server logs JSON lines, and reads them:
//! a sampled request's line carries its trace and span ids.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use garde::Validate;
use http_body_util::{BodyExt, Full};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::client::{Client, HttpClient};
use strata::prelude::*;
use strata::server::{LocalAddr, LogFormat, LoggerOptions, ServerError};
use strata::{Level, Operation, Routing, Tracing};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The caller's trace and span, sent to A in `traceparent`.
const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

#[derive(Debug, Serialize, Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Word {
    word: String,
}

/// B's operation, which A calls.
const ECHO: Operation<Word, Word> = Operation::get("/v1/echo/:word");
/// A's operation: calls B's.
const RELAY: Operation<Word, Word> = Operation::get("/v1/relay/:word");

/// What the receiver was posted: each request's path and body.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<(String, Bytes)>>>);

/// An OTLP/HTTP receiver on 127.0.0.1:0: keeps each POST's path and body, answers 200 with
/// an empty `ExportTraceServiceResponse` (an empty protobuf message is no bytes).
async fn receiver() -> (String, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let received = Received::default();
    let kept = received.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let kept = kept.clone();
            let service =
                hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
                    let kept = kept.clone();
                    async move {
                        let path = request.uri().path().to_owned();
                        let body = request.into_body().collect().await.unwrap().to_bytes();
                        kept.0.lock().unwrap().push((path, body));
                        let response = http::Response::builder()
                            .header("content-type", "application/x-protobuf")
                            .body(Full::new(Bytes::new()))
                            .unwrap();
                        Ok::<_, Infallible>(response)
                    }
                });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service),
            );
        }
    });
    (url, received)
}

/// A decoded span: its service, ids, name, kind and attributes.
#[derive(Debug)]
#[allow(clippy::struct_field_names)] // the protocol's names
struct Span {
    service: String,
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    name: String,
    kind: i32,
    attributes: HashMap<String, AnyValue>,
}

impl Span {
    fn text(&self, key: &str) -> Option<&str> {
        match self.attributes.get(key) {
            Some(AnyValue::StringValue(text)) => Some(text),
            _ => None,
        }
    }

    fn int(&self, key: &str) -> Option<i64> {
        match self.attributes.get(key) {
            Some(AnyValue::IntValue(n)) => Some(*n),
            _ => None,
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut hex, b| {
        let _ = write!(hex, "{b:02x}");
        hex
    })
}

fn attributes(list: &[KeyValue]) -> HashMap<String, AnyValue> {
    list.iter()
        .filter_map(|kv| {
            let value = kv.value.as_ref()?.value.clone()?;
            Some((kv.key.clone(), value))
        })
        .collect()
}

/// Every span posted so far, decoded (each post must be to `/v1/traces` and decode).
fn spans(received: &Received) -> Vec<Span> {
    let mut spans = Vec::new();
    for (path, body) in received.0.lock().unwrap().iter() {
        assert_eq!(path, "/v1/traces");
        let request = ExportTraceServiceRequest::decode(body.clone()).unwrap();
        for resource_spans in request.resource_spans {
            let resource = resource_spans.resource.unwrap_or_default();
            let service = match attributes(&resource.attributes).remove("service.name") {
                Some(AnyValue::StringValue(name)) => name,
                other => panic!("service.name: {other:?}"),
            };
            for scope_spans in resource_spans.scope_spans {
                assert_eq!(scope_spans.scope.unwrap_or_default().name, "strata");
                for span in scope_spans.spans {
                    spans.push(Span {
                        service: service.clone(),
                        trace_id: hex(&span.trace_id),
                        span_id: hex(&span.span_id),
                        parent_span_id: hex(&span.parent_span_id),
                        name: span.name,
                        kind: span.kind,
                        attributes: attributes(&span.attributes),
                    });
                }
            }
        }
    }
    spans
}

fn port(server: &strata::Server) -> SocketAddr {
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    addr
}

fn config(tracing: Tracing) -> strata::Config {
    create_config()
        .cors(Cors::Disabled)
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .tracing(tracing)
        .build()
}

/// B: echoes the word.
async fn service_b(tracing: Tracing) -> strata::Server {
    let echo = default_endpoints_factory()
        .endpoint()
        .implement(&ECHO, async |input: Word| Ok(input));
    create_server(&config(tracing), &Routing::new().operation(echo))
        .await
        .unwrap()
}

/// A: asks B for the word, through the Rust client.
async fn service_a(tracing: Tracing, b: SocketAddr) -> strata::Server {
    let client: HttpClient = Client::http(&format!("http://{b}")).unwrap();
    let relay = default_endpoints_factory()
        .with_state(client)
        .endpoint()
        .implement(&RELAY, async |input: Word, b: HttpClient| {
            b.call(&ECHO, input)
                .await
                .map_err(|error| http_error!(502, "B: {error}"))
        });
    create_server(&config(tracing), &Routing::new().operation(relay))
        .await
        .unwrap()
}

/// Sends `GET path` to `addr` with these extra header lines; the status and the response's
/// `x-request-id`.
async fn get(addr: SocketAddr, path: &str, headers: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nuser-agent: the-test\r\n{headers}\
         Connection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let id = answer
        .lines()
        .find_map(|line| line.strip_prefix("x-request-id: "))
        .unwrap_or_default()
        .to_owned();
    (answer[9..12].parse().unwrap(), id)
}

/// Exports what `tracing` has ended: returns once the receiver has answered the post.
async fn flush(tracing: &Tracing) {
    let tracing = tracing.clone();
    tokio::task::spawn_blocking(move || tracing.force_flush())
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn one_trace_across_two_services_over_otlp() {
    let (collector, received) = receiver().await;
    let tracing_a = Tracing::otlp(&collector).service_name("a");
    let tracing_b = Tracing::otlp(format!("{collector}/")).service_name("b");
    let b = service_b(tracing_b.clone()).await;
    let a = service_a(tracing_a.clone(), port(&b)).await;
    let (a_addr, b_addr) = (port(&a), port(&b));

    let traceparent = format!("traceparent: 00-{CALLER_TRACE}-{CALLER_SPAN}-01\r\n");
    let tracestate = "tracestate: caller=1\r\n";
    let (status, request_id) = get(
        a_addr,
        "/v1/relay/hello",
        &format!("{traceparent}{tracestate}"),
    )
    .await;
    assert_eq!(status, 200);
    // Untraced by a caller: a trace of its own. Unknown paths: the method alone names it.
    assert_eq!(get(a_addr, "/nowhere/1", "").await.0, 404);
    flush(&tracing_a).await;
    flush(&tracing_b).await;

    let spans = spans(&received);
    let find = |service: &str, name: &str| {
        spans
            .iter()
            .find(|span| span.service == service && span.name == name)
            .unwrap_or_else(|| panic!("no span {name} of {service} in {spans:#?}"))
    };
    let a_span = find("a", "GET /v1/relay/:word");
    let a_handler = find("a", "handler");
    let a_call = find("a", "GET /v1/echo/:word");
    let b_span = find("b", "GET /v1/echo/:word");
    let b_handler = find("b", "handler");
    // A's state (the client), put in the context by a middleware, which has a span too.
    let a_state = find("a", "middleware");
    // The 404 has no handler.
    assert_eq!(spans.len(), 7, "{spans:#?}");

    // One trace: the caller's. A's server span its child, A's handler A's server span's, A's
    // call of B (a client span) A's handler's, B's server span A's call's, B's handler B's
    // server span's.
    for span in [a_span, a_handler, a_call, b_span, b_handler] {
        assert_eq!(span.trace_id, CALLER_TRACE, "{span:#?}");
    }
    assert_eq!(a_span.parent_span_id, CALLER_SPAN);
    assert_eq!(a_handler.parent_span_id, a_span.span_id);
    assert_eq!(a_state.parent_span_id, a_span.span_id);
    assert_eq!(a_state.trace_id, CALLER_TRACE);
    assert_eq!(a_call.parent_span_id, a_handler.span_id);
    assert_eq!(b_span.parent_span_id, a_call.span_id);
    assert_eq!(b_handler.parent_span_id, b_span.span_id);
    assert_eq!(a_handler.kind, SpanKind::Internal as i32);

    // The client span, as the conventions name its attributes.
    assert_eq!(a_call.kind, SpanKind::Client as i32, "{a_call:#?}");
    assert_eq!(a_call.text("http.request.method"), Some("GET"));
    assert_eq!(
        a_call.text("url.full"),
        Some(format!("http://{b_addr}/v1/echo/hello").as_str())
    );
    assert_eq!(a_call.text("url.template"), Some("/v1/echo/:word"));
    assert_eq!(a_call.text("server.address"), Some("127.0.0.1"));
    assert_eq!(a_call.int("server.port"), Some(i64::from(b_addr.port())));
    assert_eq!(a_call.int("http.response.status_code"), Some(200));

    for (span, addr, route, path) in [
        (a_span, a_addr, "/v1/relay/:word", "/v1/relay/hello"),
        (b_span, b_addr, "/v1/echo/:word", "/v1/echo/hello"),
    ] {
        assert_eq!(span.kind, SpanKind::Server as i32, "{span:#?}");
        assert_eq!(span.text("http.request.method"), Some("GET"), "{span:#?}");
        assert_eq!(span.text("http.route"), Some(route), "{span:#?}");
        assert_eq!(span.int("http.response.status_code"), Some(200));
        assert_eq!(span.text("url.path"), Some(path), "{span:#?}");
        assert_eq!(span.text("server.address"), Some("127.0.0.1"));
        assert_eq!(span.int("server.port"), Some(i64::from(addr.port())));
        assert_eq!(span.text("network.protocol.version"), Some("1.1"));
        assert!(span.text("strata.request_id").is_some(), "{span:#?}");
    }
    assert_eq!(a_span.text("user_agent.original"), Some("the-test"));
    assert_eq!(a_span.text("strata.request_id"), Some(request_id.as_str()));

    let unknown = find("a", "GET");
    assert_ne!(unknown.trace_id, CALLER_TRACE, "a trace of its own");
    assert_eq!(unknown.parent_span_id, "", "a root span");
    assert_eq!(unknown.text("http.route"), None);
    assert_eq!(unknown.int("http.response.status_code"), Some(404));

    a.shutdown().await;
    b.shutdown().await;
}

/// A's operation behind middleware (`/v1/greet/:word`).
const GREET: Operation<Word, Word> = Operation::get("/v1/greet/:word");

/// A shared state, put in the context by `with_state` (a middleware deciding at once).
#[derive(Clone)]
struct Greeting(&'static str);

/// The user the `auth` middleware grants.
struct User;

#[tokio::test]
async fn each_middleware_runs_in_a_span_of_its_own_beside_the_handlers() {
    let (collector, received) = receiver().await;
    let tracing = Tracing::otlp(&collector).service_name("a");
    // The span current while `auth`'s future runs, as the middleware sees it.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen_by_auth = seen.clone();
    let auth = Middleware::new(move |(): (), request, _logger| {
        let token = request.headers.get("token").cloned();
        let seen = seen_by_auth.clone();
        async move {
            let current = strata::opentelemetry::Context::current();
            let span_id = {
                use strata::opentelemetry::trace::TraceContextExt as _;
                current.span().span_context().span_id().to_string()
            };
            seen.lock().unwrap().push(span_id);
            match token {
                Some(token) if token == "secret" => Ok(User),
                _ => Err(http_error!(401, "Invalid token")),
            }
        }
    })
    .name("auth");
    let greet = default_endpoints_factory()
        .add_middleware(auth)
        .with_state(Greeting("hello"))
        .endpoint()
        .implement(&GREET, async |input: Word, greeting: Greeting| {
            Ok(Word {
                word: format!("{} {}", greeting.0, input.word),
            })
        });
    let server = create_server(&config(tracing.clone()), &Routing::new().operation(greet))
        .await
        .unwrap();
    let addr = port(&server);
    let traceparent = format!("traceparent: 00-{CALLER_TRACE}-{CALLER_SPAN}-01\r\n");
    let granted = format!("{traceparent}token: secret\r\n");
    assert_eq!(get(addr, "/v1/greet/ann", &granted).await.0, 200);
    // Denied by `auth`: its span, and no other middleware's nor the handler's.
    assert_eq!(get(addr, "/v1/greet/bob", "").await.0, 401);
    flush(&tracing).await;

    let spans = spans(&received);
    let server_span = |path: &str| {
        spans
            .iter()
            .find(|span| span.text("url.path") == Some(path))
            .unwrap_or_else(|| panic!("no server span of {path} in {spans:#?}"))
    };
    let children = |parent: &Span| {
        let mut children: Vec<&Span> = spans
            .iter()
            .filter(|span| span.parent_span_id == parent.span_id)
            .collect();
        children.sort_by_key(|span| span.text("strata.middleware.name").unwrap_or_default());
        children
    };

    let granted = server_span("/v1/greet/ann");
    assert_eq!(granted.trace_id, CALLER_TRACE);
    let stages = children(granted);
    let names: Vec<_> = stages
        .iter()
        .map(|span| (span.name.as_str(), span.text("strata.middleware.name")))
        .collect();
    assert_eq!(
        names,
        [
            ("handler", None),
            ("middleware", Some("auth")),
            ("middleware", Some(std::any::type_name::<Greeting>())),
        ],
        "{spans:#?}"
    );
    for stage in &stages {
        assert_eq!(stage.trace_id, CALLER_TRACE, "{stage:#?}");
        assert_eq!(stage.kind, SpanKind::Internal as i32, "{stage:#?}");
        assert!(
            children(stage).is_empty(),
            "stages are siblings: {spans:#?}"
        );
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen[0], stages[1].span_id,
        "auth's span is current while it runs"
    );

    let denied = server_span("/v1/greet/bob");
    assert_eq!(denied.int("http.response.status_code"), Some(401));
    let stages = children(denied);
    assert_eq!(stages.len(), 1, "{spans:#?}");
    assert_eq!(stages[0].name, "middleware");
    assert_eq!(stages[0].text("strata.middleware.name"), Some("auth"));
    assert_eq!(seen[1], stages[0].span_id);
    assert_eq!(spans.len(), 6, "{spans:#?}");
    server.shutdown().await;
}

#[tokio::test]
async fn sampling_follows_the_ratio_and_the_callers_decision() {
    let (collector, received) = receiver().await;
    let never = Tracing::otlp(&collector)
        .service_name("b")
        .sample_ratio(0.0);
    let b = service_b(never.clone()).await;
    let addr = port(&b);
    // Sampled by the caller: recorded whatever the ratio (the parent decides).
    let sampled = format!("traceparent: 00-{CALLER_TRACE}-{CALLER_SPAN}-01\r\n");
    assert_eq!(get(addr, "/v1/echo/yes", &sampled).await.0, 200);
    // Not sampled by the caller, or a trace starting here at ratio 0: nothing.
    let unsampled = format!("traceparent: 00-{CALLER_TRACE}-{CALLER_SPAN}-00\r\n");
    assert_eq!(get(addr, "/v1/echo/no", &unsampled).await.0, 200);
    assert_eq!(get(addr, "/v1/echo/none", "").await.0, 200);
    flush(&never).await;
    let spans = spans(&received);
    let paths: Vec<_> = spans
        .iter()
        .filter_map(|span| span.text("url.path"))
        .collect();
    assert_eq!(paths, ["/v1/echo/yes"]);
    assert_eq!(
        spans.len(),
        2,
        "the server's span and its handler's: {spans:#?}"
    );
    b.shutdown().await;
}

/// At a ratio of 0, a request without `traceparent` is served without a span: the calls made
/// while serving it carry no trace context, and the next service decides for itself (B, at
/// 1, starts a trace of its own).
#[tokio::test]
async fn at_ratio_zero_a_trace_starting_here_has_no_span_and_propagates_nothing() {
    let (collector, received) = receiver().await;
    let always = Tracing::otlp(&collector).service_name("b");
    let never = Tracing::otlp(&collector)
        .service_name("a")
        .sample_ratio(0.0);
    let b = service_b(always.clone()).await;
    let a = service_a(never.clone(), port(&b)).await;
    assert_eq!(get(port(&a), "/v1/relay/none", "").await.0, 200);
    flush(&never).await;
    flush(&always).await;
    let spans = spans(&received);
    assert_eq!(spans.len(), 2, "B's server span and handler's: {spans:#?}");
    let server = spans
        .iter()
        .find(|span| span.text("url.path") == Some("/v1/echo/none"))
        .unwrap_or_else(|| panic!("B's server span: {spans:#?}"));
    assert!(
        server.parent_span_id.is_empty(),
        "B's span has no parent: A sent no traceparent ({spans:#?})"
    );
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn bad_tracing_settings_stop_the_start_with_their_name() {
    let routing = Routing::new();
    let error = |tracing: Tracing| {
        let config = config(tracing);
        let routing = &routing;
        async move {
            match create_server(&config, routing).await {
                Err(ServerError::Config(message)) => message,
                other => panic!("{other:?}"),
            }
        }
    };
    assert_eq!(
        error(Tracing::otlp("http://127.0.0.1:4318").sample_ratio(-0.5)).await,
        "tracing: sample_ratio must be between 0 and 1, got -0.5"
    );
    let endpoint = |given: &str| {
        format!(
            "tracing: the OTLP endpoint must be an http:// URL (https:// is not supported yet), \
             got `{given}`"
        )
    };
    assert_eq!(
        error(Tracing::otlp("127.0.0.1:4318")).await,
        endpoint("127.0.0.1:4318")
    );
    assert_eq!(
        error(Tracing::otlp("https://collector:4318")).await,
        endpoint("https://collector:4318")
    );
}

#[path = "common/child_logs.rs"]
mod child_logs;

/// The child: a traced server logging JSON lines, a sampled and an unsampled request.
async fn serve_traced_and_log() {
    let (collector, _received) = receiver().await;
    let tracing = Tracing::otlp(collector).service_name("b");
    let echo = default_endpoints_factory()
        .endpoint()
        .implement(&ECHO, async |input: Word| Ok(input));
    let config = create_config()
        .cors(Cors::Disabled)
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .logger(LoggerOptions::new(Level::Info).format(LogFormat::Json))
        .tracing(tracing)
        .build();
    let server = create_server(&config, &Routing::new().operation(echo))
        .await
        .unwrap();
    let addr = port(&server);
    let sampled =
        format!("traceparent: 00-{CALLER_TRACE}-{CALLER_SPAN}-01\r\nx-request-id: in\r\n");
    assert_eq!(get(addr, "/v1/echo/in", &sampled).await.0, 200);
    let unsampled =
        format!("traceparent: 00-{CALLER_TRACE}-{CALLER_SPAN}-00\r\nx-request-id: out\r\n");
    assert_eq!(get(addr, "/v1/echo/out", &unsampled).await.0, 200);
    server.shutdown().await;
}

#[test]
fn json_log_lines_carry_the_trace_and_span_ids_of_sampled_requests() {
    let test = "json_log_lines_carry_the_trace_and_span_ids_of_sampled_requests";
    let Some(records) = child_logs::json_records(test, serve_traced_and_log) else {
        return;
    };
    let lines: HashMap<String, serde_json::Value> = records
        .into_iter()
        .filter(|record| record["target"] == "strata::request")
        .map(|record| (record["request_id"].as_str().unwrap().to_owned(), record))
        .collect();
    let sampled = &lines["in"];
    assert_eq!(sampled["trace_id"], CALLER_TRACE, "{sampled}");
    let span_id = sampled["span_id"].as_str().unwrap();
    assert_eq!(span_id.len(), 16, "{sampled}");
    assert_ne!(
        span_id, CALLER_SPAN,
        "the server's own span, not the caller's"
    );
    let unsampled = &lines["out"];
    assert!(unsampled.get("trace_id").is_none(), "{unsampled}");
    assert!(unsampled.get("span_id").is_none(), "{unsampled}");
}
