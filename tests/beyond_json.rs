//! Beyond JSON, over real sockets: the QUERY method, raw request bodies, file and stream
//! responses.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use garde::Validate;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use strata::StreamResponse;
use strata::prelude::*;
use strata::{Endpoint, FileResponse, InputSource};
use tokio::net::TcpStream;

#[path = "common/http.rs"]
mod http_client;
use http_client::{send, serve};

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

#[derive(Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct SearchInput {
    term: String,
    #[serde(default)]
    limit: Option<u32>,
    shelf: String,
}

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct SearchOutput {
    term: String,
    limit: Option<u32>,
    shelf: String,
}

fn search() -> Endpoint {
    default_endpoints_factory()
        .query()
        .handler(async |input: SearchInput| {
            Ok(SearchOutput {
                term: input.term,
                limit: input.limit,
                shelf: input.shelf,
            })
        })
}

fn listing() -> Endpoint {
    default_endpoints_factory()
        .get()
        .handler_without_input(async || {
            Ok(SearchOutput {
                term: String::new(),
                limit: None,
                shelf: String::new(),
            })
        })
}

#[tokio::test]
async fn query_reads_the_query_string_then_the_body_then_the_path() {
    let routing = routing! {
        "shelves" => { ":shelf" => { "search" => search() } },
        "list" => listing(),
        // The explicit form of a method key.
        "query /explicit/:shelf" => search(),
    };
    let (server, addr) = serve(&routing, create_config().cors(Cors::Enabled)).await;

    let body = r#"{"term": "from the body", "shelf": "ignored: the path wins"}"#;
    let (status, _, bytes) = send(
        addr,
        "QUERY",
        "/shelves/poetry/search?term=from+the+query&limit=5",
        &[("content-type", "application/json")],
        body,
    )
    .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&bytes)
    );
    assert_eq!(
        json(&bytes)["data"],
        json!({"term": "from the body", "limit": 5, "shelf": "poetry"})
    );

    let (status, _, bytes) = send(
        addr,
        "QUERY",
        "/explicit/prose",
        &[("content-type", "application/json")],
        r#"{"term": "x"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(json(&bytes)["data"]["shelf"], "prose");

    // A QUERY body is validated as any other input.
    let (status, _, bytes) = send(
        addr,
        "QUERY",
        "/shelves/poetry/search",
        &[("content-type", "application/json")],
        r#"{"limit": "many"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let message = json(&bytes)["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("term: required"), "{message}");

    // The method list of a QUERY path, in 405's Allow and in CORS preflights.
    let (status, headers, _) = send(addr, "GET", "/shelves/poetry/search", &[], "").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(headers["allow"], "QUERY, OPTIONS");
    let (status, _, _) = send(addr, "QUERY", "/list", &[], "").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    let (status, headers, _) = send(
        addr,
        "OPTIONS",
        "/shelves/poetry/search",
        &[
            ("origin", "https://example.com"),
            ("access-control-request-method", "QUERY"),
        ],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["access-control-allow-methods"], "QUERY, OPTIONS");
    drop(server);
}

#[tokio::test]
async fn query_sources_are_configurable_and_query_operations_are_documented_in_openapi_3_2() {
    let routing = routing! { "search" => search(), "list" => listing() };
    let config = create_config()
        .cors(Cors::Disabled)
        .input_sources(&strata::core::query_method(), [InputSource::Body]);
    let (server, addr) = serve(&routing, config.clone()).await;
    let (status, _, bytes) = send(
        addr,
        "QUERY",
        "/search?shelf=from-the-query",
        &[("content-type", "application/json")],
        r#"{"term": "t"}"#,
    )
    .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "the query string is not read"
    );
    assert!(
        json(&bytes)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("shelf: required")
    );
    drop(server);

    let config = config.build();
    let document = strata::openapi::Documentation::new(&routing, &config)
        .build()
        .unwrap()
        .to_value();
    assert_eq!(document["openapi"], "3.2.0");
    // The configured sources: the body only, so `shelf` is a body field, not a parameter.
    let search = &document["paths"]["/search"]["query"];
    assert_eq!(search["operationId"], "querySearch", "{document}");
    assert!(search.get("parameters").is_none(), "{search}");
    let body = &search["requestBody"]["content"]["application/json"]["schema"];
    assert_eq!(body["required"], json!(["shelf", "term"]), "{body}");
    assert!(document.get("x-omitted-operations").is_none());

    // OpenAPI 3.1 has no QUERY operation: left out, and said so.
    let document = strata::openapi::Documentation::new(&routing, &config)
        .openapi_version(strata::openapi::OpenApiVersion::V3_1)
        .build()
        .unwrap()
        .to_value();
    assert_eq!(document["openapi"], "3.1.0");
    assert!(document["paths"].get("/search").is_none(), "{document}");
    assert!(document["paths"].get("/list").is_some());
    assert_eq!(
        document["x-omitted-operations"],
        json!({"QUERY /search": "OpenAPI 3.1 has no QUERY operation (3.2 adds one)"})
    );
}

