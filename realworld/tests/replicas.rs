//! Writers on several replicas at once: three instances of the application, each with its own
//! pool, on one PostgreSQL database, each on its own socket (`127.0.0.1:0`). Registrations,
//! articles of one title and favorites of one article are spread over the three and sent at
//! once; afterwards every count is exact, whichever replica is asked.
//!
//! PostgreSQL only: SQLite is one file of one process (its writes queue on one connection).

mod common;

use common::{Backend, Conduit, start_replicas};
use serde_json::{Value, json};
use tokio::task::JoinSet;

/// `method path` with an optional body and token on `base`, from a client of its own (one
/// connection per request: a shared pool could send them one after another); status and body.
async fn send(
    base: String,
    method: &'static str,
    path: String,
    body: Option<Value>,
    token: Option<String>,
) -> (u16, Value) {
    let client = reqwest::Client::new();
    let method = reqwest::Method::from_bytes(method.as_bytes()).expect("a method");
    let mut request = client.request(method, format!("{base}{path}"));
    if let Some(token) = token {
        request = request.header("authorization", format!("Token {token}"));
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("an answer");
    let status = response.status().as_u16();
    let text = response.text().await.expect("a body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn registration(name: &str) -> Value {
    json!({ "user": { "username": name, "email": format!("{name}@example.com"), "password": format!("secret-{name}") } })
}

/// The replicas' bases, round robin from `n`.
fn base(replicas: &[Conduit], n: usize) -> String {
    replicas[n % replicas.len()].base.clone()
}

/// Users (and articles of one title).
const USERS: usize = 24;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_on_three_replicas_keep_slugs_unique_and_counts_exact() {
    if common::postgres::cluster("writers_on_three_replicas").is_none() {
        return;
    }
    let replicas = start_replicas(Backend::Postgres, 3).await;
    let tokens = register_at_once(&replicas).await;
    one_title_at_once(&replicas, &tokens).await;
    new_tags_at_once(&replicas, &tokens).await;
    favorites_at_once(&replicas, &tokens).await;
    exact_counts(&replicas).await;
}

/// The users, each on the replica of its number, and a name asked for on each replica at
/// once: one 201, the others 422. Their names and tokens, in order of name.
async fn register_at_once(replicas: &[Conduit]) -> Vec<(String, String)> {
    let mut set = JoinSet::new();
    for n in 0..USERS {
        let body = registration(&format!("user{n}"));
        set.spawn(send(
            base(replicas, n),
            "POST",
            "/users".into(),
            Some(body),
            None,
        ));
    }
    for n in 0..3 {
        let body = registration("taken");
        set.spawn(send(
            base(replicas, n),
            "POST",
            "/users".into(),
            Some(body),
            None,
        ));
    }
    let answers = set.join_all().await;
    let created: Vec<&Value> = answers
        .iter()
        .filter(|(status, _)| *status == 201)
        .map(|(_, body)| body)
        .collect();
    let refused = answers.iter().filter(|(status, _)| *status == 422).count();
    assert_eq!(created.len(), USERS + 1, "{answers:?}");
    assert_eq!(refused, 2, "{answers:?}");
    let mut tokens: Vec<(String, String)> = created
        .iter()
        .map(|body| {
            let user = &body["user"];
            (
                user["username"].as_str().expect("a name").to_owned(),
                user["token"].as_str().expect("a token").to_owned(),
            )
        })
        .filter(|(name, _)| name != "taken")
        .collect();
    tokens.sort();
    tokens
}

/// One title, written by everyone at once on every replica: as many articles, each with a
/// slug of its own (`one-title`, `one-title-2`, ..), and new tags created by several at
/// once.
async fn one_title_at_once(replicas: &[Conduit], tokens: &[(String, String)]) {
    let mut set = JoinSet::new();
    for (n, (_, token)) in tokens.iter().enumerate() {
        let tag = format!("tag{}", n % 3);
        let tags = if n % 2 == 0 {
            json!(["shared", tag, "common"])
        } else {
            json!(["common", tag, "shared"])
        };
        let body = json!({ "article": { "title": "One title", "description": "D", "body": "B",
            "tagList": tags } });
        set.spawn(send(
            base(replicas, n),
            "POST",
            "/articles".into(),
            Some(body),
            Some(token.clone()),
        ));
    }
    let answers = set.join_all().await;
    let mut slugs: Vec<String> = answers
        .iter()
        .map(|(status, body)| {
            assert_eq!(*status, 201, "{body}");
            body["article"]["slug"].as_str().expect("a slug").to_owned()
        })
        .collect();
    slugs.sort();
    let mut expected: Vec<String> = (1..=USERS)
        .map(|n| {
            if n == 1 {
                "one-title".to_owned()
            } else {
                format!("one-title-{n}")
            }
        })
        .collect();
    expected.sort();
    assert_eq!(slugs, expected);
    for replica in replicas {
        let tags = send(replica.base.clone(), "GET", "/tags".into(), None, None).await;
        assert_eq!(
            tags.1["tags"],
            json!(["common", "shared", "tag0", "tag1", "tag2"])
        );
    }
}

/// Articles of distinct titles at once, with the same new tags in opposite orders: without
/// one order of writing, two transactions could each hold the tag the other waits for (and
/// PostgreSQL would end one of them with a deadlock error).
async fn new_tags_at_once(replicas: &[Conduit], tokens: &[(String, String)]) {
    for round in 0..3 {
        let mut set = JoinSet::new();
        for (n, (name, token)) in tokens.iter().enumerate() {
            let (first, second) = (format!("first{round}"), format!("second{round}"));
            let tags = if n % 2 == 0 {
                json!([first, second])
            } else {
                json!([second, first])
            };
            let body = json!({ "article": { "title": format!("{name} {round}"),
                "description": "D", "body": "B", "tagList": tags } });
            set.spawn(send(
                base(replicas, n),
                "POST",
                "/articles".into(),
                Some(body),
                Some(token.clone()),
            ));
        }
        for (status, body) in set.join_all().await {
            assert_eq!(status, 201, "{body}");
        }
    }
}

/// Everyone favorites one article, twice (favoriting is idempotent), on two replicas, all
/// at once; then half of them take it back, at once.
async fn favorites_at_once(replicas: &[Conduit], tokens: &[(String, String)]) {
    let mut set = JoinSet::new();
    for (n, (_, token)) in tokens.iter().enumerate() {
        for replica in [n, n + 1] {
            set.spawn(send(
                base(replicas, replica),
                "POST",
                "/articles/one-title/favorite".into(),
                None,
                Some(token.clone()),
            ));
        }
    }
    for (status, body) in set.join_all().await {
        assert_eq!(status, 200, "{body}");
    }
    let mut set = JoinSet::new();
    for (n, (_, token)) in tokens.iter().enumerate().filter(|(n, _)| n % 2 == 0) {
        set.spawn(send(
            base(replicas, n),
            "DELETE",
            "/articles/one-title/favorite".into(),
            None,
            Some(token.clone()),
        ));
    }
    for (status, body) in set.join_all().await {
        assert_eq!(status, 200, "{body}");
    }
}

/// Every count exact, from every replica.
async fn exact_counts(replicas: &[Conduit]) {
    for replica in replicas {
        let (status, article) = send(
            replica.base.clone(),
            "GET",
            "/articles/one-title".into(),
            None,
            None,
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(article["article"]["favoritesCount"], USERS / 2);
        let (_, favorited) = send(
            replica.base.clone(),
            "GET",
            "/articles?favorited=user1&limit=100".into(),
            None,
            None,
        )
        .await;
        assert_eq!(favorited["articlesCount"], 1);
        let (_, all) = send(
            replica.base.clone(),
            "GET",
            "/articles?limit=100".into(),
            None,
            None,
        )
        .await;
        assert_eq!(all["articlesCount"], USERS * 4);
        let (_, shared) = send(
            replica.base.clone(),
            "GET",
            "/articles?tag=tag1&limit=100".into(),
            None,
            None,
        )
        .await;
        assert_eq!(shared["articlesCount"], USERS / 3);
    }
}
