//! Strict decoding of `application/x-www-form-urlencoded` text: query strings, form bodies and
//! path segments.
//!
//! Unlike lenient decoders, a `%` not followed by two hex digits and bytes that are not UTF-8 are
//! errors, so a client gets a 400 instead of silently mangled values.

use std::borrow::Cow;
use std::fmt;

use crate::input::TextValue;

/// Why a piece of urlencoded text could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeTextError {
    /// A `%` at byte `offset` is not followed by two hex digits.
    #[error("malformed percent-encoding at byte {offset}")]
    BadEscape {
        /// Byte offset of the `%`.
        offset: usize,
    },
    /// The decoded bytes are not valid UTF-8.
    #[error("percent-decoded bytes are not valid UTF-8")]
    InvalidUtf8,
    /// There are more pairs than the limit allows.
    #[error("more than {limit} parameters")]
    TooManyPairs {
        /// The limit.
        limit: usize,
    },
}

fn hex(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

/// Percent-decodes `raw`; with `plus_as_space`, `+` becomes a space (form encoding).
///
/// Borrows when nothing needs decoding. `base` is added to offsets in errors.
///
/// ```
/// use strata_input::text::percent_decode;
///
/// assert_eq!(percent_decode(b"a%20b+c", true, 0).unwrap(), "a b c");
/// assert_eq!(percent_decode(b"caf%C3%A9", false, 0).unwrap(), "café");
/// assert!(percent_decode(b"%zz", false, 0).is_err());
/// assert!(percent_decode(b"%FF", false, 0).is_err());
/// ```
pub fn percent_decode(
    raw: &[u8],
    plus_as_space: bool,
    base: usize,
) -> Result<Cow<'_, str>, DecodeTextError> {
    let needs_work = raw
        .iter()
        .any(|&b| b == b'%' || (plus_as_space && b == b'+'));
    if !needs_work {
        return std::str::from_utf8(raw)
            .map(Cow::Borrowed)
            .map_err(|_| DecodeTextError::InvalidUtf8);
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'%' => {
                let decoded = raw
                    .get(i + 1..i + 3)
                    .and_then(|pair| Some(hex(pair[0])? << 4 | hex(pair[1])?))
                    .ok_or(DecodeTextError::BadEscape { offset: base + i })?;
                out.push(decoded);
                i += 3;
            }
            b'+' if plus_as_space => {
                out.push(b' ');
                i += 1;
            }
            other => {
                out.push(other);
                i += 1;
            }
        }
    }
    String::from_utf8(out)
        .map(Cow::Owned)
        .map_err(|_| DecodeTextError::InvalidUtf8)
}

/// Parses urlencoded `key=value&...` text into pairs, grouping repeated keys into lists
/// (`a=1&a=2` gives `a` → `["1", "2"]`), keeping first-appearance order.
///
/// Empty segments (`a=1&&b=2`) are skipped; a key without `=` has an empty value. At most
/// `max_pairs` pairs are accepted.
///
/// ```
/// use strata_input::TextValue;
/// use strata_input::text::parse_urlencoded;
///
/// let pairs = parse_urlencoded(b"a=1&b=x+y&a=2", 100).unwrap();
/// assert_eq!(pairs[0], ("a".to_owned(), TextValue::Many(vec!["1".into(), "2".into()])));
/// assert_eq!(pairs[1], ("b".to_owned(), TextValue::One("x y".into())));
/// ```
pub fn parse_urlencoded(
    raw: &[u8],
    max_pairs: usize,
) -> Result<Vec<(String, TextValue)>, DecodeTextError> {
    // Typical queries and forms have a few pairs: group them as they come, in one vector.
    let segments = raw.split(|&b| b == b'&').count();
    if segments <= LINEAR_GROUPING_MAX {
        let mut grouped: Vec<(String, TextValue)> = Vec::with_capacity(segments);
        for_each_pair(raw, max_pairs, |key, value| {
            match grouped.iter_mut().find(|(k, _)| *k == key) {
                Some((_, existing)) => existing.push(value),
                None => grouped.push((key, TextValue::One(value))),
            }
        })?;
        return Ok(grouped);
    }
    let mut pairs: Vec<(String, String)> = Vec::new();
    for_each_pair(raw, max_pairs, |key, value| pairs.push((key, value)))?;
    Ok(group_repeated(pairs))
}