#[derive(Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct HookInput {
    raw: strata::RawBody,
    source: String,
}

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct HookOutput {
    source: String,
    length: usize,
    content_type: String,
    bytes: Vec<u8>,
}

fn hook() -> Endpoint {
    default_endpoints_factory()
        .post()
        .handler(async |input: HookInput| {
            Ok(HookOutput {
                source: input.source,
                length: input.raw.len(),
                content_type: input.raw.content_type().to_owned(),
                bytes: input.raw.data().to_vec(),
            })
        })
}

#[tokio::test]
async fn a_raw_body_reaches_the_handler_intact_with_the_other_sources() {
    let routing = routing! { "hooks" => { ":source" => hook() } };
    let (server, addr) = serve(
        &routing,
        create_config().cors(Cors::Disabled).body_limit(64),
    )
    .await;

    let seven = [0u8, 1, 2, 0xff, b'{', b'\n', 7];
    let (status, _, bytes) = send(
        addr,
        "POST",
        "/hooks/github",
        &[("content-type", "application/octet-stream")],
        Bytes::copy_from_slice(&seven),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&bytes)
    );
    assert_eq!(
        json(&bytes)["data"],
        json!({"source": "github", "length": 7, "content_type": "application/octet-stream",
               "bytes": [0, 1, 2, 255, 123, 10, 7]})
    );

    // Any content type, JSON included, is kept as it came (whitespace and all), not parsed.
    let body = "{ \"a\" : 1 }";
    let (status, _, bytes) = send(
        addr,
        "POST",
        "/hooks/stripe",
        &[("content-type", "application/json; charset=utf-8")],
        body,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let data = &json(&bytes)["data"];
    assert_eq!(data["content_type"], "application/json; charset=utf-8");
    assert_eq!(data["bytes"], json!(body.as_bytes()));

    // No content type at all is fine too.
    let (status, _, bytes) = send(addr, "POST", "/hooks/plain", &[], "x").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        json(&bytes)["data"]["content_type"],
        "application/octet-stream"
    );

    // Over the body limit: a 413 naming it, declared or streamed.
    let (status, _, bytes) = send(addr, "POST", "/hooks/big", &[], vec![b'x'; 65]).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        json(&bytes)["error"]["message"],
        "Request body exceeds the limit of 64 bytes"
    );

    // Zero bytes of a content type are an empty body, as express's raw parser has it...
    let (status, _, bytes) = send(
        addr,
        "POST",
        "/hooks/empty",
        &[("content-type", "application/octet-stream")],
        "",
    )
    .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&bytes)
    );
    assert_eq!(json(&bytes)["data"]["length"], 0);
    assert_eq!(json(&bytes)["data"]["bytes"], json!([]));
    // ...and no body at all (nor a content type) is a missing field.
    let (status, _, bytes) = send(addr, "POST", "/hooks/empty", &[], "").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(json(&bytes)["error"]["message"], "raw: required");
    drop(server);

    // The document: the body is any bytes, the other fields keep their places.
    let config = create_config().cors(Cors::Disabled).build();
    let document = strata::openapi::Documentation::new(&routing, &config)
        .build()
        .unwrap()
        .to_value();
    let operation = &document["paths"]["/hooks/{source}"]["post"];
    assert_eq!(
        operation["requestBody"],
        json!({"required": true, "content": {"application/octet-stream": {
            "schema": {"type": "string", "format": "binary"}}}})
    );
    assert_eq!(operation["parameters"][0]["in"], "path");
    assert_eq!(operation["parameters"][0]["name"], "source");
}

