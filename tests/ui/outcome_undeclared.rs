// A handler implementing an operation with declared outcomes returns one of them: a response
// of its own making (a `Reply` of a body) does not compile.
use strata::prelude::*;
use strata::{Operation, Outcomes, Reply};

#[strata::model]
struct NewBook {
    title: String,
}

#[strata::model]
struct Book {
    id: u32,
}

#[derive(Outcomes)]
enum CreateBook {
    #[outcome(status = 201)]
    Created(Book),
    #[outcome(status = 409)]
    Duplicate,
}

const CREATE_BOOK: Operation<NewBook, CreateBook> = Operation::post("/books");

fn main() {
    let _endpoint = default_endpoints_factory()
        .endpoint()
        .implement(&CREATE_BOOK, async |_input: NewBook| Ok(Reply::created(Book { id: 1 })));
}
