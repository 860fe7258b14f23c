// Reading an operation's output as another type than it declares must not compile.
use serde::{Deserialize, Serialize};
use strata::client::Client;
use strata::Operation;

#[derive(Serialize, Deserialize)]
struct BookId {
    id: u32,
}

#[derive(Serialize, Deserialize)]
struct Book {
    id: u32,
    title: String,
}

#[derive(Serialize, Deserialize)]
struct Author {
    name: String,
}

const GET_BOOK: Operation<BookId, Book> = Operation::get("/v1/books/:id");

async fn read(client: &Client<strata::Router>) {
    let _author: Author = client.call(&GET_BOOK, BookId { id: 7 }).await.unwrap();
}

fn main() {
    let _ = read;
}
