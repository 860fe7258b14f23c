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
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use serde::de::{self, Deserialize, Deserializer, Visitor};

use crate::stream::StreamedFile;

/// The media type of a file part that declares none.
const DEFAULT_MIMETYPE: &str = "application/octet-stream";

/// A file uploaded in a `multipart/form-data` request: held in memory, or, past the spool
/// threshold (`strata_upload::UploadLimits::spool_threshold`, 1 MiB by default), in a temporary
/// file the multipart reader wrote as it arrived ([`path`](Self::path) is then `Some`).
///
/// **Reading it.** `strata_upload::UploadedFileExt` (in the facade's prelude) reads any file,
/// wherever it is: `file.bytes().await?` (the whole contents), `file.open().await?` (an
/// `AsyncRead`, a chunk at a time), `file.mv(path).await?` (a rename for a file on disk).
/// [`data`](Self::data), [`pieces`](Self::pieces) and [`into_data`](Self::into_data) give the
/// bytes of a file held in memory, without waiting, and nothing for one on disk (which they
/// would have to read whole, blocking).
///
/// In memory, the multipart reader keeps a file as the pieces it arrived in, without copying
/// them into one buffer: [`pieces`](Self::pieces) reads them as they are;
/// [`data`](Self::data) joins them the first time it is called (one copy, kept). A file that
/// arrived in one piece is that piece either way.
///
/// A temporary file lives as long as the `UploadedFile` or a clone of it: it is removed when
/// the last one is dropped (when the request ends, unless the handler keeps a clone).
#[derive(Clone, Debug)]
pub struct UploadedFile {
    name: String,
    mimetype: String,
    contents: Contents,
}

/// A file's bytes: one buffer, the pieces it arrived in, or a file on disk.
#[derive(Clone)]
enum Contents {
    Whole(Bytes),
    /// Shared: a file is cloned as it is handed to the typed input.
    Pieces(Arc<Split>),
    /// Shared: the last clone drops the owner, which removes a temporary file.
    OnDisk(Arc<OnDisk>),
    /// A [`StreamedFile`] on its way to the typed input (or to a client's form), taken once.
    Streamed(Arc<Mutex<Option<StreamedFile>>>),
}

impl Contents {
    fn size(&self) -> u64 {
        match self {
            Contents::Whole(data) => data.len() as u64,
            Contents::Pieces(pieces) => pieces.size as u64,
            Contents::OnDisk(file) => file.size,
            // Not known before it has all arrived.
            Contents::Streamed(_) => 0,
        }
    }
}

// The contents can be megabytes: shown by their size.
impl fmt::Debug for Contents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Contents::OnDisk(file) => {
                write!(f, "{} bytes in {}", file.size, file.path.display())
            }
            Contents::Streamed(_) => f.write_str("a stream"),
            _ => write!(f, "{} bytes", self.size()),
        }
    }
}

/// A file's bytes on disk.
struct OnDisk {
    path: PathBuf,
    size: u64,
    /// Dropped with the last clone of the file (the multipart reader's guard of a temporary
    /// file, which removes it).
    _owner: Box<dyn Send + Sync>,
}

/// A file kept in pieces.
struct Split {
    pieces: Box<[Bytes]>,
    size: usize,
    /// The pieces joined, once asked for.
    whole: OnceLock<Bytes>,
}

impl UploadedFile {
    /// A file named `name` (the client's file name) of media type `mimetype`; an empty media type
    /// becomes `application/octet-stream`.
    pub fn new(
        name: impl Into<String>,
        mimetype: impl Into<String>,
        data: impl Into<Bytes>,
    ) -> Self {
        Self::with_contents(name.into(), mimetype.into(), Contents::Whole(data.into()))
    }

