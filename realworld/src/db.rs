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

/// The database's two pools: readers, and the one writer.
#[derive(Clone, Debug)]
pub struct Pools {
    /// Eight connections for reads (a write-ahead log lets them read while a write runs).
    pub reads: SqlitePool,
    /// One connection for writes. SQLite runs one write at a time whatever the pool; with
    /// several writing connections, the losers wait in SQLite's busy handler, which sleeps
    /// (up to 100 ms a time) and is not first come, first served: under 32 concurrent
    /// creations that gave a p99 of 700 ms. Queued on this pool instead, writes wait their
    /// turn in order (measured in README.md).
    pub writes: SqlitePool,
}

/// Opens (creating it if needed) the SQLite database at `url` (`sqlite://conduit.db`,
/// `sqlite::memory:`) and applies the migrations. Foreign keys are enforced, and the journal
/// is a write-ahead log so that readers do not wait for a writer. An in-memory database lives
/// in one connection, which then serves reads and writes alike.
pub async fn connect(url: &str) -> Result<Pools, sqlx::Error> {
    let options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .foreign_keys(true)
        .journal_mode(SqliteJournalMode::Wal)
        .busy_timeout(std::time::Duration::from_secs(5));
    let pool = |connections: u32| {
        SqlitePoolOptions::new()
            .max_connections(connections)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options.clone())
    };
    let writes = pool(1).await?;
    migrator().run(&writes).await?;
    let reads = if url.contains(":memory:") {
        writes.clone()
    } else {
        pool(8).await?
    };
    Ok(Pools { reads, writes })
}
