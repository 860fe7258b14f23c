// A client reads an operation with declared outcomes as its outcomes, not as one of the bodies.
use strata::client::Client;
use strata::{Operation, Outcomes};

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

async fn read(client: &Client<strata::Router>) {
    let _book: Book = client.call(&CREATE_BOOK, NewBook { title: "Emma".into() }).await.unwrap();
}

fn main() {
    let _ = read;
}
