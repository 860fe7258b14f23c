//! The application's OpenAPI document against the RealWorld specification, read from
//! `../shared/realworld/openapi.yml` (never copied into the project): every operation of the
//! specification is served, with the same operation id, a request body where it has one, its
//! success status and its error statuses, its security, and request and success bodies of the
//! same shape (every property, three levels deep, whether it is required, and its type with
//! its format). The differences the application keeps are listed in [`JUSTIFIED`], each with
//! its reason; the test fails on any other, and on a listed one that no longer occurs.

// The helpers outside the test function unwrap as the test does.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;

use serde_json::Value;
use strata::openapi::{Documentation, OpenApiVersion};
use strata_realworld::auth::Keys;
use strata_realworld::{App, config, db, routing};

fn specification() -> Option<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/realworld/openapi.yml");
    let text = std::fs::read_to_string(&path).ok()?;
    Some(serde_norway::from_str(&text).expect("the specification is YAML"))
}

async fn document() -> Value {
    let pools = db::connect("sqlite::memory:").await.unwrap();
    let app = App::new(pools, Keys::random());
    let config = config(SocketAddr::from(([127, 0, 0, 1], 0)));
    let doc = Documentation::new(&routing(&app), &config)
        .openapi_version(OpenApiVersion::V3_1)
        .title("Conduit")
        .version("1.1.0")
        .build()
        .unwrap();
    serde_json::from_str(&doc.to_json_pretty()).unwrap()
}

/// `value` with its `$ref` followed (within `doc`), repeatedly.
fn resolve<'a>(doc: &'a Value, mut value: &'a Value) -> &'a Value {
    while let Some(reference) = value.get("$ref").and_then(Value::as_str) {
        let pointer = reference.trim_start_matches('#');
        value = doc.pointer(pointer).unwrap_or(&Value::Null);
    }
    value
}

/// The JSON schema of a request body or response, `$ref`s followed.
fn schema<'a>(doc: &'a Value, holder: &'a Value) -> &'a Value {
    let holder = resolve(doc, holder);
    resolve(doc, &holder["content"]["application/json"]["schema"])
}

/// The JSON type of a schema as the comparison sees it: its `type`s (with `format`, and the
/// items of an array), the alternatives of an `anyOf`/`oneOf` together: `string|null`,
/// `string:date-time`, `array<string>`.
fn kind(doc: &Value, schema: &Value) -> String {
    let schema = resolve(doc, schema);
    let mut kinds = BTreeSet::new();
    for alternative in ["anyOf", "oneOf"] {
        for member in schema[alternative].as_array().into_iter().flatten() {
            for one in kind(doc, member).split('|') {
                kinds.insert(one.to_owned());
            }
        }
    }
    let types: Vec<&str> = match &schema["type"] {
        Value::String(one) => vec![one.as_str()],
        Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    for name in types {
        let one = match (name, schema["format"].as_str()) {
            ("array", _) => format!("array<{}>", kind(doc, &schema["items"])),
            // Sizes of integers are this side's detail (`int64`); the specification gives none.
            ("integer", _) => "integer".to_owned(),
            (name, Some(format)) => format!("{name}:{format}"),
            (name, None) => name.to_owned(),
        };
        kinds.insert(one);
    }
    if kinds.is_empty() {
        return "any".to_owned();
    }
    kinds.into_iter().collect::<Vec<_>>().join("|")
}

/// The shape of `schema` to `depth`: each property with whether it is required and its type,
/// and the shape of properties that are objects, so that `{"user": {"email", ..}}` compares
/// whole: `user.email: string`, `user.image?: string|null`.
fn shape(doc: &Value, schema: &Value, depth: usize) -> Vec<String> {
    let schema = resolve(doc, schema);
    let required: BTreeSet<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties {
            let mark = if required.contains(name.as_str()) {
                ""
            } else {
                "?"
            };
            let property = resolve(doc, property);
            out.push(format!("{name}{mark}: {}", kind(doc, property)));
            if depth > 0 {
                let inner = if property["type"] == "array" {
                    &property["items"]
                } else {
                    property
                };
                for nested in shape(doc, inner, depth - 1) {
                    out.push(format!("{name}.{nested}"));
                }
            }
        }
    }
    out.sort();
    out
}

const METHODS: [&str; 4] = ["get", "post", "put", "delete"];

/// The differences of type the application keeps: a property's name, its type in the
/// specification, its type here, and why.
const JUSTIFIED: [(&str, &str, &str, &str); 2] = [
    (
        "image",
        "string",
        "null|string",
        "a user who has not set an image has none: `null` (the specification types it as a \
         string, and an empty string would be a URL that is not one); `image: \"\"` in an \
         update removes it",
    ),
    (
        "email",
        "string",
        "string:email",
        "registration checks the address (garde's `email`) and the document says so",
    ),
];

