//! Routing through the public API: the tree, startup checks, dispatch, CORS and static files,
//! each with `oneshot` on the router.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use strata::router::CorsRequest;
use strata::{Config, Endpoint, Router, Routing, ServeStatic};

use garde::Validate;
use http::header::{CONTENT_TYPE, HeaderName};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use strata::Body;
use strata::core::logger::{Level, LogSink};
use strata::prelude::*;
use strata::router::Dotfiles;
use strata::router::{MethodLikeRouteBehavior, RoutingError, StaticOptions, WrongMethodBehavior};
use tower::ServiceExt;

#[derive(Debug, Deserialize, Validate, JsonSchema)]
struct Ids {
    #[garde(skip)]
    id: Option<String>,
    #[garde(skip)]
    slug: Option<String>,
}

#[derive(Debug, Serialize, Validate, JsonSchema)]
struct Seen {
    #[garde(skip)]
    label: &'static str,
    #[garde(skip)]
    method: String,
    #[garde(skip)]
    path: String,
    #[garde(skip)]
    id: Option<String>,
    #[garde(skip)]
    slug: Option<String>,
}

/// An endpoint that says who it is and what it saw.
fn labelled(label: &'static str, methods: &[Method]) -> Endpoint {
    default_endpoints_factory()
        .endpoint()
        .methods(methods.iter().cloned())
        .handler(
            move |input: Ids, request: http::request::Parts| async move {
                Ok(Seen {
                    label,
                    method: request.method.to_string(),
                    path: request.uri.path().to_owned(),
                    id: input.id,
                    slug: input.slug,
                })
            },
        )
}

fn get_endpoint(label: &'static str) -> Endpoint {
    labelled(label, &[])
}

fn cors_config(enabled: bool) -> Config {
    let cors = if enabled {
        Cors::Enabled
    } else {
        Cors::Disabled
    };
    Config::builder().cors(cors).build()
}

fn build(tree: &Routing, config: &Config) -> Router {
    Router::new(tree, config).unwrap()
}

async fn send(router: &Router, method: Method, uri: &str) -> Response<Body> {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .body(String::new())
        .unwrap();
    router.clone().oneshot(request).await.unwrap()
}

async fn json_of(response: Response<Body>) -> (StatusCode, Value) {
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap()
    };
    (status, value)
}

async fn get_json(router: &Router, uri: &str) -> (StatusCode, Value) {
    json_of(send(router, Method::GET, uri).await).await
}

// ---- the tree ----------------------------------------------------------------------------------

#[tokio::test]
async fn nested_flat_mixed_params_method_keys_and_explicit_methods() {
    let tree = routing! {
        "v1" => {
            "hello" => get_endpoint("nested"),
            "/flat/deep/path" => get_endpoint("mixed"),
            "users" => {
                "get" => get_endpoint("list"),
                "post" => labelled("create", &[Method::POST]),
                ":id" => get_endpoint("user"),
            },
            "post /things" => labelled("things", &[Method::POST, Method::PUT]),
        },
        "/v2/flat/deep/path" => get_endpoint("flat"),
    };
    let router = build(&tree, &cors_config(false));
    let label = |v: &Value| v["data"]["label"].as_str().unwrap().to_owned();
    assert_eq!(label(&get_json(&router, "/v1/hello").await.1), "nested");
    assert_eq!(
        label(&get_json(&router, "/v2/flat/deep/path").await.1),
        "flat"
    );
    assert_eq!(
        label(&get_json(&router, "/v1/flat/deep/path").await.1),
        "mixed"
    );
    assert_eq!(label(&get_json(&router, "/v1/users").await.1), "list");
    let (status, body) = json_of(send(&router, Method::POST, "/v1/users").await).await;
    assert_eq!(
        (status, label(&body)),
        (StatusCode::OK, "create".to_owned())
    );
    let (_, body) = get_json(&router, "/v1/users/J%C3%BCrgen%20M").await;
    assert_eq!(
        (label(&body), &body["data"]["id"]),
        ("user".to_owned(), &json!("Jürgen M"))
    );
    let (status, body) = json_of(send(&router, Method::POST, "/v1/things").await).await;
    assert_eq!(
        (status, label(&body)),
        (StatusCode::OK, "things".to_owned())
    );
    // the explicit key serves only its method, although the endpoint also declares PUT
    assert_eq!(send(&router, Method::PUT, "/v1/things").await.status(), 405);
}

#[tokio::test]
async fn nested_endpoints_serve_their_path_and_children() {
    let tree = routing! {
        "v1" => {
            "parent" => get_endpoint("parent").nest(routing! { "child" => get_endpoint("child") }),
        },
    };
    let router = build(&tree, &cors_config(false));
    assert_eq!(
        get_json(&router, "/v1/parent").await.1["data"]["label"],
        "parent"
    );
    assert_eq!(
        get_json(&router, "/v1/parent/child").await.1["data"]["label"],
        "child"
    );
}

#[tokio::test]
async fn the_builder_writes_the_same_tree() {
    let tree = Routing::new().route(
        "v1",
        Routing::new().route("users", Routing::new().route(":id", get_endpoint("user"))),
    );
    let router = build(&tree, &cors_config(false));
    assert_eq!(get_json(&router, "/v1/users/7").await.1["data"]["id"], "7");
}

