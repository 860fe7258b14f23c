//! Writing `multipart/form-data` part headers and boundaries (RFC 7578) so that a Strata server
//! reads back what was sent. The typed client (`strata-client`) and `MultipartForm`
//! (`strata-upload`) both write with it.
//!
//! The rules follow the server's reader (multer 3, through `strata-upload`):
//!
//! - A part's name and a file's name are quoted strings of UTF-8 text (RFC 7578 4.2), each `"`
//!   written `\"`. A backslash is written as it is: the reader undoes `\"` and nothing else, so a
//!   doubled backslash would arrive doubled. `filename*=` (RFC 5987) is not written: the reader
//!   does not decode it, and one written before `filename=` hides the file name from it.
//! - What a header line cannot carry is refused ([`part_header`]) or replaced
//!   ([`part_header_lossy`]): control characters other than tab (CR and LF would end the line,
//!   the reader refuses the others); a name ending in a backslash (the reader takes the closing
//!   quote for an escaped one); and, in a part's name, `filename` after a space or `;` (the
//!   reader searches the whole line for `filename` and would take it for the file name).
//! - A file's media type is sent when it is a media type the reader parses (`type/subtype`,
//!   optionally `; name=value` parameters, no control characters); the server reads it with its
//!   type, subtype and parameter names in lowercase. Any other is refused, or with
//!   [`part_header_lossy`] not sent (the server then reads `application/octet-stream`, the media
//!   type of a file part that declares none). An empty one is not sent.
//! - Lengths are not limited here: the server reads part headers of any length within its
//!   whole-body limit (`UploadLimits::body_size`).
//!
//! ```
//! use strata_input::UploadedFile;
//! use strata_input::multipart_writer::{Boundary, part_header};
//!
//! let file = UploadedFile::new("say \"cheese\".png", "image/png", &b"\x89PNG"[..]);
//! let header = part_header("photo", Some(&file)).unwrap();
//! assert_eq!(
//!     header,
//!     "Content-Disposition: form-data; name=\"photo\"; filename=\"say \\\"cheese\\\".png\"\r\n\
//!      Content-Type: image/png\r\n\r\n"
//! );
//!
//! // A media type that would end the headers early is refused, naming the rule.
//! let file = UploadedFile::new("a.png", "image/png\r\n\r\nINJECTED", &b""[..]);
//! let error = part_header("photo", Some(&file)).unwrap_err();
//! assert!(error.to_string().starts_with("the media type \"image/png\\r\\n\\r\\nINJECTED\""));
//!
//! // A boundary that none of the contents holds.
//! let mut boundary = Boundary::new();
//! boundary.avoid(file.data().unwrap());
//! assert!(boundary.as_str().starts_with("strata-"));
//! ```

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::UploadedFile;

/// What in a part header a [`PartHeaderError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderItem {
    /// The part's (the field's) name.
    PartName,
    /// The file's name.
    FileName,
    /// The file's media type.
    MediaType,
}

impl fmt::Display for HeaderItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::PartName => "part name",
            Self::FileName => "file name",
            Self::MediaType => "media type",
        })
    }
}

/// A part name, file name or media type that a part header cannot carry so that the server reads
/// it back; the message names the value (its first 64 characters) and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {item} {shown} cannot be sent: {problem}")]
pub struct PartHeaderError {
    item: HeaderItem,
    shown: String,
    problem: String,
}

impl PartHeaderError {
    fn new(item: HeaderItem, value: &str, problem: String) -> Self {
        Self {
            item,
            shown: shown(value),
            problem,
        }
    }

    /// What the error is about.
    #[must_use]
    pub fn item(&self) -> HeaderItem {
        self.item
    }
}

/// `value` for a message: quoted and escaped as Rust writes strings, cut after 64 characters.
#[must_use]
pub fn shown(value: &str) -> String {
    const SHOWN: usize = 64;
    match value.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{:?}…", &value[..end]),
        None => format!("{value:?}"),
    }
}

/// A control character a header line cannot carry: all but tab (httparse and `HeaderValue`
/// refuse them; CR and LF would end the line).
fn unsendable(c: char) -> bool {
    c.is_ascii_control() && c != '\t'
}

