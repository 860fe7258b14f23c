//! The seven stages through the facade: one endpoint service per test, called with `oneshot`.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use strata::core::HCons;
use strata::core::HNil;
use strata::endpoint::MiddlewareChain;
use strata::{
    Config, Ctx, DefaultResultHandler, Endpoint, EndpointsFactory, InputSource, Mode,
    ResultHandler, Security,
};

use garde::Validate;
use http::header::{CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use strata::core::Output;
use strata::core::PathParams;
use strata::prelude::*;
use strata::{Body, RequestInfo, ResponseDescription};
use tower::{Service, ServiceExt};

/// Development mode: the tests read internal messages (production is the default).
fn dev() -> Config {
    Config::builder().mode(Mode::Development).build()
}

async fn call(
    endpoint: &Endpoint,
    config: &Config,
    request: Request<String>,
) -> (StatusCode, Value) {
    let response = endpoint
        .service_with(config)
        .oneshot(request)
        .await
        .unwrap();
    split(response).await
}

async fn split(response: Response<Body>) -> (StatusCode, Value) {
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

fn message(body: &Value) -> &str {
    body["error"]["message"].as_str().unwrap()
}

fn get(uri: &str) -> Request<String> {
    Request::get(uri).body(String::new()).unwrap()
}

fn json_request(method: Method, uri: &str, body: &str) -> Request<String> {
    Request::builder()
        .method(method)
        .uri(uri)
        .header(CONTENT_TYPE, "application/json")
        .body(body.to_owned())
        .unwrap()
}

// ---- an endpoint that echoes its typed input -------------------------------------------------

#[derive(Debug, Deserialize, Serialize, Validate, JsonSchema)]
struct Echo {
    #[garde(skip)]
    id: Option<String>,
    #[garde(skip)]
    n: Option<u32>,
    #[garde(skip)]
    tags: Option<Vec<String>>,
    #[garde(skip)]
    flag: Option<bool>,
    #[garde(skip)]
    name: Option<String>,
    #[garde(skip)]
    #[serde(rename = "x-key")]
    x_key: Option<String>,
}

fn echo() -> Endpoint {
    default_endpoints_factory()
        .endpoint()
        .methods([
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ])
        .handler(async |input: Echo| Ok(input))
}

#[tokio::test]
async fn parse_json_form_query_and_empty_bodies() {
    let config = dev();
    let (status, body) = call(
        &echo(),
        &config,
        json_request(Method::POST, "/", r#"{"n":5,"name":"a"}"#),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["n"], 5);

    let request = Request::post("/")
        .header(CONTENT_TYPE, "application/merge-patch+json")
        .body(r#"{"name":"plus"}"#.to_owned())
        .unwrap();
    assert_eq!(
        call(&echo(), &config, request).await.1["data"]["name"],
        "plus"
    );

    let request = Request::post("/")
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body("n=7&tags=a&tags=b&flag=true".to_owned())
        .unwrap();
    let (_, body) = call(&echo(), &config, request).await;
    assert_eq!(
        body["data"],
        json!({"id": null, "n": 7, "tags": ["a", "b"], "flag": true, "name": null, "x-key": null})
    );

    let (_, body) = call(&echo(), &config, get("/?tags=x&tags=y&name=J%C3%BCrgen")).await;
    assert_eq!(body["data"]["tags"], json!(["x", "y"]));
    assert_eq!(body["data"]["name"], "Jürgen");

    let (status, body) = call(&echo(), &config, json_request(Method::POST, "/", "")).await;
    assert_eq!((status, &body["data"]["n"]), (StatusCode::OK, &Value::Null));
}

#[tokio::test]
async fn parse_errors_are_clear_4xx() {
    let config = create_config().body_limit(32).build();
    let cases = [
        (
            json_request(
                Method::POST,
                "/",
                &format!(r#"{{"name":"{}"}}"#, "x".repeat(40)),
            ),
            413,
            "Request body exceeds the limit of 32 bytes",
        ),
        (
            json_request(Method::POST, "/", "{\"n\": 1,}"),
            400,
            "Invalid JSON body: trailing comma at line 1 column 9",
        ),
        (
            json_request(Method::POST, "/", "[1, 2]"),
            400,
            "JSON body must be an object, got an array",
        ),
        (
            Request::post("/")
                .header(CONTENT_TYPE, "text/csv")
                .body("a,b".to_owned())
                .unwrap(),
            415,
            "Unsupported Content-Type: text/csv",
        ),
        (
            get("/?name=%E0%A4%A"),
            400,
            "Invalid query string: malformed percent-encoding at byte 11",
        ),
        (
            get("/?name=%C0%AF"),
            400,
            "Invalid query string: percent-decoded bytes are not valid UTF-8",
        ),
    ];
    for (request, status, text) in cases {
        let (got, body) = call(&echo(), &config, request).await;
        assert_eq!((got.as_u16(), message(&body)), (status, text));
    }
}

#[derive(Debug, Deserialize, Serialize, Validate, JsonSchema)]
struct Bulk {
    #[garde(length(min = 1))]
    customer: String,
    #[garde(length(max = 2000), dive)]
    lines: Vec<BulkLine>,
}

#[derive(Debug, Deserialize, Serialize, Validate, JsonSchema)]
struct BulkLine {
    #[garde(length(min = 1))]
    sku: String,
    #[garde(range(min = 1))]
    quantity: u32,
}

#[derive(Debug, Serialize, Validate, JsonSchema)]
struct Lines {
    #[garde(skip)]
    lines: usize,
}

/// A ~100 KiB body: `customer`, then 1,500 lines.
fn bulk_body(customer: &str, last_line: &str) -> String {
    let lines: Vec<String> = (0..1500)
        .map(|i| {
            format!(
                r#"{{"sku": "SKU-{i:06}", "quantity": {}, "name": "a line"}}"#,
                i % 9 + 1
            )
        })
        .chain([last_line.to_owned()])
        .collect();
    format!(
        r#"{{"customer": {customer}, "lines": [{}]}}"#,
        lines.join(",\n")
    )
}

#[tokio::test]
async fn a_large_body_read_in_one_pass_is_refused_as_when_checked_first() {
    // Without middleware the body is checked as it is read into the input (one pass); behind
    // one, the parse stage checks it first. Both answer every body alike.
    let one_pass = default_endpoints_factory()
        .post()
        .handler(async |bulk: Bulk| {
            Ok(Lines {
                lines: bulk.lines.len(),
            })
        });
    let two_passes = default_endpoints_factory()
        .add_middleware(Middleware::sync(|(): (), _, _| Ok(())))
        .post()
        .handler(async |bulk: Bulk| {
            Ok(Lines {
                lines: bulk.lines.len(),
            })
        });
    let line = r#"{"sku": "LAST", "quantity": 1}"#;
    let cases = [
        (bulk_body(r#""Ada""#, line), 200, None),
        // The syntax error at the end, on line 1501.
        (
            bulk_body(r#""Ada""#, r#"{"sku": "LAST", "quantity": 1,}"#),
            400,
            Some("Invalid JSON body: trailing comma at line 1501 column 31"),
        ),
        // A value of the wrong type first, the syntax error after it: the body is not JSON.
        (
            bulk_body("5", r#"{"sku": "LAST" "quantity": 1}"#),
            400,
            Some("Invalid JSON body: expected `,` or `}` at line 1501 column 16"),
        ),
        (
            bulk_body("5", line),
            400,
            Some("customer: expected string, received number 5"),
        ),
        (
            bulk_body(r#""Ada""#, r#"{"sku": "LAST", "quantity": "1"}"#),
            400,
            Some("lines[1500].quantity: expected integer, received string \"1\""),
        ),
        (
            bulk_body(r#""Ada""#, r#"{"sku": "LAST", "quantity": 0}"#),
            400,
            Some("lines[1500].quantity: lower than 1"),
        ),
        // A repeated key: the last value wins.
        (bulk_body(r#""Ada", "customer": "Bea""#, line), 200, None),
        (
            bulk_body(r#""Ada""#, r#"{"sku": "LAST", "quantity": 1e400}"#),
            400,
            Some("Invalid JSON body: number out of range at line 1501 column 33"),
        ),
        (
            bulk_body(r#""Ada", "unknown": "\ud800""#, line),
            400,
            Some("Invalid JSON body: unexpected end of hex escape at line 1 column 39"),
        ),
        (
            "[1, 2]".to_owned(),
            400,
            Some("JSON body must be an object, got an array"),
        ),
        (
            " ".to_owned(),
            400,
            Some("Invalid JSON body: EOF while parsing a value at line 1 column 1"),
        ),
        (
            String::new(),
            400,
            Some("customer: required; lines: required"),
        ),
    ];
    let config = dev();
    for (body, status, text) in cases {
        let mut answers = Vec::new();
        for endpoint in [&one_pass, &two_passes] {
            let (got, answer) =
                call(endpoint, &config, json_request(Method::POST, "/", &body)).await;
            assert_eq!(got.as_u16(), status, "{answer}");
            if let Some(text) = text {
                assert_eq!(message(&answer), text);
            }
            answers.push(answer);
        }
        assert_eq!(answers[0], answers[1]);
    }
}

#[tokio::test]
async fn combine_follows_the_method_table_and_later_sources_win() {
    let config = dev();
    let with_param = |mut request: Request<String>| {
        request
            .extensions_mut()
            .insert([("id", "from-path")].into_iter().collect::<PathParams>());
        request
    };
    // GET: query, then params
    let (_, body) = call(&echo(), &config, with_param(get("/?id=from-query&n=1"))).await;
    assert_eq!(
        (&body["data"]["id"], &body["data"]["n"]),
        (&json!("from-path"), &json!(1))
    );
    // DELETE: query, params
    let request = with_param(Request::delete("/?n=2").body(String::new()).unwrap());
    assert_eq!(call(&echo(), &config, request).await.1["data"]["n"], 2);
    // POST, PUT, PATCH: body, params; the query is not a source
    for method in [Method::POST, Method::PUT, Method::PATCH] {
        let request = with_param(json_request(
            method.clone(),
            "/?n=9",
            r#"{"id":"from-body","name":"b"}"#,
        ));
        let (_, body) = call(&echo(), &config, request).await;
        assert_eq!(body["data"]["id"], "from-path", "{method}");
        assert_eq!(body["data"]["name"], "b", "{method}");
        assert_eq!(body["data"]["n"], Value::Null, "{method}");
    }
    // HEAD uses GET's sources
    let request = Request::head("/?n=3").body(String::new()).unwrap();
    assert_eq!(call(&echo(), &config, request).await.1["data"]["n"], 3);
}

#[tokio::test]
async fn configured_sources_replace_defaults_and_headers_can_be_added() {
    let config = create_config()
        .input_sources(&Method::GET, [InputSource::Query, InputSource::Headers])
        .input_sources(&Method::POST, [InputSource::Query, InputSource::Body])
        .build();
    let request = Request::get("/?x-key=query")
        .header("X-Key", "header")
        .body(String::new())
        .unwrap();
    assert_eq!(
        call(&echo(), &config, request).await.1["data"]["x-key"],
        "header"
    );
    let (_, body) = call(
        &echo(),
        &config,
        json_request(Method::POST, "/?n=1&name=q", r#"{"name":"body"}"#),
    )
    .await;
    assert_eq!(
        (&body["data"]["n"], &body["data"]["name"]),
        (&json!(1), &json!("body"))
    );
}

#[tokio::test]
async fn text_is_lenient_json_is_strict() {
    let config = dev();
    assert_eq!(
        call(&echo(), &config, get("/?n=5&flag=false")).await.1["data"]["n"],
        5
    );
    let (status, body) = call(
        &echo(),
        &config,
        json_request(Method::POST, "/", r#"{"n":"5"}"#),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        message(&body),
        "n: expected integer or null, received string \"5\""
    );
    let (status, body) = call(&echo(), &config, get("/?n=five")).await;
    assert_eq!(status, 400);
    assert_eq!(
        message(&body),
        "n: expected integer, received string \"five\""
    );
}

// ---- validation --------------------------------------------------------------------------------

#[derive(Debug, Deserialize, Validate, JsonSchema)]
struct Person {
    #[garde(length(chars, min = 1))]
    name: Option<String>,
    #[garde(range(max = 150))]
    age: u8,
    #[garde(dive)]
    items: Vec<Item>,
}

#[derive(Debug, Deserialize, Validate, JsonSchema)]
struct Item {
    #[garde(length(chars, min = 1))]
    name: String,
}

#[derive(Debug, Serialize, Validate, JsonSchema)]
struct Count {
    #[garde(range(max = 10))]
    count: usize,
}

fn person() -> Endpoint {
    default_endpoints_factory()
        .post()
        .handler(async |input: Person| {
            Ok(Count {
                count: input.items.len(),
            })
        })
}

#[tokio::test]
async fn validation_lists_every_violation() {
    let request = json_request(
        Method::POST,
        "/",
        r#"{"name":"","age":151,"items":[{"name":"a"},{"name":""}]}"#,
    );
    let (status, body) = call(&person(), &dev(), request).await;
    assert_eq!(status, 400);
    assert_eq!(
        message(&body),
        "age: greater than 150; items[1].name: length is lower than 1; name: length is lower than 1"
    );
    let request = json_request(Method::POST, "/", r#"{"age":1,"items":[{"name":7}]}"#);
    let (_, body) = call(&person(), &dev(), request).await;
    assert_eq!(
        message(&body),
        "items[0].name: expected string, received number 7"
    );
}

#[tokio::test]
async fn output_rules_failure_is_500_naming_the_field() {
    let items: Vec<Value> = (0..11).map(|_| json!({"name": "x"})).collect();
    let request = json_request(
        Method::POST,
        "/",
        &json!({"age": 1, "items": items}).to_string(),
    );
    let (status, body) = call(&person(), &dev(), request).await;
    assert_eq!(status, 500);
    assert_eq!(message(&body), "output.count: greater than 10");
    // production hides it
    let request = json_request(
        Method::POST,
        "/",
        &json!({"age": 1, "items": items}).to_string(),
    );
    let (status, body) = call(
        &person(),
        &create_config().mode(Mode::Production).build(),
        request,
    )
    .await;
    assert_eq!(
        (status.as_u16(), message(&body)),
        (500, "Internal Server Error")
    );
}

// ---- handler errors and panics -----------------------------------------------------------------

#[derive(Debug, Deserialize, Validate, JsonSchema)]
struct Mode_ {
    #[garde(skip)]
    mode: String,
}

fn faulty() -> Endpoint {
    default_endpoints_factory()
        .get()
        .handler(async |input: Mode_| match input.mode.as_str() {
            "401" => Err(http_error!(401, "Who are you?")),
            "429" => Err(http_error!(429, "Slow down")
                .with_header(RETRY_AFTER, HeaderValue::from_static("30"))),
            "plain" => Err(std::io::Error::other("disk on fire").into()),
            "panic" => panic!("handler bug"),
            _ => Ok(Count { count: 1 }),
        })
}

#[tokio::test]
async fn handler_errors_keep_status_message_and_headers() {
    let config = dev();
    let (status, body) = call(&faulty(), &config, get("/?mode=401")).await;
    assert_eq!((status.as_u16(), message(&body)), (401, "Who are you?"));
    let response = faulty()
        .service_with(&dev())
        .oneshot(get("/?mode=429"))
        .await
        .unwrap();
    assert_eq!(response.headers()[RETRY_AFTER], "30");
    let (status, body) = split(response).await;
    assert_eq!((status.as_u16(), message(&body)), (429, "Slow down"));
    let (status, body) = call(&faulty(), &config, get("/?mode=plain")).await;
    assert_eq!((status.as_u16(), message(&body)), (500, "disk on fire"));
    let (status, body) = call(
        &faulty(),
        &create_config().mode(Mode::Production).build(),
        get("/?mode=plain"),
    )
    .await;
    assert_eq!(
        (status.as_u16(), message(&body)),
        (500, "Internal Server Error")
    );
}

#[tokio::test]
async fn a_panic_is_a_500_and_the_service_keeps_serving() {
    let mut service = faulty().service_with(&dev());
    let response = ServiceExt::<Request<String>>::ready(&mut service)
        .await
        .unwrap()
        .call(get("/?mode=panic"))
        .await
        .unwrap();
    let (status, body) = split(response).await;
    assert_eq!(
        (status.as_u16(), message(&body)),
        (500, "Panic: handler bug")
    );
    let response = ServiceExt::<Request<String>>::ready(&mut service)
        .await
        .unwrap()
        .call(get("/?mode=fine"))
        .await
        .unwrap();
    assert_eq!(
        split(response).await,
        (
            StatusCode::OK,
            json!({"status": "success", "data": {"count": 1}})
        )
    );
}

// ---- middleware and typed context --------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
struct User {
    name: String,
}

#[derive(Debug, Clone, PartialEq)]
struct Permissions(Vec<&'static str>);

#[derive(Debug, Deserialize, Validate, JsonSchema)]
struct AuthInput {
    #[garde(length(min = 3))]
    key: String,
}

/// The context after the authentication middleware.
type AuthCtx = Ctx![User, Permissions];

/// A reusable factory: the middleware chain is named by the context it builds.
fn authenticated_factory(
    calls: Arc<AtomicUsize>,
) -> EndpointsFactory<AuthCtx, impl MiddlewareChain<AuthCtx>> {
    let auth = Middleware::new(move |input: AuthInput, request, logger| {
        calls.fetch_add(1, Ordering::SeqCst);
        let token = request.headers.get("token").cloned();
        logger.debug("auth");
        async move {
            match token {
                Some(token) if input.key == "123" && token == "456" => Ok(User {
                    name: "Jane".into(),
                }),
                _ => Err(http_error!(401, "Invalid key")),
            }
        }
    })
    .security(Security::and([
        Security::input("key"),
        Security::header("token"),
    ]));
    let permissions =
        Middleware::with_context(|(): (), _request, ctx: &HCons<User, HNil>, _logger| {
            let admin = ctx.head.name == "Jane";
            async move {
                Ok(Permissions(if admin {
                    vec!["read", "write"]
                } else {
                    vec!["read"]
                }))
            }
        });
    default_endpoints_factory()
        .add_middleware(auth)
        .add_middleware(permissions)
}

#[derive(Debug, Deserialize, Validate, JsonSchema)]
struct Greeting {
    #[garde(length(chars, min = 2))]
    greeting: String,
}

#[derive(Debug, Serialize, Validate, JsonSchema)]
struct Greeted {
    #[garde(skip)]
    text: String,
    #[garde(skip)]
    can: Vec<&'static str>,
}

#[tokio::test]
async fn middleware_grant_deny_and_context() {
    let calls = Arc::new(AtomicUsize::new(0));
    let factory = default_endpoints_factory();
    let secured = authenticated_factory(calls.clone());
    let endpoint = secured.get().handler(
        async |input: Greeting, user: User, permissions: Permissions, logger: Logger| {
            logger.info("greeting");
            Ok(Greeted {
                text: format!("{}, {}", input.greeting, user.name),
                can: permissions.0,
            })
        },
    );
    let config = dev();
    let request = Request::get("/?key=123&greeting=Hi")
        .header("token", "456")
        .body(String::new())
        .unwrap();
    let (status, body) = call(&endpoint, &config, request).await;
    assert_eq!(status, 200);
    assert_eq!(
        body["data"],
        json!({"text": "Hi, Jane", "can": ["read", "write"]})
    );

    let request = Request::get("/?key=123&greeting=Hi")
        .header("token", "bad")
        .body(String::new())
        .unwrap();
    let (status, body) = call(&endpoint, &config, request).await;
    assert_eq!((status.as_u16(), message(&body)), (401, "Invalid key"));

    // the middleware's own input is validated before the endpoint's
    let calls_before = calls.load(Ordering::SeqCst);
    let request = Request::get("/?key=12&greeting=x")
        .header("token", "456")
        .body(String::new())
        .unwrap();
    let (status, body) = call(&endpoint, &config, request).await;
    assert_eq!(
        (status.as_u16(), message(&body)),
        (400, "key: length is lower than 3")
    );
    // and before that, the credentials its security names must be there
    let (status, body) = call(&endpoint, &config, get("/?key=12&greeting=x")).await;
    assert_eq!(
        (status.as_u16(), message(&body)),
        (401, "Missing credential: token (header)")
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        calls_before,
        "middleware function not called"
    );

    // metadata: security and input fields of middleware and endpoint
    assert_eq!(
        endpoint.meta().security,
        [Security::and([
            Security::input("key"),
            Security::header("token")
        ])]
    );
    assert_eq!(endpoint.meta().input_fields, ["greeting", "key"]);

    // the original factory is unchanged
    assert!(factory.security().is_empty());
    let open = factory.get().handler(async |input: Greeting| {
        Ok(Greeted {
            text: input.greeting,
            can: vec![],
        })
    });
    assert_eq!(
        call(&open, &config, get("/?greeting=Yo")).await.1["data"]["text"],
        "Yo"
    );
}

// ---- custom result handler ---------------------------------------------------------------------

#[derive(Clone, Debug)]
struct Plain;

impl ResultHandler for Plain {
    fn positive(&self, output: &schemars::Schema) -> Vec<ResponseDescription> {
        vec![ResponseDescription::new(StatusCode::OK, output.clone()).mime_type("text/plain")]
    }

    fn negative(&self) -> Vec<ResponseDescription> {
        vec![]
    }

    fn handle(
        &self,
        result: Result<Output, ApiError>,
        _: &RequestInfo,
        _: &Logger,
    ) -> Response<Body> {
        let (status, text) = match result {
            Ok(output) => (StatusCode::OK, format!("ok {}", output.data().get())),
            Err(error) => (error.status(), format!("failed: {}", error.message())),
        };
        let mut response = Response::new(Body::from(text));
        *response.status_mut() = status;
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        response
    }
}

#[tokio::test]
async fn custom_result_handler_swaps_the_envelope() {
    let endpoint = EndpointsFactory::new(Plain)
        .get()
        .handler(async |input: Greeting| {
            Ok(Count {
                count: input.greeting.len(),
            })
        });
    let text = |response: Response<Body>| async move {
        let status = response.status();
        (
            status,
            String::from_utf8(
                response
                    .into_body()
                    .collect()
                    .await
                    .unwrap()
                    .to_bytes()
                    .to_vec(),
            )
            .unwrap(),
        )
    };
    let response = endpoint
        .service()
        .oneshot(get("/?greeting=hey"))
        .await
        .unwrap();
    assert_eq!(
        text(response).await,
        (StatusCode::OK, r#"ok {"count":3}"#.to_owned())
    );
    let response = endpoint
        .service()
        .oneshot(get("/?greeting=h"))
        .await
        .unwrap();
    assert_eq!(
        text(response).await,
        (
            StatusCode::BAD_REQUEST,
            "failed: greeting: length is lower than 2".to_owned()
        )
    );
    assert_eq!(endpoint.meta().positive[0].mime_types, ["text/plain"]);
}

// ---- metadata ----------------------------------------------------------------------------------

#[tokio::test]
async fn endpoint_metadata() {
    let endpoint = default_endpoints_factory()
        .endpoint()
        .tag("people")
        .short_description("Adds a person")
        .description("Adds a person and counts the items")
        .handler(async |input: Person| {
            Ok(Count {
                count: input.items.len(),
            })
        });
    let meta = endpoint.meta();
    assert!(meta.methods.is_empty());
    assert_eq!(endpoint.methods(), [Method::GET]);
    assert_eq!(meta.tag.as_deref(), Some("people"));
    assert_eq!(meta.short_description.as_deref(), Some("Adds a person"));
    assert_eq!(
        meta.description.as_deref(),
        Some("Adds a person and counts the items")
    );
    assert_eq!(meta.input_fields, ["age", "items", "name"]);
    let input = meta.input_schema.as_ref().unwrap().as_value();
    assert_eq!(input["properties"]["age"]["maximum"], 150);
    let output = meta.output_schema.as_ref().unwrap().as_value();
    assert_eq!(output["properties"]["count"]["maximum"], 10);
    assert_eq!(
        meta.positive[0].schema.as_value()["properties"]["data"]["properties"],
        output["properties"]
    );
    assert_eq!(meta.positive[0].status, 200);
    assert_eq!(meta.negative[0].status, 400);

    let several = default_endpoints_factory()
        .endpoint()
        .methods([Method::POST, Method::PUT])
        .handler(async |input: Person| {
            Ok(Count {
                count: input.items.len(),
            })
        });
    assert_eq!(several.methods(), [Method::POST, Method::PUT]);

    // a boxed service for a config, as routing builds it once per route
    let boxed = endpoint.boxed_service(&dev());
    let response = boxed
        .clone()
        .oneshot(
            Request::get("/?age=1&items=")
                .body(strata::Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(response.unwrap().status(), 400);
}

#[tokio::test]
async fn handlers_may_answer_another_2xx() {
    let create = default_endpoints_factory()
        .post()
        .handler(async |input: Greeting| {
            Ok(Reply::created(Count {
                count: input.greeting.len(),
            }))
        });
    let request = json_request(Method::POST, "/", r#"{"greeting":"hello"}"#);
    let (status, body) = call(&create, &dev(), request).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::CREATED,
            json!({"status": "success", "data": {"count": 5}})
        )
    );
    let schema = create.meta().output_schema.as_ref().unwrap().as_value();
    assert_eq!(schema["properties"]["count"]["maximum"], 10);
}

#[tokio::test]
async fn a_middleware_panic_is_a_500_too() {
    let early = Middleware::new(|(): (), request, _logger| {
        assert!(request.uri.query() != Some("sync"), "sync part exploded");
        let explode = request.uri.query() == Some("async");
        async move {
            assert!(!explode, "async part exploded");
            Ok(7u8)
        }
    });
    let endpoint = default_endpoints_factory()
        .add_middleware(early)
        .get()
        .handler_without_input(async || Ok(Count { count: 0 }));
    for (query, text) in [
        ("sync", "Panic: sync part exploded"),
        ("async", "Panic: async part exploded"),
    ] {
        let (status, body) = call(&endpoint, &dev(), get(&format!("/?{query}"))).await;
        assert_eq!((status.as_u16(), message(&body)), (500, text));
    }
    assert_eq!(call(&endpoint, &dev(), get("/")).await.0, 200);
}

#[tokio::test]
async fn replies_carry_headers() {
    use http::header::LOCATION;

    let create = default_endpoints_factory()
        .post()
        .handler(async |input: Greeting| {
            let location = HeaderValue::from_str(&format!("/greetings/{}", input.greeting))?;
            Ok(Reply::created(Count { count: 1 }).header(LOCATION, location))
        });
    let request = json_request(Method::POST, "/", r#"{"greeting":"hi"}"#);
    let response = create.service().oneshot(request).await.unwrap();
    assert_eq!(response.headers()[LOCATION], "/greetings/hi");
    assert_eq!(split(response).await.0, StatusCode::CREATED);
}

// ---- stages over services that are not Strata's ----------------------------------------------

#[derive(Debug, Deserialize, Validate, JsonSchema)]
struct Named {
    #[garde(length(chars, min = 1))]
    name: String,
}

/// A stage stacks on any tower service whose error converts into an `ApiError`: here a
/// `service_fn` failing with an `io::Error`, which becomes a 500 carrying it as its source.
#[tokio::test]
async fn stages_stack_on_foreign_services() {
    use strata::stages::format::FormatLayer;
    use strata::stages::validate::ValidateLayer;
    use tower::ServiceBuilder;

    let foreign = tower::service_fn(
        |request: Request<strata::core::Validated<Named, HNil>>| async move {
            let name = &request.body().input.name;
            if name == "disk" {
                Err(std::io::Error::other("the disk is full"))
            } else {
                Ok(format!("hello {name}"))
            }
        },
    );
    let mut validate = ServiceBuilder::new()
        .layer(ValidateLayer::<Named>::new())
        .service(foreign);
    let staged = |name: &str| {
        let mut input = strata::input::Input::new();
        input.insert("name", name.into());
        Request::new(strata::input::Staged { input, ctx: HNil })
    };
    let ok = validate
        .ready()
        .await
        .unwrap()
        .call(staged("ada"))
        .await
        .unwrap();
    assert_eq!(ok, "hello ada");
    let refused = validate
        .ready()
        .await
        .unwrap()
        .call(staged(""))
        .await
        .unwrap_err();
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let failed = validate
        .ready()
        .await
        .unwrap()
        .call(staged("disk"))
        .await
        .unwrap_err();
    assert_eq!(failed.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(failed.source().unwrap().to_string(), "the disk is full");

    // The format stage too: a foreign error is a formatted 500, never a failed service.
    let failing = tower::service_fn(|_: Request<String>| async {
        Err::<Output, _>(std::io::Error::other("no"))
    });
    let format = ServiceBuilder::new()
        .layer(FormatLayer::new(DefaultResultHandler))
        .service(failing);
    let response = format.oneshot(Request::new(String::new())).await.unwrap();
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
}

#[derive(Debug, Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Nap {
    ms: u64,
}

/// Stages are tower services whose errors box into `BoxError`, so tower's own middleware (whose
/// errors are `BoxError`s) fit between them, and a stage's error that went through them keeps
/// its status and message.
// Paused time: the handler's naps and the 200 ms timeout are timers of tokio's clock, which
// moves only when nothing else can run, so a busy machine cannot let the timeout overtake
// a 1 ms nap.
#[tokio::test(start_paused = true)]
async fn stages_sit_under_towers_timeout_buffer_and_load_shed() {
    use strata::core::{HNil, Validated};
    use strata::stages::format::FormatLayer;
    use strata::stages::parse::ParseLayer;
    use strata::stages::validate::ValidateLayer;

    let handler = tower::service_fn(|request: Request<Validated<Nap, HNil>>| async move {
        let ms = request.into_body().input.ms;
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok::<_, ApiError>(Output::new(&json!({ "slept": ms }))?)
    });
    let stack = tower::ServiceBuilder::new()
        .layer(FormatLayer::new(DefaultResultHandler).mode(Mode::Development))
        .buffer(4)
        .timeout(Duration::from_millis(200))
        .load_shed()
        .layer(ParseLayer::new().body_limit(16))
        .layer(strata::stages::combine::CombineLayer::new())
        .layer(ValidateLayer::<Nap>::new())
        .service(handler);

    let (status, body) = split(stack.clone().oneshot(get("/?ms=1")).await.unwrap()).await;
    assert_eq!(
        (status, &body),
        (
            StatusCode::OK,
            &json!({"status": "success", "data": {"slept": 1}})
        )
    );
    // The parse stage's 413 went through load shedding, the timeout and the buffer as a
    // `BoxError`, and is still a 413.
    let too_big = json_request(Method::POST, "/", r#"{"ms": 1, "padding": "over sixteen"}"#);
    let (status, body) = split(stack.clone().oneshot(too_big).await.unwrap()).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(message(&body), "Request body exceeds the limit of 16 bytes");
    // The validate stage's 400 too.
    let (status, body) = split(stack.clone().oneshot(get("/?ms=x")).await.unwrap()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    // tower's own error is a 500 with its text (development mode), not a dropped request.
    let (status, body) = split(stack.oneshot(get("/?ms=1000")).await.unwrap()).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(message(&body), "request timed out");
}

/// An endpoint's two stacks: the stages alone, and with the application's layers between the
/// parse and combine stages (an identity layer here).
fn with_and_without_layers_after_the_body() -> [(&'static str, Config); 2] {
    [
        ("stages alone", dev()),
        (
            "layers after the body",
            Config::builder()
                .mode(Mode::Development)
                .after_body(tower::layer::util::Identity::new())
                .build(),
        ),
    ]
}

/// A middleware that adds its name to `x-amended` on whatever the endpoint answers, or fails.
#[derive(Clone)]
struct Tag {
    name: &'static str,
    fails: bool,
}

struct Tagged(&'static str);

impl strata::stages::middleware::AmendResponse for Tagged {
    fn amend<R: strata::stages::middleware::Amend>(self, outcome: &mut Result<R, ApiError>) {
        strata::stages::middleware::outcome_headers(outcome)
            .append("x-amended", HeaderValue::from_static(self.0));
    }
}

impl<C> strata::stages::middleware::MiddlewareHandler<(), C> for Tag {
    type Output = &'static str;
    type Future = std::future::Ready<Result<&'static str, ApiError>>;
    type Amends = Tagged;

    fn call(&self, (): (), _request: &Parts, _ctx: &C, _logger: &Logger) -> Self::Future {
        std::future::ready(if self.fails {
            Err(http_error!(403, "{} refuses", self.name))
        } else {
            Ok(self.name)
        })
    }

    fn amends(output: &&'static str) -> Tagged {
        Tagged(output)
    }
}

#[derive(Serialize, Validate, JsonSchema)]
struct Done {
    #[garde(skip)]
    length: usize,
}

#[tokio::test]
async fn middleware_amend_the_outcome_innermost_first_whichever_stage_failed() {
    let tag = |name, fails| Middleware::custom(Tag { name, fails });
    let two = default_endpoints_factory()
        .add_middleware(tag("first", false))
        .add_middleware(tag("second", false));
    let fine = two
        .get()
        .handler_without_input(async || Ok(Done { length: 0 }));
    let failing = two
        .get()
        .handler_without_input(async || Err::<Done, _>(http_error!(409, "taken")));
    let refused = two
        .add_middleware(tag("third", true))
        .get()
        .handler_without_input(async || Ok(Done { length: 0 }));
    for (build, config) in with_and_without_layers_after_the_body() {
        for (endpoint, status) in [
            (&fine, StatusCode::OK),
            (&failing, StatusCode::CONFLICT),
            (&refused, StatusCode::FORBIDDEN),
        ] {
            let response = endpoint
                .service_with(&config)
                .oneshot(get("/"))
                .await
                .unwrap();
            assert_eq!(response.status(), status, "{build}");
            let amended: Vec<_> = response.headers().get_all("x-amended").iter().collect();
            // The second middleware's service sits inside the first's, so it amends first;
            // the third failed, so it has nothing to amend with.
            assert_eq!(amended, ["second", "first"], "{build}, {status}");
        }
    }
}

static HANDLER_ENTERED: tokio::sync::Notify = tokio::sync::Notify::const_new();
static HANDLER_GATE: tokio::sync::Notify = tokio::sync::Notify::const_new();

#[tokio::test]
async fn a_body_holds_its_share_of_the_budget_until_the_outcome_is_known() {
    #[derive(Deserialize, Validate, JsonSchema)]
    struct Note {
        #[garde(skip)]
        text: String,
    }
    let endpoint = default_endpoints_factory()
        .post()
        .handler(async |note: Note| {
            HANDLER_ENTERED.notify_one();
            HANDLER_GATE.notified().await;
            Ok(Done {
                length: note.text.len(),
            })
        });
    let body = format!(r#"{{"text":"{}"}}"#, "n".repeat(100));
    for (build, mut config) in with_and_without_layers_after_the_body() {
        let budget = strata::stages::parse::BodyBudget::new(1 << 20);
        config.pipeline.body_budget = Some(budget.clone());
        let request = json_request(Method::POST, "/", &body);
        let answer = tokio::spawn(endpoint.service_with(&config).oneshot(request));
        // The handler has the parsed body and waits: the body is still in memory, and still
        // counted.
        tokio::time::timeout(Duration::from_secs(5), HANDLER_ENTERED.notified())
            .await
            .unwrap_or_else(|_| panic!("{build}: the handler never ran"));
        assert!(budget.used() >= body.len(), "{build}: {}", budget.used());
        HANDLER_GATE.notify_one();
        let (status, answer) = split(answer.await.unwrap().unwrap()).await;
        assert_eq!(status, StatusCode::OK, "{build}: {answer}");
        assert_eq!(answer["data"]["length"], 100, "{build}");
        assert_eq!(budget.used(), 0, "{build}");
    }
}

/// None of a request's headers come along on its response, or on a later response on the same
/// thread, with or without a middleware's headers, after a success or an error (until issue
/// 48 responses reused the maps of earlier requests, emptied).
#[tokio::test(flavor = "current_thread")]
async fn a_response_carries_none_of_a_request_s_headers() {
    let tagged = default_endpoints_factory()
        .add_middleware(Middleware::custom(Tag {
            name: "tag",
            fails: false,
        }))
        .get()
        .handler_without_input(async || Ok(Done { length: 0 }));
    let config = dev();
    let request = |uri: &str| {
        let mut request = get(uri);
        for i in 0..10 {
            let name = http::HeaderName::try_from(format!("x-request-{i}")).unwrap();
            request
                .headers_mut()
                .insert(name, HeaderValue::from_static("sent"));
        }
        request
    };
    for round in 0..3 {
        for (endpoint, uri, expected) in [
            (&echo(), "/?n=1", &["content-type"][..]),
            (&echo(), "/?n=x", &["content-type"][..]),
            (&tagged, "/", &["x-amended", "content-type"][..]),
        ] {
            let response = endpoint
                .service_with(&config)
                .oneshot(request(uri))
                .await
                .unwrap();
            let names: Vec<_> = response
                .headers()
                .keys()
                .map(http::HeaderName::as_str)
                .collect();
            assert_eq!(names, expected, "round {round}, {uri}");
        }
    }
}
