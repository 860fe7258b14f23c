//! The database: SQLite or PostgreSQL, chosen by the URL, through sqlx's runtime API; the
//! schema's migrations (one folder per engine) embedded and applied at start-up.
//!
//! Most statements are written once, in SQL that both engines read (`$1` parameters,
//! `ON CONFLICT DO NOTHING`, `RETURNING`), and run on either through `with_reader!` and
//! `with_writer!` (macros of this crate), which compile the same Rust once per engine. What
//! differs between the two dialects is in [`Sql`]: [`SQLITE`] and [`POSTGRES`], side by side.
//!
//! The write paths differ too. SQLite runs one write at a time whatever the pool, so its
//! writes queue on one connection ([`Db::Sqlite`]). PostgreSQL runs writes concurrently, from
//! one process or several (replicas on one server): each write is one statement or one
//! transaction, and what must stay unique under concurrent writers (slugs, favorites, follows,
//! tags) is decided by a `UNIQUE` constraint with `ON CONFLICT DO NOTHING`, never by a read
//! followed by a write.

use std::borrow::Cow;
use std::str::FromStr;
use std::time::Duration;

use sqlx::Connection;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

/// The schema, in order, for each engine: (version, description, SQLite, PostgreSQL). Each is
/// applied once (sqlx records it in `_sqlx_migrations`).
const MIGRATIONS: [(i64, &str, &str, &str); 6] = [
    (
        1,
        "users",
        include_str!("../migrations/sqlite/0001_users.sql"),
        include_str!("../migrations/postgres/0001_users.sql"),
    ),
    (
        2,
        "articles",
        include_str!("../migrations/sqlite/0002_articles.sql"),
        include_str!("../migrations/postgres/0002_articles.sql"),
    ),
    (
        3,
        "tags",
        include_str!("../migrations/sqlite/0003_tags.sql"),
        include_str!("../migrations/postgres/0003_tags.sql"),
    ),
    (
        4,
        "favorites",
        include_str!("../migrations/sqlite/0004_favorites.sql"),
        include_str!("../migrations/postgres/0004_favorites.sql"),
    ),
    (
        5,
        "follows",
        include_str!("../migrations/sqlite/0005_follows.sql"),
        include_str!("../migrations/postgres/0005_follows.sql"),
    ),
    (
        6,
        "comments",
        include_str!("../migrations/sqlite/0006_comments.sql"),
        include_str!("../migrations/postgres/0006_comments.sql"),
    ),
];

/// The database engines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// SQLite: one file, one process.
    Sqlite,
    /// PostgreSQL: one server, any number of processes.
    Postgres,
}

impl Engine {
    /// The engine of `url`: `sqlite:..` or `postgres://..` (`postgresql://..`).
    ///
    /// # Errors
    /// When the URL names neither, saying what it should start with (not the URL, which may
    /// hold a password).
    pub fn of(url: &str) -> Result<Self, String> {
        if url.starts_with("sqlite:") {
            Ok(Self::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Self::Postgres)
        } else {
            Err("a database URL starts with sqlite: or postgres:// (postgresql://)".to_owned())
        }
    }
}

/// The migrator of the schema on `engine`. sqlx's `migrate!` macro would embed the folder
/// too, but needs sqlx's `macros` feature (and its build-time cost); `Migration::new` is its
/// runtime form.
pub fn migrator(engine: Engine) -> Migrator {
    let migrations: Vec<Migration> = MIGRATIONS
        .iter()
        .map(|&(version, description, sqlite, postgres)| {
            let sql = match engine {
                Engine::Sqlite => sqlite,
                Engine::Postgres => postgres,
            };
            Migration::new(
                version,
                Cow::Borrowed(description),
                MigrationType::Simple,
                Cow::Borrowed(sql),
                false,
            )
        })
        .collect();
    Migrator {
        migrations: Cow::Owned(migrations),
        ..Migrator::DEFAULT
    }
}

/// The database, on either engine. Cheap to clone (pools are).
#[derive(Clone, Debug)]
pub enum Db {
    /// SQLite, with two pools.
    Sqlite {
        /// Eight connections for reads (a write-ahead log lets them read while a write runs).
        reads: SqlitePool,
        /// One connection for writes. SQLite runs one write at a time whatever the pool;
        /// with several writing connections, the losers wait in SQLite's busy handler, which
        /// sleeps (up to 100 ms a time) and is not first come, first served: under 32
        /// concurrent creations that gave a p99 of 700 ms. Queued on this pool instead,
        /// writes wait their turn in order (measured in README.md).
        writes: SqlitePool,
    },
    /// PostgreSQL: one pool for reads and writes alike (the server runs writes concurrently;
    /// row locks and constraints order them).
    Postgres(PgPool),
}

impl Db {
    /// The engine.
    pub fn engine(&self) -> Engine {
        match self {
            Self::Sqlite { .. } => Engine::Sqlite,
            Self::Postgres(_) => Engine::Postgres,
        }
    }

    /// The statements that differ between the engines, in this one's dialect.
    pub fn sql(&self) -> &'static Sql {
        match self {
            Self::Sqlite { .. } => &SQLITE,
            Self::Postgres(_) => &POSTGRES,
        }
    }
}

/// Runs `$body` with `$pool` bound to the pool that reads: the same code, compiled once for
/// each engine's pool type (`with_reader!(app.db, pool => query.fetch_one(pool).await)`).
macro_rules! with_reader {
    ($db:expr, $pool:ident => $body:expr) => {
        match &$db {
            $crate::db::Db::Sqlite { reads: $pool, .. } => $body,
            $crate::db::Db::Postgres($pool) => $body,
        }
    };
}

