// Calling an operation with another input type than it declares must not compile.
use serde::{Deserialize, Serialize};
use strata::client::Client;
use strata::Operation;

#[derive(Serialize, Deserialize)]
struct BookId {
    id: u32,
}

#[derive(Serialize, Deserialize)]
struct NewBook {
    title: String,
}

#[derive(Serialize, Deserialize)]
struct Book {
    id: u32,
    title: String,
}

const GET_BOOK: Operation<BookId, Book> = Operation::get("/v1/books/:id");

async fn read(client: &Client<strata::Router>) {
    let _ = client.call(&GET_BOOK, NewBook { title: "Emma".into() }).await;
}

fn main() {
    let _ = read;
}
