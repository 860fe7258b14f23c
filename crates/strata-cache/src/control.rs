//! `Cache-Control` policies: typed directives, checked once, rendered once.

use std::fmt;
use std::time::Duration;

use http::HeaderValue;

/// The largest delta-seconds a policy writes: RFC 9111 §1.2.2 has caches read any greater
/// value as 2^31, so writing more says nothing more.
const DELTA_SECONDS_MAX: u64 = 2_147_483_648;

/// A `Cache-Control` response policy: typed directives, checked when built and rendered then,
/// once, to the [`HeaderValue`] every response of the policy shares (no formatting per
/// request; a clone is a reference count).
///
/// Build one with [`CacheControl::builder`], or take a common one ([`no_store`](Self::no_store),
/// [`no_cache`](Self::no_cache)).
///
/// # The order of the directives
///
/// Whatever order the builder's methods are called in, the value lists the directives in one
/// fixed order, so that one policy is always one text (easy to compare in tests, in logs and
/// in caches' keys): first the directives of RFC 9111 §5.2.2 in that section's order
/// (`max-age`, `must-revalidate`, `no-cache`, `no-store`, `no-transform`, `private`,
/// `proxy-revalidate`, `public`, `s-maxage`), then the extensions by RFC number:
/// RFC 5861's `stale-while-revalidate` and `stale-if-error`, then RFC 8246's `immutable`.
///
/// ```
/// use std::time::Duration;
/// use strata_cache::CacheControl;
///
/// let policy = CacheControl::builder()
///     .public()
///     .stale_while_revalidate(Duration::from_secs(30))
///     .max_age(Duration::from_secs(60))
///     .build()
///     .unwrap();
/// assert_eq!(policy.header_value(), "max-age=60, public, stale-while-revalidate=30");
///
/// // Contradictions are refused when the policy is built, not found in production.
/// let refused = CacheControl::builder().public().private().build();
/// assert!(refused.is_err());
/// ```
///
/// Durations are written in whole seconds, rounded down, and at most 2147483648 (2^31, the
/// most a cache reads: RFC 9111 §1.2.2). The qualified forms `no-cache="field"` and
/// `private="field"` and `must-understand` are not offered.
#[derive(Clone, PartialEq, Eq)]
pub struct CacheControl {
    directives: Directives,
    value: HeaderValue,
}

/// The directives of a policy, before rendering.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(clippy::struct_excessive_bools)] // one flag per directive, each independent
struct Directives {
    max_age: Option<u64>,
    must_revalidate: bool,
    no_cache: bool,
    no_store: bool,
    no_transform: bool,
    private: bool,
    proxy_revalidate: bool,
    public: bool,
    s_maxage: Option<u64>,
    stale_while_revalidate: Option<u64>,
    stale_if_error: Option<u64>,
    immutable: bool,
}

impl CacheControl {
    /// Starts a policy with no directive.
    pub fn builder() -> CacheControlBuilder {
        CacheControlBuilder::default()
    }

    /// `no-store`: no cache keeps the response (what error responses get by default, see
    /// [`Caching::error_policy`](crate::Caching::error_policy)).
    pub fn no_store() -> Self {
        Self::from_valid(Directives {
            no_store: true,
            ..Directives::default()
        })
    }

    /// `no-cache`: caches may keep the response but must ask the server (a conditional
    /// request, cheap with an `ETag`) before every reuse.
    pub fn no_cache() -> Self {
        Self::from_valid(Directives {
            no_cache: true,
            ..Directives::default()
        })
    }

    /// The rendered `Cache-Control` value, shared by every response of the policy.
    pub fn header_value(&self) -> &HeaderValue {
        &self.value
    }

    /// Whether the policy has `no-store`.
    pub fn is_no_store(&self) -> bool {
        self.directives.no_store
    }

    /// The `max-age` in seconds, if any.
    pub fn max_age(&self) -> Option<u64> {
        self.directives.max_age
    }

    /// Whether a shared cache (a CDN, a proxy) may store a response sent with this policy:
    /// it has neither `private` nor `no-store`. Without `public` too: a response with
    /// `max-age`, or even `no-cache` (stored, then revalidated), is kept by shared caches.
    pub fn is_shared(&self) -> bool {
        !self.directives.private && !self.directives.no_store
    }

    /// This policy for a response meant for one client, such as one that sets a cookie:
    /// `private` instead of `public`, without the directives that address shared caches only
    /// (`s-maxage`, `proxy-revalidate`, which `private` shuts out), the rest as it is. A policy
    /// that already keeps shared caches out ([`is_shared`](Self::is_shared) is `false`) is
    /// returned unchanged.
    ///
    /// What [`Caching`](crate::Caching) sends instead of a shared policy on a response with
    /// `Set-Cookie`: a shared cache must not hand one client's cookie to the next.
    ///
    /// ```
    /// use std::time::Duration;
    /// use strata_cache::CacheControl;
    ///
    /// let shared = CacheControl::builder()
    ///     .public()
    ///     .max_age(Duration::from_secs(60))
    ///     .s_maxage(Duration::from_secs(600))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(shared.to_private().header_value(), "max-age=60, private");
    /// assert_eq!(CacheControl::no_cache().to_private().header_value(), "no-cache, private");
    /// assert_eq!(CacheControl::no_store().to_private().header_value(), "no-store");
    /// ```
    #[must_use]
    pub fn to_private(&self) -> CacheControl {
        if !self.is_shared() {
            return self.clone();
        }
        Self::from_valid(Directives {
            public: false,
            private: true,
            s_maxage: None,
            proxy_revalidate: false,
            ..self.directives
        })
    }

