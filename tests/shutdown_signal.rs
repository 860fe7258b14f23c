//! SIGTERM stops a running server gracefully. Alone in its test binary: it signals the process.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::time::Duration;

use strata::prelude::*;

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_shuts_the_server_down() {
    let config = create_config()
        .cors(true)
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .build();
    let server = create_server(&config, &Routing::new()).await.unwrap();
    let strata::LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    let running = tokio::spawn(server.run());
    // Let `run` install its signal handlers before the signal is sent.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let status = std::process::Command::new("kill")
        .args(["-TERM", &std::process::id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .unwrap()
        .unwrap();
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "no longer listening"
    );
}
