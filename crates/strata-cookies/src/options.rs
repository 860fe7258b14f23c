//! The attributes of a cookie the server sets.

use std::time::{Duration, SystemTime};

use cookie::{Cookie, Expiration};
use strata_input::cookies::MAX_COOKIE_BYTES;

use crate::error::{CookieError, CookieRule};

/// Where a cookie may be sent from (`SameSite`, RFC 6265bis §4.1.2.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SameSite {
    /// Only with requests from the site that set it.
    Strict,
    /// Also with top-level navigations from other sites (browsers' default).
    Lax,
    /// With every request, cross-site included; browsers require `Secure` with it, and
    /// [`Cookies::set`](crate::Cookies::set) refuses it without.
    None,
}

/// The attributes of a cookie to set: where it is sent, for how long, and who can read it.
///
/// The defaults suit a session cookie of an API: `Path=/`, `HttpOnly` (scripts cannot read
/// it), `SameSite=Lax`, no `Secure` (so that it works over plain HTTP on a developer's
/// machine: set [`secure`](Self::secure) in production), and no expiry (the browser drops it
/// when it closes). express's `res.cookie` defaults to `Path=/` and nothing else; `HttpOnly`
/// and `SameSite=Lax` are on here because a cookie an API sets is almost always a credential.
///
/// ```
/// use std::time::Duration;
/// use strata_cookies::{CookieOptions, SameSite};
///
/// let options = CookieOptions::new()
///     .max_age(Duration::from_secs(3600))
///     .secure(true)
///     .same_site(SameSite::Strict);
/// # let _ = options;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CookieOptions {
    pub(crate) path: Option<String>,
    pub(crate) domain: Option<String>,
    pub(crate) max_age: Option<Duration>,
    pub(crate) expires: Option<SystemTime>,
    pub(crate) http_only: bool,
    pub(crate) secure: bool,
    pub(crate) same_site: Option<SameSite>,
    pub(crate) partitioned: bool,
}

impl Default for CookieOptions {
    fn default() -> Self {
        Self {
            path: Some("/".to_owned()),
            domain: None,
            max_age: None,
            expires: None,
            http_only: true,
            secure: false,
            same_site: Some(SameSite::Lax),
            partitioned: false,
        }
    }
}

impl CookieOptions {
    /// The defaults: `Path=/; HttpOnly; SameSite=Lax`.
    pub fn new() -> Self {
        Self::default()
    }

    strata_core::setters! {
        /// The path the cookie is sent to (`None`: the path of the request that set it).
        #[must_use]
        path(path: impl Into<Option<String>>) => path = path.into();
        /// The domain the cookie is sent to, subdomains included (unset: this host only).
        #[must_use]
        domain(domain: impl Into<String>) => domain = Some(domain.into());
        /// How long the cookie lives (`Max-Age`, in whole seconds).
        #[must_use]
        max_age(max_age: Duration) => max_age = Some(max_age);
        /// When the cookie expires (`Expires`); `Max-Age` wins where both are set.
        #[must_use]
        expires(at: SystemTime) => expires = Some(at);
        /// Whether scripts are kept from reading it (`HttpOnly`, on by default).
        #[must_use]
        http_only(http_only: bool) => http_only = http_only;
        /// Whether it is sent over HTTPS only (`Secure`).
        #[must_use]
        secure(secure: bool) => secure = secure;
        /// Where it may be sent from (`SameSite`; `None` leaves the attribute out).
        #[must_use]
        same_site(same_site: impl Into<Option<SameSite>>) => same_site = same_site.into();
        /// Whether it is kept per top-level site (`Partitioned`, CHIPS; needs `Secure`, which
        /// is not added for it: a cookie without is refused).
        #[must_use]
        partitioned(partitioned: bool) => partitioned = partitioned;
    }