    fn from_valid(directives: Directives) -> Self {
        let value = HeaderValue::from_str(&directives.to_string())
            // Directive names, digits, ", " and "=": always header text.
            .unwrap_or_else(|_| HeaderValue::from_static("no-store"));
        Self { directives, value }
    }
}

impl fmt::Debug for CacheControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CacheControl").field(&self.value).finish()
    }
}

impl fmt::Display for CacheControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.directives.fmt(f)
    }
}

impl fmt::Display for Directives {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seconds = |value: Option<u64>| value.map(|s| s.min(DELTA_SECONDS_MAX));
        // The fixed order of the type's docs.
        let flags: [(&str, Option<u64>, bool); 12] = [
            ("max-age", seconds(self.max_age), false),
            ("must-revalidate", None, self.must_revalidate),
            ("no-cache", None, self.no_cache),
            ("no-store", None, self.no_store),
            ("no-transform", None, self.no_transform),
            ("private", None, self.private),
            ("proxy-revalidate", None, self.proxy_revalidate),
            ("public", None, self.public),
            ("s-maxage", seconds(self.s_maxage), false),
            (
                "stale-while-revalidate",
                seconds(self.stale_while_revalidate),
                false,
            ),
            ("stale-if-error", seconds(self.stale_if_error), false),
            ("immutable", None, self.immutable),
        ];
        let mut first = true;
        for (name, value, set) in flags {
            if !set && value.is_none() {
                continue;
            }
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            f.write_str(name)?;
            if let Some(value) = value {
                write!(f, "={value}")?;
            }
        }
        Ok(())
    }
}

/// Builds a [`CacheControl`]; [`build`](Self::build) checks it.
#[derive(Debug, Clone, Copy, Default)]
pub struct CacheControlBuilder {
    directives: Directives,
}

impl CacheControlBuilder {
    strata_core::setters! {
        /// `public`: shared caches may keep the response, even one that needed authorization.
        public() => directives.public = true;
        /// `private`: only the client's own cache may keep the response (per-user data).
        private() => directives.private = true;
        /// `no-cache`: a cache must ask the server before every reuse.
        no_cache() => directives.no_cache = true;
        /// `no-store`: no cache keeps the response.
        no_store() => directives.no_store = true;
        /// `max-age`: how long the response stays fresh.
        max_age(age: Duration) => directives.max_age = Some(age.as_secs());
        /// `s-maxage`: how long it stays fresh in shared caches (instead of `max-age` there).
        s_maxage(age: Duration) => directives.s_maxage = Some(age.as_secs());
        /// `must-revalidate`: once stale, a cache must not use it without asking the server.
        must_revalidate() => directives.must_revalidate = true;
        /// `proxy-revalidate`: `must-revalidate` for shared caches only.
        proxy_revalidate() => directives.proxy_revalidate = true;
        /// `no-transform`: intermediaries must not change the content.
        no_transform() => directives.no_transform = true;
        /// `immutable` (RFC 8246): the response will not change while fresh, so clients need not
        /// revalidate it on reload. Needs a `max-age`.
        immutable() => directives.immutable = true;
        /// `stale-while-revalidate` (RFC 5861): a stale response may be used for this long while a
        /// cache revalidates it in the background.
        stale_while_revalidate(window: Duration) =>
            directives.stale_while_revalidate = Some(window.as_secs());
        /// `stale-if-error` (RFC 5861): a stale response may be used for this long when the server
        /// answers an error (5xx) or cannot be reached.
        stale_if_error(window: Duration) => directives.stale_if_error = Some(window.as_secs());
    }

    /// Checks the directives and renders the value once.
    ///
    /// Refused: no directive at all; `public` with `private`; `no-store` with anything that
    /// describes keeping the response (`public`, `max-age`, `s-maxage`, `immutable`,
    /// `stale-while-revalidate`, `stale-if-error`); `private` with the directives that address
    /// only shared caches (`s-maxage`, `proxy-revalidate`), which `private` shuts out;
    /// `immutable` without `max-age` (RFC 8246: it means nothing for a response that is not
    /// fresh).
    pub fn build(self) -> Result<CacheControl, InvalidCacheControl> {
        let d = self.directives;
        if d == Directives::default() {
            return Err(InvalidCacheControl::Empty);
        }
        if d.public && d.private {
            return Err(InvalidCacheControl::PublicAndPrivate);
        }
        let keeps = [
            ("public", d.public),
            ("max-age", d.max_age.is_some()),
            ("s-maxage", d.s_maxage.is_some()),
            ("immutable", d.immutable),
            ("stale-while-revalidate", d.stale_while_revalidate.is_some()),
            ("stale-if-error", d.stale_if_error.is_some()),
        ];
        if d.no_store
            && let Some((name, _)) = keeps.iter().find(|(_, set)| *set)
        {
            return Err(InvalidCacheControl::NoStoreWith(name));
        }
        if d.private {
            if d.s_maxage.is_some() {
                return Err(InvalidCacheControl::PrivateWith("s-maxage"));
            }
            if d.proxy_revalidate {
                return Err(InvalidCacheControl::PrivateWith("proxy-revalidate"));
            }
        }
        if d.immutable && d.max_age.is_none() {
            return Err(InvalidCacheControl::ImmutableWithoutMaxAge);
        }
        Ok(CacheControl::from_valid(d))
    }
}

