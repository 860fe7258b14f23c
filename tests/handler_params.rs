//! Handlers take what they use: the input first, then each further parameter by its type (the
//! logger, the request parts, context entries), in any order; handlers without input; handlers
//! that only fail. The compile errors of the common mistakes are in `tests/ui/handler_*.rs`.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use strata::events::Emitter;
use strata::{Router, Routing};

use http::header::RETRY_AFTER;
use http::{HeaderValue, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use strata::openapi::Documentation;
use strata::prelude::*;
use tower::ServiceExt;

#[test]
fn handler_mistakes_are_compile_errors() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/handler_*.rs");
}

/// Shared state: requests counted by every endpoint of the factory.
#[derive(Clone, Default)]
struct Hits(Arc<AtomicUsize>);

/// What the authentication middleware provides.
struct User(String);

#[strata::model(input)]
struct Note {
    #[garde(length(chars, min = 1))]
    text: String,
}

#[strata::model(output)]
struct Seen {
    line: String,
}

/// The events of the stream below.
#[strata::model(output)]
#[serde(rename_all = "camelCase")]
enum Heard {
    Heard { line: String },
}

async fn call(router: &Router, request: Request<String>) -> (StatusCode, Value) {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap())
}

fn routing(hits: &Hits) -> Routing {
    let user = Middleware::new(|(): (), request: &http::request::Parts, _logger| {
        let name = request
            .headers
            .get("x-user")
            .and_then(|value| value.to_str().ok())
            .unwrap_or("nobody")
            .to_owned();
        async move { Ok(User(name)) }
    });
    let factory = default_endpoints_factory()
        .with_state(hits.clone())
        .add_middleware(user);
    // Any order, each type once; nothing the handler does not use.
    let note = factory.post().handler(
        async |note: Note, request: Parts, user: User, logger: Logger, hits: Hits| {
            logger.debug("noting");
            let count = hits.0.fetch_add(1, Ordering::SeqCst) + 1;
            Ok(Seen {
                line: format!(
                    "{} {} {}: {} #{count}",
                    request.method,
                    request.uri.path(),
                    user.0,
                    note.text
                ),
            })
        },
    );
    let count = factory.get().handler_without_input(async |hits: Hits| {
        Ok(Seen {
            line: hits.0.load(Ordering::SeqCst).to_string(),
        })
    });
    let ping = factory.get().handler_without_input(async || {
        Ok(Seen {
            line: "pong".to_owned(),
        })
    });
    let gone = factory.get().handler_without_input(async |user: User| {
        http_error!(410, "{} asked for what is gone", user.0)
            .with_header(RETRY_AFTER, HeaderValue::from_static("60"))
    });
    // An event stream takes its emitter and the rest by type too.
    let heard = factory.get().event_stream_without_input(
        async |request: Parts, emitter: Emitter<Heard>, user: User, logger: Logger| {
            logger.debug("hearing");
            let line = format!("{} heard at {}", user.0, request.uri.path());
            emitter.emit(Heard::Heard { line }).await?;
            Ok(())
        },
    );
    routing! { "note" => note, "count" => count, "ping" => ping, "gone" => gone, "heard" => heard }
}

#[tokio::test]
async fn parameters_are_taken_by_type() {
    let hits = Hits::default();
    let router = Router::new(
        &routing(&hits),
        &create_config().cors(Cors::Disabled).build(),
    )
    .unwrap();
    let request = Request::post("/note")
        .header("content-type", "application/json")
        .header("x-user", "ada")
        .body(r#"{"text":"hello"}"#.to_owned())
        .unwrap();
    let (status, body) = call(&router, request).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["data"]["line"], "POST /note ada: hello #1");
    // The input is still validated before the handler runs.
    let request = Request::post("/note")
        .header("content-type", "application/json")
        .body(r#"{"text":""}"#.to_owned())
        .unwrap();
    let (status, body) = call(&router, request).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]["message"].as_str().unwrap().contains("text"),
        "{body}"
    );
    assert_eq!(hits.0.load(Ordering::SeqCst), 1);

    let (status, body) = call(&router, Request::get("/count").body(String::new()).unwrap()).await;
    assert_eq!(
        (status, &body["data"]["line"]),
        (StatusCode::OK, &json!("1"))
    );
    let (status, body) = call(&router, Request::get("/ping").body(String::new()).unwrap()).await;
    assert_eq!(
        (status, &body["data"]["line"]),
        (StatusCode::OK, &json!("pong"))
    );
}

#[tokio::test]
async fn an_event_stream_takes_its_emitter_and_the_rest_by_type() {
    let router = Router::new(
        &routing(&Hits::default()),
        &create_config().cors(Cors::Disabled).build(),
    )
    .unwrap();
    let request = Request::get("/heard")
        .header("x-user", "ada")
        .body(String::new())
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let body = String::from_utf8(body.to_vec()).unwrap();
    assert!(
        body.contains("event: heard\ndata: {\"line\":\"ada heard at /heard\"}"),
        "{body}"
    );
}

#[tokio::test]
async fn a_handler_that_only_fails_returns_its_error() {
    let router = Router::new(
        &routing(&Hits::default()),
        &create_config().cors(Cors::Disabled).build(),
    )
    .unwrap();
    let request = Request::get("/gone")
        .header("x-user", "ada")
        .body(String::new())
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::GONE);
    assert_eq!(response.headers()[RETRY_AFTER], "60");
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["error"]["message"], "ada asked for what is gone");
}

#[test]
fn the_document_shows_no_success_for_a_handler_that_only_fails() {
    let config = create_config().cors(Cors::Disabled).build();
    let document = Documentation::new(&routing(&Hits::default()), &config)
        .build()
        .unwrap()
        .to_value();
    let gone = &document["paths"]["/gone"]["get"]["responses"];
    assert!(gone.get("200").is_none(), "{gone}");
    assert!(gone.get("400").is_some(), "the errors stay: {gone}");
    let ping = &document["paths"]["/ping"]["get"]["responses"];
    assert!(ping.get("200").is_some(), "{ping}");
}
