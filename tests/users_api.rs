//! Drives every route of `examples/users_api.rs` in memory, through its router.
#![allow(clippy::too_many_lines)] // each test walks one resource end to end

#[path = "../examples/users_api.rs"]
#[allow(dead_code)] // its `main`
mod users_api;

use std::time::Duration;
use strata::Router;

use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use tower::ServiceExt;

#[derive(Clone)]
struct App(Router);

impl App {
    fn new() -> Self {
        let routing = users_api::users_routing();
        Self(Router::new(&routing, &users_api::users_config(0)).expect("the routing is valid"))
    }

    async fn raw(&self, request: Request<Full<Bytes>>) -> (StatusCode, String, Bytes) {
        let response = self
            .0
            .clone()
            .oneshot(request)
            .await
            .expect("the router answers");
        let status = response.status();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .map(|value| value.to_str().expect("ASCII").to_owned())
            .unwrap_or_default();
        let body = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        (status, content_type, body)
    }

    /// A JSON request; answers the status and the envelope's `data` or `error.message`.
    async fn call(
        &self,
        method: &str,
        uri: &str,
        token: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = Request::builder()
            .method(Method::from_bytes(method.as_bytes()).expect("a method"))
            .uri(uri);
        if !token.is_empty() {
            request = request.header(AUTHORIZATION, format!("Bearer {token}"));
        }
        let body = match body {
            Some(json) => {
                request = request.header(CONTENT_TYPE, "application/json");
                Full::from(json.to_string())
            }
            None => Full::default(),
        };
        let (status, _, bytes) = self.raw(request.body(body).expect("a request")).await;
        let envelope: Value = serde_json::from_slice(&bytes).expect("a JSON envelope");
        let payload = if status.is_success() {
            assert_eq!(envelope["status"], "success", "{envelope}");
            envelope["data"].clone()
        } else {
            assert_eq!(envelope["status"], "error", "{envelope}");
            envelope["error"]["message"].clone()
        };
        (status.as_u16(), payload)
    }

    async fn sign_up(&self, name: &str, email: &str) -> (String, u64) {
        let body = json!({ "name": name, "email": email, "password": "long enough" });
        let (status, data) = self.call("POST", "/v1/signup", "", Some(body)).await;
        assert_eq!(status, 200, "{data}");
        (
            data["token"].as_str().expect("a token").to_owned(),
            data["user"]["id"].as_u64().expect("an id"),
        )
    }

    async fn admin(&self) -> String {
        let body = json!({ "email": "admin@example.com", "password": "admin-password" });
        let (status, data) = self.call("POST", "/v1/sessions", "", Some(body)).await;
        assert_eq!(status, 200, "{data}");
        data["token"].as_str().expect("a token").to_owned()
    }
}

#[tokio::test]
async fn health_and_sessions() {
    let app = App::new();
    assert_eq!(
        app.call("GET", "/v1/health", "", None).await,
        (200, json!({ "status": "ok" }))
    );

    // A number sent as text in a JSON body is coerced.
    let body = json!({ "name": "Ann", "email": "ann@example.com", "password": "long enough", "age": "42" });
    let (status, data) = app.call("POST", "/v1/signup", "", Some(body.clone())).await;
    assert_eq!(status, 200, "{data}");
    assert_eq!(data["user"]["age"], 42);
    assert_eq!(data["user"]["role"], "member");
    let token = data["token"].as_str().expect("a token").to_owned();
    assert_eq!(
        app.call("POST", "/v1/signup", "", Some(body)).await,
        (409, json!("Email already registered"))
    );
    let short = json!({ "name": "", "email": "not an email", "password": "short" });
    let (status, message) = app.call("POST", "/v1/signup", "", Some(short)).await;
    assert_eq!(status, 400);
    for field in ["email", "name", "password"] {
        assert!(message.as_str().expect("text").contains(field), "{message}");
    }

    let wrong = json!({ "email": "ann@example.com", "password": "wrong password" });
    assert_eq!(
        app.call("POST", "/v1/sessions", "", Some(wrong)).await.0,
        401
    );
    let right = json!({ "email": "ann@example.com", "password": "long enough" });
    let (status, data) = app.call("POST", "/v1/sessions", "", Some(right)).await;
    assert_eq!(status, 200);
    let second = data["token"].as_str().expect("a token").to_owned();

    assert_eq!(
        app.call("GET", "/v1/me", &token, None).await.1["name"],
        "Ann"
    );
    assert_eq!(
        app.call("DELETE", "/v1/sessions", &token, None).await.0,
        200
    );
    assert_eq!(
        app.call("GET", "/v1/me", &token, None).await,
        (401, json!("Invalid token"))
    );
    assert_eq!(
        app.call("GET", "/v1/me", &second, None).await.0,
        200,
        "the other session stays"
    );
    // No credential at all.
    let (status, message) = app.call("GET", "/v1/me", "", None).await;
    assert_eq!(status, 401, "{message}");
}

