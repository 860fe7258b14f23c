//! The limiter through the real stages: endpoints of the facade's factory (parse, combine,
//! middleware, handler, output, format with the default result handler), called with
//! `oneshot`.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strata::Endpoint;
use strata::core::HNil;

use garde::Validate;
use http::{HeaderMap, HeaderName, Request, Response, StatusCode};
use http_body_util::BodyExt;
use schemars::JsonSchema;
use serde::Serialize;
use strata::prelude::*;
use strata_core::{Body, ClientAddr, Level, LogSink};
use tower::ServiceExt;

use crate::{
    Decision, FailPolicy, Gcra, HeadersOn, Key, Keyless, ManualClock, MemoryStore, Quota,
    RateLimit, RateLimitKey, RateLimitState, RateLimitStore, StoreError, TrustedProxies,
};

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Budget {
    remaining: u32,
    checked: bool,
}

fn budget(state: &RateLimitState) -> Budget {
    Budget {
        remaining: state.remaining,
        checked: state.checked,
    }
}

/// A GET from `client` (no address when `None`) with `headers`.
fn get(client: Option<[u8; 4]>, headers: &[(&'static str, &str)]) -> Request<String> {
    let mut request = Request::get("/budget").body(String::new()).unwrap();
    if let Some(client) = client {
        request.extensions_mut().insert(ClientAddr(client.into()));
    }
    for (name, value) in headers {
        request.headers_mut().append(*name, value.parse().unwrap());
    }
    request
}

async fn body(response: Response<Body>) -> serde_json::Value {
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Vec<&'a str> {
    headers
        .get_all(name)
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect()
}

/// An endpoint answering its client's budget, behind `limit`.
fn budget_endpoint<K, S>(limit: RateLimit<K, S>) -> Endpoint
where
    K: crate::KeyExtractor<HNil>,
    S: RateLimitStore,
{
    default_endpoints_factory()
        .add_middleware(limit.middleware())
        .get()
        .handler_without_input(async |state: RateLimitState| Ok(budget(&state)))
}

#[tokio::test]
async fn a_burst_then_a_429_through_the_result_handler() {
    let clock = ManualClock::new();
    let endpoint = budget_endpoint(
        RateLimit::new(Quota::per_minute(3), Key::client_addr())
            .clock(clock.clone())
            .headers(HeadersOn::EveryResponse),
    );
    let service = endpoint.service();
    for remaining in [2, 1, 0] {
        let response = service
            .clone()
            .oneshot(get(Some([192, 0, 2, 1]), &[]))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            header(response.headers(), "ratelimit"),
            [format!("\"default\";r={remaining};t=20")]
        );
        assert_eq!(
            header(response.headers(), "ratelimit-policy"),
            ["\"default\";q=3;w=60"]
        );
        let body = body(response).await;
        assert_eq!(body["data"]["remaining"], remaining);
        assert_eq!(body["data"]["checked"], true);
    }
    let denied = service
        .clone()
        .oneshot(get(Some([192, 0, 2, 1]), &[]))
        .await
        .unwrap();
    assert_eq!(denied.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(header(denied.headers(), "retry-after"), ["20"]);
    assert_eq!(
        header(denied.headers(), "ratelimit"),
        ["\"default\";r=0;t=20"]
    );
    assert_eq!(
        header(denied.headers(), "ratelimit-policy"),
        ["\"default\";q=3;w=60"]
    );
    assert_eq!(
        body(denied).await,
        serde_json::json!({
            "status": "error",
            "error": { "message": "Too many requests, retry in 20 s" }
        })
    );
    // Another client has its own budget.
    let other = service
        .clone()
        .oneshot(get(Some([192, 0, 2, 2]), &[]))
        .await
        .unwrap();
    assert_eq!(other.status(), StatusCode::OK);
    // 19.5 s later: still 1 s (rounded up) to wait; 20 s later: one more request.
    clock.advance(Duration::from_millis(19_500));
    let denied = service
        .clone()
        .oneshot(get(Some([192, 0, 2, 1]), &[]))
        .await
        .unwrap();
    assert_eq!(header(denied.headers(), "retry-after"), ["1"]);
    clock.advance(Duration::from_millis(500));
    let again = service
        .oneshot(get(Some([192, 0, 2, 1]), &[]))
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(body(again).await["data"]["remaining"], 0);
}

#[tokio::test]
async fn only_the_429_carries_the_headers_unless_every_response_is_asked_to() {
    let failing = |limit: RateLimit<crate::ClientAddrKey>| {
        default_endpoints_factory()
            .add_middleware(limit.middleware())
            .get()
            .handler_without_input(async || Err::<Budget, _>(http_error!(409, "Conflict")))
            .service()
    };
    let with = failing(
        RateLimit::new(Quota::per_minute(3), Key::client_addr()).headers(HeadersOn::EveryResponse),
    );
    let response = with.oneshot(get(Some([192, 0, 2, 1]), &[])).await.unwrap();
    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert_eq!(header(response.headers(), "ratelimit").len(), 1);
    assert_eq!(header(response.headers(), "ratelimit-policy").len(), 1);

    // The default: a success or another error carries neither.
    let without = failing(RateLimit::new(Quota::per_minute(1), Key::client_addr()));
    let response = without
        .clone()
        .oneshot(get(Some([192, 0, 2, 1]), &[]))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert!(response.headers().get("ratelimit").is_none());
    assert!(response.headers().get("ratelimit-policy").is_none());
    // The 429 still says when to come back.
    let denied = without
        .oneshot(get(Some([192, 0, 2, 1]), &[]))
        .await
        .unwrap();
    assert_eq!(denied.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(header(denied.headers(), "retry-after"), ["60"]);
    assert_eq!(
        header(denied.headers(), "ratelimit"),
        ["\"default\";r=0;t=60"]
    );
    assert_eq!(
        header(denied.headers(), "ratelimit-policy"),
        ["\"default\";q=1;w=60"]
    );
}

#[tokio::test]
async fn a_forged_forwarding_header_buys_no_budget() {
    let endpoint = budget_endpoint(RateLimit::new(Quota::per_hour(1), Key::client_addr()));
    let service = endpoint.service();
    let first = service
        .clone()
        .oneshot(get(
            Some([192, 0, 2, 1]),
            &[("x-forwarded-for", "203.0.113.1")],
        ))
        .await
        .unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    let second = service
        .oneshot(get(
            Some([192, 0, 2, 1]),
            &[("x-forwarded-for", "203.0.113.2")],
        ))
        .await
        .unwrap();
    assert_eq!(second.status(), StatusCode::TOO_MANY_REQUESTS);

    // Behind a trusted proxy, its header tells the clients apart.
    let proxy = TrustedProxies::networks(["192.0.2.0/24"]).unwrap();
    let endpoint = budget_endpoint(RateLimit::new(
        Quota::per_hour(1),
        Key::client_addr().trust(proxy),
    ));
    let service = endpoint.service();
    for (client, status) in [
        ("203.0.113.1", StatusCode::OK),
        ("203.0.113.2", StatusCode::OK),
        ("203.0.113.1", StatusCode::TOO_MANY_REQUESTS),
        // Absurd values: keyed by the proxy, never a panic.
        (&*"9,".repeat(5_000), StatusCode::OK),
        ("[::1", StatusCode::TOO_MANY_REQUESTS),
    ] {
        let response = service
            .clone()
            .oneshot(get(Some([192, 0, 2, 1]), &[("x-forwarded-for", client)]))
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{client:.20}");
    }
}

struct User(&'static str);

#[tokio::test]
async fn a_credential_from_the_context_keys_the_budget() {
    let auth = Middleware::new(|(): (), request, _logger| {
        let user = match request
            .headers
            .get("x-user")
            .map(http::HeaderValue::as_bytes)
        {
            Some(b"ada") => Some(User("ada")),
            Some(b"bob") => Some(User("bob")),
            _ => None,
        };
        async move { user.ok_or_else(|| http_error!(401, "Who?")) }
    });
    let endpoint = default_endpoints_factory()
        .add_middleware(auth)
        .add_middleware(
            RateLimit::new(Quota::per_hour(1), Key::context(|user: &User| user.0))
                .name("per-user")
                .headers(HeadersOn::EveryResponse)
                .middleware(),
        )
        .get()
        .handler_without_input(async |state: RateLimitState| Ok(budget(&state)));
    let service = endpoint.service();
    let as_user = |user| get(None, &[("x-user", user)]);
    let ada = service.clone().oneshot(as_user("ada")).await.unwrap();
    assert_eq!(
        header(ada.headers(), "ratelimit"),
        ["\"per-user\";r=0;t=3600"]
    );
    let bob = service.clone().oneshot(as_user("bob")).await.unwrap();
    assert_eq!(bob.status(), StatusCode::OK);
    let ada = service.clone().oneshot(as_user("ada")).await.unwrap();
    assert_eq!(ada.status(), StatusCode::TOO_MANY_REQUESTS);
    // The limiter runs after authentication: a stranger is a 401, no budget spent.
    let stranger = service.oneshot(as_user("eve")).await.unwrap();
    assert_eq!(stranger.status(), StatusCode::UNAUTHORIZED);
    assert!(stranger.headers().get("ratelimit").is_none());
}

#[derive(Default)]
struct Logs(Mutex<Vec<String>>);

impl LogSink for Logs {
    fn log(&self, _level: Level, message: std::fmt::Arguments<'_>) {
        self.0.lock().unwrap().push(message.to_string());
    }
}

#[tokio::test]
async fn requests_without_a_key_get_the_keyless_decision() {
    // Shared (the default): one budget for all of them, and one warning.
    let logs = Arc::new(Logs::default());
    let service = budget_endpoint(RateLimit::new(Quota::per_hour(2), Key::client_addr())).service();
    let keyless = || {
        let mut request = get(None, &[]);
        request
            .extensions_mut()
            .insert(Logger::with_sink(logs.clone()));
        request
    };
    for status in [200, 200, 429] {
        let response = service.clone().oneshot(keyless()).await.unwrap();
        assert_eq!(response.status(), status);
    }
    // An address has its own budget.
    let addressed = service
        .oneshot(get(Some([192, 0, 2, 1]), &[]))
        .await
        .unwrap();
    assert_eq!(addressed.status(), StatusCode::OK);
    {
        let logs = logs.0.lock().unwrap();
        assert_eq!(logs.len(), 1, "{logs:?}");
        assert!(logs[0].contains("without a key"), "{}", logs[0]);
    }

    // Unlimited: through, unchecked, no RateLimit header.
    let service = budget_endpoint(
        RateLimit::new(Quota::per_hour(1), Key::client_addr())
            .keyless(Keyless::Unlimited)
            .headers(HeadersOn::EveryResponse),
    )
    .service();
    for _ in 0..3 {
        let response = service.clone().oneshot(get(None, &[])).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert!(response.headers().get("ratelimit").is_none());
        assert_eq!(header(response.headers(), "ratelimit-policy").len(), 1);
        assert_eq!(body(response).await["data"]["checked"], false);
    }

    // Rejected with the chosen status.
    let service = budget_endpoint(
        RateLimit::new(
            Quota::per_hour(1),
            Key::header(HeaderName::from_static("x-api-key")),
        )
        .keyless(Keyless::Reject(StatusCode::UNAUTHORIZED)),
    )
    .service();
    let response = service.clone().oneshot(get(None, &[])).await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        body(response).await["error"]["message"],
        "The request has no rate-limit key"
    );
    let huge = "k".repeat(60_000);
    let response = service
        .oneshot(get(None, &[("x-api-key", &huge)]))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

/// A store that fails every call.
struct Down;

impl RateLimitStore for Down {
    type Future = std::future::Ready<Result<Decision, StoreError>>;

    fn check(&self, _key: &RateLimitKey<'_>, _gcra: Gcra, _now: u64) -> Self::Future {
        std::future::ready(Err(StoreError::new("connection refused")))
    }
}

#[tokio::test]
async fn a_failing_store_fails_open_by_default_or_closed() {
    let logs = Arc::new(Logs::default());
    let with_logs = || {
        let mut request = get(Some([192, 0, 2, 1]), &[]);
        request
            .extensions_mut()
            .insert(Logger::with_sink(logs.clone()));
        request
    };
    // With the headers on every response: the policy, but no `RateLimit` of an unchecked
    // request.
    let open = budget_endpoint(
        RateLimit::new(Quota::per_hour(1), Key::client_addr())
            .store(Down)
            .headers(HeadersOn::EveryResponse),
    )
    .service();
    for _ in 0..3 {
        let response = open.clone().oneshot(with_logs()).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert!(response.headers().get("ratelimit").is_none());
        assert_eq!(header(response.headers(), "ratelimit-policy").len(), 1);
        assert_eq!(body(response).await["data"]["checked"], false);
    }
    assert!(
        logs.0.lock().unwrap()[0].contains("connection refused"),
        "{:?}",
        logs.0.lock().unwrap()
    );

    let closed = budget_endpoint(
        RateLimit::new(Quota::per_hour(1), Key::client_addr())
            .store(Down)
            .on_store_error(FailPolicy::Closed),
    )
    .service();
    let response = closed
        .oneshot(get(Some([192, 0, 2, 1]), &[]))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(header(response.headers(), "retry-after"), ["1"]);
}

/// A store that answers later, as a networked one does: the memory store's decision, after
/// yielding to the runtime once.
struct Remote(Arc<MemoryStore>);

impl RateLimitStore for Remote {
    type Future = Pin<Box<dyn Future<Output = Result<Decision, StoreError>> + Send>>;

    fn check(&self, key: &RateLimitKey<'_>, gcra: Gcra, now: u64) -> Self::Future {
        let (store, key) = (Arc::clone(&self.0), key.clone().into_owned());
        Box::pin(async move {
            tokio::task::yield_now().await;
            store.check(&key, gcra, now).await
        })
    }
}

/// An endpoint behind two limiters, `outer` first. Their two entries in the context have one
/// type: a parameter taken by type cannot tell them apart, so the handler reads neither.
fn behind_two<S: RateLimitStore, T: RateLimitStore>(
    outer: RateLimit<crate::ClientAddrKey, S>,
    inner: RateLimit<crate::ClientAddrKey, T>,
) -> Endpoint {
    default_endpoints_factory()
        .add_middleware(outer.middleware())
        .add_middleware(inner.middleware())
        .get()
        .handler_without_input(async || {
            Ok(Budget {
                remaining: 0,
                checked: true,
            })
        })
}

#[tokio::test]
async fn an_asynchronous_store_and_two_limiters_on_one_endpoint() {
    let endpoint = behind_two(
        RateLimit::new(Quota::per_second(10), Key::client_addr())
            .name("burst")
            .store(Remote(Arc::new(MemoryStore::new())))
            .headers(HeadersOn::EveryResponse),
        RateLimit::new(Quota::per_hour(2), Key::client_addr())
            .name("hourly")
            .headers(HeadersOn::EveryResponse),
    );
    let service = endpoint.service();
    let first = service
        .clone()
        .oneshot(get(Some([192, 0, 2, 1]), &[]))
        .await
        .unwrap();
    // Both items, the inner limiter's first (added as the response passes it).
    assert_eq!(
        header(first.headers(), "ratelimit"),
        ["\"hourly\";r=1;t=1800", "\"burst\";r=9;t=1"]
    );
    assert_eq!(
        header(first.headers(), "ratelimit-policy"),
        ["\"hourly\";q=2;w=3600", "\"burst\";q=10;w=1"]
    );
    service
        .clone()
        .oneshot(get(Some([192, 0, 2, 1]), &[]))
        .await
        .unwrap();
    let denied = service
        .oneshot(get(Some([192, 0, 2, 1]), &[]))
        .await
        .unwrap();
    assert_eq!(denied.status(), StatusCode::TOO_MANY_REQUESTS);
    // The hourly limiter denied; the burst limiter, which granted, adds its item.
    assert_eq!(
        header(denied.headers(), "ratelimit"),
        ["\"hourly\";r=0;t=1800", "\"burst\";r=7;t=1"]
    );
}

/// One limiter with its headers on every response, one with the default: a success carries the
/// first one's items only, the second one's 429 both.
#[tokio::test]
async fn a_limiter_with_headers_on_every_response_beside_one_without() {
    let endpoint = behind_two(
        RateLimit::new(Quota::per_hour(10), Key::client_addr())
            .name("burst")
            .headers(HeadersOn::EveryResponse),
        RateLimit::new(Quota::per_hour(1), Key::client_addr()).name("hourly"),
    );
    let service = endpoint.service();
    let granted = service
        .clone()
        .oneshot(get(Some([192, 0, 2, 1]), &[]))
        .await
        .unwrap();
    assert_eq!(granted.status(), StatusCode::OK);
    let limits = header(granted.headers(), "ratelimit");
    assert_eq!(limits.len(), 1, "{limits:?}");
    assert!(limits[0].starts_with("\"burst\";r=9;"), "{limits:?}");
    assert_eq!(
        header(granted.headers(), "ratelimit-policy"),
        ["\"burst\";q=10;w=3600"]
    );

    let denied = service
        .oneshot(get(Some([192, 0, 2, 1]), &[]))
        .await
        .unwrap();
    assert_eq!(denied.status(), StatusCode::TOO_MANY_REQUESTS);
    let limits = header(denied.headers(), "ratelimit");
    assert_eq!(limits.len(), 2, "{limits:?}");
    assert_eq!(limits[0], "\"hourly\";r=0;t=3600");
    assert!(limits[1].starts_with("\"burst\";r=8;"), "{limits:?}");
    assert_eq!(
        header(denied.headers(), "ratelimit-policy"),
        ["\"hourly\";q=1;w=3600", "\"burst\";q=10;w=3600"]
    );
}

#[test]
fn the_middleware_declares_its_responses() {
    let middleware = RateLimit::new(Quota::per_minute(100), Key::client_addr())
        .headers(HeadersOn::EveryResponse)
        .middleware();
    let errors = middleware.declared_errors();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        errors[0].description,
        "Too many requests: the client's quota of 100 per 60 s is spent"
    );
    let names: Vec<&str> = errors[0].headers.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["retry-after", "ratelimit", "ratelimit-policy"]);
    let success: Vec<&str> = middleware
        .success_headers()
        .iter()
        .map(|h| h.name.as_str())
        .collect();
    assert_eq!(success, ["ratelimit", "ratelimit-policy"]);

    // The default: the headers on the 429 only.
    let quiet = RateLimit::new(Quota::per_minute(100), Key::client_addr())
        .on_store_error(FailPolicy::Closed)
        .keyless(Keyless::Reject(StatusCode::UNAUTHORIZED))
        .middleware();
    assert!(quiet.success_headers().is_empty());
    let statuses: Vec<u16> = quiet
        .declared_errors()
        .iter()
        .map(|e| e.status.as_u16())
        .collect();
    assert_eq!(statuses, [429, 503, 401]);
}

type Service = strata::endpoint::AnyBody<strata::endpoint::EndpointService>;

/// Sends one request from the test client through `service`.
async fn one(service: &Service) -> Response<Body> {
    service
        .clone()
        .oneshot(get(Some([192, 0, 2, 9]), &[]))
        .await
        .unwrap()
}

fn one_header(response: &Response<Body>, name: &str) -> String {
    header(response.headers(), name).join(",")
}

/// The examples of draft-ietf-httpapi-ratelimit-headers-11 (23 May 2026), as this limiter
/// writes them. Its section 4.1.2 defines `t` as the effective window, "the number of
/// seconds within which the client can use no more than the available quota" (draft -09 had
/// "until the quota [...] resets", -10 "until additional quota [...] is made available"):
/// under GCRA, the `r` requests available now are all the client gets until the next one
/// comes back, so `t` is the time until one more request is allowed, rounded up.
#[tokio::test]
async fn the_examples_of_the_draft() {
    let limited = |quota: Quota, name: &str| {
        RateLimit::new(quota, Key::client_addr())
            .name(name)
            .clock(ManualClock::new())
            .headers(HeadersOn::EveryResponse)
    };
    // Section 3.2: `RateLimit-Policy: "default";q=100;w=10`.
    let service =
        budget_endpoint(limited(Quota::new(100, Duration::from_secs(10)), "default")).service();
    assert_eq!(
        one_header(&one(&service).await, "ratelimit-policy"),
        r#""default";q=100;w=10"#
    );
    // Section 3.2: `RateLimit-Policy: "permin";q=50;w=60,"perhr";q=1000;w=3600`: a list
    // split over two fields is the same list (RFC 9651, section 3.1), one per limiter.
    let service = behind_two(
        limited(Quota::per_hour(1000), "perhr"),
        limited(Quota::per_minute(50), "permin"),
    )
    .service();
    assert_eq!(
        one_header(&one(&service).await, "ratelimit-policy"),
        r#""permin";q=50;w=60,"perhr";q=1000;w=3600"#
    );
    // Appendix B.1.1: "The client exhausted its quota for the next 50 seconds":
    // `RateLimit: "default";r=0;t=50`. Here one request per 50 s, after the request.
    let service =
        budget_endpoint(limited(Quota::new(1, Duration::from_secs(50)), "default")).service();
    assert_eq!(
        one_header(&one(&service).await, "ratelimit"),
        r#""default";r=0;t=50"#
    );
    // Appendix B.1.4, a throttled response whose `Retry-After` and `RateLimit` "reference
    // the same moment": `Retry-After` (5 s) and `RateLimit: "default";r=0;t=5`.
    let service =
        budget_endpoint(limited(Quota::new(1, Duration::from_secs(5)), "default")).service();
    one(&service).await;
    let throttled = one(&service).await;
    assert_eq!(throttled.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(one_header(&throttled, "retry-after"), "5");
    assert_eq!(one_header(&throttled, "ratelimit"), r#""default";r=0;t=5"#);
    // Section 4.2: "an available quota of 50 units and an effective window of 30 seconds":
    // `RateLimit: "default";r=50;t=30`. Here two requests a minute, 51 saved up at most.
    let saved = Quota::per_minute(2).with_burst(51);
    let service = budget_endpoint(limited(saved, "default")).service();
    let response = one(&service).await;
    assert_eq!(one_header(&response, "ratelimit"), r#""default";r=50;t=30"#);
    assert_eq!(
        one_header(&response, "ratelimit-policy"),
        r#""default";q=2;w=60"#
    );
}

/// Section 4.1.2 of draft -11, checked on the limiter itself: after a response saying
/// `r;t`, the client gets `r` requests at once and not one more, and one more once `t`
/// seconds have passed; section 6: a `Retry-After` is no earlier than the effective window's
/// end.
#[tokio::test]
async fn r_requests_within_the_effective_window_and_one_more_after_it() {
    for quota in [
        Quota::per_minute(100),
        Quota::per_second(3),
        Quota::new(10, Duration::from_secs(7)).with_burst(4),
        Quota::per_hour(5),
    ] {
        let clock = ManualClock::new();
        let service = budget_endpoint(
            RateLimit::new(quota, Key::client_addr())
                .clock(clock.clone())
                .headers(HeadersOn::EveryResponse),
        )
        .service();
        // Some traffic first, at uneven times.
        for step in 0..3_u64 {
            one(&service).await;
            clock.advance(Duration::from_millis(137 * step));
        }
        let response = one(&service).await;
        assert_eq!(response.status(), StatusCode::OK);
        let value = one_header(&response, "ratelimit");
        let (r, t) = value
            .strip_prefix("\"default\";r=")
            .and_then(|rest| rest.split_once(";t="))
            .unwrap();
        let (r, t): (u32, u64) = (r.parse().unwrap(), t.parse().unwrap());
        for _ in 0..r {
            assert_eq!(
                one(&service).await.status(),
                StatusCode::OK,
                "{quota:?} {value}"
            );
        }
        let refused = one(&service).await;
        assert_eq!(
            refused.status(),
            StatusCode::TOO_MANY_REQUESTS,
            "{quota:?} {value}"
        );
        let retry_after: u64 = one_header(&refused, "retry-after").parse().unwrap();
        let (_, refused_t) = one_header(&refused, "ratelimit")
            .split_once(";t=")
            .map(|(a, b)| (a.to_owned(), b.parse::<u64>().unwrap()))
            .unwrap();
        assert!(
            retry_after >= refused_t,
            "{quota:?}: Retry-After {retry_after} before t={refused_t}"
        );
        clock.advance(Duration::from_secs(t));
        assert_eq!(
            one(&service).await.status(),
            StatusCode::OK,
            "{quota:?} {value}"
        );
    }
}

/// `w` is whole seconds and a structured-field integer (draft -11, section 3.1.3; RFC 9651,
/// section 3.3.1): a window that is not whole seconds is the same rate over whole seconds,
/// never a quota without a window, and a window past 15 digits is capped.
#[tokio::test]
async fn policies_the_draft_cannot_write_as_they_are() {
    let cases = [
        (
            Quota::new(5, Duration::from_millis(1500)),
            r#""default";q=10;w=3"#,
        ),
        (
            Quota::new(1, Duration::from_millis(250)),
            r#""default";q=4;w=1"#,
        ),
        (
            Quota::new(3, Duration::from_micros(1_000_001)),
            r#""default";q=3000000;w=1000001"#,
        ),
        (
            Quota::new(1, Duration::MAX),
            r#""default";q=1;w=999999999999999"#,
        ),
        (
            Quota::new(7, Duration::new(1, 1)),
            r#""default";q=7000000000;w=1000000001"#,
        ),
    ];
    for (quota, expected) in cases {
        let service = budget_endpoint(
            RateLimit::new(quota, Key::client_addr()).headers(HeadersOn::EveryResponse),
        )
        .service();
        assert_eq!(
            one_header(&one(&service).await, "ratelimit-policy"),
            expected,
            "{quota:?}"
        );
    }
}
