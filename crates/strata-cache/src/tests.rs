//! Through the real stages: endpoints of the facade's factory, called with `oneshot`.

use std::future::{Ready, ready};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use strata::{Endpoint, Router};

use garde::Validate;
use http::header::{ACCEPT_LANGUAGE, CACHE_CONTROL, ORIGIN, VARY};
use http::request::Parts;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use schemars::JsonSchema;
use serde::Serialize;
use strata::cookies::{CookieOptions, Cookies};
use strata::prelude::*;
use strata::{Body, Reply};
use strata_core::{ApiError, Logger};
use strata_middleware::{Amend, AmendResponse, Middleware, MiddlewareHandler, outcome_headers};
use tower::ServiceExt;

use crate::{Cache, CacheControl, Caching, ETag};

const DATE: &str = "Sun, 06 Nov 1994 08:49:37 GMT";
const MODIFIED: u64 = 784_111_777;

/// An output the output check refuses (`n` at most 10): a response that went through the
/// output stage is a 500.
#[derive(Serialize, Validate, JsonSchema)]
struct Checked {
    #[garde(range(max = 10))]
    n: u32,
}

fn policy() -> CacheControl {
    CacheControl::builder()
        .public()
        .max_age(Duration::from_secs(60))
        .build()
        .unwrap()
}

fn caching() -> Caching {
    Caching::new(policy()).vary([ACCEPT_LANGUAGE])
}

fn modified() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(MODIFIED)
}

async fn call(
    endpoint: &Endpoint,
    method: Method,
    headers: &[(&str, &str)],
) -> (StatusCode, HeaderMap, String) {
    let mut request = Request::builder().method(method).uri("/thing");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(String::new()).unwrap();
    let response = endpoint.service().oneshot(request).await.unwrap();
    parts(response).await
}

async fn parts(response: Response<Body>) -> (StatusCode, HeaderMap, String) {
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    (
        parts.status,
        parts.headers,
        String::from_utf8(bytes.to_vec()).unwrap(),
    )
}

/// A GET endpoint that sets its tag first, then does the counted "expensive part" and returns
/// `n` (over 10 fails the output check).
fn early(runs: &Arc<AtomicUsize>, n: u32) -> Endpoint {
    let runs = Arc::clone(runs);
    default_endpoints_factory()
        .add_middleware(caching().middleware())
        .get()
        .handler_without_input(move |cache: Cache| {
            let runs = Arc::clone(&runs);
            async move {
                cache.etag(ETag::strong("v1")?)?;
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(Checked { n })
            }
        })
}

