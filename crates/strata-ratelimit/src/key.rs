//! Whose budget a request spends: the key of each request.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::net::IpAddr;

use derive_where::derive_where;
use http::HeaderName;
use http::request::Parts;
use strata_core::{ClientAddr, Has};

use crate::proxy::{TrustedProxies, mask};

/// The key of one request: whose budget it spends.
///
/// Text keys borrow from the request where they can (a header's value), so that extracting
/// one allocates nothing; a store that keeps them copies them (the in-memory store keeps a
/// fixed-size digest of text keys, whatever their length).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RateLimitKey<'a> {
    /// A client address (IPv6 cut to its prefix by [`ClientAddrKey`]).
    Addr(IpAddr),
    /// Anything else: a user id, a header's value.
    Text(Cow<'a, [u8]>),
}

impl RateLimitKey<'_> {
    /// The key every request without one shares under [`Keyless::Shared`](crate::Keyless):
    /// the empty text.
    pub const KEYLESS: RateLimitKey<'static> = RateLimitKey::Text(Cow::Borrowed(b""));

    /// The key with its own copy of borrowed text.
    pub fn into_owned(self) -> RateLimitKey<'static> {
        match self {
            RateLimitKey::Addr(addr) => RateLimitKey::Addr(addr),
            RateLimitKey::Text(text) => RateLimitKey::Text(Cow::Owned(text.into_owned())),
        }
    }
}

impl fmt::Display for RateLimitKey<'_> {
    /// An address as text; text as itself, bytes that are not UTF-8 replaced.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RateLimitKey::Addr(addr) => addr.fmt(f),
            RateLimitKey::Text(text) => String::from_utf8_lossy(text).fmt(f),
        }
    }
}

/// A value that can key a request, or say that it has no key (`None`): what the functions of
/// [`Key::context`] and [`Key::function`] return.
pub trait IntoKey {
    /// The key, if any.
    fn into_key(self) -> Option<RateLimitKey<'static>>;
}

impl IntoKey for RateLimitKey<'static> {
    fn into_key(self) -> Option<RateLimitKey<'static>> {
        Some(self)
    }
}

impl IntoKey for String {
    fn into_key(self) -> Option<RateLimitKey<'static>> {
        Some(RateLimitKey::Text(Cow::Owned(self.into_bytes())))
    }
}

impl IntoKey for &'static str {
    fn into_key(self) -> Option<RateLimitKey<'static>> {
        Some(RateLimitKey::Text(Cow::Borrowed(self.as_bytes())))
    }
}

impl IntoKey for Vec<u8> {
    fn into_key(self) -> Option<RateLimitKey<'static>> {
        Some(RateLimitKey::Text(Cow::Owned(self)))
    }
}

impl IntoKey for IpAddr {
    fn into_key(self) -> Option<RateLimitKey<'static>> {
        Some(RateLimitKey::Addr(self.to_canonical()))
    }
}

macro_rules! number_keys {
    ($($number:ty),*) => {$(
        impl IntoKey for $number {
            fn into_key(self) -> Option<RateLimitKey<'static>> {
                self.to_string().into_key()
            }
        }
    )*};
}

number_keys!(u32, u64, u128, i32, i64);

impl<T: IntoKey> IntoKey for Option<T> {
    fn into_key(self) -> Option<RateLimitKey<'static>> {
        self.and_then(IntoKey::into_key)
    }
}

/// How a limiter finds the key of a request in its parts and the context `C` that earlier
/// middleware built. `None`: the request has no key (see [`Keyless`](crate::Keyless)).
pub trait KeyExtractor<C>: Send + Sync + 'static {
    /// The key of the request.
    fn key<'a>(&'a self, request: &'a Parts, ctx: &'a C) -> Option<RateLimitKey<'a>>;
}

/// The ways to key requests; each function returns a [`KeyExtractor`].
///
/// ```
/// use strata::prelude::*;
/// use strata_ratelimit::{Key, Quota, RateLimit, TrustedProxies};
///
/// struct User {
///     id: u64,
/// }
///
/// let by_address = Key::client_addr();
/// let behind_a_proxy = Key::client_addr().trust(TrustedProxies::hops(1));
/// let by_api_key = Key::header(http::HeaderName::from_static("x-api-key"));
/// let by_path = Key::function(|request: &http::request::Parts| request.uri.path().to_owned());
/// # let _ = (by_address, behind_a_proxy, by_api_key, by_path);
///
/// // A context entry: the limiter goes after the middleware that provides it.
/// let auth = Middleware::new(|(): (), _request, _logger| async { Ok(User { id: 7 }) });
/// let per_user = default_endpoints_factory()
///     .add_middleware(auth)
///     .add_middleware(
///         RateLimit::new(Quota::per_minute(60), Key::context(|user: &User| user.id)).middleware(),
///     );
/// # let _ = per_user;
/// ```
#[derive(Debug)]
pub enum Key {}