/// A query string whose pairs need no decoding: no `%` escapes, no `+`, no repeated keys, at
/// most [`PlainQuery::PAIRS_MAX`] pairs. Kept as the request's own text (no copy): when the
/// query is a request's only input, the typed input is read straight from it.
///
/// ```
/// use http::Uri;
/// use strata_input::text::PlainQuery;
///
/// let uri: Uri = "/hello?name=Ada&flag".parse().unwrap();
/// let query = PlainQuery::check(&uri, 100).unwrap().unwrap();
/// assert_eq!(query.pairs().collect::<Vec<_>>(), [("name", "Ada"), ("flag", "")]);
/// // Escapes, `+` and repeated keys need decoding or grouping: not plain.
/// for uri in ["/?a=%41", "/?a=b+c", "/?a=1&a=2"] {
///     assert!(PlainQuery::check(&uri.parse().unwrap(), 100).unwrap().is_none());
/// }
/// // Too many pairs is an error either way.
/// assert!(PlainQuery::check(&"/?a&b&c".parse().unwrap(), 2).is_err());
/// ```
#[derive(Clone)]
pub struct PlainQuery {
    path_and_query: http::uri::PathAndQuery,
    pairs: u16,
}

impl PlainQuery {
    /// Up to this many pairs a query can be plain (repeats are found by comparing each key with
    /// the ones before it).
    pub const PAIRS_MAX: usize = 16;

    /// The query of `uri` when it is plain; `Ok(None)` when it has none or needs decoding
    /// ([`parse_urlencoded`] then says whether it is well-formed); an error when it has more
    /// than `max_pairs` pairs.
    pub fn check(uri: &http::Uri, max_pairs: usize) -> Result<Option<Self>, DecodeTextError> {
        let Some(path_and_query) = uri.path_and_query() else {
            return Ok(None);
        };
        let Some(query) = path_and_query.query() else {
            return Ok(None);
        };
        if query.bytes().any(|b| b == b'%' || b == b'+') {
            return Ok(None);
        }
        let mut count = 0;
        for (key, _) in split_pairs(query) {
            if count == max_pairs {
                return Err(DecodeTextError::TooManyPairs { limit: max_pairs });
            }
            if count == Self::PAIRS_MAX || split_pairs(query).take(count).any(|(k, _)| k == key) {
                // Many pairs or a repeat: decoded and grouped the general way, which also
                // enforces the limit.
                return Ok(None);
            }
            count += 1;
        }
        if count == 0 {
            return Ok(None);
        }
        Ok(Some(Self {
            path_and_query: path_and_query.clone(),
            pairs: u16::try_from(count).unwrap_or(u16::MAX),
        }))
    }

    /// The query text.
    pub fn as_str(&self) -> &str {
        self.path_and_query.query().unwrap_or_default()
    }

    /// The `(key, value)` pairs in order; a key without `=` has an empty value.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> + use<'_> {
        split_pairs(self.as_str())
    }

    /// The number of pairs.
    pub fn len(&self) -> usize {
        usize::from(self.pairs)
    }

    /// Whether there are no pairs (never, for a checked query).
    pub fn is_empty(&self) -> bool {
        self.pairs == 0
    }

    /// The pairs as owned text values.
    pub fn to_pairs(&self) -> Vec<(String, TextValue)> {
        self.pairs()
            .map(|(k, v)| (k.to_owned(), TextValue::One(v.to_owned())))
            .collect()
    }
}

impl fmt::Debug for PlainQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PlainQuery").field(&self.as_str()).finish()
    }
}

impl PartialEq for PlainQuery {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for PlainQuery {}

/// The non-empty `key=value` segments of `text`, undecoded.
fn split_pairs(text: &str) -> SplitPairs<'_> {
    SplitPairs { rest: text }
}

/// The iterator of [`split_pairs`]: byte searches, cheaper than `str::split` on short text.
struct SplitPairs<'a> {
    rest: &'a str,
}

impl<'a> Iterator for SplitPairs<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.rest.is_empty() {
                return None;
            }
            let rest = self.rest;
            let (segment, after) = match rest.bytes().position(|b| b == b'&') {
                Some(amp) => (&rest[..amp], &rest[amp + 1..]),
                None => (rest, ""),
            };
            self.rest = after;
            if segment.is_empty() {
                continue;
            }
            return Some(match segment.bytes().position(|b| b == b'=') {
                Some(eq) => (&segment[..eq], &segment[eq + 1..]),
                None => (segment, ""),
            });
        }
    }
}

