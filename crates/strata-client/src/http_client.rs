//! [`HttpClient`]: a client over hyper-util's pooled HTTP client, built in one line from a base
//! URL (feature `hyper-client`, on by default).

use std::time::Duration;

use http::Uri;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::Client;

/// hyper-util's pooled client (HTTP/1.1 with keep-alive, and HTTP/2), over plain TCP: the
/// service of an [`HttpClient`].
pub type HttpPool = hyper_util::client::legacy::Client<HttpConnector, crate::Body>;

/// A typed client over hyper-util's pooled client, as [`Client::http`] builds it; the type to
/// name in a struct or a function that keeps one.
pub type HttpClient<E = crate::DefaultEnvelope> = Client<HttpPool, E>;

/// How long [`Client::http`]'s pool keeps an idle connection: below a Strata server's idle
/// timeout (60 s), so that the pool does not send on a connection the server is closing.
pub const HTTP_POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// A base URL [`Client::http`] cannot send to: the URL and the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the base URL {url:?} {rule}")]
pub struct InvalidBaseUrl {
    url: String,
    rule: &'static str,
}

impl InvalidBaseUrl {
    /// The URL refused.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The rule it breaks, in words.
    pub fn rule(&self) -> &str {
        self.rule
    }
}

impl Client<HttpPool> {
    /// A client of the API at `base_url` (`http://127.0.0.1:3000`, or with a path prefix:
    /// `http://api.internal/v2`) over a new pool of hyper-util's pooled client: HTTP/1.1 with
    /// keep-alive (HTTP/2 when the server speaks only that), idle connections closed after
    /// [`HTTP_POOL_IDLE_TIMEOUT`], the client's defaults otherwise (a 30 s timeout per call).
    /// Clones share the pool. Build it once and keep it (a pool per call would reconnect each
    /// time).
    ///
    /// The URL must be `http://` followed by a host (and port), and may have a path; no query
    /// string or fragment. For HTTPS, build a pool with a TLS connector (hyper-rustls) and pass
    /// it to [`Client::new`] with [`base_url`](Client::base_url).
    ///
    /// ```
    /// use strata_client::{Client, HttpClient};
    ///
    /// let client: HttpClient = Client::http("http://127.0.0.1:3000")?;
    /// let refused = Client::http("127.0.0.1:3000").unwrap_err();
    /// assert_eq!(
    ///     refused.to_string(),
    ///     r#"the base URL "127.0.0.1:3000" must start with http://"#
    /// );
    /// # Ok::<(), strata_client::InvalidBaseUrl>(())
    /// ```
    pub fn http(base_url: &str) -> Result<Self, InvalidBaseUrl> {
        check(base_url).map_err(|rule| InvalidBaseUrl {
            url: base_url.to_owned(),
            rule,
        })?;
        let pool = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .pool_idle_timeout(HTTP_POOL_IDLE_TIMEOUT)
            .build_http();
        Ok(Client::new(pool).base_url(base_url))
    }
}

/// Which rule `url` breaks, if any.
fn check(url: &str) -> Result<(), &'static str> {
    let Some(rest) = url.strip_prefix("http://") else {
        return Err(if url.starts_with("https://") {
            "is HTTPS: the plain pool does not speak TLS (build a pool with a TLS connector and use Client::new(pool).base_url(url))"
        } else {
            "must start with http://"
        });
    };
    if url.contains(['?', '#']) {
        return Err("must have no query string or fragment (the operations' paths follow it)");
    }
    if rest.is_empty() || rest.starts_with('/') {
        return Err("must name a host after http://");
    }
    let uri: Uri = url
        .parse()
        .map_err(|_| "is not a URL (a character that is not allowed, or a bad port)")?;
    let authority = uri.authority().map_or("", http::uri::Authority::as_str);
    if authority.contains('@') {
        return Err("must not carry credentials (send them as a header: Client::header)");
    }
    // (http's `Uri` takes any digits for a port, and tells no port from a bad one.)
    if let Some((_, port)) = authority.rsplit_once(':')
        && !port.contains(']')
        && port.parse::<u16>().is_err()
    {
        return Err("has a port that is not a number from 0 to 65535");
    }
    match uri.host() {
        Some(host) if !host.is_empty() => Ok(()),
        _ => Err("must name a host after http://"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_are_checked() {
        for good in [
            "http://127.0.0.1:3000",
            "http://localhost:8091/",
            "http://api.internal/v2",
            "http://[::1]:80/prefix/",
        ] {
            assert_eq!(check(good), Ok(()), "{good}");
        }
        for (bad, rule) in [
            ("127.0.0.1:3000", "must start with http://"),
            ("", "must start with http://"),
            ("ftp://host", "must start with http://"),
            ("https://host", "is HTTPS"),
            ("http://", "must name a host"),
            ("http:///path", "must name a host"),
            ("http://host/a?b=c", "no query string"),
            ("http://host/#top", "no query string or fragment"),
            ("http://ho st", "is not a URL"),
            ("http://host:99999", "a port that is not a number"),
            ("http://host:", "a port that is not a number"),
            ("http://ada:secret@host", "must not carry credentials"),
        ] {
            let error = check(bad).unwrap_err();
            assert!(error.contains(rule), "{bad}: {error}");
        }
    }
}
