//! File uploads over a real socket: accepted files with their metadata, the size limit at and
//! one byte over, several files, a missing file, malformed multipart, uploads turned off, `mv`,
//! and a client streaming past the limit getting its 413 without the connection hanging.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use strata::{Mode, Routing, UploadLimits, UploadedFile};

use garde::Validate;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use strata::Server;
use strata::prelude::*;
use strata::server::LocalAddr;
use strata::upload::MultipartForm;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const LIMIT: usize = 1000;

#[derive(Deserialize, Validate, JsonSchema)]
struct Upload {
    #[garde(length(chars, min = 1))]
    title: String,
    #[garde(skip)]
    document: UploadedFile,
    #[garde(skip)]
    #[serde(default)]
    attachments: Vec<UploadedFile>,
    #[garde(skip)]
    save: Option<bool>,
}

#[derive(Serialize, Validate, JsonSchema)]
struct FileInfo {
    #[garde(skip)]
    name: String,
    #[garde(skip)]
    size: usize,
    #[garde(skip)]
    mimetype: String,
    #[garde(skip)]
    text: String,
}

impl FileInfo {
    fn of(file: &UploadedFile) -> Self {
        Self {
            name: file.name().to_owned(),
            size: file.size(),
            mimetype: file.mimetype().to_owned(),
            text: String::from_utf8_lossy(file.data().expect("a small file, in memory"))
                .into_owned(),
        }
    }
}

#[derive(Serialize, Validate, JsonSchema)]
struct Uploaded {
    #[garde(skip)]
    title: String,
    #[garde(skip)]
    document: FileInfo,
    #[garde(skip)]
    attachments: Vec<FileInfo>,
}

fn routing(saved: PathBuf) -> Routing {
    let upload = default_endpoints_factory()
        .post()
        .handler(move |input: Upload| {
            let saved = saved.clone();
            async move {
                if input.save == Some(true) {
                    input.document.mv(saved.join("document")).await?;
                }
                Ok(Uploaded {
                    title: input.title,
                    document: FileInfo::of(&input.document),
                    attachments: input.attachments.iter().map(FileInfo::of).collect(),
                })
            }
        });
    routing! { "upload" => upload }
}

async fn start(uploads: bool, saved: PathBuf) -> (Server, SocketAddr) {
    serve(uploads, &routing(saved)).await
}

async fn serve(uploads: bool, routing: &Routing) -> (Server, SocketAddr) {
    let mut config = create_config()
        .cors(Cors::Disabled)
        .mode(Mode::Development)
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)));
    if uploads {
        config = config.upload(UploadLimits::builder().file_size(LIMIT as u64).files(3));
    }
    let server = create_server(&config.build(), routing).await.unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    (server, addr)
}

async fn post(addr: SocketAddr, content_type: &str, body: Bytes) -> (u16, Value) {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = http::Request::post("/upload")
        .header("host", "localhost")
        .header("content-type", content_type)
        .body(Full::new(body))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap())
}

async fn send(addr: SocketAddr, form: MultipartForm) -> (u16, Value) {
    let content_type = form.content_type();
    post(addr, &content_type, form.into_bytes()).await
}

fn file(name: &str, mimetype: &str, size: usize) -> UploadedFile {
    UploadedFile::new(name, mimetype, vec![b'x'; size])
}

