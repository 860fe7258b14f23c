//! An opaque, URL-safe, versioned cursor codec.
//!
//! A cursor is `base64url(version ‖ JSON ‖ checksum)`. The checksum catches truncated or edited
//! cursors (a 400, never a panic); it is not a signature: put nothing secret or authoritative in
//! a cursor, and check what it names as you would any input.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use serde::de::DeserializeOwned;
use strata_core::{ApiError, ErrorKind};

const VERSION: u8 = 1;

/// The shortest cursor [`encode_cursor`] writes: a version byte, at least one byte of JSON and
/// the four-byte checksum are six bytes, eight base64url characters. [`decode_cursor`] refuses
/// every shorter string.
pub const MIN_CURSOR_LENGTH: usize = 8;

/// What every cursor [`encode_cursor`] writes matches: base64url's alphabet, without padding.
pub(crate) const CURSOR_PATTERN: &str = "^[A-Za-z0-9_-]+$";

/// FNV-1a, 32 bits: small and enough to detect accidental damage.
fn checksum(bytes: &[u8]) -> [u8; 4] {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in bytes {
        hash ^= u32::from(*byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash.to_be_bytes()
}

/// Encodes `position` (e.g. the last id of a page) as a cursor.
///
/// ```
/// use strata_paginate::{decode_cursor, encode_cursor};
///
/// let cursor = encode_cursor(&("2026-11-21", 42u64));
/// assert!(cursor.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
/// let position: (String, u64) = decode_cursor(&cursor).unwrap();
/// assert_eq!(position, ("2026-11-21".to_owned(), 42));
/// assert_eq!(decode_cursor::<u64>("garbage").unwrap_err().status(), 400);
/// ```
pub fn encode_cursor<T: Serialize + ?Sized>(position: &T) -> String {
    let mut bytes = vec![VERSION];
    // Serializing plain data into memory cannot fail; a type that fails yields an empty position.
    let _ = serde_json::to_writer(&mut bytes, position);
    let sum = checksum(&bytes);
    bytes.extend_from_slice(&sum);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Decodes a cursor made by [`encode_cursor`]; anything else is a 400 naming the `cursor`.
pub fn decode_cursor<T: DeserializeOwned>(cursor: &str) -> Result<T, ApiError> {
    let invalid =
        |why: &str| ApiError::bad_request(ErrorKind::InputValidation, format!("cursor: {why}"));
    let bytes = URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| invalid("not a cursor of this API"))?;
    if bytes.len() < 5 {
        return Err(invalid("not a cursor of this API"));
    }
    let (body, sum) = bytes.split_at(bytes.len() - 4);
    if checksum(body) != sum {
        return Err(invalid("damaged or altered"));
    }
    if body[0] != VERSION {
        return Err(invalid("from an incompatible version"));
    }
    serde_json::from_slice(&body[1..]).map_err(|_| invalid("does not name a position here"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_are_base64url_of_at_least_eight_characters() {
        let shortest = encode_cursor(&0u8);
        assert_eq!(shortest.len(), MIN_CURSOR_LENGTH);
        for cursor in [
            shortest,
            encode_cursor(&("2026-11-21", u64::MAX)),
            encode_cursor("ünïcode ~?/+"),
        ] {
            assert!(cursor.len() >= MIN_CURSOR_LENGTH);
            assert!(
                cursor
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                "{cursor}"
            );
        }
        // The longest string decode_cursor could read that is shorter: a version and a
        // checksum around no JSON at all, seven characters, is no position.
        let mut empty = vec![VERSION];
        empty.extend_from_slice(&checksum(&[VERSION]));
        let empty = URL_SAFE_NO_PAD.encode(empty);
        assert_eq!(empty.len(), MIN_CURSOR_LENGTH - 1);
        assert_eq!(
            decode_cursor::<serde_json::Value>(&empty)
                .unwrap_err()
                .message(),
            "cursor: does not name a position here"
        );
    }

    #[test]
    fn tampering_is_detected() {
        let cursor = encode_cursor(&7u32);
        let mut bytes = URL_SAFE_NO_PAD.decode(&cursor).unwrap();
        bytes[1] ^= 1;
        let tampered = URL_SAFE_NO_PAD.encode(&bytes);
        assert_eq!(
            decode_cursor::<u32>(&tampered).unwrap_err().message(),
            "cursor: damaged or altered"
        );
        assert_eq!(
            decode_cursor::<u32>(&cursor[..cursor.len() - 2])
                .unwrap_err()
                .status(),
            400
        );
        assert_eq!(decode_cursor::<u32>("").unwrap_err().status(), 400);
        assert_eq!(
            decode_cursor::<String>(&cursor).unwrap_err().message(),
            "cursor: does not name a position here"
        );
    }
}
