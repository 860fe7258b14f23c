//! Query strings and urlencoded form bodies: `strata_input::text::{percent_decode,
//! parse_urlencoded}`.
//!
//! Input: byte 0 chooses `plus_as_space` (bit 0) and the error offset base (bits 1..); byte 1
//! chooses `max_pairs` (0..=63, else 1000); the rest is the raw text.
//!
//! Invariants (each a panic when broken):
//! - `percent_decode` agrees exactly (value or error, offset included) with a plain reference
//!   decoder written here from the documented rules; it borrows exactly when nothing needs
//!   decoding; a `BadEscape` offset points at a `%`.
//! - Round trips: percent-encoding any bytes and decoding gives the bytes back (or
//!   `InvalidUtf8` when they are not UTF-8); decoding, re-encoding and decoding again gives the
//!   same text.
//! - `parse_urlencoded` agrees exactly with a naive reference (split, decode, group repeated keys
//!   in first-appearance order, pair limit), on both of its grouping paths (up to 16 segments and
//!   more); its keys are unique; serializing its pairs back to a query and parsing again gives
//!   the same pairs.
//! - `PlainQuery::check` (the parse stage's no-decoding path) gives exactly `parse_urlencoded`'s
//!   pairs when it keeps a query, and the same pair-limit error.
#![no_main]

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use libfuzzer_sys::fuzz_target;
use strata_input::TextValue;
use strata_input::text::{DecodeTextError, PlainQuery, parse_urlencoded, percent_decode};

fn hex_digit(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// The reference decoder: the documented rules, nothing clever.
fn reference_decode(
    raw: &[u8],
    plus_as_space: bool,
    base: usize,
) -> Result<String, DecodeTextError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' {
            let high = raw.get(i + 1).copied().and_then(hex_digit);
            let low = raw.get(i + 2).copied().and_then(hex_digit);
            match (high, low) {
                (Some(h), Some(l)) => out.push(h * 16 + l),
                _ => return Err(DecodeTextError::BadEscape { offset: base + i }),
            }
            i += 3;
        } else if plus_as_space && raw[i] == b'+' {
            out.push(b' ');
            i += 1;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| DecodeTextError::InvalidUtf8)
}

/// Percent-encodes every byte but the unreserved ones; with `form`, a space is `+`.
fn encode(bytes: &[u8], form: bool) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    for &b in bytes {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char);
            }
            b' ' if form => out.push('+'),
            _ => {
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                out.push('%');
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 15)]));
            }
        }
    }
    out
}

/// The reference parser: split on `&`, skip empty segments, count against the limit, split at
/// the first `=`, decode both halves (offsets relative to the whole text), group naively.
fn reference_parse(
    raw: &[u8],
    max_pairs: usize,
) -> Result<Vec<(String, TextValue)>, DecodeTextError> {
    let mut grouped: Vec<(String, TextValue)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut count = 0;
    let mut start = 0;
    while start <= raw.len() {
        let end = raw[start..]
            .iter()
            .position(|&b| b == b'&')
            .map_or(raw.len(), |p| start + p);
        let segment = &raw[start..end];
        if !segment.is_empty() {
            if count == max_pairs {
                return Err(DecodeTextError::TooManyPairs { limit: max_pairs });
            }
            count += 1;
            let eq = segment.iter().position(|&b| b == b'=');
            let (key, value, value_at) = match eq {
                Some(eq) => (&segment[..eq], &segment[eq + 1..], start + eq + 1),
                None => (segment, &b""[..], end),
            };
            let key = reference_decode(key, true, start)?;
            let value = reference_decode(value, true, value_at)?;
            // Group through an index of first appearances (linear; the code under test sorts).
            match index.get(&key) {
                Some(&at) => {
                    let slot = &mut grouped[at].1;
                    *slot = match std::mem::replace(slot, TextValue::Many(Vec::new())) {
                        TextValue::One(first) => TextValue::Many(vec![first, value]),
                        TextValue::Many(mut list) => {
                            list.push(value);
                            TextValue::Many(list)
                        }
                    };
                }
                None => {
                    index.insert(key.clone(), grouped.len());
                    grouped.push((key, TextValue::One(value)));
                }
            }
        }
        start = end + 1;
    }
    Ok(grouped)
}

