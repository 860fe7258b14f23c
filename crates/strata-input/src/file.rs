//! Uploaded files (spec section 2.5), as input values.
//!
//! [`UploadedFile`] is the type of an input field that holds a file: declare it in an endpoint's
//! input type (`avatar: UploadedFile`, `attachments: Vec<UploadedFile>`,
//! `cover: Option<UploadedFile>`). The multipart reader (the `strata-upload` crate, used by the
//! parse stage when the pipeline's `uploads` are set) puts the files of a request
//! into the input; decoding hands them to the typed input without copying their bytes.
//!
//! Files reach fields of the input type itself (and of `Option`s and lists); through
//! `#[serde(flatten)]` or an untagged or internally tagged enum, serde buffers values in its own
//! form and the file is lost ("expected an uploaded file"): declare file fields directly.
//!
//! ```
//! use serde::Deserialize;
//! use strata_input::UploadedFile;
//! use strata_input::{Input, InputValue};
//!
//! #[derive(Deserialize)]
//! struct Avatar {
//!     user: u32,
//!     avatar: UploadedFile,
//! }
//!
//! let mut input = Input::new();
//! input.insert("user", "7".into());
//! let file = UploadedFile::new("me.png", "image/png", &b"\x89PNG"[..]);
//! input.insert("avatar", InputValue::Files(vec![file]));
//!
//! let avatar = Avatar::deserialize(&input).unwrap();
//! assert_eq!(avatar.user, 7);
//! assert_eq!(avatar.avatar.name(), "me.png");
//! assert_eq!(avatar.avatar.size(), 4);
//! ```

use std::cell::RefCell;
use std::fmt;

use bytes::Bytes;
use serde::de::{self, Deserialize, Deserializer, Visitor};

/// The media type of a file part that declares none.
const DEFAULT_MIMETYPE: &str = "application/octet-stream";

/// A file uploaded in a `multipart/form-data` request, held in memory.
///
/// Nothing is written to disk unless it is moved there (`strata_upload::UploadedFileExt::mv`).
#[derive(Clone, PartialEq, Eq)]
pub struct UploadedFile {
    name: String,
    mimetype: String,
    data: Bytes,
}

impl UploadedFile {
    /// A file named `name` (the client's file name) of media type `mimetype`; an empty media type
    /// becomes `application/octet-stream`.
    pub fn new(
        name: impl Into<String>,
        mimetype: impl Into<String>,
        data: impl Into<Bytes>,
    ) -> Self {
        let mut mimetype = mimetype.into();
        if mimetype.is_empty() {
            DEFAULT_MIMETYPE.clone_into(&mut mimetype);
        }
        Self {
            name: name.into(),
            mimetype,
            data: data.into(),
        }
    }

    /// The file name the client gave.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The contents.
    pub fn data(&self) -> &Bytes {
        &self.data
    }

    /// The contents, taken out (no copy).
    pub fn into_data(self) -> Bytes {
        self.data
    }

    /// The size in bytes.
    pub fn size(&self) -> usize {
        self.data.len()
    }

    /// The media type the client declared for the part (`application/octet-stream` when none).
    pub fn mimetype(&self) -> &str {
        &self.mimetype
    }
}

impl fmt::Debug for UploadedFile {
    // The contents can be megabytes: show what identifies the file.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UploadedFile")
            .field("name", &self.name)
            .field("mimetype", &self.mimetype)
            .field("size", &self.data.len())
            .finish_non_exhaustive()
    }
}

/// The name under which the input deserializer recognizes a request for an [`UploadedFile`].
pub(crate) const FILE_TOKEN: &str = "$strata::private::UploadedFile";

thread_local! {
    // Serde's data model has no way to pass a value of an arbitrary type from a deserializer to a
    // visitor. The input deserializer parks a (cheaply cloned) file here right before calling the
    // file visitor, which takes it at once, on the same thread.
    static HANDOFF: RefCell<Option<UploadedFile>> = const { RefCell::new(None) };
}

/// Hands `file` to `visitor` if it is [`UploadedFile`]'s visitor (the only one asking for
/// [`FILE_TOKEN`]); any file left unclaimed is dropped afterwards.
pub(crate) fn hand_over<'de, V, E>(file: &UploadedFile, visitor: V) -> Result<V::Value, E>
where
    V: Visitor<'de>,
    E: de::Error,
{
    /// Empties the slot however the visit ends, a panic included.
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            HANDOFF.with(|slot| slot.borrow_mut().take());
        }
    }
    HANDOFF.with(|slot| *slot.borrow_mut() = Some(file.clone()));
    let _clear = Clear;
    visitor.visit_newtype_struct(de::value::UnitDeserializer::<E>::new())
}

struct FileVisitor;

impl<'de> Visitor<'de> for FileVisitor {
    type Value = UploadedFile;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an uploaded file (a multipart/form-data file part)")
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        _deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        match HANDOFF.with(|slot| slot.borrow_mut().take()) {
            Some(file) => Ok(file),
            // Another deserializer (a JSON body, a text field) reached this visitor.
            None => Err(de::Error::invalid_type(
                de::Unexpected::Other("a value that is not a file"),
                &self,
            )),
        }
    }
}

impl<'de> Deserialize<'de> for UploadedFile {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_newtype_struct(FILE_TOKEN, FileVisitor)
    }
}

/// The key of the one-entry object a file serializes as inside [`capture_files`]: its index in
/// the captured files.
pub const FILE_PLACEHOLDER: &str = "$strata:file";

thread_local! {
    /// The files serialized so far by [`capture_files`] on this thread (`None` outside it). The
    /// bytes of a file cannot travel through a serde data model that has no bytes type of its
    /// own (`serde_json::Value`), so they leave beside it, as deserialization's hand-off brings
    /// them in.
    static CAPTURED: RefCell<Option<Vec<UploadedFile>>> = const { RefCell::new(None) };
}