/// Runs `$body` with `$pool` bound to the pool that writes (SQLite's one writing connection;
/// PostgreSQL's pool).
macro_rules! with_writer {
    ($db:expr, $pool:ident => $body:expr) => {
        match &$db {
            $crate::db::Db::Sqlite { writes: $pool, .. } => $body,
            $crate::db::Db::Postgres($pool) => $body,
        }
    };
}

pub(crate) use {with_reader, with_writer};

/// The parts of statements that differ between the dialects. Each is a fragment spliced into
/// a statement otherwise written once.
#[derive(Debug)]
pub struct Sql {
    /// The current time, as `updated_at` columns store it.
    pub now: &'static str,
    /// An article's (`a`) `created_at, updated_at`, as RFC 3339 text in UTC, to the
    /// millisecond (`2026-12-07T18:51:17.123Z`).
    pub article_times: &'static str,
    /// A comment's (`c`) `created_at, updated_at`, as for articles.
    pub comment_times: &'static str,
    /// The tags of article `a`, sorted by name, as a JSON array (text).
    pub tag_list: &'static str,
}

/// SQLite's dialect: times are stored as RFC 3339 text already; JSON through `json_group_array`.
pub const SQLITE: Sql = Sql {
    now: "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')",
    article_times: "a.created_at, a.updated_at",
    comment_times: "c.created_at, c.updated_at",
    tag_list: "(SELECT json_group_array(name) FROM (SELECT t.name FROM article_tags atg \
        JOIN tags t ON t.id = atg.tag_id WHERE atg.article_id = a.id ORDER BY t.name))",
};

/// PostgreSQL's dialect: times are `timestamptz`, formatted on the way out; JSON through
/// `json_agg` (`NULL` without rows, hence `coalesce`).
pub const POSTGRES: Sql = Sql {
    now: "now()",
    article_times: "to_char(a.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), \
        to_char(a.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')",
    comment_times: "to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), \
        to_char(c.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')",
    tag_list: "(SELECT coalesce(json_agg(t.name ORDER BY t.name), '[]')::text FROM article_tags atg \
        JOIN tags t ON t.id = atg.tag_id WHERE atg.article_id = a.id)",
};

/// Connects to the database at `url` and applies the migrations:
///
/// - `sqlite://conduit.db`, `sqlite::memory:`: SQLite, creating the file if needed. Foreign
///   keys are enforced, and the journal is a write-ahead log so that readers do not wait for
///   a writer. An in-memory database lives in one connection, which then serves reads and
///   writes alike.
/// - `postgres://user:password@host:port/database` (`?host=/socket/dir` for a Unix socket):
///   PostgreSQL, up to 10 connections. Replicas starting at once apply the migrations once
///   (sqlx holds an advisory lock while it migrates).
///
/// # Errors
/// A URL of neither engine ([`Engine::of`]'s message, as a configuration error), or the
/// database's own error (unreachable, refused, a migration that fails).
pub async fn connect(url: &str) -> Result<Db, sqlx::Error> {
    match Engine::of(url).map_err(|e| sqlx::Error::Configuration(e.into()))? {
        Engine::Sqlite => connect_sqlite(url).await,
        Engine::Postgres => {
            let options = PgConnectOptions::from_str(url)?;
            // One connection first: the pool would retry until its timeout and say only
            // `PoolTimedOut`, where this says why (refused, no such database, a password).
            PgConnection::connect_with(&options).await?.close().await?;
            let pool = PgPoolOptions::new()
                .max_connections(10)
                .acquire_timeout(Duration::from_secs(5))
                .connect_with(options)
                .await?;
            migrator(Engine::Postgres).run(&pool).await?;
            Ok(Db::Postgres(pool))
        }
    }
}

async fn connect_sqlite(url: &str) -> Result<Db, sqlx::Error> {
    let options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .foreign_keys(true)
        .journal_mode(SqliteJournalMode::Wal)
        .busy_timeout(Duration::from_secs(5));
    let pool = |connections: u32| {
        SqlitePoolOptions::new()
            .max_connections(connections)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options.clone())
    };
    let writes = pool(1).await?;
    migrator(Engine::Sqlite).run(&writes).await?;
    let reads = if url.contains(":memory:") {
        writes.clone()
    } else {
        pool(8).await?
    };
    Ok(Db::Sqlite { reads, writes })
}

/// `url` without its password (`postgres://conduit:***@host/db`), for logs and errors.
pub fn redacted(url: &str) -> Cow<'_, str> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Cow::Borrowed(url);
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return Cow::Borrowed(url);
    };
    match rest[..at].split_once(':') {
        Some((user, _password)) => Cow::Owned(format!("{scheme}://{user}:***{}", &rest[at..])),
        None => Cow::Borrowed(url),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_names_the_engine_and_anything_else_is_refused() {
        assert_eq!(Engine::of("sqlite::memory:"), Ok(Engine::Sqlite));
        assert_eq!(Engine::of("sqlite://conduit.db"), Ok(Engine::Sqlite));
        assert_eq!(Engine::of("postgres://u@h/db"), Ok(Engine::Postgres));
        assert_eq!(Engine::of("postgresql://u@h/db"), Ok(Engine::Postgres));
        let error = Engine::of("mysql://root:hunter2@h/db").unwrap_err();
        assert!(
            error.contains("starts with sqlite: or postgres://"),
            "{error}"
        );
        assert!(!error.contains("hunter2"), "{error}");
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redacted("postgres://conduit:secret@127.0.0.1:5432/conduit"),
            "postgres://conduit:***@127.0.0.1:5432/conduit"
        );
        assert_eq!(
            redacted("postgres://conduit@h/db"),
            "postgres://conduit@h/db"
        );
        assert_eq!(redacted("sqlite://conduit.db"), "sqlite://conduit.db");
    }
}
