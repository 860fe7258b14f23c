//! [`CookieMiddleware`]: reads the request's cookies into a [`Cookies`] context entry.

use std::future::Ready;

use http::request::Parts;
use strata_core::{ApiError, Logger};
use strata_input::cookies::{CookieKeys, RequestCookies};
use strata_middleware::{Middleware, MiddlewareHandler};

use crate::jar::{CookieAmends, Cookies};

/// The cookie middleware's function: reads the request's cookies (within the limits of
/// [`RequestCookies`]: a 400 beyond them) into a [`Cookies`] entry of the context, and sends
/// what the handler set as `Set-Cookie` with the response, success or error.
///
/// ```
/// use strata_cookies::CookieMiddleware;
/// use strata_input::cookies::CookieKeys;
///
/// let keys = CookieKeys::new(["a random secret of at least 32 bytes"]).unwrap();
/// let middleware = CookieMiddleware::new().keys(keys).into_middleware();
/// # let _ = middleware;
/// ```
#[derive(Debug, Clone, Default)]
pub struct CookieMiddleware {
    keys: Option<CookieKeys>,
}

impl CookieMiddleware {
    /// A middleware without keys: plain cookies only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Signs and verifies signed cookies with `keys` (the same keys as the configuration's
    /// `cookie_keys`, so that the `signed_cookies` input source agrees).
    #[must_use]
    pub fn keys(mut self, keys: CookieKeys) -> Self {
        self.keys = Some(keys);
        self
    }

    /// The middleware, to attach with `add_middleware`.
    pub fn into_middleware(self) -> Middleware<(), Self> {
        Middleware::custom(self).name("cookies")
    }
}

impl<C> MiddlewareHandler<(), C> for CookieMiddleware {
    type Output = Cookies;
    type Future = Ready<Result<Cookies, ApiError>>;
    type Amends = CookieAmends;

    fn call(&self, (): (), request: &Parts, _ctx: &C, _logger: &Logger) -> Self::Future {
        std::future::ready(
            RequestCookies::parse(&request.headers)
                .map(|cookies| Cookies::new(cookies, self.keys.clone())),
        )
    }

    fn amends(output: &Cookies) -> CookieAmends {
        CookieAmends(output.clone())
    }
}
