//! Byte ranges of streamed outputs: the request's `Range` and `If-Range`, and which bytes of a
//! representation they ask for (RFC 9110 §14).

use http::header::{ETAG, IF_RANGE, LAST_MODIFIED, RANGE};
use http::{HeaderMap, HeaderValue, Method};

/// The request headers that choose which bytes of a streamed output are sent, `Range` and
/// `If-Range`, as the output stage gives them to
/// [`HandlerOutput::into_streamed`](crate::HandlerOutput::into_streamed): none unless the
/// request is a GET, the only method ranges are defined for (a HEAD gets the whole file's
/// headers).
///
/// ```
/// use http::{HeaderMap, HeaderValue, Method};
/// use strata_output::RangeHeaders;
///
/// let mut headers = HeaderMap::new();
/// headers.insert("range", HeaderValue::from_static("bytes=0-9"));
/// assert_eq!(RangeHeaders::new(&Method::GET, &headers).range().unwrap(), "bytes=0-9");
/// assert!(RangeHeaders::new(&Method::HEAD, &headers).range().is_none());
/// ```
#[derive(Debug, Clone, Default)]
pub struct RangeHeaders {
    range: Option<HeaderValue>,
    if_range: Option<HeaderValue>,
}

/// No `Range` and no `If-Range`.
pub(crate) static NO_RANGE: RangeHeaders = RangeHeaders {
    range: None,
    if_range: None,
};

impl RangeHeaders {
    /// Those of a request with `method` and `headers`, boxed, or `None` when it has neither (a
    /// response future carries a pointer, not two header values, for the common case).
    pub(crate) fn boxed(method: &Method, headers: &HeaderMap) -> Option<Box<Self>> {
        let headers = Self::new(method, headers);
        (headers.range.is_some() || headers.if_range.is_some()).then(|| Box::new(headers))
    }

    /// Those of a request with `method` and `headers`.
    pub fn new(method: &Method, headers: &HeaderMap) -> Self {
        if method != Method::GET {
            return Self::default();
        }
        Self {
            range: headers.get(RANGE).cloned(),
            if_range: headers.get(IF_RANGE).cloned(),
        }
    }

    /// The `Range` header.
    pub fn range(&self) -> Option<&HeaderValue> {
        self.range.as_ref()
    }

    /// The `If-Range` header.
    pub fn if_range(&self) -> Option<&HeaderValue> {
        self.if_range.as_ref()
    }

    /// Which bytes of a representation of `len` bytes are asked for, given the headers of the
    /// response (its validators, `ETag` and `Last-Modified`, for `If-Range`).
    pub(crate) fn wanted(&self, len: u64, response: &HeaderMap) -> Wanted {
        let Some(range) = self.range.as_ref().and_then(|value| value.to_str().ok()) else {
            return Wanted::Whole;
        };
        if let Some(condition) = &self.if_range
            && !validator_matches(condition, response)
        {
            return Wanted::Whole;
        }
        // No range of an empty file can be named (`bytes 0-0/0` is not one): all of it.
        if len == 0 {
            return Wanted::Whole;
        }
        parse_range(range, len)
    }
}

/// Which bytes of a representation a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wanted {
    /// All of them: no range, one not understood or invalid, several ranges (a server may
    /// ignore `Range`; multipart answers are not made), or an `If-Range` that does not match.
    Whole,
    /// From `first` to `last`, both included, both within the representation: a 206.
    Part { first: u64, last: u64 },
    /// One range that starts past the end (or asks for the last 0 bytes): a 416.
    Unsatisfiable,
}

/// The one range of a `Range` value (`bytes=a-b`, `bytes=a-`, `bytes=-n`) within `len` bytes.
fn parse_range(value: &str, len: u64) -> Wanted {
    let Some((unit, set)) = value.split_once('=') else {
        return Wanted::Whole;
    };
    if !unit.trim().eq_ignore_ascii_case("bytes") {
        return Wanted::Whole;
    }
    // A list may have empty elements (RFC 9110 §5.6.1).
    let mut specs = set
        .split(',')
        .map(str::trim)
        .filter(|spec| !spec.is_empty());
    let (Some(spec), None) = (specs.next(), specs.next()) else {
        return Wanted::Whole;
    };
    let Some((first, last)) = spec.split_once('-') else {
        return Wanted::Whole;
    };
    let (first, last) = (first.trim(), last.trim());
    if first.is_empty() {
        // The last `n` bytes (all of them when the file is shorter).
        return match position(last) {
            None => Wanted::Whole,
            Some(0) => Wanted::Unsatisfiable,
            Some(n) => Wanted::Part {
                first: len.saturating_sub(n),
                last: len - 1,
            },
        };
    }
    let Some(first) = position(first) else {
        return Wanted::Whole;
    };
    let last = if last.is_empty() {
        Some(u64::MAX)
    } else {
        position(last)
    };
    match last {
        None => Wanted::Whole,
        Some(last) if last < first => Wanted::Whole,
        Some(_) if first >= len => Wanted::Unsatisfiable,
        Some(last) => Wanted::Part {
            first,
            last: last.min(len - 1),
        },
    }
}

