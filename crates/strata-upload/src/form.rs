//! Writing a `multipart/form-data` body: for tests and for Rust clients of a Strata API.

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::{BufMut, Bytes, BytesMut};
use strata_input::UploadedFile;

enum Part {
    Text { name: String, value: String },
    File { name: String, file: UploadedFile },
}

/// A `multipart/form-data` body under construction.
///
/// ```
/// use strata_upload::{MultipartForm, UploadedFile};
///
/// let form = MultipartForm::new()
///     .text("title", "Holidays")
///     .file("photo", UploadedFile::new("beach.jpg", "image/jpeg", &b"\xff\xd8"[..]));
/// let content_type = form.content_type();
/// assert!(content_type.starts_with("multipart/form-data; boundary="));
/// let body = form.into_bytes();
/// assert!(body.windows(8).any(|w| w == b"Holidays"));
/// ```
#[must_use]
pub struct MultipartForm {
    parts: Vec<Part>,
    boundary: String,
}

impl std::fmt::Debug for MultipartForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultipartForm")
            .field("parts", &self.parts.len())
            .field("boundary", &self.boundary)
            .finish()
    }
}

impl Default for MultipartForm {
    fn default() -> Self {
        Self::new()
    }
}

/// Tells boundaries of forms built in one process apart.
static FORMS: AtomicU64 = AtomicU64::new(0);

/// Part names and file names are quoted; these characters would end the quoted string or the
/// header line.
fn quoted(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace(['\r', '\n'], " ")
}

impl MultipartForm {
    /// An empty form.
    pub fn new() -> Self {
        let n = FORMS.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        Self {
            parts: Vec::new(),
            boundary: format!("strata-form-{nanos:08x}{n:08x}"),
        }
    }

    /// Adds a text field.
    pub fn text(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let value = value.into();
        self.avoid_in_boundary(value.as_bytes());
        self.parts.push(Part::Text {
            name: name.into(),
            value,
        });
        self
    }

    /// Adds a file under the field `name`.
    pub fn file(mut self, name: impl Into<String>, file: UploadedFile) -> Self {
        self.avoid_in_boundary(file.data());
        self.parts.push(Part::File {
            name: name.into(),
            file,
        });
        self
    }

    /// A boundary must not occur in the contents: lengthen it until it does not occur in `data`
    /// (a longer boundary cannot occur where its prefix did not, so earlier parts stay safe).
    fn avoid_in_boundary(&mut self, data: &[u8]) {
        while data
            .windows(self.boundary.len())
            .any(|w| w == self.boundary.as_bytes())
        {
            self.boundary.push('x');
        }
    }

    /// The `Content-Type` header value to send with [`into_bytes`](Self::into_bytes).
    pub fn content_type(&self) -> String {
        format!("multipart/form-data; boundary={}", self.boundary)
    }

    /// The body.
    pub fn into_bytes(self) -> Bytes {
        let boundary = self.boundary;
        let mut out = BytesMut::new();
        for part in &self.parts {
            out.put_slice(b"--");
            out.put_slice(boundary.as_bytes());
            out.put_slice(b"\r\n");
            match part {
                Part::Text { name, value } => {
                    let header = format!(
                        "Content-Disposition: form-data; name=\"{}\"\r\n\r\n",
                        quoted(name)
                    );
                    out.put_slice(header.as_bytes());
                    out.put_slice(value.as_bytes());
                }
                Part::File { name, file } => {
                    let header = format!(
                        "Content-Disposition: form-data; name=\"{}\"; filename=\"{}\"\r\n\
                         Content-Type: {}\r\n\r\n",
                        quoted(name),
                        quoted(file.name()),
                        file.mimetype().replace(['\r', '\n'], " ")
                    );
                    out.put_slice(header.as_bytes());
                    out.put_slice(file.data());
                }
            }
            out.put_slice(b"\r\n");
        }
        out.put_slice(b"--");
        out.put_slice(boundary.as_bytes());
        out.put_slice(b"--\r\n");
        out.freeze()
    }
}