/// Where `filename` follows whitespace or `;` in `name`, or directly follows another `filename`:
/// multer finds the file name parameter by searching the whole `Content-Disposition` line for a
/// `filename` after whitespace or `;`, and, having skipped one that follows another character,
/// takes the next one found right after it without looking at what precedes it
/// (`xfilenamefilename=`). The index is that of the character before it.
fn filename_word(name: &str) -> Option<usize> {
    name.match_indices("filename").find_map(|(at, _)| {
        let before = &name.as_bytes()[..at];
        let last = before.last()?;
        (last.is_ascii_whitespace() || *last == b';' || before.ends_with(b"filename"))
            .then_some(at - 1)
    })
}

/// Checks a part name or file name against the rules in the [module's documentation](self).
fn check_name(item: HeaderItem, value: &str) -> Result<(), PartHeaderError> {
    if let Some((at, c)) = value.chars().enumerate().find(|(_, c)| unsendable(*c)) {
        return Err(PartHeaderError::new(
            item,
            value,
            format!(
                "it holds the control character U+{:04X} at character {} (a part's header line \
                 carries any UTF-8 text but control characters other than tab)",
                u32::from(c),
                at + 1
            ),
        ));
    }
    if value.ends_with('\\') {
        return Err(PartHeaderError::new(
            item,
            value,
            "it ends with a backslash, which the server's multipart reader takes for an escaped \
             closing quote"
                .to_owned(),
        ));
    }
    if item == HeaderItem::PartName && filename_word(value).is_some() {
        return Err(PartHeaderError::new(
            item,
            value,
            "it holds `filename` after a space, `;` or another `filename`, which the server's \
             multipart reader takes for the file name parameter"
                .to_owned(),
        ));
    }
    Ok(())
}

/// `value` with what [`check_name`] refuses replaced: control characters and a closing
/// backslash by spaces, the character before a `filename` in a part name by `_`.
fn replace_unsendable(item: HeaderItem, value: &str) -> String {
    let mut value: String = value
        .chars()
        .map(|c| if unsendable(c) { ' ' } else { c })
        .collect();
    if value.ends_with('\\') {
        value.pop();
        value.push(' ');
    }
    if item == HeaderItem::PartName {
        while let Some(at) = filename_word(&value) {
            value.replace_range(at..=at, "_");
        }
    }
    value
}

/// Checks a media type: one the server's reader parses (the `mime` crate, as multer), or empty.
fn check_media_type(value: &str) -> Result<(), PartHeaderError> {
    if value.is_empty() {
        return Ok(());
    }
    if let Some((at, c)) = value.chars().enumerate().find(|(_, c)| c.is_control()) {
        return Err(PartHeaderError::new(
            HeaderItem::MediaType,
            value,
            format!(
                "it holds the control character U+{:04X} at character {} (a media type is \
                 `type/subtype`, optionally `; name=value` parameters)",
                u32::from(c),
                at + 1
            ),
        ));
    }
    let not_one = |detail: &dyn fmt::Display| {
        PartHeaderError::new(
            HeaderItem::MediaType,
            value,
            format!(
                "it is not a media type (`type/subtype`, optionally `; name=value` parameters): \
                 {detail}"
            ),
        )
    };
    let parsed = value
        .parse::<mime::Mime>()
        .map_err(|error| not_one(&error))?;
    // The `mime` crate takes `image/` for a type with an empty subtype.
    if parsed.subtype().as_str().is_empty() {
        return Err(not_one(&"the subtype is missing"));
    }
    Ok(())
}

