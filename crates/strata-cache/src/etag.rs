//! Entity tags: the handler's validator, and the lists of `If-None-Match` and `If-Match`.

use std::fmt;
use std::str::FromStr;

use http::HeaderValue;
use smallvec::SmallVec;

/// An entity tag (RFC 9110 §8.8.3): a strong or weak validator of a representation, checked
/// when made and rendered once to its header value.
///
/// The opaque part is visible ASCII without `"` (RFC 9110's `etagc` without its obsolete
/// non-ASCII bytes). A strong tag promises the same bytes; a weak one (`W/"..."`) the same
/// meaning (a JSON body that may be serialized differently, compressed or not).
///
/// ```
/// use strata_cache::ETag;
///
/// let strong = ETag::strong("v42").unwrap();
/// assert_eq!(strong.header_value(), "\"v42\"");
/// let weak = ETag::weak("v42").unwrap();
/// assert_eq!(weak.to_string(), "W/\"v42\"");
/// assert_eq!("W/\"v42\"".parse::<ETag>().unwrap(), weak);
/// // The weak comparison of If-None-Match ignores the weakness; the strong one does not.
/// assert!(strong.weak_eq(&weak));
/// assert!(!strong.strong_eq(&weak));
/// assert!(ETag::strong("with \"quotes\"").is_err());
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ETag {
    value: HeaderValue,
    weak: bool,
}

impl ETag {
    /// A strong tag: `"<opaque>"`.
    pub fn strong(opaque: impl AsRef<str>) -> Result<Self, InvalidETag> {
        Self::make(opaque.as_ref(), false)
    }

    /// A weak tag: `W/"<opaque>"`.
    pub fn weak(opaque: impl AsRef<str>) -> Result<Self, InvalidETag> {
        Self::make(opaque.as_ref(), true)
    }

    fn make(opaque: &str, weak: bool) -> Result<Self, InvalidETag> {
        if !opaque.bytes().all(is_etagc) {
            return Err(InvalidETag);
        }
        let prefix: &[u8] = if weak { b"W/\"" } else { b"\"" };
        // Written once into a buffer of its exact length, which the header value then owns:
        // one allocation (`format!` and `from_str` made two, the text and its copy).
        let mut text = Vec::with_capacity(prefix.len() + opaque.len() + 1);
        text.extend_from_slice(prefix);
        text.extend_from_slice(opaque.as_bytes());
        text.push(b'"');
        let value = HeaderValue::try_from(text).map_err(|_| InvalidETag)?;
        Ok(Self { value, weak })
    }

    /// Whether the tag is weak.
    pub fn is_weak(&self) -> bool {
        self.weak
    }

    /// The opaque part, without quotes or `W/`.
    pub fn opaque(&self) -> &str {
        opaque_of(&self.value, self.weak)
    }

    /// The `ETag` header value.
    pub fn header_value(&self) -> &HeaderValue {
        &self.value
    }

    /// The `ETag` header value, owned.
    pub(crate) fn into_header_value(self) -> HeaderValue {
        self.value
    }

    /// The weak comparison (RFC 9110 §8.8.3.2): the opaque parts are equal, weak or not.
    pub fn weak_eq(&self, other: &Self) -> bool {
        self.opaque() == other.opaque()
    }

    /// The strong comparison: both strong and the opaque parts equal.
    pub fn strong_eq(&self, other: &Self) -> bool {
        !self.weak && !other.weak && self.opaque() == other.opaque()
    }
}

fn opaque_of(value: &HeaderValue, weak: bool) -> &str {
    let text = value.to_str().unwrap_or_default();
    let start = if weak { 3 } else { 1 };
    text.get(start..text.len().saturating_sub(1))
        .unwrap_or_default()
}

impl FromStr for ETag {
    type Err = InvalidETag;

    /// Reads a whole tag as a header carries it: `"v1"` or `W/"v1"`.
    fn from_str(text: &str) -> Result<Self, InvalidETag> {
        let mut tags = EntityTags::new(text.as_bytes());
        match (tags.next(), tags.next(), tags.rest_is_empty()) {
            (Some((weak, opaque)), None, true) => {
                let opaque = std::str::from_utf8(opaque).map_err(|_| InvalidETag)?;
                Self::make(opaque, weak)
            }
            _ => Err(InvalidETag),
        }
    }
}

impl fmt::Debug for ETag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ETag").field(&self.value).finish()
    }
}

impl fmt::Display for ETag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.value.to_str().unwrap_or_default())
    }
}

/// An entity tag that is not `"<visible ASCII but '"'>"` or `W/"..."`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an entity tag is visible ASCII without '\"', in quotes, W/ in front if weak")]
pub struct InvalidETag;

