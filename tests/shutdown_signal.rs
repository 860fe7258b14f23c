//! SIGTERM stops a running server gracefully, under load: the requests in flight when the
//! signal arrives all complete. Alone in its test binary: it signals the process.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::time::Duration;

use garde::Validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[path = "common/probe.rs"]
mod probe;
use probe::{Started, until};

#[derive(Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Wait {
    ms: u64,
}

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Waited {
    ms: u64,
}

/// How many requests are in flight when the signal arrives.
const IN_FLIGHT: usize = 50;

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_every_request_in_flight_finish() {
    let started = Started::default();
    let handlers = started.clone();
    let wait = default_endpoints_factory()
        .get()
        .handler(move |input: Wait| {
            handlers.mark();
            let handlers = handlers.clone();
            async move {
                // Held until the signal has arrived, then some work more.
                handlers.hold().await;
                tokio::time::sleep(Duration::from_millis(input.ms)).await;
                Ok(Waited { ms: input.ms })
            }
        });
    let config = create_config()
        .cors(Cors::Enabled)
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    let server = create_server(&config, &routing! { "wait" => wait })
        .await
        .unwrap();
    let strata::server::LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    // `run` installs its signal handlers as it is called, before the task starts.
    let running = tokio::spawn(server.run());
    let requests: Vec<_> = (0..IN_FLIGHT)
        .map(|_| {
            tokio::spawn(async move {
                let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
                stream
                    .write_all(b"GET /wait?ms=100 HTTP/1.1\r\nHost: a\r\n\r\n")
                    .await
                    .unwrap();
                let mut answer = Vec::new();
                // The server closes the connection after the answer (it is shutting down).
                let _ =
                    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
                        .await;
                String::from_utf8_lossy(&answer).into_owned()
            })
        })
        .collect();
    // Every request is in the handler when the signal arrives.
    started.reached(IN_FLIGHT).await;
    let status = std::process::Command::new("kill")
        .args(["-TERM", &std::process::id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // The server has the signal: it no longer accepts connections. Only then are the
    // requests let go.
    until("the server stops listening", || {
        std::net::TcpStream::connect(addr).is_err()
    })
    .await;
    started.release();
    let mut completed = 0;
    for request in requests {
        let answer = request.await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "lost: {answer:?}");
        assert!(
            answer.ends_with(r#"{"status":"success","data":{"ms":100}}"#),
            "{answer}"
        );
        completed += 1;
    }
    assert_eq!(completed, IN_FLIGHT);
    tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .unwrap()
        .unwrap();
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "no longer listening"
    );
}
