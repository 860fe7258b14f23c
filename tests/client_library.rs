//! The library example walked by the typed Rust client twice, in memory over the router and
//! over a real socket, with the operations the server implements; the auth example called with
//! and without its credentials; the events example's countdown subscribed to, and resumed with
//! `Last-Event-ID`; the webhook example's signed delivery, its signature a header field.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use http::{HeaderName, HeaderValue, StatusCode};
use serde::{Deserialize, Serialize};
use strata::Router;
use strata::client::{Client, Operation};
use strata::prelude::*;

#[allow(dead_code)]
#[path = "../examples/client.rs"]
mod client_example;

#[allow(dead_code)]
#[path = "../examples/auth.rs"]
mod auth;

#[allow(dead_code)]
#[path = "../examples/events.rs"]
mod events;

#[allow(dead_code)]
#[path = "../examples/webhook.rs"]
mod webhook;

use client_example::library;

/// The steps every transport must take alike.
fn check(steps: &[String]) {
    let expected_prefixes = [
        "created Frankenstein (8) at /v1/books/8",
        "not twice: The library has \"Frankenstein\" already (id 8)",
        "read Frankenstein",
        "5 novels: Middlemarch, Bleak House, Persuasion, Beloved, Frankenstein",
        "the feed: 8 books in 3 pages",
        "QUERY search found Frankenstein",
        "uploaded cover.png (8 bytes)",
        "refused: the server answered 400 Bad Request: title: length is lower than 1",
        "deleted Frankenstein, then: the server answered 404 Not Found: No book has the id 8",
    ];
    assert_eq!(steps.len(), expected_prefixes.len(), "{steps:#?}");
    for (step, prefix) in steps.iter().zip(expected_prefixes) {
        assert!(step.starts_with(prefix), "{step:?} is not {prefix:?}");
    }
}

fn covers() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("strata-client-library-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn the_library_walk_in_memory_over_the_router() {
    let config = library::library_config().build();
    let router = Router::new(&library::library_routing(covers()), &config).unwrap();
    let steps = client_example::walk(&Client::new(router)).await.unwrap();
    check(&steps);
}

#[tokio::test]
async fn the_library_walk_over_a_real_socket() {
    let config = library::library_config()
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    let server = create_server(&config, &library::library_routing(covers()))
        .await
        .unwrap();
    let strata::server::LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    let client = client_example::network_client(&format!("http://{addr}")).unwrap();
    let steps = client_example::walk(&client).await.unwrap();
    check(&steps);
    server.shutdown().await;
}

/// The create's three outcomes, each read back as its variant and seen on the wire: `201` with
/// the book and its `Location`, `409` naming the book of that title (in any case), and, once
/// the library holds 100 books, `403` (one status, one variant: `409` is the duplicate's).
#[tokio::test]
async fn the_library_s_create_answers_each_outcome_typed() {
    use http_body_util::BodyExt;
    use library::api::{CREATE_BOOK, CreateBook, Genre, NewBook};
    use serde_json::{Value, json};
    use tower::ServiceExt;

    let config = library::library_config().build();
    let router = Router::new(&library::library_routing(covers()), &config).unwrap();
    let client = Client::new(router.clone());
    let poem = |title: &str| NewBook {
        title: title.to_owned(),
        genre: Genre::Poetry,
    };
    let raw = |title: &str| {
        let body = json!({ "title": title, "genre": "poetry" }).to_string();
        let request = http::Request::post("/v1/books")
            .header("content-type", "application/json")
            .body(http_body_util::Full::new(bytes::Bytes::from(body)))
            .unwrap();
        let router = router.clone();
        async move {
            let response = router.oneshot(request).await.unwrap();
            let (parts, body) = response.into_parts();
            let body = body.collect().await.unwrap().to_bytes();
            let json: Value = serde_json::from_slice(&body).unwrap();
            (parts.status, parts.headers.get("location").cloned(), json)
        }
    };

    // On the wire: the default envelope around each body, the header where declared.
    let (status, location, body) = raw("Sonnet 8").await;
    assert_eq!(
        (status, location),
        (
            StatusCode::CREATED,
            Some(HeaderValue::from_static("/v1/books/8"))
        )
    );
    assert_eq!(
        body,
        json!({ "status": "success", "data": { "id": 8, "title": "Sonnet 8", "genre": "poetry" } })
    );
    let (status, location, body) = raw("SONNET 8").await;
    assert_eq!((status, location), (StatusCode::CONFLICT, None));
    assert_eq!(
        body,
        json!({ "status": "error", "error": { "existingId": 8, "message": "The library has \"Sonnet 8\" already (id 8)" } })
    );

    // Seven books to start with and one added: 92 more fill it.
    for n in 9..=100 {
        match client
            .call(&CREATE_BOOK, poem(&format!("Sonnet {n}")))
            .await
            .unwrap()
        {
            CreateBook::Created { book, location } => {
                assert_eq!((book.id, location), (n, format!("/v1/books/{n}")));
            }
            other => panic!("book {n}: {other:?}"),
        }
    }
    let full = client.call(&CREATE_BOOK, poem("Sonnet 101")).await.unwrap();
    assert!(matches!(full, CreateBook::Full), "{full:?}");
    // Full or not, a title the library has is named as a duplicate (the more useful answer).
    let again = client.call(&CREATE_BOOK, poem("ariel")).await.unwrap();
    let CreateBook::Duplicate(duplicate) = again else {
        panic!("{again:?}")
    };
    assert_eq!(duplicate.existing_id, 6);
    assert_eq!(
        duplicate.message,
        "The library has \"Ariel\" already (id 6)"
    );
    // The unit variant is an ordinary error: its message is the variant's doc line.
    let (status, _, body) = raw("Sonnet 102").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        body,
        json!({ "status": "error", "error": { "message": "The library is full: 100 books at most." } })
    );
}