#[tokio::test]
async fn method_like_keys_as_paths() {
    let tree = routing! { "user" => { "get" => labelled("any", &[Method::GET, Method::POST]) } };
    let config = create_config()
        .cors(Cors::Disabled)
        .method_like_route_behavior(MethodLikeRouteBehavior::Path)
        .build();
    let router = build(&tree, &config);
    assert_eq!(
        get_json(&router, "/user/get").await.1["data"]["label"],
        "any"
    );
    assert_eq!(
        json_of(send(&router, Method::POST, "/user/get").await)
            .await
            .0,
        200
    );
    assert_eq!(get_json(&router, "/user").await.0, 404);
}

// ---- startup checks ----------------------------------------------------------------------------

fn error_of(tree: &Routing, config: &Config) -> RoutingError {
    Router::new(tree, config).unwrap_err()
}

#[tokio::test]
async fn startup_checks() {
    let config = cors_config(true);
    let duplicate =
        routing! { "a" => { ":id" => get_endpoint("1"), "/:slug" => get_endpoint("2") } };
    let error = error_of(&duplicate, &config);
    assert_eq!(
        error,
        RoutingError::Duplicate {
            method: Method::GET,
            path: "/a/:slug".into()
        }
    );
    assert_eq!(error.to_string(), "Route GET /a/:slug is defined twice");

    let unsupported = routing! { "delete /things" => labelled("x", &[Method::POST]) };
    assert_eq!(
        error_of(&unsupported, &config).to_string(),
        "DELETE /things: the endpoint does not support DELETE"
    );
    // an endpoint without declared methods accepts any explicit one
    let undeclared = routing! { "delete /things" => get_endpoint("x"), "things" => { "patch" => get_endpoint("y") } };
    let router = build(&undeclared, &config);
    assert_eq!(send(&router, Method::DELETE, "/things").await.status(), 200);
    assert_eq!(send(&router, Method::PATCH, "/things").await.status(), 200);

    let unknown = routing! { "users" => { ":user_id" => get_endpoint("x") } };
    assert_eq!(
        error_of(&unknown, &config).to_string(),
        "GET /users/:user_id: path parameter :user_id is not a field of the endpoint's input"
    );

    for key in [
        "a b c",
        "v 1",
        "wh at",
        "a{b}",
        "caf\u{e9}",
        "x//y",
        "/a//b",
        ":",
        "get/x",
    ] {
        let tree = Routing::new().route(key, get_endpoint("x"));
        assert!(
            matches!(error_of(&tree, &config), RoutingError::InvalidKey { .. }),
            "{key:?}"
        );
    }
    let custom = routing! { "x" => labelled("x", &[Method::from_bytes(b"PURGE").unwrap()]) };
    assert_eq!(
        error_of(&custom, &config).to_string(),
        "PURGE /x: endpoints serve GET, POST, PUT, PATCH, DELETE or QUERY, not PURGE"
    );
    let no_cors = routing! { "x" => get_endpoint("x") };
    assert_eq!(
        error_of(&no_cors, &Config::default()),
        RoutingError::CorsNotConfigured
    );
}

// ---- dispatch ----------------------------------------------------------------------------------

#[tokio::test]
async fn head_mirrors_get_without_a_body() {
    let hello = default_endpoints_factory()
        .get()
        .handler(async |input: Strict| Ok(N { n: input.n }));
    let tree = routing! { "v1" => { "hello" => hello } };
    let router = build(&tree, &cors_config(false));
    let get = send(&router, Method::GET, "/v1/hello?n=12345").await;
    let get_headers = get.headers().clone();
    let get_body = get.into_body().collect().await.unwrap().to_bytes();
    let head = send(&router, Method::HEAD, "/v1/hello?n=12345").await;
    assert_eq!(head.status(), 200);
    assert_eq!(head.headers()[CONTENT_TYPE], get_headers[CONTENT_TYPE]);
    assert_eq!(
        head.headers()["content-length"],
        get_body.len().to_string().as_str()
    );
    assert!(
        head.into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .is_empty()
    );
}

#[tokio::test]
async fn unknown_paths_and_wrong_methods() {
    let tree = routing! {
        "items" => {
            "get" => get_endpoint("list"),
            "patch" => labelled("patch", &[Method::PATCH]),
            "delete" => labelled("delete", &[Method::DELETE]),
        },
    };
    let router = build(&tree, &cors_config(true));
    let (status, body) = get_json(&router, "/nothing/here").await;
    assert_eq!(
        (status.as_u16(), &body["error"]["message"]),
        (404, &json!("Can not GET /nothing/here"))
    );

    for method in ["POST", "PUT", "PURGE", "TRACE"] {
        let response = send(
            &router,
            Method::from_bytes(method.as_bytes()).unwrap(),
            "/items",
        )
        .await;
        assert_eq!(response.status(), 405, "{method}");
        assert_eq!(
            response.headers()["allow"],
            "DELETE, GET, PATCH, HEAD, OPTIONS"
        );
        let (_, body) = json_of(response).await;
        assert_eq!(body["error"]["message"], format!("{method} is not allowed"));
    }

    let config = create_config()
        .cors(Cors::Disabled)
        .wrong_method_behavior(WrongMethodBehavior::NotFound)
        .build();
    let router404 = Router::new(&tree, &config).unwrap();
    let response = send(&router404, Method::POST, "/items").await;
    assert_eq!(response.status(), 404);
    assert!(response.headers().get("allow").is_none());
    assert_eq!(
        json_of(response).await.1["error"]["message"],
        "Can not POST /items"
    );
    // without CORS, OPTIONS is just another unsupported method
    let router405 = build(&tree, &cors_config(false));
    let response = send(&router405, Method::OPTIONS, "/items").await;
    assert_eq!(response.status(), 405);
    assert_eq!(response.headers()["allow"], "DELETE, GET, PATCH, HEAD");
}

