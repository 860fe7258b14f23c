//! Behaviours matched to express-zod-api's: `ETag`s and 304 (opt-in), the `x-request-id` echo
//! and its off switch, and the upload limit error (`limitError`). Through `attach_routing`, the
//! same application service the server runs.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use garde::Validate;
use http::header::{CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use strata::Body;
use strata::prelude::*;
use strata::server::Compression;
use strata::server::ETags;
use strata::server::RequestIds;
use strata::upload::MultipartForm;
use strata::{Config, EndpointsFactory, Routing, ServeStatic, UploadLimits, UploadedFile};
use tower::ServiceExt;

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Greeting {
    text: String,
}

fn hello_routing() -> Routing {
    let hello = default_endpoints_factory()
        .get()
        .handler_without_input(async || {
            Ok(Greeting {
                text: "Hello".into(),
            })
        });
    let create = default_endpoints_factory()
        .post()
        .handler_without_input(async || {
            Ok(Greeting {
                text: "Created".into(),
            })
        });
    let big = default_endpoints_factory()
        .get()
        .handler_without_input(async || {
            Ok(Greeting {
                text: "x".repeat(8192),
            })
        });
    routing! { "hello" => { "get" => hello, "post" => create }, "big" => big }
}

async fn call(config: &Config, routing: &Routing, request: Request<String>) -> Response<Body> {
    let app = strata::attach_routing(config, routing).unwrap().service;
    app.oneshot(request).await.unwrap()
}

async fn json_of(response: Response<Body>) -> Value {
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}

fn get(uri: &str) -> http::request::Builder {
    Request::get(uri)
}

#[tokio::test]
#[allow(clippy::too_many_lines)] // one scenario, step by step
async fn etags_are_opt_in_and_a_matching_if_none_match_is_a_304() {
    let routing = hello_routing();
    let plain = create_config().cors(Cors::Enabled).build();
    let response = call(&plain, &routing, get("/hello").body(String::new()).unwrap()).await;
    assert!(response.headers().get(ETAG).is_none(), "off by default");

    let config = create_config()
        .cors(Cors::Enabled)
        .etags(ETags::Weak)
        .build();
    let first = call(
        &config,
        &routing,
        get("/hello").body(String::new()).unwrap(),
    )
    .await;
    assert_eq!(first.status(), StatusCode::OK);
    let tag = first.headers()[ETAG].clone();
    assert!(tag.to_str().unwrap().starts_with("W/\""), "{tag:?}");
    assert_eq!(json_of(first).await["data"]["text"], "Hello");

    let again = get("/hello")
        .header(IF_NONE_MATCH, tag.clone())
        .body(String::new())
        .unwrap();
    let cached = call(&config, &routing, again).await;
    assert_eq!(cached.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(cached.headers()[ETAG], tag);
    assert!(cached.headers().get(CONTENT_TYPE).is_none());
    assert_eq!(cached.headers()["access-control-allow-origin"], "*");
    assert!(cached.headers().contains_key("x-request-id"));
    assert!(
        cached
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .is_empty()
    );

    // HEAD gets GET's tag, its length and no body, and a 304 for a matching tag, as express.
    let head = call(
        &config,
        &routing,
        Request::head("/hello").body(String::new()).unwrap(),
    )
    .await;
    assert_eq!(head.status(), StatusCode::OK);
    assert_eq!(head.headers()[ETAG], tag);
    let head_length = head.headers()[http::header::CONTENT_LENGTH].clone();
    assert!(
        head.into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .is_empty()
    );
    let get_body = call(
        &config,
        &routing,
        get("/hello").body(String::new()).unwrap(),
    )
    .await
    .into_body()
    .collect()
    .await
    .unwrap()
    .to_bytes();
    assert_eq!(head_length, get_body.len().to_string().as_str());
    let head_cached = Request::head("/hello")
        .header(IF_NONE_MATCH, tag.clone())
        .body(String::new())
        .unwrap();
    let head_cached = call(&config, &routing, head_cached).await;
    assert_eq!(head_cached.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(head_cached.headers()[ETAG], tag);

    // Another tag, or a POST: the whole answer, and no tag on the POST.
    let stale = get("/hello")
        .header(IF_NONE_MATCH, "W/\"0-0\"")
        .body(String::new())
        .unwrap();
    assert_eq!(
        call(&config, &routing, stale).await.status(),
        StatusCode::OK
    );
    let post = Request::post("/hello").body(String::new()).unwrap();
    let created = call(&config, &routing, post).await;
    assert_eq!(created.status(), StatusCode::OK);
    assert!(created.headers().get(ETAG).is_none());
    // An error is never tagged.
    let missing = call(&config, &routing, get("/nope").body(String::new()).unwrap()).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(missing.headers().get(ETAG).is_none());

    // With compression too, the tag is over the uncompressed bytes: a compressed copy has the
    // tag of the plain one.
    let plain_big = call(&config, &routing, get("/big").body(String::new()).unwrap()).await;
    let compressed = create_config()
        .cors(Cors::Enabled)
        .etags(ETags::Weak)
        .compression(Compression::GzipAndBrotli)
        .build();
    let gzip = get("/big")
        .header("accept-encoding", "gzip")
        .body(String::new())
        .unwrap();
    let response = call(&compressed, &routing, gzip).await;
    assert_eq!(response.headers()["content-encoding"], "gzip");
    assert_eq!(response.headers()[ETAG], plain_big.headers()[ETAG]);
}

#[tokio::test]
async fn the_request_id_echo_can_be_turned_off() {
    let routing = hello_routing();
    let request = || {
        get("/hello")
            .header("x-request-id", "from-the-proxy")
            .body(String::new())
            .unwrap()
    };
    let echoed = call(
        &create_config().cors(Cors::Enabled).build(),
        &routing,
        request(),
    )
    .await;
    assert_eq!(echoed.headers()["x-request-id"], "from-the-proxy");
    let quiet = create_config()
        .cors(Cors::Enabled)
        .request_ids(RequestIds::LoggedOnly)
        .build();
    let response = call(&quiet, &routing, request()).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().get("x-request-id").is_none());
    let response = call(&quiet, &routing, get("/hello").body(String::new()).unwrap()).await;
    assert!(response.headers().get("x-request-id").is_none());
}

#[derive(Deserialize, Validate, JsonSchema)]
struct Avatar {
    #[garde(skip)]
    #[allow(dead_code)] // only its size matters here
    image: UploadedFile,
}

#[tokio::test]
async fn a_file_over_the_limit_gets_the_configured_error() {
    let upload = default_endpoints_factory()
        .post()
        .handler(async |_: Avatar| {
            Ok(Greeting {
                text: "saved".into(),
            })
        });
    let routing = routing! { "avatar" => upload };
    let request = |size: usize| {
        let form = MultipartForm::new().file(
            "image",
            UploadedFile::new("me.png", "image/png", vec![7_u8; size]),
        );
        Request::post("/avatar")
            .header(CONTENT_TYPE, form.content_type())
            .body(String::from_utf8_lossy(&form.into_bytes()).into_owned())
            .unwrap()
    };
    let default = create_config()
        .cors(Cors::Enabled)
        .upload(UploadLimits::builder().file_size(16))
        .build();
    let response = call(&default, &routing, request(17)).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        json_of(response).await["error"]["message"],
        "File \"image\" exceeds the size limit of 16 bytes"
    );

    let custom = create_config()
        .cors(Cors::Enabled)
        .upload(UploadLimits::builder().file_size(16).limit_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Avatars are 16 bytes at most",
        ))
        .build();
    let response = call(&custom, &routing, request(17)).await;
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        json_of(response).await["error"]["message"],
        "Avatars are 16 bytes at most"
    );
    let response = call(&custom, &routing, request(16)).await;
    assert_eq!(response.status(), StatusCode::OK);
}