/// Why a [`CacheControlBuilder`] refused its directives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidCacheControl {
    /// No directive was given.
    #[error("a Cache-Control policy needs at least one directive")]
    Empty,
    /// `public` and `private` contradict each other.
    #[error("Cache-Control: `public` and `private` contradict each other")]
    PublicAndPrivate,
    /// `no-store` with a directive about keeping the response (its name).
    #[error("Cache-Control: `no-store` forbids keeping the response, which `{0}` describes")]
    NoStoreWith(&'static str),
    /// `private` with a directive for shared caches only (its name).
    #[error("Cache-Control: `{0}` addresses shared caches, which `private` shuts out")]
    PrivateWith(&'static str),
    /// `immutable` without `max-age`.
    #[error("Cache-Control: `immutable` needs a `max-age` (RFC 8246)")]
    ImmutableWithoutMaxAge,
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn every_directive_renders_in_the_fixed_order_whatever_the_calls_order() {
        // Called in reverse of the rendered order.
        let policy = CacheControl::builder()
            .immutable()
            .stale_if_error(Duration::from_secs(86_400))
            .stale_while_revalidate(Duration::from_secs(30))
            .s_maxage(Duration::from_secs(600))
            .public()
            .proxy_revalidate()
            .no_transform()
            .no_cache()
            .must_revalidate()
            .max_age(MINUTE)
            .build()
            .unwrap();
        assert_eq!(
            policy.header_value(),
            "max-age=60, must-revalidate, no-cache, no-transform, proxy-revalidate, public, \
             s-maxage=600, stale-while-revalidate=30, stale-if-error=86400, immutable"
        );
        assert_eq!(policy.to_string(), policy.header_value().to_str().unwrap());
        let private = CacheControl::builder()
            .private()
            .no_store()
            .build()
            .unwrap();
        assert_eq!(private.header_value(), "no-store, private");
        assert!(private.is_no_store());
        assert_eq!(CacheControl::no_store().header_value(), "no-store");
        assert_eq!(CacheControl::no_cache().header_value(), "no-cache");
    }

    #[test]
    fn durations_are_whole_seconds_capped_at_two_to_the_31() {
        let policy = CacheControl::builder()
            .max_age(Duration::from_millis(1_999))
            .s_maxage(Duration::MAX)
            .build()
            .unwrap();
        assert_eq!(policy.header_value(), "max-age=1, s-maxage=2147483648");
        assert_eq!(policy.max_age(), Some(1));
        let zero = CacheControl::builder().max_age(Duration::ZERO).build();
        assert_eq!(zero.unwrap().header_value(), "max-age=0");
    }

    #[test]
    fn contradictions_are_refused_when_built() {
        let b = CacheControl::builder;
        assert_eq!(b().build(), Err(InvalidCacheControl::Empty));
        assert_eq!(
            b().public().private().build(),
            Err(InvalidCacheControl::PublicAndPrivate)
        );
        assert_eq!(
            b().no_store().max_age(MINUTE).build(),
            Err(InvalidCacheControl::NoStoreWith("max-age"))
        );
        assert_eq!(
            b().no_store().public().build(),
            Err(InvalidCacheControl::NoStoreWith("public"))
        );
        assert_eq!(
            b().no_store().stale_if_error(MINUTE).build(),
            Err(InvalidCacheControl::NoStoreWith("stale-if-error"))
        );
        assert_eq!(
            b().private().s_maxage(MINUTE).build(),
            Err(InvalidCacheControl::PrivateWith("s-maxage"))
        );
        assert_eq!(
            b().private().proxy_revalidate().build(),
            Err(InvalidCacheControl::PrivateWith("proxy-revalidate"))
        );
        assert_eq!(
            b().immutable().build(),
            Err(InvalidCacheControl::ImmutableWithoutMaxAge)
        );
        let message = b().public().private().build().unwrap_err().to_string();
        assert!(message.contains("contradict"), "{message}");
        // What is allowed: private with max-age and revalidation.
        let ok = b().private().max_age(MINUTE).must_revalidate().build();
        assert_eq!(
            ok.unwrap().header_value(),
            "max-age=60, must-revalidate, private"
        );
    }
}
