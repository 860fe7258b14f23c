//! The servers of `strata-bench uploads`: `POST /v1/upload`, a `multipart/form-data` body with
//! one file part named `file`, answered with the file's size and CRC-32 in the envelope
//! (`{"status":"success","data":{"size":N,"crc32":C}}`). Each server does the same work in each
//! [`Mode`]:
//!
//! - **spooled**: the file goes to a temporary file as it arrives; the handler reads it back
//!   from disk ([`READ_BUFFER`] at a time), counting it, and the file is removed.
//!   - Strata: an `UploadedFile` field with the default spool threshold (1 MiB), read back
//!     with `UploadedFileExt::open`; Strata removes the file when the request ends.
//!   - axum: the `Multipart` extractor, each chunk written to a tokio file in the system's
//!     temporary directory as it arrives, then read back and removed.
//!   - express-zod-api (`ezapi/server.mjs upload`): `ez.upload()` with express-fileupload's
//!     `useTempFiles` in the system's temporary directory, read back with a read stream and
//!     removed.
//! - **streamed**: each chunk is counted and added to the CRC as it arrives, nothing kept.
//!   - Strata: a `StreamedFile` field, read with `chunk()`.
//!   - axum: the `Multipart` extractor, `Field::chunk`.
//!   - hyper: multer by hand over hyper's body.
//!
//! Every server takes files up to [`FILE_LIMIT`] (1 GiB and 1 MiB) in a body up to
//! [`BODY_LIMIT`]. Strata's body budget (256 MiB by default, a quarter per client address) is
//! kept at 256 MiB but given whole to one client address, since every upload comes from
//! 127.0.0.1 (with the default share a fourth concurrent upload from one address could be
//! refused with a 503: the budget working, not what is measured); its disk budget is raised to
//! [`DISK_BUDGET`], so that the connections' concurrent 1 GiB files fit.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use strata::server::LogColor;
use strata::server::LoggerOptions;
use strata::{Config, Mode as StrataMode, Routing, StreamedFile, UploadLimits, UploadedFile};

use bytes::Bytes;
use garde::Validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::Level;
use strata::prelude::*;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::scenario::ServerKind;

/// The largest file accepted: the 1 GiB of the largest measured upload and 1 MiB more.
pub(crate) const FILE_LIMIT: u64 = 1025 * 1024 * 1024;
/// The largest multipart body accepted: the file limit and 1 MiB for the rest.
pub(crate) const BODY_LIMIT: u64 = FILE_LIMIT + 1024 * 1024;
/// Strata's body budget (its default), all of it for one client address.
pub(crate) const BODY_BUDGET: usize = 256 * 1024 * 1024;
/// Strata's disk budget: 16 largest bodies at once (the default, 1 GiB, would refuse a second
/// concurrent 1 GiB upload with a 503).
pub(crate) const DISK_BUDGET: u64 = 16 * BODY_LIMIT;
/// The buffer a spooled file is read back with, in every server (express-zod-api's read
/// stream's `highWaterMark` too).
pub(crate) const READ_BUFFER: usize = 256 * 1024;
/// The path of the endpoint.
pub(crate) const PATH: &str = "/v1/upload";
/// The name of the file part.
pub(crate) const FIELD: &str = "file";

/// What the servers do with the file (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Mode {
    /// Written to a temporary file as it arrives, then read back from disk.
    Spooled,
    /// Counted as it arrives, nothing kept.
    Streamed,
}

impl Mode {
    /// Both, in report order.
    pub(crate) const ALL: [Mode; 2] = [Mode::Spooled, Mode::Streamed];

    /// The name in reports (and on the command line).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Spooled => "spooled",
            Mode::Streamed => "streamed",
        }
    }

    /// The servers that have an upload server in this mode.
    pub(crate) fn servers(self) -> &'static [ServerKind] {
        match self {
            Mode::Spooled => &[
                ServerKind::Strata,
                ServerKind::Axum,
                ServerKind::ExpressZodApi,
            ],
            Mode::Streamed => &[ServerKind::Strata, ServerKind::Axum, ServerKind::Hyper],
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Mode::ALL
            .into_iter()
            .find(|mode| mode.name() == s)
            .ok_or_else(|| format!("unknown upload mode {s:?} (spooled, streamed)"))
    }
}