impl Key {
    /// The client's address: the [`ClientAddr`] the server puts in every request's extensions,
    /// read behind no proxy until told otherwise ([`ClientAddrKey::trust`]). An IPv6 client
    /// is keyed by its /64 ([`ClientAddrKey::ipv6_prefix`]).
    pub fn client_addr() -> ClientAddrKey {
        ClientAddrKey {
            proxies: TrustedProxies::none(),
            ipv6_prefix: 64,
        }
    }

    /// The value of the request header `name` (the first, when it repeats); a request
    /// without it has no key. Only for headers the client cannot choose freely (an API key
    /// checked by an earlier middleware, a header a proxy sets): a client that can send any
    /// value gets a fresh budget with each.
    pub fn header(name: HeaderName) -> HeaderKey {
        HeaderKey { name }
    }

    /// A value of type `T` from the context, mapped to a key: `|user: &User| user.id`. Put
    /// the limiter after the middleware that provides `T` (a context without `T` does not
    /// compile). The function may return an `Option` for requests without a key.
    pub fn context<T, R, F, I>(key: F) -> ContextKey<T, F, I>
    where
        F: Fn(&T) -> R + Send + Sync + 'static,
        R: IntoKey,
    {
        ContextKey {
            key,
            _entry: PhantomData,
        }
    }

    /// Any function of the request's parts (method, URI, headers, extensions).
    pub fn function<R, F>(key: F) -> FnKey<F>
    where
        F: Fn(&Parts) -> R + Send + Sync + 'static,
        R: IntoKey,
    {
        FnKey(key)
    }
}

/// Keys requests by the client's address: see [`Key::client_addr`].
#[derive(Debug, Clone)]
pub struct ClientAddrKey {
    proxies: TrustedProxies,
    ipv6_prefix: u8,
}

impl ClientAddrKey {
    strata_core::setters! {
        /// Believes the forwarding headers of `proxies` (default: nobody's).
        #[must_use]
        trust(proxies: TrustedProxies) => proxies = proxies;
        /// Keys an IPv6 client by the first `bits` of its address (default 64, at most 128). One
        /// host is usually given a whole /64, and picks any address in it: keyed by its full
        /// address, it would have 2^64 budgets.
        #[must_use]
        ipv6_prefix(bits: u8) => ipv6_prefix = bits.min(128);
    }

    /// The client's address, as keyed (its prefix for IPv6), if the request says.
    pub fn client(&self, request: &Parts) -> Option<IpAddr> {
        let peer = request
            .extensions
            .get::<ClientAddr>()
            .map(|client| client.0);
        let client = self.proxies.client(peer, &request.headers)?;
        Some(match client {
            IpAddr::V4(_) => client,
            IpAddr::V6(_) => mask(client, self.ipv6_prefix),
        })
    }
}

impl<C> KeyExtractor<C> for ClientAddrKey {
    fn key<'a>(&'a self, request: &'a Parts, _ctx: &'a C) -> Option<RateLimitKey<'a>> {
        self.client(request).map(RateLimitKey::Addr)
    }
}

/// Keys requests by a header's value: see [`Key::header`].
#[derive(Debug, Clone)]
pub struct HeaderKey {
    name: HeaderName,
}

impl<C> KeyExtractor<C> for HeaderKey {
    fn key<'a>(&'a self, request: &'a Parts, _ctx: &'a C) -> Option<RateLimitKey<'a>> {
        let value = request.headers.get(&self.name)?;
        Some(RateLimitKey::Text(Cow::Borrowed(value.as_bytes())))
    }
}

/// Keys requests by a context entry: see [`Key::context`]. `I` is where the entry is in the
/// context, found by the compiler when the limiter is attached.
#[derive_where(Debug)]
pub struct ContextKey<T, F, I> {
    // A function; the marker names the entry's type.
    #[derive_where(skip)]
    key: F,
    _entry: PhantomData<fn(&T, I)>,
}

impl<C, T, F, R, I> KeyExtractor<C> for ContextKey<T, F, I>
where
    C: Has<T, I>,
    F: Fn(&T) -> R + Send + Sync + 'static,
    R: IntoKey,
    T: 'static,
    I: 'static,
{
    fn key<'a>(&'a self, _request: &'a Parts, ctx: &'a C) -> Option<RateLimitKey<'a>> {
        (self.key)(ctx.get()).into_key()
    }
}

/// Keys requests by a function of their parts: see [`Key::function`].
#[derive(Clone)]
#[derive_where(Debug)]
pub struct FnKey<F>(#[derive_where(skip)] F);

impl<C, F, R> KeyExtractor<C> for FnKey<F>
where
    F: Fn(&Parts) -> R + Send + Sync + 'static,
    R: IntoKey,
{
    fn key<'a>(&'a self, request: &'a Parts, _ctx: &'a C) -> Option<RateLimitKey<'a>> {
        (self.0)(request).into_key()
    }
}

#[cfg(test)]
mod tests {
    use http::{HeaderValue, Request};
    use strata_core::{HCons, HNil};

