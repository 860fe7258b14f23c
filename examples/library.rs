//! A small library API: books to add, read and remove, a paginated list of them (offset pages
//! with a filter), a feed of the same books (cursor pages), and a cover upload that saves the
//! file to disk.
//!
//! ```sh
//! cargo run --example library
//! curl 'http://localhost:8091/v1/books?genre=poetry&limit=2'
//! curl 'http://localhost:8091/v1/books/feed?limit=3'
//! curl -i -H 'content-type: application/json' -d '{"title":"Emma","genre":"novel"}' \
//!     'http://localhost:8091/v1/books'
//! curl -X DELETE 'http://localhost:8091/v1/books/8'
//! curl -F caption=Front -F cover=@cover.png 'http://localhost:8091/v1/books/2/cover'
//! ```
//!
//! Books live in memory (seven to start with, at most 100); covers are written to `COVERS_DIR`
//! (a temporary directory by default), at most 1 MiB each. Adding a book answers `201 Created`
//! with its `Location`, a `409` naming the book when one of the same title is there already, a
//! `403` when the library is full: the outcomes of `CreateBook` (`examples/shared/library_api.rs`),
//! which its OpenAPI document and both clients read by status.
//!
//! The API describes itself: `/openapi.json` is its OpenAPI document and `/docs` renders it
//! (Swagger UI from its CDN, or from the `swagger-ui-dist` folder named by `SWAGGER_UI_DIR`).
//! `cargo run --example library -- --openapi library.json` writes the document and
//! `-- --client library.ts` its typed TypeScript client, and exit (YAML for a `.yaml` file).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use strata::{Config, Endpoint, Routing, ServeStatic, UploadLimits};

use strata::Level;
use strata::core::DeclaredError;
use strata::openapi::{DocsPage, Documentation, DocumentationError, OpenApi, OpenApiVersion};
use strata::paginate::{CursorPage, OffsetInput, OffsetPage, decode_cursor, encode_cursor};
use strata::prelude::*;
use strata::typescript::{Integration, IntegrationError};

#[allow(dead_code)] // some of the shared types are only the client's
#[path = "shared/library_api.rs"]
pub(crate) mod api;

use api::{
    Book, BookFeed, BookFilters, BookId, BookPages, Cover, CoverInput, CreateBook, Duplicate,
    Found, Genre, NewBook, SearchInput,
};
use strata::paginate::CursorInput;

const BOOKS: [(&str, Genre); 7] = [
    ("Middlemarch", Genre::Novel),
    ("Leaves of Grass", Genre::Poetry),
    ("Bleak House", Genre::Novel),
    ("The Waste Land", Genre::Poetry),
    ("Persuasion", Genre::Novel),
    ("Ariel", Genre::Poetry),
    ("Beloved", Genre::Novel),
];

/// The most books the library holds: a client cannot grow it without bound.
const MAX_BOOKS: usize = 100;

/// The books, by id, and the next id to give.
struct Shelf {
    books: BTreeMap<u32, Book>,
    next_id: u32,
}

/// The library: its books and where covers go, the state every endpoint shares (cheap to
/// clone).
#[derive(Clone)]
struct Library {
    shelf: Arc<RwLock<Shelf>>,
    covers: Arc<PathBuf>,
}

