//! [`Cookies`]: the context entry, and what the middleware keeps of it to write `Set-Cookie`.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use cookie::Cookie;
use http::HeaderValue;
use http::header::SET_COOKIE;
use strata_core::ApiError;
use strata_input::cookies::{CookieKeys, RequestCookies};
use strata_middleware::{Amend, AmendResponse, outcome_headers};

use crate::error::{CookieError, CookieRule};
use crate::options::CookieOptions;

/// The request's cookies, and the cookies to set on the response, for handlers (a parameter
/// `cookies: Cookies`) and later middleware (`let cookies: &Cookies = ctx.get();`).
///
/// What [`set`](Self::set), [`set_signed`](Self::set_signed) and [`clear`](Self::clear)
/// record is sent as `Set-Cookie` headers with whatever the endpoint answers, an error
/// included (a session cleared before a 403 is cleared). Cloning shares the jar.
#[derive(Clone)]
pub struct Cookies(Arc<Shared>);

struct Shared {
    request: RequestCookies,
    keys: Option<CookieKeys>,
    set: Mutex<Vec<Cookie<'static>>>,
}

impl Cookies {
    pub(crate) fn new(request: RequestCookies, keys: Option<CookieKeys>) -> Self {
        Self(Arc::new(Shared {
            request,
            keys,
            set: Mutex::new(Vec::new()),
        }))
    }

    /// The value of the request's cookie `name` (percent-decoded).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.request.get(name)
    }

    /// The value of the request's signed cookie `name` when one of the keys signed it; a
    /// forged, altered or unsigned cookie is `None`, as is every cookie without keys.
    pub fn get_signed(&self, name: &str) -> Option<String> {
        let keys = self.0.keys.as_ref()?;
        self.0.request.get_signed(name, keys)
    }

    /// The request's cookies, name and value, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.request.iter()
    }

    /// Sets the cookie `name` to `value` (percent-encoded as needed) on the response.
    ///
    /// # Errors
    ///
    /// [`CookieError`] naming the rule the cookie breaks (see [`CookieRule`]): a name that is
    /// not a token, `;` or a control character in the path or domain, `SameSite=None` or
    /// `Partitioned` without `Secure`, a `__Secure-` name without `Secure`, a `__Host-` name
    /// without `Secure`, `Path=/` and no domain, more than 4096 bytes. Nothing is set. In a
    /// handler, `?` makes it a 500 naming the rule in the log.
    pub fn set(
        &self,
        name: &str,
        value: impl Into<String>,
        options: &CookieOptions,
    ) -> Result<(), CookieError> {
        self.record(options.cookie(name, value.into())?);
        Ok(())
    }

    /// Sets the signed cookie `name`: `value` with a signature of the first key, which
    /// [`get_signed`](Self::get_signed) and the `signed_cookies` input source verify. The
    /// signature covers the name, the value and the cookie's expiry (from `Max-Age` or
    /// `Expires`, when the options set one): the value is refused under another name, or
    /// after its expiry, though a client kept it.
    ///
    /// # Errors
    ///
    /// As [`set`](Self::set), and [`CookieRule::NoKeys`] when the middleware has no keys.
    pub fn set_signed(
        &self,
        name: &str,
        value: impl Into<String>,
        options: &CookieOptions,
    ) -> Result<(), CookieError> {
        let keys = self
            .0
            .keys
            .as_ref()
            .ok_or_else(|| CookieError::new(name, CookieRule::NoKeys))?;
        let value = value.into();
        let signed = match options.expiry(SystemTime::now()) {
            Some(expires) => keys.sign_until(name, &value, expires),
            None => keys.sign(name, &value),
        };
        self.set(name, signed, options)
    }

    /// Removes the cookie `name` from the client: an empty value that expired long ago. The
    /// path and domain of `options` must be the ones it was set with.
    ///
    /// # Errors
    ///
    /// As [`set`](Self::set): a browser ignores a removal that breaks a rule, too.
    pub fn clear(&self, name: &str, options: &CookieOptions) -> Result<(), CookieError> {
        let mut cookie = options.cookie(name, String::new())?;
        cookie.make_removal();
        self.record(cookie);
        Ok(())
    }

    /// How many cookies are to be set (cleared ones included).
    pub fn pending(&self) -> usize {
        self.0
            .set
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Records `cookie`, replacing an earlier one of the same name, path and domain: the
    /// client would keep only the last.
    fn record(&self, cookie: Cookie<'static>) {
        let mut set = self.0.set.lock().unwrap_or_else(PoisonError::into_inner);
        set.retain(|earlier| {
            !(earlier.name() == cookie.name()
                && earlier.path() == cookie.path()
                && earlier.domain() == cookie.domain())
        });
        set.push(cookie);
    }
}

impl fmt::Debug for Cookies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Names only: values are credentials.
        f.debug_struct("Cookies")
            .field(
                "request",
                &self
                    .0
                    .request
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
            .field("pending", &self.pending())
            .finish_non_exhaustive()
    }
}

/// What the cookie middleware keeps: the jar it shares with the context entry, whose
/// recorded cookies become `Set-Cookie` headers once the rest of the chain answered.
pub struct CookieAmends(pub(crate) Cookies);

impl AmendResponse for CookieAmends {
    fn amend<R: Amend>(self, outcome: &mut Result<R, ApiError>) {
        let set = std::mem::take(&mut *self.0.0.set.lock().unwrap_or_else(PoisonError::into_inner));
        if set.is_empty() {
            return;
        }
        let headers = outcome_headers(outcome);
        for cookie in set {
            // Encoded: names, paths and domains were checked and values are percent-encoded,
            // so every byte is one a header allows.
            if let Ok(value) = HeaderValue::try_from(cookie.encoded().to_string()) {
                headers.append(SET_COOKIE, value);
            }
        }
    }
}
