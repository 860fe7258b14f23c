//! Profiles over real sockets: read (auth optional), follow, unfollow, and their errors.

// The tests are `async fn(Backend)` bodies that `on_both!` turns into `#[tokio::test]`s: clippy
// does not see them as tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Backend, errors, start};

async fn a_profile_reads_without_a_token_and_says_whether_the_caller_follows(backend: Backend) {
    let conduit = start(backend).await;
    let jake = conduit.register("jake").await;
    conduit.register("anne").await;

    let anonymous = conduit.send("GET", "/profiles/anne", None, None).await;
    assert_eq!(anonymous.status, 200, "{}", anonymous.body);
    assert_eq!(
        anonymous.body,
        serde_json::json!({ "profile": { "username": "anne", "bio": "", "image": null, "following": false } })
    );

    let follow = conduit
        .send("POST", "/profiles/anne/follow", None, Some(&jake))
        .await;
    assert_eq!(
        (follow.status, &follow.body["profile"]["following"]),
        (200, &true.into())
    );
    // Following twice changes nothing.
    assert_eq!(
        conduit
            .send("POST", "/profiles/anne/follow", None, Some(&jake))
            .await
            .status,
        200
    );
    let seen = conduit
        .send("GET", "/profiles/anne", None, Some(&jake))
        .await;
    assert_eq!(seen.body["profile"]["following"], true);
    assert_eq!(
        conduit.send("GET", "/profiles/anne", None, None).await.body["profile"]["following"],
        false
    );

    let unfollow = conduit
        .send("DELETE", "/profiles/anne/follow", None, Some(&jake))
        .await;
    assert_eq!(
        (unfollow.status, &unfollow.body["profile"]["following"]),
        (200, &false.into())
    );
    assert_eq!(
        conduit
            .send("GET", "/profiles/anne", None, Some(&jake))
            .await
            .body["profile"]["following"],
        false
    );
}

async fn profile_errors_404_401_and_422(backend: Backend) {
    let conduit = start(backend).await;
    let jake = conduit.register("jake").await;

    let missing = conduit.send("GET", "/profiles/nobody", None, None).await;
    assert_eq!(
        (missing.status, errors(&missing.body)),
        (404, vec!["Profile not found".to_owned()])
    );
    let missing = conduit
        .send("POST", "/profiles/nobody/follow", None, Some(&jake))
        .await;
    assert_eq!(missing.status, 404);
    let missing = conduit
        .send("DELETE", "/profiles/nobody/follow", None, Some(&jake))
        .await;
    assert_eq!(missing.status, 404);

    for method in ["POST", "DELETE"] {
        let anonymous = conduit
            .send(method, "/profiles/jake/follow", None, None)
            .await;
        assert_eq!(anonymous.status, 401, "{method}");
        assert_eq!(
            errors(&anonymous.body),
            ["Missing credential: authorization (header)"]
        );
    }
    // An invalid token is refused even where a token is optional.
    let invalid = conduit
        .send("GET", "/profiles/jake", None, Some("nonsense"))
        .await;
    assert_eq!(
        (invalid.status, errors(&invalid.body)),
        (401, vec!["Invalid or expired token".to_owned()])
    );

    let myself = conduit
        .send("POST", "/profiles/jake/follow", None, Some(&jake))
        .await;
    assert_eq!(
        (myself.status, errors(&myself.body)),
        (422, vec!["You cannot follow yourself".to_owned()])
    );
}

on_both!(
    a_profile_reads_without_a_token_and_says_whether_the_caller_follows,
    profile_errors_404_401_and_422,
);