#[tokio::test]
async fn users_crud_and_pages() {
    let app = App::new();
    let admin = app.admin().await;
    let (member, member_id) = app.sign_up("Bob", "bob@example.com").await;
    for index in 0..5 {
        let body = json!({ "name": format!("Reader {index}"), "email": format!("r{index}@example.com"), "password": "long enough" });
        let (status, data) = app.call("POST", "/v1/users", &admin, Some(body)).await;
        assert_eq!(status, 200, "{data}");
    }
    let body = json!({ "name": "Eve", "email": "eve@example.com", "password": "long enough", "role": "admin" });
    let (status, eve) = app
        .call("POST", "/v1/users", &admin, Some(body.clone()))
        .await;
    assert_eq!((status, &eve["role"]), (200, &json!("admin")));
    assert_eq!(
        app.call("POST", "/v1/users", &admin, Some(body)).await.0,
        409
    );
    let body = json!({ "name": "Mal", "email": "mal@example.com", "password": "long enough" });
    assert_eq!(
        app.call("POST", "/v1/users", &member, Some(body)).await,
        (403, json!("Admins only"))
    );

    // Pages: query numbers are coerced; the limit is bounded.
    let (status, page) = app
        .call("GET", "/v1/users?limit=2&offset=1", &member, None)
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(
        (
            page["total"].clone(),
            page["limit"].clone(),
            page["offset"].clone()
        ),
        (json!(8), json!(2), json!(1))
    );
    assert_eq!(page["users"].as_array().expect("users").len(), 2);
    assert_eq!(page["users"][0]["name"], "Bob");
    let (_, page) = app.call("GET", "/v1/users", &member, None).await;
    assert_eq!(
        (
            page["limit"].clone(),
            page["users"].as_array().expect("users").len()
        ),
        (json!(20), 8)
    );
    let (status, message) = app.call("GET", "/v1/users?limit=51", &member, None).await;
    assert_eq!(status, 400, "{message}");
    assert!(
        message.as_str().expect("text").contains("limit"),
        "{message}"
    );
    assert_eq!(
        app.call("GET", "/v1/users?limit=abc", &member, None)
            .await
            .0,
        400
    );
    assert_eq!(
        app.call("GET", "/v1/users?offset=-1", &member, None)
            .await
            .0,
        400
    );
    // Filters.
    let (_, page) = app.call("GET", "/v1/users?role=admin", &member, None).await;
    assert_eq!(page["total"], 2);
    let (_, page) = app
        .call("GET", "/v1/users?q=READER&limit=3", &member, None)
        .await;
    assert_eq!(
        (
            page["total"].clone(),
            page["users"].as_array().expect("users").len()
        ),
        (json!(5), 3)
    );
    let (_, page) = app
        .call("GET", "/v1/users?hasAvatar=false", &member, None)
        .await;
    assert_eq!(page["total"], 8);
    let (_, page) = app
        .call("GET", "/v1/users?hasAvatar=true", &member, None)
        .await;
    assert_eq!(page["total"], 0);
    assert_eq!(
        app.call("GET", "/v1/users?role=owner", &member, None)
            .await
            .0,
        400
    );

    // One user, changes and removal.
    let (status, bob) = app
        .call("GET", &format!("/v1/users/{member_id}"), &member, None)
        .await;
    assert_eq!((status, &bob["email"]), (200, &json!("bob@example.com")));
    assert_eq!(
        app.call("GET", "/v1/users/999", &member, None).await,
        (404, json!("User not found"))
    );
    assert_eq!(app.call("GET", "/v1/users/abc", &member, None).await.0, 400);
    let uri = format!("/v1/users/{member_id}");
    let (status, bob) = app
        .call(
            "PATCH",
            &uri,
            &admin,
            Some(json!({ "age": "31", "role": "admin" })),
        )
        .await;
    assert_eq!(status, 200, "{bob}");
    assert_eq!(
        (&bob["name"], &bob["age"], &bob["role"]),
        (&json!("Bob"), &json!(31), &json!("admin"))
    );
    let (status, message) = app
        .call("PATCH", &uri, &admin, Some(json!({ "name": null })))
        .await;
    assert_eq!(status, 400, "{message}");
    assert!(
        message.as_str().expect("text").contains("name"),
        "{message}"
    );
    assert_eq!(
        app.call(
            "PATCH",
            "/v1/users/999",
            &admin,
            Some(json!({ "name": "X" }))
        )
        .await
        .0,
        404
    );
    let (_, reader) = app
        .call("GET", "/v1/users?q=Reader%204", &admin, None)
        .await;
    let reader_id = reader["users"][0]["id"].as_u64().expect("an id");
    let (outsider, _) = app.sign_up("Out", "out@example.com").await;
    let uri = format!("/v1/users/{reader_id}");
    assert_eq!(app.call("DELETE", &uri, &outsider, None).await.0, 403);
    assert_eq!(app.call("DELETE", &uri, &admin, None).await.0, 200);
    assert_eq!(app.call("GET", &uri, &admin, None).await.0, 404);
    assert_eq!(app.call("DELETE", &uri, &admin, None).await.0, 404);

    // The current user.
    let (status, me) = app
        .call(
            "PATCH",
            "/v1/me",
            &outsider,
            Some(json!({ "name": "Outsider", "age": 20 })),
        )
        .await;
    assert_eq!(
        (status, &me["name"], &me["age"]),
        (200, &json!("Outsider"), &json!(20))
    );
    let (status, message) = app
        .call("PATCH", "/v1/me", &outsider, Some(json!({ "name": null })))
        .await;
    assert_eq!(status, 400, "{message}");
    assert_eq!(
        app.call("PATCH", "/v1/me", &outsider, Some(json!({ "age": 151 })))
            .await
            .0,
        400
    );
    assert_eq!(
        app.call("GET", "/v1/me", &outsider, None).await.1["name"],
        "Outsider"
    );
}

