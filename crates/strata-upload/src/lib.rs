//! File uploads for Strata: `multipart/form-data` bodies read by [`multer`], streaming, within
//! [`UploadLimits`].
//!
//! The parse stage (`strata-parse`) calls [`read_multipart`] when uploads are on
//! (the pipeline's `uploads` setting, `create_config().upload(..)`): the text parts become the
//! body (lenient text values, like a query), the files the `files` input source, which POST
//! merges by default. An input field of type [`UploadedFile`] (or `Vec<UploadedFile>`,
//! `Option<UploadedFile>`) receives them, each at most `file_size` bytes. A file up to the
//! [spool threshold](UploadLimits::spool_threshold) (1 MiB) stays in memory; a larger one is
//! written to a temporary file as it arrives, removed when the request ends
//! ([`UploadLimits`] says where, and the disk budget). [`UploadedFileExt`] reads either:
//! [`bytes`](UploadedFileExt::bytes), [`open`](UploadedFileExt::open),
//! [`mv`](UploadedFileExt::mv).
//!
//! [`MultipartForm`] writes such bodies, for tests and Rust clients.
//!
//! # Example
//!
//! ```
//! use http_body_util::Full;
//! use strata_upload::{MultipartForm, UploadLimits, UploadedFile, boundary, read_multipart};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let form = MultipartForm::new()
//!     .text("caption", "Me")
//!     .file("avatar", UploadedFile::new("me.png", "image/png", vec![0_u8; 512]));
//! let content_type = form.content_type();
//! let body = Full::new(form.into_bytes());
//!
//! let limits = UploadLimits::builder().file_size(512).build();
//! let parts = read_multipart(body, boundary(&content_type).unwrap(), &limits).await.unwrap();
//! let (field, files) = &parts.files[0];
//! assert_eq!((field.as_str(), files[0].name(), files[0].size()), ("avatar", "me.png", 512));
//! assert_eq!(parts.fields[0].0, "caption");
//!
//! // One byte over the file size limit.
//! let form = MultipartForm::new()
//!     .file("avatar", UploadedFile::new("big.png", "image/png", vec![0_u8; 513]));
//! let content_type = form.content_type();
//! let error = read_multipart(Full::new(form.into_bytes()), boundary(&content_type).unwrap(), &limits)
//!     .await
//!     .unwrap_err();
//! assert_eq!(error.status(), 413);
//! assert_eq!(error.message(), r#"File "avatar" exceeds the size limit of 512 bytes"#);
//! # }
//! ```

mod form;
mod limits;
#[cfg(feature = "multipart")]
mod read;
mod save;
// Without `multipart` nothing writes temporary files: the limits keep their settings.
#[cfg_attr(not(feature = "multipart"), allow(dead_code))]
mod spool;

pub use form::MultipartForm;
pub use limits::{DEFAULT_DISK_BUDGET, DEFAULT_SPOOL_THRESHOLD, UploadLimits, UploadLimitsBuilder};
#[cfg(feature = "multipart")]
pub use read::{ReadOptions, boundary, read_multipart, read_multipart_with};
pub use save::{FileReader, MoveError, UploadedFileExt};
use strata_input::TextValue;
pub use strata_input::{StreamedFile, UploadedFile};

/// The parts of a multipart body: text fields (repeated names are lists) and files by field name.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Multipart {
    /// The text parts, in the order their names first appeared.
    pub fields: Vec<(String, TextValue)>,
    /// The file parts, grouped by field name in arrival order.
    pub files: Vec<(String, Vec<UploadedFile>)>,
    /// The field whose file is streamed (see [`ReadOptions::stream_field`]), when the read
    /// stopped at it: its file, in [`files`](Self::files), carries the rest of the body.
    pub streamed: Option<String>,
}

#[cfg(all(test, feature = "multipart"))]
mod tests;
