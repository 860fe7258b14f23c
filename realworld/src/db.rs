//! The database: SQLite through sqlx, the schema's migrations embedded and applied at start-up.

use std::borrow::Cow;
use std::str::FromStr;

use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

/// The schema, in order; each file is applied once (sqlx records it in `_sqlx_migrations`).
const MIGRATIONS: [(i64, &str, &str); 6] = [
    (1, "users", include_str!("../migrations/0001_users.sql")),
    (
        2,
        "articles",
        include_str!("../migrations/0002_articles.sql"),
    ),
    (3, "tags", include_str!("../migrations/0003_tags.sql")),
    (
        4,
        "favorites",
        include_str!("../migrations/0004_favorites.sql"),
    ),
    (5, "follows", include_str!("../migrations/0005_follows.sql")),
    (
        6,
        "comments",
        include_str!("../migrations/0006_comments.sql"),
    ),
];

/// The migrator of the schema. sqlx's `migrate!` macro would embed the folder too, but needs
/// sqlx's `macros` feature (and its build-time cost); `Migration::new` is its runtime form.
pub fn migrator() -> Migrator {
    let migrations: Vec<Migration> = MIGRATIONS
        .iter()
        .map(|&(version, description, sql)| {
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

/// Opens (creating it if needed) the SQLite database at `url` (`sqlite://conduit.db`,
/// `sqlite::memory:`) and applies the migrations. Foreign keys are enforced, and the journal
/// is a write-ahead log so that readers do not wait for a writer.
pub async fn connect(url: &str) -> Result<SqlitePool, sqlx::Error> {
    let options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .foreign_keys(true)
        .journal_mode(SqliteJournalMode::Wal)
        .busy_timeout(std::time::Duration::from_secs(5));
    // An in-memory database lives as long as its one connection.
    let connections: u32 = if url.contains(":memory:") { 1 } else { 8 };
    let pool = SqlitePoolOptions::new()
        .max_connections(connections)
        .min_connections(u32::from(connections == 1))
        .idle_timeout(None)
        .max_lifetime(None)
        .connect_with(options)
        .await?;
    migrator().run(&pool).await?;
    Ok(pool)
}