impl Library {
    fn new(covers: PathBuf) -> Self {
        let books = (1..)
            .zip(BOOKS)
            .map(|(id, (title, genre))| {
                let title = title.to_owned();
                (id, Book { id, title, genre })
            })
            .collect();
        Self {
            shelf: Arc::new(RwLock::new(Shelf { books, next_id: 8 })),
            covers: Arc::new(covers),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Shelf> {
        self.shelf.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Shelf> {
        self.shelf.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The books (of `genre`), in id order, from id `from` on.
    fn books(&self, genre: Option<Genre>, from: u32) -> Vec<Book> {
        self.read()
            .books
            .range(from..)
            .map(|(_, book)| book)
            .filter(|book| genre.is_none_or(|g| book.genre == g))
            .cloned()
            .collect()
    }

    fn get(&self, id: u32) -> Result<Book, ApiError> {
        self.read()
            .books
            .get(&id)
            .cloned()
            .ok_or_else(|| no_book(id))
    }

    /// Adds a book, unless one of the same title (in any case) is there or the library is
    /// full: checked and added under one lock, so two requests cannot both add a title.
    fn add(&self, title: String, genre: Genre) -> CreateBook {
        let mut held = self.write();
        let folded = title.to_lowercase();
        if let Some(existing) = held
            .books
            .values()
            .find(|book| book.title.to_lowercase() == folded)
        {
            return CreateBook::Duplicate(Duplicate {
                existing_id: existing.id,
                message: format!(
                    "The library has \"{}\" already (id {})",
                    existing.title, existing.id
                ),
            });
        }
        if held.books.len() >= MAX_BOOKS {
            return CreateBook::Full;
        }
        let id = held.next_id;
        held.next_id += 1;
        let book = Book { id, title, genre };
        held.books.insert(id, book.clone());
        CreateBook::Created {
            location: format!("/v1/books/{id}"),
            book,
        }
    }

    fn remove(&self, id: u32) -> Result<Book, ApiError> {
        self.write().books.remove(&id).ok_or_else(|| no_book(id))
    }
}

fn no_book(id: u32) -> ApiError {
    http_error!(404, "No book has the id {id}")
}

/// The routing; covers are saved in `covers`.
pub(crate) fn library_routing(covers: PathBuf) -> Routing {
    // Every endpoint finds the library in its context: a handler takes it as `library: Library`.
    let books = default_endpoints_factory().with_state(Library::new(covers));
    let (list, feed) = page_endpoints(&books);
    let (create, read, remove) = book_endpoints(&books);
    let upload = cover_endpoint(&books);
    let search = search_endpoint(&books);
    // Each endpoint implements an operation of the shared API, mounted where it says.
    [list, create, search, feed, read, remove, upload]
        .into_iter()
        .fold(Routing::new(), Routing::operation)
}

/// The factory of the library's endpoints: the library as their state.
type Books = strata::endpoint::StateFactory<Library>;

/// The list (offset pages) and the feed (cursor pages).
fn page_endpoints(books: &Books) -> (Endpoint, Endpoint) {
    let list = books
        .endpoint()
        .tag("books")
        .short_description("Lists books, a page at a time")
        .description("Offset pages of the books, optionally of one genre.")
        .operation_id("listBooks")
        .implement(
            &api::LIST_BOOKS,
            async |input: OffsetInput<BookPages, BookFilters>, library: Library| {
                let matching = library.books(input.filters.genre, 0);
                let total = matching.len() as u64;
                let page = matching
                    .into_iter()
                    .skip(usize::try_from(input.offset).unwrap_or(usize::MAX))
                    .take(input.limit as usize)
                    .collect();
                Ok(OffsetPage::new(page, total, &input))
            },
        );
    let feed = books
        .endpoint()
        .tag("books")
        .short_description("Walks all books with a cursor")
        .operation_id("bookFeed")
        .implement(
            &api::BOOK_FEED,
            async |input: CursorInput<BookFeed>, library: Library| {
                // The cursor is the id of the next book; a tampered cursor is a 400.
                let after: u32 = input
                    .cursor
                    .as_deref()
                    .map(decode_cursor)
                    .transpose()?
                    .unwrap_or(1);
                let mut page = library.books(None, after);
                page.truncate(input.limit as usize + 1);
                let next = page
                    .get(input.limit as usize)
                    .map(|next| encode_cursor(&next.id));
                page.truncate(input.limit as usize);
                Ok(CursorPage::new(page, next, &input))
            },
        );
    (list, feed)
}

/// A search with structured criteria in the body: the QUERY method (safe like GET, with a body).
fn search_endpoint(books: &Books) -> Endpoint {
    books
        .endpoint()
        .tag("books")
        .operation_id("searchBooks")
        .short_description("Finds books by title words and genres")
        .implement(
            &api::SEARCH_BOOKS,
            async |input: SearchInput, library: Library| {
                let words: Vec<String> = input.words.iter().map(|w| w.to_lowercase()).collect();
                let found = library
                    .books(None, 0)
                    .into_iter()
                    .filter(|book| {
                        input
                            .genres
                            .as_ref()
                            .is_none_or(|g| g.contains(&book.genre))
                    })
                    .filter(|book| {
                        let title = book.title.to_lowercase();
                        words.iter().all(|word| title.contains(word.as_str()))
                    })
                    .collect();
                Ok(Found { books: found })
            },
        )
}

/// Adding, reading and removing one book.
fn book_endpoints(books: &Books) -> (Endpoint, Endpoint, Endpoint) {
    let create = books
        .endpoint()
        .tag("books")
        .short_description("Adds a book")
        .operation_id("createBook")
        // Its statuses, headers and bodies are the outcomes of `CreateBook`.
        .implement(
            &api::CREATE_BOOK,
            async |input: NewBook, library: Library| Ok(library.add(input.title, input.genre)),
        );
    let read = books
        .endpoint()
        .tag("books")
        .short_description("One book")
        .operation_id("getBook")
        .declared_error(DeclaredError::new(
            http::StatusCode::NOT_FOUND,
            "No such book",
        ))
        .implement(&api::GET_BOOK, async |input: BookId, library: Library| {
            library.get(input.id)
        });
    let remove = books
        .endpoint()
        .tag("books")
        .short_description("Removes a book; answers with it")
        .operation_id("deleteBook")
        .declared_error(DeclaredError::new(
            http::StatusCode::NOT_FOUND,
            "No such book",
        ))
        .implement(
            &api::DELETE_BOOK,
            async |input: BookId, library: Library| library.remove(input.id),
        );
    (create, read, remove)
}

/// The cover upload, saving into the library's covers directory.
fn cover_endpoint(books: &Books) -> Endpoint {
    books
        .endpoint()
        .tag("books")
        .short_description("Sets the cover of a book")
        .operation_id("uploadCover")
        .declared_error(DeclaredError::new(
            http::StatusCode::NOT_FOUND,
            "No such book",
        ))
        .implement(
            &api::UPLOAD_COVER,
            async |input: CoverInput, library: Library, logger: Logger| {
                library.get(input.id)?;
                let cover = input.cover;
                // The client's file name is not trusted as a path.
                let target = library.covers.join(format!("book-{}.cover", input.id));
                cover.mv(&target).await?;
                logger.info(format_args!(
                    "saved {} bytes to {}",
                    cover.size(),
                    target.display()
                ));
                Ok(Cover {
                    book: input.id,
                    name: cover.name().to_owned(),
                    size: cover.size(),
                    mimetype: cover.mimetype().to_owned(),
                    caption: input.caption,
                })
            },
        )
}

/// The OpenAPI document of the library's routing.
pub(crate) fn library_documentation(
    routing: &Routing,
    config: &Config,
    version: OpenApiVersion,
) -> Result<OpenApi, DocumentationError> {
    Documentation::new(routing, config)
        .openapi_version(version)
        .title("Library")
        .version("1.0.0")
        .description("Books in pages, a feed, and covers.")
        .server_url("http://localhost:8091")
        .tag_description("books", "The books of the library and their covers")
        .build()
}

/// The typed TypeScript client of the library's routing.
pub(crate) fn library_client(
    routing: &Routing,
    config: &Config,
) -> Result<strata::typescript::TypeScript, IntegrationError> {
    Integration::new(routing, config)
        .server_url("http://localhost:8091")
        .build()
}

/// The configuration, but where to listen: uploads on, covers up to 1 MiB, one file per request;
/// a cover past 64 KiB is written to a temporary file as it arrives (and then renamed into the
/// covers directory by `mv`, where the file system allows), not held in memory.
pub(crate) fn library_config() -> strata::ConfigBuilder {
    create_config()
        .cors(Cors::Enabled)
        .logger(Level::Info)
        .upload(
            UploadLimits::builder()
                .file_size(1024 * 1024)
                .files(1)
                .spool_threshold(64 * 1024),
        )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = match std::env::var("PORT") {
        Ok(port) => port
            .parse::<u16>()
            .map_err(|e| format!("PORT={port:?} is not a port: {e}"))?,
        Err(_) => 8091,
    };
    let covers = std::env::var_os("COVERS_DIR")
        .map_or_else(|| std::env::temp_dir().join("strata-covers"), PathBuf::from);
    // The application's own layers, around each endpoint's work once its body has been read
    // (uploads arriving slowly hold no place and count no time): a 504 for work that takes
    // more than 30 s, and at most 1024 requests being worked on at once, over all endpoints.
    let config = library_config()
        .after_body(
            tower::ServiceBuilder::new()
                .timeout(std::time::Duration::from_secs(30))
                .layer(tower::limit::GlobalConcurrencyLimitLayer::new(1024)),
        )
        .listen(port)
        .build();
    let routing = library_routing(covers.clone());
    let doc = library_documentation(&routing, &config, OpenApiVersion::V3_2)?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, file] if flag == "--openapi" => return Ok(doc.write_file(file)?),
        [flag, file] if flag == "--openapi-3.1" => {
            let doc = library_documentation(&routing, &config, OpenApiVersion::V3_1)?;
            return Ok(doc.write_file(file)?);
        }
        [flag, file] if flag == "--client" => {
            return Ok(library_client(&routing, &config)?.write_file(file)?);
        }
        _ => {}
    }
    std::fs::create_dir_all(&covers)?;
    println!("Covers are saved in {}", covers.display());
    let server = create_server(&config, &with_docs(routing, &doc)).await?;
    for listening in server.servers() {
        println!("Listening on {:?}", listening.local_addr);
    }
    server.run().await;
    Ok(())
}

/// The API plus `/openapi.json` and `/docs` (Swagger UI from `SWAGGER_UI_DIR` when set).
fn with_docs(routing: Routing, doc: &OpenApi) -> Routing {
    let page = DocsPage::new("/openapi.json").title("Library");
    let routing = routing.route("openapi.json", strata::openapi::openapi_endpoint(doc));
    match std::env::var_os("SWAGGER_UI_DIR") {
        Some(dir) => routing
            .route(
                "docs",
                strata::openapi::docs_page(
                    &page
                        .script_url("/swagger-ui/swagger-ui-bundle.js")
                        .stylesheet_url("/swagger-ui/swagger-ui.css"),
                ),
            )
            .route("swagger-ui", ServeStatic::dir(dir)),
        None => routing.route("docs", strata::openapi::docs_page(&page)),
    }
}
