//! Cookies for Strata endpoints: a middleware that puts the request's cookies in the context
//! as [`Cookies`], with typed `get`, `set` and `clear`, and sends what was set as
//! `Set-Cookie` with the response, whatever it is: a cookie set before an error goes with the
//! error response (express-zod-api's middleware set cookies on express's `response`, which
//! every outcome then carries; here the middleware amends the outcome, see
//! `strata_middleware::AmendResponse`).
//!
//! Signed cookies are HMAC-SHA256 over the cookie's name, its expiry and its value, with key
//! rotation through [`CookieKeys`]: a forged, altered, unsigned or expired cookie reads as
//! absent, as does a value signed for another cookie. Setting a cookie checks the rules
//! browsers enforce (see [`CookieRule`]): one that breaks them is refused with a
//! [`CookieError`] naming the rule, not dropped by the browser without a word. Cookies as
//! an input source (`InputSource::Cookies`, `InputSource::SignedCookies`) are the combine
//! stage's; this middleware is for handlers that read and write cookies themselves.
//!
//! Limits (of [`RequestCookies`]): at most
//! [`MAX_COOKIES`](strata_input::cookies::MAX_COOKIES) cookies of at most
//! [`MAX_COOKIE_BYTES`](strata_input::cookies::MAX_COOKIE_BYTES) each; beyond them, or a
//! `Cookie` header that is not UTF-8, the middleware answers 400 naming the problem. The
//! header's size is bounded before by the server's header limit.
//!
//! # Example
//!
//! ```
//! use http::Request;
//! use strata_core::{ApiError, HCons, HNil};
//! use strata_cookies::{CookieMiddleware, CookieOptions, Cookies};
//! use strata_input::Staged;
//! use strata_middleware::MiddlewareLayer;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let service = ServiceBuilder::new()
//!     .layer(MiddlewareLayer::new(CookieMiddleware::new().into_middleware()))
//!     .service(service_fn(|request: Request<Staged<HCons<Cookies, HNil>>>| async move {
//!         let cookies = &request.body().ctx.head;
//!         let visits: u32 = cookies.get("visits").and_then(|v| v.parse().ok()).unwrap_or(0);
//!         cookies.set("visits", (visits + 1).to_string(), &CookieOptions::new())?;
//!         Ok::<_, ApiError>(http::Response::new(visits))
//!     }));
//!
//! let request = Request::builder()
//!     .header("cookie", "visits=41")
//!     .body(Staged::default())
//!     .unwrap();
//! let response = service.oneshot(request).await.unwrap();
//! assert_eq!(*response.body(), 41);
//! assert_eq!(response.headers()["set-cookie"], "visits=42; HttpOnly; SameSite=Lax; Path=/");
//! # }
//! ```

mod error;
mod jar;
mod middleware;
mod options;

pub use error::{CookieError, CookieRule};
pub use jar::{CookieAmends, Cookies};
pub use middleware::CookieMiddleware;
pub use options::{CookieOptions, SameSite};
pub use strata_input::cookies::{CookieKeyError, CookieKeys, RequestCookies};

/// The cookie middleware without keys (plain cookies only):
/// `factory.add_middleware(strata_cookies::cookies())`.
pub fn cookies() -> strata_middleware::Middleware<(), CookieMiddleware> {
    CookieMiddleware::new().into_middleware()
}

#[cfg(test)]
mod tests;
