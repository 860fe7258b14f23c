//! What bounds logins and registrations (issue 49): password hashes at once, attempts per
//! email and per address; and a deleted user's token, refused like an invalid one.

// The tests are `async fn(Backend)` bodies that `on_both!` turns into `#[tokio::test]`s: clippy
// does not see them as tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Backend, errors, logins_at_once, start, start_with};
use serde_json::json;
use strata::ratelimit::{ManualClock, Quota, TrustedProxies};
use strata_realworld::limits::Limits;

/// Statuses, sorted, and the headers of the first answer with `status`.
fn tally(
    answers: &[(u16, reqwest::header::HeaderMap)],
    status: u16,
) -> (Vec<u16>, reqwest::header::HeaderMap) {
    let mut statuses: Vec<u16> = answers.iter().map(|(status, _)| *status).collect();
    statuses.sort_unstable();
    let headers = answers
        .iter()
        .find(|(s, _)| *s == status)
        .map(|(_, headers)| headers.clone())
        .unwrap_or_default();
    (statuses, headers)
}

/// The default limits, with waits for a hash long enough for a debug build's (about 0.5 s each,
/// more while other tests hash), on a clock that stands still (however long the test takes, no
/// budget grows back).
fn patient() -> Limits {
    let limits = Limits::default().clock(ManualClock::new());
    let bound = limits.hashes().bound();
    limits.hashing(bound, Duration::from_secs(600))
}