/// A byte position: ASCII digits (a number past `u64` is past any end).
fn position(text: &str) -> Option<u64> {
    (!text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit()))
        .then(|| text.parse().unwrap_or(u64::MAX))
}

/// Whether `If-Range`'s validator is the response's: an entity tag its `ETag`, compared
/// strongly (a weak tag never matches), a date its `Last-Modified` exactly (RFC 9110 §13.1.5).
fn validator_matches(condition: &HeaderValue, response: &HeaderMap) -> bool {
    let condition = condition.as_bytes().trim_ascii();
    if condition.starts_with(b"W/") {
        return false;
    }
    if condition.starts_with(b"\"") {
        return response
            .get(ETAG)
            .is_some_and(|tag| tag.as_bytes().trim_ascii() == condition);
    }
    let date = |value: &[u8]| {
        std::str::from_utf8(value)
            .ok()
            .and_then(|text| httpdate::parse_http_date(text).ok())
    };
    match (
        date(condition),
        response
            .get(LAST_MODIFIED)
            .and_then(|value| date(value.as_bytes())),
    ) {
        (Some(asked), Some(modified)) => asked == modified,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wanted(range: &str, if_range: Option<&str>, response: &[(&'static str, &str)]) -> Wanted {
        let mut request = HeaderMap::new();
        request.insert(RANGE, HeaderValue::from_str(range).unwrap());
        if let Some(condition) = if_range {
            request.insert(IF_RANGE, HeaderValue::from_str(condition).unwrap());
        }
        let mut headers = HeaderMap::new();
        for (name, value) in response {
            headers.insert(
                http::HeaderName::from_static(name),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        RangeHeaders::new(&Method::GET, &request).wanted(100, &headers)
    }

    fn part(first: u64, last: u64) -> Wanted {
        Wanted::Part { first, last }
    }

    #[test]
    fn each_form_of_one_range() {
        assert_eq!(wanted("bytes=0-9", None, &[]), part(0, 9));
        assert_eq!(wanted("bytes=90-", None, &[]), part(90, 99));
        assert_eq!(wanted("bytes=-10", None, &[]), part(90, 99));
        // Past the end: up to the end; the last 1000 of 100 bytes: all of them.
        assert_eq!(wanted("bytes=50-1000", None, &[]), part(50, 99));
        assert_eq!(wanted("bytes=-1000", None, &[]), part(0, 99));
        assert_eq!(
            wanted("bytes=0-99999999999999999999999", None, &[]),
            part(0, 99)
        );
        // The unit is case-insensitive; spaces and empty list elements are tolerated.
        assert_eq!(wanted("Bytes= 5-5 ,", None, &[]), part(5, 5));
    }

    #[test]
    fn ranges_past_the_end_are_unsatisfiable() {
        assert_eq!(wanted("bytes=100-", None, &[]), Wanted::Unsatisfiable);
        assert_eq!(wanted("bytes=100-200", None, &[]), Wanted::Unsatisfiable);
        assert_eq!(wanted("bytes=-0", None, &[]), Wanted::Unsatisfiable);
    }

    #[test]
    fn what_is_not_one_valid_byte_range_is_the_whole_file() {
        for range in [
            "bytes=0-1,5-6",
            "bytes=9-0",
            "bytes=a-b",
            "bytes=",
            "bytes=-",
            "items=0-9",
            "0-9",
            "bytes=+1-2",
        ] {
            assert_eq!(wanted(range, None, &[]), Wanted::Whole, "{range}");
        }
        let headers = HeaderMap::new();
        let mut request = HeaderMap::new();
        request.insert(RANGE, HeaderValue::from_static("bytes=0-9"));
        assert_eq!(
            RangeHeaders::new(&Method::GET, &request).wanted(0, &headers),
            Wanted::Whole
        );
        assert_eq!(
            RangeHeaders::new(&Method::POST, &request).wanted(100, &headers),
            Wanted::Whole
        );
    }

    #[test]
    fn if_range_with_a_matching_validator_keeps_the_range() {
        let etag = [("etag", "\"v1\"")];
        assert_eq!(wanted("bytes=0-9", Some("\"v1\""), &etag), part(0, 9));
        let date = "Wed, 21 Oct 2015 07:28:00 GMT";
        let modified = [("last-modified", date)];
        assert_eq!(wanted("bytes=0-9", Some(date), &modified), part(0, 9));
    }

    #[test]
    fn if_range_with_another_validator_is_the_whole_file() {
        let etag = [("etag", "\"v1\"")];
        assert_eq!(wanted("bytes=0-9", Some("\"v2\""), &etag), Wanted::Whole);
        // Weak tags never match, nor does a tag when the response has none.
        assert_eq!(wanted("bytes=0-9", Some("W/\"v1\""), &etag), Wanted::Whole);
        assert_eq!(wanted("bytes=0-9", Some("\"v1\""), &[]), Wanted::Whole);
        let modified = [("last-modified", "Wed, 21 Oct 2015 07:28:00 GMT")];
        for condition in ["Wed, 21 Oct 2015 07:28:01 GMT", "yesterday", "\"v1\""] {
            assert_eq!(
                wanted("bytes=0-9", Some(condition), &modified),
                Wanted::Whole,
                "{condition}"
            );
        }
    }
}
