//! The preconditions of a GET or HEAD (RFC 9110 §13), and their evaluation in §13.2.2's order.

use http::header::{IF_MATCH, IF_MODIFIED_SINCE, IF_NONE_MATCH, IF_UNMODIFIED_SINCE};
use http::{HeaderMap, Method};

use crate::date::parse_date;
use crate::etag::{ETag, TagList};

/// What a request asks to be true of the representation it would get.
#[derive(Debug, Clone, Default)]
#[allow(clippy::struct_field_names)] // named after the header fields
pub(crate) struct Conditions {
    if_match: Option<TagList>,
    /// `None` also when it is not one valid date (ignored, RFC 9110 §13.1.4).
    if_unmodified_since: Option<u64>,
    if_none_match: Option<TagList>,
    /// `None` also when it is not one valid date (ignored, RFC 9110 §13.1.3).
    if_modified_since: Option<u64>,
}

/// What the evaluation says to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Perform the method (or, early in a handler: not decided yet, go on).
    Proceed,
    /// `304 Not Modified`.
    NotModified,
    /// `412 Precondition Failed`.
    PreconditionFailed,
}

/// How much the handler has said so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Known {
    /// It may still set validators: a condition whose validator is missing is not decided
    /// yet, and the evaluation stops there (`Proceed`).
    SoFar,
    /// It answered: a condition whose validator it never set is not evaluated (the middleware
    /// cannot know what the handler did not tell it).
    All,
}

impl Conditions {
    /// The conditions of a GET or HEAD; `None` for other methods (left alone: see the crate
    /// docs) and for a request without any.
    pub(crate) fn of(method: &Method, headers: &HeaderMap) -> Option<Box<Self>> {
        if *method != Method::GET && *method != Method::HEAD {
            return None;
        }
        // Most requests have none. One pass over the names, each compared with the four
        // (standard names: a comparison of two small numbers), costs less than four hashed
        // lookups of absent keys (~260 instructions) for any usual number of headers; the
        // fields present are then read, each with one lookup (a conditional GET usually
        // carries one or two of the four).
        let (mut none_match, mut modified_since, mut match_, mut unmodified_since) =
            (false, false, false, false);
        for name in headers.keys() {
            none_match |= name == IF_NONE_MATCH;
            modified_since |= name == IF_MODIFIED_SINCE;
            match_ |= name == IF_MATCH;
            unmodified_since |= name == IF_UNMODIFIED_SINCE;
        }
        if !(none_match || modified_since || match_ || unmodified_since) {
            return None;
        }
        // The lines of a header the request has (no lookup for one it has not).
        let lines = |present: bool, name| present.then(|| headers.get_all(name).iter());
        Some(Box::new(Self {
            if_match: lines(match_, IF_MATCH).and_then(TagList::from_lines),
            if_unmodified_since: lines(unmodified_since, IF_UNMODIFIED_SINCE).and_then(parse_date),
            if_none_match: lines(none_match, IF_NONE_MATCH).and_then(TagList::from_lines),
            if_modified_since: lines(modified_since, IF_MODIFIED_SINCE).and_then(parse_date),
        }))
    }

    /// RFC 9110 §13.2.2, steps 1 to 4, for a GET or HEAD whose representation has the
    /// validators `etag` and `modified` (seconds), at least one of them.
    pub(crate) fn evaluate(
        &self,
        etag: Option<&ETag>,
        modified: Option<u64>,
        known: Known,
    ) -> Verdict {
        // A condition whose validator is missing: wait for it, or (the handler answered)
        // leave the condition unevaluated.
        let wait = known == Known::SoFar;
        // 1. If-Match, strong comparison; `*` holds, as a representation exists.
        if let Some(list) = &self.if_match {
            let holds = match etag {
                _ if list.is_any() => Some(true),
                Some(tag) => Some(list.matches(tag, true)),
                None => None,
            };
            match holds {
                Some(false) => return Verdict::PreconditionFailed,
                None if wait => return Verdict::Proceed,
                Some(true) | None => {}
            }
        // 2. If-Unmodified-Since, when If-Match is absent.
        } else if let Some(since) = self.if_unmodified_since {
            match modified {
                Some(modified) if modified > since => return Verdict::PreconditionFailed,
                None if wait => return Verdict::Proceed,
                Some(_) | None => {}
            }
        }
        // 3. If-None-Match, weak comparison; `*` fails, as a representation exists.
        if let Some(list) = &self.if_none_match {
            let matched = list.is_any() || etag.is_some_and(|tag| list.matches(tag, false));
            return if matched {
                Verdict::NotModified
            } else {
                // Without a tag nothing is listed that could match: the condition holds, and
                // If-Modified-Since is ignored either way.
                Verdict::Proceed
            };
        }
        // 4. If-Modified-Since, when If-None-Match is absent (GET and HEAD only: `of`).
        match (self.if_modified_since, modified) {
            (Some(since), Some(modified)) if modified <= since => Verdict::NotModified,
            _ => Verdict::Proceed,
        }
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    const DATE: &str = "Sun, 06 Nov 1994 08:49:37 GMT";
    const SECONDS: u64 = 784_111_777;

    fn conditions(method: &Method, headers: &[(&str, &str)]) -> Option<Box<Conditions>> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        Conditions::of(method, &map)
    }

    fn verdict(headers: &[(&str, &str)], etag: Option<&str>, modified: Option<u64>) -> Verdict {
        let tag = etag.map(|t| t.parse::<ETag>().unwrap());
        conditions(&Method::GET, headers)
            .unwrap()
            .evaluate(tag.as_ref(), modified, Known::All)
    }

