//! Users over real sockets: register, log in, read and update the current user, and every error
//! status each can give, in the specification's format.

// The tests are `async fn(Backend)` bodies that `on_both!` turns into `#[tokio::test]`s: clippy
// does not see them as tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Answer, Backend, Conduit, errors, start};
use serde_json::json;

fn new_user(name: &str, email: &str, password: &str) -> serde_json::Value {
    json!({ "user": { "username": name, "email": email, "password": password } })
}

async fn register_answers_201_with_the_user_and_a_token(backend: Backend) {
    let conduit = start(backend).await;
    let answer = conduit
        .send(
            "POST",
            "/users",
            Some(new_user("jake", "jake@jake.jake", "jakejake")),
            None,
        )
        .await;
    assert_eq!(answer.status, 201);
    let user = &answer.body["user"];
    assert_eq!(user["username"], "jake");
    assert_eq!(user["email"], "jake@jake.jake");
    assert_eq!(user["bio"], "");
    assert!(user["image"].is_null());
    assert!(user["token"].as_str().unwrap().len() > 20);
    assert!(user.get("password").is_none());
    assert_eq!(user.as_object().unwrap().len(), 5, "{user}");
}

async fn passwords_are_stored_as_argon2id_hashes_only(backend: Backend) {
    let conduit = start(backend).await;
    conduit.register("jake").await;
    let hash = conduit
        .text("SELECT password_hash FROM users WHERE username = 'jake'")
        .await;
    assert!(hash.starts_with("$argon2id$"), "{hash}");
    assert!(!hash.contains("secret-jake"));
}

async fn register_refuses_invalid_input_with_422_and_every_problem(backend: Backend) {
    let conduit = start(backend).await;
    let answer = conduit.send("POST", "/users", Some(json!({})), None).await;
    assert_eq!(answer.status, 422);
    assert_eq!(errors(&answer.body), ["user: required"]);

    let answer = conduit
        .send("POST", "/users", Some(json!({ "user": {} })), None)
        .await;
    assert_eq!(answer.status, 422);
    assert_eq!(
        errors(&answer.body),
        [
            "user.email: required",
            "user.password: required",
            "user.username: required"
        ]
    );

    let answer = conduit
        .send(
            "POST",
            "/users",
            Some(new_user("", "not an email", "x")),
            None,
        )
        .await;
    assert_eq!(answer.status, 422);
    let messages = errors(&answer.body);
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(messages[0].starts_with("user.email: "), "{messages:?}");
    assert!(messages[1].starts_with("user.username: "), "{messages:?}");
}

async fn register_refuses_a_taken_email_or_username_with_422(backend: Backend) {
    let conduit = start(backend).await;
    conduit.register("jake").await;
    let answer = conduit
        .send(
            "POST",
            "/users",
            Some(new_user("other", "jake@example.com", "pw")),
            None,
        )
        .await;
    assert_eq!(
        (answer.status, errors(&answer.body)),
        (422, vec!["email has already been taken".to_owned()])
    );
    let answer = conduit
        .send(
            "POST",
            "/users",
            Some(new_user("jake", "other@example.com", "pw")),
            None,
        )
        .await;
    assert_eq!(
        (answer.status, errors(&answer.body)),
        (422, vec!["username has already been taken".to_owned()])
    );
}

async fn malformed_json_keeps_its_400_in_the_specifications_format(backend: Backend) {
    let conduit = start(backend).await;
    let response = conduit
        .client
        .post(format!("{}/users", conduit.base))
        .header("content-type", "application/json")
        .body("{\"user\":")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(errors(&body).len(), 1);
}

async fn login_answers_the_user_with_a_token_that_works(backend: Backend) {
    let conduit = start(backend).await;
    conduit.register("jake").await;
    let answer = conduit
        .send(
            "POST",
            "/users/login",
            Some(json!({ "user": { "email": "jake@example.com", "password": "secret-jake" } })),
            None,
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.body["user"]["username"], "jake");
    let token = answer.body["user"]["token"].as_str().unwrap();
    let me = conduit.send("GET", "/user", None, Some(token)).await;
    assert_eq!(me.status, 200);
    assert_eq!(me.body["user"]["email"], "jake@example.com");
    assert_eq!(me.body["user"]["token"], token);
}

async fn login_refuses_a_wrong_password_or_an_unknown_email_with_401_and_bad_input_with_422(
    backend: Backend,
) {
    let conduit = start(backend).await;
    conduit.register("jake").await;
    for (email, password) in [
        ("jake@example.com", "wrong"),
        ("nobody@example.com", "secret-jake"),
    ] {
        let answer = conduit
            .send(
                "POST",
                "/users/login",
                Some(json!({ "user": { "email": email, "password": password } })),
                None,
            )
            .await;
        assert_eq!(answer.status, 401, "{email}");
        assert_eq!(errors(&answer.body), ["Invalid email or password"]);
    }
    let answer = conduit
        .send(
            "POST",
            "/users/login",
            Some(json!({ "user": { "email": "jake@example.com" } })),
            None,
        )
        .await;
    assert_eq!(
        (answer.status, errors(&answer.body)),
        (422, vec!["user.password: required".to_owned()])
    );
}