/// Decodes the pairs of `raw`, at most `max_pairs` of them, handing each to `each`.
fn for_each_pair(
    raw: &[u8],
    max_pairs: usize,
    mut each: impl FnMut(String, String),
) -> Result<(), DecodeTextError> {
    let mut count = 0;
    let mut offset = 0usize;
    for segment in raw.split(|&b| b == b'&') {
        let start = offset;
        offset += segment.len() + 1;
        if segment.is_empty() {
            continue;
        }
        if count == max_pairs {
            return Err(DecodeTextError::TooManyPairs { limit: max_pairs });
        }
        count += 1;
        let (key, value, value_start) = match segment.iter().position(|&b| b == b'=') {
            Some(eq) => (&segment[..eq], &segment[eq + 1..], start + eq + 1),
            None => (segment, &segment[segment.len()..], start + segment.len()),
        };
        let key = percent_decode(key, true, start)?.into_owned();
        let value = percent_decode(value, true, value_start)?.into_owned();
        each(key, value);
    }
    Ok(())
}

/// Up to this many pairs, grouping scans linearly: cheaper than sorting for typical inputs.
const LINEAR_GROUPING_MAX: usize = 16;

/// Groups repeated keys into lists, keeping first-appearance order, in O(n log n).
fn group_repeated(pairs: Vec<(String, String)>) -> Vec<(String, TextValue)> {
    if pairs.len() <= LINEAR_GROUPING_MAX {
        let mut grouped: Vec<(String, TextValue)> = Vec::with_capacity(pairs.len());
        for (key, value) in pairs {
            match grouped.iter_mut().find(|(k, _)| *k == key) {
                Some((_, existing)) => existing.push(value),
                None => grouped.push((key, TextValue::One(value))),
            }
        }
        return grouped;
    }
    // Sort positions by key (stable: equal keys stay in arrival order), then cut runs of equal
    // keys into groups and put the groups back in order of their first appearance.
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    order.sort_by(|&a, &b| pairs[a].0.cmp(&pairs[b].0));
    let mut slots: Vec<Option<(String, String)>> = pairs.into_iter().map(Some).collect();
    let mut groups: Vec<(usize, String, TextValue)> = Vec::new();
    for &position in &order {
        let Some((key, value)) = slots[position].take() else {
            continue;
        };
        match groups.last_mut() {
            Some((_, last_key, values)) if *last_key == key => values.push(value),
            _ => groups.push((position, key, TextValue::One(value))),
        }
    }
    groups.sort_unstable_by_key(|(first, _, _)| *first);
    groups
        .into_iter()
        .map(|(_, key, value)| (key, value))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;

    #[test]
    fn borrows_plain_text() {
        assert!(matches!(
            percent_decode(b"plain", true, 0),
            Ok(Cow::Borrowed("plain"))
        ));
    }

    #[test]
    fn reports_offset_of_bad_escape() {
        let err = parse_urlencoded(b"a=1&b=%4", 10).unwrap_err();
        assert_eq!(err, DecodeTextError::BadEscape { offset: 6 });
        assert_eq!(err.to_string(), "malformed percent-encoding at byte 6");
    }

    #[test]
    fn rejects_invalid_utf8_after_decoding() {
        assert_eq!(
            parse_urlencoded(b"a=%C3%28", 10).unwrap_err(),
            DecodeTextError::InvalidUtf8
        );
    }

    #[test]
    fn keys_without_values_and_empty_segments() {
        let pairs = parse_urlencoded(b"&flag&x=", 10).unwrap();
        assert_eq!(
            pairs,
            vec![
                ("flag".to_owned(), TextValue::One(String::new())),
                ("x".to_owned(), TextValue::One(String::new())),
            ]
        );
    }

    #[test]
    fn limits_pairs() {
        assert_eq!(
            parse_urlencoded(b"a=1&b=2&c=3", 2).unwrap_err(),
            DecodeTextError::TooManyPairs { limit: 2 }
        );
        assert!(parse_urlencoded(b"a=1&b=2", 2).is_ok());
    }

    #[test]
    fn many_pairs_group_in_first_appearance_order() {
        let mut query = (0..200).fold(String::new(), |mut query, i| {
            let _ = write!(query, "k{}={i}&", i % 50);
            query
        });
        query.push_str("z=last&k7=again");
        let pairs = parse_urlencoded(query.as_bytes(), 1000).unwrap();
        assert_eq!(pairs.len(), 51);
        assert_eq!(pairs[0].0, "k0");
        assert_eq!(pairs[49].0, "k49");
        assert_eq!(pairs[50], ("z".to_owned(), TextValue::One("last".into())));
        assert_eq!(
            pairs[7].1,
            TextValue::Many(vec![
                "7".into(),
                "57".into(),
                "107".into(),
                "157".into(),
                "again".into()
            ])
        );
    }

    #[test]
    fn three_values_make_a_list() {
        let pairs = parse_urlencoded(b"a=1&a=2&a=3", 10).unwrap();
        assert_eq!(
            pairs[0].1,
            TextValue::Many(vec!["1".into(), "2".into(), "3".into()])
        );
    }
}
