//! A Strata router mounted inside an axum app: it is a plain tower service.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use axum::body::Body;
use garde::Validate;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::Router;
use strata::prelude::*;
use tower::ServiceExt;

#[derive(Deserialize, Validate, JsonSchema)]
struct HelloInput {
    #[garde(length(chars, min = 1))]
    name: Option<String>,
}

#[derive(Serialize, Validate, JsonSchema)]
struct HelloOutput {
    #[garde(skip)]
    greetings: String,
}

async fn body_text(response: axum::response::Response) -> String {
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
async fn strata_routes_inside_an_axum_router() {
    let hello = default_endpoints_factory()
        .get()
        .handler(async |input: HelloInput| {
            Ok(HelloOutput {
                greetings: format!("Hello, {}", input.name.as_deref().unwrap_or("World")),
            })
        });
    let strata = Router::new(
        &routing! { "v1" => { "hello" => hello } },
        &create_config().cors(Cors::Enabled).build(),
    )
    .unwrap();
    let app = axum::Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        .fallback_service(strata);

    let response = app
        .clone()
        .oneshot(Request::get("/health").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(body_text(response).await, "ok");

    let request = Request::get("/v1/hello?name=axum")
        .body(Body::empty())
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    assert_eq!(
        body_text(response).await,
        r#"{"status":"success","data":{"greetings":"Hello, axum"}}"#
    );

    let response = app
        .oneshot(Request::get("/nowhere").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        body_text(response).await,
        r#"{"status":"error","error":{"message":"Can not GET /nowhere"}}"#
    );
}
