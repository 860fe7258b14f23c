//! The OpenAPI document through the facade: one test per promise of the document, snapshots of
//! the examples' documents, and the routes that serve it.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::collections::BTreeSet;
use strata::endpoint::MiddlewareChain;
use strata::{
    Config, Ctx, Endpoint, EndpointsFactory, InputSource, ResultHandler, Router, Routing, Security,
    UploadLimits, UploadedFile,
};

use garde::Validate;
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use strata::core::{DeclaredError, ResponseHeader};
use strata::openapi::{
    DocsPage, Documentation, DocumentationError, OpenApiVersion, docs_page, openapi_endpoint,
};
use strata::paginate::{OffsetInput, OffsetPage, pagination};
use strata::prelude::*;
use tower::ServiceExt;

#[allow(dead_code)]
#[path = "../examples/library.rs"]
mod library;

#[allow(dead_code)]
#[path = "../examples/auth.rs"]
mod auth;

mod common;

#[derive(Clone, Serialize, Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct User {
    id: u32,
    name: String,
}

#[derive(Deserialize, Validate, JsonSchema)]
struct UserId {
    #[garde(range(min = 1))]
    id: u32,
}

#[derive(Deserialize, Validate, JsonSchema)]
struct NewUser {
    /// The name shown to others.
    #[garde(length(chars, min = 1))]
    #[schemars(example = &"Ada")]
    name: String,
    #[garde(range(max = 150))]
    age: Option<u8>,
    #[garde(skip)]
    #[serde(default)]
    #[allow(dead_code)] // documented, not read
    tags: Vec<String>,
}

#[derive(Deserialize, Validate, JsonSchema)]
struct Search {
    #[garde(skip)]
    #[schemars(example = &["a", "b"])]
    tags: Vec<String>,
    #[garde(skip)]
    #[serde(rename = "x-trace")]
    trace: Option<String>,
}

fn doc_of(routing: &Routing, config: &Config) -> Value {
    Documentation::new(routing, config)
        .title("Test API")
        .version("1.2.0")
        .server_url("https://example.com")
        .server_url("http://localhost:8090")
        .tag_description("users", "Everything about users")
        .build()
        .unwrap()
        .to_value()
}

fn config() -> Config {
    Config::builder().cors(Cors::Enabled).build()
}

fn get_user() -> Endpoint {
    default_endpoints_factory()
        .get()
        .tag("users")
        .short_description("One user")
        .description("The user with this id, or a 404.")
        .error_response(StatusCode::NOT_FOUND, "No such user")
        .handler(async |input: UserId| {
            Ok(User {
                id: input.id,
                name: "Ada".into(),
            })
        })
}

fn create_user() -> Endpoint {
    default_endpoints_factory()
        .post()
        .tag("users")
        .success_status(StatusCode::CREATED)
        .handler(async |input: NewUser| {
            Ok(Reply::created(User {
                id: 1,
                name: input.name,
            }))
        })
}

fn users_routing() -> Routing {
    routing! {
        "v1" => {
            "users" => {
                "post" => create_user(),
                ":id" => get_user(),
            },
        },
    }
}