    /// A file whose bytes are `pieces`, one after another, kept as they are (no copy).
    ///
    /// ```
    /// use bytes::Bytes;
    /// use strata_input::UploadedFile;
    ///
    /// let file = UploadedFile::from_pieces(
    ///     "notes.txt",
    ///     "text/plain",
    ///     vec![Bytes::from_static(b"hello, "), Bytes::from_static(b"world")],
    /// );
    /// assert_eq!(file.size(), 12);
    /// assert_eq!(file.pieces().map(<[Bytes]>::len), Some(2));
    /// assert_eq!(file.data().unwrap().as_ref(), b"hello, world");
    /// ```
    pub fn from_pieces(
        name: impl Into<String>,
        mimetype: impl Into<String>,
        mut pieces: Vec<Bytes>,
    ) -> Self {
        pieces.retain(|piece| !piece.is_empty());
        let contents = match pieces.len() {
            0 => Contents::Whole(Bytes::new()),
            1 => Contents::Whole(pieces.swap_remove(0)),
            _ => Contents::Pieces(Arc::new(Split {
                size: pieces.iter().map(Bytes::len).sum(),
                pieces: pieces.into_boxed_slice(),
                whole: OnceLock::new(),
            })),
        };
        Self::with_contents(name.into(), mimetype.into(), contents)
    }

    /// A file whose `size` bytes are those of the file at `path` (its first `size` bytes,
    /// read when the file is). `owner` is dropped when the last clone of the file is: the
    /// multipart reader gives the guard of its temporary file, which removes it; `()` for a
    /// file that stays.
    ///
    /// The multipart reader makes such files of the uploads past the spool threshold; a
    /// handler or a test may make one of a file of its own.
    ///
    /// ```
    /// use strata_input::UploadedFile;
    ///
    /// let file = UploadedFile::on_disk("report.pdf", "application/pdf", "/srv/report.pdf", 2048, ());
    /// assert_eq!(file.path().unwrap().to_str(), Some("/srv/report.pdf"));
    /// assert_eq!(file.size(), 2048);
    /// assert!(file.data().is_none(), "on disk: read it with UploadedFileExt");
    /// ```
    pub fn on_disk(
        name: impl Into<String>,
        mimetype: impl Into<String>,
        path: impl Into<PathBuf>,
        size: u64,
        owner: impl Send + Sync + 'static,
    ) -> Self {
        let contents = Contents::OnDisk(Arc::new(OnDisk {
            path: path.into(),
            size,
            _owner: Box::new(owner),
        }));
        Self::with_contents(name.into(), mimetype.into(), contents)
    }

    /// A [`StreamedFile`] carried as a file: how the multipart reader hands one to the typed
    /// input, and how a client's capture of the input's files sends one.
    #[doc(hidden)]
    pub fn streamed(file: StreamedFile) -> Self {
        let (name, mimetype) = (file.name().to_owned(), file.mimetype().to_owned());
        let contents = Contents::Streamed(Arc::new(Mutex::new(Some(file))));
        Self::with_contents(name, mimetype, contents)
    }

    /// Whether this carries a [`StreamedFile`] (see [`streamed`](Self::streamed)).
    #[doc(hidden)]
    pub fn is_streamed(&self) -> bool {
        matches!(self.contents, Contents::Streamed(_))
    }

    /// The [`StreamedFile`] this carries, taken out (once).
    #[doc(hidden)]
    pub fn take_stream(&self) -> Option<StreamedFile> {
        match &self.contents {
            Contents::Streamed(slot) => slot
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take(),
            _ => None,
        }
    }

    fn with_contents(name: String, mut mimetype: String, contents: Contents) -> Self {
        if mimetype.is_empty() {
            DEFAULT_MIMETYPE.clone_into(&mut mimetype);
        }
        Self {
            name,
            mimetype,
            contents,
        }
    }

