//! The servers of `strata-bench uploads`: `POST /v1/upload`, a `multipart/form-data` body with
//! one file part named `file`, answered with the file's size and CRC-32 in the envelope
//! (`{"status":"success","data":{"size":N,"crc32":C}}`).
//!
//! - **Strata**: an endpoint whose input has an `UploadedFile` field, uploads on with limits
//!   that allow the file ([`FILE_LIMIT`], one file, [`BODY_LIMIT`]). Strata reads the parts
//!   with multer as they stream but keeps each file in memory (never on disk), in the pieces
//!   it arrived in: the handler sums them, piece by piece, once the file is whole. Its body budget (256 MiB by default, a quarter per client
//!   address) is kept at 256 MiB but given whole to one client address, since every upload
//!   comes from 127.0.0.1: with the default share a fourth concurrent 32 MiB upload from one
//!   address would be refused with a 503, which is the budget working, not what is measured.
//! - **axum**: the `Multipart` extractor (multer), each chunk of the file counted and added to
//!   the CRC as it arrives, nothing kept; `DefaultBodyLimit` raised to [`BODY_LIMIT`].
//! - **hyper**: multer by hand over hyper's body, the same streaming count.

use std::convert::Infallible;
use std::net::SocketAddr;
use strata::server::LogColor;
use strata::server::LoggerOptions;
use strata::{Config, Mode, Routing, UploadLimits, UploadedFile};

use bytes::Bytes;
use garde::Validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::Level;
use strata::prelude::*;

/// The largest file accepted: the 32 MiB of the measured upload and 1 MiB more.
pub(crate) const FILE_LIMIT: u64 = 33 * 1024 * 1024;
/// The largest multipart body accepted: the file limit and 1 MiB for the rest.
pub(crate) const BODY_LIMIT: u64 = FILE_LIMIT + 1024 * 1024;
/// Strata's body budget (its default), all of it for one client address.
pub(crate) const BODY_BUDGET: usize = 256 * 1024 * 1024;
/// The path of the endpoint.
pub(crate) const PATH: &str = "/v1/upload";
/// The name of the file part.
pub(crate) const FIELD: &str = "file";

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

/// Input of Strata's `POST /v1/upload`: one file.
#[derive(Deserialize, Validate, JsonSchema)]
pub(crate) struct UploadInput {
    #[garde(skip)]
    file: UploadedFile,
}

/// Strata's routing: `POST /v1/upload`.
pub(crate) fn strata_routing() -> Routing {
    let upload = default_endpoints_factory()
        .post()
        .handler(async |input: UploadInput| {
            // Piece by piece, as the file arrived: a large file is not joined into one buffer.
            let mut counter = Counter::default();
            // (The spool threshold is off here: every file is in memory.)
            for piece in input.file.pieces().unwrap_or_default() {
                counter.add(piece);
            }
            Ok(counter.finish())
        });
    routing! { "v1" => { "upload" => upload } }
}

/// Strata's configuration: production, no CORS, the logger at `warn`, uploads on with the limits
/// above, the body budget of one client address raised to the whole budget.
pub(crate) fn strata_config(addr: SocketAddr) -> Config {
    let mut config = create_config()
        .cors(Cors::Disabled)
        .mode(Mode::Production)
        .logger(LoggerOptions::new(Level::Warn).color(LogColor::Never))
        .upload(
            UploadLimits::builder()
                .file_size(FILE_LIMIT)
                .files(1)
                .body_size(BODY_LIMIT)
                // In memory, as this benchmark has measured so far (the handler reads the
                // pieces); spooling to disk is for the uploads benchmark of issue 51 to measure.
                .spool_threshold(u64::MAX),
        )
        .listen(addr)
        .build();
    config.pipeline.body_budget =
        Some(strata::stages::parse::BodyBudget::new(BODY_BUDGET).per_client(BODY_BUDGET));
    config
}

// --- axum ---

async fn axum_upload(multipart: axum::extract::Multipart) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    let json = |status: StatusCode, body: String| {
        (
            status,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response()
    };
    let mut multipart = multipart;
    let mut summary = None;
    loop {
        let mut field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) => return json(e.status(), failure_body(&e.body_text())),
        };
        if field.name() != Some(FIELD) || field.file_name().is_none() {
            continue;
        }
        let mut counter = Counter::default();
        loop {
            match field.chunk().await {
                Ok(Some(chunk)) => counter.add(&chunk),
                Ok(None) => break,
                Err(e) => return json(e.status(), failure_body(&e.body_text())),
            }
        }
        summary = Some(counter.finish());
    }
    match summary {
        Some(summary) => json(StatusCode::OK, success_body(summary)),
        None => json(StatusCode::BAD_REQUEST, failure_body("no file part")),
    }
}

/// axum's router: `POST /v1/upload` with the `Multipart` extractor.
pub(crate) fn axum_app() -> axum::Router {
    axum::Router::new()
        .route(PATH, axum::routing::post(axum_upload))
        .layer(axum::extract::DefaultBodyLimit::max(
            usize::try_from(BODY_LIMIT).unwrap_or(usize::MAX),
        ))
}

/// Binds `addr` and serves [`axum_app`] on it. Call from a tokio runtime.
pub(crate) async fn spawn_axum(
    addr: SocketAddr,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    use axum::serve::ListenerExt;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let listener = listener.tap_io(|stream| {
        let _ = stream.set_nodelay(true);
    });
    let app = axum_app().into_make_service();
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
