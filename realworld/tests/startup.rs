//! The binary refuses a `DATABASE_URL` it cannot use at start-up, saying why and naming the
//! variable, without the URL's password.

use std::process::Command;

/// The binary's exit status and standard error with `DATABASE_URL=url`.
fn start_with(url: &str) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_strata-realworld"))
        .env("DATABASE_URL", url)
        .env("PORT", "0")
        .output()
        .expect("the binary runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_database_url_of_another_engine_is_refused_naming_the_two_forms() {
    let (success, stderr) = start_with("mysql://root:hunter2@127.0.0.1/conduit");
    assert!(!success);
    assert!(stderr.contains("DATABASE_URL"), "{stderr}");
    assert!(
        stderr.contains("starts with sqlite: or postgres://"),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

#[test]
fn an_unreachable_postgresql_is_refused_with_the_reason() {
    // A port nothing listens on: bound, then freed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let (success, stderr) = start_with(&format!(
        "postgres://conduit:hunter2@127.0.0.1:{port}/conduit"
    ));
    assert!(!success);
    assert!(stderr.contains("DATABASE_URL"), "{stderr}");
    assert!(stderr.contains("Connection refused"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
}
