//! A content-addressed store: an upload is streamed in (`StreamedFile`), hashed (SHA-256) and
//! written to disk as it arrives, never held in memory, and kept under its hash; it is served
//! back with byte ranges (`FileResponse`: `Range`, `If-Range`, 206/416) and an `ETag` that is
//! its hash. The form's other fields (here a label) come before the file and are checked before
//! a byte of it is read.
//!
//! `cargo run --example blobs`, then
//! `curl -F label=notes -F file=@Cargo.toml localhost:8096/blobs` and
//! `curl -r 0-99 localhost:8096/blobs/<id>` (`PORT` sets the port; `STORE` the directory);
//! `/openapi.json` describes the API, and `-- --openapi blobs.json` (`--openapi-3.1` for
//! OpenAPI 3.1) writes it and exits.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use http::HeaderValue;
use http::header::{CACHE_CONTROL, ETAG};
use strata::openapi::{Documentation, DocumentationError, OpenApi, OpenApiVersion};
use strata::prelude::*;
use strata::{Config, FileResponse, Routing, StreamedFile, UploadLimits};
use tokio::io::AsyncWriteExt;

#[strata::model(input)]
pub(crate) struct NewBlob {
    /// What the file is, for people (sent before the file: checked before it is read).
    #[garde(length(min = 1, max = 100))]
    #[schemars(example = &"notes")]
    label: String,
    /// The file, streamed to disk as it arrives.
    #[garde(skip)]
    file: StreamedFile,
}

#[strata::model(output)]
pub(crate) struct Stored {
    /// The SHA-256 of the bytes, in hexadecimal: the blob's name.
    id: String,
    size: u64,
    label: String,
    /// Whether these bytes were new to the store.
    created: bool,
}

#[strata::model(input)]
pub(crate) struct BlobId {
    /// A blob's SHA-256, in lowercase hexadecimal.
    #[garde(pattern(r"^[0-9a-f]{64}$"))]
    #[schemars(example = &"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")]
    id: String,
}

/// Where blobs are kept, and a counter naming the files being written.
#[derive(Clone)]
pub(crate) struct Store {
    dir: Arc<PathBuf>,
    next: Arc<AtomicU64>,
}

impl Store {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self {
            dir: Arc::new(dir),
            next: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Writes `file` to a file of its own as it arrives, hashing it; then gives it its hash for
    /// a name (a rename: a reader never sees half a blob). Whatever ends the upload early (a
    /// limit, the client gone) removes the partial file.
    async fn put(&self, file: &mut StreamedFile) -> Result<(String, u64, bool), ApiError> {
        let partial = self.dir.join(format!(
            ".partial-{}-{}",
            std::process::id(),
            self.next.fetch_add(1, Ordering::Relaxed)
        ));
        let mut guard = Partial(Some(partial.clone()));
        let mut out = tokio::fs::File::create(&partial).await.map_err(internal)?;
        let mut hash = ring::digest::Context::new(&ring::digest::SHA256);
        let mut size = 0_u64;
        while let Some(chunk) = file.chunk().await? {
            hash.update(&chunk);
            size += chunk.len() as u64;
            out.write_all(&chunk).await.map_err(internal)?;
        }
        out.sync_all().await.map_err(internal)?;
        let id = hex(hash.finish().as_ref());
        let target = self.dir.join(&id);
        let created = !tokio::fs::try_exists(&target).await.map_err(internal)?;
        tokio::fs::rename(&partial, &target)
            .await
            .map_err(internal)?;
        guard.0 = None;
        Ok((id, size, created))
    }
}

/// Bytes in lowercase hexadecimal.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut text, byte| {
        let _ = write!(text, "{byte:02x}");
        text
    })
}

/// Removes a partial file unless the upload finished.
struct Partial(Option<PathBuf>);

impl Drop for Partial {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn internal(error: std::io::Error) -> ApiError {
    ApiError::internal(format!("the store: {error}")).with_source(error)
}

/// The routing: `POST /blobs` (a form: `label`, then `file`), `GET /blobs/:id`.
pub(crate) fn blobs_routing(store: Store) -> Routing {
    let factory = default_endpoints_factory().with_state(store);
    let put = factory
        .post()
        .tag("blobs")
        .short_description("Stores a file under its SHA-256")
        .handler(async |mut input: NewBlob, store: Store| {
            let (id, size, created) = store.put(&mut input.file).await?;
            Ok(Stored {
                id,
                size,
                label: input.label,
                created,
            })
        });
    let get = factory
        .get()
        .tag("blobs")
        .short_description("A stored file, whole or a range of it")
        .declared_error(strata::core::DeclaredError::new(
            http::StatusCode::NOT_FOUND,
            "No such blob",
        ))
        .handler(async |input: BlobId, store: Store| {
            let file = FileResponse::open(store.dir.join(&input.id)).await?;
            // The name is the content: it never changes.
            let etag = HeaderValue::try_from(format!("\"{}\"", input.id))
                .map_err(|error| ApiError::internal(error.to_string()))?;
            Ok(file
                .with_content_type(HeaderValue::from_static("application/octet-stream"))
                .header(ETAG, etag)
                .header(
                    CACHE_CONTROL,
                    HeaderValue::from_static("public, max-age=31536000, immutable"),
                ))
        });
    Routing::new()
        .route("post /blobs", put)
        .route("get /blobs/:id", get)
}

/// Uploads of up to 1 GiB, past the 1 MiB threshold never in memory: a streamed file is not
/// spooled, it goes where the handler writes it.
pub(crate) fn blobs_config() -> strata::ConfigBuilder {
    const GIB: u64 = 1024 * 1024 * 1024;
    create_config().cors(Cors::Disabled).upload(
        UploadLimits::builder()
            .file_size(GIB)
            .body_size(GIB + 64 * 1024)
            .build(),
    )
}

/// The API's OpenAPI document.
pub(crate) fn blobs_documentation(
    routing: &Routing,
    config: &Config,
    version: OpenApiVersion,
) -> Result<OpenApi, DocumentationError> {
    Documentation::new(routing, config)
        .openapi_version(version)
        .title("Blobs")
        .version("1.0.0")
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = match std::env::var("PORT") {
        Ok(port) => port
            .parse::<u16>()
            .map_err(|e| format!("PORT={port:?} is not a port: {e}"))?,
        Err(_) => 8096,
    };
    let dir = std::env::var_os("STORE")
        .map_or_else(|| std::env::temp_dir().join("strata-blobs"), PathBuf::from);
    let config = blobs_config().listen(port).build();
    let routing = blobs_routing(Store::new(dir.clone()));
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, file] = args.as_slice() {
        let version = match flag.as_str() {
            "--openapi" => OpenApiVersion::V3_2,
            "--openapi-3.1" => OpenApiVersion::V3_1,
            _ => return Err(format!("unknown option {flag}").into()),
        };
        return Ok(blobs_documentation(&routing, &config, version)?.write_file(file)?);
    }
    std::fs::create_dir_all(&dir)?;
    println!(
        "storing blobs in {} on http://localhost:{port}/blobs",
        dir.display()
    );
    let doc = blobs_documentation(&routing, &config, OpenApiVersion::V3_2)?;
    let routing = routing.route("openapi.json", strata::openapi::openapi_endpoint(&doc));
    create_server(&config, &routing).await?.run().await;
    Ok(())
}
