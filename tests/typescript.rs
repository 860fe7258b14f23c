//! The generated TypeScript client through the facade: snapshots of the examples' clients
//! (compiled by `tsc` and run against the live examples by `.ci/client-checks`), where each
//! input field goes, the response unions, and the errors for what has no type.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::borrow::Cow;
use strata::{InputSource, Routing};

use garde::Validate;
use http::{Method, StatusCode};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use strata::openapi::DocumentationError;
use strata::prelude::*;
use strata::typescript::{Integration, IntegrationError, Variant};

#[allow(dead_code)]
#[path = "../examples/library.rs"]
mod library;

#[allow(dead_code)]
#[path = "../examples/auth.rs"]
mod auth;

mod common;

fn snapshot(name: &str, code: &str) {
    common::compare_snapshot(name, code, "typescript");
}

#[test]
fn the_examples_clients_match_their_snapshots() {
    let config = library::library_config().listen(8091).build();
    let routing = library::library_routing(std::env::temp_dir());
    let client = library::library_client(&routing, &config)
        .unwrap()
        .to_string();
    snapshot("library.client.ts", &client);
    // The create's outcomes: the 409's own body, the 403 an ordinary error, and the headers
    // each status declares (the 201's `location` required, the 503's `retry-after` optional).
    assert!(
        client.contains("  403: ErrorResponse;\n  408: ErrorResponse;\n  409: {\n    error: Duplicate;\n    status: \"error\";\n  };\n"),
        "{client}"
    );
    assert!(
        client.contains(
            "export type CreateBookHeadersByStatus = {\n  201: {\n    /** Where the book is now: `/v1/books/{id}`. */\n    location: string;\n  };\n  503: {\n    /** Seconds to wait before retrying */\n    \"retry-after\"?: string;\n  };\n};\n"
        ),
        "{client}"
    );
    assert!(client.contains("export type GetBookHeadersByStatus = Record<never, never>;\n"));
    assert!(client.contains("  \"post /v1/books\": CreateBookHeadersByStatus;\n"));
    let types = Integration::new(&routing, &config)
        .variant(Variant::Types)
        .build()
        .unwrap()
        .to_string();
    snapshot("library.types.ts", &types);
    // The types are the client's, without the runtime.
    let runtime_start = client.find("/** The server the default").unwrap();
    assert_eq!(
        types
            .split_once('\n')
            .unwrap()
            .1
            .split_once('\n')
            .unwrap()
            .1,
        client[..runtime_start]
            .split_once('\n')
            .unwrap()
            .1
            .split_once('\n')
            .unwrap()
            .1
            .trim_end_matches('\n')
            .to_owned()
            + "\n"
    );
    assert!(!types.contains("class Client") && !types.contains("fetch("));

    let config = create_config().cors(Cors::Enabled).build();
    let client = auth::auth_client(&auth::auth_routing(), &config)
        .unwrap()
        .to_string();
    snapshot("auth.client.ts", &client);
    // The plain-text endpoint answers text: its responses are strings.
    assert!(client.contains("export type GetV1PlainPositiveResponse = string;"));
    assert!(client.contains("export type GetV1PlainNegativeResponse = string;"));
}

#[derive(Clone, Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct User {
    id: u32,
    name: String,
}

#[derive(Deserialize, Validate, JsonSchema)]
#[allow(dead_code)] // only the schema matters here
struct UserId {
    #[garde(skip)]
    id: u32,
}

#[derive(Deserialize, Validate, JsonSchema)]
#[allow(dead_code)] // only the schema matters here
struct Search {
    /// Users with all of these tags.
    #[garde(skip)]
    tags: Vec<String>,
    #[garde(skip)]
    #[serde(rename = "x-trace")]
    trace: Option<String>,
    #[garde(skip)]
    active: Option<bool>,
}

#[derive(Deserialize, Validate, JsonSchema)]
#[allow(dead_code)] // only the schema matters here
struct NewUser {
    #[garde(length(chars, min = 1))]
    name: String,
    #[garde(skip)]
    #[serde(default)]
    roles: Vec<Role>,
}

#[derive(Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Role {
    Admin,
    Reader,
}

fn user() -> User {
    User {
        id: 1,
        name: "Ada".into(),
    }
}

