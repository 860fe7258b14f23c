//! The examples run, and answer what their docs say.

#![allow(clippy::unwrap_used)]
// tests fail loudly by design
// The attach examples include the quick start's routing, as a reader of each example expects.
#![allow(clippy::duplicate_mod)]

use strata::Cors;
#[allow(dead_code)]
#[path = "../examples/tower_stack.rs"]
mod tower_stack;

#[allow(dead_code)]
#[path = "../examples/routing.rs"]
mod routing;

#[allow(dead_code)]
#[path = "../examples/attach_axum.rs"]
mod attach_axum;

#[allow(dead_code)]
#[path = "../examples/attach_hyper.rs"]
mod attach_hyper;

#[allow(dead_code)]
#[path = "../examples/notes.rs"]
mod notes;

#[allow(dead_code)]
#[path = "../examples/blobs.rs"]
mod blobs;

/// Sends `request` to a server on `addr` over HTTP/1.1; the status and the body.
async fn exchange(
    addr: std::net::SocketAddr,
    request: http::Request<http_body_util::Full<hyper::body::Bytes>>,
) -> (u16, hyper::body::Bytes) {
    use http_body_util::BodyExt;
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    (
        status,
        response.into_body().collect().await.unwrap().to_bytes(),
    )
}

/// GETs `path` from a server on `addr`; the status and the body as text.
async fn fetch(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let request = http::Request::get(path)
        .header("host", "localhost")
        .body(http_body_util::Full::default())
        .unwrap();
    let (status, body) = exchange(addr, request).await;
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn tower_stack_runs_the_stages_by_hand() {
    let results = tower_stack::run().await;
    assert_eq!(
        results,
        [
            (200, r#"{"status":"success","data":{"total":6}}"#.to_owned()),
            (
                400,
                r#"{"status":"error","error":{"message":"numbers: length is lower than 1"}}"#
                    .to_owned()
            ),
            (
                422,
                r#"{"status":"error","error":{"message":"The total does not fit in 64 bits"}}"#
                    .to_owned()
            ),
            (
                401,
                r#"{"status":"error","error":{"message":"Who is calling?"}}"#.to_owned()
            ),
        ]
    );
}

#[tokio::test]
async fn routing_example_answers_each_route() {
    let lines = routing::run().await;
    let expected = [
        r#"GET /v1/users -> 200 {"status":"success","data":{"users":[{"id":1,"name":"user 1"},{"id":2,"name":"user 2"}]}}"#,
        r#"POST /v1/users -> 201 {"status":"success","data":{"id":3,"name":"Ada"}}"#,
        r#"GET /v1/users/2 -> 200 {"status":"success","data":{"id":2,"name":"user 2"}}"#,
        r#"GET /v1/users/2/friends -> 200 {"status":"success","data":{"users":[{"id":1,"name":"user 1"}]}}"#,
        r#"GET /v1/users/9 -> 404 {"status":"error","error":{"message":"No user 9"}}"#,
        r#"DELETE /v1/users/1 -> 200 {"status":"success","data":{"id":1,"name":"user 1"}}"#,
        r#"PUT /v1/users -> 405 (Allow: GET, POST, HEAD, OPTIONS) {"status":"error","error":{"message":"PUT is not allowed"}}"#,
        r#"GET /v2 -> 404 {"status":"error","error":{"message":"Can not GET /v2"}}"#,
    ];
    assert_eq!(lines, expected);
}

#[tokio::test]
async fn attach_axum_serves_strata_inside_axum() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(attach_axum::serve(listener, async {
        let _ = stopped.await;
    }));
    assert_eq!(fetch(addr, "/health").await, (200, "ok".to_owned()));
    assert_eq!(
        fetch(addr, "/v1/hello?name=axum").await,
        (
            200,
            r#"{"status":"success","data":{"greetings":"Hello, axum"}}"#.to_owned()
        )
    );
    assert_eq!(
        fetch(addr, "/nowhere").await,
        (
            404,
            r#"{"status":"error","error":{"message":"Can not GET /nowhere"}}"#.to_owned()
        )
    );
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn attach_hyper_serves_strata_in_a_bare_server() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(attach_hyper::serve(listener));
    assert_eq!(
        fetch(addr, "/v1/hello").await,
        (
            200,
            r#"{"status":"success","data":{"greetings":"Hello, World"}}"#.to_owned()
        )
    );
    server.abort();
}

#[allow(dead_code)]
#[path = "../examples/quick_start.rs"]
mod quick_start;

#[tokio::test]
async fn quick_start_answers_like_the_spec() {
    let config = strata::create_config()
        .cors(Cors::Enabled)
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    let server = strata::create_server(&config, &quick_start::quick_start_routing())
        .await
        .unwrap();
    let strata::server::LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    assert_eq!(
        fetch(addr, "/v1/hello?name=Strata").await,
        (
            200,
            r#"{"status":"success","data":{"greetings":"Hello, Strata"}}"#.to_owned()
        )
    );
    server.shutdown().await;
}

#[allow(dead_code)]
#[path = "../examples/library.rs"]
mod library;

#[allow(dead_code)]
#[path = "../examples/webhook.rs"]
mod webhook;

#[allow(dead_code)]
#[path = "../examples/downloads.rs"]
mod downloads;

#[allow(dead_code)]
#[path = "../examples/events.rs"]
mod events;

#[tokio::test]
async fn events_count_down_and_resume() {
    let config = strata::create_config()
        .cors(Cors::Enabled)
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    let server = strata::create_server(&config, &events::events_routing())
        .await
        .unwrap();
    let strata::server::LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    let (status, body) = fetch(addr, "/countdown?from=2&every_ms=10").await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        "event: tick\nid: 2\ndata: {\"left\":2}\n\n\
         event: tick\nid: 1\ndata: {\"left\":1}\n\n\
         event: liftoff\ndata: null\n\n"
    );
    let resumed = http::Request::get("/countdown?from=9&every_ms=10")
        .header("host", "localhost")
        .header("last-event-id", "2")
        .body(http_body_util::Full::default())
        .unwrap();
    let (status, body) = exchange(addr, resumed).await;
    assert_eq!(status, 200);
    assert!(
        String::from_utf8_lossy(&body).starts_with("event: tick\nid: 1\n"),
        "{body:?}"
    );
    let (status, body) = fetch(addr, "/countdown?from=0").await;
    assert_eq!(status, 400, "{body}");
    server.shutdown().await;
}

