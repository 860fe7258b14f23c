//! Declared outcomes in the OpenAPI document where the pipeline answers the same status too: a
//! bodyless error outcome (`NotFound`) is answered with the result handler's error envelope, the
//! very body the pipeline's 404 has, so the document lists that body once (the shared error
//! component), with both descriptions; an outcome with a body of its own is either body.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use serde_json::Value;
use strata::openapi::Documentation;
use strata::prelude::*;
use strata::{Operation, Outcomes, Routing};

/// Which book.
#[strata::model]
#[derive(Debug)]
pub struct BookId {
    #[garde(range(min = 1))]
    id: u32,
}

/// A book.
#[strata::model]
#[derive(Debug)]
pub struct Book {
    id: u32,
}

/// Since when a book is gone.
#[strata::model]
#[derive(Debug)]
pub struct Gone {
    since: String,
}

/// The outcomes of `GET /books/:id`.
#[derive(Debug, Outcomes)]
pub enum GetBook {
    /// The book.
    #[outcome(status = 200)]
    Found(Book),
    /// No book has this id
    #[outcome(status = 404)]
    NotFound,
    /// The book was withdrawn
    #[outcome(status = 410)]
    Withdrawn(Gone),
    /// Bad request: the input fails validation, or a parameter or the body cannot be read
    #[outcome(status = 400)]
    Unreadable,
}

const GET_BOOK: Operation<BookId, GetBook> = Operation::get("/books/:id");

fn document() -> Value {
    let endpoint = default_endpoints_factory()
        .endpoint()
        .implement(&GET_BOOK, async |input: BookId| {
            Ok(GetBook::Found(Book { id: input.id }))
        });
    let routing = Routing::new().operation(endpoint);
    let config = create_config().cors(Cors::Disabled).build();
    Documentation::new(&routing, &config)
        .title("Books")
        .version("1.0.0")
        .build()
        .unwrap()
        .to_value()
}

#[test]
fn a_bodyless_error_outcome_shares_the_pipeline_s_error_body() {
    let doc = document();
    let responses = &doc["paths"]["/books/{id}"]["get"]["responses"];
    let not_found = &responses["404"];
    let schema = &not_found["content"]["application/json"]["schema"];
    // The handler's error envelope, as the pipeline's 404 and 400 have it: one component.
    assert!(schema.get("anyOf").is_none(), "{schema}");
    assert_eq!(
        schema, &responses["400"]["content"]["application/json"]["schema"],
        "{responses:#}"
    );
    let description = not_found["description"].as_str().unwrap();
    assert!(
        description.starts_with("No book has this id; or: Not found"),
        "{description}"
    );
    // The outcome that says what the pipeline says: said once.
    assert_eq!(
        responses["400"]["description"],
        "Bad request: the input fails validation, or a parameter or the body cannot be read"
    );
    // A body of its own: the envelope around it, not the plain error.
    let withdrawn = &responses["410"]["content"]["application/json"]["schema"];
    assert_eq!(
        withdrawn["properties"]["status"]["const"], "error",
        "{withdrawn}"
    );
}
