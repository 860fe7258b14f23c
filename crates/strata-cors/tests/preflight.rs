//! `Access-Control-Allow-Methods`, `-Allow-Headers` and `-Max-Age` go on preflights only; an
//! actual response keeps the origin, exposed headers, credentials and `Vary` (issue 54).

use http::request::Parts;
use http::{HeaderMap, HeaderValue, Method, Request, Response};
use strata_core::Body;
use strata_cors::{Cors, CorsHeaders, CorsRequest, PathCors};

const PREFLIGHT_ONLY: [&str; 3] = [
    "access-control-allow-methods",
    "access-control-allow-headers",
    "access-control-max-age",
];

/// A request from `https://app.example`; `asks` is its `Access-Control-Request-Method`.
fn request(method: &Method, asks: Option<&str>) -> Parts {
    let mut builder = Request::builder()
        .method(method.clone())
        .uri("/v1/things")
        .header("origin", "https://app.example");
    if let Some(asked) = asks {
        builder = builder
            .header("access-control-request-method", asked)
            .header("access-control-request-headers", "content-type, x-token");
    }
    builder.body(()).unwrap_or_default().into_parts().0
}

async fn sent(mut headers: CorsHeaders) -> HeaderMap {
    std::future::poll_fn(|cx| headers.poll_ready(cx)).await;
    let mut response = Response::new(Body::empty());
    headers.apply(&mut response);
    std::mem::take(response.headers_mut())
}

fn path(cors: &Cors) -> PathCors {
    PathCors::new(
        cors,
        Some(&HeaderValue::from_static("GET, POST, PUT, HEAD, OPTIONS")),
        &["x-token"],
    )
}

fn assert_no_preflight_headers(headers: &HeaderMap, what: &str) {
    for name in PREFLIGHT_ONLY {
        assert!(!headers.contains_key(name), "{what}: {name} in {headers:?}");
    }
}

#[tokio::test]
async fn enabled_allows_methods_and_headers_on_a_preflight_only() {
    let cors = Cors::Enabled;
    let path = path(&cors);
    let preflight = sent(cors.headers(&request(&Method::OPTIONS, Some("PUT")), &path, None)).await;
    assert_eq!(preflight["access-control-allow-origin"], "*");
    assert_eq!(
        preflight["access-control-allow-methods"],
        "GET, POST, PUT, HEAD, OPTIONS"
    );
    assert_eq!(
        preflight["access-control-allow-headers"],
        "content-type, authorization, x-token"
    );
    for method in [Method::GET, Method::POST, Method::PUT, Method::HEAD] {
        let actual = sent(cors.headers(&request(&method, None), &path, None)).await;
        assert_eq!(actual.len(), 1, "{method}: {actual:?}");
        assert_eq!(actual["access-control-allow-origin"], "*", "{method}");
    }
    // The request method of a preflight is no preflight on another method.
    let odd = sent(cors.headers(&request(&Method::GET, Some("PUT")), &path, None)).await;
    assert_no_preflight_headers(&odd, "GET naming a method");
}

#[tokio::test]
async fn an_options_without_a_requested_method_is_no_preflight() {
    let cors = Cors::Enabled;
    let path = path(&cors);
    let headers = sent(cors.headers(&request(&Method::OPTIONS, None), &path, None)).await;
    assert_eq!(headers["access-control-allow-origin"], "*");
    assert_no_preflight_headers(&headers, "OPTIONS without Access-Control-Request-Method");
}

/// A function in express-zod-api's style: the defaults, a specific origin, credentials, a
/// max age, exposed headers and `Vary`.
fn answer(request: &CorsRequest<'_>) -> HeaderMap {
    let mut headers = request.default_headers.clone();
    for (name, value) in [
        ("access-control-allow-origin", "https://app.example"),
        ("access-control-allow-credentials", "true"),
        ("access-control-max-age", "600"),
        ("access-control-expose-headers", "x-request-id"),
        ("vary", "origin"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers
}

#[tokio::test]
async fn a_functions_preflight_headers_go_on_preflights_only() {
    let sync = Cors::with(answer);
    let asynchronous = Cors::with_async(|request| {
        let headers = answer(request);
        async move { headers }
    });
    for cors in [sync, asynchronous] {
        let path = path(&cors);
        let preflight =
            sent(cors.headers(&request(&Method::OPTIONS, Some("PUT")), &path, None)).await;
        assert_eq!(preflight["access-control-max-age"], "600", "{cors:?}");
        assert_eq!(
            preflight["access-control-allow-methods"], "GET, POST, PUT, HEAD, OPTIONS",
            "{cors:?}"
        );
        assert_eq!(
            preflight["access-control-allow-headers"], "content-type, authorization, x-token",
            "{cors:?}"
        );
        for parts in [
            request(&Method::GET, None),
            request(&Method::POST, None),
            request(&Method::OPTIONS, None),
        ] {
            let actual = sent(cors.headers(&parts, &path, None)).await;
            let what = format!("{cors:?} {}", parts.method);
            assert_no_preflight_headers(&actual, &what);
            assert_eq!(
                actual["access-control-allow-origin"], "https://app.example",
                "{what}"
            );
            assert_eq!(actual["access-control-allow-credentials"], "true", "{what}");
            assert_eq!(
                actual["access-control-expose-headers"], "x-request-id",
                "{what}"
            );
            assert_eq!(actual["vary"], "origin", "{what}");
        }
    }
}

#[tokio::test]
async fn a_function_is_given_the_defaults_of_its_kind_of_request() {
    let cors = Cors::with(|request| {
        let mut headers = HeaderMap::new();
        let names: Vec<&str> = request
            .default_headers
            .keys()
            .map(http::HeaderName::as_str)
            .collect();
        let names = HeaderValue::from_str(&names.join(" "))
            .unwrap_or_else(|_| HeaderValue::from_static("?"));
        headers.insert("x-defaults", names);
        headers
    });
    let path = path(&cors);
    let preflight = sent(cors.headers(&request(&Method::OPTIONS, Some("PUT")), &path, None)).await;
    assert_eq!(
        preflight["x-defaults"],
        "access-control-allow-origin access-control-allow-methods access-control-allow-headers"
    );
    let actual = sent(cors.headers(&request(&Method::GET, None), &path, None)).await;
    assert_eq!(actual["x-defaults"], "access-control-allow-origin");
}
