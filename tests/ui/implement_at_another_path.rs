// An endpoint implementing an operation, mounted at another path: it compiles, and the routing
// refuses it at startup (`RoutingError::NotAsDeclared`), never a silent 404 at the client.
use strata::{Operation, Router};
use garde::Validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::prelude::*;
use strata::router::RoutingError;

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

const GET_BOOK: Operation<BookId, Book> = Operation::get("/v1/books/:id");

fn main() {
    let endpoint = default_endpoints_factory()
        .endpoint()
        .implement(&GET_BOOK, async |input: BookId| Ok(Book { id: input.id }));
    let routing = routing! { "v1" => { "book" => { ":id" => endpoint } } };
    let config = create_config().cors(Cors::Disabled).build();
    match Router::new(&routing, &config) {
        Err(RoutingError::NotAsDeclared { declared, mounted }) => {
            assert_eq!(declared, "GET /v1/books/:id");
            assert_eq!(mounted, "GET /v1/book/:id");
        }
        other => panic!("expected NotAsDeclared, got {:?}", other.map(|_| ())),
    }
}
