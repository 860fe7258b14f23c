//! The cookies of a request, read within limits, and signed cookies verified.
//!
//! A signed value is marked with `s:` before it, as express's `cookie-parser` marks its own:
//! a cookie so marked is a signed cookie, verified or absent, and never a plain one, so that a
//! forged signature cannot pass as a plain value of the same name. Its signature (HMAC-SHA256,
//! the `hmac` and `sha2` crates: no cryptography is written here) covers the cookie's name,
//! the value, and the expiry when the cookie has one: a value signed for one cookie is refused
//! under another, and one replayed after its expiry is refused. [`CookieKeys`] holds one key
//! per secret, for rotation: the first signs, every one verifies, so a new secret goes first
//! and the old one stays until the cookies it signed have expired.
//!
//! ```
//! use strata_input::cookies::{CookieKeys, RequestCookies};
//!
//! let keys = CookieKeys::new(["a secret of at least thirty-two bytes!"]).unwrap();
//! let signed = keys.sign("session", "ada");
//! assert_ne!(signed, "ada");
//!
//! let mut headers = http::HeaderMap::new();
//! headers.insert("cookie", format!("theme=dark; session={signed}").parse().unwrap());
//! let cookies = RequestCookies::parse(&headers).unwrap();
//! assert_eq!(cookies.get("theme"), Some("dark"));
//! assert_eq!(cookies.get_signed("session", &keys).as_deref(), Some("ada"));
//! // An unsigned or forged value is not there at all, and a signed one is not a plain one.
//! assert_eq!(cookies.get_signed("theme", &keys), None);
//! assert_eq!(cookies.get("session"), None);
//! // Nor is a value signed for another cookie.
//! assert_eq!(keys.verify("admin", &signed), None);
//! ```

use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use cookie::{Cookie, CookieJar, Key};
use hmac::{Hmac, Mac};
use http::header::COOKIE;
use http::{HeaderMap, HeaderValue};
use sha2::Sha256;
use strata_core::{ApiError, ErrorKind};

/// The most cookies a request may carry: more is a 400. Browsers keep about 180 per site.
pub const MAX_COOKIES: usize = 180;

/// The longest a cookie (name and value) may be: longer is a 400. RFC 6265 §6.1 asks user
/// agents for at least 4096 bytes per cookie, which is what browsers keep.
pub const MAX_COOKIE_BYTES: usize = 4096;

/// What a signed cookie's value starts with (express's mark too).
pub const SIGNED_MARK: &str = "s:";

/// The shortest secret [`CookieKeys`] accepts, in bytes (the HKDF master key the `cookie`
/// crate derives its signing key from).
pub const MIN_SECRET_BYTES: usize = 32;

/// The length of a signature in a signed value: 32 bytes of HMAC-SHA256 in unpadded URL-safe
/// base64 (no `+`, `/` or `=`, which a `Set-Cookie` would percent-encode).
const DIGEST_CHARS: usize = 43;

/// What the key of name-bound signatures is derived with, from the key of the `cookie`
/// crate's value-only ones: the two schemes never share a key, so no value signed the old way
/// can pass for one signed the new way, whatever it holds.
const BOUND_KEY_LABEL: &[u8] = b"strata signed cookie: name, expiry, value";

/// The keys signed cookies are signed and verified with: the first signs, all verify (key
/// rotation). Cloning shares them; `Debug` does not show them.
///
/// A signed value is `s:`, the signature, the expiry (seconds since 1970, or nothing) and
/// `.` before the value: `s:<43 characters>1767225600.ada`. The signature covers the
/// cookie's name, the expiry and the value, so a client cannot move a value to another
/// cookie, nor keep using it after its expiry (which [`sign_until`](Self::sign_until) sets;
/// the cookie middleware sets it from the cookie's `Max-Age` or `Expires`).
///
/// # Migrating from value-only signatures
///
/// Earlier versions signed the value alone (the `cookie` crate's scheme:
/// `s:<44 characters>ada`), which these keys refuse unless
/// [`accept_value_only`](Self::accept_value_only) asks otherwise. To migrate without signing
/// everyone out: deploy with `accept_value_only(true)`; set each signed cookie again where it
/// is read (what is set now is name-bound); once the longest-lived of the old cookies has
/// expired (or been set again), deploy without it.
#[derive(Clone)]
pub struct CookieKeys {
    keys: Arc<[Keys]>,
    value_only: bool,
}

/// One secret's keys: the `cookie` crate's (value-only signatures, read when migrating) and
/// the one derived from it for name-bound signatures.
struct Keys {
    value_only: Key,
    bound: Hmac<Sha256>,
}

