//! [`CookieError`]: why a cookie cannot be set, naming the rule it breaks.

use std::fmt;

use strata_input::cookies::MAX_COOKIE_BYTES;

/// Why [`Cookies`](crate::Cookies) refused to set (or clear) a cookie: the cookie's name and
/// the rule it breaks. A browser would drop such a cookie without a word (or, for a `;` in an
/// attribute, read attributes the server never meant); refused here, the mistake shows where
/// it is made.
///
/// In a handler, `?` turns it into a 500 whose message names the cookie and the rule, logged
/// with the request (and hidden from clients in production, as every 500's message is).
///
/// ```
/// use strata_cookies::{CookieError, CookieOptions, CookieRule, Cookies, SameSite};
///
/// // A cookie for cross-site requests: without `.secure(true)`, refused with
/// // `Cookie "embed": SameSite=None needs Secure`.
/// fn embed(cookies: &Cookies) -> Result<(), CookieError> {
///     let options = CookieOptions::new().same_site(SameSite::None).secure(true);
///     cookies.set("embed", "1", &options)
/// }
/// # let _ = embed;
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Cookie {:?}: {rule}", shown(.name))]
pub struct CookieError {
    name: String,
    rule: CookieRule,
}

impl CookieError {
    pub(crate) fn new(name: &str, rule: CookieRule) -> Self {
        Self {
            name: name.to_owned(),
            rule,
        }
    }

    /// The name of the cookie refused.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The rule it breaks.
    pub fn rule(&self) -> CookieRule {
        self.rule
    }
}

/// A rule a cookie to set must follow: what browsers enforce (RFC 6265bis, the `Partitioned`
/// draft), what a `Set-Cookie` header can carry, and what signing needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CookieRule {
    /// A name is a token: visible ASCII without separators (RFC 6265 §4.1.1).
    Name,
    /// A `Path` without `;` or control characters (RFC 6265 §4.1.1): with them it would end
    /// the attribute, start another or break the header.
    Path,
    /// A `Domain` without `;` or control characters, as `Path`.
    Domain,
    /// `SameSite=None` needs `Secure` (RFC 6265bis §5.6.7: browsers drop it without).
    SameSiteNoneWithoutSecure,
    /// `Partitioned` needs `Secure` (CHIPS: browsers drop it without).
    PartitionedWithoutSecure,
    /// A name starting `__Secure-` (any case) needs `Secure` (RFC 6265bis §4.1.3.1).
    SecurePrefix,
    /// A name starting `__Host-` (any case) needs `Secure`, `Path=/` and no `Domain` (RFC
    /// 6265bis §4.1.3.2).
    HostPrefix,
    /// The name and the (encoded) value together are at most
    /// [`MAX_COOKIE_BYTES`](strata_input::cookies::MAX_COOKIE_BYTES): browsers drop a longer
    /// cookie, and this server refuses a request carrying one.
    TooLong,
    /// A signed cookie needs keys: `CookieMiddleware::keys(..)`.
    NoKeys,
}

impl fmt::Display for CookieRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rule = match self {
            CookieRule::Name => {
                "a name is a token: visible ASCII without separators (RFC 6265 §4.1.1)"
            }
            CookieRule::Path => "Path holds `;` or a control character",
            CookieRule::Domain => "Domain holds `;` or a control character",
            CookieRule::SameSiteNoneWithoutSecure => "SameSite=None needs Secure",
            CookieRule::PartitionedWithoutSecure => "Partitioned needs Secure",
            CookieRule::SecurePrefix => "the __Secure- prefix needs Secure",
            CookieRule::HostPrefix => "the __Host- prefix needs Secure, Path=/ and no Domain",
            CookieRule::TooLong => {
                return write!(f, "name and value longer than {MAX_COOKIE_BYTES} bytes");
            }
            CookieRule::NoKeys => "signed cookies need keys: CookieMiddleware::keys(..)",
        };
        f.write_str(rule)
    }
}

/// A cookie name for a message: its first 40 characters.
fn shown(name: &str) -> &str {
    name.char_indices()
        .nth(40)
        .map_or(name, |(end, _)| &name[..end])
}
