//! The Rust client sends files without holding them: a `StreamedFile` made of any stream of
//! bytes (here generated as it is sent) to a server that reads it as it arrives, and an
//! `UploadedFile` on disk read as it is sent. Alone in its test binary: the first test reads
//! the process's peak resident memory (`VmHWM`, reset just before the upload), which any other
//! test running beside it would raise. The server and the client run in this process.
//!
//! Trusting the measure: `upload_spool_memory.rs` sees the same measure grow by the size of an
//! upload kept in memory; here every byte is checked by the handler as it arrives.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use garde::Validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::client::{Client, ClientError, HttpClient, Operation};
use strata::prelude::*;
use strata::server::LocalAddr;
use strata::{Mode, Routing, Server, StreamedFile, UploadLimits, UploadedFile};

#[path = "common/memory.rs"]
mod memory;
use memory::{peak_rss_kib, reset_peak_rss};

const MIB: u64 = 1024 * 1024;

/// Both tests run in this process: the measured one runs alone.
static ALONE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
/// The generated file is made of blocks this large.
const BLOCK: usize = 64 * 1024;

/// Block `index` of the generated file: its index, then a byte that changes from block to
/// block (a block lost, repeated or out of order shows).
fn block(index: u64) -> Vec<u8> {
    let mut data = vec![u8::try_from(index % 251).unwrap(); BLOCK];
    data[..8].copy_from_slice(&index.to_le_bytes());
    data
}

/// Checks bytes against the generated file as they come.
#[derive(Default)]
struct Checker {
    offset: u64,
    first_wrong: Option<u64>,
}

impl Checker {
    fn check(&mut self, mut read: &[u8]) {
        while !read.is_empty() && self.first_wrong.is_none() {
            let at = usize::try_from(self.offset % BLOCK as u64).unwrap();
            let expected = block(self.offset / BLOCK as u64);
            let run = read.len().min(BLOCK - at);
            if read[..run] != expected[at..at + run] {
                self.first_wrong = Some(self.offset);
            }
            (read, self.offset) = (&read[run..], self.offset + run as u64);
        }
    }
}

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
struct Store {
    #[garde(length(min = 1))]
    title: String,
    #[garde(skip)]
    file: StreamedFile,
}

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
struct Upload {
    #[garde(skip)]
    file: UploadedFile,
}

#[derive(Debug, Serialize, Deserialize, Validate, JsonSchema)]
struct Checked {
    #[garde(skip)]
    title: String,
    #[garde(skip)]
    size: u64,
    /// The offset of the first byte that is not the one sent, if any.
    #[garde(skip)]
    first_wrong: Option<u64>,
}

const STORE: Operation<Store, Checked> = Operation::post("/store");
const UPLOAD: Operation<Upload, Checked> = Operation::post("/upload");

async fn start() -> (Server, SocketAddr) {
    let store =
        default_endpoints_factory()
            .endpoint()
            .implement(&STORE, async |mut input: Store| {
                let mut checker = Checker::default();
                while let Some(chunk) = input.file.chunk().await? {
                    checker.check(&chunk);
                }
                Ok(Checked {
                    title: input.title,
                    size: checker.offset,
                    first_wrong: checker.first_wrong,
                })
            });
    let upload =
        default_endpoints_factory()
            .endpoint()
            .implement(&UPLOAD, async |input: Upload| {
                let mut checker = Checker::default();
                checker.check(&input.file.bytes().await?);
                Ok(Checked {
                    title: input.file.name().to_owned(),
                    size: checker.offset,
                    first_wrong: checker.first_wrong,
                })
            });
    let mut config = create_config()
        .cors(Cors::Disabled)
        .mode(Mode::Development)
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .upload(
            UploadLimits::builder()
                .file_size(1024 * MIB)
                .body_size(1025 * MIB)
                .build(),
        )
        .build();
    // What is measured is memory: a machine made slow by other work must not turn the upload
    // into a 408. The client's timeout bounds the wait.
    config.server.limits.body_read_timeout = None;
    config.server.limits.min_body_rate = None;
    let routing = Routing::new().operation(store).operation(upload);
    let server = create_server(&config, &routing).await.unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    (server, addr)
}

