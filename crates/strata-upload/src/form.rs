//! Writing a `multipart/form-data` body: for tests and for Rust clients of a Strata API.

use bytes::{BufMut, Bytes, BytesMut};
use strata_input::UploadedFile;
use strata_input::multipart_writer::{Boundary, part_header_lossy};

enum Part {
    Text { name: String, value: String },
    File { name: String, file: UploadedFile },
}

/// The first `size` bytes of the file at `path`.
fn read_prefix(path: &std::path::Path, size: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut data = Vec::new();
    std::fs::File::open(path)?
        .take(size)
        .read_to_end(&mut data)?;
    Ok(data)
}

/// A `multipart/form-data` body under construction.
///
/// Part headers are written as the typed client writes them
/// (`strata_input::multipart_writer`), so that the server reads back each name, file name and
/// media type as sent: UTF-8 text, `"` escaped. What a header line cannot carry is replaced, as
/// the builder cannot fail: control characters (tab aside) and a backslash ending a name become
/// spaces, the character before `filename` in a part name `_`, and a media type that is not
/// one is left out (the server reads `application/octet-stream`). The file's bytes are never
/// changed.
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
    boundary: Boundary,
}

impl std::fmt::Debug for MultipartForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultipartForm")
            .field("parts", &self.parts.len())
            .field("boundary", &self.boundary.as_str())
            .finish()
    }
}

impl Default for MultipartForm {
    fn default() -> Self {
        Self::new()
    }
}

impl MultipartForm {
    /// An empty form.
    pub fn new() -> Self {
        Self {
            parts: Vec::new(),
            boundary: Boundary::new(),
        }
    }

    /// Adds a text field.
    pub fn text(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let value = value.into();
        self.boundary.avoid(value.as_bytes());
        self.parts.push(Part::Text {
            name: name.into(),
            value,
        });
        self
    }

    /// Adds a file under the field `name`. The form is built in memory: a file on disk (an
    /// upload past the spool threshold) is read into it here, blocking.
    ///
    /// # Panics
    ///
    /// When a file on disk cannot be read, naming it.
    pub fn file(mut self, name: impl Into<String>, file: UploadedFile) -> Self {
        let file = match file.path() {
            Some(path) => {
                let data = read_prefix(path, file.len()).unwrap_or_else(|error| {
                    panic!(
                        "cannot read the file {} of {:?}: {error}",
                        path.display(),
                        file.name()
                    )
                });
                UploadedFile::new(file.name(), file.mimetype(), data)
            }
            None => file,
        };
        self.boundary
            .avoid(file.data().map_or(&[][..], |data| &data[..]));
        self.parts.push(Part::File {
            name: name.into(),
            file,
        });
        self
    }

    /// The `Content-Type` header value to send with [`into_bytes`](Self::into_bytes).
    pub fn content_type(&self) -> String {
        format!("multipart/form-data; boundary={}", self.boundary)
    }

    /// The body.
    pub fn into_bytes(self) -> Bytes {
        let boundary = self.boundary.as_str();
        let mut out = BytesMut::new();
        for part in &self.parts {
            out.put_slice(b"--");
            out.put_slice(boundary.as_bytes());
            out.put_slice(b"\r\n");
            match part {
                Part::Text { name, value } => {
                    out.put_slice(part_header_lossy(name, None).as_bytes());
                    out.put_slice(value.as_bytes());
                }
                Part::File { name, file } => {
                    out.put_slice(part_header_lossy(name, Some(file)).as_bytes());
                    out.put_slice(file.data().map_or(&[][..], |data| &data[..]));
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