    /// The cookie `name` valued `value` with these attributes, when it follows the rules
    /// browsers enforce (see [`CookieRule`]).
    pub(crate) fn cookie(&self, name: &str, value: String) -> Result<Cookie<'static>, CookieError> {
        self.check(name)
            .map_err(|rule| CookieError::new(name, rule))?;
        let mut cookie = Cookie::new(name.to_owned(), value);
        self.apply(&mut cookie);
        // What browsers measure is the header's text: the value percent-encoded.
        let encoded = cookie.encoded().stripped().to_string();
        if encoded.len() - "=".len() > MAX_COOKIE_BYTES {
            return Err(CookieError::new(name, CookieRule::TooLong));
        }
        Ok(cookie)
    }

    /// The first rule the cookie `name` with these attributes breaks (its value is
    /// percent-encoded, so any value can be sent).
    fn check(&self, name: &str) -> Result<(), CookieRule> {
        const SEPARATORS: &[u8] = b"()<>@,;:\\\"/[]?={} \t";
        let token = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_graphic() && !SEPARATORS.contains(&b));
        // RFC 6265 §4.1.1's path-value: any character but controls and `;`.
        let attribute = |text: &Option<String>| {
            text.as_deref()
                .is_none_or(|text| !text.chars().any(|c| c == ';' || c.is_control()))
        };
        let prefixed = |prefix: &str| {
            name.get(..prefix.len())
                .is_some_and(|start| start.eq_ignore_ascii_case(prefix))
        };
        if !token {
            Err(CookieRule::Name)
        } else if !attribute(&self.path) {
            Err(CookieRule::Path)
        } else if !attribute(&self.domain) {
            Err(CookieRule::Domain)
        } else if prefixed("__Host-")
            && !(self.secure && self.path.as_deref() == Some("/") && self.domain.is_none())
        {
            Err(CookieRule::HostPrefix)
        } else if prefixed("__Secure-") && !self.secure {
            Err(CookieRule::SecurePrefix)
        } else if self.same_site == Some(SameSite::None) && !self.secure {
            Err(CookieRule::SameSiteNoneWithoutSecure)
        } else if self.partitioned && !self.secure {
            Err(CookieRule::PartitionedWithoutSecure)
        } else {
            Ok(())
        }
    }

    /// When a cookie set with these attributes expires, if it does: `Max-Age` from `now`
    /// (which wins, as in browsers), or `Expires`. What a signed cookie's signature covers.
    pub(crate) fn expiry(&self, now: SystemTime) -> Option<SystemTime> {
        match self.max_age {
            // Whole seconds, as `Max-Age` is written; past the clock's range, never.
            Some(max_age) => now.checked_add(Duration::from_secs(max_age.as_secs())),
            None => self.expires,
        }
    }

    /// `cookie` with these attributes.
    fn apply(&self, cookie: &mut Cookie<'static>) {
        if let Some(path) = &self.path {
            cookie.set_path(path.clone());
        }
        if let Some(domain) = &self.domain {
            cookie.set_domain(domain.clone());
        }
        if let Some(max_age) = self.max_age {
            cookie.set_max_age(cookie::time::Duration::seconds(
                i64::try_from(max_age.as_secs()).unwrap_or(i64::MAX),
            ));
        }
        if let Some(at) = self.expires {
            cookie.set_expires(Expiration::DateTime(http_date(at)));
        }
        cookie.set_http_only(self.http_only);
        cookie.set_secure(self.secure);
        cookie.set_same_site(self.same_site.map(|same_site| match same_site {
            SameSite::Strict => cookie::SameSite::Strict,
            SameSite::Lax => cookie::SameSite::Lax,
            SameSite::None => cookie::SameSite::None,
        }));
        cookie.set_partitioned(self.partitioned);
    }
}

/// The last second an HTTP date can name (9999-12-31T23:59:59Z).
const LAST_HTTP_DATE: i64 = 253_402_300_799;

/// `at` as an `Expires` date: before 1970, 1970; after 9999, 9999 (the `time` crate's
/// conversion panics out of its range, and a browser reads either bound as the time meant).
fn http_date(at: SystemTime) -> cookie::time::OffsetDateTime {
    let seconds = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
        })
        .min(LAST_HTTP_DATE);
    cookie::time::OffsetDateTime::from_unix_timestamp(seconds)
        .unwrap_or(cookie::time::OffsetDateTime::UNIX_EPOCH)
}