/// What every server answers: the file's size in bytes and its CRC-32 (IEEE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Validate, JsonSchema)]
pub(crate) struct UploadSummary {
    #[garde(skip)]
    pub(crate) size: u64,
    #[garde(skip)]
    pub(crate) crc32: u32,
}

impl UploadSummary {
    /// The summary of `data`, all at once.
    #[cfg(test)]
    pub(crate) fn of(data: &[u8]) -> Self {
        let mut counter = Counter::default();
        counter.add(data);
        counter.finish()
    }
}

/// Counts a file's bytes and computes its CRC-32 as its chunks arrive.
#[derive(Default)]
pub(crate) struct Counter {
    size: u64,
    crc: crc32fast::Hasher,
}

impl Counter {
    pub(crate) fn add(&mut self, chunk: &[u8]) {
        self.size += chunk.len() as u64;
        self.crc.update(chunk);
    }

    pub(crate) fn finish(self) -> UploadSummary {
        UploadSummary {
            size: self.size,
            crc32: self.crc.finalize(),
        }
    }
}

/// The summary of a file read back from disk, [`READ_BUFFER`] at a time.
async fn read_back(mut file: impl AsyncRead + Unpin) -> std::io::Result<UploadSummary> {
    let mut buffer = vec![0; READ_BUFFER];
    let mut counter = Counter::default();
    loop {
        let read = file.read(&mut buffer).await?;
        if read == 0 {
            return Ok(counter.finish());
        }
        counter.add(&buffer[..read]);
    }
}

/// The envelope's success body of `summary`, as the three servers write it.
pub(crate) fn success_body(summary: UploadSummary) -> String {
    format!(
        r#"{{"status":"success","data":{{"size":{},"crc32":{}}}}}"#,
        summary.size, summary.crc32
    )
}

fn failure_body(message: &str) -> String {
    serde_json::json!({"status": "error", "error": {"message": message}}).to_string()
}

// --- Strata ---

/// Input of Strata's spooled `POST /v1/upload`: one file, on disk past the spool threshold.
#[derive(Deserialize, Validate, JsonSchema)]
pub(crate) struct UploadInput {
    #[garde(skip)]
    file: UploadedFile,
}

/// Input of Strata's streamed `POST /v1/upload`: one file, read as it arrives.
#[derive(Deserialize, Validate, JsonSchema)]
pub(crate) struct StreamInput {
    #[garde(skip)]
    file: StreamedFile,
}

/// Strata's routing of `mode`: `POST /v1/upload`.
pub(crate) fn strata_routing(mode: Mode) -> Routing {
    let upload = match mode {
        Mode::Spooled => default_endpoints_factory()
            .post()
            .handler(async |input: UploadInput| Ok(read_back(input.file.open().await?).await?)),
        Mode::Streamed => {
            default_endpoints_factory()
                .post()
                .handler(async |mut input: StreamInput| {
                    let mut counter = Counter::default();
                    while let Some(chunk) = input.file.chunk().await? {
                        counter.add(&chunk);
                    }
                    Ok(counter.finish())
                })
        }
    };
    routing! { "v1" => { "upload" => upload } }
}

/// Strata's configuration: production, no CORS, the logger at `warn`, uploads on with the limits
/// above and the default spool threshold and directory, the body budget of one client address
/// raised to the whole budget.
pub(crate) fn strata_config(addr: SocketAddr) -> Config {
    let mut config = create_config()
        .cors(Cors::Disabled)
        .mode(StrataMode::Production)
        .logger(LoggerOptions::new(Level::Warn).color(LogColor::Never))
        .upload(
            UploadLimits::builder()
                .file_size(FILE_LIMIT)
                .files(1)
                .body_size(BODY_LIMIT)
                .disk_budget(DISK_BUDGET),
        )
        .listen(addr)
        .build();
    config.pipeline.body_budget =
        Some(strata::stages::parse::BodyBudget::new(BODY_BUDGET).per_client(BODY_BUDGET));
    config
}

