//! Reading a context entry that no middleware provides is a compile error; shared state is an
//! entry like the others, shared by every endpoint of a factory.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

#[test]
fn context_entries_are_checked_at_compile_time() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/context_entry_provided.rs");
    cases.compile_fail("tests/ui/context_entry_not_provided.rs");
    cases.compile_fail("tests/ui/context_entry_of_other_type.rs");
    cases.compile_fail("tests/ui/state_not_given.rs");
    cases.compile_fail("tests/ui/middleware_borrowed_request.rs");
}

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use strata::core::ApiResult;
use strata::{Ctx, Router};

use garde::Validate;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use schemars::JsonSchema;
use serde::Serialize;
use strata::core::ctx::Has;
use strata::prelude::*;
use tower::ServiceExt;

/// Shared state: a counter every endpoint of the factory increments.
#[derive(Clone, Default)]
struct Hits(Arc<AtomicUsize>);

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Count {
    hits: usize,
    user: String,
}

struct User(String);

#[tokio::test]
async fn state_reaches_every_handler_and_later_middleware() {
    let hits = Hits::default();
    // Middleware added after the state reads it from the context, as handlers do.
    let who = Middleware::with_context(|(): (), _request, ctx: &Ctx![Hits], _logger| {
        let hits: &Hits = ctx.get();
        let seen = hits.0.load(Ordering::SeqCst);
        async move { Ok(User(format!("visitor {seen}"))) }
    });
    let factory = default_endpoints_factory()
        .with_state(hits.clone())
        .add_middleware(who);
    let count = |hits: Hits, user: User| Count {
        hits: hits.0.fetch_add(1, Ordering::SeqCst) + 1,
        user: user.0,
    };
    let first = factory
        .get()
        .handler_without_input(move |hits: Hits, user: User| async move { Ok(count(hits, user)) });
    let second = factory
        .post()
        .handler_without_input(move |hits: Hits, user: User| async move { Ok(count(hits, user)) });
    let routing = routing! { "a" => first, "b" => second };
    let router = Router::new(&routing, &create_config().cors(Cors::Enabled).build()).unwrap();
    for (method, expected) in [("GET", 1), ("POST", 2), ("GET", 3)] {
        let request = Request::builder()
            .method(method)
            .uri(if method == "GET" {
                "/a?ignored=1"
            } else {
                "/b"
            })
            .body(String::new())
            .unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["data"]["hits"], expected);
        assert_eq!(json["data"]["user"], format!("visitor {}", expected - 1));
    }
    // The one counter behind every clone.
    assert_eq!(hits.0.load(Ordering::SeqCst), 3);
}

/// A handler that only fails names its output with an async closure's return type (no
/// `Err::<T, _>`); the output still describes the positive response.
#[tokio::test]
async fn an_error_only_handler_needs_no_turbofish() {
    let refuse = default_endpoints_factory()
        .with_state(Hits::default())
        .get()
        .handler_without_input(async |hits: Hits| -> ApiResult<Count> {
            let seen = hits.0.load(Ordering::SeqCst);
            Err(http_error!(429, "Slow down after {seen} hits"))
        });
    let config = create_config().cors(Cors::Enabled).build();
    let routing = routing! { "refuse" => refuse };
    let document = strata::openapi::Documentation::new(&routing, &config)
        .build()
        .unwrap()
        .to_value();
    let positive = &document["paths"]["/refuse"]["get"]["responses"]["200"];
    let schema = positive["content"]["application/json"]["schema"].to_string();
    assert!(
        schema.contains("Count") || schema.contains("hits"),
        "{schema}"
    );

    let router = Router::new(&routing, &config).unwrap();
    let request = Request::get("/refuse").body(String::new()).unwrap();
    let response = router.oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(json["error"]["message"], "Slow down after 0 hits");
}
