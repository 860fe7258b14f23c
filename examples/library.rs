//! A small library API: a paginated list of books (offset pages with a filter), a feed of the
//! same books (cursor pages), and a cover upload that saves the file to disk.
//!
//! ```sh
//! cargo run --example library
//! curl 'http://localhost:8091/v1/books?genre=poetry&limit=2'
//! curl 'http://localhost:8091/v1/books/feed?limit=3'
//! curl -F caption=Front -F cover=@cover.png 'http://localhost:8091/v1/books/2/cover'
//! ```
//!
//! Covers are written to `COVERS_DIR` (a temporary directory by default), at most 1 MiB each.
//!
//! The API describes itself: `/openapi.json` is its OpenAPI document and `/docs` renders it
//! (Swagger UI from its CDN, or from the `swagger-ui-dist` folder named by `SWAGGER_UI_DIR`).
//! `cargo run --example library -- --openapi library.json` writes the document and exits
//! (YAML for a `.yaml` file).

use std::path::PathBuf;
use std::sync::Arc;

use garde::Validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::Level;
use strata::openapi::{DocsPage, Documentation, DocumentationError, OpenApi};
use strata::paginate::{
    CursorInput, CursorPage, OffsetInput, OffsetPage, decode_cursor, encode_cursor, pagination,
};
use strata::prelude::*;

pagination! {
    /// Offset pages of books: `limit` 1..=10 (default 3), `offset`.
    pub(crate) BookPages: offset { items_name: "books", max_limit: 10, default_limit: 3 }
}
pagination! {
    /// Cursor pages of books.
    pub(crate) BookFeed: cursor { items_name: "books", max_limit: 10, default_limit: 3 }
}

#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Genre {
    Novel,
    Poetry,
}

#[derive(Clone, Serialize, Validate, JsonSchema)]
pub(crate) struct Book {
    #[garde(skip)]
    id: u32,
    #[garde(skip)]
    title: &'static str,
    #[garde(skip)]
    genre: Genre,
}

const BOOKS: [(&str, Genre); 7] = [
    ("Middlemarch", Genre::Novel),
    ("Leaves of Grass", Genre::Poetry),
    ("Bleak House", Genre::Novel),
    ("The Waste Land", Genre::Poetry),
    ("Persuasion", Genre::Novel),
    ("Ariel", Genre::Poetry),
    ("Beloved", Genre::Novel),
];

fn books() -> impl Iterator<Item = Book> {
    (1..)
        .zip(BOOKS)
        .map(|(id, (title, genre))| Book { id, title, genre })
}

/// The list's own filter, validated together with `limit` and `offset`.
#[derive(Deserialize, Validate, JsonSchema)]
pub(crate) struct BookFilters {
    #[garde(skip)]
    genre: Option<Genre>,
}

/// A cover upload: the book from the path, the file and an optional caption from the form.
#[derive(Deserialize, Validate, JsonSchema)]
pub(crate) struct CoverInput {
    #[garde(range(min = 1, max = 7))]
    id: u32,
    #[garde(skip)]
    cover: UploadedFile,
    #[garde(length(chars, max = 80))]
    caption: Option<String>,
}

#[derive(Serialize, Validate, JsonSchema)]
pub(crate) struct Cover {
    #[garde(skip)]
    book: u32,
    #[garde(skip)]
    name: String,
    #[garde(skip)]
    size: usize,
    #[garde(skip)]
    mimetype: String,
    #[garde(skip)]
    caption: Option<String>,
}

/// The routing; covers are saved in `covers`.
pub(crate) fn library_routing(covers: PathBuf) -> Routing {
    let list = default_endpoints_factory()
        .get()
        .tag("books")
        .short_description("Lists books, a page at a time")
        .description("Offset pages of the books, optionally of one genre.")
        .operation_id("listBooks")
        .handler(
            |input: OffsetInput<BookPages, BookFilters>, _ctx, _logger| async move {
                let genre = input.filters.genre;
                let matching: Vec<Book> = books()
                    .filter(|book| genre.is_none_or(|g| book.genre == g))
                    .collect();
                let total = matching.len() as u64;
                let page = matching
                    .into_iter()
                    .skip(usize::try_from(input.offset).unwrap_or(usize::MAX))
                    .take(input.limit as usize)
                    .collect();
                Ok(OffsetPage::new(page, total, &input))
            },
        );
    let feed = default_endpoints_factory()
        .get()
        .tag("books")
        .short_description("Walks all books with a cursor")
        .operation_id("bookFeed")
        .handler(|input: CursorInput<BookFeed>, _ctx, _logger| async move {
            // The cursor is the id of the next book; a tampered cursor is a 400.
            let after: u32 = input
                .cursor
                .as_deref()
                .map(decode_cursor)
                .transpose()?
                .unwrap_or(1);
            let page: Vec<Book> = books()
                .skip_while(|book| book.id < after)
                .take(input.limit as usize + 1)
                .collect();
            let (page, next) = match page.get(input.limit as usize) {
                Some(next) => (
                    page[..input.limit as usize].to_vec(),
                    Some(encode_cursor(&next.id)),
                ),
                None => (page, None),
            };
            Ok(CursorPage::new(page, next, &input))
        });
    let covers = Arc::new(covers);
    let upload = default_endpoints_factory()
        .post()
        .tag("books")
        .short_description("Sets the cover of a book")
        .operation_id("uploadCover")
        .handler(move |input: CoverInput, _ctx, logger| {
            let covers = Arc::clone(&covers);
            async move {
                let cover = input.cover;
                // The client's file name is not trusted as a path.
                let target = covers.join(format!("book-{}.cover", input.id));
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
            }
        });
    routing! {
        "v1" => {
            "books" => list.nest(routing! { "feed" => feed, ":id" => { "cover" => upload } }),
        }
    }
}

/// The OpenAPI document of the library's routing.
pub(crate) fn library_documentation(
    routing: &Routing,
    config: &Config,
) -> Result<OpenApi, DocumentationError> {
    Documentation::new(routing, config)
        .title("Library")
        .version("1.0.0")
        .description("Books in pages, a feed, and covers.")
        .server_url("http://localhost:8091")
        .tag_description("books", "The books of the library and their covers")
        .build()
}

/// The configuration, but where to listen: uploads on, covers up to 1 MiB, one file per request.
pub(crate) fn library_config() -> strata::ConfigBuilder {
    create_config()
        .cors(true)
        .logger(Level::Info, true)
        .upload(UploadLimits::new().file_size(1024 * 1024).files(1))
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
    let config = library_config().listen(port).build();
    let routing = library_routing(covers.clone());
    let doc = library_documentation(&routing, &config)?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, file] = args.as_slice()
        && flag == "--openapi"
    {
        return Ok(doc.write_file(file)?);
    }
    std::fs::create_dir_all(&covers)?;
    println!("Covers are saved in {}", covers.display());
    // The application's own layers around the app: a 504 for a request that takes more than
    // 30 s, and at most 1024 requests at once.
    let layers = tower::ServiceBuilder::new()
        .timeout(std::time::Duration::from_secs(30))
        .concurrency_limit(1024);
    let server = strata::create_server_with(&config, &with_docs(routing, &doc), layers).await?;
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