#[allow(dead_code)]
#[path = "../examples/auth.rs"]
mod auth;

#[derive(Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct UserId {
    id: String,
}

/// The text of a response.
async fn text_of(response: Response<Body>) -> String {
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[tokio::test]
async fn routing_errors_go_through_the_configured_result_handler() {
    let dir = std::env::temp_dir().join(format!("strata-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.txt"), "a").unwrap();
    let user = EndpointsFactory::new(auth::PlainText)
        .get()
        .handler(async |input: UserId| Ok(Greeting { text: input.id }));
    let routing = hello_routing()
        .route("users", routing! { ":id" => user })
        .route("files", ServeStatic::dir(&dir));
    let config = create_config()
        .cors(Cors::Enabled)
        .error_handler(auth::PlainText)
        .build();
    let cases = [
        ("GET", "/nope", 404, "failed: Can not GET /nope"),
        ("PUT", "/hello", 405, "failed: PUT is not allowed"),
        (
            "GET",
            "/users/%zz",
            400,
            "failed: Invalid path parameter :id: malformed percent-encoding at byte 0",
        ),
        (
            "GET",
            "/files/missing.txt",
            404,
            "failed: Can not GET /files/missing.txt",
        ),
        (
            "GET",
            "/files/.hidden",
            404,
            "failed: Can not GET /files/.hidden",
        ),
    ];
    for (method, path, status, text) in cases {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .body(String::new())
            .unwrap();
        let response = call(&config, &routing, request).await;
        assert_eq!(response.status(), status, "{method} {path}");
        assert_eq!(
            response.headers()[CONTENT_TYPE],
            "text/plain; charset=utf-8"
        );
        // The error's own headers (the 405's Allow) and the routing's (CORS) still come.
        if status == 405 {
            assert_eq!(response.headers()["allow"], "GET, POST, HEAD, OPTIONS");
        }
        assert_eq!(response.headers()["access-control-allow-origin"], "*");
        assert_eq!(text_of(response).await, text, "{method} {path}");
    }
    // Without one, the default envelope.
    let plain = create_config().cors(Cors::Enabled).build();
    let response = call(&plain, &routing, get("/nope").body(String::new()).unwrap()).await;
    assert_eq!(
        json_of(response).await["error"]["message"],
        "Can not GET /nope"
    );
    // The document says so: a route with parameters lists the router's 404 as text.
    let doc = strata::openapi::Documentation::new(&routing, &config)
        .build()
        .unwrap()
        .to_value();
    let not_found = &doc["paths"]["/users/{id}"]["get"]["responses"]["404"]["content"];
    assert!(not_found.get("text/plain").is_some(), "{not_found}");
    std::fs::remove_dir_all(&dir).unwrap();
}