impl CookieKeys {
    /// Keys from secrets, newest first; each at least [`MIN_SECRET_BYTES`] long (a random
    /// string from a secret store, never a word).
    ///
    /// # Errors
    ///
    /// [`CookieKeyError`] when no secret is given or one is too short.
    pub fn new<S: AsRef<[u8]>>(
        secrets: impl IntoIterator<Item = S>,
    ) -> Result<Self, CookieKeyError> {
        let mut keys = Vec::new();
        for (index, secret) in secrets.into_iter().enumerate() {
            let secret = secret.as_ref();
            if secret.len() < MIN_SECRET_BYTES {
                return Err(CookieKeyError::TooShort {
                    index,
                    length: secret.len(),
                });
            }
            let value_only = Key::derive_from(secret);
            let bound = hmac(value_only.signing())
                .chain_update(BOUND_KEY_LABEL)
                .finalize()
                .into_bytes();
            keys.push(Keys {
                value_only,
                bound: hmac(&bound),
            });
        }
        if keys.is_empty() {
            return Err(CookieKeyError::None);
        }
        Ok(Self {
            keys: keys.into(),
            value_only: false,
        })
    }

    /// Whether values signed the old way (the value alone, without name or expiry) still
    /// verify: off by default, as such a value can be moved to another cookie and never
    /// expires. Only to migrate (see [`CookieKeys`]); what is signed is name-bound either way.
    #[must_use]
    pub fn accept_value_only(mut self, accept: bool) -> Self {
        self.value_only = accept;
        self
    }

    /// `value` signed for the cookie `name` with the first key, marked `s:`, valid until the
    /// cookie is removed: what a `Set-Cookie` of the signed cookie `name` carries.
    pub fn sign(&self, name: &str, value: &str) -> String {
        self.signed(name, "", value)
    }

    /// `value` signed for the cookie `name`, valid until `expires` (to the second): after
    /// it, [`verify`](Self::verify) refuses it, though a client may keep sending it.
    pub fn sign_until(&self, name: &str, value: &str, expires: SystemTime) -> String {
        let seconds = expires
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        self.signed(name, &seconds.to_string(), value)
    }

    fn signed(&self, name: &str, expires: &str, value: &str) -> String {
        let digest = bound_digest(&self.keys[0].bound, name, expires, value);
        format!(
            "{SIGNED_MARK}{}{expires}.{value}",
            URL_SAFE_NO_PAD.encode(digest.finalize().into_bytes())
        )
    }

    /// The value `signed` stands for if one of the keys signed it for the cookie `name` and
    /// its expiry has not passed; `None` for a forged, altered, unmarked, unsigned or expired
    /// value, or one signed for another name. A value signed the old way (value only) when
    /// [`accept_value_only`](Self::accept_value_only) asks.
    pub fn verify(&self, name: &str, signed: &str) -> Option<String> {
        let signed = signed.strip_prefix(SIGNED_MARK)?;
        self.verify_bound(name, signed).or_else(|| {
            self.value_only
                .then(|| self.verify_value_only(signed))
                .flatten()
        })
    }

    fn verify_bound(&self, name: &str, signed: &str) -> Option<String> {
        let digest = URL_SAFE_NO_PAD.decode(signed.get(..DIGEST_CHARS)?).ok()?;
        let (expires, value) = signed[DIGEST_CHARS..].split_once('.')?;
        if !expires.bytes().all(|byte| byte.is_ascii_digit()) {
            return None;
        }
        self.keys
            .iter()
            .any(|keys| {
                bound_digest(&keys.bound, name, expires, value)
                    .verify_slice(&digest)
                    .is_ok()
            })
            .then_some(())?;
        // The expiry is checked once the signature is: a forged one is never parsed.
        if !expires.is_empty() {
            let expires: u64 = expires.parse().ok()?;
            let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs();
            if now >= expires {
                return None;
            }
        }
        Some(value.to_owned())
    }

    /// The `cookie` crate's verification of a value-only signature.
    fn verify_value_only(&self, signed: &str) -> Option<String> {
        let jar = CookieJar::new();
        self.keys.iter().find_map(|keys| {
            jar.signed(&keys.value_only)
                .verify(Cookie::new("", signed.to_owned()))
                .map(|cookie| cookie.value().to_owned())
        })
    }

    /// How many keys verify (the first of them signs).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Always `false`: there is at least one key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// HMAC-SHA256 keyed with `key` (any length suits HMAC).
fn hmac(key: &[u8]) -> Hmac<Sha256> {
    Hmac::new_from_slice(key).expect("HMAC takes keys of any length")
}

/// The MAC of a name-bound signature, before finalizing: over the name's length and the name
/// (so that no name runs into what follows), the expiry (digits) and `.`, and the value.
fn bound_digest(key: &Hmac<Sha256>, name: &str, expires: &str, value: &str) -> Hmac<Sha256> {
    let mut mac = key.clone();
    mac.update(&(name.len() as u64).to_be_bytes());
    mac.update(name.as_bytes());
    mac.update(expires.as_bytes());
    mac.update(b".");
    mac.update(value.as_bytes());
    mac
}

impl fmt::Debug for CookieKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CookieKeys")
            .field("keys", &self.keys.len())
            .field("value_only", &self.value_only)
            .finish_non_exhaustive()
    }
}