#[tokio::test]
async fn downloads_stream_files_and_reports() {
    let dir = std::env::temp_dir().join(format!("strata-downloads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.txt"), "alpha\n").unwrap();
    let config = strata::create_config()
        .cors(Cors::Disabled)
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    let server = strata::create_server(&config, &downloads::downloads_routing(dir.clone()))
        .await
        .unwrap();
    let strata::server::LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    let (status, body) = fetch(addr, "/files/a.txt").await;
    assert_eq!((status, body.as_str()), (200, "alpha\n"));
    let (status, body) = fetch(addr, "/report?rows=3").await;
    assert_eq!(status, 200);
    assert_eq!(body, "row,square\n1,1\n2,4\n3,9\n");
    let (status, body) = fetch(addr, "/files/nothing.txt").await;
    assert_eq!(status, 404);
    assert_eq!(
        body,
        r#"{"status":"error","error":{"message":"File not found"}}"#
    );
    let (status, body) = fetch(addr, "/files/..").await;
    assert_eq!(status, 400, "{body}");
    server.shutdown().await;
    // The document: binary data, of the type the endpoint names.
    let document =
        strata::openapi::Documentation::new(&downloads::downloads_routing(dir.clone()), &config)
            .build()
            .unwrap()
            .to_value();
    let content =
        |path: &str| document["paths"][path]["get"]["responses"]["200"]["content"].clone();
    assert_eq!(
        content("/report"),
        serde_json::json!({"text/csv": {"schema": {"type": "string", "format": "binary"}}})
    );
    // A file of the type its name says: `readme.txt` is `text/plain`, so not octet-stream.
    assert!(content("/files/{name}")["*/*"].is_object());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn webhook_checks_the_signature_over_the_exact_bytes() {
    let config = webhook::webhook_config()
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    let server = strata::create_server(&config, &webhook::webhook_routing())
        .await
        .unwrap();
    let strata::server::LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    let deliver = |body: &'static [u8], signature: &str| {
        http::Request::post("/hooks/orders")
            .header("host", "localhost")
            .header("content-type", "application/json")
            .header("x-signature", signature)
            .body(http_body_util::Full::new(hyper::body::Bytes::from_static(
                body,
            )))
            .unwrap()
    };
    // Spacing that a parse and re-serialization would lose: the signature covers it.
    let body: &'static [u8] = b"{ \"type\" : \"order.paid\",\n  \"id\": 17 }";
    let (status, received) = send(addr, deliver(body, &webhook::signature(body))).await;
    assert_eq!(status, 200, "{received}");
    assert_eq!(
        received["data"],
        serde_json::json!({"topic": "orders", "bytes": body.len(), "event": "order.paid"})
    );
    // A `topic` header does not redirect a delivery: the path wins (issue 25).
    let mut redirected = deliver(body, &webhook::signature(body));
    redirected
        .headers_mut()
        .insert("topic", http::HeaderValue::from_static("payments"));
    let (status, received) = send(addr, redirected).await;
    assert_eq!(status, 200, "{received}");
    assert_eq!(received["data"]["topic"], "orders");
    let tampered: &'static [u8] = b"{ \"type\" : \"order.paid\",\n  \"id\": 18 }";
    let (status, refused) = send(addr, deliver(tampered, &webhook::signature(body))).await;
    assert_eq!(status, 401);
    assert_eq!(refused["error"]["message"], "Invalid signature");
    let (status, missing) = send(
        addr,
        http::Request::post("/hooks/orders")
            .header("host", "localhost")
            .body(http_body_util::Full::new(hyper::body::Bytes::from_static(
                b"{}",
            )))
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(missing["error"]["message"], "x-signature: required");
    server.shutdown().await;
}

/// Sends `request` to `addr`; the status and the JSON body.
async fn send(
    addr: std::net::SocketAddr,
    request: http::Request<http_body_util::Full<hyper::body::Bytes>>,
) -> (u16, serde_json::Value) {
    let (status, body) = exchange(addr, request).await;
    (status, serde_json::from_slice(&body).unwrap())
}

#[tokio::test]
async fn library_pages_books_and_saves_covers() {
    use serde_json::json;
    let covers = std::env::temp_dir().join(format!("strata-library-{}", std::process::id()));
    std::fs::create_dir_all(&covers).unwrap();
    let config = library::library_config()
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    let server = strata::create_server(&config, &library::library_routing(covers.clone()))
        .await
        .unwrap();
    let strata::server::LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    let get = |path: &str| {
        http::Request::get(path)
            .header("host", "localhost")
            .body(http_body_util::Full::default())
            .unwrap()
    };

    // QUERY: the criteria in the body.
    let search = |body: &'static str| {
        http::Request::builder()
            .method(strata::core::query_method())
            .uri("/v1/books/search")
            .header("host", "localhost")
            .header("content-type", "application/json")
            .body(http_body_util::Full::new(hyper::body::Bytes::from_static(
                body.as_bytes(),
            )))
            .unwrap()
    };
    let (status, found) = send(addr, search(r#"{"words": ["the"], "genres": ["poetry"]}"#)).await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(
        found["data"]["books"],
        json!([{"id": 4, "title": "The Waste Land", "genre": "poetry"}])
    );
    let (status, refused) = send(addr, search(r#"{"words": [""]}"#)).await;
    assert_eq!(status, 400);
    assert_eq!(
        refused["error"]["message"],
        "words[0]: length is lower than 1"
    );

    // Offset pages, filtered: three poetry books, two per page.
    let (status, page) = send(addr, get("/v1/books?genre=poetry&limit=2&offset=2")).await;
    assert_eq!(status, 200);
    assert_eq!(
        page["data"],
        json!({"books": [{"id": 6, "title": "Ariel", "genre": "poetry"}], "total": 3, "limit": 2, "offset": 2})
    );
    let (status, error) = send(addr, get("/v1/books?limit=11")).await;
    assert_eq!(status, 400);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limit")
    );

    // The feed, cursor by cursor, to the end.
    let mut ids = Vec::new();
    let mut path = "/v1/books/feed?limit=3".to_owned();
    loop {
        let (status, page) = send(addr, get(&path)).await;
        assert_eq!(status, 200, "{page}");
        ids.extend(
            page["data"]["books"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b["id"].as_u64().unwrap()),
        );
        match page["data"]["nextCursor"].as_str() {
            Some(cursor) => path = format!("/v1/books/feed?limit=3&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(ids, [1, 2, 3, 4, 5, 6, 7]);

    // A cover upload, saved to disk: past the example's spool threshold (64 KiB), it is written
    // to a temporary file as it arrives, then moved.
    let image: Vec<u8> = (0..256 * 1024_u32)
        .map(|i| u8::try_from(i % 251).unwrap())
        .collect();
    let form = strata::upload::MultipartForm::new()
        .text("caption", "Front")
        .file(
            "cover",
            strata::UploadedFile::new("leaves.png", "image/png", image.clone()),
        );
    let upload = http::Request::post("/v1/books/2/cover")
        .header("host", "localhost")
        .header("content-type", form.content_type())
        .body(http_body_util::Full::new(form.into_bytes()))
        .unwrap();
    let (status, cover) = send(addr, upload).await;
    assert_eq!(status, 200, "{cover}");
    assert_eq!(
        cover["data"],
        json!({"book": 2, "name": "leaves.png", "size": 256 * 1024, "mimetype": "image/png", "caption": "Front"})
    );
    assert!(std::fs::read(covers.join("book-2.cover")).unwrap() == image);

    server.shutdown().await;
    std::fs::remove_dir_all(&covers).unwrap();
}

/// The notes example in memory: sign in (a signed session cookie), write, read with an
/// `ETag` and again for a 304, the rate-limit headers, and a 401 without the session.
#[tokio::test]
async fn notes_sign_in_write_read_and_revalidate() {
    use http::Request;
    use tower::ServiceExt;
    let keys = strata::cookies::CookieKeys::new(["a test secret of at least 32 bytes!"]).unwrap();
    let routing = notes::notes_routing(&keys, 600, 60).unwrap();
    let config = strata::create_config()
        .cors(Cors::Disabled)
        .cookie_keys(keys)
        .build();
    let router = strata::Router::new(&routing, &config).unwrap();
    let send = |request: Request<String>| router.clone().oneshot(request);

    let sign_in = Request::post("/v1/session")
        .header("content-type", "application/json")
        .body(r#"{"name":"ada"}"#.to_owned())
        .unwrap();
    let response = send(sign_in).await.unwrap();
    assert_eq!(response.status(), 200);
    let set_cookie = response.headers()["set-cookie"].to_str().unwrap();
    assert!(set_cookie.starts_with("session=s%3A"), "{set_cookie}");
    let session = set_cookie.split(';').next().unwrap().to_owned();
    assert_eq!(
        response.headers()["ratelimit-policy"],
        "\"per-client\";q=600;w=60"
    );

    let write = Request::post("/v1/notes")
        .header("content-type", "application/json")
        .header("cookie", &session)
        .body(r#"{"text":"hello"}"#.to_owned())
        .unwrap();
    let response = send(write).await.unwrap();
    assert_eq!(response.status(), 200);
    // The per-client limiter's item; the per-user limiter sends its own only on its 429.
    let limits: Vec<_> = response.headers().get_all("ratelimit").iter().collect();
    assert_eq!(limits.len(), 1, "{limits:?}");
    assert!(
        limits[0].as_bytes().starts_with(b"\"per-client\";"),
        "{limits:?}"
    );

    let read = |etag: Option<&str>| {
        let mut request = Request::get("/v1/notes").header("cookie", &session);
        if let Some(etag) = etag {
            request = request.header("if-none-match", etag);
        }
        request.body(String::new()).unwrap()
    };
    let response = send(read(None)).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["etag"], "\"n1\"");
    assert_eq!(response.headers()["cache-control"], "no-cache, private");
    assert_eq!(response.headers()["vary"], "cookie");
    let response = send(read(Some("\"n1\""))).await.unwrap();
    assert_eq!(response.status(), 304);

    let anonymous = Request::get("/v1/notes").body(String::new()).unwrap();
    assert_eq!(send(anonymous).await.unwrap().status(), 401);
    let forged = Request::get("/v1/notes")
        .header("cookie", session.replace("ada", "eve"))
        .body(String::new())
        .unwrap();
    assert_eq!(send(forged).await.unwrap().status(), 401);
}

#[tokio::test]
async fn blobs_are_stored_by_their_hash_as_they_arrive_and_served_in_ranges() {
    use strata::upload::MultipartForm;
    let dir = std::env::temp_dir().join(format!("strata-blobs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = blobs::blobs_config()
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    let server = strata::create_server(
        &config,
        &blobs::blobs_routing(blobs::Store::new(dir.clone())),
    )
    .await
    .unwrap();
    let strata::server::LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    let data: Vec<u8> = (0..3_000_000_u32).map(|i| (i % 253) as u8).collect();
    let upload = |label: &str, data: &[u8]| {
        let form = MultipartForm::new().text("label", label).file(
            "file",
            strata::UploadedFile::new("data.bin", "", data.to_vec()),
        );
        http::Request::post("/blobs")
            .header("host", "localhost")
            .header("content-type", form.content_type())
            .body(http_body_util::Full::new(form.into_bytes()))
            .unwrap()
    };
    let (status, stored) = send(addr, upload("data", &data)).await;
    assert_eq!(status, 200, "{stored}");
    let digest = ring::digest::digest(&ring::digest::SHA256, &data);
    let id = blobs::hex(digest.as_ref());
    assert_eq!(stored["data"]["id"], id.as_str());
    assert_eq!(stored["data"]["size"], data.len());
    assert_eq!(stored["data"]["created"], true);
    // The same bytes again: the same blob.
    let (_, again) = send(addr, upload("again", &data)).await;
    assert_eq!(
        (
            again["data"]["id"].as_str(),
            again["data"]["created"].as_bool()
        ),
        (Some(id.as_str()), Some(false))
    );
    // A label that breaks its rule: refused, nothing stored.
    let (status, refused) = send(addr, upload("", b"other bytes")).await;
    assert_eq!(status, 400, "{refused}");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        std::slice::from_ref(&id),
        "one blob, no partial file"
    );
    // Whole, and a range of it.
    let (status, whole) = exchange(
        addr,
        http::Request::get(format!("/blobs/{id}"))
            .header("host", "localhost")
            .body(http_body_util::Full::default())
            .unwrap(),
    )
    .await;
    assert_eq!((status, whole.len()), (200, data.len()));
    assert!(whole == data[..]);
    let (status, part) = exchange(
        addr,
        http::Request::get(format!("/blobs/{id}"))
            .header("host", "localhost")
            .header("range", "bytes=1000000-1000099")
            .header("if-range", format!("\"{id}\""))
            .body(http_body_util::Full::default())
            .unwrap(),
    )
    .await;
    assert_eq!(status, 206);
    assert!(part == data[1_000_000..1_000_100]);
    let (status, _) = fetch(addr, &format!("/blobs/{}", "0".repeat(64))).await;
    assert_eq!(status, 404);
    let (status, _) = fetch(addr, "/blobs/..").await;
    assert_eq!(status, 400);
    server.shutdown().await;
    std::fs::remove_dir_all(&dir).unwrap();
}
