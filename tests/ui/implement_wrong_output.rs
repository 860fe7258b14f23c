// A server implementing an operation must return the output it declares.
use strata::Operation;
use garde::Validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::prelude::*;

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
struct BookId {
    #[garde(skip)]
    id: u32,
}

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Book {
    id: u32,
}

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Author {
    name: String,
}

const GET_BOOK: Operation<BookId, Book> = Operation::get("/v1/books/:id");

fn main() {
    let _endpoint = default_endpoints_factory()
        .endpoint()
        .implement(&GET_BOOK, async |input: BookId| Ok(Author { name: input.id.to_string() }));
}
