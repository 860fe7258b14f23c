//! The test utilities on the endpoints and middleware of `examples/auth.rs`, and the same cases
//! as `oneshot` calls on the whole routing.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::sync::Arc;
use strata::core::HCons;
use strata::core::HNil;
use strata::{Config, Mode, Router, UploadLimits, UploadedFile};

use http::header::{HeaderName, HeaderValue};
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::json;
use strata::prelude::*;
use strata_testing::{LoggerMock, TestArgs, TestRequest, test_endpoint, test_middleware};
use tower::ServiceExt;

#[allow(dead_code)]
#[path = "../examples/auth.rs"]
mod auth;

fn token(value: &'static str) -> (HeaderName, HeaderValue) {
    (
        HeaderName::from_static("token"),
        HeaderValue::from_static(value),
    )
}

fn signed_in() -> TestRequest {
    let (name, value) = token("456");
    TestRequest::get().query("key", "123").header(name, value)
}

#[tokio::test]
async fn success() {
    let endpoints = auth::endpoints();
    let outcome = test_endpoint(
        &endpoints.profile,
        TestArgs::new(signed_in().query("detail", "2")),
    )
    .await;
    let response = &outcome.response;
    assert_eq!(response.status_code(), 200);
    assert!(response.is_json() && response.is_utf8() && response.is_end_called());
    assert_eq!(
        response.json_data().unwrap(),
        json!({"status": "success", "data": {"name": "Jane", "detail": 2}})
    );
    assert_eq!(
        response.header("content-type"),
        Some("application/json; charset=utf-8")
    );
    assert_eq!(response.redirect_url(), None);
}

#[tokio::test]
async fn input_validation_failure() {
    let outcome = test_endpoint(
        &auth::endpoints().profile,
        TestArgs::new(signed_in().query("detail", "7")),
    )
    .await;
    assert_eq!(outcome.response.status_code(), 400);
    assert_eq!(
        outcome.response.json_data().unwrap()["error"]["message"],
        "detail: greater than 3"
    );
}

#[tokio::test]
async fn middleware_denial_has_no_output() {
    let (name, value) = token("wrong");
    let args = TestArgs::new(TestRequest::get().query("key", "123").header(name, value));
    let outcome = test_middleware(auth::auth_middleware(), args, HNil).await;
    assert!(outcome.output.is_none());
    assert_eq!(outcome.response.status_code(), 401);
    assert!(outcome.response.is_end_called());
    assert_eq!(
        outcome.response.json_data().unwrap()["error"]["message"],
        "Invalid key"
    );
    assert_eq!(
        outcome.logger.messages(strata::Level::Warn),
        ["invalid credentials"]
    );
}

#[tokio::test]
async fn middleware_grant_has_output() {
    let outcome = test_middleware(auth::auth_middleware(), TestArgs::new(signed_in()), HNil).await;
    assert_eq!(
        outcome.output,
        Some(auth::User {
            name: "Jane".into()
        })
    );
    assert!(
        !outcome.response.is_end_called(),
        "a granting middleware sends nothing"
    );
    // the credentials its security names must be there (401), then it validates its own input
    let outcome = test_middleware(
        auth::auth_middleware(),
        TestArgs::new(TestRequest::get()),
        HNil,
    )
    .await;
    assert!(outcome.output.is_none());
    assert_eq!(outcome.response.status_code(), 401);
    assert_eq!(
        outcome.response.json_data().unwrap()["error"]["message"],
        "Missing credentials: key, token (header)"
    );
    let (name, value) = token("456");
    let outcome = test_middleware(
        auth::auth_middleware(),
        TestArgs::new(TestRequest::get().query("key", "").header(name, value)),
        HNil,
    )
    .await;
    assert!(outcome.output.is_none());
    assert_eq!(outcome.response.status_code(), 400);
    assert_eq!(
        outcome.response.json_data().unwrap()["error"]["message"],
        "key: length is lower than 1"
    );
}