#[tokio::test]
async fn a_success_carries_the_policy_the_validators_and_vary() {
    let runs = Arc::new(AtomicUsize::new(0));
    let (status, headers, body) = call(&early(&runs, 1), Method::GET, &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(headers["cache-control"], "max-age=60, public");
    assert_eq!(headers["etag"], "\"v1\"");
    assert_eq!(headers["vary"], "accept-language");
    assert!(!headers.contains_key("last-modified"));
    assert_eq!(body, r#"{"status":"success","data":{"n":1}}"#);
}

#[tokio::test]
async fn an_early_match_answers_304_before_the_expensive_part_and_the_output_check() {
    let runs = Arc::new(AtomicUsize::new(0));
    // Its output fails the output check: a full response is a 500...
    let endpoint = early(&runs, 99);
    let (status, headers, _) = call(&endpoint, Method::GET, &[]).await;
    assert_eq!(status, 500);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // ...with no-store and Vary, never the validators.
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["vary"], "accept-language");
    assert!(!headers.contains_key("etag"));
    // A matching If-None-Match stops at `cache.etag(..)?`: neither ran.
    for inm in ["\"v1\"", "W/\"v1\"", "\"v0\", \"v1\"", "*"] {
        let (status, headers, body) = call(&endpoint, Method::GET, &[("if-none-match", inm)]).await;
        assert_eq!(status, 304, "{inm}: {body}");
        assert_eq!(body, "");
        assert_eq!(headers["etag"], "\"v1\"");
        assert_eq!(headers["cache-control"], "max-age=60, public");
        assert_eq!(headers["vary"], "accept-language");
        assert!(!headers.contains_key("content-type"), "{headers:?}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // Not matching: the handler goes on.
    let (status, ..) = call(&endpoint, Method::GET, &[("if-none-match", "\"v2\"")]).await;
    assert_eq!(status, 500);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn validators_set_late_still_give_a_304_after_the_handler_ran() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let endpoint = default_endpoints_factory()
        .add_middleware(caching().middleware())
        .get()
        .handler_without_input(move |cache: Cache| {
            let runs = Arc::clone(&counted);
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                // The error is ignored: the middleware decides once the response is there.
                let _ = cache.etag(ETag::weak("late")?);
                cache.last_modified(modified()).ok();
                Ok(Checked { n: 1 })
            }
        });
    let (status, headers, body) =
        call(&endpoint, Method::GET, &[("if-none-match", "W/\"late\"")]).await;
    assert_eq!(status, 304);
    assert_eq!(body, "");
    assert_eq!(headers["etag"], "W/\"late\"");
    // With an ETag, the 304 leaves Last-Modified out (RFC 9110 §15.4.5).
    assert!(!headers.contains_key("last-modified"));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let (status, headers, _) = call(&endpoint, Method::GET, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(headers["last-modified"], DATE);
}

fn dated(runs: &Arc<AtomicUsize>) -> Endpoint {
    let runs = Arc::clone(runs);
    default_endpoints_factory()
        .add_middleware(caching().middleware())
        .endpoint()
        .methods([Method::GET, Method::POST])
        .handler_without_input(move |cache: Cache| {
            let runs = Arc::clone(&runs);
            async move {
                cache.last_modified(modified() + Duration::from_millis(400))?;
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(Checked { n: 2 })
            }
        })
}

#[tokio::test]
async fn if_modified_since_counts_only_alone_and_only_when_it_is_a_date() {
    let runs = Arc::new(AtomicUsize::new(0));
    let endpoint = dated(&runs);
    let (status, headers, _) = call(&endpoint, Method::GET, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(headers["last-modified"], DATE);
    // The same second (the 0.4 s an HTTP date cannot say) or later: not modified.
    for since in [
        DATE,
        "Mon, 07 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
    ] {
        let (status, headers, _) =
            call(&endpoint, Method::GET, &[("if-modified-since", since)]).await;
        assert_eq!(status, 304, "{since}");
        // No ETag: Last-Modified is what the cache goes by.
        assert_eq!(headers["last-modified"], DATE);
        assert_eq!(headers["cache-control"], "max-age=60, public");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let cases: [&[(&str, &str)]; 4] = [
        &[("if-modified-since", "Sat, 05 Nov 1994 08:49:37 GMT")],
        &[("if-modified-since", "not a date")],
        // If-None-Match is there (with no tag to match): If-Modified-Since is ignored.
        &[("if-none-match", "\"other\""), ("if-modified-since", DATE)],
        &[("if-modified-since", DATE), ("if-modified-since", DATE)],
    ];
    for headers in cases {
        let (status, ..) = call(&endpoint, Method::GET, headers).await;
        assert_eq!(status, 200, "{headers:?}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn other_methods_keep_their_preconditions_to_themselves() {
    let runs = Arc::new(AtomicUsize::new(0));
    let endpoint = dated(&runs);
    let (status, headers, _) = call(
        &endpoint,
        Method::POST,
        &[("if-modified-since", DATE), ("if-none-match", "*")],
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(headers["last-modified"], DATE);
    assert_eq!(headers["cache-control"], "max-age=60, public");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn if_match_failing_on_a_get_is_a_412_with_the_error_headers() {
    let runs = Arc::new(AtomicUsize::new(0));
    let endpoint = early(&runs, 1);
    let (status, headers, body) = call(
        &endpoint,
        Method::GET,
        &[("if-match", "\"v0\""), ("if-none-match", "\"v1\"")],
    )
    .await;
    assert_eq!(status, 412, "{body}");
    assert_eq!(headers["cache-control"], "no-store");
    assert!(body.contains("Precondition Failed"), "{body}");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let (status, ..) = call(&endpoint, Method::GET, &[("if-match", "\"v1\"")]).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn the_handler_may_choose_the_policy_of_its_response() {
    let endpoint = default_endpoints_factory()
        .add_middleware(caching().middleware())
        .get()
        .handler_without_input(async |cache: Cache| {
            assert_eq!(cache.policy().max_age(), Some(60));
            cache.set_policy(CacheControl::no_cache());
            cache.etag(ETag::strong("p")?)?;
            Ok(Checked { n: 3 })
        });
    let (status, headers, _) = call(&endpoint, Method::GET, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(headers["cache-control"], "no-cache");
    // The early 304 too: the policy was chosen before the tag.
    let (status, headers, _) = call(&endpoint, Method::GET, &[("if-none-match", "\"p\"")]).await;
    assert_eq!(status, 304);
    assert_eq!(headers["cache-control"], "no-cache");
}

#[tokio::test]
async fn headers_the_response_has_are_kept_and_vary_is_merged() {
    let endpoint = default_endpoints_factory()
        .add_middleware(caching().vary([ORIGIN]).middleware())
        .get()
        .handler_without_input(async || {
            Ok(Reply::new(Checked { n: 4 })
                .header(VARY, HeaderValue::from_static("Accept-Encoding, origin"))
                .header(
                    CACHE_CONTROL,
                    HeaderValue::from_static("private, max-age=5"),
                ))
        });
    let (status, headers, _) = call(&endpoint, Method::GET, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(headers["cache-control"], "private, max-age=5");
    assert_eq!(headers["vary"], "Accept-Encoding, origin, accept-language");
    // Nothing set: no validators, no conditional evaluation.
    let (status, headers, _) = call(&endpoint, Method::GET, &[("if-none-match", "*")]).await;
    assert_eq!(status, 200);
    assert!(!headers.contains_key("etag"));
}

#[tokio::test]
async fn errors_get_no_store_or_the_error_policy() {
    let failing = |caching: Caching| {
        default_endpoints_factory()
            .add_middleware(caching.middleware())
            .get()
            .handler_without_input(async |cache: Cache| {
                cache.etag(ETag::strong("e")?)?;
                Err::<Checked, _>(http_error!(404, "No such thing"))
            })
    };
    let (status, headers, _) = call(&failing(caching()), Method::GET, &[]).await;
    assert_eq!(status, 404);
    assert_eq!(headers["cache-control"], "no-store");
    assert!(!headers.contains_key("etag"));
    let short = CacheControl::builder()
        .max_age(Duration::from_secs(5))
        .build()
        .unwrap();
    let (_, headers, _) = call(
        &failing(caching().error_policy(Some(short))),
        Method::GET,
        &[],
    )
    .await;
    assert_eq!(headers["cache-control"], "max-age=5");
    let (_, headers, _) = call(&failing(caching().error_policy(None)), Method::GET, &[]).await;
    assert!(!headers.contains_key("cache-control"));
    assert_eq!(headers["vary"], "accept-language");
}

#[tokio::test]
async fn head_gets_the_304_and_the_headers_of_get_through_the_router() {
    let runs = Arc::new(AtomicUsize::new(0));
    let routing = routing! { "thing" => early(&runs, 1) };
    let router = Router::new(&routing, &create_config().cors(Cors::Disabled).build()).unwrap();
    let head = |inm: Option<&str>| {
        let mut request = Request::head("/thing");
        if let Some(inm) = inm {
            request = request.header("if-none-match", inm);
        }
        router.clone().oneshot(request.body(String::new()).unwrap())
    };
    let (status, headers, body) = parts(head(None).await.unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!(body, "");
    assert_eq!(headers["etag"], "\"v1\"");
    assert_eq!(headers["cache-control"], "max-age=60, public");
    let (status, headers, body) = parts(head(Some("\"v1\"")).await.unwrap()).await;
    assert_eq!(status, 304);
    assert_eq!(body, "");
    assert_eq!(headers["etag"], "\"v1\"");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn malformed_conditions_never_panic_and_get_the_full_response() {
    let runs = Arc::new(AtomicUsize::new(0));
    let endpoint = early(&runs, 1);
    let huge = "\"x\", ".repeat(10_000) + "\"v1\"";
    let garbage: [&[(&str, &str)]; 6] = [
        &[("if-none-match", "v1")],
        &[("if-none-match", "\"v1")],
        &[("if-none-match", "W/ \"v1\"")],
        &[("if-none-match", ",,,")],
        &[(
            "if-modified-since",
            "Sun, 06 Nov 1994 08:49:37 GMT, garbage",
        )],
        &[("if-unmodified-since", "Sun, 06 Nov 99999 08:49:37 GMT")],
    ];
    for headers in garbage {
        let (status, ..) = call(&endpoint, Method::GET, headers).await;
        assert_eq!(status, 200, "{headers:?}");
    }
    let (status, ..) = call(&endpoint, Method::GET, &[("if-none-match", &huge)]).await;
    assert_eq!(status, 304);
    let bytes = Request::get("/thing")
        .header(
            "if-none-match",
            HeaderValue::from_bytes(b"\"v\xff1\"").unwrap(),
        )
        .body(String::new())
        .unwrap();
    let (status, ..) = parts(endpoint.service().oneshot(bytes).await.unwrap()).await;
    assert_eq!(status, 200);
}

/// A middleware attached after `Caching`: it records the outcome it sees (`Ok(status)` or
/// `Err(status)`) and adds a header to it, as a cookie or rate-limit middleware would.
#[derive(Clone, Default)]
struct Observer(Arc<Mutex<Vec<Result<u16, u16>>>>);

impl<C> MiddlewareHandler<(), C> for Observer {
    type Output = Observer;
    type Future = Ready<Result<Observer, ApiError>>;
    type Amends = Observer;

    fn call(&self, (): (), _request: &Parts, _ctx: &C, _logger: &Logger) -> Self::Future {
        ready(Ok(self.clone()))
    }

    fn amends(output: &Observer) -> Observer {
        output.clone()
    }
}

impl AmendResponse for Observer {
    fn amend<R: Amend>(self, outcome: &mut Result<R, ApiError>) {
        let seen = match outcome {
            Ok(response) => Ok(response.status().as_u16()),
            Err(error) => Err(error.status().as_u16()),
        };
        self.0.lock().unwrap().push(seen);
        outcome_headers(outcome).insert("x-observed", HeaderValue::from_static("yes"));
    }
}

#[tokio::test]
async fn a_middleware_after_caching_sees_the_304_as_a_success() {
    let observer = Observer::default();
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let endpoint = default_endpoints_factory()
        .add_middleware(caching().middleware())
        .add_middleware(Middleware::custom(observer.clone()))
        .get()
        .handler_without_input(move |cache: Cache| {
            let runs = Arc::clone(&counted);
            async move {
                cache.etag(ETag::strong("v1")?)?;
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(Checked { n: 1 })
            }
        });
    let (status, headers, body) =
        call(&endpoint, Method::GET, &[("if-none-match", "\"v1\"")]).await;
    assert_eq!(status, 304, "{body}");
    assert_eq!(body, "");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "stopped at `cache.etag(..)?`"
    );
    // The later middleware saw a success with the 304's status, never a 500.
    assert_eq!(*observer.0.lock().unwrap(), [Ok(304)]);
    // The 304 carries the cache's headers and what the later middleware added.
    assert_eq!(headers["etag"], "\"v1\"");
    assert_eq!(headers["cache-control"], "max-age=60, public");
    assert_eq!(headers["vary"], "accept-language");
    assert_eq!(headers["x-observed"], "yes");
    assert!(!headers.contains_key("content-type"), "{headers:?}");
    // A full response and a real error are seen as they are.
    let (status, ..) = call(&endpoint, Method::GET, &[]).await;
    assert_eq!(status, 200);
    let (status, ..) = call(&endpoint, Method::GET, &[("if-match", "\"v0\"")]).await;
    assert_eq!(status, 412);
    assert_eq!(*observer.0.lock().unwrap(), [Ok(304), Ok(200), Err(412)]);
}

#[tokio::test]
async fn a_shared_policy_on_a_response_that_sets_a_cookie_is_made_private() {
    let shared = CacheControl::builder()
        .public()
        .max_age(Duration::from_secs(60))
        .s_maxage(Duration::from_secs(600))
        .build()
        .unwrap();
    let endpoint = default_endpoints_factory()
        .add_middleware(Caching::new(shared.clone()).middleware())
        .add_middleware(strata::cookies::cookies())
        .get()
        .handler_without_input(async |cache: Cache, cookies: Cookies| {
            cookies.set("session", "s1", &CookieOptions::new())?;
            cache.etag(ETag::strong("c1")?)?;
            Ok(Checked { n: 1 })
        });
    // The success and the early 304 both carry the cookie: private, without s-maxage.
    for (inm, expected) in [(None, 200), (Some("\"c1\""), 304)] {
        let headers: Vec<(&str, &str)> = inm.map(|v| ("if-none-match", v)).into_iter().collect();
        let (status, headers, body) = call(&endpoint, Method::GET, &headers).await;
        assert_eq!(status, expected, "{body}");
        assert!(headers.contains_key("set-cookie"), "{headers:?}");
        assert_eq!(headers["cache-control"], "max-age=60, private");
    }
    // A policy the handler chooses is made private too, and an error's policy.
    let chosen = default_endpoints_factory()
        .add_middleware(caching().error_policy(Some(shared)).middleware())
        .get()
        .handler_without_input(async |cache: Cache| {
            cache.set_policy(CacheControl::no_cache());
            Ok(Reply::new(Checked { n: 1 })
                .header(http::header::SET_COOKIE, HeaderValue::from_static("a=1")))
        });
    let (status, headers, _) = call(&chosen, Method::GET, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(headers["cache-control"], "no-cache, private");
    let failing = default_endpoints_factory()
        .add_middleware(caching().error_policy(Some(policy())).middleware())
        .add_middleware(strata::cookies::cookies())
        .get()
        .handler_without_input(async |cookies: Cookies| {
            cookies.set("session", "s2", &CookieOptions::new())?;
            Err::<Checked, _>(http_error!(409, "Conflict"))
        });
    let (status, headers, _) = call(&failing, Method::GET, &[]).await;
    assert_eq!(status, 409);
    assert_eq!(headers["cache-control"], "max-age=60, private");
    // Without a cookie, the policy as it is.
    let (_, headers, _) = call(&early(&Arc::new(AtomicUsize::new(0)), 1), Method::GET, &[]).await;
    assert_eq!(headers["cache-control"], "max-age=60, public");
}