fn multipart(token: &str, name: &str, media_type: &str, data: &[u8]) -> Request<Full<Bytes>> {
    let boundary = "strata-test-boundary";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"avatar\"; filename=\"{name}\"\r\nContent-Type: {media_type}\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(data);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    Request::post("/v1/me/avatar")
        .header(AUTHORIZATION, format!("Bearer {token}"))
        .header(
            CONTENT_TYPE,
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(Full::from(body))
        .expect("a request")
}

#[tokio::test]
async fn avatars() {
    let app = App::new();
    let (token, id) = app.sign_up("Pic", "pic@example.com").await;
    let uri = format!("/v1/users/{id}/avatar");
    assert_eq!(
        app.call("GET", &uri, &token, None).await,
        (404, json!("No avatar"))
    );
    assert_eq!(
        app.call("GET", "/v1/users/999/avatar", &token, None).await,
        (404, json!("User not found"))
    );

    let png = b"\x89PNG\r\n\x1a\n not really a picture".to_vec();
    let (status, _, body) = app
        .raw(multipart(&token, "me.png", "image/png", &png))
        .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let saved: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(saved["data"]["size"], png.len());
    let (status, _, _) = app
        .raw(multipart(&token, "me.txt", "text/plain", b"hello"))
        .await;
    assert_eq!(status, 415);
    let (status, _, body) = app
        .raw(multipart(
            &token,
            "big.png",
            "image/png",
            &vec![0; 1024 * 1024 + 1],
        ))
        .await;
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&body));

    let request = Request::get(&uri)
        .header(AUTHORIZATION, format!("Bearer {token}"))
        .body(Full::<Bytes>::default());
    let (status, content_type, body) = app.raw(request.expect("a request")).await;
    assert_eq!(
        (status, content_type.as_str(), body.as_ref()),
        (StatusCode::OK, "image/png", png.as_slice())
    );
    let (_, page) = app
        .call("GET", "/v1/users?hasAvatar=true", &token, None)
        .await;
    assert_eq!(page["users"][0]["id"], id);
}