#[tokio::test]
async fn middleware_with_earlier_context() {
    #[derive(Debug, PartialEq)]
    struct Greeting(String);
    let greet =
        Middleware::with_context(|(): (), _request, ctx: &HCons<auth::User, HNil>, _logger| {
            let text = format!("Hi {}", ctx.head.name);
            async move { Ok(Greeting(text)) }
        });
    let ctx = HNil.push(auth::User { name: "Ada".into() });
    let outcome = test_middleware(greet, TestArgs::default(), ctx).await;
    assert_eq!(outcome.output, Some(Greeting("Hi Ada".into())));
}

#[tokio::test]
async fn handler_error_with_status_and_header() {
    let outcome = test_endpoint(&auth::endpoints().limited, TestArgs::new(signed_in())).await;
    assert_eq!(outcome.response.status_code(), 429);
    assert_eq!(outcome.response.header("retry-after"), Some("30"));
    assert_eq!(
        outcome.response.json_data().unwrap()["error"]["message"],
        "Too many requests"
    );
    let warn = &outcome.logger.logs().warn[0];
    assert_eq!(warn.message, "rate limit reached");
    assert_eq!(warn.fields, [("retry_after".to_owned(), "30".to_owned())]);
}

#[tokio::test]
async fn output_validation_is_500_and_production_hides_it() {
    let endpoint = auth::endpoints().broken;
    let outcome = test_endpoint(&endpoint, TestArgs::new(signed_in())).await;
    assert_eq!(outcome.response.status_code(), 500);
    assert_eq!(
        outcome.response.json_data().unwrap()["error"]["message"],
        "output.detail: greater than 3; output.name: length is lower than 1"
    );
    let outcome = test_endpoint(
        &endpoint,
        TestArgs::new(signed_in()).config(|c| c.mode = strata::Mode::Production),
    )
    .await;
    assert_eq!(outcome.response.status_code(), 500);
    assert_eq!(
        outcome.response.json_data().unwrap()["error"]["message"],
        "Internal Server Error"
    );
}

