//! The soak server: Strata in production mode with small limits, so that every kind of request
//! of `strata-bench soak` (successes, 400s, 404s, 413s, uploads) is cheap to send over and over.

use std::net::SocketAddr;
use strata::server::LogColor;
use strata::server::LoggerOptions;
use strata::{Config, Mode, Routing, UploadLimits, UploadedFile};

use garde::Validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::Level;
use strata::prelude::*;

use crate::model::{HelloInput, Order, hello, summarize};

/// The largest JSON body accepted (16 KiB): a larger one is a 413.
pub(crate) const BODY_LIMIT: usize = 16 * 1024;
/// The largest uploaded file accepted (64 KiB): a larger one is a 413.
pub(crate) const FILE_LIMIT: u64 = 64 * 1024;
/// The largest multipart body accepted (128 KiB), so that a file over [`FILE_LIMIT`] is refused
/// by the file limit while it streams, not from `Content-Length`.
pub(crate) const MULTIPART_LIMIT: u64 = 128 * 1024;

/// Input of `POST /v1/upload`: a title and one file.
#[derive(Deserialize, Validate, JsonSchema)]
pub(crate) struct UploadInput {
    #[garde(length(chars, min = 1, max = 80))]
    title: String,
    #[garde(skip)]
    file: UploadedFile,
}

/// Output of `POST /v1/upload`: what arrived.
#[derive(Serialize, Validate, JsonSchema)]
pub(crate) struct UploadOutput {
    #[garde(skip)]
    title: String,
    #[garde(skip)]
    name: String,
    #[garde(skip)]
    size: usize,
    /// The sum of the file's bytes, so that the handler reads every one of them.
    #[garde(skip)]
    checksum: u64,
}

/// `GET /v1/hello`, `POST /v1/orders` and `POST /v1/upload`.
pub(crate) fn routing() -> Routing {
    let factory = default_endpoints_factory();
    let greeting = factory
        .get()
        .handler(async |input: HelloInput| Ok(hello(&input)));
    let orders = factory
        .post()
        .handler(async |order: Order| Ok(summarize(order)));
    let upload = factory.post().handler(async |input: UploadInput| {
        // In memory or on disk (past the spool threshold), read whole.
        let data = input.file.bytes().await.map_err(|error| {
            strata::ApiError::internal(format!("the upload cannot be read: {error}"))
        })?;
        Ok(UploadOutput {
            name: input.file.name().to_owned(),
            size: data.len(),
            checksum: data.iter().map(|&b| u64::from(b)).sum(),
            title: input.title,
        })
    });
    routing! {
        "v1" => {
            "hello" => greeting,
            "orders" => orders,
            "upload" => upload,
        },
    }
}

/// Production mode, no CORS, the default logger at `warn`, uploads on with the small limits above.
pub(crate) fn config(addr: SocketAddr) -> Config {
    create_config()
        .cors(Cors::Disabled)
        .mode(Mode::Production)
        .logger(LoggerOptions::new(Level::Warn).color(LogColor::Never))
        .body_limit(BODY_LIMIT)
        .upload(
            UploadLimits::builder()
                .file_size(FILE_LIMIT)
                .files(1)
                .body_size(MULTIPART_LIMIT),
        )
        .listen(addr)
        .build()
}