    use Verdict::{NotModified, PreconditionFailed, Proceed};

    #[test]
    fn only_get_and_head_with_a_condition_are_evaluated() {
        let inm = [("if-none-match", "\"a\"")];
        assert!(conditions(&Method::GET, &inm).is_some());
        assert!(conditions(&Method::HEAD, &inm).is_some());
        assert!(conditions(&Method::PUT, &inm).is_none());
        assert!(conditions(&Method::POST, &inm).is_none());
        assert!(conditions(&Method::GET, &[("accept", "*/*")]).is_none());
    }

    #[test]
    fn if_none_match_compares_weakly_and_star_matches_any() {
        assert_eq!(
            verdict(&[("if-none-match", "\"a\"")], Some("\"a\""), None),
            NotModified
        );
        assert_eq!(
            verdict(&[("if-none-match", "W/\"a\"")], Some("\"a\""), None),
            NotModified
        );
        assert_eq!(
            verdict(&[("if-none-match", "\"a\"")], Some("W/\"a\""), None),
            NotModified
        );
        assert_eq!(
            verdict(
                &[("if-none-match", "\"x\", \"y\", \"a\"")],
                Some("\"a\""),
                None
            ),
            NotModified
        );
        assert_eq!(
            verdict(&[("if-none-match", "\"b\"")], Some("\"a\""), None),
            Proceed
        );
        assert_eq!(
            verdict(&[("if-none-match", "*")], Some("\"a\""), None),
            NotModified
        );
        assert_eq!(
            verdict(&[("if-none-match", "*")], None, Some(SECONDS)),
            NotModified
        );
        // Garbage never matches.
        assert_eq!(
            verdict(&[("if-none-match", "a")], Some("\"a\""), None),
            Proceed
        );
    }

    #[test]
    fn if_modified_since_only_without_if_none_match() {
        let ims = [("if-modified-since", DATE)];
        assert_eq!(verdict(&ims, None, Some(SECONDS)), NotModified);
        assert_eq!(verdict(&ims, None, Some(SECONDS - 100)), NotModified);
        assert_eq!(verdict(&ims, None, Some(SECONDS + 1)), Proceed);
        // If-None-Match present (even not matching, even with no tag set): IMS is ignored.
        let both = [("if-none-match", "\"b\""), ("if-modified-since", DATE)];
        assert_eq!(verdict(&both, Some("\"a\""), Some(SECONDS)), Proceed);
        assert_eq!(verdict(&both, None, Some(SECONDS)), Proceed);
        // Unparsable or two dates: ignored.
        for bad in [
            "soon",
            "Sun, 06 Nov 1994 08:49:37 GMT, Sun, 06 Nov 1994 08:49:37 GMT",
        ] {
            assert_eq!(
                verdict(&[("if-modified-since", bad)], None, Some(SECONDS)),
                Proceed
            );
        }
        let twice = [("if-modified-since", DATE), ("if-modified-since", DATE)];
        assert_eq!(verdict(&twice, None, Some(SECONDS)), Proceed);
        // No Last-Modified: nothing to compare.
        assert_eq!(verdict(&ims, Some("\"a\""), None), Proceed);
    }

    #[test]
    fn if_match_and_if_unmodified_since_come_first() {
        let im = |v| [("if-match", v), ("if-none-match", "\"a\"")];
        assert_eq!(verdict(&im("\"a\""), Some("\"a\""), None), NotModified);
        assert_eq!(
            verdict(&im("\"b\""), Some("\"a\""), None),
            PreconditionFailed
        );
        // Strong comparison: a weak tag never satisfies If-Match.
        assert_eq!(
            verdict(&im("W/\"a\""), Some("\"a\""), None),
            PreconditionFailed
        );
        assert_eq!(
            verdict(&im("\"a\""), Some("W/\"a\""), None),
            PreconditionFailed
        );
        assert_eq!(verdict(&im("*"), Some("W/\"a\""), None), NotModified);
        // If-Unmodified-Since only without If-Match.
        let ius = [("if-unmodified-since", DATE)];
        assert_eq!(verdict(&ius, None, Some(SECONDS + 1)), PreconditionFailed);
        assert_eq!(verdict(&ius, None, Some(SECONDS)), Proceed);
        let both = [("if-match", "\"a\""), ("if-unmodified-since", DATE)];
        assert_eq!(verdict(&both, Some("\"a\""), Some(SECONDS + 1)), Proceed);
        // Once the handler answered, a condition it gave no validator for is not evaluated.
        assert_eq!(
            verdict(&[("if-match", "\"a\"")], None, Some(SECONDS)),
            Proceed
        );
    }

    #[test]
    fn early_in_a_handler_a_condition_waits_for_its_validator() {
        let c = conditions(
            &Method::GET,
            &[("if-match", "\"a\""), ("if-none-match", "\"a\"")],
        )
        .unwrap();
        // Only a date so far: If-Match cannot be decided, so neither can the rest.
        assert_eq!(c.evaluate(None, Some(SECONDS), Known::SoFar), Proceed);
        let tag = ETag::strong("a").unwrap();
        assert_eq!(
            c.evaluate(Some(&tag), Some(SECONDS), Known::SoFar),
            NotModified
        );
        let c = conditions(
            &Method::GET,
            &[("if-unmodified-since", DATE), ("if-none-match", "*")],
        )
        .unwrap();
        assert_eq!(c.evaluate(Some(&tag), None, Known::SoFar), Proceed);
        assert_eq!(c.evaluate(Some(&tag), None, Known::All), NotModified);
    }
}