#[derive(Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct FileName {
    name: String,
}

fn download(dir: std::path::PathBuf) -> Endpoint {
    default_endpoints_factory()
        .get()
        .handler(move |input: FileName| {
            let dir = dir.clone();
            async move {
                if input.name.contains('/') || input.name.starts_with('.') {
                    return Err(http_error!(400, "A plain file name"));
                }
                let file = FileResponse::open(dir.join(&input.name)).await?;
                Ok(file.attachment(&input.name))
            }
        })
}

/// A large file streamed without being held in memory: `tests/file_memory.rs` (alone in its
/// binary, as it reads the process's peak memory).
#[tokio::test]
async fn files_are_sent_with_their_type_length_and_errors() {
    let dir = std::env::temp_dir().join(format!("strata-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "hello\n").unwrap();
    std::fs::write(dir.join("data.bin"), [7_u8; 1000]).unwrap();

    let routing = routing! { "files" => { ":name" => download(dir.clone()) } };
    let (server, addr) = serve(&routing, create_config().cors(Cors::Disabled)).await;

    let (status, headers, bytes) = send(addr, "GET", "/files/data.bin", &[], "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-length"], "1000");
    assert_eq!(headers["content-type"], "application/octet-stream");
    assert_eq!(
        headers["content-disposition"],
        "attachment; filename=\"data.bin\""
    );
    assert_eq!(&bytes[..], &[7_u8; 1000][..]);

    // HEAD: the length, no body.
    let (status, headers, bytes) = send(addr, "HEAD", "/files/data.bin", &[], "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-length"], "1000");
    assert!(bytes.is_empty());

    // The type from the extension.
    let (status, headers, bytes) = send(addr, "GET", "/files/notes.txt", &[], "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/plain");
    assert_eq!(&bytes[..], b"hello\n");

    // Errors before the first byte are the usual JSON envelopes.
    let (status, headers, bytes) = send(addr, "GET", "/files/missing.bin", &[], "").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(headers["content-type"], "application/json; charset=utf-8");
    assert_eq!(
        json(&bytes),
        json!({"status": "error", "error": {"message": "File not found"}})
    );
    drop(server);

    // The document says binary, of the file's type: any, known when it is sent (`*/*`).
    let config = create_config().cors(Cors::Disabled).build();
    let document = strata::openapi::Documentation::new(&routing, &config)
        .build()
        .unwrap()
        .to_value();
    let ok = &document["paths"]["/files/{name}"]["get"]["responses"]["200"];
    assert_eq!(
        ok["content"],
        json!({"*/*": {"schema": {"type": "string", "format": "binary"}}})
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The next frame of `body`, within 5 s.
async fn next(
    body: &mut hyper::body::Incoming,
) -> Option<Result<hyper::body::Frame<Bytes>, hyper::Error>> {
    tokio::time::timeout(std::time::Duration::from_secs(5), body.frame())
        .await
        .expect("a chunk promptly")
}

/// Chunks from a channel: each arrives when the test sends it.
struct Chunks(tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>);

impl futures_core::Stream for Chunks {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}

#[tokio::test]
async fn a_stream_is_sent_as_it_comes_and_its_errors_are_handled() {
    // Each request's chunk sender reaches the test as soon as its handler runs.
    type ChunkSender = tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>;
    let (register, mut registered) = tokio::sync::mpsc::unbounded_channel::<ChunkSender>();
    let live = default_endpoints_factory()
        .get()
        .handler_without_input(move || {
            let register = register.clone();
            async move {
                let (sender, receiver) = tokio::sync::mpsc::channel(4);
                register.send(sender).unwrap();
                Ok(StreamResponse::new(
                    http::HeaderValue::from_static("text/plain"),
                    Chunks(receiver),
                ))
            }
        });
    let routing = routing! { "live" => live };
    let (server, addr) = serve(&routing, create_config().cors(Cors::Disabled)).await;

    // Each chunk reaches the client while the next one is not even written.
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut client, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = Request::get("/live")
        .header("host", "localhost")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let pending = tokio::spawn(async move { client.send_request(request).await.unwrap() });
    let sender = registered.recv().await.unwrap();
    sender.send(Ok(Bytes::from_static(b"one\n"))).await.unwrap();
    // Headers go with the first piece.
    let response = tokio::time::timeout(std::time::Duration::from_secs(5), pending)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/plain");
    let mut body = response.into_body();
    let first = next(&mut body).await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(&first[..], b"one\n");
    sender.send(Ok(Bytes::from_static(b"two\n"))).await.unwrap();
    let second = next(&mut body).await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(&second[..], b"two\n");
    // An error after the first byte ends the response: the client sees it cut short.
    sender
        .send(Err(std::io::Error::other("feed lost")))
        .await
        .unwrap();
    let cut = next(&mut body).await;
    assert!(matches!(cut, Some(Err(_))), "{cut:?}");

    // An error before the first byte is an error response from the result handler.
    let failing = tokio::spawn(send(addr, "GET", "/live", &[], ""));
    let sender = registered.recv().await.unwrap();
    sender
        .send(Err(std::io::Error::other("no feed")))
        .await
        .unwrap();
    let (status, headers, bytes) = failing.await.unwrap();
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(headers["content-type"], "application/json; charset=utf-8");
    assert_eq!(json(&bytes)["error"]["message"], "Internal Server Error");
    drop(server);
}

#[tokio::test]
async fn bytes_in_memory_are_sent_whole_with_their_length() {
    let avatar = default_endpoints_factory()
        .get()
        .handler_without_input(async || {
            let png = http::HeaderValue::from_static("image/png");
            Ok(StreamResponse::from_bytes(
                png,
                vec![0x89, b'P', b'N', b'G'],
            ))
        });
    let routing = routing! { "avatar" => avatar };
    let (server, addr) = serve(&routing, create_config().cors(Cors::Disabled)).await;
    let (status, headers, bytes) = send(addr, "GET", "/avatar", &[], "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "image/png");
    assert_eq!(headers["content-length"], "4");
    assert_eq!(&bytes[..], b"\x89PNG");
    let (status, headers, bytes) = send(addr, "HEAD", "/avatar", &[], "").await;
    assert_eq!(
        (status, &headers["content-length"]),
        (StatusCode::OK, &"4".parse::<http::HeaderValue>().unwrap())
    );
    assert!(bytes.is_empty());
    drop(server);
}

/// The document of every kind of endpoint here, for the outside validators (written to the
/// path in `STRATA_BEYOND_JSON_OPENAPI` when set; `.ci/openapi-checks` sets it).
#[test]
fn the_document_of_raw_bodies_files_and_streams() {
    let dir = std::env::temp_dir();
    let routing = routing! {
        "hooks" => { ":source" => hook() },
        "files" => { ":name" => download(dir) },
        "list" => listing(),
        "search" => search(),
    };
    let config = create_config().cors(Cors::Enabled).build();
    let document = strata::openapi::Documentation::new(&routing, &config)
        .title("Beyond JSON")
        .build()
        .unwrap();
    // For the outside validators (`.ci/openapi-checks` sets the path): both versions.
    if let Some(path) = std::env::var_os("STRATA_BEYOND_JSON_OPENAPI") {
        let path = std::path::PathBuf::from(path);
        document.write_file(&path).unwrap();
        strata::openapi::Documentation::new(&routing, &config)
            .title("Beyond JSON")
            .openapi_version(strata::openapi::OpenApiVersion::V3_1)
            .build()
            .unwrap()
            .write_file(path.with_extension("3.1.json"))
            .unwrap();
    }
    let value = document.to_value();
    assert!(value["paths"]["/hooks/{source}"]["post"]["requestBody"].is_object());
    assert!(value["paths"]["/search"]["query"]["requestBody"].is_object());
}
