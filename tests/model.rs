//! `#[strata::model]`: a type with one attribute serves as an endpoint's input and output,
//! its rules checked, its schema in the document; misuse is refused with what to write.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use http_body_util::BodyExt;
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
        .handler(|book: NewBook, _ctx, _logger| async move {
            assert!(book.page_count.is_none_or(|pages| pages > 0));
            Ok(Created {
                title: book.title,
                author: "checked",
            })
        })
}

async fn post(body: &str) -> (u16, String) {
    let request = http::Request::post("/")
        .header("content-type", "application/json")
        .body(body.to_owned())
        .unwrap();
    let response = endpoint().service().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
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
    let config = create_config().cors(false).build();
    let doc = strata::openapi::Documentation::new(&routing, &config)
        .title("Books")
        .build()
        .unwrap();
    let text = doc.to_json();
    assert!(text.contains(r#""pageCount""#), "{text}");
    assert!(text.contains(r#""minLength":1"#), "{text}");
}

#[test]
fn misuse_is_refused_with_what_to_write() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/model_*.rs");
}