/// `value` between quotes, each `"` escaped (the only escape the server's reader undoes).
fn push_quoted(out: &mut String, value: &str) {
    out.push('"');
    for c in value.chars() {
        if c == '"' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

/// The header block of a part, from checked values: `Content-Disposition`, a file's
/// `Content-Type` when it has one, and the empty line.
fn write(name: &str, file: Option<(&str, Option<&str>)>) -> String {
    let mut out = String::with_capacity(64 + name.len());
    out.push_str("Content-Disposition: form-data; name=");
    push_quoted(&mut out, name);
    if let Some((file_name, media_type)) = file {
        out.push_str("; filename=");
        push_quoted(&mut out, file_name);
        if let Some(media_type) = media_type {
            out.push_str("\r\nContent-Type: ");
            out.push_str(media_type);
        }
    }
    out.push_str("\r\n\r\n");
    out
}

/// The headers of a part named `name` (with `file`'s name and media type for a file part),
/// through the empty line that ends them; or what cannot be sent, by the rules of the
/// [module's documentation](self).
///
/// # Errors
///
/// A name or file name with a control character other than tab, or ending in a backslash; a part
/// name holding `filename` after a space or `;`; a media type that is not empty and not one.
pub fn part_header(name: &str, file: Option<&UploadedFile>) -> Result<String, PartHeaderError> {
    check_name(HeaderItem::PartName, name)?;
    let file = match file {
        Some(file) => {
            check_name(HeaderItem::FileName, file.name())?;
            check_media_type(file.mimetype())?;
            let media_type = Some(file.mimetype()).filter(|media_type| !media_type.is_empty());
            Some((file.name(), media_type))
        }
        None => None,
    };
    Ok(write(name, file))
}

/// The headers of a part as [`part_header`] writes them, with what cannot be sent replaced
/// instead of refused: control characters (tab aside) and a closing backslash by spaces, the
/// character before a `filename` in a part name by `_`; a media type that is not one is left
/// out, so the server reads the file as having none (`application/octet-stream`), as it would
/// read the unreadable one.
#[must_use]
pub fn part_header_lossy(name: &str, file: Option<&UploadedFile>) -> String {
    let name = replace_unsendable(HeaderItem::PartName, name);
    match file {
        Some(file) => {
            let file_name = replace_unsendable(HeaderItem::FileName, file.name());
            let media_type = Some(file.mimetype()).filter(|media_type| {
                !media_type.is_empty() && check_media_type(media_type).is_ok()
            });
            write(&name, Some((&file_name, media_type)))
        }
        None => write(&name, None),
    }
}

/// Tells boundaries chosen in one process apart.
static BOUNDARIES: AtomicU64 = AtomicU64::new(0);

/// A multipart boundary (RFC 2046 5.1.1): `strata-` and 16 hex digits from the process's random
/// hash keys, lengthened until none of the contents [avoided](Self::avoid) holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Boundary(String);

impl Default for Boundary {
    fn default() -> Self {
        Self::new()
    }
}

impl Boundary {
    /// A new boundary, unlike those chosen before it in the process.
    #[must_use]
    pub fn new() -> Self {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(BOUNDARIES.fetch_add(1, Ordering::Relaxed));
        Self(format!("strata-{:016x}", hasher.finish()))
    }

    /// A boundary for contents that cannot be checked before they are sent (a file read as it
    /// is sent): 128 random bits, which no file holds but by design.
    #[must_use]
    pub fn unguessable() -> Self {
        let (first, second) = (Self::new(), Self::new());
        Self(format!("{first}{}", &second.0["strata-".len()..]))
    }

    /// Lengthens the boundary until `contents` does not hold it. Contents avoided before stay
    /// avoided: where the boundary did not occur, a longer one that starts with it cannot.
    pub fn avoid(&mut self, contents: &[u8]) {
        while memchr::memmem::find(contents, self.0.as_bytes()).is_some() {
            self.0.push('x');
        }
    }

    /// The boundary.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Boundary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, media_type: &str) -> UploadedFile {
        UploadedFile::new(name, media_type, &b"data"[..])
    }

    fn disposition(name: &str, file_name: &str) -> String {
        let header = part_header(name, Some(&file(file_name, "text/plain"))).unwrap();
        let (disposition, rest) = header.split_once("\r\n").unwrap();
        assert_eq!(rest, "Content-Type: text/plain\r\n\r\n");
        disposition
            .strip_prefix("Content-Disposition: form-data; ")
            .unwrap()
            .to_owned()
    }

    #[test]
    fn quotes_are_escaped_and_backslashes_kept() {
        assert_eq!(
            disposition("a\"b", "say \"hi\\\".txt"),
            // `"` → `\"`; the backslash before the second quote is kept, then the quote escaped.
            r#"name="a\"b"; filename="say \"hi\\".txt""#
        );
        assert_eq!(disposition("f", "C:\\x"), r#"name="f"; filename="C:\x""#);
    }

    #[test]
    fn utf8_and_long_names_are_written_as_they_are() {
        assert_eq!(
            disposition("pièce", "résumé 日本 🦀.txt"),
            "name=\"pièce\"; filename=\"résumé 日本 🦀.txt\""
        );
        let long = "n\"".repeat(5 * 1024);
        let header = disposition("f", &long);
        assert_eq!(header.len(), "name=\"f\"; filename=\"\"".len() + 15 * 1024);
    }

    #[test]
    fn a_text_part_has_no_file_name_or_type() {
        assert_eq!(
            part_header("title", None).unwrap(),
            "Content-Disposition: form-data; name=\"title\"\r\n\r\n"
        );
        assert_eq!(
            part_header_lossy("a\rb", None),
            "Content-Disposition: form-data; name=\"a b\"\r\n\r\n"
        );
    }

    #[test]
    fn control_characters_are_refused_naming_the_rule() {
        for (value, code) in [
            ("a\r\nb", "U+000D"),
            ("a\0", "U+0000"),
            ("\u{7f}", "U+007F"),
        ] {
            let error = part_header("f", Some(&file(value, "text/plain"))).unwrap_err();
            assert_eq!(error.item(), HeaderItem::FileName);
            let message = error.to_string();
            assert!(message.starts_with("the file name \""), "{message}");
            assert!(message.contains(code), "{message}");
            assert!(
                message.contains("control characters other than tab"),
                "{message}"
            );
            let error = part_header(value, None).unwrap_err();
            assert_eq!(error.item(), HeaderItem::PartName);
        }
        // Tab is allowed.
        assert!(part_header("a\tb", Some(&file("c\td", ""))).is_ok());
    }

    #[test]
    fn a_closing_backslash_and_a_filename_word_are_refused() {
        let error = part_header("f", Some(&file("dir\\", ""))).unwrap_err();
        assert!(
            error.to_string().contains("ends with a backslash"),
            "{error}"
        );
        let error = part_header("x filename", None).unwrap_err();
        assert!(error.to_string().contains("holds `filename`"), "{error}");
        let error = part_header("x;filename=\"y\"", None).unwrap_err();
        assert_eq!(error.item(), HeaderItem::PartName);
        // In a file name, or not after a separator, it is harmless: the parameters come first.
        assert!(part_header("myfilename", Some(&file("a filename=b", ""))).is_ok());
    }

    #[test]
    fn media_types_are_checked() {
        for ok in [
            "image/png",
            "text/plain; charset=utf-8",
            "application/vnd.a+json",
        ] {
            assert!(part_header("f", Some(&file("a", ok))).is_ok(), "{ok}");
        }
        for bad in [
            "image/png\r\n\r\nINJECTED",
            "png",
            "image/png x",
            "image/",
            " a/b",
        ] {
            let error = part_header("f", Some(&file("a", bad))).unwrap_err();
            assert_eq!(error.item(), HeaderItem::MediaType, "{bad}");
            assert!(error.to_string().contains("`type/subtype`"), "{error}");
        }
    }

    #[test]
    fn the_lossy_header_replaces_what_cannot_be_sent() {
        let header = part_header_lossy(
            "x filename\0",
            Some(&file("a\r\nb\\", "image/png\r\n\r\nINJECTED")),
        );
        assert_eq!(
            header,
            "Content-Disposition: form-data; name=\"x_filename \"; filename=\"a  b \"\r\n\r\n"
        );
        // What can be sent is written as `part_header` writes it.
        let file = file("say \"hi\".png", "image/png");
        assert_eq!(
            part_header_lossy("photo", Some(&file)),
            part_header("photo", Some(&file)).unwrap()
        );
    }

    #[test]
    fn long_values_are_cut_in_messages() {
        let long = format!("{}\n", "é".repeat(10 * 1024));
        let error = part_header("f", Some(&file(&long, ""))).unwrap_err();
        let message = error.to_string();
        assert!(message.len() < 400, "{message}");
        assert!(message.contains("…"), "{message}");
        assert!(message.contains("character 10241"), "{message}");
    }

    #[test]
    fn boundaries_differ_and_avoid_the_contents() {
        let mut boundary = Boundary::new();
        assert_ne!(boundary, Boundary::new());
        let first = boundary.as_str().to_owned();
        let clash = format!("before {first} after");
        boundary.avoid(clash.as_bytes());
        assert!(!clash.contains(boundary.as_str()));
        assert!(boundary.as_str().starts_with(&first));
        // Contents that hold the lengthened boundary too.
        let clash = format!("{boundary} {boundary}x {boundary}xx");
        boundary.avoid(clash.as_bytes());
        assert!(!clash.contains(boundary.as_str()), "{boundary}");
    }
}
