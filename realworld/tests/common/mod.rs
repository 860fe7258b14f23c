//! A RealWorld server on a fresh database, SQLite or PostgreSQL, over a real socket
//! (`127.0.0.1:0`); [`on_both!`] runs a test body on each.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

pub mod haproxy;
pub mod postgres;
pub mod redis;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use strata::prelude::*;
use strata::server::LocalAddr;
use strata_realworld::auth::Keys;
use strata_realworld::db::Db;
use strata_realworld::limits::Limits;
use strata_realworld::{App, config, db, routing};

/// Runs each named test body (an `async fn(Backend)`) on both databases: as
/// `sqlite::<name>` and `postgres::<name>` (skipped outside CI without PostgreSQL).
#[macro_export]
macro_rules! on_both {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $test() {
                    super::$test($crate::common::Backend::Sqlite).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $test() {
                    if $crate::common::postgres::cluster(stringify!($test)).is_some() {
                        super::$test($crate::common::Backend::Postgres).await;
                    }
                }
            )*
        }
    };
}

/// The database a test runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// A new SQLite file in a folder of its own.
    Sqlite,
    /// A new schema on the test binary's PostgreSQL cluster ([`postgres::Cluster::database`]).
    Postgres,
}

impl Backend {
    /// The URL of a new, empty database, and the folder to remove afterwards (SQLite's).
    pub async fn database(self) -> (String, Option<PathBuf>) {
        match self {
            Self::Sqlite => {
                let dir = std::env::temp_dir().join(format!(
                    "strata-realworld-{}-{}",
                    std::process::id(),
                    NEXT.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir_all(&dir).unwrap();
                let url = format!("sqlite://{}", dir.join("conduit.db").display());
                (url, Some(dir))
            }
            Self::Postgres => {
                let cluster = postgres::cluster("a test").expect("PostgreSQL is installed");
                (cluster.database().await, None)
            }
        }
    }
}

/// A running server, its address and its database (a SQLite file's folder is removed when
/// dropped; a PostgreSQL database goes with its cluster).
pub struct Conduit {
    pub server: strata::Server,
    pub base: String,
    pub client: reqwest::Client,
    pub db: Db,
    dir: Option<PathBuf>,
    /// Behind haproxy ([`behind_haproxy`]): the proxy and the other replicas, kept running.
    behind: Option<(haproxy::Haproxy, Vec<Conduit>)>,
}

impl Drop for Conduit {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Starts a server on a new database of `backend`, with the default limits.
pub async fn start(backend: Backend) -> Conduit {
    start_with(backend, Limits::default()).await
}

/// Starts a server on a new database of `backend`, with `limits`.
pub async fn start_with(backend: Backend, limits: Limits) -> Conduit {
    let (url, dir) = backend.database().await;
    serve(&url, dir, limits).await
}

/// Starts `count` servers on one new database of `backend`, each with its own pool (as
/// replicas of one application are), with the default limits.
pub async fn start_replicas(backend: Backend, count: usize) -> Vec<Conduit> {
    let (url, dir) = backend.database().await;
    let mut replicas = Vec::new();
    for n in 0..count {
        // The first one removes the SQLite folder (the last one dropped would be better, but
        // PostgreSQL has none).
        let dir = if n == 0 { dir.clone() } else { None };
        replicas.push(serve(&url, dir, Limits::default()).await);
    }
    replicas
}

/// A server on the database at `url`.
async fn serve(url: &str, dir: Option<PathBuf>, limits: Limits) -> Conduit {
    let db = db::connect(url).await.unwrap();
    let app = App::new(db.clone(), Keys::from_secret(b"test secret")).with_limits(limits);
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
        db,
        dir,
        behind: None,
    }
}

/// Three replicas on one new PostgreSQL database behind a real haproxy (round robin): one
/// [`Conduit`] whose `base` is haproxy's. `None` when PostgreSQL or haproxy is not installed
/// outside CI (said on the terminal for `test`).
pub async fn behind_haproxy(test: &str) -> Option<Conduit> {
    postgres::cluster(test)?;
    if !haproxy::installed(test) {
        return None;
    }
    let mut replicas = start_replicas(Backend::Postgres, 3).await;
    let addresses: Vec<SocketAddr> = replicas
        .iter()
        .map(|replica| {
            let LocalAddr::Tcp(addr) = replica.server.servers()[0].local_addr.clone() else {
                panic!("TCP")
            };
            addr
        })
        .collect();
    let proxy = haproxy::Haproxy::start(&addresses);
    let mut front = replicas.remove(0);
    front.base = format!("http://127.0.0.1:{}/api", proxy.port);
    front.behind = Some((proxy, replicas));
    Some(front)
}

/// A response's status and JSON body.
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

impl Conduit {
    /// The bases of its replicas, each its own (`http://127.0.0.1:PORT/api`): itself alone,
    /// or every replica behind haproxy.
    pub fn replica_bases(&self) -> Vec<String> {
        let own = |conduit: &Conduit| {
            let LocalAddr::Tcp(addr) = conduit.server.servers()[0].local_addr.clone() else {
                panic!("TCP")
            };
            format!("http://{addr}/api")
        };
        let mut bases = vec![own(self)];
        if let Some((_, others)) = &self.behind {
            bases.extend(others.iter().map(own));
        }
        bases
    }

    /// Runs `sql` (`$1`, `$2`.. bound to `binds`) on the database, outside the application.
    pub async fn execute(&self, sql: &str, binds: &[&str]) {
        match &self.db {
            Db::Sqlite { writes, .. } => {
                let mut query = sqlx::query(sql);
                for bind in binds {
                    query = query.bind(*bind);
                }
                query.execute(writes).await.unwrap();
            }
            Db::Postgres(pool) => {
                let mut query = sqlx::query(sql);
                for bind in binds {
                    query = query.bind(*bind);
                }
                query.execute(pool).await.unwrap();
            }
        }
    }

    /// The text that `sql` selects (one row, one column).
    pub async fn text(&self, sql: &str) -> String {
        match &self.db {
            Db::Sqlite { reads, .. } => sqlx::query_scalar(sql).fetch_one(reads).await.unwrap(),
            Db::Postgres(pool) => sqlx::query_scalar(sql).fetch_one(pool).await.unwrap(),
        }
    }

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