// --- axum ---

/// A temporary file of axum's spooled upload: a fresh name, `strata-bench-axum-<pid>-<n>` in
/// the system's temporary directory (never the client's file name), removed when dropped,
/// however the request ends.
struct TemporaryFile(PathBuf);

impl TemporaryFile {
    async fn create() -> std::io::Result<(Self, tokio::fs::File)> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "{}{}",
            axum_temporary_prefix(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        let file = tokio::fs::File::create(&path).await?;
        Ok((Self(path), file))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TemporaryFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The start of the names of this process's temporary files of axum.
pub(crate) fn axum_temporary_prefix() -> String {
    format!("strata-bench-axum-{}-", std::process::id())
}

/// A failure of axum's handler: its status and message.
type AxumFailure = (axum::http::StatusCode, String);

fn multipart_failure(e: &axum::extract::multipart::MultipartError) -> AxumFailure {
    (e.status(), e.body_text())
}

fn io_failure(e: &std::io::Error) -> AxumFailure {
    (axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

/// The file written to a temporary file chunk by chunk, then read back and removed.
async fn axum_spool(
    field: &mut axum::extract::multipart::Field<'_>,
) -> Result<UploadSummary, AxumFailure> {
    let (temporary, mut file) = TemporaryFile::create().await.map_err(|e| io_failure(&e))?;
    while let Some(chunk) = field.chunk().await.map_err(|e| multipart_failure(&e))? {
        file.write_all(&chunk).await.map_err(|e| io_failure(&e))?;
    }
    // tokio writes in the background: flushed, every byte is in the file before it is read.
    file.flush().await.map_err(|e| io_failure(&e))?;
    drop(file);
    let file = tokio::fs::File::open(temporary.path())
        .await
        .map_err(|e| io_failure(&e))?;
    read_back(file).await.map_err(|e| io_failure(&e))
}

/// The file counted chunk by chunk as it arrives.
async fn axum_stream(
    field: &mut axum::extract::multipart::Field<'_>,
) -> Result<UploadSummary, AxumFailure> {
    let mut counter = Counter::default();
    while let Some(chunk) = field.chunk().await.map_err(|e| multipart_failure(&e))? {
        counter.add(&chunk);
    }
    Ok(counter.finish())
}

async fn axum_upload(
    mode: Mode,
    mut multipart: axum::extract::Multipart,
) -> Result<UploadSummary, AxumFailure> {
    let mut summary = None;
    while let Some(mut field) = multipart
        .next_field()
        .await
        .map_err(|e| multipart_failure(&e))?
    {
        if field.name() != Some(FIELD) || field.file_name().is_none() {
            continue;
        }
        summary = Some(match mode {
            Mode::Spooled => axum_spool(&mut field).await?,
            Mode::Streamed => axum_stream(&mut field).await?,
        });
    }
    summary.ok_or_else(|| {
        (
            axum::http::StatusCode::BAD_REQUEST,
            "no file part".to_owned(),
        )
    })
}

/// axum's answer: the envelope, success or failure.
fn axum_answer(result: Result<UploadSummary, AxumFailure>) -> axum::response::Response {
    use axum::response::IntoResponse;
    let (status, body) = match result {
        Ok(summary) => (axum::http::StatusCode::OK, success_body(summary)),
        Err((status, message)) => (status, failure_body(&message)),
    };
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// axum's router of `mode`: `POST /v1/upload` with the `Multipart` extractor.
pub(crate) fn axum_app(mode: Mode) -> axum::Router {
    axum::Router::new()
        .route(
            PATH,
            axum::routing::post(async move |multipart| {
                axum_answer(axum_upload(mode, multipart).await)
            }),
        )
        .layer(axum::extract::DefaultBodyLimit::max(
            usize::try_from(BODY_LIMIT).unwrap_or(usize::MAX),
        ))
}

/// Binds `addr` and serves [`axum_app`] of `mode` on it. Call from a tokio runtime.
pub(crate) async fn spawn_axum(
    addr: SocketAddr,
    mode: Mode,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    use axum::serve::ListenerExt;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let listener = listener.tap_io(|stream| {
        let _ = stream.set_nodelay(true);
    });
    let app = axum_app(mode).into_make_service();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((addr, task))
}

// --- hyper ---

type HyperResponse = http::Response<http_body_util::Full<Bytes>>;

fn hyper_json(status: http::StatusCode, body: String) -> HyperResponse {
    let mut response = http::Response::new(http_body_util::Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

async fn hyper_upload(
    request: http::Request<hyper::body::Incoming>,
) -> Result<HyperResponse, Infallible> {
    use http::StatusCode;
    if request.uri().path() != PATH {
        return Ok(hyper_json(StatusCode::NOT_FOUND, failure_body("Not found")));
    }
    if request.method() != http::Method::POST {
        return Ok(hyper_json(
            StatusCode::METHOD_NOT_ALLOWED,
            failure_body("Method not allowed"),
        ));
    }
    let boundary = request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| multer::parse_boundary(v).ok());
    let Some(boundary) = boundary else {
        return Ok(hyper_json(
            StatusCode::BAD_REQUEST,
            failure_body("not multipart/form-data"),
        ));
    };
    let stream = http_body_util::BodyDataStream::new(request.into_body());
    let constraints =
        multer::Constraints::new().size_limit(multer::SizeLimit::new().whole_stream(BODY_LIMIT));
    let mut multipart = multer::Multipart::with_constraints(stream, boundary, constraints);
    let mut summary = None;
    loop {
        let mut field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) => {
                return Ok(hyper_json(
                    StatusCode::BAD_REQUEST,
                    failure_body(&e.to_string()),
                ));
            }
        };
        if field.name() != Some(FIELD) || field.file_name().is_none() {
            continue;
        }
        let mut counter = Counter::default();
        loop {
            match field.chunk().await {
                Ok(Some(chunk)) => counter.add(&chunk),
                Ok(None) => break,
                Err(e) => {
                    return Ok(hyper_json(
                        StatusCode::BAD_REQUEST,
                        failure_body(&e.to_string()),
                    ));
                }
            }
        }
        summary = Some(counter.finish());
    }
    Ok(match summary {
        Some(summary) => hyper_json(StatusCode::OK, success_body(summary)),
        None => hyper_json(StatusCode::BAD_REQUEST, failure_body("no file part")),
    })
}

/// Binds `addr` and serves the hand-written hyper upload server on it. Call from a tokio runtime.
pub(crate) async fn spawn_hyper(
    addr: SocketAddr,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    use hyper::service::service_fn;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let task = tokio::spawn(async move {
        let builder = auto::Builder::new(TokioExecutor::new());
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let builder = builder.clone();
            tokio::spawn(async move {
                let _ = builder
                    .serve_connection(TokioIo::new(stream), service_fn(hyper_upload))
                    .await;
            });
        }
    });
    Ok((addr, task))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checksum_is_crc32_whatever_the_chunks() {
        // The CRC-32 (IEEE) check value.
        assert_eq!(
            UploadSummary::of(b"123456789"),
            UploadSummary {
                size: 9,
                crc32: 0xCBF4_3926
            }
        );
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let whole = UploadSummary::of(&data);
        for split in [1, 7, 4096, 9_999] {
            let mut counter = Counter::default();
            for chunk in data.chunks(split) {
                counter.add(chunk);
            }
            assert_eq!(counter.finish(), whole, "chunks of {split}");
        }
        assert_eq!(UploadSummary::of(&[]), UploadSummary { size: 0, crc32: 0 });
        assert_eq!(
            success_body(UploadSummary { size: 3, crc32: 7 }),
            r#"{"status":"success","data":{"size":3,"crc32":7}}"#
        );
    }
}
