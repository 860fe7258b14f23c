//! Responses beyond JSON: a file from disk (`FileResponse`: streamed in pieces, with its type
//! and length, HEAD answered) and a report built as it is sent (`StreamResponse`: a CSV, one
//! line per piece). Errors before the first byte are the usual JSON envelopes.
//!
//! `cargo run --example downloads`, then `curl -i localhost:8094/files/readme.txt` or
//! `curl localhost:8094/report?rows=5` (`PORT` sets the port); `/openapi.json` describes the
//! API, and `-- --openapi downloads.json` (`--openapi-3.1` for OpenAPI 3.1) writes it and exits.

use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll};
use strata::{Config, FileResponse, Routing};

use bytes::Bytes;
use http::HeaderValue;
use strata::StreamResponse;
use strata::openapi::{Documentation, DocumentationError, OpenApi, OpenApiVersion};
use strata::prelude::*;

#[strata::model(input)]
pub(crate) struct FileName {
    /// A file name in the served directory (no path).
    #[garde(pattern(r"^[A-Za-z0-9_-][A-Za-z0-9._-]*$"), length(max = 100))]
    #[schemars(example = &"readme.txt")]
    name: String,
}

#[strata::model(input)]
pub(crate) struct ReportInput {
    /// How many rows.
    #[garde(range(min = 1, max = 100_000))]
    rows: u32,
}

/// A CSV report, one line per chunk, computed as the client reads.
struct Report {
    next: u32,
    rows: u32,
}

impl futures_core::Stream for Report {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let row = self.next;
        if row > self.rows {
            return Poll::Ready(None);
        }
        self.next += 1;
        let line = if row == 0 {
            "row,square\n".to_owned()
        } else {
            format!("{row},{}\n", u64::from(row) * u64::from(row))
        };
        Poll::Ready(Some(Ok(Bytes::from(line))))
    }
}

/// The routing: `GET /files/:name` from `dir`, `GET /report?rows=N`.
pub(crate) fn downloads_routing(dir: PathBuf) -> Routing {
    let factory = default_endpoints_factory().with_state(std::sync::Arc::new(dir));
    let file = factory
        .get()
        .tag("files")
        .short_description("Downloads a file")
        .declared_error(strata::core::DeclaredError::new(
            http::StatusCode::NOT_FOUND,
            "No such file",
        ))
        .handler(async |input: FileName, dir: std::sync::Arc<PathBuf>| {
            // A missing file is a 404 envelope, before any byte of a body.
            let file = FileResponse::open(dir.join(&input.name)).await?;
            Ok(file.attachment(&input.name))
        });
    let report = factory
        .get()
        .tag("files")
        .short_description("A CSV report, streamed")
        .success_media_type("text/csv")
        .handler(async |input: ReportInput| {
            let csv = HeaderValue::from_static("text/csv; charset=utf-8");
            Ok(StreamResponse::new(
                csv,
                Report {
                    next: 0,
                    rows: input.rows,
                },
            ))
        });
    routing! { "files" => { ":name" => file }, "report" => report }
}

/// The API's OpenAPI document.
pub(crate) fn downloads_documentation(
    routing: &Routing,
    config: &Config,
    version: OpenApiVersion,
) -> Result<OpenApi, DocumentationError> {
    Documentation::new(routing, config)
        .openapi_version(version)
        .title("Downloads")
        .version("1.0.0")
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = match std::env::var("PORT") {
        Ok(port) => port
            .parse::<u16>()
            .map_err(|e| format!("PORT={port:?} is not a port: {e}"))?,
        Err(_) => 8094,
    };
    let dir = std::env::temp_dir().join("strata-downloads");
    let config = create_config().cors(Cors::Disabled).listen(port).build();
    let routing = downloads_routing(dir.clone());
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, file] = args.as_slice() {
        let version = match flag.as_str() {
            "--openapi" => OpenApiVersion::V3_2,
            "--openapi-3.1" => OpenApiVersion::V3_1,
            _ => return Err(format!("unknown option {flag}").into()),
        };
        return Ok(downloads_documentation(&routing, &config, version)?.write_file(file)?);
    }
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("readme.txt"),
        "Files are streamed, a piece at a time.\n",
    )?;
    println!(
        "serving {} on http://localhost:{port}/files/",
        dir.display()
    );
    let doc = downloads_documentation(&routing, &config, OpenApiVersion::V3_2)?;
    let routing = routing.route("openapi.json", strata::openapi::openapi_endpoint(&doc));
    create_server(&config, &routing).await?.run().await;
    Ok(())
}
