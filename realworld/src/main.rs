//! Serves the RealWorld API.
//!
//! - `DATABASE_URL`: the SQLite database (`sqlite://conduit.db`); without it, a new file in the
//!   temporary directory. The schema's migrations are applied at start-up.
//! - `JWT_SECRET`: the secret that signs tokens; without it, a random one (tokens end with the
//!   process).
//! - `PORT`: 8095 unless set.
//!
//! `strata-realworld --client <file>` writes the typed TypeScript client and exits.

use std::net::SocketAddr;

use strata::prelude::*;
use strata_realworld::auth::Keys;
use strata_realworld::{App, config, db, routing, typescript_client};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => {}
        [flag, file] if flag == "--client" => {
            // The routes' description needs no data: an in-memory database, a random key.
            let pools = db::connect("sqlite::memory:").await?;
            let app = App {
                db: pools.reads,
                writes: pools.writes,
                keys: Keys::random(),
            };
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