fn users_routing() -> Routing {
    let one = default_endpoints_factory()
        .get()
        .handler(async |_: UserId| Ok(user()));
    let search = default_endpoints_factory()
        .get()
        .deprecated()
        .description("Finds users by tags.\nSlowly.")
        .handler(async |_: Search| Ok(vec![user()]));
    let create = default_endpoints_factory()
        .post()
        .operation_id("addUser")
        .success_status(StatusCode::CREATED)
        .success_status(StatusCode::ACCEPTED)
        .handler(async |_: NewUser| Ok(Reply::created(user())));
    routing! {
        "v1" => { "users" => { "get" => search, "post" => create, ":id" => one } }
    }
}

/// The config of the shapes: GET reads headers too.
fn headers_config() -> strata::Config {
    create_config()
        .cors(Cors::Enabled)
        .input_sources(
            &Method::GET,
            [
                InputSource::Query,
                InputSource::Params,
                InputSource::Headers,
            ],
        )
        // For the streamed file of `post /archives`.
        .upload(strata::UploadLimits::default())
        .build()
}

#[derive(Deserialize, Validate, JsonSchema)]
#[allow(dead_code)] // only the schema matters here
struct Rename {
    #[garde(skip)]
    id: u32,
    #[garde(length(chars, min = 1))]
    name: String,
}

/// Named fields and other keys beside them (`#[serde(flatten)]` of a map).
#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Stats {
    count: u32,
    label: Option<String>,
    /// A map with numeric keys: schemars writes `patternProperties`.
    by_id: std::collections::HashMap<u32, String>,
    #[serde(flatten)]
    more: std::collections::BTreeMap<String, String>,
}

/// A type whose schema name is a reserved word of JavaScript.
#[derive(Serialize, Validate)]
#[garde(allow_unvalidated)]
struct Reserved {
    value: u8,
}

impl JsonSchema for Reserved {
    fn schema_name() -> Cow<'static, str> {
        "default".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "properties": { "value": generator.subschema_for::<u8>() },
            "required": ["value"]
        })
    }
}

strata::paginate::pagination! {
    Events: cursor { items_name: "events", max_limit: 5, default_limit: 2 }
}
strata::paginate::pagination! {
    Rows: offset { items_name: "rows", max_limit: 5, default_limit: 2 }
}

/// A webhook: the raw body and a path parameter.
#[derive(Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Hook {
    raw: strata::RawBody,
    #[allow(dead_code)]
    source: String,
}

/// An archive: a streamed file, sent after the other fields.
#[derive(Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Archive {
    file: strata::StreamedFile,
    #[allow(dead_code)]
    title: String,
}

/// The users, plus more shapes: a map beside fields, a reserved type name, a 204, cursor pages.
fn shapes_routing() -> Routing {
    use strata::paginate::{CursorInput, CursorPage};
    let stats = default_endpoints_factory()
        .get()
        .handler_without_input(async || {
            Ok(Stats {
                count: 1,
                label: None,
                by_id: std::collections::HashMap::new(),
                more: std::collections::BTreeMap::new(),
            })
        });
    let reserved = default_endpoints_factory()
        .get()
        .handler_without_input(async || Ok(Reserved { value: 1 }));
    let forget = default_endpoints_factory()
        .delete()
        .success_status(StatusCode::NO_CONTENT)
        .handler(async |_: UserId| Ok(Reply::new(user()).status(StatusCode::NO_CONTENT)));
    let events = default_endpoints_factory()
        .get()
        .handler(async |input: CursorInput<Events>| {
            Ok(CursorPage::<Events, User>::new(Vec::new(), None, &input))
        });
    let rename = default_endpoints_factory()
        .patch()
        .handler(async |_: Rename| Ok(user()));
    let hook = default_endpoints_factory()
        .post()
        .handler(async |input: Hook| {
            Ok(Reserved {
                value: u8::try_from(input.raw.len()).unwrap_or(u8::MAX),
            })
        });
    let archive = default_endpoints_factory()
        .post()
        .handler(async |input: Archive| {
            Ok(Reserved {
                value: u8::from(input.file.name().is_empty()),
            })
        });
    users_routing()
        .route("post /archives", archive)
        .route("patch /v1/users/:id", rename)
        .route("post /hooks/:source", hook)
        .route("stats", stats)
        .route("reserved", reserved)
        .route("delete /v1/users/:id", forget)
        .route("events", events)
}

