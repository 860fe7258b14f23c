//! HTTP dates (RFC 9110 §5.6.7): `Last-Modified` written, `If-Modified-Since` and
//! `If-Unmodified-Since` read. Whole seconds, as the format has no finer unit: a time is
//! compared by the second it falls in, so a modification 0.4 s after a date the client holds
//! is not newer than that date.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::HeaderValue;

/// 10000-01-01T00:00:00Z in seconds: `httpdate` writes four-digit years only (and panics
/// beyond).
const YEAR_10000: u64 = 253_402_300_800;

/// A modification time as the response carries it: its second, and its rendered value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LastModified {
    /// Seconds since the Unix epoch.
    pub(crate) seconds: u64,
    /// The IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
    pub(crate) value: HeaderValue,
}

impl LastModified {
    /// `time`, no later than `now`: RFC 9110 §8.8.2.1 has an origin server send its own
    /// clock's time instead of a modification time in the future. A time before 1970 (which
    /// an HTTP date cannot say) is the epoch.
    pub(crate) fn new(time: SystemTime, now: SystemTime) -> Self {
        let time = time.min(now);
        let seconds = time
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs())
            .min(YEAR_10000 - 1);
        let text = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(seconds));
        let value = HeaderValue::from_str(&text)
            // Letters, digits, spaces, ',' and ':'.
            .unwrap_or_else(|_| HeaderValue::from_static("Thu, 01 Jan 1970 00:00:00 GMT"));
        Self { seconds, value }
    }
}

/// The second a request's date field names, if it is one valid HTTP-date (any of the three
/// formats RFC 9110 has recipients accept) on one line; `None` otherwise, which RFC 9110
/// §13.1.3-4 has recipients ignore (more than one member, or not a date).
pub(crate) fn parse_date<'a>(mut lines: impl Iterator<Item = &'a HeaderValue>) -> Option<u64> {
    let line = lines.next()?;
    if lines.next().is_some() {
        return None;
    }
    let text = line.to_str().ok()?.trim_matches([' ', '\t']);
    let time = httpdate::parse_http_date(text).ok()?;
    time.duration_since(UNIX_EPOCH)
        .ok()
        .map(|since| since.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds)
    }

    fn parse(lines: &[&str]) -> Option<u64> {
        let values: Vec<HeaderValue> = lines
            .iter()
            .map(|l| HeaderValue::from_str(l).unwrap())
            .collect();
        parse_date(values.iter())
    }

    #[test]
    fn last_modified_is_an_imf_fixdate_of_whole_seconds() {
        let now = at(2_000_000_000);
        let date = LastModified::new(at(784_111_777) + Duration::from_millis(900), now);
        assert_eq!(date.value, "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(date.seconds, 784_111_777);
    }

    #[test]
    fn times_an_http_date_cannot_say_are_brought_within_it() {
        let now = at(1_700_000_000);
        // In the future: the server's clock (RFC 9110 §8.8.2.1).
        assert_eq!(
            LastModified::new(at(1_800_000_000), now).seconds,
            1_700_000_000
        );
        // Far beyond year 9999 (httpdate would panic): still the clock.
        let far = UNIX_EPOCH + Duration::from_secs(u64::MAX / 4);
        assert_eq!(LastModified::new(far, now).seconds, 1_700_000_000);
        // A clock past 9999 is held to the last second of 9999.
        let date = LastModified::new(far, far);
        assert_eq!(date.value, "Fri, 31 Dec 9999 23:59:59 GMT");
        // Before 1970: the epoch.
        let before = UNIX_EPOCH - Duration::from_secs(10);
        assert_eq!(
            LastModified::new(before, now).value,
            "Thu, 01 Jan 1970 00:00:00 GMT"
        );
    }

    #[test]
    fn request_dates_are_read_in_the_three_formats_and_ignored_when_invalid() {
        // RFC 9110 §5.6.7's example in its three formats.
        for text in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            " Sun, 06 Nov 1994 08:49:37 GMT ",
        ] {
            assert_eq!(parse(&[text]), Some(784_111_777), "{text}");
        }
        for text in [
            "",
            "yesterday",
            "Sun, 06 Nov 1994 08:49:37",
            "Sun, 06 Nov 1994 25:49:37 GMT",
            "Sun, 31 Feb 1994 08:49:37 GMT",
            "Sun, 06 Nov 1969 08:49:37 GMT",
            "Sun, 06 Nov 19940 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT, Mon, 07 Nov 1994 08:49:37 GMT",
            "\u{0}",
        ] {
            if let Ok(value) = HeaderValue::from_str(text) {
                assert_eq!(parse_date(std::iter::once(&value)), None, "{text:?}");
            }
        }
        // Two lines are two members: ignored.
        let date = "Sun, 06 Nov 1994 08:49:37 GMT";
        assert_eq!(parse(&[date, date]), None);
        assert_eq!(parse(&[]), None);
        // Bytes that are not text never panic.
        let value = HeaderValue::from_bytes(b"Sun, 06 Nov 1994 \xff8:49:37 GMT").unwrap();
        assert_eq!(parse_date(std::iter::once(&value)), None);
    }
}