#[tokio::test]
async fn follows() {
    let app = App::new();
    let (ann, ann_id) = app.sign_up("Ann", "ann@example.com").await;
    let (bob, bob_id) = app.sign_up("Bob", "bob@example.com").await;
    assert_eq!(
        app.call("POST", &format!("/v1/users/{bob_id}/follow"), &ann, None)
            .await
            .0,
        200
    );
    assert_eq!(
        app.call("POST", &format!("/v1/users/{ann_id}/follow"), &bob, None)
            .await
            .0,
        200
    );
    assert_eq!(
        app.call("POST", "/v1/users/1/follow", &bob, None).await.0,
        200
    );
    assert_eq!(
        app.call("POST", &format!("/v1/users/{bob_id}/follow"), &bob, None)
            .await
            .0,
        400
    );
    assert_eq!(
        app.call("POST", "/v1/users/999/follow", &bob, None).await.0,
        404
    );

    let names = |data: &Value| -> Vec<String> {
        data["users"]
            .as_array()
            .expect("users")
            .iter()
            .map(|user| user["name"].as_str().expect("a name").to_owned())
            .collect()
    };
    let (_, data) = app
        .call("GET", &format!("/v1/users/{bob_id}/followers"), &ann, None)
        .await;
    assert_eq!(names(&data), ["Ann"]);
    let (_, data) = app
        .call("GET", &format!("/v1/users/{bob_id}/following"), &ann, None)
        .await;
    assert_eq!(names(&data), ["Admin", "Ann"]);
    assert_eq!(
        app.call("DELETE", "/v1/users/1/follow", &bob, None).await.0,
        200
    );
    let (_, data) = app
        .call("GET", &format!("/v1/users/{bob_id}/following"), &ann, None)
        .await;
    assert_eq!(names(&data), ["Ann"]);
    assert_eq!(
        app.call("GET", "/v1/users/999/followers", &ann, None)
            .await
            .0,
        404
    );
    assert_eq!(
        app.call("GET", "/v1/users/999/following", &ann, None)
            .await
            .0,
        404
    );
}

#[tokio::test]
async fn posts_likes_and_comments() {
    let app = App::new();
    let (ann, ann_id) = app.sign_up("Ann", "ann@example.com").await;
    let (bob, bob_id) = app.sign_up("Bob", "bob@example.com").await;
    let mut ids = Vec::new();
    for (token, text) in [
        (&ann, "one"),
        (&bob, "two"),
        (&ann, "three"),
        (&ann, "four"),
        (&bob, "five"),
    ] {
        let (status, post) = app
            .call("POST", "/v1/posts", token, Some(json!({ "text": text })))
            .await;
        assert_eq!(status, 200, "{post}");
        ids.push(post["id"].as_u64().expect("an id"));
    }
    assert_eq!(
        app.call("POST", "/v1/posts", &ann, Some(json!({ "text": "" })))
            .await
            .0,
        400
    );

    // Cursor pages, filtered by an author id given as query text.
    let (status, page) = app
        .call(
            "GET",
            &format!("/v1/posts?authorId={ann_id}&limit=2"),
            &bob,
            None,
        )
        .await;
    assert_eq!(status, 200, "{page}");
    let texts = |page: &Value| -> Vec<String> {
        page["posts"]
            .as_array()
            .expect("posts")
            .iter()
            .map(|post| post["text"].as_str().expect("text").to_owned())
            .collect()
    };
    assert_eq!(texts(&page), ["one", "three"]);
    let cursor = page["nextCursor"].as_str().expect("a cursor").to_owned();
    let (status, page) = app
        .call(
            "GET",
            &format!("/v1/posts?authorId={ann_id}&limit=2&cursor={cursor}"),
            &bob,
            None,
        )
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(texts(&page), ["four"]);
    assert_eq!(page["nextCursor"], Value::Null);
    let (_, page) = app.call("GET", "/v1/posts", &bob, None).await;
    assert_eq!((texts(&page).len(), page["limit"].clone()), (5, json!(20)));
    assert_eq!(
        app.call("GET", "/v1/posts?cursor=made-up-cursor", &bob, None)
            .await
            .0,
        400
    );
    assert_eq!(
        app.call("GET", "/v1/posts?limit=0", &bob, None).await.0,
        400
    );

    let first = format!("/v1/posts/{}", ids[0]);
    assert_eq!(app.call("GET", &first, &bob, None).await.1["text"], "one");
    assert_eq!(
        app.call("GET", "/v1/posts/999", &bob, None).await,
        (404, json!("Post not found"))
    );
    let edit = Some(json!({ "text": "one, edited" }));
    assert_eq!(
        app.call("PATCH", &first, &bob, edit.clone()).await,
        (403, json!("Only the author can change a post"))
    );
    assert_eq!(
        app.call("PATCH", &first, &ann, edit).await.1["text"],
        "one, edited"
    );
    assert_eq!(app.call("DELETE", &first, &bob, None).await.0, 403);

    // Likes.
    assert_eq!(
        app.call("POST", &format!("{first}/like"), &bob, None)
            .await
            .1["likes"],
        1
    );
    assert_eq!(
        app.call("POST", &format!("{first}/like"), &ann, None)
            .await
            .1["likes"],
        2
    );
    assert_eq!(
        app.call("POST", &format!("{first}/like"), &ann, None)
            .await
            .1["likes"],
        2
    );
    let (_, likers) = app.call("GET", &format!("{first}/likes"), &bob, None).await;
    assert_eq!(likers["users"].as_array().expect("users").len(), 2);
    assert_eq!(
        app.call("DELETE", &format!("{first}/like"), &ann, None)
            .await
            .1["likes"],
        1
    );
    let (_, likers) = app.call("GET", &format!("{first}/likes"), &bob, None).await;
    assert_eq!(likers["users"][0]["id"], bob_id);
    assert_eq!(
        app.call("POST", "/v1/posts/999/like", &ann, None).await.0,
        404
    );

    // Comments.
    let (status, comment) = app
        .call(
            "POST",
            &format!("{first}/comments"),
            &bob,
            Some(json!({ "text": "nice" })),
        )
        .await;
    assert_eq!(status, 200, "{comment}");
    assert_eq!(
        (&comment["authorId"], &comment["postId"]),
        (&json!(bob_id), &json!(ids[0]))
    );
    let (_, comments) = app
        .call("GET", &format!("{first}/comments"), &ann, None)
        .await;
    assert_eq!(comments["comments"][0]["text"], "nice");
    let comment_uri = format!("{first}/comments/{}", comment["id"]);
    assert_eq!(
        app.call("DELETE", &comment_uri, &ann, None).await,
        (403, json!("Only the author can delete a comment"))
    );
    assert_eq!(
        app.call(
            "DELETE",
            &format!("/v1/posts/{}/comments/{}", ids[1], comment["id"]),
            &bob,
            None
        )
        .await
        .0,
        404
    );
    assert_eq!(app.call("DELETE", &comment_uri, &bob, None).await.0, 200);
    assert_eq!(app.call("DELETE", &comment_uri, &bob, None).await.0, 404);
    assert_eq!(
        app.call("GET", "/v1/posts/999/comments", &ann, None)
            .await
            .0,
        404
    );

    assert_eq!(app.call("DELETE", &first, &ann, None).await.0, 200);
    assert_eq!(app.call("GET", &first, &ann, None).await.0, 404);
}

