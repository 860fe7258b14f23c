//! A large file is streamed a chunk at a time, never held in memory. Alone in its test binary:
//! it reads the process's peak resident memory, which any other test running beside it would
//! raise, and resets that peak just before the download (Linux's `/proc/self/clear_refs`).

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use garde::Validate;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use schemars::JsonSchema;
use serde::Deserialize;
use strata::FileResponse;
use strata::prelude::*;
use tokio::net::TcpStream;

#[path = "common/http.rs"]
mod http_client;
use http_client::{send, serve};

#[path = "common/memory.rs"]
mod memory;
use memory::{peak_rss_kib, reset_peak_rss};

#[derive(Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct FileName {
    name: String,
}

#[tokio::test]
async fn a_large_file_streams_without_being_held_in_memory() {
    const SIZE: usize = 32 * 1024 * 1024;
    let dir = std::env::temp_dir().join(format!("strata-file-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    {
        use std::io::Write;
        let mut file = std::io::BufWriter::new(std::fs::File::create(dir.join("big.bin")).unwrap());
        for i in 0..SIZE {
            file.write_all(&[u8::try_from(i % 251).unwrap()]).unwrap();
        }
        file.flush().unwrap();
    }
    let files = dir.clone();
    let download = default_endpoints_factory()
        .get()
        .handler(move |input: FileName| {
            let path = files.join(input.name);
            async move { FileResponse::open(path).await }
        });
    let routing = routing! { "files" => { ":name" => download } };
    let (server, addr) = serve(&routing, create_config().cors(Cors::Disabled)).await;

    // The body is read a chunk at a time and checked, never collected.
    reset_peak_rss();
    let before = peak_rss_kib();
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = Request::get("/files/big.bin")
        .header("host", "localhost")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-length"], SIZE.to_string());
    let mut body = response.into_body();
    let mut received = 0usize;
    while let Some(frame) = body.frame().await {
        let data = frame.unwrap().into_data().unwrap();
        for (offset, byte) in data.iter().enumerate() {
            assert_eq!(usize::from(*byte), (received + offset) % 251);
        }
        received += data.len();
    }
    assert_eq!(received, SIZE);
    let grown_mib = peak_rss_kib().saturating_sub(before) / 1024;
    eprintln!("peak RSS grew by {grown_mib} MiB while serving a 32 MiB file");
    assert!(
        grown_mib < 16,
        "the file was held in memory: +{grown_mib} MiB"
    );

    // HEAD: the length, no body.
    let (status, headers, bytes) = send(addr, "HEAD", "/files/big.bin", &[], "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-length"], SIZE.to_string());
    assert!(bytes.is_empty());
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}