fn check_offset(raw: &[u8], base: usize, error: &DecodeTextError) {
    if let DecodeTextError::BadEscape { offset } = *error {
        assert_eq!(
            raw.get(offset - base),
            Some(&b'%'),
            "BadEscape offset {offset} is not a %"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let [flags, limit, raw @ ..] = data else {
        return;
    };
    let plus_as_space = flags & 1 == 1;
    let base = usize::from(flags >> 1);
    let max_pairs = match *limit {
        n @ 0..=63 => usize::from(n),
        _ => 1000,
    };

    // percent_decode against the reference.
    let decoded = percent_decode(raw, plus_as_space, base);
    let expected = reference_decode(raw, plus_as_space, base);
    match (&decoded, &expected) {
        (Ok(got), Ok(want)) => assert_eq!(got, want),
        (Err(got), Err(want)) => {
            assert_eq!(got, want);
            check_offset(raw, base, got);
        }
        _ => panic!("percent_decode {decoded:?} but reference {expected:?}"),
    }
    let needs_work = raw
        .iter()
        .any(|&b| b == b'%' || (plus_as_space && b == b'+'));
    if let Ok(text) = &decoded {
        assert_eq!(matches!(text, Cow::Borrowed(_)), !needs_work, "borrowing");
        // Decode, encode, decode: the same text.
        let encoded = encode(text.as_bytes(), plus_as_space);
        let again =
            percent_decode(encoded.as_bytes(), plus_as_space, 0).expect("an encoded text decodes");
        assert_eq!(again, *text);
    }
    // Encode any bytes, decode: the bytes (when UTF-8).
    let encoded = encode(raw, plus_as_space);
    match (
        percent_decode(encoded.as_bytes(), plus_as_space, 0),
        std::str::from_utf8(raw),
    ) {
        (Ok(text), Ok(original)) => assert_eq!(text, original),
        (Err(DecodeTextError::InvalidUtf8), Err(_)) => {}
        (got, original) => panic!("round trip of {raw:?}: {got:?} vs {original:?}"),
    }

    // parse_urlencoded against the reference.
    let parsed = parse_urlencoded(raw, max_pairs);
    let expected = reference_parse(raw, max_pairs);
    match (&parsed, &expected) {
        (Ok(got), Ok(want)) => assert_eq!(got, want),
        (Err(got), Err(want)) => {
            assert_eq!(got, want);
            check_offset(raw, 0, got);
        }
        _ => panic!("parse_urlencoded {parsed:?} but reference {expected:?}"),
    }
    if let Ok(pairs) = parsed {
        assert!(pairs.len() <= max_pairs);
        let mut keys = HashSet::new();
        for (key, _) in &pairs {
            assert!(keys.insert(key), "key {key:?} repeated");
        }
        // Serialize and parse again: the same pairs.
        let mut query = String::new();
        for (key, value) in &pairs {
            let values = match value {
                TextValue::One(v) => std::slice::from_ref(v),
                TextValue::Many(list) => {
                    assert!(list.len() >= 2, "Many with fewer than two values");
                    list.as_slice()
                }
            };
            for v in values {
                if !query.is_empty() {
                    query.push('&');
                }
                query.push_str(&encode(key.as_bytes(), true));
                query.push('=');
                query.push_str(&encode(v.as_bytes(), true));
            }
        }
        let again =
            parse_urlencoded(query.as_bytes(), usize::MAX).expect("a serialized query parses");
        assert_eq!(again, pairs, "re-parsing {query:?}");
    }

    // A query the parse stage keeps as it is reads exactly as the decoded one, and the pair limit
    // holds the same.
    let Some(uri) = std::str::from_utf8(raw)
        .ok()
        .and_then(|text| http::Uri::try_from(format!("/p?{text}")).ok())
    else {
        return;
    };
    let Some(query) = uri.query() else {
        return;
    };
    let general = parse_urlencoded(query.as_bytes(), max_pairs);
    match (PlainQuery::check(&uri, max_pairs), &general) {
        (Ok(Some(plain)), Ok(pairs)) => {
            assert_eq!(&plain.to_pairs(), pairs, "plain query {query:?}");
            assert_eq!(plain.len(), pairs.len());
            assert!(!query.contains(['%', '+']), "{query:?} is not plain");
        }
        (Ok(None), Ok(pairs)) => {
            // Kept only when decoding is needed: escapes, `+`, a repeat, none or too many.
            let needs_decoding = query.contains(['%', '+'])
                || pairs.is_empty()
                || pairs.len() > PlainQuery::PAIRS_MAX
                || pairs.iter().any(|(_, v)| matches!(v, TextValue::Many(_)));
            assert!(needs_decoding, "plain query {query:?} was not kept");
        }
        (Ok(None), Err(_)) => {}
        (Err(got), Err(want)) => assert_eq!(&got, want),
        (plain, general) => panic!("{query:?}: plain {plain:?} but general {general:?}"),
    }
});