#[tokio::test]
async fn custom_result_handler() {
    let endpoint = auth::endpoints().plain;
    let outcome = test_endpoint(&endpoint, TestArgs::new(signed_in())).await;
    assert_eq!(outcome.response.status_code(), 200);
    assert!(!outcome.response.is_json());
    assert!(outcome.response.is_utf8());
    assert_eq!(
        outcome.response.text(),
        Some(r#"ok {"name":"Jane","detail":1}"#)
    );
    let (name, value) = token("456");
    let outcome = test_endpoint(
        &endpoint,
        TestArgs::new(TestRequest::get().query("key", "1").header(name, value)),
    )
    .await;
    assert_eq!(outcome.response.text(), Some("failed: Invalid key"));
}

#[tokio::test]
async fn logs_at_each_level_with_request_ids() {
    let endpoints = auth::endpoints();
    let outcome = test_endpoint(
        &endpoints.broken,
        TestArgs::new(signed_in()).request_id("test-1"),
    )
    .await;
    let logs = outcome.logger.logs();
    assert_eq!(logs.debug[0].message, "checking credentials");
    assert_eq!(logs.debug[0].request_id.as_deref(), Some("test-1"));
    assert_eq!(logs.error[0].message, "about to return an invalid profile");
    // the format stage logs the 500 with its real message
    assert!(
        logs.error[1]
            .message
            .contains("output.detail: greater than 3")
    );
    let outcome = test_endpoint(&endpoints.profile, TestArgs::new(signed_in())).await;
    assert_eq!(outcome.logger.logs().info[0].message, "profile of Jane");
    let outcome = test_endpoint(&endpoints.limited, TestArgs::new(signed_in())).await;
    assert_eq!(outcome.logger.logs().warn[0].message, "rate limit reached");
}

#[tokio::test]
async fn path_params_body_and_method() {
    use garde::Validate;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    #[derive(Deserialize, Validate, JsonSchema)]
    struct In {
        #[garde(skip)]
        id: u32,
        #[garde(length(chars, min = 1))]
        name: String,
    }
    #[derive(Serialize, Validate, JsonSchema)]
    struct Out {
        #[garde(skip)]
        id: u32,
        #[garde(skip)]
        name: String,
    }
    let update = default_endpoints_factory()
        .put()
        .handler(async |input: In| {
            Ok(Out {
                id: input.id,
                name: input.name,
            })
        });
    let request = TestRequest::put()
        .path("/users/7")
        .param("id", "7")
        .body(json!({"name": "Ada"}));
    let outcome = test_endpoint(&update, TestArgs::new(request)).await;
    assert_eq!(
        outcome.response.json_data().unwrap()["data"],
        json!({"id": 7, "name": "Ada"})
    );
}

#[tokio::test]
async fn extensions_locals_query_encoding_and_chained_overrides() {
    use garde::Validate;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    #[derive(Clone)]
    struct Tenant(&'static str);
    #[derive(Clone)]
    struct Locale(&'static str);
    #[derive(Deserialize, Validate, JsonSchema)]
    struct In {
        #[garde(skip)]
        q: String,
        #[garde(skip)]
        tags: Vec<String>,
    }
    #[derive(Serialize, Validate, JsonSchema)]
    struct Out {
        #[garde(skip)]
        seen: String,
    }
    let endpoint = default_endpoints_factory().get().handler(
        async |input: In, request: http::request::Parts| {
            let tenant = request.extensions.get::<Tenant>().map_or("none", |t| t.0);
            let locale = request.extensions.get::<Locale>().map_or("none", |l| l.0);
            if input.q == "boom" {
                return Err(ApiError::internal("secret detail"));
            }
            Ok(Out {
                seen: format!("{tenant}/{locale}/{}/{}", input.q, input.tags.join("|")),
            })
        },
    );
    let request = TestRequest::get()
        .path("/search?tags=a")
        .query("q", "café & co=1+1")
        .query("tags", "b/c")
        .extension(Tenant("acme"));
    let outcome = test_endpoint(&endpoint, TestArgs::new(request).local(Locale("fr"))).await;
    assert_eq!(
        outcome.response.json_data().unwrap()["data"]["seen"],
        "acme/fr/café & co=1+1/a|b/c"
    );
    // overrides accumulate
    let args = TestArgs::new(TestRequest::get().query("q", "boom").query("tags", "x"))
        .config(|c| c.mode = strata::Mode::Production)
        .config(|c| c.body_limit = 10);
    let outcome = test_endpoint(&endpoint, args).await;
    assert_eq!(
        outcome.response.json_data().unwrap()["error"]["message"],
        "Internal Server Error"
    );
}

// ---- the second way: oneshot on the whole routing ---------------------------------------------

async fn call(
    uri: &str,
    token_value: Option<&'static str>,
    config: &Config,
) -> (StatusCode, http::HeaderMap, String, LoggerMock) {
    // The example does not serve its broken endpoint; these tests show what it would answer.
    let routing = auth::auth_routing().route("/v1/broken", auth::endpoints().broken);
    let router = Router::new(&routing, config).unwrap();
    let logs = LoggerMock::default();
    let mut request = Request::get(uri);
    if let Some(value) = token_value {
        request = request.header("token", value);
    }
    let mut request = request.body(String::new()).unwrap();
    request
        .extensions_mut()
        .insert(Logger::with_sink(Arc::new(logs.clone())));
    let response = router.oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let body = String::from_utf8(body.collect().await.unwrap().to_bytes().to_vec()).unwrap();
    (parts.status, parts.headers, body, logs)
}

#[tokio::test]
async fn the_same_cases_through_the_routing() {
    let config = create_config().cors(Cors::Disabled).build();
    let (status, _, body, logs) = call("/v1/profile?key=123&detail=2", Some("456"), &config).await;
    assert_eq!(
        (status, body.as_str()),
        (
            StatusCode::OK,
            r#"{"status":"success","data":{"name":"Jane","detail":2}}"#
        )
    );
    assert_eq!(logs.messages(strata::Level::Info), ["profile of Jane"]);
    let (status, _, body, _) = call("/v1/profile?key=123&detail=7", Some("456"), &config).await;
    assert_eq!(
        (status, body.as_str()),
        (
            StatusCode::BAD_REQUEST,
            r#"{"status":"error","error":{"message":"detail: greater than 3"}}"#
        )
    );
    let (status, _, _, logs) = call("/v1/profile?key=123", Some("nope"), &config).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(logs.messages(strata::Level::Warn), ["invalid credentials"]);
    let (status, headers, _, _) = call("/v1/limited?key=123", Some("456"), &config).await;
    assert_eq!(
        (status, &headers["retry-after"]),
        (
            StatusCode::TOO_MANY_REQUESTS,
            &HeaderValue::from_static("30")
        )
    );
    let (status, _, body, _) = call(
        "/v1/broken?key=123",
        Some("456"),
        &create_config()
            .cors(Cors::Disabled)
            .mode(Mode::Production)
            .build(),
    )
    .await;
    assert_eq!(
        (status, body.as_str()),
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            r#"{"status":"error","error":{"message":"Internal Server Error"}}"#
        )
    );
    let (_, _, body, _) = call("/v1/plain?key=123", Some("456"), &config).await;
    assert_eq!(body, r#"ok {"name":"Jane","detail":1}"#);
}

#[tokio::test]
async fn a_missing_credential_is_a_401_and_a_malformed_one_a_400() {
    let config = create_config().cors(Cors::Disabled).build();
    // No key (the input field the security names): 401, not the input's `key: required`.
    let (status, headers, body, logs) = call("/v1/profile", Some("456"), &config).await;
    assert_eq!(
        (status, body.as_str()),
        (
            StatusCode::UNAUTHORIZED,
            r#"{"status":"error","error":{"message":"Missing credential: key"}}"#
        )
    );
    // API keys have no HTTP challenge: no `WWW-Authenticate`.
    assert!(!headers.contains_key("www-authenticate"));
    // The middleware did not run.
    assert!(logs.messages(strata::Level::Debug).is_empty());
    // No token (the header it names): 401.
    let (status, _, body, _) = call("/v1/profile?key=123", None, &config).await;
    assert_eq!(
        (status, body.as_str()),
        (
            StatusCode::UNAUTHORIZED,
            r#"{"status":"error","error":{"message":"Missing credential: token (header)"}}"#
        )
    );
    // A key that is there but breaks its rules: 400.
    let (status, _, body, _) = call("/v1/profile?key=", Some("456"), &config).await;
    assert_eq!(
        (status, body.as_str()),
        (
            StatusCode::BAD_REQUEST,
            r#"{"status":"error","error":{"message":"key: length is lower than 1"}}"#
        )
    );
    // Through the custom result handler, like every error.
    let (status, _, body, _) = call("/v1/plain", None, &config).await;
    assert_eq!(
        (status, body.as_str()),
        (
            StatusCode::UNAUTHORIZED,
            "failed: Missing credentials: key, token (header)"
        )
    );
}

#[tokio::test]
async fn files_are_sent_as_a_multipart_form() {
    #[derive(serde::Deserialize, garde::Validate, schemars::JsonSchema)]
    struct Input {
        #[garde(skip)]
        title: String,
        #[garde(skip)]
        tags: Vec<String>,
        #[garde(range(min = 1))]
        count: u32,
        #[garde(skip)]
        doc: UploadedFile,
    }
    #[derive(serde::Serialize, garde::Validate, schemars::JsonSchema)]
    struct Output {
        #[garde(skip)]
        summary: String,
    }
    let endpoint = default_endpoints_factory()
        .post()
        .handler(async |input: Input| {
            let doc = &input.doc;
            Ok(Output {
                summary: format!(
                    "{} {:?} x{}: {} ({}, {} bytes, {:?})",
                    input.title,
                    input.tags,
                    input.count,
                    doc.name(),
                    doc.mimetype(),
                    doc.size(),
                    String::from_utf8_lossy(doc.data().expect("a small file, in memory"))
                ),
            })
        });
    let doc = || UploadedFile::new("d.txt", "text/plain", "abc");

    // Body fields become text parts: strings as they are, lists repeated, numbers as text.
    let request = TestRequest::post()
        .body(json!({"title": "T", "tags": ["a", "b"], "count": 2}))
        .file("doc", doc());
    let outcome = test_endpoint(&endpoint, TestArgs::new(request)).await;
    assert_eq!(outcome.response.status_code(), 200);
    assert_eq!(
        outcome.response.json_data().unwrap()["data"]["summary"],
        r#"T ["a", "b"] x2: d.txt (text/plain, 3 bytes, "abc")"#
    );

    // A file under another name: the required one is missing.
    let request = TestRequest::post()
        .body(json!({"title": "T", "tags": ["x"], "count": 1}))
        .file("other", doc());
    let outcome = test_endpoint(&endpoint, TestArgs::new(request)).await;
    assert_eq!(outcome.response.status_code(), 400);
    let body = outcome.response.json_data().unwrap();
    assert!(
        body["error"]["message"].as_str().unwrap().contains("doc"),
        "{body}"
    );

    // The multipart type wins over a content type the test gave.
    let request = TestRequest::post()
        .header(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )
        .body(json!({"title": "T", "tags": "a", "count": 1}))
        .file("doc", doc());
    let outcome = test_endpoint(&endpoint, TestArgs::new(request)).await;
    assert_eq!(outcome.response.status_code(), 200);

    // The test's own upload limits apply.
    let request = TestRequest::post()
        .body(json!({"title": "T", "tags": "a", "count": 1}))
        .file("doc", doc());
    let args = TestArgs::new(request)
        .config(|c| c.uploads = Some(UploadLimits::builder().file_size(2).build()));
    let outcome = test_endpoint(&endpoint, args).await;
    assert_eq!(outcome.response.status_code(), 413);
}

#[derive(Debug, serde::Deserialize, garde::Validate, schemars::JsonSchema)]
#[garde(allow_unvalidated)]
struct Upload {
    file: strata::UploadedFile,
}

#[derive(serde::Serialize, garde::Validate, schemars::JsonSchema)]
#[garde(allow_unvalidated)]
struct Saved {
    saved: bool,
}

#[tokio::test]
async fn a_server_error_logs_its_whole_source_chain() {
    // `mv` into a directory that does not exist: the handler's `?` makes a 500 whose log
    // record names the file, the path and the I/O error.
    let target = std::env::temp_dir()
        .join(format!("strata-missing-{}", std::process::id()))
        .join("nested")
        .join("file.bin");
    let endpoint = default_endpoints_factory().post().handler({
        let target = target.clone();
        move |input: Upload| {
            let target = target.clone();
            async move {
                input.file.mv(&target).await?;
                Ok(Saved { saved: true })
            }
        }
    });
    let request = TestRequest::post().file(
        "file",
        strata::UploadedFile::new("a.bin", "application/octet-stream", vec![1, 2, 3]),
    );
    let args =
        TestArgs::new(request).config(|config| config.uploads = Some(strata::UploadLimits::new()));
    let outcome = test_endpoint(&endpoint, args).await;
    assert_eq!(outcome.response.status_code(), 500);
    let errors = outcome.logger.logs().error;
    assert_eq!(errors.len(), 1, "{errors:?}");
    // The message is the move error's text (with the file); its causes follow, each once.
    let message = &errors[0].message;
    assert!(
        message.starts_with("POST /: 500 cannot write the uploaded file"),
        "{message}"
    );
    assert!(message.contains(&target.display().to_string()), "{message}");
    let (name, sources) = &errors[0].fields[0];
    assert_eq!(name, "sources");
    assert!(sources.contains("No such file or directory"), "{sources}");
    assert!(
        !sources.contains("cannot write"),
        "printed twice: {sources}"
    );
}