#[allow(dead_code)]
#[path = "../examples/events.rs"]
mod events;

#[test]
fn event_streams_get_typed_subscriptions() {
    // Compiled by tsc and used against the live example by tests/client/events.test.ts.
    let routing = events::events_routing();
    let config = create_config().cors(Cors::Enabled).build();
    let client = events::events_client(&routing, &config)
        .unwrap()
        .to_string();
    snapshot("events.client.ts", &client);
    assert!(
        client.contains(
            "export type GetCountdownEvents = {\n  tick: {\n    left: number;\n  };\n  liftoff: null;\n};"
        ),
        "{client}"
    );
    assert!(
        client.contains("export interface Events {\n  \"get /countdown\": GetCountdownEvents;\n}")
    );
    assert!(client.contains("export class Subscription<K extends keyof Events>"));
    // Without event streams the map is empty and `Subscription` still compiles.
    let library = library::library_client(
        &library::library_routing(std::env::temp_dir()),
        &library::library_config().build(),
    )
    .unwrap()
    .to_string();
    assert!(library.contains("export interface Events {}"));
}

#[test]
fn more_shapes_compile_too() {
    // Each file is compiled by tsc in `.ci/client-checks` (tests/client/tsconfig.clients.json)
    // and `shapes.client.ts` is used by tests/client/shapes.test.ts.
    let config = headers_config();
    let shapes = Integration::new(&shapes_routing(), &config)
        .build()
        .unwrap()
        .to_string();
    snapshot("shapes.client.ts", &shapes);
    // Every property fits the index signature beside them; numeric-key maps are records.
    assert!(
        shapes.contains(
            "  by_id: Record<string, string>;\n  count: number;\n  label: string | null;\n  [key: string]: string | Record<string, string> | number | null;"
        ),
        "{shapes}"
    );
    // A reserved word is not a type name.
    assert!(shapes.contains("export type default2 = {"));
    // A streamed file is the form's last part.
    assert!(
        shapes.contains(
            "  \"post /archives\": { headers: [], body: \"multipart\", last: \"file\" },"
        ),
        "{shapes}"
    );
    // 204 has no body.
    assert!(shapes.contains("export type DeleteV1UsersIdPositiveResponse = undefined;"));
    assert!(shapes.contains("    return response.data.nextCursor !== null;"));

    let empty = Integration::new(&Routing::default(), &config)
        .build()
        .unwrap()
        .to_string();
    snapshot("empty.client.ts", &empty);
    assert!(empty.contains("export type Request = never;"));

    let rows = default_endpoints_factory().get().handler(
        async |input: strata::paginate::OffsetInput<Rows>| {
            Ok(strata::paginate::OffsetPage::<Rows, User>::new(
                Vec::new(),
                0,
                &input,
            ))
        },
    );
    let paged = Integration::new(&routing! { "rows" => rows }, &config)
        .build()
        .unwrap()
        .to_string();
    snapshot("paged.client.ts", &paged);
    assert!(paged.contains("    return page.offset + page.limit < page.total;"));
}