/// What the client sends to the auth example's profile: the account key (the middleware's
/// input) and the detail (the endpoint's).
#[derive(Serialize)]
struct ProfileQuery {
    key: &'static str,
    detail: Option<u8>,
}

/// What it reads back.
#[derive(Debug, Deserialize, PartialEq)]
struct Profile {
    name: String,
    detail: u8,
}

/// A client's own declaration of an endpoint that implements none: any endpoint answers a
/// declaration that matches it.
const PROFILE: Operation<ProfileQuery, Profile> = Operation::get("/v1/profile");

#[tokio::test]
async fn the_auth_example_with_and_without_its_credentials() {
    let config = create_config().cors(Cors::Disabled).build();
    let router = Router::new(&auth::auth_routing(), &config).unwrap();
    let token = HeaderName::from_static("token");
    let client = Client::new(router);
    let signed_in = client
        .clone()
        .header(token.clone(), HeaderValue::from_static("456"));
    let profile = signed_in
        .call(
            &PROFILE,
            ProfileQuery {
                key: "123",
                detail: Some(2),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        profile,
        Profile {
            name: "Jane".into(),
            detail: 2
        }
    );
    // Without the session token: the middleware's 401.
    let error = client
        .call(
            &PROFILE,
            ProfileQuery {
                key: "123",
                detail: None,
            },
        )
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::UNAUTHORIZED), "{error}");
    // A wrong key, with the token on the call: 401 with the middleware's message.
    let error = client
        .call(
            &PROFILE,
            ProfileQuery {
                key: "999",
                detail: None,
            },
        )
        .header(token, HeaderValue::from_static("456"))
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::UNAUTHORIZED));
    assert_eq!(error.message(), Some("Invalid key"));
}

/// Every event of a subscription until the server ends the stream.
async fn all<T>(mut subscription: strata::client::Subscription<T>) -> Vec<T>
where
    T: serde::de::DeserializeOwned,
{
    use futures_core::Stream;
    let mut events = Vec::new();
    while let Some(event) =
        std::future::poll_fn(|cx| std::pin::Pin::new(&mut subscription).poll_next(cx)).await
    {
        events.push(event.unwrap());
    }
    events
}

#[tokio::test]
async fn the_events_example_s_countdown_typed_and_resumed() {
    use events::{COUNTDOWN, Countdown, CountdownInput};
    let config = create_config().cors(Cors::Disabled).build();
    let router = Router::new(&events::events_routing(), &config).unwrap();
    let client = Client::new(router);
    let input = || CountdownInput {
        from: 3,
        every_ms: Some(1),
    };
    let countdown = all(client.subscribe(&COUNTDOWN, input())).await;
    assert_eq!(
        countdown,
        [
            Countdown::Tick { left: 3 },
            Countdown::Tick { left: 2 },
            Countdown::Tick { left: 1 },
            Countdown::Liftoff,
        ]
    );
    // A client that got tick 2 before its connection dropped resumes after it.
    let resumed = all(client.subscribe(&COUNTDOWN, input()).resume_from("2")).await;
    assert_eq!(resumed, [Countdown::Tick { left: 1 }, Countdown::Liftoff]);
}

/// A client's declaration of the webhook example's delivery: the raw body, the topic in the
/// path, the signature a header (the server's POST sources include headers).
#[derive(Serialize)]
struct Delivery {
    raw: strata::RawBody,
    topic: String,
    #[serde(rename = "x-signature")]
    signature: String,
}

#[derive(Debug, Deserialize, PartialEq)]
struct Received {
    topic: String,
    bytes: usize,
    event: Option<String>,
}

const DELIVER: Operation<Delivery, Received> = Operation::post("/hooks/:topic");

#[tokio::test]
async fn the_webhook_example_s_delivery_with_its_signature_in_a_header() {
    let config = webhook::webhook_config().build();
    let router = Router::new(&webhook::webhook_routing(), &config).unwrap();
    // The server's sources: the client places `x-signature` in a header, as the server reads it.
    let client = Client::new(router).input_sources(config.pipeline.input_sources.clone());
    let body: &[u8] = b"{ \"type\": \"order.paid\" }";
    let delivery = |signature: String| Delivery {
        raw: strata::RawBody::new("application/json", body),
        topic: "orders".into(),
        signature,
    };
    let received = client
        .call(&DELIVER, delivery(webhook::signature(body)))
        .await
        .unwrap();
    assert_eq!(
        received,
        Received {
            topic: "orders".into(),
            bytes: body.len(),
            event: Some("order.paid".into()),
        }
    );
    let forged = client
        .call(&DELIVER, delivery("sha256=00".into()))
        .await
        .unwrap_err();
    assert_eq!(forged.status(), Some(StatusCode::UNAUTHORIZED));
    assert_eq!(forged.message(), Some("Invalid signature"));
}