async fn the_current_user_needs_a_valid_token(backend: Backend) {
    let conduit = start(backend).await;
    let token = conduit.register("jake").await;
    assert_eq!(
        conduit
            .send("GET", "/user", None, Some(&token))
            .await
            .status,
        200
    );

    let missing = conduit.send("GET", "/user", None, None).await;
    assert_eq!(missing.status, 401);
    assert_eq!(
        errors(&missing.body),
        ["Missing credential: authorization (header)"]
    );

    let other_secret = strata_realworld::auth::Keys::from_secret(b"another secret")
        .token(1)
        .unwrap();
    for bad in ["nonsense", &other_secret, &format!("{token}x")] {
        let answer = conduit.send("GET", "/user", None, Some(bad)).await;
        assert_eq!(answer.status, 401, "{bad}");
        assert_eq!(errors(&answer.body), ["Invalid or expired token"]);
    }
    // The scheme is `Token`, not `Bearer`.
    let bearer = conduit
        .client
        .get(format!("{}/user", conduit.base))
        .header("authorization", format!("Bearer {token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(bearer.status().as_u16(), 401);
}

async fn update_changes_what_it_is_given_and_the_new_password_works(backend: Backend) {
    let conduit = start(backend).await;
    let token = conduit.register("jake").await;
    let answer = conduit
        .send(
            "PUT",
            "/user",
            Some(json!({ "user": { "email": "new@example.com", "bio": "I like to skateboard", "image": "https://i.stack.imgur.com/xHWG8.jpg", "password": "new password" } })),
            Some(&token),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let user = &answer.body["user"];
    assert_eq!(user["email"], "new@example.com");
    assert_eq!(user["username"], "jake");
    assert_eq!(user["bio"], "I like to skateboard");
    assert_eq!(user["image"], "https://i.stack.imgur.com/xHWG8.jpg");
    assert_eq!(user["token"], token.as_str());

    let login = |password: &'static str| {
        conduit.send(
            "POST",
            "/users/login",
            Some(json!({ "user": { "email": "new@example.com", "password": password } })),
            None,
        )
    };
    assert_eq!(login("new password").await.status, 200);
    assert_eq!(login("secret-jake").await.status, 401);

    // An empty image removes it; absent fields stay.
    let answer = conduit
        .send(
            "PUT",
            "/user",
            Some(json!({ "user": { "image": "" } })),
            Some(&token),
        )
        .await;
    assert_eq!(answer.status, 200);
    assert!(answer.body["user"]["image"].is_null());
    assert_eq!(answer.body["user"]["bio"], "I like to skateboard");
}

async fn put(conduit: &Conduit, body: serde_json::Value, token: Option<&str>) -> Answer {
    conduit.send("PUT", "/user", Some(body), token).await
}

async fn update_refuses_bad_input_taken_names_and_missing_tokens(backend: Backend) {
    let conduit = start(backend).await;
    let token = conduit.register("jake").await;
    conduit.register("anne").await;

    let answer = put(
        &conduit,
        json!({ "user": { "email": "anne@example.com" } }),
        Some(&token),
    )
    .await;
    assert_eq!(
        (answer.status, errors(&answer.body)),
        (422, vec!["email has already been taken".to_owned()])
    );
    let answer = put(
        &conduit,
        json!({ "user": { "username": "anne" } }),
        Some(&token),
    )
    .await;
    assert_eq!(
        (answer.status, errors(&answer.body)),
        (422, vec!["username has already been taken".to_owned()])
    );
    let answer = put(
        &conduit,
        json!({ "user": { "email": "not an email" } }),
        Some(&token),
    )
    .await;
    assert_eq!(answer.status, 422);
    assert!(errors(&answer.body)[0].starts_with("user.email: "));
    let answer = put(
        &conduit,
        json!({ "user": { "username": null } }),
        Some(&token),
    )
    .await;
    assert_eq!(answer.status, 422);
    assert_eq!(
        errors(&answer.body),
        ["user.username: expected string, received null"]
    );

    let answer = put(&conduit, json!({ "user": { "bio": "x" } }), None).await;
    assert_eq!(
        (answer.status, errors(&answer.body)),
        (
            401,
            vec!["Missing credential: authorization (header)".to_owned()]
        )
    );
}

async fn the_routers_own_errors_use_the_specifications_format(backend: Backend) {
    let conduit = start(backend).await;
    let missing = conduit.send("GET", "/nowhere", None, None).await;
    assert_eq!(missing.status, 404);
    assert_eq!(errors(&missing.body).len(), 1);
    let method = conduit.send("DELETE", "/users/login", None, None).await;
    assert_eq!(method.status, 405);
    assert_eq!(errors(&method.body).len(), 1);
}

on_both!(
    register_answers_201_with_the_user_and_a_token,
    passwords_are_stored_as_argon2id_hashes_only,
    register_refuses_invalid_input_with_422_and_every_problem,
    register_refuses_a_taken_email_or_username_with_422,
    malformed_json_keeps_its_400_in_the_specifications_format,
    login_answers_the_user_with_a_token_that_works,
    login_refuses_a_wrong_password_or_an_unknown_email_with_401_and_bad_input_with_422,
    the_current_user_needs_a_valid_token,
    update_changes_what_it_is_given_and_the_new_password_works,
    update_refuses_bad_input_taken_names_and_missing_tokens,
    the_routers_own_errors_use_the_specifications_format,
);