#[test]
fn each_field_goes_where_the_server_reads_it_and_is_typed_as_it_reads_it() {
    let config = headers_config();
    let code = Integration::new(&users_routing(), &config)
        .build()
        .unwrap()
        .to_string();
    // Query fields typed as the server's types (a list, a boolean), a header field by its name;
    // an optional one may be absent, never null (a query string or a header cannot carry null).
    assert!(
        code.contains(
            "export type GetV1UsersInput = {\n  active?: boolean;\n  /** Users with all of these tags. */\n  tags: string[];\n  \"x-trace\"?: string;\n};"
        ),
        "{code}"
    );
    assert!(code.contains(
        "  \"get /v1/users\": { headers: [\"x-trace\"], body: \"query\" },\n  \"post /v1/users\": { headers: [], body: \"json\" },\n  \"get /v1/users/:id\": { headers: [], body: \"query\" },"
    ));
    // A path parameter is a field of the input, typed as the server reads it.
    assert!(code.contains("export type GetV1UsersIdInput = {\n  id: number;\n};"));
    // Enums become unions of literals, named once.
    assert!(code.contains("export type Role = \"admin\" | \"reader\";"));
    assert!(code.contains("  roles?: Role[];"));
    // A custom operation id names the types; two success statuses share one type.
    assert!(code.contains(
        "export type AddUserPositiveResponse = {\n  data: User;\n  status: \"success\";\n};"
    ));
    assert!(code.contains(
        "export type AddUserResponse = AddUserPositiveResponse | AddUserNegativeResponse;"
    ));
    // Deprecation and descriptions reach the editor.
    assert!(code.contains(
        "/**\n * `get /v1/users`\n *\n * Finds users by tags.\n * Slowly.\n * @deprecated\n */\nexport type GetV1UsersInput"
    ));
    assert!(code.contains("  /** @deprecated */\n  \"get /v1/users\": GetV1UsersInput;"));
    assert!(code.contains("export type PaginatedRequest = never;"));
    assert!(code.contains("public static hasMore(_response: never): boolean"));
    // Nothing is `any`.
    assert!(!code.contains("any"), "{code}");
}

/// A string type whose schema says `not`: TypeScript has no type for "a string but not ''".
struct NotEmpty;

impl JsonSchema for NotEmpty {
    fn schema_name() -> Cow<'static, str> {
        "NotEmpty".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "not": { "const": "" } })
    }
}

impl<'de> Deserialize<'de> for NotEmpty {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(|_| Self)
    }
}

#[derive(Deserialize, Validate, JsonSchema)]
struct Tagged {
    #[garde(skip)]
    #[allow(dead_code)] // only its schema matters here
    tag: NotEmpty,
}

/// An output whose schema points outside the document (`#/$defs/..`).
#[derive(Serialize, Validate)]
#[garde(allow_unvalidated)]
struct Detached {
    value: u8,
}

impl JsonSchema for Detached {
    fn schema_name() -> Cow<'static, str> {
        "Detached".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "$ref": "#/$defs/Inner" })
    }
}

/// The parts of an `IntegrationError::Schema`: request, schema, place, problem.
fn schema_error(error: &IntegrationError) -> [&str; 4] {
    match error {
        IntegrationError::Schema {
            request,
            schema,
            at,
            problem,
        } => [request, schema, at, problem],
        other => panic!("not a schema error: {other}"),
    }
}

#[test]
fn a_schema_without_a_type_is_an_error_naming_the_request_and_the_place() {
    let config = create_config().cors(Cors::Enabled).build();
    let tagged = default_endpoints_factory()
        .post()
        .handler(async |_: Tagged| Ok(user()));
    let error = Integration::new(&routing! { "tags" => tagged }, &config)
        .build()
        .unwrap_err();
    let [request, schema, at, problem] = schema_error(&error);
    assert_eq!(request, "post /tags");
    assert_eq!(schema, "#/components/schemas/NotEmpty");
    assert_eq!(at, "/");
    assert!(problem.contains("`not`"), "{problem}");
    assert_eq!(
        error.to_string(),
        format!("post /tags: #/components/schemas/NotEmpty has no TypeScript type at /: {problem}")
    );

    let detached = default_endpoints_factory()
        .get()
        .handler_without_input(async || Ok(Detached { value: 1 }));
    let error = Integration::new(&routing! { "detached" => detached }, &config)
        .build()
        .unwrap_err();
    let [request, schema, at, problem] = schema_error(&error);
    assert_eq!(request, "get /detached");
    assert_eq!(schema, "the response 200 (application/json)");
    assert_eq!(at, "/properties/data");
    assert!(problem.contains("#/$defs/Inner"), "{problem}");
}

/// A result handler whose statuses have bodies of their own: a 202 without one, a 404 and a
/// 409 each with its own JSON shape, a 503 in text.
#[derive(Clone, Debug)]
struct Varied;

impl strata::ResultHandler for Varied {
    fn positive(&self, output: &Schema) -> Vec<strata::ResponseDescription> {
        vec![
            strata::ResponseDescription::new(StatusCode::OK, output.clone())
                .mime_type("application/json"),
            strata::ResponseDescription::new(StatusCode::ACCEPTED, json_schema!(true)),
        ]
    }

