//! `#[strata::model]`: a type with one attribute serves as an endpoint's input and output,
//! its rules checked, its schema in the document; misuse is refused with what to write.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use http_body_util::BodyExt;
use strata::Endpoint;
use strata::prelude::*;
use tower::ServiceExt;

#[strata::model]
struct Author {
    #[garde(length(chars, min = 1, max = 80))]
    name: String,
}

#[strata::model(input)]
#[serde(rename_all = "camelCase")]
struct NewBook {
    #[garde(length(chars, min = 1))]
    title: String,
    page_count: Option<u32>,
    #[garde(dive)]
    author: Author,
}

#[strata::model(output)]
struct Created {
    title: String,
    author: &'static str,
}

fn endpoint() -> Endpoint {
    default_endpoints_factory()
        .post()
        .handler(async |book: NewBook| {
            assert!(book.page_count.is_none_or(|pages| pages > 0));
            Ok(Created {
                title: book.title,
                author: "checked",
            })
        })
}

/// POSTs the JSON `body` to `endpoint`: the status and the answer.
async fn post_to(endpoint: Endpoint, body: &str) -> (u16, String) {
    let request = http::Request::post("/")
        .header("content-type", "application/json")
        .body(body.to_owned())
        .unwrap();
    let response = endpoint.service().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

async fn post(body: &str) -> (u16, String) {
    post_to(endpoint(), body).await
}

#[tokio::test]
async fn a_model_is_an_input_and_an_output_with_its_rules_checked() {
    let (status, body) =
        post(r#"{"title": "Dune", "pageCount": 412, "author": {"name": "F"}}"#).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        r#"{"status":"success","data":{"title":"Dune","author":"checked"}}"#
    );
    // Both rules, the nested one through `dive`.
    let (status, body) = post(r#"{"title": "", "author": {"name": ""}}"#).await;
    assert_eq!(status, 400);
    assert!(body.contains("title: length is lower than 1"), "{body}");
    assert!(
        body.contains("author.name: length is lower than 1"),
        "{body}"
    );
}

#[cfg(feature = "openapi")]
#[test]
fn the_document_has_the_models_schemas() {
    let routing = routing! { "books" => endpoint() };
    let config = create_config().cors(Cors::Disabled).build();
    let doc = strata::openapi::Documentation::new(&routing, &config)
        .title("Books")
        .build()
        .unwrap();
    let text = doc.to_json();
    assert!(text.contains(r#""pageCount""#), "{text}");
    assert!(text.contains(r#""minLength":1"#), "{text}");
}

/// zod's `coerce` and "optional, not nullable", one word each.
#[strata::model(input)]
struct Filter {
    #[strata(coerce)]
    #[garde(range(min = 1, max = 100))]
    limit: u32,
    #[strata(coerce)]
    archived: Option<bool>,
    #[strata(not_null)]
    #[garde(length(chars, min = 1))]
    nickname: Option<String>,
}

#[strata::model(output)]
struct Echo {
    limit: u32,
    archived: Option<bool>,
    nickname: Option<String>,
}

fn filter() -> Endpoint {
    default_endpoints_factory()
        .post()
        .handler(async |filter: Filter| {
            Ok(Echo {
                limit: filter.limit,
                archived: filter.archived,
                nickname: filter.nickname,
            })
        })
}

async fn post_filter(body: &str) -> (u16, String) {
    post_to(filter(), body).await
}

#[tokio::test]
async fn coerced_and_not_null_fields_read_explain_and_document_alike() {
    // Text and values alike; absent optional fields are None.
    for body in [
        r#"{"limit": "20", "archived": "true"}"#,
        r#"{"limit": 20, "archived": true}"#,
    ] {
        let (status, answer) = post_filter(body).await;
        assert_eq!(status, 200, "{answer}");
        assert!(
            answer.contains(r#""limit":20,"archived":true,"nickname":null"#),
            "{answer}"
        );
    }
    let (status, answer) =
        post_filter(r#"{"limit": "7", "archived": null, "nickname": "n"}"#).await;
    assert_eq!(status, 200, "{answer}");
    // What is refused, and why: the schema's explanation.
    for (body, expected) in [
        // Both forms, as the document states them.
        (
            r#"{"limit": "twenty"}"#,
            r#"limit: expected integer or text matching /^[0-9]+$/, received string \"twenty\""#,
        ),
        (r#"{"limit": "500"}"#, "limit: greater than 100"),
        (
            r#"{"limit": 5, "archived": "yes"}"#,
            r#"archived: expected boolean or text matching /^(true|false)$/, received string \"yes\""#,
        ),
        (
            r#"{"limit": 5, "nickname": null}"#,
            "nickname: expected string, received null",
        ),
        (
            r#"{"limit": 5, "nickname": ""}"#,
            "nickname: length is lower than 1",
        ),
    ] {
        let (status, answer) = post_filter(body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(answer.contains(expected), "{body}: {answer}");
    }
}

/// A type both read and written (shared by a server and its Rust clients).
#[strata::model]
#[derive(Debug, PartialEq)]
struct Changes {
    #[strata(not_null)]
    #[garde(length(chars, min = 1))]
    title: Option<String>,
    note: Option<String>,
}

#[test]
fn a_not_null_field_is_written_as_it_is_read() {
    // `None` is left out, not written as the `null` the same type refuses to read.
    let unchanged = Changes {
        title: None,
        note: None,
    };
    let text = serde_json::to_string(&unchanged).unwrap();
    assert_eq!(text, r#"{"note":null}"#);
    assert_eq!(serde_json::from_str::<Changes>(&text).unwrap(), unchanged);
    assert!(serde_json::from_str::<Changes>(r#"{"title":null}"#).is_err());
    let renamed = Changes {
        title: Some("New".to_owned()),
        note: None,
    };
    let text = serde_json::to_string(&renamed).unwrap();
    assert_eq!(text, r#"{"title":"New","note":null}"#);
    assert_eq!(serde_json::from_str::<Changes>(&text).unwrap(), renamed);
}

#[cfg(feature = "openapi")]
#[test]
fn coerced_and_not_null_fields_are_documented_as_read() {
    let routing = routing! { "filter" => filter() };
    let config = create_config().cors(Cors::Disabled).build();
    let doc = strata::openapi::Documentation::new(&routing, &config)
        .title("Filter")
        .build()
        .unwrap();
    let text = doc.to_json();
    assert!(text.contains(r#""pattern":"^[0-9]+$""#), "{text}");
    assert!(text.contains(r#""pattern":"^(true|false)$""#), "{text}");
    // Not null, not required: the inner type's schema.
    assert!(
        text.contains(r#""nickname":{"minLength":1,"type":"string"}"#),
        "{text}"
    );
    assert!(text.contains(r#""required":["limit"]"#), "{text}");
}

#[test]
fn misuse_is_refused_with_what_to_write() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/model_*.rs");
}
