//! The library's API as its server (`examples/library.rs`) and its clients
//! (`examples/client.rs`) share it: each operation declared once, with its input and output
//! types. In a real project this is a small crate both depend on; the server implements each
//! operation (`EndpointBuilder::implement`), the client calls it (`strata::client::Client`),
//! and a changed type breaks both at compile time.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::paginate::{CursorInput, CursorPage, OffsetInput, OffsetPage, pagination};
use strata::{Operation, Outcomes, UploadedFile};

pagination! {
    /// Offset pages of books: `limit` 1..=10 (default 3), `offset`.
    pub(crate) BookPages: offset { items_name: "books", max_limit: 10, default_limit: 3 }
}
pagination! {
    /// Cursor pages of books.
    pub(crate) BookFeed: cursor { items_name: "books", max_limit: 10, default_limit: 3 }
}

/// Lists books, a page at a time (offset pages, optionally of one genre).
pub(crate) const LIST_BOOKS: Operation<
    OffsetInput<BookPages, BookFilters>,
    OffsetPage<BookPages, Book>,
> = Operation::get("/v1/books");
/// Walks all books with a cursor.
pub(crate) const BOOK_FEED: Operation<CursorInput<BookFeed>, CursorPage<BookFeed, Book>> =
    Operation::get("/v1/books/feed");
/// Finds books by title words and genres (QUERY: the criteria in a JSON body).
pub(crate) const SEARCH_BOOKS: Operation<SearchInput, Found> = Operation::query("/v1/books/search");
/// Adds a book: `201 Created` with the book and its `Location`, or a `409` naming the book of
/// that title already there, or a `403` when the library is full.
pub(crate) const CREATE_BOOK: Operation<NewBook, CreateBook> = Operation::post("/v1/books");
/// One book.
pub(crate) const GET_BOOK: Operation<BookId, Book> = Operation::get("/v1/books/:id");
/// Removes a book; answers with it.
pub(crate) const DELETE_BOOK: Operation<BookId, Book> = Operation::delete("/v1/books/:id");
/// Sets the cover of a book (a multipart form).
pub(crate) const UPLOAD_COVER: Operation<CoverInput, Cover> =
    Operation::post("/v1/books/:id/cover");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Genre {
    Novel,
    Poetry,
}

#[strata::model]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Book {
    pub(crate) id: u32,
    pub(crate) title: String,
    #[garde(skip)]
    pub(crate) genre: Genre,
}

/// A book to add.
#[strata::model]
pub(crate) struct NewBook {
    #[garde(length(chars, min = 1, max = 100))]
    pub(crate) title: String,
    #[garde(skip)]
    pub(crate) genre: Genre,
}

/// What adding a book comes to: each outcome its status, the client reads it back by status.
#[derive(Debug, Outcomes)]
pub(crate) enum CreateBook {
    /// The book, added.
    #[outcome(status = 201)]
    Created {
        #[outcome(body)]
        book: Book,
        /// Where the book is now: `/v1/books/{id}`.
        #[outcome(header = "location")]
        location: String,
    },
    /// A book of this title (in any case) is there already.
    #[outcome(status = 409)]
    Duplicate(Duplicate),
    /// The library is full: 100 books at most.
    #[outcome(status = 403)]
    Full,
}

/// The book a new one would duplicate.
#[strata::model]
#[derive(Debug, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Duplicate {
    /// The id of the book already there.
    pub(crate) existing_id: u32,
    /// What happened: a `message`, as every error of the API has one.
    pub(crate) message: String,
}

/// A book by its id, from the path.
#[strata::model]
pub(crate) struct BookId {
    pub(crate) id: u32,
}

/// The list's own filter, validated together with `limit` and `offset`.
#[strata::model]
#[derive(Clone)]
pub(crate) struct BookFilters {
    #[garde(skip)]
    pub(crate) genre: Option<Genre>,
}

/// A search with structured criteria.
#[strata::model]
pub(crate) struct SearchInput {
    /// Words that must all be in the title (any case).
    #[garde(length(max = 10), inner(length(chars, min = 1, max = 40)))]
    pub(crate) words: Vec<String>,
    /// The genres to look in; all when absent.
    #[garde(skip)]
    pub(crate) genres: Option<Vec<Genre>>,
}

#[strata::model]
#[derive(Debug)]
pub(crate) struct Found {
    #[garde(dive)]
    pub(crate) books: Vec<Book>,
}

/// A cover upload: the book from the path, the file and an optional caption from the form.
#[strata::model]
pub(crate) struct CoverInput {
    pub(crate) id: u32,
    pub(crate) cover: UploadedFile,
    #[garde(length(chars, max = 80))]
    pub(crate) caption: Option<String>,
}

#[strata::model]
#[derive(Debug)]
pub(crate) struct Cover {
    pub(crate) book: u32,
    pub(crate) name: String,
    pub(crate) size: usize,
    pub(crate) mimetype: String,
    pub(crate) caption: Option<String>,
}
