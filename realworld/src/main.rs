//! Serves the RealWorld API.
//!
//! - `DATABASE_URL`: the database, SQLite (`sqlite://conduit.db`) or PostgreSQL
//!   (`postgres://user:password@host:5432/conduit`); without it, a new SQLite file in the
//!   temporary directory. The schema's migrations are applied at start-up.
//! - `JWT_SECRET`: the secret that signs tokens; without it, a random one (tokens end with the
//!   process).
//! - `PORT`: 8095 unless set (`0`: any free port, printed).
//! - `LOGIN_LIMIT_PER_EMAIL`, `LOGIN_LIMIT_PER_ADDRESS`: logins and registrations per minute
//!   per email (10 unless set) and per client address (30 unless set).
//! - `HASHES_AT_ONCE`: password hashes at once (2 per core unless set).
//! - `REDIS_URL`: the Redis (`redis://127.0.0.1:6379/`) that keeps both login limits' budgets,
//!   shared by the replicas given the same one; without it, this process's memory. Checked at
//!   start-up.
//! - `TRUSTED_PROXIES`: the networks of the proxies (`127.0.0.0/8,10.0.0.0/8`) whose
//!   `X-Forwarded-For` names the client of the per-address limit; without it, the peer is.
//!
//! Logs (requests' server errors with their causes, among others) go to standard output from
//! the info level up.
//!
//! `strata-realworld --client <file>` writes the typed TypeScript client and exits.

use std::net::SocketAddr;
use std::time::Duration;

use strata::core::Level;
use strata::prelude::*;
use strata::ratelimit::{Quota, TrustedProxies};
use strata::redis::RedisRateLimitStore;
use strata::server::LocalAddr;
use strata_realworld::auth::Keys;
use strata_realworld::limits::Limits;
use strata_realworld::{App, config, db, routing, typescript_client};

/// A positive whole number from the environment variable `name`, if set.
fn positive(name: &str) -> Result<Option<u32>, String> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(text) => match text.parse::<u32>() {
            Ok(0) | Err(_) => Err(format!("{name}={text:?}: a whole number above 0")),
            Ok(number) => Ok(Some(number)),
        },
    }
}

/// The default [`Limits`] with what the environment changes.
async fn limits() -> Result<Limits, String> {
    let mut limits = Limits::default();
    if let Some(count) = positive("LOGIN_LIMIT_PER_EMAIL")? {
        limits = limits.per_email(Quota::per_minute(count));
    }
    if let Some(count) = positive("LOGIN_LIMIT_PER_ADDRESS")? {
        limits = limits.per_address(Quota::per_minute(count));
    }
    if let Some(count) = positive("HASHES_AT_ONCE")? {
        limits = limits.hashing(count as usize, Duration::from_secs(5));
    }
    if let Ok(text) = std::env::var("TRUSTED_PROXIES") {
        let proxies = TrustedProxies::networks(text.split(',').map(str::trim))
            .map_err(|e| format!("TRUSTED_PROXIES={text:?}: {e}"))?;
        limits = limits.trust(proxies);
    }
    if let Ok(url) = std::env::var("REDIS_URL") {
        let store = RedisRateLimitStore::connect(&url)
            .await
            .map_err(|e| format!("REDIS_URL={url:?}: {e}"))?;
        limits = limits.redis(store);
    }
    Ok(limits)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => {}
        [flag, file] if flag == "--client" => {
            // The routes' description needs no data: an in-memory database, a random key.
            let app = App::new(db::connect("sqlite::memory:").await?, Keys::random());
            typescript_client(&app, "http://127.0.0.1:8095")?.write_file(file)?;
            return Ok(());
        }
        _ => return Err("usage: strata-realworld [--client <file>]".into()),
    }
    let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| {
        let file = std::env::temp_dir().join(format!("conduit-{}.db", std::process::id()));
        format!("sqlite://{}", file.display())
    });
    let keys = match std::env::var("JWT_SECRET") {
        Ok(secret) if !secret.is_empty() => Keys::from_secret(secret.as_bytes()),
        _ => Keys::random(),
    };
    let port = match std::env::var("PORT") {
        Ok(port) => port
            .parse::<u16>()
            .map_err(|e| format!("PORT={port:?}: {e}"))?,
        Err(_) => 8095,
    };
    let limits = limits().await?;
    let db = db::connect(&url)
        .await
        .map_err(|e| format!("DATABASE_URL={:?}: {e}", db::redacted(&url)))?;
    let app = App::new(db, keys).with_limits(limits);
    println!("database: {}", db::redacted(&url));
    let mut config = config(SocketAddr::from(([127, 0, 0, 1], port)));
    // Without a subscriber the framework's log lines (each 500 with its cause) went nowhere.
    config.server.logger = Some(Level::Info.into());
    let server = create_server(&config, &routing(&app)).await?;
    let address = match &server.servers()[0].local_addr {
        LocalAddr::Tcp(address) => address.to_string(),
        LocalAddr::Unix(path) => path.display().to_string(),
    };
    println!("serving the RealWorld API on http://{address}/api");
    server.run().await;
    Ok(())
}