/// Every `$ref` of `value` (the document) resolves.
fn assert_refs_resolve(doc: &Value, value: &Value) {
    match value {
        Value::Object(object) => {
            for (key, inner) in object {
                if key == "$ref" {
                    let target = inner.as_str().unwrap();
                    let name = target.strip_prefix("#/components/schemas/").unwrap();
                    assert!(
                        doc["components"]["schemas"].get(name).is_some(),
                        "{target} does not resolve"
                    );
                } else {
                    assert_refs_resolve(doc, inner);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| assert_refs_resolve(doc, item)),
        _ => {}
    }
}

#[test]
fn every_route_is_an_operation_with_head_for_get_and_no_options() {
    let doc = doc_of(&users_routing(), &config());
    assert_eq!(doc["openapi"], "3.2.0");
    assert_eq!(
        doc["info"],
        json!({ "title": "Test API", "version": "1.2.0" })
    );
    assert_eq!(
        doc["servers"],
        json!([{ "url": "https://example.com" }, { "url": "http://localhost:8090" }])
    );
    let paths: BTreeSet<&String> = doc["paths"].as_object().unwrap().keys().collect();
    assert_eq!(
        paths,
        BTreeSet::from([&"/v1/users".to_owned(), &"/v1/users/{id}".to_owned()])
    );
    let methods = |path: &str| -> Vec<String> {
        doc["paths"][path]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    assert_eq!(methods("/v1/users"), ["post"]);
    assert_eq!(methods("/v1/users/{id}"), ["get", "head"]);
    let head = &doc["paths"]["/v1/users/{id}"]["head"];
    assert_eq!(head["operationId"], "headV1UsersId");
    for (status, response) in head["responses"].as_object().unwrap() {
        assert!(
            response.get("content").is_none(),
            "HEAD {status} has no body"
        );
        assert!(response["description"].is_string());
    }
    assert_refs_resolve(&doc, &doc);
}

#[test]
fn tags_descriptions_and_deprecation() {
    let old = default_endpoints_factory()
        .get()
        .tag("legacy")
        .description("A long description of an endpoint that is kept only for old clients.")
        .deprecated()
        .handler_without_input(async || {
            Ok(User {
                id: 1,
                name: "x".into(),
            })
        });
    let routing = users_routing().route("old", old);
    let doc = doc_of(&routing, &config());
    let get = &doc["paths"]["/v1/users/{id}"]["get"];
    assert_eq!(get["tags"], json!(["users"]));
    assert_eq!(get["summary"], "One user");
    assert_eq!(get["description"], "The user with this id, or a 404.");
    assert!(get.get("deprecated").is_none());
    let old = &doc["paths"]["/old"]["get"];
    assert_eq!(old["deprecated"], true);
    // Without a short description the summary is the description, cut at 50 characters.
    assert_eq!(
        old["summary"],
        "A long description of an endpoint that is kept onl…"
    );
    assert_eq!(
        doc["tags"],
        json!([
            { "name": "legacy" },
            { "name": "users", "description": "Everything about users" },
        ])
    );
}

#[test]
fn operation_ids_are_derived_overridable_and_unique() {
    let doc = doc_of(&users_routing(), &config());
    assert_eq!(
        doc["paths"]["/v1/users/{id}"]["get"]["operationId"],
        "getV1UsersId"
    );
    assert_eq!(
        doc["paths"]["/v1/users"]["post"]["operationId"],
        "postV1Users"
    );
    let named = default_endpoints_factory()
        .get()
        .operation_id("findUser")
        .handler(async |input: UserId| {
            Ok(User {
                id: input.id,
                name: String::new(),
            })
        });
    let doc = doc_of(&routing! { "/users/:id" => named.clone() }, &config());
    assert_eq!(
        doc["paths"]["/users/{id}"]["get"]["operationId"],
        "findUser"
    );
    assert_eq!(
        doc["paths"]["/users/{id}"]["head"]["operationId"],
        "headFindUser"
    );
    // The same id on two routes is an error naming both.
    let clash = routing! { "/users/:id" => named.clone(), "/people/:id" => named };
    let error = Documentation::new(&clash, &config()).build().unwrap_err();
    assert!(matches!(
        error,
        DocumentationError::DuplicateOperationId { .. }
    ));
    assert_eq!(
        error.to_string(),
        "GET /people/:id: the operation id `findUser` is already used by GET /users/:id; choose another with `.operation_id(..)`"
    );
    // Several methods: the method is appended.
    let both = default_endpoints_factory()
        .endpoint()
        .methods([Method::PUT, Method::PATCH])
        .operation_id("saveUser")
        .handler(async |input: UserId| {
            Ok(User {
                id: input.id,
                name: String::new(),
            })
        });
    let doc = doc_of(&routing! { "/users/:id" => both }, &config());
    assert_eq!(
        doc["paths"]["/users/{id}"]["put"]["operationId"],
        "saveUserPut"
    );
    assert_eq!(
        doc["paths"]["/users/{id}"]["patch"]["operationId"],
        "saveUserPatch"
    );
}

#[tokio::test]
async fn inputs_are_where_the_config_reads_them_and_required_as_validated() {
    let search = default_endpoints_factory()
        .get()
        .handler(async |input: Search| {
            Ok(User {
                id: u32::try_from(input.tags.len()).unwrap_or(0),
                name: input.trace.unwrap_or_default(),
            })
        });
    let routing = users_routing().route("search", search);
    let config = create_config()
        .cors(Cors::Enabled)
        .input_sources(
            &Method::GET,
            [
                InputSource::Query,
                InputSource::Params,
                InputSource::Headers,
            ],
        )
        .build();
    let doc = doc_of(&routing, &config);

    let get = &doc["paths"]["/v1/users/{id}"]["get"];
    // A sized integer has its type's bounds where its rules give none: a larger id, valid by
    // a document without them, is refused by the server.
    assert_eq!(
        get["parameters"],
        json!([{ "name": "id", "in": "path", "required": true,
                 "schema": { "type": "integer", "format": "uint32", "minimum": 1,
                             "maximum": 4_294_967_295_u32 } }])
    );
    assert!(get.get("requestBody").is_none());

    let search = &doc["paths"]["/search"]["get"];
    assert_eq!(search["parameters"][0]["name"], "tags");
    assert_eq!(search["parameters"][0]["in"], "query");
    assert_eq!(search["parameters"][0]["required"], true);
    assert_eq!(search["parameters"][0]["style"], "form");
    assert_eq!(search["parameters"][0]["explode"], true);
    assert_eq!(search["parameters"][0]["example"], json!(["a", "b"]));
    // A header-like name is a header when the method reads headers.
    assert_eq!(search["parameters"][1]["name"], "x-trace");
    assert_eq!(search["parameters"][1]["in"], "header");
    assert_eq!(search["parameters"][1]["required"], false);

    let post = &doc["paths"]["/v1/users"]["post"];
    assert!(post.get("parameters").is_none());
    let body = &post["requestBody"];
    assert_eq!(body["required"], true);
    let content = body["content"].as_object().unwrap();
    // A list (`tags`) in a form cannot be told from one value, nor sent empty: JSON only.
    assert_eq!(content.keys().collect::<Vec<_>>(), ["application/json"]);
    let schema = &body["content"]["application/json"]["schema"];
    assert_eq!(schema["properties"]["tags"]["type"], "array");
    assert_eq!(schema["required"], json!(["name"]));
    assert_eq!(schema["properties"]["name"]["minLength"], 1);
    assert_eq!(
        schema["properties"]["name"]["description"],
        "The name shown to others."
    );
    assert_eq!(
        body["content"]["application/json"]["example"],
        json!({ "name": "Ada" })
    );

    // What the document requires is what the server requires.
    let router = Router::new(&routing, &config).unwrap();
    let post = |body: &'static str| {
        Request::post("/v1/users")
            .header("content-type", "application/json")
            .body(body.to_owned())
            .unwrap()
    };
    let only_required = router
        .clone()
        .oneshot(post(r#"{"name":"Ada"}"#))
        .await
        .unwrap();
    assert_eq!(only_required.status(), StatusCode::CREATED);
    let missing = router.oneshot(post(r#"{"age":3}"#)).await.unwrap();
    assert_eq!(missing.status(), StatusCode::BAD_REQUEST);
}

#[derive(Deserialize, Validate, JsonSchema)]
struct AvatarUpload {
    #[garde(range(min = 1))]
    id: u32,
    #[garde(skip)]
    avatar: UploadedFile,
    #[garde(skip)]
    #[allow(dead_code)] // documented, not read
    extra: Vec<UploadedFile>,
    #[garde(length(chars, max = 20))]
    note: Option<String>,
}

fn avatar_endpoint() -> Endpoint {
    default_endpoints_factory()
        .post()
        .handler(async |input: AvatarUpload| {
            Ok(User {
                id: input.id,
                name: input.avatar.name().to_owned(),
            })
        })
}

#[test]
fn file_inputs_are_multipart_and_need_uploads() {
    let routing = routing! { "/users/:id/avatar" => avatar_endpoint() };
    let config = create_config()
        .cors(Cors::Disabled)
        .upload(UploadLimits::new())
        .build();
    let doc = doc_of(&routing, &config);
    let body = &doc["paths"]["/users/{id}/avatar"]["post"]["requestBody"];
    let content = body["content"].as_object().unwrap();
    assert_eq!(content.keys().collect::<Vec<_>>(), ["multipart/form-data"]);
    let schema = &content["multipart/form-data"]["schema"];
    assert_eq!(schema["required"], json!(["avatar", "extra"]));
    assert_eq!(
        schema["properties"]["avatar"],
        json!({ "type": "string", "format": "binary", "contentMediaType": "application/octet-stream" })
    );
    assert_eq!(
        schema["properties"]["extra"]["items"]["contentMediaType"],
        "application/octet-stream"
    );
    assert!(
        schema["properties"].get("id").is_none(),
        "the path parameter is not in the body"
    );
    // Extra parts may have any UTF-8 name but one with a control character (except tab), which
    // cannot travel in a part's header.
    assert_eq!(
        schema["propertyNames"],
        json!({ "pattern": "^[^\\u0000-\\u0008\\u000A-\\u001F\\u007F]*$" })
    );

    let error = Documentation::new(&routing, &create_config().cors(Cors::Disabled).build())
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "POST /users/:id/avatar: the input takes files (avatar, extra) but uploads are not enabled in the config"
    );
}

#[derive(Deserialize, Validate, JsonSchema)]
struct Credentials {
    #[garde(length(min = 1))]
    key: String,
}

struct Account;

fn secured() -> EndpointsFactory<Ctx![Account], impl MiddlewareChain<Ctx![Account]>> {
    let auth = Middleware::new(|_input: Credentials, _request, _logger| async move { Ok(Account) })
        .security(Security::and([
            Security::input("key"),
            Security::header("X-Token").description("A session token"),
        ]))
        .error_response(StatusCode::UNAUTHORIZED, "Invalid credentials")
        .declared_error(
            DeclaredError::new(StatusCode::TOO_MANY_REQUESTS, "Slow down")
                .header(ResponseHeader::new("retry-after", "Seconds to wait")),
        );
    default_endpoints_factory().add_middleware(auth)
}

#[test]
fn middleware_inputs_security_and_declared_errors() {
    let read = secured().get().handler(async |input: UserId| {
        Ok(User {
            id: input.id,
            name: String::new(),
        })
    });
    let write = secured().patch().handler(async |input: UserId| {
        Ok(User {
            id: input.id,
            name: String::new(),
        })
    });
    let routing = routing! { "/users/:id" => { "get" => read, "patch" => write } };
    let doc = doc_of(&routing, &config());

    let get = &doc["paths"]["/users/{id}"]["get"];
    // The middleware's field is documented like the endpoint's: a required query parameter.
    assert_eq!(
        get["parameters"][1],
        json!({ "name": "key", "in": "query", "required": true, "schema": { "type": "string", "minLength": 1 } })
    );
    assert_eq!(
        get["security"],
        json!([{ "header_x-token": [], "query_key": [] }])
    );
    // In a PATCH the key is a body field.
    let patch = &doc["paths"]["/users/{id}"]["patch"];
    assert_eq!(
        patch["requestBody"]["content"]["application/json"]["schema"]["required"],
        json!(["key"])
    );
    assert_eq!(
        patch["security"],
        json!([{ "body_key": [], "header_x-token": [] }])
    );
    assert_eq!(
        doc["components"]["securitySchemes"],
        json!({
            "body_key": { "type": "apiKey", "name": "key", "in": "query", "x-in": "body",
                          "description": "The input field `key`, sent in the body" },
            "header_x-token": { "type": "apiKey", "name": "x-token", "in": "header",
                                "description": "A session token" },
            "query_key": { "type": "apiKey", "name": "key", "in": "query" },
        })
    );
    let responses = &get["responses"];
    assert_eq!(responses["401"]["description"], "Invalid credentials");
    assert_eq!(
        responses["429"]["headers"]["retry-after"]["description"],
        "Seconds to wait"
    );
    assert_eq!(
        responses["429"]["content"]["application/json"]["schema"],
        json!({ "$ref": "#/components/schemas/ErrorResponse" })
    );
}

#[test]
fn security_documents_the_401_of_a_missing_credential() {
    // No 401 declared: the stage's own 401 is documented.
    let auth = Middleware::new(|_input: Credentials, _request, _logger| async move { Ok(Account) })
        .security(Security::input("key"));
    let read = default_endpoints_factory()
        .add_middleware(auth)
        .get()
        .handler(async |input: UserId| {
            Ok(User {
                id: input.id,
                name: String::new(),
            })
        });
    let open = default_endpoints_factory()
        .get()
        .handler(async |input: UserId| {
            Ok(User {
                id: input.id,
                name: String::new(),
            })
        });
    let routing = routing! { "/users/:id" => read, "/open/:id" => open };
    let doc = doc_of(&routing, &config());
    assert_eq!(
        doc["paths"]["/users/{id}"]["get"]["responses"]["401"]["description"],
        "Unauthorized: a credential the operation's security names is missing"
    );
    assert!(doc["paths"]["/open/{id}"]["get"]["responses"]["401"].is_null());
    // A declared 401 keeps its own words (`secured` declares one).
    let read = secured().get().handler(async |input: UserId| {
        Ok(User {
            id: input.id,
            name: String::new(),
        })
    });
    let doc = doc_of(&routing! { "/users/:id" => read }, &config());
    assert_eq!(
        doc["paths"]["/users/{id}"]["get"]["responses"]["401"]["description"],
        "Invalid credentials"
    );
}

#[test]
fn responses_cover_success_statuses_and_every_pipeline_error() {
    let doc = doc_of(&users_routing(), &config());
    let post = &doc["paths"]["/v1/users"]["post"]["responses"];
    let statuses: Vec<&String> = post.as_object().unwrap().keys().collect();
    // 201 replaces the default 200; a body is read: 408, 413, 415 and 503 (the memory budget);
    // no path parameter: no 404.
    assert_eq!(statuses, ["201", "400", "408", "413", "415", "500", "503"]);
    assert_eq!(
        post["503"]["headers"]["retry-after"]["description"],
        "Seconds to wait before retrying"
    );
    assert_eq!(
        post["201"]["content"]["application/json"]["schema"],
        json!({
            "type": "object",
            "properties": { "status": { "const": "success" }, "data": { "$ref": "#/components/schemas/User" } },
            "required": ["status", "data"],
        })
    );
    let get = &doc["paths"]["/v1/users/{id}"]["get"]["responses"];
    let statuses: Vec<&String> = get.as_object().unwrap().keys().collect();
    assert_eq!(statuses, ["200", "400", "404", "500"]);
    // Declared by the handler, and also the router's answer to an unmatched path.
    assert!(
        get["404"]["description"]
            .as_str()
            .unwrap()
            .starts_with("No such user; Not found")
    );
    for (status, response) in get.as_object().unwrap() {
        assert!(
            !response["description"].as_str().unwrap().is_empty(),
            "{status}"
        );
        if status != "200" {
            assert_eq!(
                response["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/ErrorResponse"
            );
        }
    }
    assert_eq!(
        doc["components"]["schemas"]["ErrorResponse"]["properties"]["status"],
        json!({ "const": "error" })
    );
}

pagination! { Pages: offset { items_name: "users", max_limit: 50, default_limit: 10 } }

#[test]
fn pagination_inputs_and_pages() {
    let list = default_endpoints_factory()
        .get()
        .handler(async |input: OffsetInput<Pages>| {
            Ok(OffsetPage::new(Vec::<User>::new(), 0, &input))
        });
    let doc = doc_of(&routing! { "users" => list }, &config());
    let parameters = &doc["paths"]["/users"]["get"]["parameters"];
    assert_eq!(
        parameters,
        &json!([
            { "name": "limit", "in": "query", "required": false,
              "schema": { "type": "integer", "minimum": 1, "maximum": 50, "default": 10 } },
            { "name": "offset", "in": "query", "required": false,
              "schema": { "type": "integer", "format": "uint64", "minimum": 0,
                          "maximum": u64::MAX, "default": 0 } },
        ])
    );
    let data = &doc["paths"]["/users"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        ["properties"]["data"]["$ref"];
    let name = data.as_str().unwrap().rsplit('/').next().unwrap();
    let page = &doc["components"]["schemas"][name];
    assert_eq!(
        page["properties"]["users"]["items"]["$ref"],
        "#/components/schemas/User"
    );
    assert_eq!(
        page["required"],
        json!(["users", "total", "limit", "offset"])
    );
}

mod one {
    #[derive(serde::Serialize, garde::Validate, schemars::JsonSchema)]
    #[garde(allow_unvalidated)]
    pub(crate) struct Item {
        pub(crate) a: u32,
    }
}

mod two {
    #[derive(serde::Serialize, garde::Validate, schemars::JsonSchema)]
    #[garde(allow_unvalidated)]
    pub(crate) struct Item {
        pub(crate) b: String,
    }
}

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Both {
    first: one::Item,
    second: two::Item,
    users: Vec<User>,
}

#[test]
fn named_types_are_components_once_and_clashes_get_stable_names() {
    let both = default_endpoints_factory()
        .get()
        .handler_without_input(async || {
            Ok(Both {
                first: one::Item { a: 1 },
                second: two::Item { b: String::new() },
                users: Vec::new(),
            })
        });
    let routing = users_routing().route("both", both);
    let first = Documentation::new(&routing, &config())
        .build()
        .unwrap()
        .to_json_pretty();
    let doc: Value = serde_json::from_str(&first).unwrap();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    assert_eq!(
        schemas.keys().collect::<Vec<_>>(),
        ["Both", "ErrorResponse", "Item", "Item2", "User"]
    );
    assert_eq!(schemas["Item"]["required"], json!(["a"]));
    assert_eq!(schemas["Item2"]["required"], json!(["b"]));
    assert_eq!(
        schemas["Both"]["properties"]["users"]["items"]["$ref"],
        "#/components/schemas/User"
    );
    assert_refs_resolve(&doc, &doc);
    // The same routing gives the same document.
    let again = Documentation::new(&routing, &config())
        .build()
        .unwrap()
        .to_json_pretty();
    assert_eq!(first, again);
}

#[derive(Deserialize, Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Note {
    text: String,
    /// Optional when read, always written.
    #[serde(default)]
    stars: u8,
}

#[test]
fn a_type_read_and_written_differently_has_an_input_and_an_output_schema() {
    #[derive(Deserialize, Validate, JsonSchema)]
    struct Wrapper {
        #[garde(dive)]
        note: Note,
    }
    let echo = default_endpoints_factory()
        .post()
        .handler(async |input: Wrapper| Ok(input.note));
    let doc = doc_of(&routing! { "notes" => echo }, &config());
    let schemas = &doc["components"]["schemas"];
    let body =
        &doc["paths"]["/notes"]["post"]["requestBody"]["content"]["application/json"]["schema"];
    assert_eq!(
        body["properties"]["note"]["$ref"],
        "#/components/schemas/Note"
    );
    assert_eq!(
        doc["paths"]["/notes"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
            ["properties"]["data"]["$ref"],
        "#/components/schemas/NoteOutput"
    );
    assert_eq!(schemas["Note"]["required"], json!(["text"]));
    assert_eq!(schemas["NoteOutput"]["required"], json!(["text", "stars"]));
}

#[derive(Deserialize, Validate, JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)] // only described
enum Choice {
    Id {
        #[garde(skip)]
        id: u32,
    },
    Name {
        #[garde(skip)]
        name: String,
    },
}

#[test]
fn documentation_errors_name_the_route_and_the_problem() {
    // An input that is a choice, not an object.
    let choice = default_endpoints_factory()
        .get()
        .handler(async |_: Choice| {
            Ok(User {
                id: 1,
                name: String::new(),
            })
        });
    let error = Documentation::new(&routing! { "find" => choice }, &config())
        .build()
        .unwrap_err();
    assert!(
        matches!(error, DocumentationError::NotAnObject { .. }),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .starts_with("GET /find: the input `openapi::Choice` must be an object"),
        "{error}"
    );
    // A path parameter that is not an input field.
    let error = Documentation::new(&routing! { "/users/:slug" => get_user() }, &config())
        .build()
        .unwrap_err();
    assert!(
        matches!(error, DocumentationError::PathParam { .. }),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        "GET /users/:slug: the path parameter `slug` is not a field of the input"
    );
}

#[tokio::test]
async fn the_document_and_its_page_are_served() {
    let doc = Documentation::new(&users_routing(), &config())
        .build()
        .unwrap();
    let routing = users_routing()
        .route("openapi.json", openapi_endpoint(&doc))
        .route(
            "docs",
            docs_page(&DocsPage::new("/openapi.json").title("Users")),
        );
    let router = Router::new(&routing, &config()).unwrap();
    let get = |path: &str| Request::get(path).body(String::new()).unwrap();

    let response = router.clone().oneshot(get("/openapi.json")).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap(),
        doc.to_value()
    );

    let response = router.clone().oneshot(get("/docs")).await.unwrap();
    assert_eq!(
        response.headers()["content-type"],
        "text/html; charset=utf-8"
    );
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let html = std::str::from_utf8(&body).unwrap();
    assert!(html.contains("<title>Users</title>") && html.contains(r#"url: "/openapi.json""#));
    // The viewer at a pinned version, checked by the browser against its hash.
    assert!(html.contains(&format!(
        r#"<script src="{}" integrity="{}" crossorigin="anonymous"></script>"#,
        strata::openapi::SWAGGER_UI_SCRIPT,
        strata::openapi::SWAGGER_UI_SCRIPT_INTEGRITY
    )));
    assert!(html.contains(&format!(
        r#"<link rel="stylesheet" href="{}" integrity="{}" crossorigin="anonymous">"#,
        strata::openapi::SWAGGER_UI_STYLESHEET,
        strata::openapi::SWAGGER_UI_STYLESHEET_INTEGRITY
    )));
    assert!(!html.contains("swagger-ui-dist@5/"), "no floating version");

    // Serving them leaves the document unchanged: they describe nothing.
    let again = Documentation::new(&routing, &config()).build().unwrap();
    assert_eq!(again.to_value(), doc.to_value());

    let yaml = doc.to_yaml();
    assert!(yaml.starts_with("openapi: 3.2.0\n"), "{yaml}");
    assert!(yaml.contains("operationId: getV1UsersId"));
}

/// Compares `doc` with the committed snapshot; `UPDATE_SNAPSHOTS=1` rewrites it.
fn snapshot(name: &str, doc: &strata::openapi::OpenApi) {
    common::compare_snapshot(name, &(doc.to_json_pretty() + "\n"), "openapi");
}

#[test]
fn the_library_feed_describes_its_cursor() {
    let config = library::library_config().listen(8091).build();
    let routing = library::library_routing(std::env::temp_dir());
    let doc = library::library_documentation(&routing, &config, OpenApiVersion::V3_2)
        .unwrap()
        .to_value();
    let feed = &doc["paths"]["/v1/books/feed"]["get"];
    let cursor = feed["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|parameter| parameter["name"] == "cursor")
        .unwrap();
    // What `encode_cursor` writes: base64url, eight characters at least, no upper bound.
    assert_eq!(
        cursor["schema"]["pattern"],
        json!("^[A-Za-z0-9_-]+$"),
        "{cursor}"
    );
    assert_eq!(cursor["schema"]["minLength"], 8);
    assert!(cursor["schema"].get("maxLength").is_none());
    // And that one the API did not write is a 400, which the operation documents.
    assert!(
        cursor["description"]
            .as_str()
            .unwrap()
            .ends_with("is refused with 400."),
        "{cursor}"
    );
    assert!(feed["responses"]["400"].is_object());
}

/// The library's create, described by its outcomes: the `201` with the book and its required
/// `Location`, the `409` with the duplicate's body in the error envelope, the `403` an ordinary
/// error; no other success.
#[test]
fn the_library_create_documents_each_outcome() {
    let config = library::library_config().listen(8091).build();
    let routing = library::library_routing(std::env::temp_dir());
    for version in [OpenApiVersion::V3_2, OpenApiVersion::V3_1] {
        let doc = library::library_documentation(&routing, &config, version)
            .unwrap()
            .to_value();
        let responses = &doc["paths"]["/v1/books"]["post"]["responses"];
        let successes: Vec<&String> = responses
            .as_object()
            .unwrap()
            .keys()
            .filter(|status| status.starts_with('2'))
            .collect();
        assert_eq!(successes, ["201"], "{responses:#}");
        let created = &responses["201"];
        assert_eq!(created["description"], "The book, added.");
        assert_eq!(
            created["headers"],
            json!({ "location": {
                "description": "Where the book is now: `/v1/books/{id}`.",
                "required": true,
                "schema": { "type": "string" }
            }})
        );
        assert_eq!(
            created["content"]["application/json"]["schema"]["properties"]["data"],
            json!({ "$ref": "#/components/schemas/Book" })
        );
        let duplicate = &responses["409"];
        assert_eq!(
            duplicate["description"],
            "A book of this title (in any case) is there already."
        );
        let schema = &duplicate["content"]["application/json"]["schema"];
        assert_eq!(
            schema["properties"]["error"],
            json!({ "$ref": "#/components/schemas/Duplicate" })
        );
        assert_eq!(schema["required"], json!(["status", "error"]));
        assert_eq!(
            doc["components"]["schemas"]["Duplicate"]["required"],
            json!(["existingId", "message"])
        );
        let full = &responses["403"];
        assert_eq!(
            full["description"],
            "The library is full: 100 books at most."
        );
        assert_eq!(
            full["content"]["application/json"]["schema"],
            json!({ "$ref": "#/components/schemas/ErrorResponse" })
        );
    }
}

/// Outcomes whose headers a response may leave out: an `Option` field.
#[derive(strata::Outcomes)]
enum Accepted {
    /// Queued.
    #[outcome(status = 202)]
    Queued {
        /// Seconds until it is done, when known.
        #[outcome(header = "retry-after")]
        retry_after: Option<u32>,
        /// The job.
        #[outcome(header = "content-location")]
        job: String,
    },
}

#[test]
fn an_outcome_header_is_required_unless_its_field_is_an_option() {
    let queue = default_endpoints_factory()
        .post()
        .handler(async |_: UserId| {
            Ok(Accepted::Queued {
                retry_after: None,
                job: "/jobs/1".into(),
            })
        });
    let doc = doc_of(&routing! { "jobs" => queue }, &config());
    assert_eq!(
        doc["paths"]["/jobs"]["post"]["responses"]["202"]["headers"],
        json!({
            "content-location": {
                "description": "The job.",
                "required": true,
                "schema": { "type": "string" }
            },
            "retry-after": {
                "description": "Seconds until it is done, when known.",
                "schema": { "type": "integer" }
            }
        })
    );
}

/// Outcomes with a bodiless error the pipeline also answers.
#[derive(strata::Outcomes)]
enum Lookup {
    /// The user.
    #[outcome(status = 200)]
    Found(User),
    /// No user has this id.
    #[outcome(status = 404)]
    Missing,
}

#[test]
fn a_bodiless_error_outcome_is_described_by_the_shared_error_envelope() {
    let find = default_endpoints_factory()
        .get()
        .handler(async |_: UserId| Ok(Lookup::Missing));
    let doc = doc_of(&routing! { "/users/:id" => find }, &config());
    let missing = &doc["paths"]["/users/{id}"]["get"]["responses"]["404"];
    // The handler's 404 and the router's are the same envelope: one reference, no `anyOf`.
    assert_eq!(
        missing["content"]["application/json"]["schema"],
        json!({ "$ref": "#/components/schemas/ErrorResponse" }),
        "{missing:#}"
    );
    assert!(
        missing["description"]
            .as_str()
            .unwrap()
            .starts_with("No user has this id.; or: "),
        "{missing:#}"
    );
    let names: Vec<&String> = doc["components"]["schemas"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(names, ["ErrorResponse", "User"]);
}

#[test]
fn the_examples_documents_match_their_snapshots() {
    let config = library::library_config().listen(8091).build();
    let routing = library::library_routing(std::env::temp_dir());
    let doc = library::library_documentation(&routing, &config, OpenApiVersion::V3_2).unwrap();
    snapshot("library.openapi.json", &doc);
    let value = doc.to_value();
    assert_refs_resolve(&value, &value);

    let config = create_config().cors(Cors::Enabled).build();
    let doc =
        auth::auth_documentation(&auth::auth_routing(), &config, OpenApiVersion::V3_2).unwrap();
    snapshot("auth.openapi.json", &doc);
    let value = doc.to_value();
    assert_refs_resolve(&value, &value);
}

#[derive(Deserialize, Validate, JsonSchema)]
struct Nested {
    #[garde(dive)]
    user: UserId,
}

fn nested_endpoint(method: Method) -> Endpoint {
    default_endpoints_factory()
        .endpoint()
        .method(method)
        .handler(async |input: Nested| {
            Ok(User {
                id: input.user.id,
                name: String::new(),
            })
        })
}

#[test]
fn fields_that_cannot_be_read_where_the_config_puts_them_are_errors() {
    // An object in the query string.
    let error = Documentation::new(
        &routing! { "find" => nested_endpoint(Method::GET) },
        &config(),
    )
    .build()
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "GET /find: the input field `user` is an object, which a query parameter cannot carry"
    );
    // As JSON it is fine, but not as a form.
    let doc = doc_of(
        &routing! { "find" => nested_endpoint(Method::POST) },
        &config(),
    );
    let content = doc["paths"]["/find"]["post"]["requestBody"]["content"]
        .as_object()
        .unwrap();
    assert_eq!(content.keys().collect::<Vec<_>>(), ["application/json"]);
    // A file on a method whose sources take no files.
    let put_file = default_endpoints_factory()
        .put()
        .handler(async |input: AvatarUpload| {
            Ok(User {
                id: input.id,
                name: String::new(),
            })
        });
    let error = Documentation::new(
        &routing! { "/users/:id/avatar" => put_file },
        &create_config()
            .cors(Cors::Disabled)
            .upload(UploadLimits::new())
            .build(),
    )
    .build()
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "PUT /users/:id/avatar: the input field `avatar` is a file, but the config's input sources for this method take no files"
    );
    // A required field no source of the method provides.
    let only_params = create_config()
        .cors(Cors::Disabled)
        .input_sources(&Method::POST, [InputSource::Params])
        .build();
    let error = Documentation::new(&routing! { "users" => create_user() }, &only_params)
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "POST /users: the input field `name` is required, but no input source of this method provides it"
    );
    // Parameters of one shape with two names.
    let by_slug = default_endpoints_factory()
        .delete()
        .handler(async |_: Choice2| {
            Ok(User {
                id: 1,
                name: String::new(),
            })
        });
    let error = Documentation::new(
        &routing! { "/users/:id" => get_user(), "/users/:slug" => by_slug },
        &config(),
    )
    .build()
    .unwrap_err();
    assert!(
        matches!(error, DocumentationError::ParamNames { .. }),
        "{error}"
    );
    assert!(
        error.to_string().starts_with(
            "DELETE /users/:slug: its path parameters are named differently from GET /users/:id's"
        ),
        "{error}"
    );
}

#[derive(Deserialize, Validate, JsonSchema)]
struct Choice2 {
    #[garde(skip)]
    #[allow(dead_code)] // only described
    slug: String,
}

#[test]
fn delete_reads_the_query_and_other_sources_follow_the_config() {
    let remove = default_endpoints_factory()
        .delete()
        .handler(async |input: Search| {
            Ok(User {
                id: 1,
                name: input.trace.unwrap_or_default(),
            })
        });
    let patch = default_endpoints_factory()
        .patch()
        .handler(async |input: Search| {
            Ok(User {
                id: 1,
                name: input.trace.unwrap_or_default(),
            })
        });
    let config = create_config()
        .cors(Cors::Disabled)
        .input_sources(&Method::PATCH, [InputSource::Query, InputSource::Params])
        .build();
    let doc = doc_of(
        &routing! { "things" => { "delete" => remove, "patch" => patch } },
        &config,
    );
    for method in ["delete", "patch"] {
        let operation = &doc["paths"]["/things"][method];
        let places: Vec<(&str, &str)> = operation["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["name"].as_str().unwrap(), p["in"].as_str().unwrap()))
            .collect();
        assert_eq!(
            places,
            [("tags", "query"), ("x-trace", "query")],
            "{method}"
        );
        assert!(operation.get("requestBody").is_none(), "{method}");
        // No body is read: no 408, 413 or 415.
        assert!(operation["responses"].get("415").is_none(), "{method}");
    }
}

#[test]
fn several_success_statuses_and_security_on_head() {
    let upsert = secured()
        .get()
        .success_status(StatusCode::OK)
        .success_status(StatusCode::ACCEPTED)
        .handler(async |input: UserId| {
            Ok(User {
                id: input.id,
                name: String::new(),
            })
        });
    let doc = doc_of(&routing! { "/users/:id" => upsert }, &config());
    let get = &doc["paths"]["/users/{id}"]["get"];
    assert_eq!(
        get["responses"]["200"]["content"],
        get["responses"]["202"]["content"]
    );
    let head = &doc["paths"]["/users/{id}"]["head"];
    assert_eq!(head["security"], get["security"]);
    assert!(head["responses"]["202"].get("content").is_none());
}

/// Errors as `422` text, successes as JSON.
#[derive(Clone, Debug)]
struct Unprocessable;

impl ResultHandler for Unprocessable {
    fn positive(&self, output: &schemars::Schema) -> Vec<strata::ResponseDescription> {
        vec![
            strata::ResponseDescription::new(StatusCode::OK, output.clone())
                .mime_type("application/json"),
        ]
    }

    fn negative(&self) -> Vec<strata::ResponseDescription> {
        vec![
            strata::ResponseDescription::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                schemars::json_schema!({ "type": "string" }),
            )
            .mime_type("text/plain")
            .description("Anything wrong with the request"),
        ]
    }

    fn handle(
        &self,
        result: Result<strata::core::Output, ApiError>,
        _: &strata::RequestInfo,
        _: &Logger,
    ) -> http::Response<strata::Body> {
        let (status, body) = match result {
            Ok(output) => (StatusCode::OK, output.data().get().to_owned()),
            Err(error) => (StatusCode::UNPROCESSABLE_ENTITY, error.message().to_owned()),
        };
        let mut response = http::Response::new(strata::Body::from(body));
        *response.status_mut() = status;
        response
    }
}

#[test]
fn a_custom_result_handler_is_described_by_its_own_statuses_and_the_routers_by_the_default() {
    let endpoint = EndpointsFactory::new(Unprocessable)
        .get()
        .handler(async |input: UserId| {
            Ok(User {
                id: input.id,
                name: String::new(),
            })
        });
    let doc = doc_of(&routing! { "/users/:id" => endpoint }, &config());
    let responses = &doc["paths"]["/users/{id}"]["get"]["responses"];
    assert_eq!(
        responses["422"]["description"],
        "Anything wrong with the request"
    );
    assert!(responses["422"]["content"]["text/plain"].is_object());
    // The 404 of an unmatched path comes from the router, in the default envelope.
    let not_found = responses["404"]["content"].as_object().unwrap();
    assert_eq!(not_found.keys().collect::<Vec<_>>(), ["application/json"]);
    let envelope = not_found["application/json"]["schema"]["$ref"]
        .as_str()
        .unwrap();
    let name = envelope.rsplit('/').next().unwrap();
    assert_eq!(
        doc["components"]["schemas"][name]["properties"]["status"],
        json!({ "const": "error" })
    );
}

/// [`Unprocessable`], saying which errors its 422 answers in place of the pipeline's status.
#[derive(Clone, Debug)]
struct Remapping;

impl ResultHandler for Remapping {
    fn positive(&self, output: &schemars::Schema) -> Vec<strata::ResponseDescription> {
        Unprocessable.positive(output)
    }

    fn negative(&self) -> Vec<strata::ResponseDescription> {
        Unprocessable
            .negative()
            .into_iter()
            .map(|description| {
                description
                    .for_kind(strata::core::ErrorKind::InputValidation)
                    .for_kind(strata::core::ErrorKind::PayloadTooLarge)
            })
            .collect()
    }

    fn handle(
        &self,
        result: Result<strata::core::Output, ApiError>,
        request: &strata::RequestInfo,
        logger: &Logger,
    ) -> http::Response<strata::Body> {
        Unprocessable.handle(result, request, logger)
    }
}

#[test]
fn errors_a_result_handler_answers_with_its_own_status_are_not_described_under_the_pipeline_s() {
    // The same endpoint under each handler (a macro: the factories' types differ).
    macro_rules! create {
        ($handler:expr) => {
            EndpointsFactory::new($handler)
                .post()
                .handler(async |input: UserId| {
                    Ok(User {
                        id: input.id,
                        name: String::new(),
                    })
                })
        };
    }
    let plain = doc_of(&routing! { "users" => create!(Unprocessable) }, &config());
    let plain = &plain["paths"]["/users"]["post"]["responses"];
    let remapped = doc_of(&routing! { "users" => create!(Remapping) }, &config());
    let remapped = &remapped["paths"]["/users"]["post"]["responses"];
    assert_eq!(
        plain["400"]["description"],
        "Bad request: the input fails validation, or a parameter or the body cannot be read"
    );
    assert!(plain["413"].is_object());
    // Invalid input is the 422's; a body that cannot be read is still a 400.
    assert_eq!(
        remapped["400"]["description"],
        "Bad request: a parameter or the body cannot be read"
    );
    assert!(remapped.get("413").is_none(), "{remapped:#}");
    assert_eq!(remapped["422"], plain["422"]);
}

#[derive(Deserialize, Validate, JsonSchema)]
struct NameSearch {
    /// Optional, never null (`not_null`).
    #[garde(skip)]
    #[serde(default, deserialize_with = "strata::decode::not_null")]
    #[schemars(with = "String")]
    name: Option<String>,
    /// A plain `Option`.
    #[garde(skip)]
    page: Option<u32>,
}

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Found {
    count: u32,
}

#[test]
fn optional_query_fields_are_absent_or_a_value_never_null() {
    let found = |input: NameSearch| Found {
        count: u32::from(input.name.is_some()) + input.page.unwrap_or(0),
    };
    let search = default_endpoints_factory()
        .get()
        .handler(move |input: NameSearch| async move { Ok(found(input)) });
    let create = default_endpoints_factory()
        .post()
        .handler(move |input: NameSearch| async move { Ok(found(input)) });
    let routing = routing! { "search" => search, "create" => create };
    let doc = Documentation::new(&routing, &config()).build().unwrap();
    // For the outside validators (`.ci/openapi-checks` sets the path): both versions.
    if let Some(path) = std::env::var_os("STRATA_NOT_NULL_OPENAPI") {
        let path = std::path::PathBuf::from(path);
        doc.write_file(&path).unwrap();
        Documentation::new(&routing, &config())
            .openapi_version(OpenApiVersion::V3_1)
            .build()
            .unwrap()
            .write_file(path.with_extension("3.1.json"))
            .unwrap();
    }
    let value = doc.to_value();
    let parameters = &value["paths"]["/search"]["get"]["parameters"];
    let schema_of = |name: &str| {
        parameters
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()["schema"]
            .clone()
    };
    // A query string cannot carry null: not `["string", "null"]`, and no `default: null` the
    // schema would refuse (openapi-spec-validator rejected the document with it).
    assert_eq!(
        schema_of("name"),
        json!({"type": "string", "description": "Optional, never null (`not_null`)."})
    );
    assert_eq!(
        schema_of("page")["type"],
        json!("integer"),
        "{}",
        schema_of("page")
    );
    // In a JSON body, null is a value: a plain `Option` keeps it; `not_null` states no default
    // it refuses.
    let body = &value["paths"]["/create"]["post"]["requestBody"]["content"]["application/json"]["schema"]
        ["properties"];
    assert_eq!(body["page"]["type"], json!(["integer", "null"]));
    assert!(body["name"].get("default").is_none(), "{}", body["name"]);
    assert_eq!(body["name"]["type"], "string");
}