/// Runs `serialize`, a serialization of an input (to a `serde_json::Value`, say), with its files
/// captured: each [`UploadedFile`] (and [`RawBody`](crate::RawBody)) serializes as
/// `{"$strata:file": index}` and is returned at that index, bytes shared, not copied. A client
/// then sends them as the parts of a form (or as the body itself). Outside it, a file
/// serializes as what it is, without its bytes: `{"name", "mimetype", "size"}`.
///
/// ```
/// use strata_input::{UploadedFile, capture_files};
///
/// #[derive(serde::Serialize)]
/// struct Cover {
///     id: u32,
///     cover: UploadedFile,
/// }
/// let cover = Cover { id: 7, cover: UploadedFile::new("c.png", "image/png", &b"png"[..]) };
/// let (value, files) = capture_files(|| serde_json::to_value(&cover));
/// assert_eq!(value.unwrap(), serde_json::json!({"id": 7, "cover": {"$strata:file": 0}}));
/// assert_eq!(files[0].name(), "c.png");
/// assert_eq!(
///     serde_json::to_value(&cover).unwrap()["cover"],
///     serde_json::json!({"name": "c.png", "mimetype": "image/png", "size": 3})
/// );
/// ```
pub fn capture_files<R>(serialize: impl FnOnce() -> R) -> (R, Vec<UploadedFile>) {
    let outer = CAPTURED.with(|slot| slot.borrow_mut().replace(Vec::new()));
    let result = serialize();
    let files = CAPTURED.with(|slot| std::mem::replace(&mut *slot.borrow_mut(), outer));
    (result, files.unwrap_or_default())
}

impl serde::Serialize for UploadedFile {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeStruct};
        let index = CAPTURED.with(|slot| {
            slot.borrow_mut().as_mut().map(|files| {
                files.push(self.clone());
                files.len() - 1
            })
        });
        if let Some(index) = index {
            let mut map = serializer.serialize_map(Some(1))?;
            map.serialize_entry(FILE_PLACEHOLDER, &index)?;
            return map.end();
        }
        let mut file = serializer.serialize_struct("UploadedFile", 3)?;
        file.serialize_field("name", &self.name)?;
        file.serialize_field("mimetype", &self.mimetype)?;
        file.serialize_field("size", &self.data.len())?;
        file.end()
    }
}

crate::binary_json_schema!(UploadedFile, "UploadedFile");

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;
    use crate::{Input, InputValue};

    #[test]
    fn a_json_value_is_not_a_file() {
        let error = serde_json::from_str::<UploadedFile>(r#""x""#).unwrap_err();
        assert!(
            error.to_string().contains("expected an uploaded file"),
            "{error}"
        );
    }

    #[test]
    fn a_text_field_is_not_a_file() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Form {
            avatar: UploadedFile,
        }
        let mut input = Input::new();
        input.insert("avatar", "just text".into());
        let error = Form::deserialize(&input).unwrap_err();
        assert!(
            error.message().contains("expected an uploaded file"),
            "{error}"
        );
    }

    #[test]
    fn files_fill_lists_and_options() {
        #[derive(Debug, Deserialize)]
        struct Form {
            many: Vec<UploadedFile>,
            one_as_list: Vec<UploadedFile>,
            maybe: Option<UploadedFile>,
            absent: Option<UploadedFile>,
        }
        let a = UploadedFile::new("a.txt", "text/plain", &b"a"[..]);
        let b = UploadedFile::new("b.bin", "", &b"bb"[..]);
        let mut input = Input::new();
        input.insert("many", InputValue::Files(vec![a.clone(), b.clone()]));
        input.insert("one_as_list", InputValue::Files(vec![a.clone()]));
        input.insert("maybe", InputValue::Files(vec![b.clone()]));
        let form = Form::deserialize(&input).unwrap();
        assert_eq!(form.many, [a.clone(), b.clone()]);
        assert_eq!(form.one_as_list, [a]);
        assert_eq!(
            form.maybe.as_ref().map(UploadedFile::mimetype),
            Some(DEFAULT_MIMETYPE)
        );
        assert!(form.absent.is_none());
        // The bytes are shared, not copied.
        assert_eq!(form.maybe.unwrap().data().as_ptr(), b.data().as_ptr());
    }

    #[test]
    fn several_files_where_one_is_expected_is_an_error() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Form {
            avatar: UploadedFile,
        }
        let a = UploadedFile::new("a", "", &b"a"[..]);
        let mut input = Input::new();
        input.insert("avatar", InputValue::Files(vec![a.clone(), a]));
        let error = Form::deserialize(&input).unwrap_err();
        assert_eq!(error.message(), "invalid length 2, expected one file");
    }

    #[test]
    fn files_read_as_plain_values_show_their_metadata() {
        let mut input = Input::new();
        input.insert(
            "doc",
            InputValue::Files(vec![UploadedFile::new(
                "d.pdf",
                "application/pdf",
                &b"%PDF"[..],
            )]),
        );
        let value = serde_json::Value::deserialize(&input).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"doc": {"name": "d.pdf", "mimetype": "application/pdf", "size": 4}})
        );
    }

    #[test]
    fn the_schema_is_a_binary_string() {
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Form {
            avatar: UploadedFile,
            more: Vec<UploadedFile>,
        }
        let schema = schemars::schema_for!(Form);
        let binary = serde_json::json!({"type": "string", "format": "binary"});
        assert_eq!(schema.as_value()["properties"]["avatar"], binary);
        assert_eq!(schema.as_value()["properties"]["more"]["items"], binary);
    }
}