fn message(body: &Value) -> &str {
    body["error"]["message"].as_str().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("strata-upload-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn files_arrive_with_their_metadata_up_to_the_limit() {
    let dir = scratch("accept");
    let (server, addr) = start(true, dir.clone()).await;

    let form = MultipartForm::new().text("title", "Report").file(
        "document",
        UploadedFile::new("r.txt", "text/plain", "hello"),
    );
    let (status, body) = send(addr, form).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"],
        json!({
            "title": "Report",
            "document": {"name": "r.txt", "size": 5, "mimetype": "text/plain", "text": "hello"},
            "attachments": []
        })
    );

    // Exactly at the limit, then one byte over.
    let at_limit = MultipartForm::new()
        .text("title", "Big")
        .file("document", file("a.bin", "", LIMIT));
    let (status, body) = send(addr, at_limit).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["document"]["size"], LIMIT);
    assert_eq!(
        body["data"]["document"]["mimetype"],
        "application/octet-stream"
    );
    let over = MultipartForm::new()
        .text("title", "Big")
        .file("document", file("a.bin", "", LIMIT + 1));
    let (status, body) = send(addr, over).await;
    assert_eq!(status, 413);
    assert_eq!(
        message(&body),
        r#"File "document" exceeds the size limit of 1000 bytes"#
    );

    // Several files: one field holds a list.
    let several = MultipartForm::new()
        .text("title", "Many")
        .file("document", file("d.pdf", "application/pdf", 3))
        .file("attachments", file("a1.png", "image/png", 1))
        .file("attachments", file("a2.png", "image/png", 2));
    let (status, body) = send(addr, several).await;
    assert_eq!(status, 200, "{body}");
    let names: Vec<_> = body["data"]["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["name"].as_str().unwrap(), a["size"].as_u64().unwrap()))
        .collect();
    assert_eq!(names, [("a1.png", 1), ("a2.png", 2)]);
    let too_many = MultipartForm::new()
        .file("document", file("1", "", 1))
        .file("attachments", file("2", "", 1))
        .file("attachments", file("3", "", 1))
        .file("attachments", file("4", "", 1));
    let (status, body) = send(addr, too_many).await;
    assert_eq!(
        (status, message(&body)),
        (413, "Too many files: the limit is 3")
    );

    server.shutdown().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn missing_and_malformed_uploads_are_bad_requests() {
    let dir = scratch("bad");
    let (server, addr) = start(true, dir.clone()).await;

    let (status, body) = send(addr, MultipartForm::new().text("title", "No file")).await;
    assert_eq!(status, 400);
    assert!(message(&body).contains("document"), "{body}");

    // A text part where a file is expected.
    let text = MultipartForm::new()
        .text("title", "Text")
        .text("document", "not a file");
    let (status, body) = send(addr, text).await;
    assert_eq!(status, 400);
    assert!(message(&body).starts_with("document: "), "{body}");

    // Text fields are validated like any input.
    let empty_title = MultipartForm::new()
        .text("title", "")
        .file("document", file("d", "", 1));
    let (status, body) = send(addr, empty_title).await;
    assert_eq!(status, 400);
    assert!(message(&body).starts_with("title: "), "{body}");

    // Truncated: no closing boundary.
    let truncated =
        Bytes::from_static(b"--b\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nx");
    let (status, body) = post(addr, "multipart/form-data; boundary=b", truncated).await;
    assert_eq!(status, 400);
    assert!(
        message(&body).starts_with("Malformed multipart body"),
        "{body}"
    );
    // No boundary at all.
    let (status, body) = post(addr, "multipart/form-data", Bytes::from_static(b"--b--")).await;
    assert_eq!(status, 400);
    assert!(message(&body).contains("boundary"), "{body}");

    server.shutdown().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Fields named in French: declared names that are not ASCII.
#[derive(Deserialize, Validate, JsonSchema)]
struct Captioned {
    #[garde(skip)]
    #[serde(rename = "légende")]
    caption: String,
    #[garde(skip)]
    #[serde(rename = "pièce")]
    piece: UploadedFile,
}

#[derive(Serialize, Validate, JsonSchema)]
struct CaptionedFile {
    #[garde(skip)]
    caption: String,
    #[garde(skip)]
    file: String,
}

#[tokio::test]
async fn part_names_are_utf8_text() {
    let endpoint = default_endpoints_factory()
        .post()
        .handler(async |input: Captioned| {
            Ok(CaptionedFile {
                caption: input.caption,
                file: input.piece.name().to_owned(),
            })
        });
    let (server, addr) = serve(true, &routing! { "upload" => endpoint }).await;
    let expected = json!({ "caption": "Été", "file": "façade.txt" });

    // Declared names match; an undeclared part named `ünïcode` is ignored like any extra field.
    let form = MultipartForm::new()
        .text("ünïcode", "extra")
        .text("légende", "Été")
        .file("pièce", UploadedFile::new("façade.txt", "text/plain", "x"));
    let (status, body) = send(addr, form).await;
    assert_eq!((status, &body["data"]), (200, &expected), "{body}");

    // The same as raw bytes: UTF-8 in `Content-Disposition`, as browsers send it.
    let raw = "--b\r\nContent-Disposition: form-data; name=\"ünïcode\"\r\n\r\n{\"x\": 1}\r\n\
               --b\r\nContent-Disposition: form-data; name=\"légende\"\r\n\r\nÉté\r\n\
               --b\r\nContent-Disposition: form-data; name=\"pièce\"; filename=\"façade.txt\"\r\n\
               Content-Type: text/plain\r\n\r\nx\r\n--b--\r\n";
    let (status, body) = post(addr, "multipart/form-data; boundary=b", Bytes::from(raw)).await;
    assert_eq!((status, &body["data"]), (200, &expected), "{body}");

    // A control character in a part's name cannot travel in its header: a 400 that says so.
    let raw = raw.replacen("ünïcode", "ün\u{4}code", 1);
    let (status, body) = post(addr, "multipart/form-data; boundary=b", Bytes::from(raw)).await;
    assert_eq!(status, 400);
    assert!(
        message(&body).starts_with(
            "Malformed multipart body: a part's headers cannot be read (invalid header value)"
        ),
        "{body}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn uploads_are_refused_when_off() {
    let dir = scratch("off");
    let (server, addr) = start(false, dir.clone()).await;
    let form = MultipartForm::new()
        .text("title", "Report")
        .file("document", file("r.txt", "text/plain", 5));
    let (status, body) = send(addr, form).await;
    assert_eq!(status, 415);
    assert_eq!(
        message(&body),
        "Unsupported Content-Type: multipart/form-data (uploads are not enabled)"
    );
    server.shutdown().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn mv_saves_the_file_and_reports_an_unwritable_target() {
    let dir = scratch("mv");
    let (server, addr) = start(true, dir.clone()).await;
    let form = MultipartForm::new()
        .text("title", "Keep")
        .text("save", "true")
        .file("document", UploadedFile::new("k.txt", "text/plain", "kept"));
    let (status, body) = send(addr, form).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(std::fs::read(dir.join("document")).unwrap(), b"kept");
    server.shutdown().await;

    // A directory that does not exist: a 500 whose detail names the path (development mode).
    let missing = dir.join("missing");
    let (server, addr) = start(true, missing.clone()).await;
    let form = MultipartForm::new()
        .text("title", "Keep")
        .text("save", "true")
        .file("document", UploadedFile::new("k.txt", "text/plain", "kept"));
    let (status, body) = send(addr, form).await;
    assert_eq!(status, 500);
    assert!(
        message(&body).contains(&missing.display().to_string()),
        "{body}"
    );
    server.shutdown().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A client streams a file far past the limit, chunked, without waiting: it gets its 413 while
/// still sending, and the server goes on serving others.
#[tokio::test]
async fn a_client_streaming_past_the_limit_gets_a_413_promptly() {
    let dir = scratch("stream");
    let (server, addr) = start(true, dir.clone()).await;
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let sending = tokio::spawn(async move {
        let head = "POST /upload HTTP/1.1\r\nhost: localhost\r\n\
                    content-type: multipart/form-data; boundary=b\r\n\
                    transfer-encoding: chunked\r\n\r\n";
        writer.write_all(head.as_bytes()).await?;
        let part =
            "--b\r\nContent-Disposition: form-data; name=\"document\"; filename=\"f\"\r\n\r\n";
        writer
            .write_all(format!("{:x}\r\n{part}\r\n", part.len()).as_bytes())
            .await?;
        // Up to 10 MB, far past the 1000-byte limit; the server stops reading long before.
        let chunk = vec![b'x'; 4096];
        for _ in 0..2500 {
            writer.write_all(b"1000\r\n").await?;
            writer.write_all(&chunk).await?;
            writer.write_all(b"\r\n").await?;
        }
        Ok::<_, std::io::Error>(())
    });
    let mut response = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buffer = [0_u8; 1024];
        loop {
            match reader.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => response.extend_from_slice(&buffer[..n]),
            }
            // The JSON envelope ends the response.
            if response.ends_with(b"}}") {
                break;
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no response within 10 s");
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(
        text.contains(r#"File \"document\" exceeds the size limit of 1000 bytes"#),
        "{text}"
    );
    sending.abort();

    // Others are still served.
    let form = MultipartForm::new()
        .text("title", "After")
        .file("document", file("a", "", 1));
    assert_eq!(send(addr, form).await.0, 200);
    server.shutdown().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A large file kept in memory (the spool threshold raised past it) arrives over a socket in
/// pieces, kept as they came: read piece by piece, joined, or moved to disk, it is the file
/// sent. (Past the threshold, files go to disk: `tests/upload_spool.rs`.)
#[tokio::test]
async fn a_large_file_arrives_in_pieces_and_reads_whole() {
    #[derive(Deserialize, Validate, JsonSchema)]
    struct Large {
        #[garde(skip)]
        file: UploadedFile,
    }
    #[derive(Serialize, Validate, JsonSchema)]
    struct Arrived {
        #[garde(skip)]
        pieces: usize,
        #[garde(skip)]
        size: usize,
        /// The pieces, one after another, equal the joined contents.
        #[garde(skip)]
        same: bool,
    }
    let dir = scratch("pieces");
    let saved = dir.join("large");
    let target = saved.clone();
    let large = default_endpoints_factory()
        .post()
        .handler(move |input: Large| {
            let target = target.clone();
            async move {
                let file = input.file;
                let mut concatenated = Vec::new();
                for piece in file.pieces().expect("in memory") {
                    concatenated.extend_from_slice(piece);
                }
                file.mv(&target).await?;
                Ok(Arrived {
                    pieces: file.pieces().map_or(0, <[_]>::len),
                    size: file.size(),
                    same: file
                        .data()
                        .is_some_and(|data| concatenated == data.as_ref()),
                })
            }
        });
    let size: usize = 4 * 1024 * 1024;
    let mut config = create_config()
        .cors(Cors::Disabled)
        .mode(Mode::Development)
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)));
    config = config.upload(
        UploadLimits::builder()
            .file_size(u64::try_from(size).unwrap())
            .files(1)
            .spool_threshold(u64::MAX),
    );
    let server = create_server(&config.build(), &routing! { "upload" => large })
        .await
        .unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("TCP")
    };
    // Bytes that differ along the file: a piece out of order or lost would show.
    let data: Vec<u8> = (0..size)
        .map(|i| u8::try_from((i * 7 + i / 4096) % 256).unwrap())
        .collect();
    let form = MultipartForm::new().file(
        "file",
        UploadedFile::new("large.bin", "application/octet-stream", data.clone()),
    );
    let (status, body) = send(addr, form).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["size"], size);
    assert_eq!(body["data"]["same"], true);
    assert!(
        body["data"]["pieces"].as_u64().unwrap() > 1,
        "kept in pieces: {body}"
    );
    assert!(std::fs::read(&saved).unwrap() == data, "moved whole");
    server.shutdown().await;
    std::fs::remove_dir_all(&dir).unwrap();
}
