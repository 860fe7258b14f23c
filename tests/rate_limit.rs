//! The rate-limit middleware through a real server on loopback: a concurrent burst beyond the
//! quota gets exactly the expected number of 429s, each with `Retry-After` and the `RateLimit`
//! headers; handlers read the remaining budget from the context; a trusted proxy's
//! `X-Forwarded-For` tells clients apart; the OpenAPI document lists the 429 and the headers.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use garde::Validate;
use http::StatusCode;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};
use strata::Routing;
use strata::openapi::Documentation;
use strata::prelude::*;
use strata::ratelimit::{
    HeadersOn, Key, Keyless, Quota, RateLimit, RateLimitState, TrustedProxies,
};

#[path = "common/http.rs"]
mod http_client;
use http_client::{send, serve};

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Budget {
    /// Requests the client may still send at once.
    remaining: u32,
    limit: u32,
}

/// `GET /budget` behind `limit`, answering the client's budget from the context.
fn routing_with(limit: RateLimit<strata::ratelimit::ClientAddrKey>) -> Routing {
    let budget = default_endpoints_factory()
        .add_middleware(limit.middleware())
        .get()
        .handler_without_input(async |state: RateLimitState| {
            Ok(Budget {
                remaining: state.remaining,
                limit: state.limit,
            })
        });
    routing! { "budget" => budget }
}

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

fn text(headers: &http::HeaderMap, name: &str) -> String {
    headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name}"))
        .to_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_concurrent_burst_gets_exactly_the_expected_429s() {
    // 5 per hour: nothing comes back during the test. A request without an address would be
    // a 403: every one of these GETs (no body) must carry the server's `ClientAddr`.
    let limit = RateLimit::new(Quota::per_hour(5), Key::client_addr())
        .keyless(Keyless::Reject(StatusCode::FORBIDDEN))
        .headers(HeadersOn::EveryResponse);
    let (server, addr) = serve(&routing_with(limit), create_config().cors(Cors::Disabled)).await;

    let requests: Vec<_> = (0..40)
        .map(|_| tokio::spawn(async move { send(addr, "GET", "/budget", &[], "").await }))
        .collect();
    let mut granted = Vec::new();
    let mut denied = 0;
    for request in requests {
        let (status, headers, body) = request.await.unwrap();
        assert_eq!(
            text(&headers, "ratelimit-policy"),
            r#""default";q=5;w=3600"#
        );
        let body = json(&body);
        match status {
            StatusCode::OK => {
                let remaining = body["data"]["remaining"].as_u64().unwrap();
                assert_eq!(body["data"]["limit"], 5);
                // The header says what the context said; one more request every 720 s.
                assert_eq!(
                    text(&headers, "ratelimit"),
                    format!(r#""default";r={remaining};t=720"#)
                );
                granted.push(remaining);
            }
            StatusCode::TOO_MANY_REQUESTS => {
                denied += 1;
                let retry: u64 = text(&headers, "retry-after").parse().unwrap();
                // The fifth request took the last of the burst; the next one is 720 s after
                // it, less the moments since.
                assert!((1..=720).contains(&retry), "{retry}");
                assert!(retry >= 700, "{retry}");
                assert_eq!(
                    text(&headers, "ratelimit"),
                    format!(r#""default";r=0;t={retry}"#)
                );
                assert_eq!(
                    body,
                    json!({
                        "status": "error",
                        "error": { "message": format!("Too many requests, retry in {retry} s") }
                    })
                );
            }
            other => panic!("{other}: {body}"),
        }
    }
    granted.sort_unstable();
    assert_eq!(granted, [0, 1, 2, 3, 4], "each grant saw its own budget");
    assert_eq!(denied, 35);
    server.shutdown().await;
}

#[tokio::test]
async fn a_trusted_proxy_tells_its_clients_apart() {
    let proxy = TrustedProxies::networks(["127.0.0.1"]).unwrap();
    let limit = RateLimit::new(Quota::per_hour(1), Key::client_addr().trust(proxy));
    let (server, addr) = serve(&routing_with(limit), create_config().cors(Cors::Disabled)).await;
    let from = |client: &'static str| async move {
        let headers: &[(&str, &str)] = if client.is_empty() {
            &[]
        } else {
            &[("x-forwarded-for", client)]
        };
        send(addr, "GET", "/budget", headers, "").await.0
    };
    assert_eq!(from("203.0.113.1").await, StatusCode::OK);
    assert_eq!(from("203.0.113.2").await, StatusCode::OK);
    assert_eq!(from("203.0.113.1").await, StatusCode::TOO_MANY_REQUESTS);
    // Without the header, the proxy itself (the peer) is the client.
    assert_eq!(from("").await, StatusCode::OK);
    assert_eq!(from("").await, StatusCode::TOO_MANY_REQUESTS);
    // Garbage from the proxy: keyed by the proxy, whose budget is spent.
    assert_eq!(
        from("203.0.113.3, not an address").await,
        StatusCode::TOO_MANY_REQUESTS
    );
    server.shutdown().await;

    // Trusting nobody (the default), the same header buys nothing.
    let limit = RateLimit::new(Quota::per_hour(1), Key::client_addr());
    let (server, addr) = serve(&routing_with(limit), create_config().cors(Cors::Disabled)).await;
    let forged = |client: &'static str| async move {
        send(addr, "GET", "/budget", &[("x-forwarded-for", client)], "")
            .await
            .0
    };
    assert_eq!(forged("203.0.113.1").await, StatusCode::OK);
    assert_eq!(forged("203.0.113.2").await, StatusCode::TOO_MANY_REQUESTS);
    server.shutdown().await;
}

