//! [`RawBody`]: the exact bytes of a request body (express-zod-api's `ez.raw()`).
//!
//! An input type with a field `raw: RawBody` makes its endpoint read the body as it is, of any
//! content type, up to the body limit, instead of parsing JSON or a form: what a webhook
//! receiver needs to check a signature over the bytes. The other fields come from the other
//! sources of the method (path parameters, the query string, headers when configured).
//!
//! ```
//! use serde::Deserialize;
//! use strata_input::raw::RawBody;
//!
//! #[derive(Deserialize, schemars::JsonSchema)]
//! struct Hook {
//!     raw: RawBody,
//!     source: String, // a path parameter or a query value
//! }
//! let schema = schemars::schema_for!(Hook);
//! assert!(strata_input::raw::reads_raw_body(schema.as_value()));
//! ```

use std::fmt;

use bytes::Bytes;
use serde::{Deserialize, Deserializer};

use crate::file::UploadedFile;

/// The input field that receives a raw body.
pub const RAW_FIELD: &str = "raw";

/// The keyword marking [`RawBody`]'s schema, so that endpoints and documents recognise it.
pub const RAW_MARKER: &str = "x-raw-body";

/// The exact bytes of a request body and the content type the client declared.
#[derive(Clone, PartialEq, Eq)]
pub struct RawBody {
    content_type: String,
    data: Bytes,
}

impl RawBody {
    /// A body of `data` declared as `content_type` (empty: `application/octet-stream`).
    pub fn new(content_type: impl Into<String>, data: impl Into<Bytes>) -> Self {
        // Through a file: its empty media type becomes `application/octet-stream` alike.
        let file = UploadedFile::new("", content_type, data);
        let content_type = file.mimetype().to_owned();
        Self {
            content_type,
            data: file.into_data().unwrap_or_default(),
        }
    }

    /// The bytes, as received.
    pub fn data(&self) -> &Bytes {
        &self.data
    }

    /// The bytes, taken out (no copy).
    pub fn into_data(self) -> Bytes {
        self.data
    }

    /// The `Content-Type` the client sent (`application/octet-stream` when none).
    pub fn content_type(&self) -> &str {
        &self.content_type
    }

    /// The size in bytes.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the body has no bytes.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

// The parse stage delivers the body as a nameless file: the input deserializer already knows
// how to hand a file's bytes to a typed input without copying them. A raw body is held in
// memory: a file on disk (a multipart part past the spool threshold) is given back.
impl TryFrom<UploadedFile> for RawBody {
    type Error = UploadedFile;

    fn try_from(file: UploadedFile) -> Result<Self, UploadedFile> {
        let content_type = file.mimetype().to_owned();
        let data = file.into_data()?;
        Ok(Self { content_type, data })
    }
}

impl fmt::Debug for RawBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawBody")
            .field("content_type", &self.content_type)
            .field("len", &self.data.len())
            .finish()
    }
}

/// As a file (see [`capture_files`](crate::capture_files)): a client sends it as the body.
impl serde::Serialize for RawBody {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let file = UploadedFile::new("", self.content_type.clone(), self.data.clone());
        serde::Serialize::serialize(&file, serializer)
    }
}

impl<'de> Deserialize<'de> for RawBody {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let file = UploadedFile::deserialize(deserializer)?;
        // The parse stage reads a raw body into memory; a file on disk (a multipart part past
        // the spool threshold) would have to be read whole here.
        Self::try_from(file).map_err(|_| {
            serde::de::Error::custom(
                "a raw body is held in memory: an uploaded file on disk cannot be one",
            )
        })
    }
}

crate::binary_json_schema!(RawBody, "RawBody", RAW_MARKER => true);

/// Whether an input schema (an object's) has the field [`RAW_FIELD`] of type [`RawBody`].
pub fn reads_raw_body(input_schema: &serde_json::Value) -> bool {
    input_schema
        .get("properties")
        .and_then(|properties| properties.get(RAW_FIELD))
        .and_then(|raw| raw.get(RAW_MARKER))
        .is_some_and(|marker| marker == true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::JsonSchema;

    use crate::{Input, InputValue};

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Hook {
        raw: RawBody,
        id: u32,
    }

    #[test]
    fn a_raw_body_is_decoded_from_the_input_without_copying() {
        let bytes = Bytes::from_static(b"\x00\x01signed");
        let mut input = Input::new();
        input.insert(
            RAW_FIELD,
            InputValue::Files(vec![UploadedFile::new("", "", bytes.clone())]),
        );
        input.insert("id", "7".into());
        let hook = Hook::deserialize(&input).unwrap();
        assert_eq!(hook.raw.data(), &bytes);
        assert_eq!(hook.raw.data().as_ptr(), bytes.as_ptr(), "the same buffer");
        assert_eq!(hook.raw.content_type(), "application/octet-stream");
        assert_eq!(hook.id, 7);
    }

    #[test]
    fn the_marker_is_found_only_on_the_raw_field() {
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Other {
            body: RawBody,
            raw: UploadedFile,
        }
        assert!(reads_raw_body(schemars::schema_for!(Hook).as_value()));
        assert!(!reads_raw_body(schemars::schema_for!(Other).as_value()));
    }
}
