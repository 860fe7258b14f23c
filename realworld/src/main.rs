//! Serves the RealWorld API.
//!
//! - `DATABASE_URL`: the SQLite database (`sqlite://conduit.db`); without it, a new file in the
//!   temporary directory. The schema's migrations are applied at start-up.
//! - `JWT_SECRET`: the secret that signs tokens; without it, a random one (tokens end with the
//!   process).
//! - `PORT`: 8095 unless set.

use std::net::SocketAddr;

use strata::prelude::*;
use strata_realworld::auth::Keys;
use strata_realworld::{App, config, db, routing};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
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
    let pools = db::connect(&url).await?;
    println!("database: {url}");
    let app = App {
        db: pools.reads,
        writes: pools.writes,
        keys,
    };
    let config = config(SocketAddr::from(([127, 0, 0, 1], port)));
    let server = create_server(&config, &routing(&app)).await?;
    println!("serving the RealWorld API on http://127.0.0.1:{port}/api");
    server.run().await;
    Ok(())
}
