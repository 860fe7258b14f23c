//! The typed Rust client (`strata::client`): operations declared once, implemented by the
//! server, called by the client in memory over the router and over a real socket.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::sync::{Arc, Mutex};
use std::time::Duration;
use strata::{InputSource, Operation, RequestInfo, Router, Routing};

use garde::Validate;
use http::{HeaderName, HeaderValue, StatusCode};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::client::{Client, ClientError, HttpClient, Transport};
use strata::prelude::*;
use strata::router::RoutingError;

/// The declarations a server and its clients share (a crate of their own in a real project).
mod api {
    use super::{Book, BookId, Found, NewBook, Search, Shelf, ShelfQuery};
    use strata::Operation;

    pub(crate) const CREATE_BOOK: Operation<NewBook, Book> = Operation::post("/v1/books");
    pub(crate) const GET_BOOK: Operation<BookId, Book> = Operation::get("/v1/books/:id");
    pub(crate) const DELETE_BOOK: Operation<BookId, Book> = Operation::delete("/v1/books/:id");
    pub(crate) const LIST_SHELF: Operation<ShelfQuery, Shelf> =
        Operation::get("/v1/shelves/:shelf");
    pub(crate) const SEARCH: Operation<Search, Found> = Operation::query("/v1/books/search");
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
pub(crate) struct Book {
    id: u32,
    title: String,
    shelf: String,
}

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
pub(crate) struct NewBook {
    #[garde(length(chars, min = 1, max = 100))]
    title: String,
    #[garde(length(min = 1))]
    shelf: String,
}

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
pub(crate) struct BookId {
    #[garde(skip)]
    id: u32,
}

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
pub(crate) struct ShelfQuery {
    /// The shelf (a path parameter: any text, percent-encoded by the client).
    #[garde(length(min = 1))]
    shelf: String,
    /// Title words, all of which must appear (repeated query keys).
    #[garde(skip)]
    #[serde(default)]
    words: Vec<String>,
    #[garde(skip)]
    limit: Option<u32>,
}

#[derive(Debug, Serialize, Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
pub(crate) struct Shelf {
    shelf: String,
    books: Vec<Book>,
}

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
pub(crate) struct Search {
    #[garde(length(min = 1), inner(length(min = 1)))]
    words: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
pub(crate) struct Found {
    books: Vec<Book>,
}

type Books = Arc<Mutex<Vec<Book>>>;

fn has_words(book: &Book, words: &[String]) -> bool {
    let title = book.title.to_lowercase();
    words.iter().all(|w| title.contains(&w.to_lowercase()))
}

/// The server: each endpoint implements its declaration, mounted where it says.
fn routing(books: &Books) -> Routing {
    let factory = default_endpoints_factory().with_state(books.clone());
    let create =
        factory
            .endpoint()
            .implement(&api::CREATE_BOOK, async |input: NewBook, books: Books| {
                let mut books = books.lock().unwrap();
                let book = Book {
                    id: books.iter().map(|b| b.id).max().unwrap_or(0) + 1,
                    title: input.title,
                    shelf: input.shelf,
                };
                books.push(book.clone());
                Ok(book)
            });
    let get = factory
        .endpoint()
        .implement(&api::GET_BOOK, async |input: BookId, books: Books| {
            let books = books.lock().unwrap();
            books
                .iter()
                .find(|b| b.id == input.id)
                .cloned()
                .ok_or_else(|| http_error!(404, "No book has the id {}", input.id))
        });
    let delete =
        factory
            .endpoint()
            .implement(&api::DELETE_BOOK, async |input: BookId, books: Books| {
                let mut books = books.lock().unwrap();
                let at = books
                    .iter()
                    .position(|b| b.id == input.id)
                    .ok_or_else(|| http_error!(404, "No book has the id {}", input.id))?;
                Ok(books.remove(at))
            });
    let shelf =
        factory
            .endpoint()
            .implement(&api::LIST_SHELF, async |input: ShelfQuery, books: Books| {
                let books = books.lock().unwrap();
                let limit = input.limit.map_or(usize::MAX, |l| l as usize);
                Ok(Shelf {
                    books: books
                        .iter()
                        .filter(|b| b.shelf == input.shelf && has_words(b, &input.words))
                        .take(limit)
                        .cloned()
                        .collect(),
                    shelf: input.shelf,
                })
            });
    let search = factory
        .endpoint()
        .implement(&api::SEARCH, async |input: Search, books: Books| {
            let books = books.lock().unwrap();
            Ok(Found {
                books: books
                    .iter()
                    .filter(|b| has_words(b, &input.words))
                    .cloned()
                    .collect(),
            })
        });
    Routing::new()
        .operation(create)
        .operation(get)
        .operation(delete)
        .operation(shelf)
        .operation(search)
}

fn config() -> strata::Config {
    create_config()
        .cors(Cors::Disabled)
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build()
}

/// The walk every transport must pass: create, read, list with path and query fields, a QUERY
/// search, a typed 400 naming the field, a 404, delete. Generic over the client with one bound
/// (`Transport`), calls awaited in place and sent from other tasks.
async fn walk<T: Transport>(client: &Client<T>) {
    let emma = client
        .call(
            &api::CREATE_BOOK,
            NewBook {
                title: "Emma".into(),
                shelf: "19th century / novels".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(emma.title, "Emma");
    let persuasion = client
        .call(
            &api::CREATE_BOOK,
            NewBook {
                title: "Persuasion of Emma".into(),
                shelf: "19th century / novels".into(),
            },
        )
        .await
        .unwrap();
    let read = client
        .call(&api::GET_BOOK, BookId { id: emma.id })
        .await
        .unwrap();
    assert_eq!(read, emma);

    calls_on_other_tasks(client, &emma).await;

    // A path parameter with spaces and a slash, and a list as repeated query keys.
    let shelf = client
        .call(
            &api::LIST_SHELF,
            ShelfQuery {
                shelf: "19th century / novels".into(),
                words: vec!["emma".into(), "persuasion".into()],
                limit: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(shelf.shelf, "19th century / novels");
    assert_eq!(shelf.books, std::slice::from_ref(&persuasion));
    let one = client
        .call(
            &api::LIST_SHELF,
            ShelfQuery {
                shelf: "19th century / novels".into(),
                words: Vec::new(),
                limit: Some(1),
            },
        )
        .await
        .unwrap();
    assert_eq!(one.books, std::slice::from_ref(&emma));

    // QUERY: the criteria in a JSON body.
    let found = client
        .call(
            &api::SEARCH,
            Search {
                words: vec!["EMMA".into()],
            },
        )
        .await
        .unwrap();
    assert_eq!(found.books, [emma.clone(), persuasion.clone()]);

    // The server's validation error, typed: status, message naming the field, the body.
    let refused = client
        .call(
            &api::CREATE_BOOK,
            NewBook {
                title: String::new(),
                shelf: "x".into(),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(refused.status(), Some(StatusCode::BAD_REQUEST));
    assert!(refused.message().unwrap().contains("title"), "{refused}");
    let body: serde_json::Value = refused.error_body().unwrap().unwrap();
    assert_eq!(body["status"], "error");

    let deleted = client
        .call(&api::DELETE_BOOK, BookId { id: emma.id })
        .await
        .unwrap();
    assert_eq!(deleted, emma);
    let gone = client
        .call(&api::GET_BOOK, BookId { id: emma.id })
        .await
        .unwrap_err();
    assert_eq!(gone.status(), Some(StatusCode::NOT_FOUND));
    assert_eq!(
        gone.message(),
        Some(format!("No book has the id {}", emma.id).as_str())
    );
}

/// A call owns what it needs: spawned from a borrowed client, its input borrowed and gone
/// before the task runs (the request is written when the call is made); an awaited call moved
/// to a task with a clone of the client.
async fn calls_on_other_tasks<T: Transport>(client: &Client<T>, book: &Book) {
    let task = {
        let id = BookId { id: book.id };
        tokio::spawn(client.call(&api::GET_BOOK, &id).send())
    };
    assert_eq!(&task.await.unwrap().unwrap(), book);
    let task = tokio::spawn({
        let client = client.clone();
        let id = book.id;
        async move { client.call(&api::GET_BOOK, BookId { id }).await }
    });
    assert_eq!(&task.await.unwrap().unwrap(), book);
}

#[tokio::test]
async fn the_walk_in_memory_over_the_router() {
    let books = Books::default();
    let router = Router::new(&routing(&books), &config()).unwrap();
    walk(&Client::new(router)).await;
}

#[tokio::test]
async fn the_walk_over_a_real_socket_with_hyper_util_s_pooled_client() {
    let books = Books::default();
    let server = create_server(&config(), &routing(&books)).await.unwrap();
    let strata::server::LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    let client: HttpClient = Client::http(&format!("http://{addr}/")).unwrap();
    walk(&client).await;
    server.shutdown().await;
}

#[tokio::test]
async fn headers_timeouts_and_bodies_that_are_not_the_output() {
    #[derive(Debug, Serialize, Deserialize, Validate, JsonSchema)]
    #[garde(allow_unvalidated)]
    struct Seen {
        token: Option<String>,
    }
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Wrong {
        token: u32,
    }
    const SEEN: Operation<(), Seen> = Operation::get("/seen");
    const SEEN_WRONGLY: Operation<(), Wrong> = Operation::get("/seen");
    const SLOW: Operation<(), Seen> = Operation::get("/slow");
    let slow = default_endpoints_factory()
        .endpoint()
        .implement(&SLOW, async |(): ()| {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok(Seen { token: None })
        });
    // Any endpoint answers a declaration that matches it (this one reads the request's headers).
    let seen = default_endpoints_factory().get().handler_without_input(
        async |parts: http::request::Parts| {
            let token = parts
                .headers
                .get("token")
                .map(|t| t.to_str().unwrap().to_owned());
            Ok(Seen { token })
        },
    );
    let routing = routing! { "seen" => seen }.operation(slow);
    let router = Router::new(&routing, &config()).unwrap();
    let token = HeaderName::from_static("token");
    let client = Client::new(router).header(token.clone(), HeaderValue::from_static("client"));
    let seen = client.call(&SEEN, ()).await.unwrap();
    assert_eq!(seen.token.as_deref(), Some("client"));
    let seen = client
        .call(&SEEN, ())
        .header(token, HeaderValue::from_static("call"))
        .await
        .unwrap();
    assert_eq!(
        seen.token.as_deref(),
        Some("call"),
        "the call's header wins"
    );

    // A success whose body is not the declared output: where, and why.
    let error = client.call(&SEEN_WRONGLY, ()).await.unwrap_err();
    assert!(
        matches!(&error, ClientError::Decode { path, .. } if path == "data.token"),
        "{error:?}"
    );

    let error = client
        .call(&SLOW, ())
        .timeout(Duration::from_millis(50))
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Timeout(_)), "{error:?}");
    let small = client.clone().max_response_body(8);
    let error = small.call(&SEEN, ()).await.unwrap_err();
    assert!(
        matches!(error, ClientError::TooLarge { limit: 8 }),
        "{error:?}"
    );
}

#[test]
fn an_operation_mounted_elsewhere_is_a_routing_error() {
    let endpoint = || {
        default_endpoints_factory()
            .endpoint()
            .implement(&api::GET_BOOK, async |input: BookId| {
                Ok(Book {
                    id: input.id,
                    title: String::new(),
                    shelf: String::new(),
                })
            })
    };
    let error = |routing: Routing| Router::new(&routing, &config()).unwrap_err();
    // Another path.
    let elsewhere = error(routing! { "v2" => { "books" => { ":id" => endpoint() } } });
    assert!(
        matches!(&elsewhere, RoutingError::NotAsDeclared { declared, mounted }
            if declared == "GET /v1/books/:id" && mounted == "GET /v2/books/:id"),
        "{elsewhere}"
    );
    assert_eq!(
        elsewhere.to_string(),
        "GET /v2/books/:id: the endpoint implements the operation GET /v1/books/:id, so it must be mounted there"
    );
    // The same path with another parameter name is another path for the client.
    let renamed = error(routing! { "get /v1/books/:book" => endpoint() });
    assert!(matches!(
        renamed,
        RoutingError::NotAsDeclared { .. } | RoutingError::UnknownParam { .. }
    ));
    // Another method.
    let method = error(routing! { "post /v1/books/:id" => endpoint() });
    assert!(
        matches!(method, RoutingError::MethodNotSupported { .. }),
        "{method}"
    );
    // Where it says: fine, written out or with `Routing::operation`.
    assert!(Router::new(&routing! { "get /v1/books/:id" => endpoint() }, &config()).is_ok());
    assert!(Router::new(&Routing::new().operation(endpoint()), &config()).is_ok());
    // `Routing::operation` takes only endpoints that implement one.
    let plain = default_endpoints_factory()
        .get()
        .handler_without_input(async || Ok(Found { books: Vec::new() }));
    let undeclared = error(Routing::new().operation(plain));
    assert!(
        matches!(undeclared, RoutingError::InvalidKey { .. }),
        "{undeclared}"
    );
}

#[test]
fn types_and_places_are_checked_before_any_call() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/client_wrong_input.rs");
    cases.compile_fail("tests/ui/client_wrong_output.rs");
    cases.compile_fail("tests/ui/implement_wrong_output.rs");
    cases.pass("tests/ui/implement_at_another_path.rs");
}

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
struct CoverUpload {
    #[garde(skip)]
    id: u32,
    #[garde(length(max = 80))]
    caption: Option<String>,
    #[garde(skip)]
    cover: strata::UploadedFile,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Stored {
    id: u32,
    name: String,
    mimetype: String,
    bytes: Vec<u8>,
    caption: Option<String>,
}

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Hook {
    raw: strata::RawBody,
    topic: String,
    source: String,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Received {
    topic: String,
    source: String,
    content_type: String,
    text: String,
}

const UPLOAD: Operation<CoverUpload, Stored> = Operation::post("/v1/books/:id/cover");
const HOOK: Operation<Hook, Received> = Operation::post("/hooks/:topic");

/// A router with uploads on, the cover upload and the webhook.
fn upload_router() -> Router {
    let upload =
        default_endpoints_factory()
            .endpoint()
            .implement(&UPLOAD, async |input: CoverUpload| {
                Ok(Stored {
                    id: input.id,
                    name: input.cover.name().to_owned(),
                    mimetype: input.cover.mimetype().to_owned(),
                    bytes: input.cover.data().expect("in memory").to_vec(),
                    caption: input.caption,
                })
            });
    let hook = default_endpoints_factory()
        .endpoint()
        .implement(&HOOK, async |input: Hook| {
            Ok(Received {
                topic: input.topic,
                source: input.source,
                content_type: input.raw.content_type().to_owned(),
                text: String::from_utf8_lossy(input.raw.data()).into_owned(),
            })
        });
    let routing = Routing::new().operation(upload).operation(hook);
    let config = create_config()
        .cors(Cors::Disabled)
        .upload(strata::UploadLimits::builder().file_size(1024).files(1))
        .input_sources(
            &http::Method::POST,
            [
                InputSource::Body,
                InputSource::Query,
                InputSource::Params,
                InputSource::Files,
            ],
        )
        .build();
    Router::new(&routing, &config).unwrap()
}

#[tokio::test]
async fn files_go_in_a_form() {
    let client = Client::new(upload_router());
    let cover = || CoverUpload {
        id: 4,
        caption: Some("Première «édition»".into()),
        cover: strata::UploadedFile::new("emma.png", "image/png", &b"\x89PNG\r\n"[..]),
    };
    let stored = client.call(&UPLOAD, cover()).await.unwrap();
    assert_eq!(
        stored,
        Stored {
            id: 4,
            name: "emma.png".into(),
            mimetype: "image/png".into(),
            bytes: b"\x89PNG\r\n".to_vec(),
            caption: Some("Première «édition»".into()),
        }
    );
    // The server's limits answer as for any client: a file over its size is a 413.
    let large = CoverUpload {
        cover: strata::UploadedFile::new("big.bin", "", vec![0_u8; 2048]),
        ..cover()
    };
    let error = client.call(&UPLOAD, large).await.unwrap_err();
    assert_eq!(
        error.status(),
        Some(StatusCode::PAYLOAD_TOO_LARGE),
        "{error}"
    );
}

#[tokio::test]
async fn a_raw_body_goes_as_it_is() {
    let client = Client::new(upload_router());
    let received = client
        .call(
            &HOOK,
            Hook {
                raw: strata::RawBody::new("application/json", &b"{ \"type\" : \"paid\" }"[..]),
                topic: "orders".into(),
                source: "ci".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        received,
        Received {
            topic: "orders".into(),
            source: "ci".into(),
            content_type: "application/json".into(),
            text: "{ \"type\" : \"paid\" }".into(),
        }
    );
}

#[tokio::test]
async fn a_file_downloads_as_a_stream_of_bytes() {
    use futures_core::Stream;
    #[derive(Serialize, Deserialize, Validate, JsonSchema)]
    struct FileName {
        #[garde(pattern(r"^[a-z0-9.-]+$"))]
        name: String,
    }
    const DOWNLOAD: Operation<FileName, strata::FileResponse> = Operation::get("/files/:name");
    let dir = std::env::temp_dir().join(format!("strata-client-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Larger than the first chunk (8 KiB): several pieces.
    let content: Vec<u8> = (0..100_000_u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(dir.join("data.bin"), &content).unwrap();
    let served = dir.clone();
    let download =
        default_endpoints_factory()
            .endpoint()
            .implement(&DOWNLOAD, move |input: FileName| {
                let path = served.join(input.name);
                async move { strata::FileResponse::open(path).await }
            });
    let router = Router::new(&Routing::new().operation(download), &config()).unwrap();
    let client = Client::new(router);

    let file = client
        .call(
            &DOWNLOAD,
            FileName {
                name: "data.bin".into(),
            },
        )
        .download()
        .await
        .unwrap();
    assert_eq!(file.status(), StatusCode::OK);
    assert_eq!(file.content_type(), Some("application/octet-stream"));
    let mut stream = std::pin::pin!(file.into_stream());
    let mut received = Vec::new();
    let mut pieces = 0;
    while let Some(piece) = std::future::poll_fn(|cx| stream.as_mut().poll_next(cx)).await {
        received.extend_from_slice(&piece.unwrap());
        pieces += 1;
    }
    assert_eq!(received, content);
    assert!(pieces > 1, "read as it arrives, in {pieces} pieces");

    let whole = client
        .call(
            &DOWNLOAD,
            FileName {
                name: "data.bin".into(),
            },
        )
        .download()
        .await
        .unwrap()
        .bytes(1 << 20)
        .await
        .unwrap();
    assert_eq!(whole, content);

    let missing = client
        .call(
            &DOWNLOAD,
            FileName {
                name: "nothing.bin".into(),
            },
        )
        .download()
        .await
        .unwrap_err();
    assert_eq!(missing.status(), Some(StatusCode::NOT_FOUND));
    assert_eq!(missing.message(), Some("File not found"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What the server saw of a request: its HTTP version and a header a layer adds.
#[derive(Debug, Serialize, Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Wire {
    version: String,
    layer: Option<String>,
}

const TRANSPORT: Operation<(), Wire> = Operation::get("/transport");

#[tokio::test]
async fn over_http2_tls_and_the_user_s_tower_layers() {
    use tokio_rustls::rustls::pki_types::CertificateDer;
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::{ClientConfig, RootCertStore, crypto::ring};
    use tower::ServiceBuilder;

    let transport = default_endpoints_factory().get().handler_without_input(
        async |parts: http::request::Parts| {
            Ok(Wire {
                version: format!("{:?}", parts.version),
                layer: parts
                    .headers
                    .get("x-layer")
                    .map(|v| v.to_str().unwrap().to_owned()),
            })
        },
    );
    let books = Books::default();
    let routing = routing(&books).route("transport", transport);
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert_pem = generated.cert.pem();
    let config = create_config()
        .cors(Cors::Disabled)
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .https(
            strata::server::Pem::Bytes(cert_pem.clone().into_bytes()),
            strata::server::Pem::Bytes(generated.signing_key.serialize_pem().into_bytes()),
            std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        )
        .build();
    let server = create_server(&config, &routing).await.unwrap();
    let port = |i: usize| match server.servers()[i].local_addr.clone() {
        strata::server::LocalAddr::Tcp(addr) => addr.port(),
        strata::server::LocalAddr::Unix(_) => panic!("TCP"),
    };
    let (plain, secure) = (port(0), port(1));

    // HTTP/2 with prior knowledge, through a concurrency limit, a timeout and a layer that adds
    // a header (as a tracing layer would), all the user's.
    let pool = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .http2_only(true)
        .build_http::<strata::client::Body>();
    let layered = ServiceBuilder::new()
        .concurrency_limit(4)
        .timeout(Duration::from_secs(5))
        .map_request(|mut request: http::Request<_>| {
            request
                .headers_mut()
                .insert("x-layer", HeaderValue::from_static("traced"));
            request
        })
        .service(pool);
    let client = Client::new(layered).base_url(format!("http://127.0.0.1:{plain}"));
    let seen = client.call(&TRANSPORT, ()).await.unwrap();
    assert_eq!(seen.version, "HTTP/2.0");
    assert_eq!(seen.layer.as_deref(), Some("traced"));
    walk(&client).await;

    // HTTPS through rustls (hyper-rustls), HTTP/2 by ALPN.
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(cert_pem.as_bytes()).unwrap())
        .unwrap();
    let tls = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only()
        .enable_http1()
        .enable_http2()
        .build();
    let pool = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build::<_, strata::client::Body>(https);
    let client = Client::new(pool).base_url(format!("https://localhost:{secure}"));
    let seen = client.call(&TRANSPORT, ()).await.unwrap();
    assert_eq!(seen.version, "HTTP/2.0");
    // The walk's books already exist from the HTTP/2 walk: a new one is added and read back.
    let book = client
        .call(
            &api::CREATE_BOOK,
            NewBook {
                title: "Over TLS".into(),
                shelf: "secure".into(),
            },
        )
        .await
        .unwrap();
    let read = client
        .call(&api::GET_BOOK, BookId { id: book.id })
        .await
        .unwrap();
    assert_eq!(read, book);
    server.shutdown().await;
}

/// A server's own envelope: `{"ok": <output>}` on success, `{"problem": <message>, "code":
/// <status>}` on error.
#[derive(Clone)]
struct Bare;

impl strata::ResultHandler for Bare {
    fn positive(&self, _output: &schemars::Schema) -> Vec<strata::ResponseDescription> {
        Vec::new()
    }

    fn negative(&self) -> Vec<strata::ResponseDescription> {
        Vec::new()
    }

    fn handle(
        &self,
        result: Result<strata::core::Output, ApiError>,
        _request: &RequestInfo,
        _logger: &Logger,
    ) -> http::Response<strata::Body> {
        let (status, body) = match result {
            Ok(output) => (output.status(), format!(r#"{{"ok":{}}}"#, output.json())),
            Err(error) => (
                error.status(),
                serde_json::json!({ "problem": error.message(), "code": error.status().as_u16() })
                    .to_string(),
            ),
        };
        strata::core::json_response(status, body)
    }
}

/// Its counterpart in the client.
#[derive(Clone)]
struct BareEnvelope;

impl strata::client::Envelope for BareEnvelope {
    fn read<O: serde::de::DeserializeOwned>(
        &self,
        status: StatusCode,
        _headers: &http::HeaderMap,
        body: &[u8],
    ) -> Result<O, ClientError> {
        #[derive(Deserialize)]
        struct Ok<O> {
            ok: O,
        }
        #[derive(Deserialize)]
        struct Problem {
            problem: String,
        }
        if status.is_success() {
            return strata::client::decode::<Ok<O>>(status, body).map(|ok| ok.ok);
        }
        let problem: Problem = strata::client::decode(status, body)?;
        Err(ClientError::Api {
            status,
            message: problem.problem,
            body: serde_json::from_slice(body).unwrap_or_default(),
        })
    }
}

#[tokio::test]
async fn a_custom_result_handler_is_read_by_its_own_envelope() {
    #[derive(Serialize, Deserialize)]
    struct Code {
        code: u16,
    }
    let factory = strata::EndpointsFactory::new(Bare);
    let get = factory
        .endpoint()
        .implement(&api::GET_BOOK, async |input: BookId| {
            if input.id == 1 {
                Ok(Book {
                    id: 1,
                    title: "Emma".into(),
                    shelf: "novels".into(),
                })
            } else {
                Err(http_error!(404, "No book has the id {}", input.id))
            }
        });
    let router = Router::new(&Routing::new().operation(get), &config()).unwrap();
    let client = Client::new(router).envelope(BareEnvelope);
    let book = client.call(&api::GET_BOOK, BookId { id: 1 }).await.unwrap();
    assert_eq!(book.title, "Emma");
    let error = client
        .call(&api::GET_BOOK, BookId { id: 2 })
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::NOT_FOUND));
    assert_eq!(error.message(), Some("No book has the id 2"));
    // The server's own error body, typed.
    let code: Code = error.error_body().unwrap().unwrap();
    assert_eq!(code.code, 404);
}

/// Retries a request once more when the server answers 503 (a body held in memory can be sent
/// again: `Body::try_clone`).
#[derive(Clone)]
struct RetryUnavailable {
    left: usize,
}

impl<B>
    tower::retry::Policy<
        http::Request<strata::client::Body>,
        http::Response<B>,
        strata::core::BoxError,
    > for RetryUnavailable
{
    type Future = std::future::Ready<()>;

    fn retry(
        &mut self,
        _request: &mut http::Request<strata::client::Body>,
        result: &mut Result<http::Response<B>, strata::core::BoxError>,
    ) -> Option<Self::Future> {
        let unavailable =
            matches!(result, Ok(response) if response.status() == StatusCode::SERVICE_UNAVAILABLE);
        (unavailable && self.left > 0).then(|| {
            self.left -= 1;
            std::future::ready(())
        })
    }

    fn clone_request(
        &mut self,
        request: &http::Request<strata::client::Body>,
    ) -> Option<http::Request<strata::client::Body>> {
        // A body of chunks (a file streamed) is read once: no retry.
        let mut copy = http::Request::new(request.body().try_clone()?);
        *copy.method_mut() = request.method().clone();
        *copy.uri_mut() = request.uri().clone();
        *copy.headers_mut() = request.headers().clone();
        Some(copy)
    }
}

#[tokio::test]
async fn a_retry_layer_and_a_tracing_span_around_the_client_s_service() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tower::{ServiceBuilder, ServiceExt as _};
    use tracing::Instrument as _;

    // Answers 503 to the first call, then the book.
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let flaky =
        default_endpoints_factory()
            .endpoint()
            .implement(&api::GET_BOOK, move |input: BookId| {
                let first = seen.fetch_add(1, Ordering::SeqCst) == 0;
                async move {
                    if first {
                        return Err(http_error!(503, "Starting up"));
                    }
                    Ok(Book {
                        id: input.id,
                        title: "Emma".into(),
                        shelf: "novels".into(),
                    })
                }
            });
    let router = Router::new(&Routing::new().operation(flaky), &config()).unwrap();
    let service = ServiceBuilder::new()
        .retry(RetryUnavailable { left: 1 })
        .map_err(strata::core::BoxError::from)
        .service(router)
        // Each call in a tracing span, as a tracing layer would put it.
        .map_future(|future| future.instrument(tracing::info_span!("strata-client call")));
    let client = Client::new(service);
    let book = client.call(&api::GET_BOOK, BookId { id: 3 }).await.unwrap();
    assert_eq!(book.id, 3);
    assert_eq!(calls.load(Ordering::SeqCst), 2, "the 503 was retried once");
}

#[tokio::test]
async fn a_success_s_status_and_headers_come_with_its_output() {
    const ADD: Operation<NewBook, Book> = Operation::post("/v1/books");
    let added = default_endpoints_factory()
        .endpoint()
        .success_status(StatusCode::CREATED)
        .implement(&ADD, async |input: NewBook| {
            let book = Book {
                id: 7,
                title: input.title,
                shelf: input.shelf,
            };
            let location = HeaderValue::from_str(&format!("/v1/books/{}", book.id)).unwrap();
            Ok(Reply::created(book).header(http::header::LOCATION, location))
        });
    let router = Router::new(&Routing::new().operation(added), &config()).unwrap();
    let client = Client::new(router);
    let new = || NewBook {
        title: "Emma".into(),
        shelf: "novels".into(),
    };

    let response = client.call(&ADD, new()).response().await.unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(
        response.headers()[http::header::LOCATION],
        "/v1/books/7",
        "{response:?}"
    );
    assert_eq!(response.get_ref().title, "Emma");
    let (parts, book) = response.into_parts();
    assert_eq!(parts.status, StatusCode::CREATED);
    assert_eq!(book.id, 7);
    // Awaited, the output alone; `into_inner` is the same way back.
    let book: Book = client.call(&ADD, new()).await.unwrap();
    assert_eq!(book.id, 7);
    let inner = client.call(&ADD, new()).response().await.unwrap();
    assert_eq!(inner.into_inner(), book);

    // An error is the same `ClientError` either way.
    let refused = client
        .call(
            &ADD,
            NewBook {
                title: String::new(),
                shelf: "x".into(),
            },
        )
        .response()
        .await
        .unwrap_err();
    assert_eq!(refused.status(), Some(StatusCode::BAD_REQUEST));
}

strata::paginate::pagination! { Slowly: offset { items_name: "numbers", max_limit: 5, default_limit: 5 } }

/// Timeouts are durations; "none" is said with `no_timeout`, on the client, a call and pages.
/// (Paused time: the handlers' minute passes at once.)
#[tokio::test(start_paused = true)]
async fn timeouts_are_durations_and_none_is_no_timeout() {
    use strata::paginate::{NoFilters, OffsetInput, OffsetPage};
    const SLOW: Operation<(), Found> = Operation::get("/slow");
    const SLOW_PAGES: Operation<OffsetInput<Slowly>, OffsetPage<Slowly, BookId>> =
        Operation::get("/slow/pages");
    const MINUTE: Duration = Duration::from_secs(60);
    let slow = default_endpoints_factory()
        .endpoint()
        .implement(&SLOW, async |(): ()| {
            tokio::time::sleep(MINUTE).await;
            Ok(Found { books: Vec::new() })
        });
    let pages = default_endpoints_factory().endpoint().implement(
        &SLOW_PAGES,
        async |input: OffsetInput<Slowly>| {
            tokio::time::sleep(MINUTE).await;
            Ok(OffsetPage::new(vec![BookId { id: 1 }], 1, &input))
        },
    );
    let routing = Routing::new().operation(slow).operation(pages);
    let router = Router::new(&routing, &config()).unwrap();
    let is_timeout = |result: Result<Found, ClientError>, after: Duration| matches!(result, Err(ClientError::Timeout(t)) if t == after);

    // The default (30 s), the client's, the call's.
    let client = Client::new(router.clone());
    assert!(is_timeout(
        client.call(&SLOW, ()).await,
        strata::client::DEFAULT_TIMEOUT
    ));
    let second = Duration::from_secs(1);
    let client = client.timeout(second);
    assert!(is_timeout(client.call(&SLOW, ()).await, second));
    assert!(client.call(&SLOW, ()).no_timeout().await.is_ok());
    let untimed = client.clone().no_timeout();
    assert!(untimed.call(&SLOW, ()).await.is_ok());
    assert!(is_timeout(
        untimed.call(&SLOW, ()).timeout(second).await,
        second
    ));

    // Pages: the client's, their own, none.
    let first = || OffsetInput::first(NoFilters);
    let error = client.pages(&SLOW_PAGES, first()).next().await.unwrap();
    assert!(matches!(error, Err(ClientError::Timeout(t)) if t == second));
    let mut pages = client.pages(&SLOW_PAGES, first()).no_timeout();
    assert_eq!(pages.next().await.unwrap().unwrap().items[0].id, 1);
    let mut pages = untimed.pages(&SLOW_PAGES, first()).timeout(second);
    let error = pages.next().await.unwrap();
    assert!(matches!(error, Err(ClientError::Timeout(t)) if t == second));
}