    fn negative(&self) -> Vec<strata::ResponseDescription> {
        let missing = json_schema!({
            "type": "object",
            "properties": { "missing": { "type": "string" } },
            "required": ["missing"]
        });
        let conflict = json_schema!({
            "type": "object",
            "properties": { "conflict": { "type": "integer", "format": "uint32" } },
            "required": ["conflict"]
        });
        vec![
            strata::ResponseDescription::new(StatusCode::NOT_FOUND, missing)
                .mime_type("application/json"),
            strata::ResponseDescription::new(StatusCode::CONFLICT, conflict)
                .mime_type("application/json"),
            strata::ResponseDescription::new(
                StatusCode::SERVICE_UNAVAILABLE,
                json_schema!({ "type": "string" }),
            )
            .mime_type("text/plain"),
        ]
    }

    fn handle(
        &self,
        _result: Result<strata::core::Output, ApiError>,
        _: &strata::RequestInfo,
        _: &Logger,
    ) -> http::Response<strata::Body> {
        http::Response::new(strata::Body::empty())
    }
}

#[test]
fn each_status_has_its_own_body_type() {
    // Compiled by tsc in `.ci/client-checks` and narrowed by tests/client/compile-fail.ts.
    let config = create_config().cors(Cors::Enabled).build();
    let one = strata::EndpointsFactory::new(Varied)
        .get()
        .operation_id("getUser")
        .handler(async |_: UserId| Ok(user()));
    let types = Integration::new(
        &routing! { "v1" => { "users" => { ":id" => one } } },
        &config,
    )
    .variant(Variant::Types)
    .build()
    .unwrap()
    .to_string();
    snapshot("statuses.types.ts", &types);
    // Each status has its body: none for the 202, the handler's for the 404 and the router's
    // envelope beside it (the router answers 404 too), the 409's own, text for the 503.
    assert!(
        types.contains(
            "export type GetUserResponseByStatus = {\n  200: User;\n  202: undefined;\n  400: ErrorResponse;\n  404: ErrorResponse | ErrorResponse2;\n  409: ErrorResponse3;\n  500: ErrorResponse;\n  503: string;\n};"
        ),
        "{types}"
    );
    assert!(types.contains("  \"get /v1/users/:id\": GetUserResponseByStatus;"));
    assert!(types.contains("export type StatusResponse<K extends Request> = {"));
}

#[test]
fn what_the_document_cannot_describe_the_client_cannot_either() {
    let config = create_config().cors(Cors::Enabled).build();
    let first = default_endpoints_factory()
        .get()
        .operation_id("same")
        .handler_without_input(async || Ok(user()));
    let second = default_endpoints_factory()
        .get()
        .operation_id("same")
        .handler_without_input(async || Ok(user()));
    let error = Integration::new(&routing! { "a" => first, "b" => second }, &config)
        .build()
        .unwrap_err();
    assert!(
        matches!(
            &error,
            IntegrationError::Documentation(DocumentationError::DuplicateOperationId { id, .. }) if id == "same"
        ),
        "{error}"
    );
    assert!(std::error::Error::source(&error).is_some());
}

#[test]
fn a_file_of_any_type_is_unknown_until_it_is_read_and_a_declared_type_says_what_it_is() {
    #[derive(Deserialize, Validate, JsonSchema)]
    struct FileName {
        #[garde(length(min = 1))]
        name: String,
    }
    let config = create_config().cors(Cors::Enabled).build();
    let open = |input: FileName| strata::FileResponse::open(std::env::temp_dir().join(input.name));
    let any = default_endpoints_factory()
        .get()
        .operation_id("anyFile")
        .handler(move |input: FileName| open(input));
    let image = default_endpoints_factory()
        .get()
        .operation_id("image")
        .success_media_type("image/png")
        .handler(move |input: FileName| open(input));
    let types = Integration::new(&routing! { "any" => any, "image" => image }, &config)
        .variant(Variant::Types)
        .build()
        .unwrap()
        .to_string();
    // `*/*`: the default implementation reads JSON, text or a Blob by the Content-Type sent.
    assert!(
        types.contains("export type AnyFilePositiveResponse = unknown;"),
        "{types}"
    );
    assert!(
        types.contains("export type ImagePositiveResponse = Blob;"),
        "{types}"
    );
}