/// `etagc` of RFC 9110 without obs-text: `!`, then `#` to `~`.
fn is_etagc(byte: u8) -> bool {
    byte == 0x21 || (0x23..=0x7e).contains(&byte)
}

/// The lines of a request's `If-None-Match` or `If-Match` (RFC 9110 §13.1.1-2): `*` or a list of
/// entity tags. Kept as received (the one line a client sends inline, no allocation); read
/// without allocating when compared.
#[derive(Debug, Clone)]
pub(crate) struct TagList(SmallVec<[HeaderValue; 1]>);

impl TagList {
    /// The field's lines, if the request has any.
    pub(crate) fn from_lines<'a>(mut lines: impl Iterator<Item = &'a HeaderValue>) -> Option<Self> {
        // Pushed by hand: `collect` into a `SmallVec` cost twice as much for the one line.
        let mut list = SmallVec::new();
        list.push(lines.next()?.clone());
        for line in lines {
            list.push(line.clone());
        }
        Some(Self(list))
    }

    /// Whether the field is `*` (one line, `*` alone).
    pub(crate) fn is_any(&self) -> bool {
        matches!(&*self.0, [line] if trim(line.as_bytes()) == b"*")
    }

    /// Whether a listed tag matches `tag`, by the weak or the strong comparison. A member that
    /// is not an entity tag ends its line: it and what follows it never match (the safe side
    /// for `If-None-Match`, a full response; for `If-Match`, a 412).
    pub(crate) fn matches(&self, tag: &ETag, strong: bool) -> bool {
        if strong && tag.is_weak() {
            return false;
        }
        // The usual line: the tag itself, as the client got it. Then a weak comparison matches
        // and so does a strong one (a weak tag returned above), without reading the list.
        let whole = tag.header_value().as_bytes();
        if self.0.iter().any(|line| trim(line.as_bytes()) == whole) {
            return true;
        }
        let wanted = tag.opaque().as_bytes();
        self.0.iter().any(|line| {
            EntityTags::new(line.as_bytes())
                .any(|(weak, opaque)| opaque == wanted && !(strong && weak))
        })
    }
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t'))
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t'))
        .map_or(start, |i| i + 1);
    &bytes[start..end]
}

/// The entity tags of one line, in order; stops at the first member that is not one.
struct EntityTags<'a> {
    rest: &'a [u8],
    failed: bool,
}

impl<'a> EntityTags<'a> {
    fn new(line: &'a [u8]) -> Self {
        Self {
            rest: line,
            failed: false,
        }
    }

    /// Whether the line was read to its end without a bad member.
    fn rest_is_empty(&self) -> bool {
        !self.failed && self.rest.iter().all(|b| matches!(b, b' ' | b'\t' | b','))
    }

    fn fail(&mut self) -> Option<(bool, &'a [u8])> {
        self.failed = true;
        self.rest = &[];
        None
    }
}