/// Why secrets cannot be [`CookieKeys`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CookieKeyError {
    /// No secret was given.
    #[error("no cookie secret given")]
    None,
    /// The secret at `index` (0 is the first) has only `length` bytes.
    #[error(
        "cookie secret {} has {length} bytes, at least {} are needed",
        .index + 1,
        MIN_SECRET_BYTES
    )]
    TooShort {
        /// Its place in the list.
        index: usize,
        /// Its length in bytes.
        length: usize,
    },
}

/// The cookies a request carries, percent-decoded, in order.
///
/// Every `Cookie` header is read (HTTP/2 clients may split cookies over several). A pair
/// without `=` or without a name is skipped, as user agents skip them (RFC 6265 §5.2); a
/// header that is not UTF-8, more than [`MAX_COOKIES`] cookies, or one longer than
/// [`MAX_COOKIE_BYTES`] is a 400 naming the problem. Of two cookies of one name the first is
/// kept: user agents send the one of the longer path first (RFC 6265 §5.4).
///
/// The header is kept as it came (a shared reference to the request's bytes, no copy). A
/// header of at most [`MAX_COOKIES`] pieces, no longer than [`MAX_COOKIE_BYTES`] and without a
/// `%` (what browsers send for a site's own cookies) is checked against the limits by those
/// counts alone, and each lookup reads it: a request's handler reads a cookie or two, and
/// finding every pair first cost more than the lookups (about 950 instructions for three
/// cookies, against about 150 for the lookup of one). Any other header has its pairs found
/// when it is read, as places in it, with the values that needed percent-decoding (a lookup
/// returns a borrowed value, so a decoded one must be kept).
#[derive(Clone, Default)]
pub struct RequestCookies {
    text: Text,
    /// The pairs, found when the header was read; `None` when lookups read the text.
    index: Option<Index>,
}

/// The pairs of a header, in order, the first of each name.
#[derive(Clone, Default)]
struct Index {
    /// The values that were percent-decoded, one after the other.
    decoded: String,
    pairs: Vec<Pair>,
}

/// Where the cookies are read from.
#[derive(Clone)]
enum Text {
    /// The request's one `Cookie` header.
    Header(HeaderValue),
    /// Its several `Cookie` headers, joined by `;` (which splits pairs as the headers did).
    Joined(Vec<u8>),
}

impl Default for Text {
    fn default() -> Self {
        Text::Joined(Vec::new())
    }
}

impl Text {
    fn bytes(&self) -> &[u8] {
        match self {
            Text::Header(value) => value.as_bytes(),
            Text::Joined(bytes) => bytes,
        }
    }
}

/// One cookie: its name in the text, its value in the text or among the decoded values.
#[derive(Clone)]
struct Pair {
    name: Range<usize>,
    value: Range<usize>,
    decoded: bool,
}

impl RequestCookies {
    /// Reads the `Cookie` headers of `headers`.
    ///
    /// # Errors
    ///
    /// A 400 when a header is not UTF-8, or a limit is exceeded.
    pub fn parse(headers: &HeaderMap) -> Result<Self, ApiError> {
        let mut all = headers.get_all(COOKIE).into_iter();
        let text = match (all.next(), all.next()) {
            (None, _) => return Ok(Self::default()),
            (Some(one), None) => {
                utf8(one.as_bytes())?;
                Text::Header(one.clone())
            }
            (Some(first), Some(second)) => {
                let mut joined = Vec::new();
                for header in [first, second].into_iter().chain(all) {
                    utf8(header.as_bytes())?;
                    if !joined.is_empty() {
                        joined.push(b';');
                    }
                    joined.extend_from_slice(header.as_bytes());
                }
                Text::Joined(joined)
            }
        };
        let index = needs_index(text.bytes())
            .then(|| Index::read(text.bytes()))
            .transpose()?;
        Ok(Self { text, index })
    }

    /// The same, with the pairs found whatever the header: what a lookup in the text must
    /// agree with (tests).
    #[cfg(test)]
    fn parse_indexed(headers: &HeaderMap) -> Result<Self, ApiError> {
        let mut cookies = Self::parse(headers)?;
        if cookies.index.is_none() {
            cookies.index = Some(Index::read(cookies.text.bytes())?);
        }
        Ok(cookies)
    }
    /// The value of the plain cookie `name` (not one marked signed, see [`SIGNED_MARK`]).
    pub fn get(&self, name: &str) -> Option<&str> {
        let value = self.find(name)?;
        (!value.starts_with(SIGNED_MARK)).then_some(value)
    }

