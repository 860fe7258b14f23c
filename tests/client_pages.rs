//! Pagination in the typed Rust client (`client.pages`): an offset-paginated and a
//! cursor-paginated operation with a filter, every page and every item walked in memory over
//! the router and over a real socket, and a stream that ends at the first error.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::sync::{Arc, Mutex};
use strata::{Router, Routing};

use garde::Validate;
use http::StatusCode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::client::{Client, ClientError, Transport};
use strata::paginate::{
    CursorInput, CursorPage, OffsetInput, OffsetPage, decode_cursor, encode_cursor,
};
use strata::prelude::*;

strata::paginate::pagination! { Shelf: offset { items_name: "books", max_limit: 5, default_limit: 4 } }
strata::paginate::pagination! { Feed: cursor { items_name: "books", max_limit: 5, default_limit: 4 } }

/// The declarations a server and its clients share (a crate of their own in a real project).
mod api {
    use super::{Book, CursorInput, CursorPage, Feed, Genre, OffsetInput, OffsetPage, Shelf};
    use strata::Operation;

    pub(crate) const SHELF: Operation<OffsetInput<Shelf, Genre>, OffsetPage<Shelf, Book>> =
        Operation::get("/v1/shelf");
    pub(crate) const FEED: Operation<CursorInput<Feed, Genre>, CursorPage<Feed, Book>> =
        Operation::get("/v1/feed");
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
pub(crate) struct Book {
    id: u32,
    genre: String,
}

/// The filter: only books of one genre (all without it).
#[derive(Debug, Clone, Default, Serialize, Deserialize, Validate, JsonSchema)]
pub(crate) struct Genre {
    #[garde(length(min = 1))]
    genre: Option<String>,
}

fn genre(name: &str) -> Genre {
    Genre {
        genre: Some(name.to_owned()),
    }
}

const GENRES: [&str; 3] = ["essay", "novel", "poetry"];
const COUNT: u32 = 23;

/// The server's books (`id % 3` naming the genre), a generation that any change bumps (a
/// cursor of another generation is refused), and what each request asked for.
#[derive(Debug)]
struct Books {
    all: Vec<Book>,
    generation: u64,
    /// Per request: the operation (`shelf`, `feed`) and the genre filter it carried.
    asked: Vec<(&'static str, Option<String>)>,
}

type Library = Arc<Mutex<Books>>;

fn library() -> Library {
    let all = (1..=COUNT)
        .map(|id| Book {
            id,
            genre: GENRES[id as usize % 3].to_owned(),
        })
        .collect();
    Arc::new(Mutex::new(Books {
        all,
        generation: 0,
        asked: Vec::new(),
    }))
}

impl Books {
    /// The books the filter keeps, in order, and the request noted.
    fn matching(&mut self, operation: &'static str, filter: &Genre) -> Vec<Book> {
        self.asked.push((operation, filter.genre.clone()));
        self.all
            .iter()
            .filter(|b| filter.genre.as_ref().is_none_or(|g| *g == b.genre))
            .cloned()
            .collect()
    }
}

/// The ids of `books`, in order.
fn ids(books: &[Book]) -> Vec<u32> {
    books.iter().map(|b| b.id).collect()
}

fn expected(genre: Option<&str>) -> Vec<u32> {
    (1..=COUNT)
        .filter(|id| genre.is_none_or(|g| GENRES[*id as usize % 3] == g))
        .collect()
}

/// The server: each endpoint implements its declaration, mounted where it says.
fn routing(library: &Library) -> Routing {
    let factory = default_endpoints_factory().with_state(library.clone());
    let shelf = factory.endpoint().implement(
        &api::SHELF,
        async |input: OffsetInput<Shelf, Genre>, library: Library| {
            let matching = library.lock().unwrap().matching("shelf", &input.filters);
            let page = matching
                .iter()
                .skip(usize::try_from(input.offset).unwrap_or(usize::MAX))
                .take(input.limit as usize)
                .cloned()
                .collect();
            Ok(OffsetPage::new(page, matching.len() as u64, &input))
        },
    );
    let feed = factory.endpoint().implement(
        &api::FEED,
        async |input: CursorInput<Feed, Genre>, library: Library| {
            let mut books = library.lock().unwrap();
            let after = match &input.cursor {
                Some(cursor) => {
                    let (generation, after): (u64, u32) = decode_cursor(cursor)?;
                    if generation != books.generation {
                        return Err(http_error!(400, "cursor: the books changed, start again"));
                    }
                    after
                }
                None => 0,
            };
            let rest: Vec<Book> = books
                .matching("feed", &input.filters)
                .into_iter()
                .filter(|b| b.id > after)
                .collect();
            let page: Vec<Book> = rest.iter().take(input.limit as usize).cloned().collect();
            let next = (rest.len() > page.len())
                .then(|| {
                    page.last()
                        .map(|last| encode_cursor(&(books.generation, last.id)))
                })
                .flatten();
            Ok(CursorPage::new(page, next, &input))
        },
    );
    Routing::new().operation(shelf).operation(feed)
}

fn config() -> strata::Config {
    create_config()
        .cors(Cors::Disabled)
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build()
}

/// The requests made since the last call, each with its filter.
fn asked(library: &Library) -> Vec<(&'static str, Option<String>)> {
    std::mem::take(&mut library.lock().unwrap().asked)
}

/// The walk every transport must pass: every page and every item of both styles, with and
/// without the filter, then streams that end at the first error.
async fn walk<T: Transport>(client: &Client<T>, library: &Library) {
    // Offsets, novels, pages of 3: 8 novels in 3, 3, 2.
    let mut pages = client.pages(
        &api::SHELF,
        OffsetInput::first(genre("novel")).with_limit(3),
    );
    let mut seen = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.unwrap();
        assert!(page.items.iter().all(|b| b.genre == "novel"), "{page:?}");
        assert_eq!((page.meta.total, page.meta.limit), (8, 3));
        seen.push((page.meta.offset, ids(&page.items)));
    }
    let offsets: Vec<u64> = seen.iter().map(|(offset, _)| *offset).collect();
    assert_eq!(offsets, [0, 3, 6]);
    let all: Vec<u32> = seen.into_iter().flat_map(|(_, ids)| ids).collect();
    assert_eq!(all, expected(Some("novel")));
    assert_eq!(asked(library), vec![("shelf", Some("novel".to_owned())); 3]);

