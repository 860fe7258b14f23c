//! A RealWorld server on a fresh database, over a real socket (`127.0.0.1:0`).

#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use strata::prelude::*;
use strata::server::LocalAddr;
use strata_realworld::auth::Keys;
use strata_realworld::limits::Limits;
use strata_realworld::{App, config, db, routing};

/// A running server, its address and its database's folder (removed when dropped).
pub struct Conduit {
    pub server: strata::Server,
    pub base: String,
    pub client: reqwest::Client,
    pub db: sqlx::SqlitePool,
    dir: PathBuf,
}

impl Drop for Conduit {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Starts a server on a new SQLite file, with the default limits.
pub async fn start() -> Conduit {
    start_with(Limits::default()).await
}

/// Starts a server on a new SQLite file, with `limits`.
pub async fn start_with(limits: Limits) -> Conduit {
    let dir = std::env::temp_dir().join(format!(
        "strata-realworld-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}", dir.join("conduit.db").display());
    let pools = db::connect(&url).await.unwrap();
    let pool = pools.reads.clone();
    let app = App::new(pools, Keys::from_secret(b"test secret")).with_limits(limits);
    let server = create_server(
        &config(SocketAddr::from(([127, 0, 0, 1], 0))),
        &routing(&app),
    )
    .await
    .unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    Conduit {
        server,
        base: format!("http://{addr}/api"),
        client: reqwest::Client::new(),
        db: pool,
        dir,
    }
}

/// A response's status and JSON body.
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

impl Conduit {
    /// Sends `method path` with an optional JSON body and token.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        token: Option<&str>,
    ) -> Answer {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.header("authorization", format!("Token {token}"));
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Answer { status, body }
    }

    /// Registers `name` (`name@example.com`, password `secret-<name>`) and returns the token.
    pub async fn register(&self, name: &str) -> String {
        let answer = self
            .send(
                "POST",
                "/users",
                Some(json!({ "user": { "username": name, "email": format!("{name}@example.com"), "password": format!("secret-{name}") } })),
                None,
            )
            .await;
        assert_eq!(answer.status, 201, "{}", answer.body);
        answer.body["user"]["token"].as_str().unwrap().to_owned()
    }
}

/// The messages of a specification error body, asserting its shape.
pub fn errors(body: &Value) -> Vec<String> {
    let object = body.as_object().expect("an object");
    assert_eq!(object.len(), 1, "only `errors`: {body}");
    let errors = body["errors"].as_object().expect("errors is an object");
    assert_eq!(errors.len(), 1, "only `errors.body`: {body}");
    body["errors"]["body"]
        .as_array()
        .expect("errors.body is an array")
        .iter()
        .map(|m| m.as_str().expect("each message is a string").to_owned())
        .collect()
}

/// `POST /api/users/login` for each of `emails` at once (each on a task of its own, each
/// its own connection), with a wrong password: their statuses and headers, in no order.
pub async fn logins_at_once(
    conduit: &Conduit,
    emails: impl IntoIterator<Item = String>,
) -> Vec<(u16, reqwest::header::HeaderMap)> {
    let mut set = tokio::task::JoinSet::new();
    for email in emails {
        // A client per request: a shared pool may send them one after the other.
        let client = reqwest::Client::new();
        let url = format!("{}/users/login", conduit.base);
        set.spawn(async move {
            let response = client
                .post(url)
                .json(&json!({ "user": { "email": email, "password": "a wrong guess" } }))
                .send()
                .await
                .unwrap();
            (response.status().as_u16(), response.headers().clone())
        });
    }
    set.join_all().await
}