    /// The value of the signed cookie `name`, when one of `keys` signed it.
    pub fn get_signed(&self, name: &str, keys: &CookieKeys) -> Option<String> {
        keys.verify(name, self.find(name)?)
    }

    /// The value of the cookie `name`, signed or not: names compared as bytes.
    fn find(&self, name: &str) -> Option<&str> {
        let bytes = self.text.bytes();
        match &self.index {
            Some(index) => index
                .pairs
                .iter()
                .find(|pair| bytes[pair.name.clone()] == *name.as_bytes())
                .map(|pair| self.value_in(index, pair)),
            None => find_in(bytes, name.as_bytes()).map(|value| self.text_at(value)),
        }
    }

    /// The plain cookies, name and value, in order: those marked signed are left out
    /// (express's `req.cookies`).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.all()
            .filter(|(_, value)| !value.starts_with(SIGNED_MARK))
    }

    /// Every cookie, signed ones with their signature, in order.
    pub fn all(&self) -> impl Iterator<Item = (&str, &str)> {
        let indexed = self.index.iter().flat_map(move |index| {
            index
                .pairs
                .iter()
                .map(move |pair| (self.text_at(pair.name.clone()), self.value_in(index, pair)))
        });
        // A header read at each lookup has its pairs found now (a listing is rarer than a
        // lookup). It is within the limits, so this cannot fail, and has no `%`, so every
        // value is in the text.
        let read = self
            .index
            .is_none()
            .then(|| Index::read(self.text.bytes()).unwrap_or_default().pairs)
            .into_iter()
            .flatten()
            .map(move |pair| (self.text_at(pair.name), self.text_at(pair.value)));
        indexed.chain(read)
    }

    /// Whether a cookie of this name was sent, signed or not.
    pub fn contains(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// A value of `index`'s pairs: in the text or among the decoded values.
    fn value_in<'a>(&'a self, index: &'a Index, pair: &Pair) -> &'a str {
        if pair.decoded {
            &index.decoded[pair.value.clone()]
        } else {
            self.text_at(pair.value.clone())
        }
    }

    /// A name or a value in the text. The text was checked to be UTF-8 and `range` is cut at
    /// ASCII separators, so it is UTF-8 too; the check again is a few instructions for a
    /// cookie, and never fails.
    fn text_at(&self, range: Range<usize>) -> &str {
        std::str::from_utf8(&self.text.bytes()[range]).unwrap_or_default()
    }

    /// The signed cookies one of `keys` signed, with the values signed: forged, altered and
    /// plain ones are left out (express's `req.signedCookies`).
    pub fn signed<'a>(
        &'a self,
        keys: &'a CookieKeys,
    ) -> impl Iterator<Item = (&'a str, String)> + 'a {
        self.all()
            .filter_map(|(name, signed)| keys.verify(name, signed).map(|value| (name, value)))
    }

    /// How many cookies there are, signed ones included.
    pub fn len(&self) -> usize {
        match &self.index {
            Some(index) => index.pairs.len(),
            None => Index::read(self.text.bytes()).map_or(0, |index| index.pairs.len()),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pairs, name and value.
    pub fn into_pairs(self) -> Vec<(String, String)> {
        self.all()
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect()
    }
}

impl Index {
    /// Finds the pairs of `bytes`, within the limits.
    fn read(bytes: &[u8]) -> Result<Self, ApiError> {
        let mut index = Self::default();
        let Self {
            decoded: all_decoded,
            pairs,
        } = &mut index;
        for RawPair {
            name,
            value: raw,
            escaped,
        } in pairs_of(bytes)
        {
            let name_bytes = &bytes[name.clone()];
            // Percent-decoded only when there is something to decode; the text is UTF-8
            // (checked), and so is each part of it cut at ASCII separators.
            let (value, decoded) = if escaped {
                let Some(text) = decoded_value(&bytes[raw]) else {
                    continue;
                };
                let start = all_decoded.len();
                all_decoded.push_str(&text);
                (start..all_decoded.len(), true)
            } else {
                (raw, false)
            };
            if name.len() + value.len() > MAX_COOKIE_BYTES {
                return Err(ApiError::bad_request(
                    ErrorKind::Parse,
                    format!(
                        "Cookie {}: longer than {MAX_COOKIE_BYTES} bytes",
                        shown(&String::from_utf8_lossy(name_bytes))
                    ),
                ));
            }
            if pairs
                .iter()
                .any(|known| bytes[known.name.clone()] == *name_bytes)
            {
                continue;
            }
            if pairs.len() == MAX_COOKIES {
                return Err(ApiError::bad_request(
                    ErrorKind::Parse,
                    format!("Cookie header: more than {MAX_COOKIES} cookies"),
                ));
            }
            pairs.push(Pair {
                name,
                value,
                decoded,
            });
        }
        Ok(index)
    }
}

impl PartialEq for RequestCookies {
    fn eq(&self, other: &Self) -> bool {
        self.all().eq(other.all())
    }
}

impl Eq for RequestCookies {}

impl fmt::Debug for RequestCookies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RequestCookies")
            .field(&self.all().collect::<Vec<_>>())
            .finish()
    }
}