    use super::*;

    fn parts(client: Option<&str>, headers: &[(&'static str, &str)]) -> Parts {
        let mut request = Request::new(());
        if let Some(client) = client {
            request
                .extensions_mut()
                .insert(ClientAddr(client.parse().unwrap()));
        }
        for (name, value) in headers {
            request
                .headers_mut()
                .append(*name, HeaderValue::from_str(value).unwrap());
        }
        request.into_parts().0
    }

    #[allow(clippy::unnecessary_wraps)] // compared with what extractors return
    fn addr(text: &str) -> Option<RateLimitKey<'static>> {
        Some(RateLimitKey::Addr(text.parse().unwrap()))
    }

    #[test]
    fn the_client_address_and_its_v6_prefix() {
        let key = Key::client_addr();
        let request = parts(Some("192.0.2.7"), &[("x-forwarded-for", "203.0.113.1")]);
        assert_eq!(key.key(&request, &HNil), addr("192.0.2.7"));
        let request = parts(Some("2001:db8:1:2:3:4:5:6"), &[]);
        assert_eq!(key.key(&request, &HNil), addr("2001:db8:1:2::"));
        let full = Key::client_addr().ipv6_prefix(200);
        assert_eq!(full.key(&request, &HNil), addr("2001:db8:1:2:3:4:5:6"));
        let mapped = parts(Some("::ffff:192.0.2.7"), &[]);
        assert_eq!(key.key(&mapped, &HNil), addr("192.0.2.7"));
        // No address known: no key.
        assert_eq!(key.key(&parts(None, &[]), &HNil), None);
    }

    #[test]
    fn the_client_address_behind_trusted_proxies() {
        let key = Key::client_addr().trust(TrustedProxies::networks(["127.0.0.0/8"]).unwrap());
        let proxied = parts(
            Some("127.0.0.1"),
            &[("x-forwarded-for", "2001:db8::1:2:3:4")],
        );
        assert_eq!(key.key(&proxied, &HNil), addr("2001:db8::"));
        let direct = parts(Some("192.0.2.9"), &[("x-forwarded-for", "203.0.113.1")]);
        assert_eq!(key.key(&direct, &HNil), addr("192.0.2.9"));
    }

    #[test]
    fn a_header_borrowed_and_a_function() {
        let key = Key::header(HeaderName::from_static("x-api-key"));
        let request = parts(None, &[("x-api-key", "k1"), ("x-api-key", "k2")]);
        let found = KeyExtractor::<HNil>::key(&key, &request, &HNil);
        assert!(matches!(
            found,
            Some(RateLimitKey::Text(Cow::Borrowed(b"k1")))
        ));
        assert_eq!(
            KeyExtractor::<HNil>::key(&key, &parts(None, &[]), &HNil),
            None
        );
        let huge = "k".repeat(60_000);
        let request = parts(None, &[("x-api-key", &huge)]);
        let found = KeyExtractor::<HNil>::key(&key, &request, &HNil).unwrap();
        assert_eq!(found.to_string().len(), 60_000);

        let by_path = Key::function(|request: &Parts| request.uri.path().to_owned());
        let request = parts(None, &[]);
        assert_eq!(
            KeyExtractor::<HNil>::key(&by_path, &request, &HNil)
                .unwrap()
                .to_string(),
            "/"
        );
        let nothing = Key::function(|_: &Parts| None::<String>);
        assert_eq!(KeyExtractor::<HNil>::key(&nothing, &request, &HNil), None);
    }

    struct User {
        id: u64,
        team: Option<&'static str>,
    }

    #[test]
    fn a_context_entry_found_by_type() {
        let ctx = HCons {
            head: 5_u8,
            tail: HCons {
                head: User { id: 42, team: None },
                tail: HNil,
            },
        };
        let request = parts(None, &[]);
        let by_user = Key::context(|user: &User| user.id);
        assert_eq!(by_user.key(&request, &ctx).unwrap().to_string(), "42");
        let by_team = Key::context(|user: &User| user.team);
        assert_eq!(by_team.key(&request, &ctx), None);
        assert!(format!("{by_user:?}").contains("User"));
    }

    #[test]
    fn keys_display_and_own() {
        let key = RateLimitKey::Text(Cow::Borrowed(b"\xffab"));
        assert_eq!(key.to_string(), "\u{fffd}ab");
        assert_eq!(key.clone().into_owned(), key);
        assert_eq!(addr("::1").unwrap().to_string(), "::1");
        assert_eq!(RateLimitKey::KEYLESS.to_string(), "");
        assert_eq!(
            "192.0.2.1".parse::<IpAddr>().unwrap().into_key(),
            addr("192.0.2.1")
        );
        assert_eq!((-3_i64).into_key().unwrap().to_string(), "-3");
        assert_eq!(
            "x".into_key(),
            Some(RateLimitKey::Text(Cow::Borrowed(b"x")))
        );
    }
}
