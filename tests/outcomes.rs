//! Declared outcomes (`#[derive(Outcomes)]`): several typed responses per operation, answered by
//! the server with their statuses and headers, described under their statuses, and read back by
//! the Rust client as the variant their status names.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

#[path = "common/http.rs"]
mod http_client;

use http::StatusCode;
use serde_json::{Value, json};
use strata::client::{Client, ClientError};
use strata::openapi::Documentation;
use strata::prelude::*;
use strata::{Router, Routing};

/// What the server and its clients share.
mod api {
    use super::{Book, BookId, Duplicate, Missing, NewBook};
    use http::StatusCode;
    use strata::{Operation, Outcomes};

    pub(crate) const CREATE_BOOK: Operation<NewBook, CreateBook> = Operation::post("/books");
    pub(crate) const DELETE_BOOK: Operation<BookId, DeleteBook> = Operation::delete("/books/:id");

    #[derive(Debug, PartialEq, Outcomes)]
    pub(crate) enum CreateBook {
        /// The book, added.
        #[outcome(status = 201)]
        Created {
            #[outcome(body)]
            book: Book,
            /// Where the book is.
            #[outcome(header = "Location")]
            location: String,
        },
        /// A book with this title exists.
        #[outcome(status = 409)]
        Duplicate(Duplicate),
        /// The shelf is full.
        #[outcome(status = 507)]
        Full,
        /// The title is on the banned list.
        #[outcome(status = 451)]
        Banned,
    }

    #[derive(Debug, PartialEq, Outcomes)]
    pub(crate) enum DeleteBook {
        /// Removed.
        #[outcome(status = 204)]
        Deleted,
        /// Kept: the book as it stays.
        #[outcome(status(200, 203))]
        Kept {
            #[outcome(status)]
            status: StatusCode,
            #[outcome(body)]
            book: Book,
            /// Why it stays.
            #[outcome(header = "x-reason")]
            reason: Option<String>,
            /// How many times it was asked for.
            #[outcome(header = "x-requests")]
            requests: u32,
        },
        /// No such book.
        #[outcome(status = 404)]
        NotFound(Missing),
    }
}

use api::{CreateBook, DeleteBook};

#[strata::model]
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Book {
    id: u32,
    #[garde(length(chars, min = 1))]
    title: String,
}

#[strata::model]
pub(crate) struct NewBook {
    title: String,
}

#[strata::model]
pub(crate) struct BookId {
    id: u32,
}

#[strata::model]
#[derive(Debug, PartialEq)]
pub(crate) struct Duplicate {
    existing_id: u32,
}

#[strata::model]
#[derive(Debug, PartialEq)]
pub(crate) struct Missing {
    id: u32,
}

fn routing() -> Routing {
    let factory = default_endpoints_factory();
    let create = factory
        .endpoint()
        .implement(&api::CREATE_BOOK, async |input: NewBook| {
            Ok(match input.title.as_str() {
                "Dune" => CreateBook::Duplicate(Duplicate { existing_id: 1 }),
                "full" => CreateBook::Full,
                "banned" => CreateBook::Banned,
                // Broken on purpose: a header value no response can carry.
                "bad header" => CreateBook::Created {
                    book: Book {
                        id: 3,
                        title: "x".into(),
                    },
                    location: "/books/3\r\nInjected: yes".into(),
                },
                // Broken on purpose: the body breaks its own rules (an empty title).
                "" => CreateBook::Created {
                    book: Book {
                        id: 4,
                        title: String::new(),
                    },
                    location: "/books/4".into(),
                },
                title => CreateBook::Created {
                    book: Book {
                        id: 2,
                        title: title.to_owned(),
                    },
                    location: "/books/2".into(),
                },
            })
        });
    let delete = factory
        .endpoint()
        .implement(&api::DELETE_BOOK, async |input: BookId| {
            let book = Book {
                id: input.id,
                title: "Emma".into(),
            };
            Ok(match input.id {
                1 => DeleteBook::Deleted,
                2 => DeleteBook::Kept {
                    status: StatusCode::OK,
                    book,
                    reason: None,
                    requests: 1,
                },
                3 => DeleteBook::Kept {
                    status: StatusCode::NON_AUTHORITATIVE_INFORMATION,
                    book,
                    reason: Some("on loan".into()),
                    requests: 2,
                },
                // Broken on purpose: a status the variant does not declare.
                4 => DeleteBook::Kept {
                    status: StatusCode::ACCEPTED,
                    book,
                    reason: None,
                    requests: 0,
                },
                id => DeleteBook::NotFound(Missing { id }),
            })
        });
    Routing::new().operation(create).operation(delete)
}

