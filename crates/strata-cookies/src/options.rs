//! The attributes of a cookie the server sets.

use std::time::{Duration, SystemTime};

use cookie::{Cookie, Expiration};

/// Where a cookie may be sent from (`SameSite`, RFC 6265bis §4.1.2.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SameSite {
    /// Only with requests from the site that set it.
    Strict,
    /// Also with top-level navigations from other sites (browsers' default).
    Lax,
    /// With every request, cross-site included; browsers require `Secure` with it.
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

    /// The path the cookie is sent to (`None`: the path of the request that set it).
    #[must_use]
    pub fn path(mut self, path: impl Into<Option<String>>) -> Self {
        self.path = path.into();
        self
    }

    /// The domain the cookie is sent to, subdomains included (unset: this host only).
    #[must_use]
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.domain = Some(domain.into());
        self
    }

    /// How long the cookie lives (`Max-Age`, in whole seconds).
    #[must_use]
    pub fn max_age(mut self, max_age: Duration) -> Self {
        self.max_age = Some(max_age);
        self
    }

    /// When the cookie expires (`Expires`); `Max-Age` wins where both are set.
    #[must_use]
    pub fn expires(mut self, at: SystemTime) -> Self {
        self.expires = Some(at);
        self
    }

    /// Whether scripts are kept from reading it (`HttpOnly`, on by default).
    #[must_use]
    pub fn http_only(mut self, http_only: bool) -> Self {
        self.http_only = http_only;
        self
    }

    /// Whether it is sent over HTTPS only (`Secure`).
    #[must_use]
    pub fn secure(mut self, secure: bool) -> Self {
        self.secure = secure;
        self
    }

    /// Where it may be sent from (`SameSite`; `None` leaves the attribute out).
    #[must_use]
    pub fn same_site(mut self, same_site: impl Into<Option<SameSite>>) -> Self {
        self.same_site = same_site.into();
        self
    }

    /// Whether it is kept per top-level site (`Partitioned`, CHIPS; needs `Secure`).
    #[must_use]
    pub fn partitioned(mut self, partitioned: bool) -> Self {
        self.partitioned = partitioned;
        self
    }

    /// `cookie` with these attributes.
    pub(crate) fn apply(&self, cookie: &mut Cookie<'static>) {
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
            let at = cookie::time::OffsetDateTime::from(at);
            cookie.set_expires(Expiration::DateTime(at));
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