/// The longest text that cannot hold more than [`MAX_COOKIES`] cookies: each takes at least
/// two bytes (`a=`) and a `;` after all but the last.
const FEW_COOKIES_BYTES: usize = 3 * MAX_COOKIES + 1;

/// Whether the pairs of `text` must be found when it is read: not for a text without a `%`
/// (nothing to decode) whose length keeps it within the limits, or, when longer, whose count
/// of `;` does.
fn needs_index(text: &[u8]) -> bool {
    memchr::memchr(b'%', text).is_some()
        || (text.len() > FEW_COOKIES_BYTES
            && (text.len() > MAX_COOKIE_BYTES
                || memchr::memchr_iter(b';', text).count() >= MAX_COOKIES))
}

/// The value of the first cookie named `name` in `text` (trimmed, as [`pairs_of`] gives
/// it), reading each piece only as far as its name: the piece, after blanks, must start with
/// `name`, then blanks and `=`. A `name` that no piece could give is never there: empty, with
/// a `=` (a piece's name ends at its first), or with blanks at its end ([`pairs_of`] trims
/// them); one with a `;` or blanks in front never matches a piece to begin with.
fn find_in(text: &[u8], name: &[u8]) -> Option<Range<usize>> {
    let blank = |byte: &u8| *byte == b' ' || *byte == b'\t';
    let (Some(first), Some(last)) = (name.first(), name.last()) else {
        return None;
    };
    if blank(last) || name.contains(&b'=') {
        return None;
    }
    let mut start = 0;
    loop {
        let end = memchr::memchr(b';', &text[start..]).map_or(text.len(), |at| start + at);
        let piece = &text[start..end];
        let lead = piece.iter().take_while(|byte| blank(byte)).count();
        // The first byte compared before the rest: most pieces differ there.
        if piece.get(lead) == Some(first)
            && let Some(rest) = piece[lead..].strip_prefix(name)
        {
            let gap = rest.iter().take_while(|byte| blank(byte)).count();
            if rest.get(gap) == Some(&b'=') {
                let equals = start + lead + name.len() + gap;
                return Some(trimmed(text, equals + 1..end));
            }
        }
        if end == text.len() {
            return None;
        }
        start = end + 1;
    }
}

/// Nothing when `bytes` are UTF-8; the 400 of a `Cookie` header that is not, otherwise.
fn utf8(bytes: &[u8]) -> Result<(), ApiError> {
    // Cookie headers are ASCII (RFC 6265's cookie-octets): that check is the cheaper one.
    if bytes.is_ascii() {
        return Ok(());
    }
    std::str::from_utf8(bytes)
        .map(drop)
        .map_err(|_| ApiError::bad_request(ErrorKind::Parse, "Cookie header is not valid UTF-8"))
}

/// One `name=value` pair of a `Cookie` header's text: the places of its name and of its (not
/// yet decoded) value, both trimmed of spaces and tabs, and whether the value holds a `%`.
struct RawPair {
    name: Range<usize>,
    value: Range<usize>,
    escaped: bool,
}

/// The bytes the split of a `Cookie` header stops at: `;`, `=` and `%`.
const STOPS: [bool; 256] = {
    let mut stops = [false; 256];
    stops[b';' as usize] = true;
    stops[b'=' as usize] = true;
    stops[b'%' as usize] = true;
    stops
};

