//! The cache middleware over real sockets: the cache headers, 304s for `If-None-Match` and
//! `If-Modified-Since` (one before the expensive part and the output check), HEAD, the
//! server's own `etag(true)` alongside, and the OpenAPI document.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use strata::Routing;
use strata::server::ETags;

use garde::Validate;
use http::StatusCode;
use http::header::ACCEPT_LANGUAGE;
use schemars::JsonSchema;
use serde::Serialize;
use strata::cache::{Cache, CacheControl, Caching, ETag};
use strata::prelude::*;

#[path = "common/http.rs"]
mod http_client;
use http_client::{send, serve};

const DATE: &str = "Sun, 06 Nov 1994 08:49:37 GMT";

/// What the report endpoint answers; `total` over 100 fails the output check.
#[derive(Serialize, Validate, JsonSchema)]
struct Report {
    #[garde(range(max = 100))]
    total: u64,
}

fn policy() -> CacheControl {
    CacheControl::builder()
        .public()
        .max_age(Duration::from_secs(300))
        .stale_while_revalidate(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// `/v1/report` (validators first, then the counted expensive part), `/v1/broken` (the same,
/// but its output fails the output check) and `/v1/plain` (no validators).
fn routing(runs: &Arc<AtomicUsize>) -> Routing {
    let factory = default_endpoints_factory()
        .add_middleware(Caching::new(policy()).vary([ACCEPT_LANGUAGE]).middleware());
    let endpoint = |total: u64| {
        let runs = Arc::clone(runs);
        factory.get().handler_without_input(move |cache: Cache| {
            let runs = Arc::clone(&runs);
            async move {
                cache.etag(ETag::strong("r1")?)?;
                cache.last_modified(UNIX_EPOCH + Duration::from_secs(784_111_777))?;
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(Report { total })
            }
        })
    };
    let plain = factory
        .get()
        .handler_without_input(async || Ok(Report { total: 1 }));
    routing! { "v1" => { "report" => endpoint(42), "broken" => endpoint(1_000), "plain" => plain } }
}

#[tokio::test]
async fn conditional_requests_get_304s_over_sockets() {
    let runs = Arc::new(AtomicUsize::new(0));
    let (server, addr) = serve(&routing(&runs), create_config().cors(Cors::Disabled)).await;
    let get = |headers: &'static [(&'static str, &'static str)]| {
        send(addr, "GET", "/v1/report", headers, "")
    };

    let (status, headers, body) = get(&[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        headers["cache-control"],
        "max-age=300, public, stale-while-revalidate=30"
    );
    assert_eq!(headers["etag"], "\"r1\"");
    assert_eq!(headers["last-modified"], DATE);
    assert_eq!(headers["vary"], "accept-language");
    assert_eq!(&body[..], br#"{"status":"success","data":{"total":42}}"#);
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // If-None-Match: the weak comparison, lists.
    for inm in ["\"r1\"", "W/\"r1\"", "\"r0\", W/\"r1\""] {
        let (status, headers, body) =
            send(addr, "GET", "/v1/report", &[("if-none-match", inm)], "").await;
        assert_eq!(status, StatusCode::NOT_MODIFIED, "{inm}");
        assert!(body.is_empty());
        assert_eq!(headers["etag"], "\"r1\"");
        assert_eq!(
            headers["cache-control"],
            "max-age=300, public, stale-while-revalidate=30"
        );
        assert_eq!(headers["vary"], "accept-language");
        assert!(headers.contains_key("date"), "the server's own");
        for absent in ["content-type", "content-length", "last-modified"] {
            assert!(!headers.contains_key(absent), "{absent}: {headers:?}");
        }
    }
    // If-Modified-Since, without If-None-Match.
    let (status, headers, body) = get(&[("if-modified-since", DATE)]).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(body.is_empty());
    assert_eq!(headers["etag"], "\"r1\"");
    // None of those ran the expensive part.
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // Changed since, another tag, a date that is not one: the full response.
    for headers in [
        &[("if-modified-since", "Sat, 05 Nov 1994 08:49:37 GMT")][..],
        &[("if-none-match", "\"r0\"")][..],
        &[("if-none-match", "\"r0\""), ("if-modified-since", DATE)][..],
        &[("if-modified-since", "the day before")][..],
    ] {
        let (status, _, body) = get(headers).await;
        assert_eq!(status, StatusCode::OK, "{headers:?}");
        assert!(!body.is_empty());
    }
    assert_eq!(runs.load(Ordering::SeqCst), 5);
    drop(server);
}

#[tokio::test]
async fn an_early_304_skips_the_handler_s_rest_and_the_output_check() {
    let runs = Arc::new(AtomicUsize::new(0));
    let (server, addr) = serve(&routing(&runs), create_config().cors(Cors::Disabled)).await;
    // The full response fails the output check: a 500, with no-store and no validators.
    let (status, headers, _) = send(addr, "GET", "/v1/broken", &[], "").await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["vary"], "accept-language");
    assert!(!headers.contains_key("etag"));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // A client holding the tag gets its 304: the output was never made nor checked.
    for (name, value) in [("if-none-match", "\"r1\""), ("if-modified-since", DATE)] {
        let (status, headers, _) = send(addr, "GET", "/v1/broken", &[(name, value)], "").await;
        assert_eq!(status, StatusCode::NOT_MODIFIED, "{name}");
        assert_eq!(headers["etag"], "\"r1\"");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    drop(server);
}

#[tokio::test]
async fn head_gets_the_headers_of_get_and_its_304() {
    let runs = Arc::new(AtomicUsize::new(0));
    let (server, addr) = serve(&routing(&runs), create_config().cors(Cors::Disabled)).await;
    let (status, headers, body) = send(addr, "HEAD", "/v1/report", &[], "").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.is_empty());
    assert_eq!(headers["etag"], "\"r1\"");
    assert_eq!(headers["last-modified"], DATE);
    assert_eq!(headers["vary"], "accept-language");
    assert_eq!(headers["content-length"], "40");
    let (status, headers, body) = send(
        addr,
        "HEAD",
        "/v1/report",
        &[("if-none-match", "\"r1\"")],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(body.is_empty());
    // No `Content-Length`: on a 304 it would have to be the 200's (RFC 9110 §8.6).
    assert!(headers.get("content-length").is_none(), "{headers:?}");
    assert_eq!(headers["etag"], "\"r1\"");
    assert_eq!(
        headers["cache-control"],
        "max-age=300, public, stale-while-revalidate=30"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    drop(server);
}

/// With `create_config().etags(ETags::Weak)`: the handler's tag wins where it sets one; elsewhere the
/// server's hash tag and its 304, which keep the middleware's headers.
#[tokio::test]
async fn the_server_s_etag_and_the_handler_s_get_along() {
    let runs = Arc::new(AtomicUsize::new(0));
    let config = create_config().cors(Cors::Disabled).etags(ETags::Weak);
    let (server, addr) = serve(&routing(&runs), config).await;
    let (status, headers, _) = send(addr, "GET", "/v1/report", &[], "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["etag"], "\"r1\"", "the handler's, not a hash");
    let (status, _, _) = send(
        addr,
        "GET",
        "/v1/report",
        &[("if-none-match", "\"r1\"")],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let (status, headers, _) = send(addr, "GET", "/v1/plain", &[], "").await;
    assert_eq!(status, StatusCode::OK);
    let tag = headers["etag"].to_str().unwrap().to_owned();
    assert!(tag.starts_with("W/\""), "the server's hash tag: {tag}");
    assert_eq!(
        headers["cache-control"],
        "max-age=300, public, stale-while-revalidate=30"
    );
    let (status, headers, body) = send(
        addr,
        "GET",
        "/v1/plain",
        &[("if-none-match", tag.as_str())],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(body.is_empty());
    assert_eq!(headers["etag"], tag.as_str());
    assert_eq!(
        headers["cache-control"],
        "max-age=300, public, stale-while-revalidate=30"
    );
    assert_eq!(headers["vary"], "accept-language");
    drop(server);
}

#[tokio::test]
async fn a_handler_s_policy_and_a_group_s_middleware_choose_per_endpoint() {
    let immutable = CacheControl::builder()
        .public()
        .max_age(Duration::from_secs(31_536_000))
        .immutable()
        .build()
        .unwrap();
    // A group of endpoints on a factory of its own.
    let assets = default_endpoints_factory().add_middleware(Caching::new(immutable).middleware());
    let logo = assets
        .get()
        .handler_without_input(async || Ok(Report { total: 2 }));
    // One endpoint choosing for its response.
    let live = default_endpoints_factory()
        .add_middleware(Caching::new(policy()).middleware())
        .get()
        .handler_without_input(async |cache: Cache| {
            cache.set_policy(CacheControl::no_cache());
            cache.last_modified(SystemTime::now())?;
            Ok(Report { total: 3 })
        });
    let routing = routing! { "logo" => logo, "live" => live };
    let (server, addr) = serve(&routing, create_config().cors(Cors::Disabled)).await;
    let (_, headers, _) = send(addr, "GET", "/logo", &[], "").await;
    assert_eq!(
        headers["cache-control"],
        "max-age=31536000, public, immutable"
    );
    assert!(!headers.contains_key("vary"));
    let (_, headers, _) = send(addr, "GET", "/live", &[], "").await;
    assert_eq!(headers["cache-control"], "no-cache");
    let date = headers["last-modified"].to_str().unwrap().to_owned();
    let (status, _, _) = send(
        addr,
        "GET",
        "/live",
        &[("if-modified-since", date.as_str())],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    drop(server);
}

#[cfg(feature = "openapi")]
#[test]
fn the_document_lists_the_cache_headers_and_the_304() {
    use serde_json::json;
    use strata::openapi::Documentation;

    let runs = Arc::new(AtomicUsize::new(0));
    let config = create_config().cors(Cors::Disabled).build();
    let doc = Documentation::new(&routing(&runs), &config)
        .build()
        .unwrap()
        .to_value();
    let responses = &doc["paths"]["/v1/report"]["get"]["responses"];
    let ok = &responses["200"]["headers"];
    for name in ["cache-control", "etag", "last-modified", "vary"] {
        assert!(ok[name]["description"].is_string(), "{name}: {ok}");
    }
    assert!(
        ok["cache-control"]["description"]
            .as_str()
            .unwrap()
            .contains("max-age=300, public, stale-while-revalidate=30")
    );
    let not_modified = &responses["304"];
    assert!(
        not_modified["description"]
            .as_str()
            .unwrap()
            .starts_with("Not Modified")
    );
    assert_eq!(not_modified.get("content"), None, "a 304 has no body");
    for name in ["cache-control", "etag", "vary"] {
        assert!(not_modified["headers"][name].is_object(), "{name}");
    }
    assert!(responses["412"]["content"]["application/json"].is_object());
    assert_eq!(
        responses["200"]["headers"]["etag"]["schema"],
        json!({ "type": "string" })
    );
}