    /// The file name the client gave.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The contents in one buffer, for a file held in memory; `None` for a file on disk (an
    /// upload past the spool threshold: read it with `file.bytes().await?` or
    /// `file.open().await?`, `strata_upload::UploadedFileExt`). A file kept in pieces is joined
    /// on the first call (one copy, kept for the next calls and the file's clones);
    /// [`pieces`](Self::pieces) reads it without.
    pub fn data(&self) -> Option<&Bytes> {
        match &self.contents {
            Contents::Whole(data) => Some(data),
            Contents::Pieces(pieces) => Some(pieces.whole.get_or_init(|| {
                let mut whole = Vec::with_capacity(pieces.size);
                for piece in &pieces.pieces {
                    whole.extend_from_slice(piece);
                }
                Bytes::from(whole)
            })),
            Contents::OnDisk(_) | Contents::Streamed(_) => None,
        }
    }

    /// The contents of a file held in memory as the pieces they arrived in, in order (one
    /// piece for a file in one buffer; none for an empty file): a handler that reads a large
    /// file once (a checksum, a copy elsewhere) reads it without joining it. `None` for a file
    /// on disk, as [`data`](Self::data).
    pub fn pieces(&self) -> Option<&[Bytes]> {
        match &self.contents {
            Contents::Whole(data) if data.is_empty() => Some(&[]),
            Contents::Whole(data) => Some(std::slice::from_ref(data)),
            Contents::Pieces(pieces) => Some(&pieces.pieces),
            Contents::OnDisk(_) | Contents::Streamed(_) => None,
        }
    }

    /// The contents of a file held in memory in one buffer, taken out (no copy for a file in
    /// one buffer; see [`data`](Self::data)); the file itself back for a file on disk.
    ///
    /// # Errors
    ///
    /// The file, for a file on disk.
    pub fn into_data(self) -> Result<Bytes, Self> {
        match self.contents {
            Contents::Whole(data) => Ok(data),
            Contents::Pieces(_) => Ok(self.data().cloned().unwrap_or_default()),
            Contents::OnDisk(_) | Contents::Streamed(_) => Err(self),
        }
    }

    /// Where the file's bytes are, for a file on disk (an upload past the spool threshold, in
    /// a temporary file removed when the last clone of the file is dropped); `None` for a file
    /// held in memory.
    pub fn path(&self) -> Option<&Path> {
        match &self.contents {
            Contents::OnDisk(file) => Some(&file.path),
            _ => None,
        }
    }

    /// The size in bytes (at most `usize::MAX` on a 32-bit target; [`len`](Self::len) is
    /// exact).
    pub fn size(&self) -> usize {
        usize::try_from(self.contents.size()).unwrap_or(usize::MAX)
    }

    /// The size in bytes.
    pub fn len(&self) -> u64 {
        self.contents.size()
    }

    /// Whether the file has no bytes.
    pub fn is_empty(&self) -> bool {
        self.contents.size() == 0
    }

    /// The media type the client declared for the part (`application/octet-stream` when none).
    pub fn mimetype(&self) -> &str {
        &self.mimetype
    }
}

/// Files are equal when their names, media types and bytes are (however they are split). A file
/// on disk is read to be compared (blocking; an unreadable file is equal to none but itself).
impl PartialEq for UploadedFile {
    fn eq(&self, other: &Self) -> bool {
        if self.name != other.name
            || self.mimetype != other.mimetype
            || self.contents.size() != other.contents.size()
        {
            return false;
        }
        match (&self.contents, &other.contents) {
            (Contents::OnDisk(a), Contents::OnDisk(b)) if Arc::ptr_eq(a, b) => true,
            (Contents::Streamed(a), Contents::Streamed(b)) => Arc::ptr_eq(a, b),
            (Contents::Streamed(_), _) | (_, Contents::Streamed(_)) => false,
            (Contents::OnDisk(_), _) | (_, Contents::OnDisk(_)) => {
                match (self.read_blocking(), other.read_blocking()) {
                    (Ok(a), Ok(b)) => same_bytes(&a, &b),
                    _ => false,
                }
            }
            _ => same_bytes(self.pieces().unwrap_or(&[]), other.pieces().unwrap_or(&[])),
        }
    }
}