/// The generated file of `size` bytes as a stream, a block made at a time.
fn generated(size: u64) -> StreamedFile {
    let blocks = futures_util::stream::unfold(0_u64, move |sent| async move {
        (sent < size).then(|| {
            let n = (size - sent).min(BLOCK as u64);
            let mut data = block(sent / BLOCK as u64);
            data.truncate(usize::try_from(n).unwrap());
            (Ok::<_, std::io::Error>(Bytes::from(data)), sent + n)
        })
    });
    StreamedFile::new("big.bin", "application/octet-stream", blocks)
}

fn client(addr: SocketAddr) -> HttpClient {
    Client::http(&format!("http://{addr}"))
        .unwrap()
        .timeout(Duration::from_secs(600))
}

#[tokio::test]
async fn a_streamed_file_goes_from_the_client_to_the_handler_without_being_held() {
    let _alone = ALONE.lock().await;
    let (server, addr) = start().await;
    let client = client(addr);
    // Warm: the runtime's threads and the connection's buffers are there before the measure.
    let warm = client
        .call(
            &STORE,
            Store {
                title: "warm".into(),
                file: generated(MIB),
            },
        )
        .await
        .unwrap();
    assert_eq!((warm.size, warm.first_wrong), (MIB, None));
    let size = 1024 * MIB;
    reset_peak_rss();
    let before = peak_rss_kib();
    let checked = client
        .call(
            &STORE,
            Store {
                title: "Big".into(),
                file: generated(size),
            },
        )
        .await
        .unwrap();
    let grown = peak_rss_kib().saturating_sub(before) / 1024;
    eprintln!("peak RSS grew by {grown} MiB while the client streamed 1 GiB to the handler");
    assert_eq!(checked.title, "Big");
    assert_eq!(checked.size, size);
    assert_eq!(checked.first_wrong, None);
    assert!(grown <= 32, "peak RSS grew by {grown} MiB");
    server.shutdown().await;
}

#[tokio::test]
async fn a_file_on_disk_is_read_as_it_is_sent_and_a_missing_one_is_an_input_error() {
    let _alone = ALONE.lock().await;
    let (server, addr) = start().await;
    let client = client(addr);
    let path = std::env::temp_dir().join(format!("strata-client-stream-{}", std::process::id()));
    let size = 8 * MIB + 5;
    let mut data = Vec::new();
    for index in 0..size.div_ceil(BLOCK as u64) {
        data.extend_from_slice(&block(index));
    }
    data.truncate(usize::try_from(size).unwrap());
    std::fs::write(&path, &data).unwrap();
    drop(data);
    let file = UploadedFile::on_disk("disk.bin", "", &path, size, ());
    let checked = client.call(&UPLOAD, Upload { file }).await.unwrap();
    assert_eq!(checked.title, "disk.bin");
    assert_eq!((checked.size, checked.first_wrong), (size, None));
    std::fs::remove_file(&path).unwrap();

    // Gone before it is sent: the call fails, naming the file, and the server answers others.
    let file = UploadedFile::on_disk("gone.bin", "", &path, size, ());
    let error = client.call(&UPLOAD, Upload { file }).await.unwrap_err();
    let ClientError::Input(message) = &error else {
        panic!("{error:?}")
    };
    assert!(
        message.starts_with("the file \"gone.bin\": cannot read it from disk"),
        "{message}"
    );
    let again = client
        .call(
            &STORE,
            Store {
                title: "after".into(),
                file: generated(10),
            },
        )
        .await
        .unwrap();
    assert_eq!(again.size, 10);
    server.shutdown().await;
}