/// Compares two shapes (`name: type` lines): a missing or extra property, or another
/// requiredness, is a difference; another type is one unless [`JUSTIFIED`] lists it (each
/// justification used is marked in `used`).
fn compare(
    what: &str,
    theirs: &[String],
    mine: &[String],
    differences: &mut BTreeSet<String>,
    used: &mut BTreeSet<usize>,
) {
    let split = |lines: &[String]| -> Vec<(String, String)> {
        lines
            .iter()
            .map(|line| {
                let (name, kind) = line.split_once(": ").unwrap();
                (name.to_owned(), kind.to_owned())
            })
            .collect()
    };
    let (theirs, mine) = (split(theirs), split(mine));
    let names = |lines: &[(String, String)]| -> Vec<String> {
        lines.iter().map(|(name, _)| name.clone()).collect()
    };
    if names(&theirs) != names(&mine) {
        differences.insert(format!(
            "{what}: {:?} here {:?}",
            names(&theirs),
            names(&mine)
        ));
        return;
    }
    for ((name, their_kind), (_, my_kind)) in theirs.iter().zip(&mine) {
        if their_kind == my_kind {
            continue;
        }
        let leaf = name.rsplit('.').next().unwrap().trim_end_matches('?');
        match JUSTIFIED
            .iter()
            .position(|&(field, a, b, _)| field == leaf && a == their_kind && b == my_kind)
        {
            Some(index) => {
                used.insert(index);
            }
            None => {
                differences.insert(format!("{what}: {name} is {their_kind}, here {my_kind}"));
            }
        }
    }
}

/// Compares the responses of the operation `id`, theirs and mine (each with its document):
/// each success's description and body, and the 422's body. How many properties it compared.
fn compare_responses(
    id: &str,
    (spec, theirs): (&Value, &Value),
    (ours, mine): (&Value, &Value),
    differences: &mut BTreeSet<String>,
    used: &mut BTreeSet<usize>,
) -> usize {
    let mut compared = 0;
    for (status, response) in theirs["responses"].as_object().unwrap() {
        let Some(mine_response) = mine["responses"].get(status) else {
            continue;
        };
        // Each success is described as the specification describes it (its outcome's
        // doc comment): `User`, `Single article`, `No content`.
        let description = |doc: &Value, r: &Value| resolve(doc, r)["description"].clone();
        if status.starts_with('2')
            && description(spec, response) != description(ours, mine_response)
        {
            differences.insert(format!(
                "{id} {status}: described {} here",
                description(ours, mine_response)
            ));
        }
        // The bodies of successes, and of the 422 (the specification's
        // `GenericErrorModel`, a declared outcome's body where a handler answers it).
        if !(status.starts_with('2') || status == "422") || status == "204" {
            continue;
        }
        let (a, b) = (
            shape(spec, schema(spec, response), 3),
            shape(ours, schema(ours, mine_response), 3),
        );
        compared += a.len();
        compare(&format!("{id} {status}"), &a, &b, differences, used);
    }
    compared
}

#[tokio::test]
async fn every_operation_of_the_specification_is_served_compatibly() {
    let Some(spec) = specification() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI has ../shared/realworld/openapi.yml"
        );
        eprintln!("skipped: ../shared/realworld/openapi.yml is not beside the project");
        return;
    };
    let ours = document().await;
    let mut differences = BTreeSet::new();
    let mut used = BTreeSet::new();
    let mut operations = 0;
    let mut compared = 0;
    for (path, item) in spec["paths"].as_object().unwrap() {
        for method in METHODS {
            let Some(theirs) = item.get(method) else {
                continue;
            };
            operations += 1;
            let id = theirs["operationId"].as_str().unwrap();
            let Some(mine) = ours["paths"]
                .get(format!("/api{path}"))
                .and_then(|p| p.get(method))
            else {
                differences.insert(format!("{id}: missing"));
                continue;
            };
            if mine["operationId"] != theirs["operationId"] {
                differences.insert(format!("{id}: operationId {}", mine["operationId"]));
            }
            if theirs.get("requestBody").is_some() != mine.get("requestBody").is_some() {
                differences.insert(format!("{id}: request body"));
            }
            if let (Some(theirs_body), Some(mine_body)) =
                (theirs.get("requestBody"), mine.get("requestBody"))
            {
                let (a, b) = (
                    shape(&spec, schema(&spec, theirs_body), 2),
                    shape(&ours, schema(&ours, mine_body), 2),
                );
                compare(
                    &format!("{id} request"),
                    &a,
                    &b,
                    &mut differences,
                    &mut used,
                );
            }
            compared += compare_responses(
                id,
                (&spec, theirs),
                (&ours, mine),
                &mut differences,
                &mut used,
            );
            let statuses = |op: &Value| -> BTreeSet<String> {
                op["responses"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .cloned()
                    .collect()
            };
            let (their_statuses, my_statuses) = (statuses(theirs), statuses(mine));
            for status in their_statuses.difference(&my_statuses) {
                differences.insert(format!("{id}: no {status}"));
            }
            let secured = |op: &Value| {
                op.get("security")
                    .is_some_and(|s| s.as_array().is_some_and(|a| !a.is_empty()))
            };
            if secured(theirs) != secured(mine) {
                differences.insert(format!("{id}: security {} here", secured(mine)));
            }
        }
    }
    assert_eq!(operations, 19);
    assert!(compared > 100, "{compared} properties compared");
    let differences: Vec<String> = differences.into_iter().collect();
    println!("{differences:#?}");
    assert_eq!(differences, Vec::<String>::new());
    for (index, (field, theirs, mine, reason)) in JUSTIFIED.iter().enumerate() {
        assert!(
            used.contains(&index),
            "{field} ({theirs} there, {mine} here: {reason}) no longer differs: drop it from JUSTIFIED"
        );
    }
}

