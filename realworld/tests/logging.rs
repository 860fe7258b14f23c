//! The application's binary logs each 500 with its cause and the request's id (issue 49: a
//! deleted user's token gave 500s that were logged nowhere, the binary having no log
//! subscriber). Runs the binary on a free port, breaks its database under it, and reads its
//! standard output.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The server process, ended (by its id) when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn a_server_error_is_logged_at_error_level_with_its_cause_and_request_id() {
    let dir = std::env::temp_dir().join(format!("strata-realworld-logging-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}", dir.join("conduit.db").display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata-realworld"))
        .env("DATABASE_URL", &url)
        .env("PORT", "0")
        .env("JWT_SECRET", "logging test")
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Its lines, read on a thread of their own; a deadline on each wait, so that a server
    // that never says what is awaited fails the test instead of hanging it.
    let (lines, received) = mpsc::channel();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let _server = Server(child);
    let wait_for = |what: &dyn Fn(&str) -> bool, seen: &mut Vec<String>| -> String {
        loop {
            let line = received
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("not in the server's output: {seen:#?}"));
            seen.push(line.clone());
            if what(&line) {
                return line;
            }
        }
    };
    let mut seen = Vec::new();
    let serving = wait_for(
        &|line| line.starts_with("serving the RealWorld API on "),
        &mut seen,
    );
    let base = serving
        .trim_start_matches("serving the RealWorld API on ")
        .to_owned();

    // The table of tags dropped under the running server: listing them fails inside.
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    sqlx::query("DROP TABLE article_tags")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("DROP TABLE tags").execute(&pool).await.unwrap();
    let response = reqwest::Client::new()
        .get(format!("{base}/tags"))
        .header("x-request-id", "logging-test-1")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 500);
    let body = response.text().await.unwrap();
    assert_eq!(
        body, r#"{"errors":{"body":["Internal Server Error"]}}"#,
        "no cause for the client"
    );

    let line = wait_for(&|line| line.contains("logging-test-1"), &mut seen);
    assert!(line.contains("ERROR"), "{line}");
    assert!(line.contains("GET /api/tags: 500"), "{line}");
    assert!(line.contains("no such table"), "the cause: {line}");
    let _ = std::fs::remove_dir_all(&dir);
}