#[tokio::test]
async fn trailing_slash_case_and_double_slash() {
    let tree = routing! { "v1" => { "hello" => get_endpoint("hello") } };
    let router = build(&tree, &cors_config(false));
    assert_eq!(get_json(&router, "/v1/hello/").await.0, 200);
    assert_eq!(get_json(&router, "/V1/Hello").await.0, 404);
    assert_eq!(get_json(&router, "//v1/hello").await.0, 404);
    assert_eq!(get_json(&router, "/v1/hello//").await.0, 404);
}

#[tokio::test]
async fn malformed_escape_in_a_parameter_is_400() {
    let tree = routing! { "users" => { ":id" => get_endpoint("user") } };
    let router = build(&tree, &cors_config(false));
    let (status, body) = get_json(&router, "/users/%E0%A4%A").await;
    assert_eq!(status, 400);
    assert_eq!(
        body["error"]["message"],
        "Invalid path parameter :id: malformed percent-encoding at byte 6"
    );
    let (status, _) = get_json(&router, "/users/%FF").await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn a_path_parameter_beats_the_query() {
    let tree = routing! { "users" => { ":id" => get_endpoint("user") } };
    let router = build(&tree, &cors_config(false));
    assert_eq!(
        get_json(&router, "/users/7?id=8").await.1["data"]["id"],
        "7"
    );
}

#[tokio::test]
async fn parameter_names_per_method_on_one_path() {
    let tree = routing! {
        "things" => {
            ":id" => get_endpoint("by-id"),
            "delete /:slug" => labelled("by-slug", &[Method::DELETE]),
        },
    };
    let router = build(&tree, &cors_config(false));
    assert_eq!(get_json(&router, "/things/a").await.1["data"]["id"], "a");
    let (_, body) = json_of(send(&router, Method::DELETE, "/things/b").await).await;
    assert_eq!(
        (&body["data"]["slug"], &body["data"]["id"]),
        (&json!("b"), &Value::Null)
    );
}

// ---- CORS --------------------------------------------------------------------------------------

#[derive(Debug, Deserialize, Validate, JsonSchema)]
struct Strict {
    #[garde(range(min = 1))]
    n: u32,
}

#[derive(Debug, Serialize, Validate, JsonSchema)]
struct N {
    #[garde(skip)]
    n: u32,
}

fn cors_tree(calls: Arc<AtomicUsize>) -> Routing {
    let counting = Middleware::new(move |(): (), _request, _logger| {
        calls.fetch_add(1, Ordering::SeqCst);
        async { Ok(()) }
    });
    let factory = default_endpoints_factory().add_middleware(counting);
    let strict = factory
        .endpoint()
        .methods([Method::GET, Method::POST])
        .handler(async |input: Strict| {
            if input.n == 500 {
                return Err(http_error!(500, "boom"));
            }
            Ok(N { n: input.n })
        });
    routing! { "v1" => { "n" => strict } }
}

#[tokio::test]
async fn cors_true_marks_every_response() {
    let calls = Arc::new(AtomicUsize::new(0));
    let config = create_config().cors(Cors::Enabled).body_limit(8).build();
    let router = build(&cors_tree(calls.clone()), &config);
    let post_big = Request::post("/v1/n")
        .header(CONTENT_TYPE, "application/json")
        .body(r#"{"n": 123456789}"#.to_owned())
        .unwrap();
    let responses = vec![
        (200, send(&router, Method::GET, "/v1/n?n=1").await),
        (400, send(&router, Method::GET, "/v1/n?n=0").await),
        (404, send(&router, Method::GET, "/v1/zzz").await),
        (405, send(&router, Method::PUT, "/v1/n").await),
        (413, router.clone().oneshot(post_big).await.unwrap()),
        (500, send(&router, Method::GET, "/v1/n?n=500").await),
    ];
    for (status, response) in responses {
        assert_eq!(response.status().as_u16(), status);
        let headers = response.headers();
        assert_eq!(headers["access-control-allow-origin"], "*", "{status}");
        // What only a preflight's answer is read for is not on the others.
        assert_no_preflight_headers(headers, &status.to_string());
    }
    let before = calls.load(Ordering::SeqCst);
    let preflight = router
        .clone()
        .oneshot(preflight("/v1/n", "POST"))
        .await
        .unwrap();
    assert_eq!(preflight.status(), 200);
    assert_eq!(
        preflight.headers()["access-control-allow-methods"],
        "GET, POST, HEAD, OPTIONS"
    );
    assert_eq!(
        preflight.headers()["access-control-allow-headers"],
        "content-type, authorization"
    );
    assert!(
        preflight
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .is_empty()
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        before,
        "OPTIONS runs no middleware"
    );
}

/// `OPTIONS path` from `https://app.example` asking about `method`.
fn preflight(path: &str, method: &str) -> Request<String> {
    Request::options(path)
        .header("origin", "https://app.example")
        .header("access-control-request-method", method)
        .header("access-control-request-headers", "content-type")
        .body(String::new())
        .unwrap()
}

const PREFLIGHT_ONLY: [&str; 3] = [
    "access-control-allow-methods",
    "access-control-allow-headers",
    "access-control-max-age",
];

fn assert_no_preflight_headers(headers: &http::HeaderMap, what: &str) {
    for name in PREFLIGHT_ONLY {
        assert!(!headers.contains_key(name), "{what}: {name} in {headers:?}");
    }
}

/// Issue 54: the methods and allowed headers go on a preflight's answer only, as the Fetch
/// standard reads them; every answer to a cross-origin request keeps the origin.
#[tokio::test]
async fn only_a_preflight_lists_the_methods_and_allowed_headers() {
    let router = build(&cors_tree(Arc::default()), &cors_config(true));
    let response = router
        .clone()
        .oneshot(preflight("/v1/n", "POST"))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let headers = response.headers();
    assert_eq!(headers["access-control-allow-origin"], "*");
    assert_eq!(
        headers["access-control-allow-methods"],
        "GET, POST, HEAD, OPTIONS"
    );
    assert_eq!(
        headers["access-control-allow-headers"],
        "content-type, authorization"
    );

    let from_app = |method: Method, uri: &str| {
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .header("origin", "https://app.example");
        if uri == "/v1/n" {
            request = request.header(CONTENT_TYPE, "application/json");
        }
        request.body(r#"{"n": 2}"#.to_owned()).unwrap()
    };
    for (method, uri, status) in [
        (Method::GET, "/v1/n?n=1", 200),
        (Method::POST, "/v1/n", 200),
        (Method::HEAD, "/v1/n?n=1", 200),
        (Method::GET, "/v1/n?n=0", 400),
        (Method::PUT, "/v1/n", 405),
        (Method::GET, "/nowhere", 404),
        // No `Access-Control-Request-Method`: no preflight, though answered like one.
        (Method::OPTIONS, "/v1/n", 200),
    ] {
        let what = format!("{method} {uri}");
        let response = router.clone().oneshot(from_app(method, uri)).await.unwrap();
        assert_eq!(response.status().as_u16(), status, "{what}");
        assert_eq!(
            response.headers()["access-control-allow-origin"],
            "*",
            "{what}"
        );
        assert_no_preflight_headers(response.headers(), &what);
    }
}

#[tokio::test]
async fn cors_false_sends_no_headers() {
    let router = build(&cors_tree(Arc::default()), &cors_config(false));
    let response = send(&router, Method::GET, "/v1/n?n=1").await;
    assert!(
        response
            .headers()
            .keys()
            .all(|k| !k.as_str().starts_with("access-control"))
    );
}

#[derive(Default)]
struct Capture(Mutex<Vec<(Level, String)>>);

impl LogSink for Capture {
    fn log(&self, level: Level, message: std::fmt::Arguments<'_>) {
        self.0.lock().unwrap().push((level, message.to_string()));
    }
}

#[tokio::test]
async fn cors_function() {
    let config = create_config()
        .cors(Cors::with(|cors: &CorsRequest<'_>| {
            let mut headers = cors.default_headers.clone();
            let origin = cors.request.headers.get("origin").cloned();
            match origin {
                Some(origin) if origin == "https://app.example" => {
                    headers.insert("access-control-allow-origin", origin);
                    headers.insert(
                        "access-control-allow-credentials",
                        HeaderValue::from_static("true"),
                    );
                    headers.insert("access-control-max-age", HeaderValue::from_static("600"));
                    if let Some(meta) = cors.endpoint {
                        let tag = meta.methods.len().to_string();
                        headers.insert("x-endpoint-methods", HeaderValue::from_str(&tag).unwrap());
                    }
                    headers
                }
                Some(_) => HeaderMap::new(),
                None => {
                    headers.insert(
                        "access-control-allow-credentials",
                        HeaderValue::from_static("true"),
                    );
                    headers
                }
            }
        }))
        .build();
    let router = build(&cors_tree(Arc::default()), &config);
    let request = |origin: Option<&str>| {
        let mut builder = Request::get("/v1/n?n=1");
        if let Some(origin) = origin {
            builder = builder.header("origin", origin);
        }
        builder.body(String::new()).unwrap()
    };
    let response = router
        .clone()
        .oneshot(request(Some("https://app.example")))
        .await
        .unwrap();
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    assert_eq!(
        response.headers()["access-control-allow-credentials"],
        "true"
    );
    assert_eq!(response.headers()["x-endpoint-methods"], "2");
    // The function's max age and the default methods are for preflights only.
    assert_no_preflight_headers(response.headers(), "GET from the app");
    let response = router
        .clone()
        .oneshot(preflight("/v1/n", "GET"))
        .await
        .unwrap();
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    assert_eq!(response.headers()["access-control-max-age"], "600");
    assert_eq!(
        response.headers()["access-control-allow-methods"],
        "GET, POST, HEAD, OPTIONS"
    );

    let response = router
        .clone()
        .oneshot(request(Some("https://evil.example")))
        .await
        .unwrap();
    assert!(
        response
            .headers()
            .keys()
            .all(|k| !k.as_str().starts_with("access-control"))
    );

    // credentials with origin * are refused, loudly
    let capture = Arc::new(Capture::default());
    let mut unsafe_request = request(None);
    unsafe_request
        .extensions_mut()
        .insert(Logger::with_sink(capture.clone()));
    let response = router.clone().oneshot(unsafe_request).await.unwrap();
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    assert!(
        response
            .headers()
            .get("access-control-allow-credentials")
            .is_none()
    );
    let logged = capture
        .0
        .lock()
        .unwrap()
        .iter()
        .any(|(level, text)| *level == Level::Error && text.contains("credentials"));
    assert!(logged);
}

#[tokio::test]
async fn cors_async_function() {
    let request = || Request::get("/v1/n?n=1").body(String::new()).unwrap();
    let config = create_config()
        .cors(Cors::with_async(|cors: &CorsRequest<'_>| {
            let path = cors.request.uri.path().to_owned();
            async move {
                tokio::task::yield_now().await;
                let mut headers = HeaderMap::new();
                headers.insert(
                    "access-control-allow-origin",
                    HeaderValue::from_static("https://app.example"),
                );
                headers.insert(
                    HeaderName::from_static("access-control-expose-headers"),
                    HeaderValue::from_str(&path).unwrap(),
                );
                headers
            }
        }))
        .build();
    let router = build(&cors_tree(Arc::default()), &config);
    let response = router.clone().oneshot(request()).await.unwrap();
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    assert_eq!(response.headers()["access-control-expose-headers"], "/v1/n");
    let preflight = send(&router, Method::OPTIONS, "/v1/n").await;
    assert_eq!(preflight.status(), 200);
    assert_eq!(
        preflight.headers()["access-control-allow-origin"],
        "https://app.example"
    );
}

// ---- static files ------------------------------------------------------------------------------

/// A fresh directory tree under the system temp dir: `public/` to serve, a secret beside it.
fn static_fixture(name: &str) -> std::path::PathBuf {
    let root = std::env::temp_dir().join(format!("strata-static-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let public = root.join("public");
    std::fs::create_dir_all(public.join("docs")).unwrap();
    std::fs::write(public.join("hello.txt"), "hello, static world").unwrap();
    std::fs::write(public.join("index.html"), "<h1>home</h1>").unwrap();
    std::fs::write(public.join("docs/index.html"), "<h1>docs</h1>").unwrap();
    std::fs::write(public.join(".secret"), "dotfile").unwrap();
    std::fs::write(root.join("outside.txt"), "must never be served").unwrap();
    public
}

async fn text_of(response: Response<Body>) -> String {
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
async fn static_files_are_served_with_http_semantics() {
    let dir = static_fixture("serve");
    let tree =
        routing! { "public" => ServeStatic::dir(&dir), "api" => { "x" => get_endpoint("x") } };
    let router = build(&tree, &cors_config(true));
    let response = send(&router, Method::GET, "/public/hello.txt").await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()[CONTENT_TYPE],
        "text/plain; charset=utf-8"
    );
    assert!(response.headers().contains_key("last-modified"));
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    assert_eq!(text_of(response).await, "hello, static world");

    let ranged = Request::get("/public/hello.txt")
        .header("range", "bytes=0-4")
        .body(String::new())
        .unwrap();
    let response = router.clone().oneshot(ranged).await.unwrap();
    assert_eq!(response.status(), 206);
    assert_eq!(text_of(response).await, "hello");

    let head = send(&router, Method::HEAD, "/public/hello.txt").await;
    assert_eq!(head.status(), 200);
    assert_eq!(head.headers()["content-length"], "19");
    assert_eq!(text_of(head).await, "");

    assert_eq!(
        text_of(send(&router, Method::GET, "/public/").await).await,
        "<h1>home</h1>"
    );
    let response = send(&router, Method::GET, "/public/docs").await;
    assert!(response.status().is_redirection());
    assert_eq!(response.headers()["location"], "/public/docs/");
    assert_eq!(
        text_of(send(&router, Method::GET, "/public/docs/").await).await,
        "<h1>docs</h1>"
    );

    // static files answer GET and HEAD; anything else finds nothing there
    let response = send(&router, Method::POST, "/public/hello.txt").await;
    assert_eq!(response.status(), 404);
    assert!(response.headers().get("allow").is_none());
    assert_eq!(
        send(&router, Method::OPTIONS, "/public/hello.txt")
            .await
            .status(),
        404
    );
    // the mount itself redirects to its directory form
    let response = send(&router, Method::GET, "/public?v=1").await;
    assert_eq!(response.status(), 307);
    assert_eq!(response.headers()["location"], "/public/?v=1");
}

#[tokio::test]
async fn static_files_never_escape_their_directory() {
    let dir = static_fixture("escape");
    let tree = routing! { "public" => ServeStatic::dir(&dir) };
    let router = build(&tree, &cors_config(false));
    for uri in [
        "/public/missing.txt",
        "/public/.secret",
        "/public/%2esecret",
        "/public/../outside.txt",
        "/public/%2e%2e/outside.txt",
        "/public/%2E%2E/outside.txt",
        "/public/..%2foutside.txt",
        "/public/docs/..%2F..%2Foutside.txt",
        "/public/%2Fetc%2Fpasswd",
        "/public//etc/passwd",
        "/public/..%5coutside.txt",
        "/public/%ZZ",
        "/public/.git/config",
        "/public/docs/%00",
    ] {
        let response = send(&router, Method::GET, uri).await;
        assert_eq!(response.status(), 404, "{uri}");
        assert_eq!(
            response.headers()[CONTENT_TYPE],
            "application/json; charset=utf-8",
            "{uri}"
        );
        let (_, body) = json_of(response).await;
        assert_eq!(
            body["error"]["message"],
            format!("Can not GET {uri}"),
            "{uri}"
        );
    }
}

#[tokio::test]
async fn static_paths_the_os_cannot_take_are_json_errors() {
    let dir = static_fixture("long");
    let tree = routing! { "public" => ServeStatic::dir(&dir) };
    let router = build(&tree, &cors_config(false));
    let long_name = format!("/public/{}", "n".repeat(300));
    let deep = format!("/public{}", "/a".repeat(10_000));
    for (uri, status, message) in [
        (
            long_name.as_str(),
            400,
            "The path segment is too long: at most 255 bytes",
        ),
        (
            deep.as_str(),
            400,
            "The path is too long: at most 2048 bytes",
        ),
        // Within the limits: the usual 404, whatever the OS says.
        (&*format!("/public/{}", "n".repeat(255)), 404, ""),
        ("/public/hello.txt/below", 404, ""),
    ] {
        let response = send(&router, Method::GET, uri).await;
        assert_eq!(response.status(), status, "{}", &uri[..40.min(uri.len())]);
        assert_eq!(
            response.headers()[CONTENT_TYPE],
            "application/json; charset=utf-8"
        );
        let (_, body) = json_of(response).await;
        if !message.is_empty() {
            assert_eq!(body["error"]["message"], message);
        }
    }
}

#[tokio::test]
async fn static_files_send_cache_control_and_a_charset_on_text() {
    let dir = static_fixture("caching");
    let tree = routing! { "files" => ServeStatic::dir(&dir) };
    let router = build(&tree, &cors_config(false));
    let text = send(&router, Method::GET, "/files/hello.txt").await;
    assert_eq!(text.status(), StatusCode::OK);
    assert_eq!(text.headers()["cache-control"], "public, max-age=0");
    assert_eq!(text.headers()["content-type"], "text/plain; charset=utf-8");
    let page = send(&router, Method::GET, "/files/docs/").await;
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    // Revalidation keeps the header (a 304 from the file's ETag).
    let tag = page.headers()["etag"].clone();
    let request = Request::get("/files/docs/")
        .header("if-none-match", tag)
        .body(String::new())
        .unwrap();
    let cached = router.clone().oneshot(request).await.unwrap();
    assert_eq!(cached.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(cached.headers()["cache-control"], "public, max-age=0");

    let custom = StaticOptions::default()
        .cache_control(Some(http::HeaderValue::from_static("public, max-age=3600")));
    let tree = routing! { "files" => ServeStatic::new(&dir, custom) };
    let router = build(&tree, &cors_config(false));
    let page = send(&router, Method::GET, "/files/docs/").await;
    assert_eq!(page.headers()["cache-control"], "public, max-age=3600");
    let none = StaticOptions::default().cache_control(None);
    let tree = routing! { "files" => ServeStatic::new(&dir, none) };
    let router = build(&tree, &cors_config(false));
    let page = send(&router, Method::GET, "/files/docs/").await;
    assert!(page.headers().get("cache-control").is_none());
    // Not found is the JSON 404, without the file headers.
    let missing = send(&router, Method::GET, "/files/nope.txt").await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(missing.headers().get("cache-control").is_none());
}

#[tokio::test]
async fn static_options_dotfiles_index_redirect() {
    let dir = static_fixture("options");
    let allow = StaticOptions::default()
        .dotfiles(Dotfiles::Allow)
        .index(true)
        .redirect(false);
    let tree = routing! { "files" => ServeStatic::new(&dir, allow) };
    let router = build(&tree, &cors_config(false));
    assert_eq!(
        text_of(send(&router, Method::GET, "/files/.secret").await).await,
        "dotfile"
    );
    // without redirect, a directory's index is served at once
    assert_eq!(
        text_of(send(&router, Method::GET, "/files/docs").await).await,
        "<h1>docs</h1>"
    );

    let deny = StaticOptions::default()
        .dotfiles(Dotfiles::Deny)
        .index(false)
        .redirect(false);
    let tree = routing! { "files" => ServeStatic::new(&dir, deny) };
    let router = build(&tree, &cors_config(false));
    assert_eq!(
        send(&router, Method::GET, "/files/.secret").await.status(),
        404
    );
    assert_eq!(
        send(&router, Method::GET, "/files/docs/").await.status(),
        404
    );
    assert_eq!(
        send(&router, Method::GET, "/files/hello.txt")
            .await
            .status(),
        200
    );
}

#[cfg(unix)]
#[tokio::test]
async fn symbolic_links_out_of_the_directory_are_not_followed() {
    let dir = static_fixture("symlink");
    std::os::unix::fs::symlink(dir.join("../outside.txt"), dir.join("link.txt")).unwrap();
    std::fs::create_dir_all(dir.join("inner")).unwrap();
    std::os::unix::fs::symlink(dir.join("../outside.txt"), dir.join("inner/index.html")).unwrap();
    std::os::unix::fs::symlink(dir.join("hello.txt"), dir.join("alias.txt")).unwrap();
    let router = build(
        &routing! { "public" => ServeStatic::dir(&dir) },
        &cors_config(false),
    );
    assert_eq!(
        send(&router, Method::GET, "/public/link.txt")
            .await
            .status(),
        404
    );
    assert_eq!(
        send(&router, Method::GET, "/public/inner/").await.status(),
        404
    );
    // a link that stays inside is fine
    assert_eq!(
        text_of(send(&router, Method::GET, "/public/alias.txt").await).await,
        "hello, static world"
    );
}

#[tokio::test]
async fn a_root_static_mount_leaves_other_methods_and_routes_alone() {
    let dir = static_fixture("root");
    let tree =
        routing! { "/" => ServeStatic::dir(&dir), "v1" => { "hello" => get_endpoint("hello") } };
    let router = build(&tree, &cors_config(true));
    assert_eq!(
        text_of(send(&router, Method::GET, "/hello.txt").await).await,
        "hello, static world"
    );
    assert_eq!(
        get_json(&router, "/v1/hello").await.1["data"]["label"],
        "hello"
    );
    let response = send(&router, Method::POST, "/nothing").await;
    assert_eq!(response.status(), 404);
    assert!(
        response
            .headers()
            .get("access-control-allow-methods")
            .is_none()
    );
    assert_eq!(
        json_of(response).await.1["error"]["message"],
        "Can not POST /nothing"
    );
    assert_eq!(
        send(&router, Method::OPTIONS, "/anything").await.status(),
        404
    );
}

#[tokio::test]
async fn the_root_route_and_double_slashes() {
    let tree =
        routing! { "/" => get_endpoint("root"), "v1" => { "hello" => get_endpoint("hello") } };
    let router = build(&tree, &cors_config(false));
    assert_eq!(get_json(&router, "/").await.1["data"]["label"], "root");
    assert_eq!(get_json(&router, "//").await.0, 404);
    assert_eq!(get_json(&router, "/v1/hello//").await.0, 404);
}

#[tokio::test]
async fn more_startup_checks() {
    let config = cors_config(true);
    let literal = routing! { "a" => { "b" => get_endpoint("1") }, "/a/b" => get_endpoint("2") };
    assert_eq!(
        error_of(&literal, &config).to_string(),
        "Route GET /a/b is defined twice"
    );
    let method_key = routing! { "things" => { "delete" => labelled("x", &[Method::POST]) } };
    assert_eq!(
        error_of(&method_key, &config).to_string(),
        "DELETE /things: the endpoint does not support DELETE"
    );
    let dir = static_fixture("conflict");
    let clash = routing! { "public" => { ":id" => get_endpoint("x") }, "/public" => ServeStatic::dir(&dir) };
    assert_eq!(
        error_of(&clash, &config).to_string(),
        "static files under /public conflicts with /public/:id"
    );
    for key in [".", ".."] {
        let tree = Routing::new().route("a", Routing::new().route(key, get_endpoint("x")));
        assert!(
            matches!(error_of(&tree, &config), RoutingError::InvalidKey { .. }),
            "{key:?}"
        );
    }
}

#[tokio::test]
async fn cors_reaches_head_router_errors_and_wrong_method_404s() {
    let tree = routing! { "users" => { ":id" => get_endpoint("user") } };
    let config = create_config()
        .cors(Cors::Enabled)
        .wrong_method_behavior(WrongMethodBehavior::NotFound)
        .build();
    let router = build(&tree, &config);
    for (method, uri, status) in [
        (Method::HEAD, "/users/1", 200),
        (Method::GET, "/users/%ZZ", 400),
        (Method::POST, "/users/1", 404),
    ] {
        let response = send(&router, method.clone(), uri).await;
        assert_eq!(response.status().as_u16(), status, "{method} {uri}");
        assert_eq!(
            response.headers()["access-control-allow-origin"],
            "*",
            "{method} {uri}"
        );
        assert_no_preflight_headers(response.headers(), &format!("{method} {uri}"));
    }
    let response = router
        .clone()
        .oneshot(preflight("/users/1", "GET"))
        .await
        .unwrap();
    assert_eq!(
        response.headers()["access-control-allow-methods"],
        "GET, HEAD, OPTIONS"
    );
}

#[tokio::test]
async fn cors_functions_see_the_preflighted_endpoint_and_unknown_paths() {
    let tree = routing! {
        "items" => { "get" => get_endpoint("list"), "delete" => labelled("remove", &[Method::DELETE]) },
    };
    let config = create_config()
        .cors(Cors::with(|cors: &CorsRequest<'_>| {
            let mut headers = cors.default_headers.clone();
            let methods = cors
                .endpoint
                .map_or("none".to_owned(), |meta| format!("{:?}", meta.methods));
            headers.insert("x-endpoint", HeaderValue::from_str(&methods).unwrap());
            headers
        }))
        .build();
    let router = build(&tree, &config);
    let preflight = Request::options("/items")
        .header("access-control-request-method", "DELETE")
        .body(String::new())
        .unwrap();
    let response = router.clone().oneshot(preflight).await.unwrap();
    assert_eq!(response.headers()["x-endpoint"], "[DELETE]");
    assert_eq!(
        response.headers()["access-control-allow-methods"],
        "DELETE, GET, HEAD, OPTIONS"
    );
    let response = send(&router, Method::GET, "/nowhere").await;
    assert_eq!(response.status(), 404);
    assert_eq!(response.headers()["x-endpoint"], "none");
    assert!(
        response
            .headers()
            .get("access-control-allow-methods")
            .is_none()
    );
}

#[tokio::test]
async fn async_cors_functions_are_held_to_the_credentials_rule_and_panics_are_contained() {
    let config = create_config()
        .cors(Cors::with_async(|cors: &CorsRequest<'_>| {
            let explode = cors.request.uri.query() == Some("explode");
            let mut headers = cors.default_headers.clone();
            async move {
                assert!(!explode, "cors function exploded");
                headers.insert(
                    "access-control-allow-credentials",
                    HeaderValue::from_static("true"),
                );
                headers
            }
        }))
        .build();
    let router = build(&routing! { "x" => get_endpoint("x") }, &config);
    let capture = Arc::new(Capture::default());
    let mut request = Request::get("/x").body(String::new()).unwrap();
    request
        .extensions_mut()
        .insert(Logger::with_sink(capture.clone()));
    let response = router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    assert!(
        response
            .headers()
            .get("access-control-allow-credentials")
            .is_none()
    );
    assert!(
        capture
            .0
            .lock()
            .unwrap()
            .iter()
            .any(|(level, text)| *level == Level::Error && text.contains("credentials"))
    );

    let response = send(&router, Method::GET, "/x?explode").await;
    assert_eq!(response.status(), 200, "the endpoint still answers");
    assert!(
        response
            .headers()
            .keys()
            .all(|k| !k.as_str().starts_with("access-control"))
    );
}

/// Uploads configured in a build without the multipart reader (`--no-default-features`) stop
/// routing at startup, so neither the server nor the document promises what cannot be read;
/// with the `upload` feature (the default) they are fine. CI runs this file both ways.
#[test]
fn uploads_need_the_multipart_reader_at_startup() {
    let tree = routing! { "ping" => default_endpoints_factory().get().handler_without_input(async || Ok(Reply::new(()))) };
    let config = create_config()
        .cors(Cors::Disabled)
        .upload(strata::UploadLimits::new())
        .build();
    let router = Router::new(&tree, &config);
    if strata::stages::parse::MULTIPART {
        assert!(router.is_ok(), "{:?}", router.err());
    } else {
        assert_eq!(
            router.err(),
            Some(strata::router::RoutingError::UploadsNotBuilt)
        );
    }
}

/// A route behind a header credential (`Security::header`) allows that header in CORS, so that
/// a browser may send it; the others allow the usual two.
#[tokio::test]
async fn a_header_credential_is_an_allowed_cors_header() {
    #[derive(Clone)]
    struct Caller;
    #[strata::model(output)]
    struct Me {
        me: bool,
    }
    let secured = default_endpoints_factory()
        .add_middleware(
            Middleware::sync(|(): (), request: &Parts, _logger: &Logger| {
                match request.headers.get("x-token") {
                    Some(_) => Ok(Caller),
                    None => Err(http_error!(401, "No token")),
                }
            })
            .security(strata::Security::header("X-Token")),
        )
        .get()
        .handler_without_input(async |_caller: Caller| Ok(Me { me: true }));
    let tree = routing! { "me" => secured, "open" => get_endpoint("open") };
    let router = build(&tree, &cors_config(true));
    let preflight = |path: &str| {
        Request::options(path)
            .header("origin", "https://app.example")
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "x-token")
            .body(String::new())
            .unwrap_or_default()
    };
    let response = router.clone().oneshot(preflight("/me")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["access-control-allow-headers"],
        "content-type, authorization, x-token"
    );
    let response = router.oneshot(preflight("/open")).await.unwrap();
    assert_eq!(
        response.headers()["access-control-allow-headers"],
        "content-type, authorization"
    );
}
