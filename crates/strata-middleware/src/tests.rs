use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use garde::Validate;
use http::Request;
use schemars::JsonSchema;
use serde::Deserialize;
use strata_core::{ApiError, Get, HCons, HNil, http_error};
use strata_input::{Input, Staged};
use tower::{ServiceBuilder, ServiceExt, service_fn};

use crate::{Middleware, MiddlewareLayer};

#[derive(Debug, Deserialize, Validate, JsonSchema)]
struct KeyInput {
    #[garde(length(min = 3))]
    key: String,
}

#[derive(Debug, Clone, PartialEq)]
struct User(String);

#[derive(Debug, Clone, PartialEq)]
struct Role(&'static str);

fn staged(key: &str) -> Request<Staged> {
    let mut input = Input::new();
    input.insert("key", key.into());
    Request::new(Staged { input, ctx: HNil })
}

fn auth() -> Middleware<KeyInput, impl crate::MiddlewareHandler<KeyInput, HNil, Output = User>> {
    Middleware::new(|input: KeyInput, _request, logger| {
        logger.debug("checking key");
        async move {
            if input.key == "secret" {
                Ok(User("ada".into()))
            } else {
                Err(http_error!(401, "Invalid key"))
            }
        }
    })
}

#[tokio::test]
async fn grants_and_adds_to_context_in_order() {
    let role = Middleware::with_context(|(): (), _request, ctx: &HCons<User, HNil>, _logger| {
        let admin = ctx.head.0 == "ada";
        async move { Ok(Role(if admin { "admin" } else { "user" })) }
    });
    let service = ServiceBuilder::new()
        .layer(MiddlewareLayer::new(auth()))
        .layer(MiddlewareLayer::new(role))
        .service(service_fn(
            |request: Request<Staged<HCons<Role, HCons<User, HNil>>>>| async move {
                let ctx = request.into_body().ctx;
                let user: &User = ctx.get();
                let role: &Role = ctx.get();
                Ok::<_, ApiError>((user.clone(), role.clone()))
            },
        ));
    let (user, role) = service.oneshot(staged("secret")).await.unwrap();
    assert_eq!(user, User("ada".into()));
    assert_eq!(role, Role("admin"));
}

#[tokio::test]
async fn denial_stops_processing() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let service = ServiceBuilder::new()
        .layer(MiddlewareLayer::new(auth()))
        .service(service_fn(move |_: Request<Staged<HCons<User, HNil>>>| {
            counted.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, ApiError>(()) }
        }));
    let error = service.oneshot(staged("wrong")).await.unwrap_err();
    assert_eq!(error.status(), 401);
    assert_eq!(error.message(), "Invalid key");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn own_input_is_validated_first() {
    let service = ServiceBuilder::new()
        .layer(MiddlewareLayer::new(auth()))
        .service(service_fn(|_: Request<Staged<HCons<User, HNil>>>| async {
            Ok::<_, ApiError>(())
        }));
    let error = service.clone().oneshot(staged("ab")).await.unwrap_err();
    assert_eq!(error.status(), 400);
    assert_eq!(error.message(), "key: length is lower than 3");
    let error = service
        .oneshot(Request::new(Staged::default()))
        .await
        .unwrap_err();
    assert_eq!(error.message(), "key: required");
}

#[tokio::test]
async fn reads_headers_from_request_parts() {
    let header = Middleware::new(|(): (), request, _logger| {
        let token = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        async move { token.map(User).ok_or_else(|| http_error!(401, "No token")) }
    });
    let service = ServiceBuilder::new()
        .layer(MiddlewareLayer::new(header))
        .service(service_fn(
            |request: Request<Staged<HCons<User, HNil>>>| async move {
                Ok::<_, ApiError>(request.into_body().ctx.head)
            },
        ));
    let request = Request::builder()
        .header("authorization", "Bearer x")
        .body(Staged::default())
        .unwrap();
    assert_eq!(
        service.oneshot(request).await.unwrap(),
        User("Bearer x".into())
    );
}

#[test]
fn security_and_schema_are_kept() {
    use strata_core::Security;
    let middleware = auth().security(Security::input("key"));
    assert_eq!(
        middleware.security_description(),
        Some(&Security::input("key"))
    );
    let schema = middleware.input_schema();
    assert!(schema.as_value()["properties"]["key"].is_object());
}