/// Each declared error outcome is under its status, described by its variant's doc comment
/// (with what the pipeline answers there too), with the specification's `GenericErrorModel` as
/// its body: one shared schema, not an `anyOf` of the same body twice.
#[tokio::test]
async fn declared_error_outcomes_are_described_under_their_statuses() {
    let ours = document().await;
    let response = |path: &str, method: &str, status: &str| {
        ours["paths"][path][method]["responses"][status].clone()
    };
    for (path, method, status, text) in [
        (
            "/api/articles/{slug}",
            "get",
            "404",
            "Article not found; or: Not found",
        ),
        (
            "/api/articles/{slug}",
            "put",
            "403",
            "Only the author may change or delete this article",
        ),
        (
            "/api/articles/{slug}",
            "delete",
            "403",
            "Only the author may change or delete this article",
        ),
        (
            "/api/articles/{slug}/comments/{id}",
            "delete",
            "403",
            "Only the author may delete this comment",
        ),
        (
            "/api/articles/{slug}/comments/{id}",
            "delete",
            "404",
            "Article or comment not found",
        ),
        (
            "/api/profiles/{username}",
            "get",
            "404",
            "Profile not found",
        ),
        (
            "/api/users/login",
            "post",
            "401",
            "Invalid email or password",
        ),
        (
            "/api/user",
            "get",
            "401",
            "Invalid or expired token; or: Unauthorized",
        ),
        (
            "/api/users",
            "post",
            "422",
            "The username or email is taken; or: Unprocessable",
        ),
        (
            "/api/profiles/{username}/follow",
            "post",
            "422",
            "One cannot follow oneself",
        ),
        (
            "/api/articles",
            "post",
            "422",
            "Too many articles with this title",
        ),
    ] {
        let response = response(path, method, status);
        let description = response["description"].as_str().unwrap_or_default();
        assert!(
            description.starts_with(text),
            "{method} {path} {status}: {description:?}"
        );
    }
    // Validation's 422 where the outcome says nothing more: said once.
    assert_eq!(
        response("/api/articles", "get", "422")["description"],
        "Unprocessable: the input fails validation (each problem in errors.body)"
    );
}

/// Every error body of every operation is the one shared schema of the specification's
/// `GenericErrorModel`: the pipeline's errors and the declared outcomes alike, never an `anyOf`
/// of the same body twice.
#[tokio::test]
async fn every_error_body_is_the_shared_generic_error_model() {
    let ours = document().await;
    let mut errors = 0;
    for (path, item) in ours["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            for (status, response) in operation["responses"].as_object().into_iter().flatten() {
                if status.starts_with('2') || method == "head" {
                    continue;
                }
                let schema = &response["content"]["application/json"]["schema"];
                assert_eq!(
                    schema["$ref"], "#/components/schemas/ErrorResponse",
                    "{method} {path} {status}: {schema}"
                );
                errors += 1;
            }
        }
    }
    assert!(errors > 50, "{errors} error responses");
    assert_eq!(
        shape(&ours, &ours["components"]["schemas"]["ErrorResponse"], 2),
        ["errors.body: array<string>", "errors: object"]
    );
}

/// Invalid input is described under the 422 this application answers it with, not under the
/// pipeline's 400 (which still answers a body that is not JSON).
#[tokio::test]
async fn invalid_input_is_described_under_the_422_it_gets() {
    let ours = document().await;
    let create_user = &ours["paths"]["/api/users"]["post"]["responses"];
    assert_eq!(
        create_user["400"]["description"],
        "Bad request: a parameter or the body cannot be read"
    );
    assert!(
        create_user["422"]["description"]
            .as_str()
            .unwrap()
            .contains("the input fails validation (each problem in errors.body)")
    );
}