fn router() -> Router {
    Router::new(&routing(), &create_config().cors(Cors::Disabled).build()).unwrap()
}

fn json_of(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap()
}

#[tokio::test]
async fn each_outcome_is_answered_with_its_status_headers_and_body() {
    let (_server, addr) =
        http_client::serve(&routing(), create_config().cors(Cors::Disabled)).await;
    let post = |title: &'static str| {
        let body = json!({ "title": title }).to_string();
        http_client::send(
            addr,
            "POST",
            "/books",
            &[("content-type", "application/json")],
            body,
        )
    };

    let (status, headers, body) = post("Emma").await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(headers["location"], "/books/2");
    assert_eq!(
        json_of(&body),
        json!({ "status": "success", "data": { "id": 2, "title": "Emma" } })
    );

    let (status, _, body) = post("Dune").await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(
        json_of(&body),
        json!({ "status": "error", "error": { "existing_id": 1 } })
    );

    // Without a body, an error outcome is the error of its status, its doc the message...
    let (status, _, body) = post("banned").await;
    assert_eq!(status, StatusCode::UNAVAILABLE_FOR_LEGAL_REASONS);
    assert_eq!(
        json_of(&body),
        json!({ "status": "error", "error": { "message": "The title is on the banned list." } })
    );
    // ...hidden behind the status's reason for a 5xx, as every server error's is in production.
    let (status, _, body) = post("full").await;
    assert_eq!(status, StatusCode::INSUFFICIENT_STORAGE);
    assert_eq!(json_of(&body)["error"]["message"], "Insufficient Storage");

    // Without a body, a success is sent empty.
    let (status, _, body) = http_client::send(addr, "DELETE", "/books/1", &[], "").await;
    assert_eq!((status, body.len()), (StatusCode::NO_CONTENT, 0));

    let (status, headers, body) = http_client::send(addr, "DELETE", "/books/3", &[], "").await;
    assert_eq!(status, StatusCode::NON_AUTHORITATIVE_INFORMATION);
    assert_eq!(
        (&headers["x-reason"], &headers["x-requests"]),
        (&"on loan".parse().unwrap(), &"2".parse().unwrap())
    );
    assert_eq!(json_of(&body)["data"], json!({ "id": 3, "title": "Emma" }));
    let (status, headers, _) = http_client::send(addr, "DELETE", "/books/2", &[], "").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        !headers.contains_key("x-reason"),
        "an absent optional header is not sent"
    );
}

#[tokio::test]
async fn an_outcome_that_breaks_its_declaration_is_a_server_error() {
    let (_server, addr) =
        http_client::serve(&routing(), create_config().cors(Cors::Disabled)).await;
    for (method, uri, body) in [
        // A status its variant does not declare.
        ("DELETE", "/books/4", String::new()),
        // A header value that cannot be sent.
        (
            "POST",
            "/books",
            json!({ "title": "bad header" }).to_string(),
        ),
        // A body that breaks its rules (the output check).
        ("POST", "/books", json!({ "title": "" }).to_string()),
    ] {
        let (status, headers, body) = http_client::send(
            addr,
            method,
            uri,
            &[("content-type", "application/json")],
            body,
        )
        .await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{method} {uri}");
        assert!(!headers.contains_key("injected"));
        assert_eq!(json_of(&body)["status"], "error");
    }
}