/// The pairs of a `Cookie` header's text. Pairs a user agent would skip (RFC 6265 §5.2: no
/// `=`, an empty name) are skipped. Split here rather than by the `cookie` crate's parser,
/// which builds a whole `Cookie` (attributes and all) per pair: ~5,000 instructions for three
/// cookies. One pass over the bytes, a table lookup each, stops only at `;`, `=` and `%`:
/// `memchr`'s searches, one per separator and per value, cost ~450 instructions more for
/// three cookies (their set-up, for separators a few bytes apart), and a comparison of each
/// byte with the three separators ~700 more. The differential test below holds it to the
/// `cookie` crate's parser.
fn pairs_of(text: &[u8]) -> impl Iterator<Item = RawPair> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        while start < text.len() {
            // The first `=` of the piece, and whether a `%` came after it.
            let mut equals = None;
            let mut escaped = false;
            let mut at = start;
            let end = loop {
                let Some(offset) = text[at..].iter().position(|&byte| STOPS[usize::from(byte)])
                else {
                    break text.len();
                };
                let stop = at + offset;
                match text[stop] {
                    b';' => break stop,
                    b'=' => equals = equals.or(Some(stop)),
                    _ => escaped |= equals.is_some(),
                }
                at = stop + 1;
            };
            let piece_start = std::mem::replace(&mut start, end + 1);
            let Some(equals) = equals else {
                continue;
            };
            let name = trimmed(text, piece_start..equals);
            if name.is_empty() {
                continue;
            }
            return Some(RawPair {
                name,
                value: trimmed(text, equals + 1..end),
                escaped,
            });
        }
        None
    })
}

/// `range` without the spaces and tabs at either end of it.
fn trimmed(text: &[u8], mut range: Range<usize>) -> Range<usize> {
    let blank = |b: u8| b == b' ' || b == b'\t';
    while range.start < range.end && blank(text[range.start]) {
        range.start += 1;
    }
    while range.start < range.end && blank(text[range.end - 1]) {
        range.end -= 1;
    }
    range
}

/// A value percent-decoded, or `None` when it does not decode to UTF-8 (the pair is skipped,
/// as the `cookie` crate skips it).
fn decoded_value(raw: &[u8]) -> Option<std::borrow::Cow<'_, str>> {
    percent_encoding::percent_decode(raw).decode_utf8().ok()
}

