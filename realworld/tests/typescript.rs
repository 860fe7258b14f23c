//! The generated TypeScript client of the application, kept as a snapshot
//! (`tests/snapshots/realworld.client.ts` of the root package, beside the examples' clients):
//! `.ci/client-checks` compiles it with the strictest settings and runs a user's journey
//! through it against the running application (`tests/client/realworld.test.ts`).

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::path::Path;

use strata_realworld::auth::Keys;
use strata_realworld::{App, db, typescript_client};

#[tokio::test]
async fn the_typescript_client_matches_its_snapshot() {
    let pools = db::connect("sqlite::memory:").await.unwrap();
    let app = App::new(pools, Keys::random());
    let client = typescript_client(&app, "http://127.0.0.1:8095")
        .unwrap()
        .to_string();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/snapshots/realworld.client.ts");
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &client).unwrap();
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_SNAPSHOTS=1 writes it)", path.display()));
    assert!(
        client == expected,
        "realworld.client.ts changed; review the diff of UPDATE_SNAPSHOTS=1 cargo test -p strata-realworld --test typescript"
    );
}