#[test]
fn the_document_lists_the_429_and_the_headers() {
    let document = |limit| {
        Documentation::new(
            &routing_with(limit),
            &create_config().cors(Cors::Disabled).build(),
        )
        .title("Limited")
        .version("1.0.0")
        .build()
        .unwrap()
        .to_value()
    };
    // By default the headers are on the 429 only, and the document says so.
    let doc = document(RateLimit::new(Quota::per_minute(100), Key::client_addr()));
    let responses = &doc["paths"]["/budget"]["get"]["responses"];
    assert!(responses["429"]["headers"].get("ratelimit").is_some());
    assert!(responses["200"].get("headers").is_none(), "{responses}");

    let routing = routing_with(
        RateLimit::new(Quota::per_minute(100), Key::client_addr())
            .headers(HeadersOn::EveryResponse),
    );
    let doc = Documentation::new(&routing, &create_config().cors(Cors::Disabled).build())
        .title("Limited")
        .version("1.0.0")
        .build()
        .unwrap()
        .to_value();
    let responses = &doc["paths"]["/budget"]["get"]["responses"];
    let denied = &responses["429"];
    assert_eq!(
        denied["description"],
        "Too many requests: the client's quota of 100 per 60 s is spent"
    );
    assert_eq!(
        denied["headers"]["retry-after"]["schema"],
        json!({ "type": "integer", "minimum": 1 })
    );
    for name in ["ratelimit", "ratelimit-policy"] {
        assert!(
            denied["headers"][name]["description"]
                .as_str()
                .unwrap()
                .contains("draft-ietf-httpapi-ratelimit-headers-11"),
            "{name}"
        );
        assert_eq!(denied["headers"][name]["schema"]["type"], "string");
        assert_eq!(
            responses["200"]["headers"][name]["schema"]["type"], "string",
            "{name} on success"
        );
    }
    assert!(responses["200"]["headers"].get("retry-after").is_none());
    assert_eq!(
        denied["content"]["application/json"]["schema"],
        responses["400"]["content"]["application/json"]["schema"],
        "the 429 is an error envelope like the others"
    );
}