/// A cookie name for a message: its first 40 characters.
fn shown(name: &str) -> &str {
    name.char_indices()
        .nth(40)
        .map_or(name, |(end, _)| &name[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for value in values {
            map.append(COOKIE, value.parse().unwrap());
        }
        map
    }

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn every_header_is_read_decoded_and_the_first_of_a_name_kept() {
        let cookies =
            RequestCookies::parse(&headers(&["a=1; b=hello%20world", "a=2; c=3"])).unwrap();
        assert_eq!(
            cookies.iter().collect::<Vec<_>>(),
            [("a", "1"), ("b", "hello world"), ("c", "3")]
        );
    }

    #[test]
    fn malformed_pairs_are_skipped_and_bytes_refused() {
        let cookies = RequestCookies::parse(&headers(&["novalue; =nameless; ok=1;;"])).unwrap();
        assert_eq!(cookies.iter().collect::<Vec<_>>(), [("ok", "1")]);
        let mut map = HeaderMap::new();
        map.insert(COOKIE, http::HeaderValue::from_bytes(b"a=\xff").unwrap());
        let error = RequestCookies::parse(&map).unwrap_err();
        assert_eq!(
            (error.status().as_u16(), error.message()),
            (400, "Cookie header is not valid UTF-8")
        );
    }

    #[test]
    fn limits_are_a_400_naming_them() {
        let long = format!("big={}", "x".repeat(MAX_COOKIE_BYTES));
        let error = RequestCookies::parse(&headers(&[&long])).unwrap_err();
        assert_eq!(error.message(), "Cookie big: longer than 4096 bytes");
        let many: Vec<String> = (0..=MAX_COOKIES).map(|i| format!("c{i}=1")).collect();
        let error = RequestCookies::parse(&headers(&[&many.join("; ")])).unwrap_err();
        assert_eq!(error.message(), "Cookie header: more than 180 cookies");
        // Exactly at the limits is fine.
        let fits = format!("big={}", "x".repeat(MAX_COOKIE_BYTES - 3));
        assert!(RequestCookies::parse(&headers(&[&fits])).is_ok());
        let many: Vec<String> = (0..MAX_COOKIES).map(|i| format!("c{i}=1")).collect();
        assert!(RequestCookies::parse(&headers(&[&many.join("; ")])).is_ok());
    }

    #[test]
    fn signatures_verify_with_any_key_and_sign_with_the_first() {
        let old = CookieKeys::new([SECRET]).unwrap();
        let rotated = CookieKeys::new(["a newer secret, also 32 bytes long", SECRET]).unwrap();
        let by_old = old.sign("session", "ada");
        assert_eq!(rotated.verify("session", &by_old).as_deref(), Some("ada"));
        let by_new = rotated.sign("session", "ada");
        assert_ne!(by_new, by_old);
        assert_eq!(old.verify("session", &by_new), None);
        assert!(by_old.starts_with("s:"));
        // Altered, unmarked or unsigned: absent.
        let altered = by_old.replace("ada", "eve");
        assert_eq!(old.verify("session", &by_old[2..]), None);
        assert_eq!(old.verify("session", &altered), None);
        assert_eq!(old.verify("session", "ada"), None);
        assert_eq!(old.verify("session", ""), None);
        assert_eq!(old.verify("session", "ü".repeat(40).as_str()), None);
    }

    /// `ada` signed for `session` with [`SECRET`] the old way (HMAC of the value only), as
    /// earlier versions set it.
    const VALUE_ONLY: &str = "s:HMstJJTCDUDU5Y3GiECBwcnk+irlNyQ8aUq6pKA+tf8=ada";

    #[test]
    fn a_value_signed_for_one_name_is_refused_under_another() {
        let keys = CookieKeys::new([SECRET]).unwrap();
        let signed = keys.sign("remember", "ada");
        assert_eq!(keys.verify("remember", &signed).as_deref(), Some("ada"));
        assert_eq!(keys.verify("session", &signed), None);
        assert_eq!(keys.verify("Remember", &signed), None);
    }

    #[test]
    fn a_value_signed_the_old_way_is_refused_by_default() {
        let keys = CookieKeys::new([SECRET]).unwrap();
        assert_eq!(keys.verify("session", VALUE_ONLY), None);
    }

    #[test]
    fn a_value_signed_the_old_way_is_read_only_when_migrating() {
        let migrating = CookieKeys::new(["a newer secret, also 32 bytes long", SECRET])
            .unwrap()
            .accept_value_only(true);
        assert_eq!(
            migrating.verify("session", VALUE_ONLY).as_deref(),
            Some("ada")
        );
        // Still a signature: altered, it is refused.
        assert_eq!(
            migrating.verify("session", &VALUE_ONLY.replace("ada", "eve")),
            None
        );
        // What is signed while migrating is name-bound.
        let signed = migrating.sign("session", "ada");
        assert_eq!(migrating.verify("other", &signed), None);
        assert_eq!(
            CookieKeys::new(["a newer secret, also 32 bytes long"])
                .unwrap()
                .verify("session", &signed)
                .as_deref(),
            Some("ada")
        );
    }

    #[test]
    fn a_value_signed_until_an_expiry_is_refused_after_it() {
        let keys = CookieKeys::new([SECRET]).unwrap();
        let now = SystemTime::now();
        let hour = std::time::Duration::from_secs(3600);
        let live = keys.sign_until("session", "a.b", now + hour);
        assert_eq!(keys.verify("session", &live).as_deref(), Some("a.b"));
        let expired = keys.sign_until("session", "a.b", now - hour);
        assert_eq!(keys.verify("session", &expired), None);
        assert_eq!(
            keys.verify("session", &keys.sign_until("session", "", UNIX_EPOCH)),
            None
        );
        // The expiry is signed: pushed later, or taken off, the value is refused.
        let at = (now - hour).duration_since(UNIX_EPOCH).unwrap().as_secs();
        let later = (now + hour).duration_since(UNIX_EPOCH).unwrap().as_secs();
        let pushed = expired.replace(&at.to_string(), &later.to_string());
        assert_ne!(pushed, expired);
        assert_eq!(keys.verify("session", &pushed), None);
        let removed = expired.replace(&at.to_string(), "");
        assert_eq!(keys.verify("session", &removed), None);
        // Nor does anything but digits stand there.
        let signed = keys.sign("session", "ada");
        let (mark_and_digest, rest) = signed.split_at(SIGNED_MARK.len() + DIGEST_CHARS);
        assert_eq!(rest, ".ada");
        for bad in ["x.ada", "-1.ada", "ada", "99999999999999999999999.ada"] {
            assert_eq!(
                keys.verify("session", &format!("{mark_and_digest}{bad}")),
                None
            );
        }
    }

    #[test]
    fn the_split_agrees_with_the_cookie_crates_parser() {
        let headers = [
            "a=1",
            "a=1; b=2;c=3 ;  d = 4 ",
            "theme=dark%20blue; s=s%3Aab%2Bc%3D; e=; =x; novalue; ;;",
            "q=\"quoted\"; pct=%zz%; utf=%C3%A9t%C3%A9; bad=%FF",
            "tab=\tv\t; sp=  v  ; eq=a=b=c",
            "%=1; x=%; y=a%3Db=c%; ;z%=q",
            "last=%41",
            "",
            "n%x; c=d",
            "a=é; b=%C3%A9; ü=1",
        ];
        for header in headers {
            let bytes = header.as_bytes();
            let ours: Vec<(String, String)> = pairs_of(bytes)
                .filter_map(|pair| {
                    let raw = &bytes[pair.value];
                    // The mark is exact: a value is decoded when, and only when, it holds a `%`.
                    assert_eq!(pair.escaped, raw.contains(&b'%'), "{header:?}");
                    let value = decoded_value(raw)?.into_owned();
                    Some((header[pair.name].to_owned(), value))
                })
                .collect();
            let theirs: Vec<(String, String)> = Cookie::split_parse_encoded(header)
                .flatten()
                .map(|c| (c.name().to_owned(), c.value().to_owned()))
                .collect();
            assert_eq!(ours, theirs, "{header:?}");
        }
    }

    #[test]
    fn a_lookup_in_the_text_agrees_with_the_pairs_found() {
        let keys = CookieKeys::new([SECRET]).unwrap();
        let signed = keys.sign("sid", "ada");
        let texts = [
            "a=1".to_owned(),
            "a=1; b=2;c=3 ;  d = 4 ".to_owned(),
            "e=; =x; novalue; ;; f=g=h; a=again; \tt\t=\tv\t".to_owned(),
            "theme x=dark; theme=light; themes=many; them=few".to_owned(),
            "a b=1; a=2; ab=3; b=4;=;a".to_owned(),
            format!("sid={signed}; plain=1; sid=second"),
            "q=\"quoted\"; é=ü; last".to_owned(),
            String::new(),
            ";".to_owned(),
            " x = y ".to_owned(),
        ];
        let names = [
            "a", "b", "c", "d", "e", "f", "t", "theme", "themes", "them", "theme x", "a b", "ab",
            "sid", "plain", "q", "é", "last", "x", "", " a", "a ", "a=1", "f=g", "1; b", "novalue",
            "\tt", "d ", "t\t",
        ];
        for text in &texts {
            let map = headers(&[text]);
            let read = RequestCookies::parse(&map).unwrap();
            let indexed = RequestCookies::parse_indexed(&map).unwrap();
            assert!(read.index.is_none(), "{text:?} is read at each lookup");
            for name in names {
                assert_eq!(read.find(name), indexed.find(name), "{text:?}, {name:?}");
                assert_eq!(read.get(name), indexed.get(name), "{text:?}, {name:?}");
                let listed = indexed.all().any(|(sent, _)| sent == name);
                assert_eq!(read.contains(name), listed, "{text:?}, {name:?}");
                assert_eq!(indexed.contains(name), listed, "{text:?}, {name:?}");
                assert_eq!(
                    read.get_signed(name, &keys),
                    indexed.get_signed(name, &keys),
                    "{text:?}, {name:?}"
                );
            }
            assert_eq!(
                read.all().collect::<Vec<_>>(),
                indexed.all().collect::<Vec<_>>()
            );
            assert_eq!(
                (read.len(), read.is_empty()),
                (indexed.len(), indexed.is_empty())
            );
            assert!(read == indexed);
        }
        // What the texts hold, from the lookup in the text.
        let read = RequestCookies::parse(&headers(&[&texts[3]])).unwrap();
        assert_eq!(read.get("theme"), Some("light"));
        assert_eq!(read.get("theme x"), Some("dark"));
        let read = RequestCookies::parse(&headers(&[&texts[5]])).unwrap();
        assert_eq!(read.get_signed("sid", &keys).as_deref(), Some("ada"));
        assert_eq!(read.get("sid"), None);
    }

    #[test]
    fn only_a_header_near_a_limit_or_with_a_percent_is_split_when_read() {
        let read = |text: &str| RequestCookies::parse(&headers(&[text])).unwrap();
        assert!(read("a=1; b=2").index.is_none());
        assert!(read("a=%41").index.is_some());
        // A longest cookie: in a text one byte too long to tell by its length.
        assert!(
            read(&format!("a={}", "x".repeat(MAX_COOKIE_BYTES - 1)))
                .index
                .is_some()
        );
        assert!(
            read(&format!("a={}", "x".repeat(MAX_COOKIE_BYTES - 2)))
                .index
                .is_none()
        );
        let pieces = |count: usize| vec!["c=1"; count].join(";");
        assert!(read(&pieces(MAX_COOKIES)).index.is_none());
        // One more piece, though every one is a duplicate and the header within the limits.
        let many = read(&pieces(MAX_COOKIES + 1));
        assert!(many.index.is_some());
        assert_eq!(many.len(), 1);
    }

    #[test]
    fn secrets_are_checked() {
        assert_eq!(
            CookieKeys::new(Vec::<&str>::new()).unwrap_err(),
            CookieKeyError::None
        );
        let error = CookieKeys::new([SECRET, "short"]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "cookie secret 2 has 5 bytes, at least 32 are needed"
        );
        assert_eq!(
            format!("{:?}", CookieKeys::new([SECRET]).unwrap()),
            "CookieKeys { keys: 1, value_only: false, .. }"
        );
    }
}