    // Offsets, every book item by item, default pages of 4: 23 books in 6 requests.
    let mut items = client
        .pages(&api::SHELF, OffsetInput::first(Genre::default()))
        .items();
    let mut all = Vec::new();
    while let Some(book) = items.next().await {
        all.push(book.unwrap().id);
    }
    assert_eq!(all, expected(None));
    assert_eq!(asked(library), vec![("shelf", None); 6]);

    // Cursors, poetry, pages of 3: 8 poems in 3, 3, 2, the last page without a cursor.
    let mut pages = client.pages(
        &api::FEED,
        CursorInput::first(genre("poetry")).with_limit(3),
    );
    let mut sizes = Vec::new();
    let mut all = Vec::new();
    let mut last_cursor = Some(String::new());
    while let Some(page) = pages.next().await {
        let page = page.unwrap();
        assert!(page.items.iter().all(|b| b.genre == "poetry"), "{page:?}");
        sizes.push(page.items.len());
        all.extend(ids(&page.items));
        last_cursor = page.meta.next_cursor;
    }
    assert_eq!((sizes, last_cursor), (vec![3, 3, 2], None));
    assert_eq!(all, expected(Some("poetry")));
    assert_eq!(asked(library), vec![("feed", Some("poetry".to_owned())); 3]);

    // Cursors, essays item by item, pages of 5: 7 essays in 2 requests.
    let first = CursorInput::first(genre("essay")).with_limit(5);
    let mut items = client.pages(&api::FEED, first).items();
    let mut all = Vec::new();
    while let Some(book) = items.next().await {
        let book = book.unwrap();
        assert_eq!(book.genre, "essay");
        all.push(book.id);
    }
    assert_eq!(all, expected(Some("essay")));
    assert_eq!(asked(library).len(), 2);

    ends_at_the_first_error(client, library).await;
}

/// A page refused mid-way (a cursor of books since changed) is yielded, then nothing; a first
/// page refused (a limit above the maximum) likewise.
async fn ends_at_the_first_error<T: Transport>(client: &Client<T>, library: &Library) {
    let mut items = client
        .pages(&api::FEED, CursorInput::first(genre("novel")).with_limit(2))
        .items();
    let mut taken = Vec::new();
    for _ in 0..2 {
        taken.push(items.next().await.unwrap().unwrap().id);
    }
    assert_eq!(taken, [1, 4]);
    assert_eq!(asked(library).len(), 1, "the second page not asked for yet");
    library.lock().unwrap().generation += 1;
    let error = items.next().await.unwrap().unwrap_err();
    assert!(matches!(error, ClientError::Api { .. }), "{error:?}");
    assert_eq!(error.status(), Some(StatusCode::BAD_REQUEST));
    assert_eq!(
        error.message(),
        Some("cursor: the books changed, start again")
    );
    assert!(items.next().await.is_none(), "the stream ends at the error");
    assert!(items.next().await.is_none());
    assert!(
        asked(library).is_empty(),
        "the refused request noted nothing"
    );

    let mut pages = client.pages(
        &api::SHELF,
        OffsetInput::first(genre("novel")).with_limit(9),
    );
    let error = pages.next().await.unwrap().unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::BAD_REQUEST));
    assert_eq!(error.message(), Some("limit: greater than 5"));
    assert!(pages.next().await.is_none());
}

#[tokio::test]
async fn every_page_and_item_in_memory_over_the_router() {
    let library = library();
    let router = Router::new(&routing(&library), &config()).unwrap();
    walk(&Client::new(router), &library).await;
}

#[tokio::test]
async fn every_page_and_item_over_a_real_socket_with_hyper_util_s_pooled_client() {
    let library = library();
    let server = create_server(&config(), &routing(&library)).await.unwrap();
    let strata::server::LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    let client = Client::http(&format!("http://{addr}/")).unwrap();
    walk(&client, &library).await;
    server.shutdown().await;
}

/// The essays' ids and the novels' pages, each stream made from the borrowed `client` and
/// taken on a task of its own: a stream owns a clone of the client.
async fn on_other_tasks<T: Transport>(client: &Client<T>) -> (Vec<u32>, usize) {
    let mut items = client
        .pages(&api::SHELF, OffsetInput::first(genre("essay")))
        .items();
    let essays = tokio::spawn(async move {
        let mut all = Vec::new();
        while let Some(book) = items.next().await {
            all.push(book.unwrap().id);
        }
        all
    });
    let mut pages = client.pages(&api::FEED, CursorInput::first(genre("novel")));
    let novels = tokio::spawn(async move {
        let mut count = 0;
        while let Some(page) = pages.next().await {
            count += page.unwrap().items.len();
        }
        count
    });
    (essays.await.unwrap(), novels.await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_can_be_taken_on_another_task() {
    let library = library();
    let router = Router::new(&routing(&library), &config()).unwrap();
    let (essays, novels) = on_other_tasks(&Client::new(router)).await;
    assert_eq!(essays, expected(Some("essay")));
    assert_eq!(novels, expected(Some("novel")).len());
}
