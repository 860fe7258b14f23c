//! JSON logs (`LoggerOptions::format(LogFormat::Json)`), read as a log shipper reads them: the
//! test runs itself again as a child process whose server installs the default subscriber (on
//! standard output, as in production), sends it requests over real sockets, and reads the
//! child's output: every log line one JSON object, and one line per request answered with its
//! request id, route template, method and status.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::net::SocketAddr;

use garde::Validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::Level;
use strata::prelude::*;
use strata::server::{LocalAddr, LogFormat, LoggerOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[path = "common/child_logs.rs"]
mod child_logs;

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct BookId {
    id: String,
}

/// Sends `method path` with `x-request-id: id` on a connection of its own; the status.
async fn send(addr: SocketAddr, method: &str, path: &str, id: &str) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: a\r\nx-request-id: {id}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    String::from_utf8(answer).unwrap()[9..12].parse().unwrap()
}

/// The child: a server logging JSON lines on standard output, three requests, a shutdown.
async fn serve_and_log() {
    let book = default_endpoints_factory()
        .get()
        .handler(async |input: BookId| Ok(input));
    let config = create_config()
        .cors(Cors::Disabled)
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .logger(LoggerOptions::new(Level::Info).format(LogFormat::Json))
        .build();
    let routing = routing! { "v1" => { "books" => { ":id" => book } } };
    let server = create_server(&config, &routing).await.unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    assert_eq!(send(addr, "GET", "/v1/books/7?x=1", "book-7").await, 200);
    assert_eq!(send(addr, "GET", "/nowhere/8", "nowhere-8").await, 404);
    assert_eq!(send(addr, "DELETE", "/v1/books/9", "delete-9").await, 405);
    server.shutdown().await;
}

#[test]
fn json_logs_have_a_line_per_request_with_its_id_route_method_and_status() {
    let test = "json_logs_have_a_line_per_request_with_its_id_route_method_and_status";
    let Some(records) = child_logs::json_records(test, serve_and_log) else {
        return;
    };
    assert!(
        records.iter().any(|record| record["message"]
            .as_str()
            .unwrap()
            .starts_with("Listening on")),
        "{records:#?}"
    );
    for record in &records {
        assert!(record["timestamp"].is_string(), "{record}");
        assert!(record["level"].is_string(), "{record}");
        assert!(record["target"].is_string(), "{record}");
    }
    let lines: Vec<(&str, &str, &str, u64)> = records
        .iter()
        .filter(|record| record["target"] == "strata::request")
        .map(|record| {
            assert_eq!(record["message"], "request", "{record}");
            assert_eq!(record["level"], "INFO", "{record}");
            assert!(record["duration_ms"].as_f64().unwrap() >= 0.0, "{record}");
            // A request's trace and span ids, when traced (tests/tracing_otlp.rs): not here.
            assert!(record.get("trace_id").is_none(), "{record}");
            assert!(record.get("span_id").is_none(), "{record}");
            (
                record["request_id"].as_str().unwrap(),
                record["route"].as_str().unwrap(),
                record["method"].as_str().unwrap(),
                record["status"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        lines,
        [
            ("book-7", "/v1/books/:id", "GET", 200),
            ("nowhere-8", "(unmatched)", "GET", 404),
            ("delete-9", "/v1/books/:id", "DELETE", 405),
        ],
        "{records:#?}"
    );
}
