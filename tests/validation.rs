//! Every problem of an input in one 400, each with its wire path, in JSON's words: one test per
//! row of the table in the validation issue, then the same rule for middleware, pagination and
//! multipart inputs, `null` for optional fields, integers written as `1.0`, and the cap.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use garde::Validate;
use http::header::CONTENT_TYPE;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use strata::paginate::{OffsetInput, OffsetPage, pagination};
use strata::prelude::*;
use strata::upload::MultipartForm;
use strata::{Config, Router, Routing, UploadLimits, UploadedFile};
use tower::ServiceExt;

#[derive(Debug, Deserialize, Validate, JsonSchema)]
struct NewUser {
    #[garde(length(chars, min = 1))]
    name: String,
    #[garde(range(min = 0))]
    age: i64,
    #[garde(skip)]
    #[allow(dead_code)] // only its schema matters here
    role: Option<Role>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Role {
    Admin,
    Reader,
}

#[derive(Debug, Deserialize, Validate, JsonSchema)]
struct UserId {
    #[garde(skip)]
    #[allow(dead_code)] // only its schema matters here
    id: i64,
}

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Done {
    ok: bool,
}

fn done() -> Done {
    Done { ok: true }
}

pagination! {
    Items: offset { items_name: "items", max_limit: 10, default_limit: 5 }
}

fn routing() -> Routing {
    let create = default_endpoints_factory()
        .post()
        .handler(async |_: NewUser| Ok(done()));
    let one = default_endpoints_factory()
        .get()
        .handler(async |_: UserId| Ok(done()));
    let items = default_endpoints_factory()
        .get()
        .handler(async |input: OffsetInput<Items>| {
            Ok(OffsetPage::<Items, Done>::new(Vec::new(), 0, &input))
        });
    routing! {
        "v1" => {
            "users" => { "post" => create, ":id" => one },
            "items" => { "offset" => items },
        }
    }
}

async fn send(routing: &Routing, config: &Config, request: Request<String>) -> (StatusCode, Value) {
    let router = Router::new(routing, config).unwrap();
    let response = router.oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

/// The 400's message for `request` against the table's routing.
async fn message_of(request: Request<String>) -> String {
    message_of_at(
        &routing(),
        &create_config().cors(Cors::Enabled).build(),
        request,
    )
    .await
}

/// The 400's message for `request` against `routing`.
async fn message_of_at(routing: &Routing, config: &Config, request: Request<String>) -> String {
    let (status, body) = send(routing, config, request).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    body["error"]["message"].as_str().unwrap().to_owned()
}

fn post(uri: &str, body: &str) -> Request<String> {
    Request::post(uri)
        .header(CONTENT_TYPE, "application/json")
        .body(body.to_owned())
        .unwrap()
}

fn get(uri: &str) -> Request<String> {
    Request::get(uri).body(String::new()).unwrap()
}

#[tokio::test]
async fn a_missing_field_is_named_with_its_path() {
    assert_eq!(
        message_of(post("/v1/users", r#"{"name":"Dan"}"#)).await,
        "age: required"
    );
}

#[tokio::test]
async fn every_missing_field_is_named() {
    assert_eq!(
        message_of(post("/v1/users", "{}")).await,
        "age: required; name: required"
    );
}

#[tokio::test]
async fn a_rule_and_a_type_error_together() {
    assert_eq!(
        message_of(post("/v1/users", r#"{"name":"","age":-1.5}"#)).await,
        "age: expected integer, received number -1.5; name: length is lower than 1"
    );
}

#[tokio::test]
async fn a_path_parameter_in_json_words() {
    assert_eq!(
        message_of(get("/v1/users/abc")).await,
        "id: expected integer, received string \"abc\""
    );
}

#[tokio::test]
async fn every_pagination_field() {
    assert_eq!(
        message_of(get("/v1/items/offset?limit=abc&offset=-1")).await,
        "limit: expected integer, received string \"abc\"; offset: lower than 0"
    );
}

#[tokio::test]
async fn enums_name_their_values_and_long_values_are_cut() {
    let long = "x".repeat(500);
    let message = message_of(post(
        "/v1/users",
        &format!(r#"{{"name":"{long}","age":1,"role":"{long}"}}"#),
    ))
    .await;
    assert_eq!(
        message,
        format!(
            "role: expected one of \"admin\" | \"reader\" or null, received string \"{}…\"",
            "x".repeat(40)
        )
    );
}

#[tokio::test]
async fn integers_written_as_floats_are_refused() {
    // JavaScript never writes `1.0` (`JSON.stringify(1.0)` is `1`); a float there is a client
    // that means a float.
    assert_eq!(
        message_of(post("/v1/users", r#"{"name":"Dan","age":1.0}"#)).await,
        "age: expected integer, received number 1.0"
    );
    assert_eq!(
        message_of(get("/v1/users/1.0")).await,
        "id: expected integer, received string \"1.0\""
    );
}

#[derive(Debug, Deserialize, Validate, JsonSchema)]
struct Profile {
    #[garde(skip)]
    bio: Option<String>,
    #[garde(skip)]
    #[serde(default, deserialize_with = "strata::decode::not_null")]
    #[schemars(with = "String")]
    nickname: Option<String>,
}

#[tokio::test]
async fn null_is_none_for_optional_fields_unless_the_field_refuses_it() {
    let profile = default_endpoints_factory()
        .post()
        .handler(async |input: Profile| {
            Ok(Done {
                ok: input.bio.is_none() && input.nickname.is_none(),
            })
        });
    let routing = routing! { "profile" => profile };
    let config = create_config().cors(Cors::Enabled).build();
    // `Option<T>`: absent and `null` are both `None`, as serde reads them.
    for body in ["{}", r#"{"bio":null}"#] {
        let (status, answer) = send(&routing, &config, post("/profile", body)).await;
        assert_eq!(
            (status, &answer["data"]["ok"]),
            (StatusCode::OK, &json!(true))
        );
    }
    // `not_null`: absent is `None`, `null` is refused.
    let (status, answer) = send(&routing, &config, post("/profile", r#"{"nickname":null}"#)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        answer["error"]["message"],
        "nickname: expected string, received null"
    );
}

/// An empty value is `None` (an HTML form sends an empty field so), any other a number: the
/// schema says `number`, the field reads more.
fn empty_as_none<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<f64>, D::Error> {
    let text = String::deserialize(deserializer)?;
    if text.is_empty() {
        return Ok(None);
    }
    text.parse().map(Some).map_err(serde::de::Error::custom)
}

#[derive(Debug, Deserialize, Validate, JsonSchema)]
struct QueryTypes {
    #[garde(skip)]
    #[serde(default, deserialize_with = "empty_as_none")]
    #[schemars(with = "Option<f64>")]
    num: Option<f64>,
    #[garde(skip)]
    #[allow(dead_code)] // only whether it decodes matters here
    int: Option<i64>,
    #[garde(skip)]
    #[serde(rename = "bool")]
    #[allow(dead_code)] // only whether it decodes matters here
    flag: Option<bool>,
}

#[tokio::test]
async fn a_value_its_field_reads_is_not_named_though_its_schema_refuses_it() {
    let query_types = default_endpoints_factory()
        .get()
        .handler(async |input: QueryTypes| {
            Ok(Done {
                ok: input.num.is_none(),
            })
        });
    let routing = routing! { "v1" => { "query-types" => query_types } };
    let config = create_config().cors(Cors::Enabled).build();
    let (status, body) = send(
        &routing,
        &config,
        get("/v1/query-types?num=&int=1.5&bool=yes"),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let message = body["error"]["message"].as_str().unwrap();
    assert_eq!(
        message,
        "bool: expected boolean, received string \"yes\"; \
         int: expected integer, received string \"1.5\""
    );
    assert!(!message.contains("num"), "{message}");
    let (status, body) = send(&routing, &config, get("/v1/query-types?num=")).await;
    assert_eq!(
        (status, &body["data"]["ok"]),
        (StatusCode::OK, &json!(true))
    );
    // What the field itself refuses is named.
    let message = message_of_at(&routing, &config, get("/v1/query-types?num=abc")).await;
    assert_eq!(message, "num: expected number, received string \"abc\"");
}

#[derive(Debug, Deserialize, Validate, JsonSchema)]
struct ApiKey {
    #[garde(length(chars, min = 3))]
    key: String,
    #[garde(range(min = 1))]
    version: u8,
}

#[tokio::test]
async fn middleware_inputs_list_every_problem_too() {
    let secured = default_endpoints_factory()
        .add_middleware(Middleware::new(|_: ApiKey, _request, _logger| async move {
            Ok::<_, ApiError>(())
        }))
        .get()
        .handler_without_input(async || Ok(done()));
    let routing = routing! { "secured" => secured };
    let config = create_config().cors(Cors::Enabled).build();
    let (status, body) = send(&routing, &config, get("/secured?version=x")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body["error"]["message"],
        "key: required; version: expected integer, received string \"x\""
    );
    let (_, body) = send(&routing, &config, get("/secured?key=ab&version=0")).await;
    assert_eq!(
        body["error"]["message"],
        "key: length is lower than 3; version: lower than 1"
    );
}

#[derive(Debug, Deserialize, Validate, JsonSchema)]
struct Cover {
    #[garde(length(chars, max = 5))]
    caption: String,
    #[garde(range(max = 10))]
    page: u32,
    #[garde(skip)]
    #[allow(dead_code)] // only its presence matters here
    image: UploadedFile,
}

#[tokio::test]
async fn multipart_fields_list_every_problem_too() {
    let upload = default_endpoints_factory()
        .post()
        .handler(async |_: Cover| Ok(done()));
    let routing = routing! { "covers" => upload };
    let config = create_config()
        .cors(Cors::Enabled)
        .upload(UploadLimits::new())
        .build();
    let form = MultipartForm::new()
        .text("caption", "far too long")
        .text("page", "ten");
    let request = Request::post("/covers")
        .header(CONTENT_TYPE, form.content_type())
        .body(String::from_utf8(form.into_bytes().to_vec()).unwrap())
        .unwrap();
    let (status, body) = send(&routing, &config, request).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body["error"]["message"],
        "caption: length is greater than 5; image: required; \
         page: expected integer, received string \"ten\""
    );
    // A text field where a file is wanted: the schema cannot tell, serde can; both speak.
    let form = MultipartForm::new()
        .text("caption", "far too long")
        .text("image", "not a file");
    let request = Request::post("/covers")
        .header(CONTENT_TYPE, form.content_type())
        .body(String::from_utf8(form.into_bytes().to_vec()).unwrap())
        .unwrap();
    let (_, body) = send(&routing, &config, request).await;
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("caption: length is greater than 5; image: "),
        "{message}"
    );
    assert!(message.contains("page: required"), "{message}");
}

#[derive(Debug, Deserialize, Validate, JsonSchema)]
struct Batch {
    #[garde(skip)]
    #[allow(dead_code)] // only its schema matters here
    ids: Vec<u32>,
}

#[tokio::test]
async fn the_message_stops_at_a_hundred_issues() {
    let batch = default_endpoints_factory()
        .post()
        .handler(async |_: Batch| Ok(done()));
    let routing = routing! { "batch" => batch };
    let config = create_config().cors(Cors::Enabled).build();
    let ids: Vec<String> = (0..10_000).map(|i| format!("\"id-{i}\"")).collect();
    let body = format!(r#"{{"ids":[{}]}}"#, ids.join(","));
    let (status, answer) = send(&routing, &config, post("/batch", &body)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("ids[0]: expected integer, received string \"id-0\"; "));
    assert_eq!(message.matches("expected integer").count(), 100);
    assert!(message.ends_with("; … and 9900 more"), "{message}");
    assert!(message.len() < 8 * 1024, "{} bytes", message.len());
}

/// The same explanations reach a hand-built stack: the decoder is the validate stage's.
#[tokio::test]
async fn the_decoder_explains_the_same_way() {
    let mut input = strata::input::Input::new();
    input.insert("age", "old".into());
    let error = strata::decode::Decoder::<NewUser>::new()
        .decode(&input)
        .unwrap_err();
    assert_eq!(
        error.message(),
        "age: expected integer, received string \"old\"; name: required"
    );
}