#[tokio::test]
async fn a_client_reads_each_outcome_as_its_variant() {
    let client = Client::new(router());
    let created = client
        .call(
            &api::CREATE_BOOK,
            NewBook {
                title: "Emma".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        created,
        CreateBook::Created {
            book: Book {
                id: 2,
                title: "Emma".into()
            },
            location: "/books/2".into()
        }
    );
    let duplicate = client
        .call(
            &api::CREATE_BOOK,
            NewBook {
                title: "Dune".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        duplicate,
        CreateBook::Duplicate(Duplicate { existing_id: 1 })
    );
    let full = client
        .call(
            &api::CREATE_BOOK,
            NewBook {
                title: "full".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(full, CreateBook::Full);
    let banned = client
        .call(
            &api::CREATE_BOOK,
            NewBook {
                title: "banned".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(banned, CreateBook::Banned);

    assert_eq!(
        client
            .call(&api::DELETE_BOOK, BookId { id: 1 })
            .await
            .unwrap(),
        DeleteBook::Deleted
    );
    assert_eq!(
        client
            .call(&api::DELETE_BOOK, BookId { id: 3 })
            .await
            .unwrap(),
        DeleteBook::Kept {
            status: StatusCode::NON_AUTHORITATIVE_INFORMATION,
            book: Book {
                id: 3,
                title: "Emma".into()
            },
            reason: Some("on loan".into()),
            requests: 2,
        }
    );
    assert_eq!(
        client
            .call(&api::DELETE_BOOK, BookId { id: 9 })
            .await
            .unwrap(),
        DeleteBook::NotFound(Missing { id: 9 })
    );
    // An error the operation does not declare is the server's error, as before.
    let error = client
        .call(&api::DELETE_BOOK, BookId { id: 4 })
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ClientError::Api { status, .. } if *status == StatusCode::INTERNAL_SERVER_ERROR),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_declared_status_whose_response_does_not_read_says_where() {
    // Another server at the same route: its 409 and 201 are not what the operation declares.
    let impostor = default_endpoints_factory().post().handler(
        async |_input: NewBook| -> Result<Book, ApiError> {
            Err(http_error!(409, "not the declared body"))
        },
    );
    let missing_header = default_endpoints_factory()
        .post()
        .handler(async |_input: NewBook| {
            Ok(strata::Reply::created(Book {
                id: 1,
                title: "a".into(),
            }))
        });
    let config = create_config().cors(Cors::Disabled).build();
    let conflict =
        Client::new(Router::new(&Routing::new().route("books", impostor), &config).unwrap());
    let error = conflict
        .call(&api::CREATE_BOOK, NewBook { title: "x".into() })
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ClientError::Decode { status, path, message } if *status == StatusCode::CONFLICT && path.is_empty() && message.contains("existing_id")),
        "{error:?}"
    );
    let created =
        Client::new(Router::new(&Routing::new().route("books", missing_header), &config).unwrap());
    let error = created
        .call(&api::CREATE_BOOK, NewBook { title: "x".into() })
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ClientError::Decode { status, path, message } if *status == StatusCode::CREATED && path == "header location" && message == "missing"),
        "{error:?}"
    );
}

#[test]
fn the_description_lists_every_outcome_under_its_status() {
    let config = create_config().cors(Cors::Disabled).build();
    let document = Documentation::new(&routing(), &config)
        .build()
        .unwrap()
        .to_value();
    let create = &document["paths"]["/books"]["post"]["responses"];
    let created = &create["201"];
    assert_eq!(created["description"], "The book, added.");
    assert_eq!(
        created["headers"]["location"]["description"],
        "Where the book is."
    );
    assert_eq!(
        created["headers"]["location"]["schema"],
        json!({ "type": "string" })
    );
    let data = &created["content"]["application/json"]["schema"]["properties"]["data"];
    assert_eq!(data["$ref"], "#/components/schemas/Book");
    assert!(create.get("200").is_none(), "no default 200: {create:#}");

    let duplicate = &create["409"];
    assert_eq!(duplicate["description"], "A book with this title exists.");
    let error = &duplicate["content"]["application/json"]["schema"]["properties"]["error"];
    assert_eq!(error["$ref"], "#/components/schemas/Duplicate");
    let full = &create["507"];
    assert_eq!(full["description"], "The shelf is full.");
    let full_error = &full["content"]["application/json"]["schema"];
    assert!(
        full_error.to_string().contains("ErrorResponse")
            || full_error.to_string().contains("message"),
        "{full_error}"
    );

    let delete = &document["paths"]["/books/{id}"]["delete"]["responses"];
    assert!(
        delete["204"]
            .get("content")
            .is_none_or(|c| c.as_object().unwrap().is_empty()),
        "{delete:#}"
    );
    for status in ["200", "203"] {
        assert_eq!(delete[status]["description"], "Kept: the book as it stays.");
        assert_eq!(
            delete[status]["headers"]["x-reason"]["description"],
            "Why it stays."
        );
        assert_eq!(
            delete[status]["headers"]["x-requests"]["schema"],
            json!({ "type": "integer" })
        );
    }
    // The pipeline's own 404 (no route for an empty id) and the declared one share the status.
    let not_found = delete["404"]["content"]["application/json"]["schema"].to_string();
    assert!(
        not_found.contains("#/components/schemas/Missing"),
        "{not_found}"
    );
    assert!(not_found.contains("anyOf"), "{not_found}");
}

#[test]
fn undeclared_outcomes_and_wrong_reads_do_not_compile() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/outcome_*.rs");
}