impl<'a> Iterator for EntityTags<'a> {
    /// Whether the tag is weak, and its opaque part.
    type Item = (bool, &'a [u8]);

    fn next(&mut self) -> Option<(bool, &'a [u8])> {
        // Empty list elements and whitespace are allowed between members (RFC 9110 §5.6.1).
        let start = self
            .rest
            .iter()
            .position(|b| !matches!(b, b' ' | b'\t' | b','))?;
        let mut rest = &self.rest[start..];
        let weak = rest.starts_with(b"W/");
        if weak {
            rest = &rest[2..];
        }
        let Some(quoted) = rest.strip_prefix(b"\"") else {
            return self.fail();
        };
        // A comma may sit inside the quotes: the tag ends at the next quote, not at a comma.
        let Some(end) = quoted.iter().position(|&b| b == b'"') else {
            return self.fail();
        };
        let opaque = &quoted[..end];
        let after = &quoted[end + 1..];
        let next = after
            .iter()
            .position(|b| !matches!(b, b' ' | b'\t'))
            .unwrap_or(after.len());
        if !opaque.iter().all(|&b| is_etagc(b)) || !matches!(after.get(next), None | Some(b',')) {
            return self.fail();
        }
        self.rest = &after[next..];
        Some((weak, opaque))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(lines: &[&str]) -> TagList {
        let values: Vec<HeaderValue> = lines
            .iter()
            .map(|l| HeaderValue::from_str(l).unwrap())
            .collect();
        TagList::from_lines(values.iter()).unwrap()
    }

    fn tags(line: &str) -> Vec<(bool, String)> {
        EntityTags::new(line.as_bytes())
            .map(|(weak, opaque)| (weak, String::from_utf8(opaque.to_vec()).unwrap()))
            .collect()
    }

    #[test]
    fn tags_are_checked_and_rendered_once() {
        let strong = ETag::strong("abc-123").unwrap();
        assert_eq!(strong.header_value(), "\"abc-123\"");
        assert_eq!(strong.opaque(), "abc-123");
        assert!(!strong.is_weak());
        let weak = ETag::weak("abc-123").unwrap();
        assert_eq!(weak.header_value(), "W/\"abc-123\"");
        assert_eq!(weak.opaque(), "abc-123");
        assert!(ETag::strong("").is_ok(), "an empty opaque tag is allowed");
        for bad in ["a\"b", "a b", "é", "tab\t", "\u{7f}"] {
            assert_eq!(ETag::strong(bad), Err(InvalidETag), "{bad:?}");
        }
        assert_eq!("\"x\"".parse::<ETag>().unwrap(), ETag::strong("x").unwrap());
        assert_eq!(
            " W/\"x\" ".parse::<ETag>().unwrap(),
            ETag::weak("x").unwrap()
        );
        for bad in ["x", "\"x", "w/\"x\"", "\"x\", \"y\"", "\"x\" y", "*", ""] {
            assert!(bad.parse::<ETag>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn weak_and_strong_comparison_follow_rfc_9110() {
        // RFC 9110 §8.8.3.2's table.
        let w1 = ETag::weak("1").unwrap();
        let w2 = ETag::weak("2").unwrap();
        let s1 = ETag::strong("1").unwrap();
        assert!(!w1.strong_eq(&w1) && w1.weak_eq(&w1));
        assert!(!w1.strong_eq(&w2) && !w1.weak_eq(&w2));
        assert!(!w1.strong_eq(&s1) && w1.weak_eq(&s1));
        assert!(s1.strong_eq(&s1) && s1.weak_eq(&s1));
    }

    #[test]
    fn lists_are_read_with_commas_inside_tags_and_stop_at_garbage() {
        assert_eq!(
            tags(r#" "a", W/"b" ,, "c,d""#),
            [
                (false, "a".into()),
                (true, "b".into()),
                (false, "c,d".into())
            ]
        );
        assert_eq!(tags(r#""a", b, "c""#), [(false, "a".into())]);
        assert_eq!(tags(r#""a" "b""#), []);
        assert_eq!(tags(r#""unterminated"#), []);
        assert_eq!(tags(""), []);
        assert_eq!(tags(" , ,"), []);
    }

    #[test]
    fn if_none_match_uses_the_weak_comparison_and_if_match_the_strong_one() {
        let tag = ETag::strong("v1").unwrap();
        let weak = ETag::weak("v1").unwrap();
        let header = list(&[r#""v0", W/"v1""#]);
        assert!(header.matches(&tag, false));
        assert!(!header.matches(&tag, true), "W/ never matches strongly");
        assert!(
            !header.matches(&weak, true),
            "a weak tag never matches strongly"
        );
        assert!(list(&[r#""v1""#]).matches(&tag, true));
        // Lines are one list; `*` alone.
        assert!(list(&[r#""v0""#, r#""v1""#]).matches(&tag, false));
        assert!(list(&[" * "]).is_any());
        assert!(!list(&["*", r#""v1""#]).is_any());
        assert!(!list(&[r#"*, "v1""#]).is_any());
        assert!(!list(&["*"]).matches(&tag, false), "`*` is not a tag");
        assert!(!list(&["v1"]).matches(&tag, false), "unquoted");
        assert!(TagList::from_lines(std::iter::empty()).is_none());
        // A line that is the tag itself (the fast path), as the comparisons say.
        assert!(list(&[" \"v1\"\t"]).matches(&tag, true));
        assert!(list(&[r#"W/"v1""#]).matches(&weak, false));
        assert!(list(&[r#"W/"v1""#]).matches(&tag, false));
        assert!(!list(&[r#"W/"v1""#]).matches(&weak, true));
        assert!(list(&[r#""v1""#]).matches(&weak, false));
        assert!(!list(&[r#""v10""#]).matches(&tag, false));
    }

    #[test]
    fn a_huge_list_is_read_in_one_pass_without_panicking() {
        let mut line = "W/\"t\", ".repeat(20_000);
        line.push_str("\"last\"");
        let header = list(&[&line]);
        assert!(header.matches(&ETag::strong("last").unwrap(), false));
        assert!(!header.matches(&ETag::strong("none").unwrap(), false));
        // Arbitrary bytes never panic.
        let noise: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
        if let Ok(value) = HeaderValue::from_bytes(&noise[32..127]) {
            let header = TagList::from_lines(std::iter::once(&value)).unwrap();
            let _ = header.matches(&ETag::strong("x").unwrap(), false);
        }
        let _ = EntityTags::new(&noise).count();
    }
}