impl UploadedFile {
    /// The contents, as pieces, read from disk if need be (for comparisons).
    fn read_blocking(&self) -> std::io::Result<Vec<Bytes>> {
        use std::io::Read;
        match &self.contents {
            Contents::OnDisk(file) => {
                let mut data = Vec::new();
                std::fs::File::open(&file.path)?
                    .take(file.size)
                    .read_to_end(&mut data)?;
                Ok(vec![Bytes::from(data)])
            }
            _ => Ok(self.pieces().unwrap_or(&[]).to_vec()),
        }
    }
}

impl Eq for UploadedFile {}

/// Whether two lists of pieces hold the same bytes, compared a run at a time.
fn same_bytes(mut left: &[Bytes], mut right: &[Bytes]) -> bool {
    let (mut a, mut b): (&[u8], &[u8]) = (&[], &[]);
    loop {
        while a.is_empty() {
            let Some((first, rest)) = left.split_first() else {
                break;
            };
            (a, left) = (first, rest);
        }
        while b.is_empty() {
            let Some((first, rest)) = right.split_first() else {
                break;
            };
            (b, right) = (first, rest);
        }
        if a.is_empty() || b.is_empty() {
            return a.is_empty() && b.is_empty();
        }
        let run = a.len().min(b.len());
        if a[..run] != b[..run] {
            return false;
        }
        (a, b) = (&a[run..], &b[run..]);
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
        let streamed = self.is_streamed();
        let mut file = serializer.serialize_struct("UploadedFile", 3 - usize::from(streamed))?;
        file.serialize_field("name", &self.name)?;
        file.serialize_field("mimetype", &self.mimetype)?;
        // A stream's size is not known before it has all been read.
        if !streamed {
            file.serialize_field("size", &self.len())?;
        }
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
    fn a_file_in_pieces_reads_as_pieces_or_joined_and_equals_the_same_bytes_split_otherwise() {
        let piece = |text: &'static str| Bytes::from_static(text.as_bytes());
        let split = UploadedFile::from_pieces(
            "f",
            "",
            vec![piece("ab"), piece(""), piece("cde"), piece("f")],
        );
        assert_eq!(split.size(), 6);
        assert_eq!(
            split.pieces().unwrap(),
            [piece("ab"), piece("cde"), piece("f")]
        );
        let other = UploadedFile::from_pieces("f", "", vec![piece("abcd"), piece("ef")]);
        let whole = UploadedFile::new("f", "", piece("abcdef"));
        assert_eq!(split, other);
        assert_eq!(split, whole);
        assert_ne!(split, UploadedFile::new("f", "", piece("abcdeF")));
        assert_ne!(split, UploadedFile::new("f", "", piece("abcde")));
        assert_ne!(split, UploadedFile::new("g", "", piece("abcdef")));
        // Joined once, shared by clones.
        let clone = split.clone();
        assert_eq!(split.data().unwrap().as_ref(), b"abcdef");
        assert_eq!(
            clone.data().unwrap().as_ptr(),
            split.data().unwrap().as_ptr()
        );
        assert_eq!(split.into_data().unwrap(), piece("abcdef"));
        // One piece is kept as it is; none is an empty file.
        let one = piece("xyz");
        let single = UploadedFile::from_pieces("f", "", vec![Bytes::new(), one.clone()]);
        assert_eq!(single.data().unwrap().as_ptr(), one.as_ptr());
        let empty = UploadedFile::from_pieces("f", "", Vec::new());
        assert_eq!(
            (empty.size(), empty.pieces().map(<[Bytes]>::len)),
            (0, Some(0))
        );
        assert_eq!(empty, UploadedFile::new("f", "", Bytes::new()));
    }

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
        assert_eq!(
            form.maybe.unwrap().data().unwrap().as_ptr(),
            b.data().unwrap().as_ptr()
        );
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