#[tokio::test]
async fn the_stream_of_new_posts() {
    let app = App::new();
    let (ann, ann_id) = app.sign_up("Ann", "ann@example.com").await;
    let request = Request::get(format!("/v1/events?authorId={ann_id}"))
        .body(Full::<Bytes>::default())
        .expect("a request");
    let stream = tokio::spawn({
        let router = app.0.clone();
        async move { router.oneshot(request).await.expect("the router answers") }
    });
    // Post until the stream has subscribed and answers with its first event.
    let poster = tokio::spawn(async move {
        for index in 0.. {
            app.call(
                "POST",
                "/v1/posts",
                &ann,
                Some(json!({ "text": format!("post {index}") })),
            )
            .await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let response = tokio::time::timeout(Duration::from_secs(10), stream)
        .await
        .expect("in time")
        .expect("no panic");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()[CONTENT_TYPE], "text/event-stream");
    let mut body = response.into_body();
    let first = loop {
        let frame = tokio::time::timeout(Duration::from_secs(10), body.frame())
            .await
            .expect("in time");
        let data = frame
            .expect("a frame")
            .expect("no error")
            .into_data()
            .expect("data");
        let text = String::from_utf8(data.to_vec()).expect("UTF-8");
        if !text.is_empty() && !text.starts_with(':') {
            break text; // not an empty piece or a keep-alive comment
        }
    };
    poster.abort();
    assert!(first.starts_with("event: post\n"), "{first}");
    let data = first
        .lines()
        .find_map(|line| line.strip_prefix("data: "))
        .expect("a data line");
    let post: Value = serde_json::from_str(data).expect("JSON");
    assert_eq!(post["authorId"], ann_id);
    assert!(
        post["text"].as_str().expect("text").starts_with("post "),
        "{post}"
    );
}
