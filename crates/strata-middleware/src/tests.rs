use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use garde::Validate;
use http::{Request, Response};
use schemars::JsonSchema;
use serde::Deserialize;
use strata_core::{ApiError, HCons, HNil, Has, http_error};
use strata_input::{Input, Staged};
use tower::{ServiceBuilder, ServiceExt, service_fn};

use crate::{Middleware, MiddlewareLayer};

#[derive(Debug, Deserialize, Validate, JsonSchema)]
struct KeyInput {
    #[garde(length(min = 3))]
    key: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct User(String);

#[derive(Debug, Clone, Default, PartialEq)]
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
                Ok::<_, ApiError>(Response::new((user.clone(), role.clone())))
            },
        ));
    let (user, role) = service.oneshot(staged("secret")).await.unwrap().into_body();
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
            async { Ok::<_, ApiError>(Response::new(())) }
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
            Ok::<_, ApiError>(Response::new(()))
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
                Ok::<_, ApiError>(Response::new(request.into_body().ctx.head))
            },
        ));
    let request = Request::builder()
        .header("authorization", "Bearer x")
        .body(Staged::default())
        .unwrap();
    assert_eq!(
        service.oneshot(request).await.unwrap().into_body(),
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

/// `auth` behind a security naming the input field `key` and the header `token`, counting its
/// calls, in front of a service that answers the user.
fn secured(
    calls: Arc<AtomicUsize>,
) -> impl tower::Service<Request<Staged>, Response = Response<User>, Error = ApiError> + Clone {
    let middleware = Middleware::new(move |input: KeyInput, _request, _logger| {
        calls.fetch_add(1, Ordering::SeqCst);
        async move { Ok(User(input.key)) }
    })
    .security(strata_core::Security::and([
        strata_core::Security::input("key"),
        strata_core::Security::header("Token"),
    ]));
    ServiceBuilder::new()
        .layer(MiddlewareLayer::new(middleware))
        .service(service_fn(
            |request: Request<Staged<HCons<User, HNil>>>| async move {
                Ok::<_, ApiError>(Response::new(request.into_body().ctx.head))
            },
        ))
}

fn with_token(mut request: Request<Staged>) -> Request<Staged> {
    request
        .headers_mut()
        .insert("token", http::HeaderValue::from_static("456"));
    request
}

#[tokio::test]
async fn a_missing_credential_is_a_401_before_the_input_is_read() {
    let calls = Arc::new(AtomicUsize::new(0));
    let service = secured(calls.clone());
    // No key: 401, not the input's `key: required`.
    let error = service
        .clone()
        .oneshot(with_token(Request::new(Staged::default())))
        .await
        .unwrap_err();
    assert_eq!(error.status(), 401);
    assert_eq!(error.message(), "Missing credential: key");
    assert_eq!(error.kind(), strata_core::ErrorKind::Http);
    // An API key has no challenge HTTP defines: no `WWW-Authenticate`.
    assert!(error.headers().is_none());
    // No header.
    let error = service.clone().oneshot(staged("secret")).await.unwrap_err();
    assert_eq!(
        (error.status().as_u16(), error.message()),
        (401, "Missing credential: token (header)")
    );
    // Neither.
    let error = service
        .clone()
        .oneshot(Request::new(Staged::default()))
        .await
        .unwrap_err();
    assert_eq!(
        (error.status().as_u16(), error.message()),
        (401, "Missing credentials: key, token (header)")
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0, "middleware not called");
    // Present but malformed: the input's rules say so, a 400.
    let error = service
        .clone()
        .oneshot(with_token(staged("ab")))
        .await
        .unwrap_err();
    assert_eq!(
        (error.status().as_u16(), error.message()),
        (400, "key: length is lower than 3")
    );
    // An empty header is present: the middleware judges it.
    let mut request = staged("secret");
    request
        .headers_mut()
        .insert("token", http::HeaderValue::from_static(""));
    assert_eq!(
        service.clone().oneshot(request).await.unwrap().into_body(),
        User("secret".into())
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn credentials_are_found_in_a_plain_query() {
    let service = secured(Arc::new(AtomicUsize::new(0)));
    let query = |uri: &str| {
        let uri: http::Uri = uri.parse().unwrap();
        let query = strata_input::text::PlainQuery::check(&uri, 100)
            .unwrap()
            .unwrap();
        with_token(Request::new(Staged {
            input: Input::from(query),
            ctx: HNil,
        }))
    };
    assert_eq!(
        service
            .clone()
            .oneshot(query("/?key=secret"))
            .await
            .unwrap()
            .into_body(),
        User("secret".into())
    );
    // A key without `=` is present, empty: the input's rules refuse it.
    let error = service.clone().oneshot(query("/?key")).await.unwrap_err();
    assert_eq!(error.status(), 400);
    let error = service.oneshot(query("/?keys=secret")).await.unwrap_err();
    assert_eq!(
        (error.status().as_u16(), error.message()),
        (401, "Missing credential: key")
    );
}

/// A middleware of its own that stamps every outcome with the number it provided.
#[derive(Clone)]
struct Stamp;

struct StampAmends(u32);

impl crate::AmendResponse for StampAmends {
    fn amend<R: crate::Amend>(self, outcome: &mut Result<R, ApiError>) {
        crate::outcome_headers(outcome).insert("x-stamp", self.0.into());
    }
}

impl crate::MiddlewareHandler<(), HNil> for Stamp {
    type Output = u32;
    type Future = std::future::Ready<Result<u32, ApiError>>;
    type Amends = StampAmends;

    fn call(
        &self,
        (): (),
        _request: &http::request::Parts,
        _ctx: &HNil,
        _logger: &strata_core::Logger,
    ) -> Self::Future {
        std::future::ready(Ok(7))
    }

    fn amends(output: &u32) -> StampAmends {
        StampAmends(*output)
    }
}

#[tokio::test]
async fn a_middleware_amends_successes_and_errors_alike() {
    let service = ServiceBuilder::new()
        .layer(MiddlewareLayer::new(Middleware::custom(Stamp)))
        .service(service_fn(
            |request: Request<Staged<HCons<u32, HNil>>>| async move {
                if request.uri().path() == "/fail" {
                    return Err(http_error!(409, "Conflict"));
                }
                Ok(Response::new(request.into_body().ctx.head))
            },
        ));
    let response = service
        .clone()
        .oneshot(Request::new(Staged::default()))
        .await
        .unwrap();
    assert_eq!(response.headers()["x-stamp"], "7");
    assert_eq!(response.into_body(), 7);
    let failing = Request::builder()
        .uri("/fail")
        .body(Staged::default())
        .unwrap();
    let error = service.clone().oneshot(failing).await.unwrap_err();
    assert_eq!(error.status(), 409);
    assert_eq!(error.headers().unwrap()["x-stamp"], "7");
    // A not-modified response, as the cache middleware makes one: no body, headers kept.
    let mut headers = http::HeaderMap::new();
    headers.insert("etag", http::HeaderValue::from_static("\"v1\""));
    let response = <Response<String> as crate::Amend>::not_modified(headers);
    assert_eq!(response.status(), 304);
    assert_eq!(response.headers()["etag"], "\"v1\"");
    assert!(response.body().is_empty());
}

#[tokio::test]
async fn a_cookie_credential_is_looked_for_in_the_cookies() {
    let middleware = Middleware::new(|(): (), request, _logger| {
        let sent = request.headers.contains_key("cookie");
        async move { Ok(User(sent.to_string())) }
    })
    .security(strata_core::Security::cookie("session"));
    let service = ServiceBuilder::new()
        .layer(MiddlewareLayer::new(middleware))
        .service(service_fn(
            |request: Request<Staged<HCons<User, HNil>>>| async move {
                Ok::<_, ApiError>(Response::new(request.into_body().ctx.head))
            },
        ));
    let with = |cookie: &str| {
        Request::builder()
            .header("cookie", cookie)
            .body(Staged::default())
            .unwrap()
    };
    let error = service
        .clone()
        .oneshot(with("theme=dark"))
        .await
        .unwrap_err();
    assert_eq!(
        (error.status().as_u16(), error.message()),
        (401, "Missing credential: session (cookie)")
    );
    let response = service.oneshot(with("theme=dark; session=abc")).await;
    assert_eq!(response.unwrap().into_body(), User("true".into()));
}

/// A middleware whose future is ready with an error: the stage answers with it at once.
#[derive(Clone)]
struct Refuse;

impl crate::MiddlewareHandler<(), HNil> for Refuse {
    type Output = u32;
    type Future = std::future::Ready<Result<u32, ApiError>>;
    type Amends = StampAmends;

    fn call(
        &self,
        (): (),
        _request: &http::request::Parts,
        _ctx: &HNil,
        _logger: &strata_core::Logger,
    ) -> Self::Future {
        std::future::ready(Err(http_error!(403, "Refused")))
    }

    fn amends(output: &u32) -> StampAmends {
        StampAmends(*output)
    }
}

#[tokio::test]
async fn a_ready_failure_answers_without_calling_the_rest() {
    let called = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&called);
    let service = ServiceBuilder::new()
        .layer(MiddlewareLayer::new(Middleware::custom(Refuse)))
        .service(service_fn(
            move |request: Request<Staged<HCons<u32, HNil>>>| {
                count.fetch_add(1, Ordering::SeqCst);
                async move { Ok::<_, ApiError>(Response::new(request.into_body().ctx.head)) }
            },
        ));
    let error = service
        .oneshot(Request::new(Staged::default()))
        .await
        .unwrap_err();
    assert_eq!((error.status().as_u16(), error.message()), (403, "Refused"));
    assert!(error.headers().is_none(), "nothing to amend it with");
    assert_eq!(called.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_sync_middleware_is_decided_in_the_stages_call() {
    use tower::Service;

    let sync_auth = Middleware::sync(|input: KeyInput, _request, _logger| {
        if input.key == "secret" {
            Ok(User("ada".into()))
        } else {
            Err(http_error!(401, "Invalid key"))
        }
    });
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let mut service = ServiceBuilder::new()
        .layer(MiddlewareLayer::new(sync_auth))
        .service(service_fn(
            move |request: Request<Staged<HCons<User, HNil>>>| {
                counted.fetch_add(1, Ordering::SeqCst);
                let user: User = request.into_body().ctx.head;
                async move { Ok::<_, ApiError>(Response::new(user)) }
            },
        ));
    // The inner service is called by the stage's `call`, before its future is polled: the
    // middleware needed no waiting.
    let granted = service.call(staged("secret"));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(granted.await.unwrap().into_body(), User("ada".into()));
    let error = service.call(staged("wrong")).await.unwrap_err();
    assert_eq!(
        (error.status().as_u16(), error.message()),
        (401, "Invalid key")
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
