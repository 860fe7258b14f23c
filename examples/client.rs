//! The typed Rust client: the library example's own operations (`examples/shared/library_api.rs`)
//! called over the network with hyper-util's pooled client, with the server's types, nothing
//! generated.
//!
//! `cargo run --example client` starts the library on a free port in this process and walks
//! it: create (its `201` and `Location`, then the same title again for a typed `409`), read,
//! every offset page with a filter, every cursor page, a QUERY search, a cover upload, a
//! refused input and a missing book as typed errors, delete. Set `LIBRARY_URL`
//! (`http://127.0.0.1:8091`) to walk a library started with `cargo run --example library`
//! instead.

use std::time::Duration;

use strata::UploadedFile;
use strata::client::{Client, ClientError, HttpClient, InvalidBaseUrl, Transport};
use strata::paginate::{CursorInput, OffsetInput};
use strata::prelude::create_server;

#[allow(dead_code)] // the server's own entry points
#[path = "library.rs"]
pub(crate) mod library;

use library::api::{self, BookFilters, CoverInput, CreateBook, Genre, NewBook, SearchInput};

/// The walk, over any transport the client runs on (tests run it in memory, too). Returns what
/// it did, one line per step.
pub(crate) async fn walk<T: Transport>(client: &Client<T>) -> Result<Vec<String>, ClientError> {
    let mut done = Vec::new();
    let novel = |title: &str| NewBook {
        title: title.into(),
        genre: Genre::Novel,
    };
    // Each outcome of the create is a variant: its status, headers and body read back typed.
    let created = match client
        .call(&api::CREATE_BOOK, novel("Frankenstein"))
        .await?
    {
        CreateBook::Created { book, location } => {
            assert_eq!(location, format!("/v1/books/{}", book.id));
            done.push(format!(
                "created {} ({}) at {location}",
                book.title, book.id
            ));
            book
        }
        other => panic!("Frankenstein is not in the library yet: {other:?}"),
    };
    // The same title in another case: a 409 naming the book the library has.
    match client
        .call(&api::CREATE_BOOK, novel("FRANKENSTEIN"))
        .await?
    {
        CreateBook::Duplicate(duplicate) => {
            assert_eq!(duplicate.existing_id, created.id);
            done.push(format!("not twice: {}", duplicate.message));
        }
        other => panic!("a second Frankenstein: {other:?}"),
    }
    let read = client
        .call(&api::GET_BOOK, api::BookId { id: created.id })
        .await?;
    assert_eq!(read, created);
    done.push(format!("read {}", read.title));

    // Every page of the novels, one request per page (limit 2), items flattened.
    let first = OffsetInput::first(BookFilters {
        genre: Some(Genre::Novel),
    })
    .with_limit(2);
    let mut novels = Vec::new();
    let mut items = client.pages(&api::LIST_BOOKS, first).items();
    while let Some(book) = items.next().await {
        novels.push(book?.title);
    }
    assert!(novels.contains(&created.title));
    done.push(format!("{} novels: {}", novels.len(), novels.join(", ")));

    // Every book through the cursor feed.
    let mut feed = client.pages(
        &api::BOOK_FEED,
        CursorInput::first(strata::paginate::NoFilters),
    );
    let mut pages = 0;
    let mut count = 0;
    while let Some(page) = feed.next().await {
        pages += 1;
        count += page?.items.len();
    }
    done.push(format!("the feed: {count} books in {pages} pages"));

    let found = client
        .call(
            &api::SEARCH_BOOKS,
            SearchInput {
                words: vec!["frank".into()],
                genres: None,
            },
        )
        .await?;
    assert_eq!(found.books, std::slice::from_ref(&read));
    done.push(format!("QUERY search found {}", found.books[0].title));

    let cover = client
        .call(
            &api::UPLOAD_COVER,
            CoverInput {
                id: created.id,
                cover: UploadedFile::new("cover.png", "image/png", &b"\x89PNG\r\n\x1a\n"[..]),
                caption: Some("First edition".into()),
            },
        )
        .await?;
    done.push(format!("uploaded {} ({} bytes)", cover.name, cover.size));

    // The server's errors, typed: a refused input names its field; a missing book is a 404.
    let refused = client
        .call(
            &api::CREATE_BOOK,
            NewBook {
                title: String::new(),
                genre: Genre::Poetry,
            },
        )
        .await
        .expect_err("an empty title is refused");
    done.push(format!("refused: {refused}"));

    let deleted = client
        .call(&api::DELETE_BOOK, api::BookId { id: created.id })
        .await?;
    let missing = client
        .call(&api::GET_BOOK, api::BookId { id: deleted.id })
        .await
        .expect_err("a deleted book is gone");
    done.push(format!("deleted {}, then: {missing}", deleted.title));
    Ok(done)
}

/// A client of the library at `url` over a pool of connections (hyper-util's pooled client),
/// each call within 10 s.
pub(crate) fn network_client(url: &str) -> Result<HttpClient, InvalidBaseUrl> {
    Ok(Client::http(url)?.timeout(Duration::from_secs(10)))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (url, server) = if let Ok(url) = std::env::var("LIBRARY_URL") {
        (url, None)
    } else {
        let covers = std::env::temp_dir().join("strata-client-covers");
        std::fs::create_dir_all(&covers)?;
        let config = library::library_config()
            .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
            .build();
        let server = create_server(&config, &library::library_routing(covers)).await?;
        let strata::server::LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
            return Err("the library listens on TCP".into());
        };
        (format!("http://{addr}"), Some(server))
    };
    println!("walking the library at {url}");
    for step in walk(&network_client(&url)?).await? {
        println!("  {step}");
    }
    if let Some(server) = server {
        server.shutdown().await;
    }
    Ok(())
}