async fn the_eleventh_login_of_one_email_in_a_minute_is_refused_with_429(backend: Backend) {
    let conduit = start_with(backend, patient()).await;
    let answers = logins_at_once(&conduit, vec!["jake@example.com".to_owned(); 11]).await;
    let (statuses, headers) = tally(&answers, 429);
    assert_eq!(statuses, [[401; 10].as_slice(), &[429]].concat());
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert_eq!(retry, 6, "one attempt more every 6 s");
    assert_eq!(headers["ratelimit-policy"], r#""email";q=10;w=60"#);
    assert_eq!(
        headers["ratelimit"].to_str().unwrap(),
        format!(r#""email";r=0;t={retry}"#)
    );
    // The account's budget, whatever the case of its letters, and registration spends it too.
    let other_case = logins_at_once(&conduit, ["JAKE@Example.com".to_owned()]).await;
    assert_eq!(other_case[0].0, 429);
    let register = conduit
        .send(
            "POST",
            "/users",
            Some(json!({ "user": { "username": "jake", "email": "jake@example.com", "password": "secret" } })),
            None,
        )
        .await;
    assert_eq!(register.status, 429);
    assert_eq!(
        errors(&register.body),
        [format!(
            "Too many attempts for this email, retry in {retry} s"
        )]
    );
    // Another email has its own budget.
    let other = logins_at_once(&conduit, ["elsa@example.com".to_owned()]).await;
    assert_eq!(other[0].0, 401);
}

async fn the_thirty_first_login_or_registration_from_one_address_in_a_minute_is_refused_with_429(
    backend: Backend,
) {
    let conduit = start_with(backend, patient()).await;
    let emails = (0..31).map(|i| format!("user{i}@example.com"));
    let answers = logins_at_once(&conduit, emails).await;
    let (statuses, headers) = tally(&answers, 429);
    assert_eq!(statuses, [[401; 30].as_slice(), &[429]].concat());
    assert_eq!(headers["ratelimit-policy"], r#""address";q=30;w=60"#);
    let retry = headers["retry-after"].to_str().unwrap();
    assert_eq!(retry, "2", "one attempt more every 2 s");
    assert_eq!(
        headers["ratelimit"].to_str().unwrap(),
        format!(r#""address";r=0;t={retry}"#)
    );
    // Registration shares the address's budget.
    let register = conduit
        .send(
            "POST",
            "/users",
            Some(json!({ "user": { "username": "new", "email": "new@example.com", "password": "secret" } })),
            None,
        )
        .await;
    assert_eq!(register.status, 429);
    assert_eq!(errors(&register.body).len(), 1);
    // Other endpoints are not limited.
    assert_eq!(conduit.send("GET", "/tags", None, None).await.status, 200);
}

async fn hashes_at_once_never_exceed_the_bound(backend: Backend) {
    let limits = Limits::default()
        .hashing(2, Duration::from_secs(600))
        .per_email(Quota::per_minute(100))
        .per_address(Quota::per_minute(100));
    let conduit = start_with(backend, limits.clone()).await;
    let emails = (0..10).map(|i| format!("user{i}@example.com"));
    let answers = logins_at_once(&conduit, emails).await;
    assert!(answers.iter().all(|(status, _)| *status == 401));
    assert_eq!(limits.hashes().peak(), 2);
    assert_eq!(limits.hashes().running(), 0);
}

async fn a_login_that_cannot_hash_in_time_gets_503_with_retry_after(backend: Backend) {
    let limits = Limits::default()
        .hashing(1, Duration::ZERO)
        .per_email(Quota::per_minute(100))
        .per_address(Quota::per_minute(100));
    let conduit = start_with(backend, limits.clone()).await;
    conduit.register("slow").await;
    // Its stored hash takes 10 times as long to check: the one place stays taken while the
    // second login asks for it (a probe, not a guess of how long it takes).
    conduit
        .execute(
            "UPDATE users SET password_hash = $1 WHERE username = 'slow'",
            &["$argon2id$v=19$m=19456,t=20,p=1$c29tZXNhbHRzb21lc2FsdA$\
               aW5pdGlhbGx5IGEgaGFzaCBvZiB0aGlydHktdHdvIGJ5dGVz"],
        )
        .await;
    let slow = tokio::spawn(logins_at_once_owned(
        conduit.base.clone(),
        "slow@example.com",
    ));
    while limits.hashes().running() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let refused = logins_at_once(&conduit, ["other@example.com".to_owned()]).await;
    let (status, headers) = &refused[0];
    assert_eq!(*status, 503);
    assert_eq!(headers["retry-after"], "1");
    slow.abort();
}

/// One failed login of `email`, its status (for a task of its own).
async fn logins_at_once_owned(base: String, email: &'static str) -> u16 {
    reqwest::Client::new()
        .post(format!("{base}/users/login"))
        .json(&json!({ "user": { "email": email, "password": "wrong" } }))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn a_deleted_users_token_is_refused_with_401(backend: Backend) {
    let conduit = start(backend).await;
    let token = conduit.register("gone").await;
    conduit.register("author").await;
    conduit
        .execute("DELETE FROM users WHERE username = 'gone'", &[])
        .await;
    let article =
        json!({ "article": { "title": "T", "description": "D", "body": "B", "tagList": [] } });
    for (method, path, body) in [
        ("POST", "/articles", Some(article)),
        ("POST", "/profiles/author/follow", None),
        ("GET", "/user", None),
        ("GET", "/articles/feed", None),
        // Optional authentication: a token that is sent must be valid.
        ("GET", "/articles", None),
        ("GET", "/profiles/author", None),
    ] {
        let answer = conduit.send(method, path, body, Some(&token)).await;
        assert_eq!(answer.status, 401, "{method} {path}: {}", answer.body);
        assert_eq!(errors(&answer.body), ["Invalid or expired token"]);
    }
}

/// A failed login of `email` on `base`, from the client that `X-Forwarded-For` names.
async fn login_from(base: &str, email: &str, client: &str) -> u16 {
    reqwest::Client::new()
        .post(format!("{base}/users/login"))
        .header("x-forwarded-for", client)
        .json(&json!({ "user": { "email": email, "password": "wrong" } }))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Two replicas on one Redis: a client's budget is spent once across them, per email and per
/// address (the address that the trusted proxy, here 127.0.0.1, forwards).
#[tokio::test]
async fn replicas_on_one_redis_share_the_login_limits() {
    let Some(redis) = common::redis::Redis::start("replicas_on_one_redis_share_the_login_limits")
    else {
        return;
    };
    let limits = || async {
        let store = strata::redis::RedisRateLimitStore::connect(&redis.url())
            .await
            .unwrap();
        Limits::default()
            .per_email(Quota::per_minute(3))
            .per_address(Quota::per_minute(5))
            .trust(TrustedProxies::networks(["127.0.0.0/8"]).unwrap())
            .redis(store)
    };
    let a = start_with(Backend::Sqlite, limits().await).await;
    let b = start_with(Backend::Sqlite, limits().await).await;

    // One email, from several clients, over both replicas: 3 in all, then 429.
    let mut statuses = Vec::new();
    for (n, base) in [&a.base, &b.base, &a.base, &b.base].into_iter().enumerate() {
        statuses.push(login_from(base, "one@example.com", &format!("198.51.100.{n}")).await);
    }
    assert_eq!(statuses, [401, 401, 401, 429]);

    // One client, several emails, over both replicas: 5 in all, then 429; another client
    // still gets through.
    let mut statuses = Vec::new();
    for n in 0..6 {
        let base = if n % 2 == 0 { &a.base } else { &b.base };
        statuses.push(login_from(base, &format!("e{n}@example.com"), "203.0.113.7").await);
    }
    assert_eq!(statuses, [401, 401, 401, 401, 401, 429]);
    assert_eq!(
        login_from(&b.base, "other@example.com", "203.0.113.8").await,
        401
    );
}

on_both!(
    the_eleventh_login_of_one_email_in_a_minute_is_refused_with_429,
    the_thirty_first_login_or_registration_from_one_address_in_a_minute_is_refused_with_429,
    hashes_at_once_never_exceed_the_bound,
    a_login_that_cannot_hash_in_time_gets_503_with_retry_after,
    a_deleted_users_token_is_refused_with_401,
);
