//! Comments over real sockets: add, list, delete (author only), and their errors.

// The tests are `async fn(Backend)` bodies that `on_both!` turns into `#[tokio::test]`s: clippy
// does not see them as tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Backend, errors, start};
use serde_json::json;

async fn comments_are_added_listed_oldest_first_and_deleted_by_their_author(backend: Backend) {
    let conduit = start(backend).await;
    let jake = conduit.register("jake").await;
    let anne = conduit.register("anne").await;
    let article = json!({ "article": { "title": "Talk", "description": "d", "body": "b" } });
    assert_eq!(
        conduit
            .send("POST", "/articles", Some(article), Some(&jake))
            .await
            .status,
        201
    );

    let first = conduit
        .send(
            "POST",
            "/articles/talk/comments",
            Some(json!({ "comment": { "body": "First!" } })),
            Some(&anne),
        )
        .await;
    assert_eq!(first.status, 200, "{}", first.body);
    let comment = &first.body["comment"];
    assert_eq!(comment["body"], "First!");
    assert_eq!(comment["author"]["username"], "anne");
    assert_eq!(comment["author"]["following"], false);
    assert!(comment["createdAt"].is_string() && comment["updatedAt"].is_string());
    let first_id = comment["id"].as_i64().unwrap();
    conduit
        .send(
            "POST",
            "/articles/talk/comments",
            Some(json!({ "comment": { "body": "Second" } })),
            Some(&jake),
        )
        .await;

    let listed = conduit
        .send("GET", "/articles/talk/comments", None, None)
        .await;
    assert_eq!(listed.status, 200);
    let bodies: Vec<&str> = listed.body["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["body"].as_str().unwrap())
        .collect();
    assert_eq!(bodies, ["First!", "Second"]);

    let path = format!("/articles/talk/comments/{first_id}");
    let refused = conduit.send("DELETE", &path, None, Some(&jake)).await;
    assert_eq!(
        (refused.status, errors(&refused.body)),
        (
            403,
            vec!["Only the author may delete this comment".to_owned()]
        )
    );
    assert_eq!(conduit.send("DELETE", &path, None, None).await.status, 401);
    let deleted = conduit.send("DELETE", &path, None, Some(&anne)).await;
    assert_eq!(deleted.status, 204);
    assert_eq!(
        conduit
            .send("DELETE", &path, None, Some(&anne))
            .await
            .status,
        404
    );
    let listed = conduit
        .send("GET", "/articles/talk/comments", None, None)
        .await;
    assert_eq!(listed.body["comments"].as_array().unwrap().len(), 1);
}

async fn comment_errors_401_404_and_422(backend: Backend) {
    let conduit = start(backend).await;
    let jake = conduit.register("jake").await;
    let article = json!({ "article": { "title": "Talk", "description": "d", "body": "b" } });
    conduit
        .send("POST", "/articles", Some(article), Some(&jake))
        .await;

    let body = || Some(json!({ "comment": { "body": "hi" } }));
    assert_eq!(
        conduit
            .send("POST", "/articles/talk/comments", body(), None)
            .await
            .status,
        401
    );
    let missing = conduit
        .send("POST", "/articles/nothing/comments", body(), Some(&jake))
        .await;
    assert_eq!(
        (missing.status, errors(&missing.body)),
        (404, vec!["Article not found".to_owned()])
    );
    assert_eq!(
        conduit
            .send("GET", "/articles/nothing/comments", None, None)
            .await
            .status,
        404
    );
    let empty = conduit
        .send(
            "POST",
            "/articles/talk/comments",
            Some(json!({ "comment": { "body": "" } })),
            Some(&jake),
        )
        .await;
    assert_eq!(
        (empty.status, errors(&empty.body)),
        (422, vec!["comment.body: length is lower than 1".to_owned()])
    );
    let bad_id = conduit
        .send("DELETE", "/articles/talk/comments/abc", None, Some(&jake))
        .await;
    assert_eq!(bad_id.status, 422);
    assert_eq!(
        errors(&bad_id.body),
        ["id: expected integer, received string \"abc\""]
    );
}

on_both!(
    comments_are_added_listed_oldest_first_and_deleted_by_their_author,
    comment_errors_401_404_and_422,
);
