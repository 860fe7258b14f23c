//! Cross-origin resource sharing for Strata (spec section 6a): the policy ([`Cors`]), the
//! headers each response gets ([`CorsHeaders`]) and the default headers of a path
//! ([`PathCors`]). Routing decides which path and endpoint a request goes to and answers
//! preflights; this crate decides what CORS says about it, knowing nothing of the trie.
//!
//! - [`Cors::Enabled`]: `Access-Control-Allow-Origin: *` on every response; on a preflight
//!   ([`is_preflight`]) also the path's methods in `Access-Control-Allow-Methods` and
//!   `Access-Control-Allow-Headers: content-type, authorization` and the header credentials its
//!   endpoints declare (`Security::header`), so that a browser may send them; routing answers
//!   `OPTIONS` with 200.
//! - [`Cors::with`] (or [`Cors::with_async`]): a function computes the headers of each request
//!   from the defaults, the request, the endpoint and the logger; an empty map sends none.
//!   Credentials with the origin `*` are dropped (browsers refuse them) and logged.
//! - [`Cors::Disabled`]: no headers; `OPTIONS` is a method like any other.
//!
//! `Access-Control-Allow-Methods`, `-Allow-Headers` and `-Max-Age` are sent on preflights only,
//! whoever computed them: browsers read them nowhere else (the Fetch standard's CORS check of
//! an actual response reads the origin and credentials only), as tower-http's `CorsLayer` does.
//! An actual response keeps `Access-Control-Allow-Origin`, `-Expose-Headers`,
//! `-Allow-Credentials` and `Vary`. express-zod-api sends them on every response: a deliberate
//! difference (`docs/architecture.md`).
//!
//! ```
//! use http::{HeaderMap, HeaderValue, Method, Request, Response};
//! use strata_core::Body;
//! use strata_cors::{Cors, PathCors};
//!
//! let cors = Cors::with(|request| {
//!     let mut headers = request.default_headers.clone();
//!     headers.insert("access-control-max-age", HeaderValue::from_static("600"));
//!     headers
//! });
//! // Once per path, at startup: the path's methods as `Allow` lists them.
//! let path = PathCors::new(&cors, Some(&HeaderValue::from_static("GET, HEAD, OPTIONS")), &[]);
//! // For each request: a preflight...
//! let (parts, ()) = Request::options("/v1/hello")
//!     .header("origin", "https://app.example")
//!     .header("access-control-request-method", "GET")
//!     .body(())
//!     .unwrap()
//!     .into_parts();
//! let mut response = Response::new(Body::empty());
//! cors.headers(&parts, &path, None).apply(&mut response);
//! assert_eq!(response.headers()["access-control-allow-origin"], "*");
//! assert_eq!(response.headers()["access-control-allow-methods"], "GET, HEAD, OPTIONS");
//! assert_eq!(response.headers()["access-control-max-age"], "600");
//! // ...and the actual request: the origin only.
//! let (parts, ()) = Request::get("/v1/hello")
//!     .header("origin", "https://app.example")
//!     .body(())
//!     .unwrap()
//!     .into_parts();
//! let mut response = Response::new(Body::empty());
//! cors.headers(&parts, &path, None).apply(&mut response);
//! assert_eq!(response.headers()["access-control-allow-origin"], "*");
//! assert!(!response.headers().contains_key("access-control-allow-methods"));
//! assert!(!response.headers().contains_key("access-control-max-age"));
//! ```

use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::{
    ACCESS_CONTROL_ALLOW_CREDENTIALS, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_MAX_AGE,
};
use http::request::Parts;
use http::{HeaderMap, HeaderValue, Method, Response};
use strata_core::{Body, Logger};
use strata_endpoint::EndpointMeta;

/// The name of the header a preflight asks about a method in.
pub const ACCESS_CONTROL_REQUEST_METHOD: &str = "access-control-request-method";

/// `Access-Control-Allow-Origin` of [`Cors::Enabled`].
const ALLOW_ORIGIN_ANY: HeaderValue = HeaderValue::from_static("*");
/// `Access-Control-Allow-Headers` of [`Cors::Enabled`]: JSON bodies and bearer tokens.
const ALLOW_HEADERS: HeaderValue = HeaderValue::from_static("content-type, authorization");

/// Whether `request` is a CORS preflight: an `OPTIONS` naming the method it asks about in
/// `Access-Control-Request-Method` (the Fetch standard's definition). Only its answer carries
/// `Access-Control-Allow-Methods`, `-Allow-Headers` and `-Max-Age`; an `OPTIONS` without that
/// header is an ordinary request.
pub fn is_preflight(request: &Parts) -> bool {
    request.method == Method::OPTIONS && request.headers.contains_key(ACCESS_CONTROL_REQUEST_METHOD)
}

/// What a CORS function is given for one request.
#[derive(Debug)]
pub struct CorsRequest<'a> {
    /// The headers [`Cors::Enabled`] would send for this request: on a preflight
    /// ([`is_preflight`]) the origin, the path's methods and the allowed headers; otherwise the
    /// origin only.
    pub default_headers: &'a HeaderMap,
    /// The request.
    pub request: &'a Parts,
    /// The endpoint the request is routed to, if any.
    pub endpoint: Option<&'a EndpointMeta>,
    /// The request's logger.
    pub logger: &'a Logger,
}

/// The future of an asynchronous CORS function.
pub type CorsFuture = Pin<Box<dyn Future<Output = HeaderMap> + Send>>;

type SyncCorsFn = dyn Fn(&CorsRequest<'_>) -> HeaderMap + Send + Sync;
type AsyncCorsFn = dyn Fn(&CorsRequest<'_>) -> CorsFuture + Send + Sync;

/// Cross-origin behaviour (spec section 6a). It must be chosen explicitly: routing refuses to
/// start without it.
#[derive(Clone)]
pub enum Cors {
    /// No CORS headers; `OPTIONS` is an unsupported method like any other.
    Disabled,
    /// `Access-Control-Allow-Origin: *` on every response, the path's methods and the allowed
    /// headers on preflights too, and `OPTIONS` answered with 200.
    Enabled,
    /// Headers computed per request by a function; an empty map sends none. Of its answer to
    /// a request that is no preflight, `Access-Control-Allow-Methods`, `-Allow-Headers` and
    /// `-Max-Age` are not sent.
    Custom(CorsFn),
}

/// A function computing the CORS headers of a request.
#[derive(Clone)]
pub enum CorsFn {
    /// Answers at once.
    Sync(Arc<SyncCorsFn>),
    /// Answers with a future. It runs synchronously first with borrowed request data: copy what
    /// the future needs.
    Async(Arc<AsyncCorsFn>),
}

impl fmt::Debug for Cors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cors::Disabled => f.write_str("Disabled"),
            Cors::Enabled => f.write_str("Enabled"),
            Cors::Custom(CorsFn::Sync(_)) => f.write_str("Custom(sync fn)"),
            Cors::Custom(CorsFn::Async(_)) => f.write_str("Custom(async fn)"),
        }
    }
}

impl Cors {
    /// Whether routing answers `OPTIONS` and lists it in `Allow`.
    pub fn is_enabled(&self) -> bool {
        !matches!(self, Cors::Disabled)
    }

    /// Headers computed by `f` for each request; an empty map sends none.
    pub fn with(f: impl Fn(&CorsRequest<'_>) -> HeaderMap + Send + Sync + 'static) -> Self {
        Cors::Custom(CorsFn::Sync(Arc::new(f)))
    }

    /// Headers computed by an asynchronous `f` for each request.
    pub fn with_async<F, Fut>(f: F) -> Self
    where
        F: Fn(&CorsRequest<'_>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HeaderMap> + Send + 'static,
    {
        let boxed = move |request: &CorsRequest<'_>| -> CorsFuture { Box::pin(f(request)) };
        Cors::Custom(CorsFn::Async(Arc::new(boxed)))
    }

    /// The headers of a request to a path (`path`; [`PathCors::new`] with `None` for an
    /// unknown one) and an endpoint, if it goes to one; the methods, allowed headers and max
    /// age only when it is a preflight ([`is_preflight`]). A CORS function runs here, its panic
    /// caught (no headers then: the browser refuses the response, the safe outcome); an
    /// asynchronous one's future is polled with the response ([`CorsHeaders::poll_ready`]).
    pub fn headers(
        &self,
        parts: &Parts,
        path: &PathCors,
        endpoint: Option<&EndpointMeta>,
    ) -> CorsHeaders {
        let preflight = is_preflight(parts);
        CorsHeaders(match self {
            Cors::Disabled => Pending::None,
            Cors::Enabled if preflight => Pending::Preflight {
                methods: path.methods.clone(),
                allowed_headers: path.allowed_headers.clone(),
            },
            Cors::Enabled => Pending::AnyOrigin,
            Cors::Custom(function) => {
                let empty = HeaderMap::new();
                let defaults = if preflight {
                    &path.defaults
                } else {
                    &path.actual_defaults
                };
                let logger = Logger::from_extensions(&parts.extensions);
                let request = CorsRequest {
                    default_headers: defaults.as_ref().unwrap_or(&empty),
                    request: parts,
                    endpoint,
                    logger: &logger,
                };
                let outcome = catch_unwind(AssertUnwindSafe(|| match function {
                    CorsFn::Sync(f) => {
                        Pending::Map(Box::new(checked(f(&request), &logger, preflight)))
                    }
                    CorsFn::Async(f) => Pending::Future(Box::new(Waiting {
                        future: f(&request),
                        logger: logger.clone(),
                        preflight,
                    })),
                }));
                outcome.unwrap_or_else(|_| {
                    logger.error("CORS function panicked; no CORS headers were sent");
                    Pending::None
                })
            }
        })
    }
}

/// What CORS knows of one path, computed once at startup: its methods (the `Allow` value), the
/// request headers it allows, and for a CORS function the default headers it is given.
#[derive(Debug, Clone, Default)]
pub struct PathCors {
    methods: Option<HeaderValue>,
    /// `content-type, authorization`, and the header credentials of the path's endpoints.
    allowed_headers: Option<HeaderValue>,
    /// A preflight's defaults; built only when a function will be given them.
    defaults: Option<HeaderMap>,
    /// Any other request's defaults (the origin only); built only for a function.
    actual_defaults: Option<HeaderMap>,
}

impl PathCors {
    /// The path whose methods `Allow` lists as `methods` (`None`: an unknown path), under
    /// `cors`; `credentials` are the names of the header credentials its endpoints' middleware
    /// declare (`Security::header`), which a browser may send only when they are allowed.
    pub fn new(cors: &Cors, methods: Option<&HeaderValue>, credentials: &[&str]) -> Self {
        let allowed_headers = allowed_headers(credentials);
        match cors {
            Cors::Disabled => Self::default(),
            Cors::Enabled => Self {
                methods: methods.cloned(),
                allowed_headers: Some(allowed_headers),
                defaults: None,
                actual_defaults: None,
            },
            Cors::Custom(_) => Self {
                defaults: Some(default_headers(methods, &allowed_headers)),
                actual_defaults: Some(HeaderMap::from_iter([(
                    ACCESS_CONTROL_ALLOW_ORIGIN,
                    ALLOW_ORIGIN_ANY,
                )])),
                methods: methods.cloned(),
                allowed_headers: Some(allowed_headers),
            },
        }
    }
}

/// `content-type, authorization` and `credentials` (lower-case, each once).
fn allowed_headers(credentials: &[&str]) -> HeaderValue {
    let mut names: Vec<String> = credentials
        .iter()
        .map(|name| name.to_ascii_lowercase())
        .filter(|name| name != "content-type" && name != "authorization")
        .collect();
    if names.is_empty() {
        return ALLOW_HEADERS;
    }
    names.sort();
    names.dedup();
    let value = format!("content-type, authorization, {}", names.join(", "));
    HeaderValue::from_str(&value).unwrap_or(ALLOW_HEADERS)
}

/// The headers of [`Cors::Enabled`] for a preflight to a path: any origin, its methods when
/// known, the request headers it allows.
fn default_headers(methods: Option<&HeaderValue>, allowed: &HeaderValue) -> HeaderMap {
    let mut headers = HeaderMap::with_capacity(3);
    headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, ALLOW_ORIGIN_ANY);
    if let Some(methods) = methods {
        headers.insert(ACCESS_CONTROL_ALLOW_METHODS, methods.clone());
    }
    headers.insert(ACCESS_CONTROL_ALLOW_HEADERS, allowed.clone());
    headers
}

/// The CORS headers one response gets ([`Cors::headers`]): ready, or waiting for an
/// asynchronous function.
pub struct CorsHeaders(Pending);

enum Pending {
    None,
    /// [`Cors::Enabled`] on a request that is no preflight: `Access-Control-Allow-Origin: *`.
    AnyOrigin,
    /// [`Cors::Enabled`] on a preflight: the default headers, with the path's methods when the
    /// path is known.
    Preflight {
        methods: Option<HeaderValue>,
        allowed_headers: Option<HeaderValue>,
    },
    /// A function's answer. This and `Future` are boxed: inline, they would triple the size of
    /// every request's future, moved several times on the way to hyper.
    Map(Box<HeaderMap>),
    /// An asynchronous function's answer, to wait for.
    Future(Box<Waiting>),
}

/// An asynchronous function's answer being computed, and what checking it needs.
struct Waiting {
    future: CorsFuture,
    logger: Logger,
    preflight: bool,
}

impl fmt::Debug for CorsHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.0 {
            Pending::None => "None",
            Pending::AnyOrigin => "AnyOrigin",
            Pending::Preflight { .. } => "Preflight",
            Pending::Map(_) => "Map",
            Pending::Future(_) => "Future",
        };
        f.debug_tuple("CorsHeaders").field(&state).finish()
    }
}

impl CorsHeaders {
    /// No CORS headers.
    pub fn none() -> Self {
        Self(Pending::None)
    }

    /// Ready once an asynchronous function has answered (at once otherwise). A panic in its
    /// future is caught and logged: no headers then.
    pub fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if let Pending::Future(pending) = &mut self.0 {
            let Waiting {
                future,
                logger,
                preflight,
            } = &mut **pending;
            match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
                Ok(Poll::Pending) => return Poll::Pending,
                Ok(Poll::Ready(headers)) => {
                    self.0 = Pending::Map(Box::new(checked(headers, logger, *preflight)));
                }
                Err(_) => {
                    logger.error("CORS function panicked; no CORS headers were sent");
                    self.0 = Pending::None;
                }
            }
        }
        Poll::Ready(())
    }

    /// Adds the headers to `response` (none while a function's answer is still pending).
    pub fn apply(self, response: &mut Response<Body>) {
        match self.0 {
            Pending::None | Pending::Future(..) => {}
            Pending::AnyOrigin => {
                response
                    .headers_mut()
                    .insert(ACCESS_CONTROL_ALLOW_ORIGIN, ALLOW_ORIGIN_ANY);
            }
            Pending::Preflight {
                methods,
                allowed_headers,
            } => {
                let target = response.headers_mut();
                target.insert(ACCESS_CONTROL_ALLOW_ORIGIN, ALLOW_ORIGIN_ANY);
                if let Some(methods) = methods {
                    target.insert(ACCESS_CONTROL_ALLOW_METHODS, methods);
                }
                target.insert(
                    ACCESS_CONTROL_ALLOW_HEADERS,
                    allowed_headers.unwrap_or(ALLOW_HEADERS),
                );
            }
            Pending::Map(map) => response.headers_mut().extend(*map),
        }
    }
}

/// A function's answer as sent: without the headers only a preflight's answer is read for
/// (`preflight` false), and without credentials with the origin `*`, which browsers would
/// refuse, or worse, lax ones honour (the credentials header is dropped and that logged).
fn checked(mut headers: HeaderMap, logger: &Logger, preflight: bool) -> HeaderMap {
    if !preflight {
        for name in [
            ACCESS_CONTROL_ALLOW_METHODS,
            ACCESS_CONTROL_ALLOW_HEADERS,
            ACCESS_CONTROL_MAX_AGE,
        ] {
            headers.remove(name);
        }
    }
    let credentials = headers
        .get(ACCESS_CONTROL_ALLOW_CREDENTIALS)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"));
    let any_origin = headers
        .get(ACCESS_CONTROL_ALLOW_ORIGIN)
        .is_some_and(|v| v == "*");
    if credentials && any_origin {
        headers.remove(ACCESS_CONTROL_ALLOW_CREDENTIALS);
        logger.error(
            "CORS: Access-Control-Allow-Credentials requires a specific origin, not *; the credentials header was not sent",
        );
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Request;

    fn parts() -> Parts {
        Request::get("/x")
            .body(())
            .unwrap_or_default()
            .into_parts()
            .0
    }

    fn preflight() -> Parts {
        Request::options("/x")
            .header(ACCESS_CONTROL_REQUEST_METHOD, "GET")
            .body(())
            .unwrap_or_default()
            .into_parts()
            .0
    }

    fn applied(mut headers: CorsHeaders) -> HeaderMap {
        let waker = std::task::Waker::noop();
        assert!(
            headers
                .poll_ready(&mut Context::from_waker(waker))
                .is_ready()
        );
        let mut response = Response::new(Body::empty());
        headers.apply(&mut response);
        std::mem::take(response.headers_mut())
    }

    #[test]
    fn disabled_sends_nothing_and_enabled_the_defaults() {
        let allow = HeaderValue::from_static("GET, HEAD, OPTIONS");
        let path = PathCors::new(&Cors::Disabled, Some(&allow), &[]);
        assert!(applied(Cors::Disabled.headers(&parts(), &path, None)).is_empty());
        let path = PathCors::new(&Cors::Enabled, Some(&allow), &[]);
        let headers = applied(Cors::Enabled.headers(&preflight(), &path, None));
        assert_eq!(headers, default_headers(Some(&allow), &ALLOW_HEADERS));
        assert_eq!(
            headers[ACCESS_CONTROL_ALLOW_HEADERS],
            "content-type, authorization"
        );
        let unknown = PathCors::new(&Cors::Enabled, None, &[]);
        let headers = applied(Cors::Enabled.headers(&preflight(), &unknown, None));
        assert!(!headers.contains_key(ACCESS_CONTROL_ALLOW_METHODS));
        let headers = applied(Cors::Enabled.headers(&parts(), &path, None));
        assert_eq!(
            headers,
            HeaderMap::from_iter([(ACCESS_CONTROL_ALLOW_ORIGIN, ALLOW_ORIGIN_ANY)])
        );
    }

    #[test]
    fn a_preflight_is_an_options_naming_a_method() {
        assert!(is_preflight(&preflight()));
        assert!(!is_preflight(&parts()));
        let mut options = preflight();
        options.headers.clear();
        assert!(!is_preflight(&options), "OPTIONS alone");
        let mut get = preflight();
        get.method = Method::GET;
        assert!(!is_preflight(&get), "GET naming a method");
    }

    #[test]
    fn a_paths_header_credentials_are_allowed() {
        let path = PathCors::new(
            &Cors::Enabled,
            None,
            &["X-Token", "authorization", "x-api-key"],
        );
        let headers = applied(Cors::Enabled.headers(&preflight(), &path, None));
        assert_eq!(
            headers[ACCESS_CONTROL_ALLOW_HEADERS],
            "content-type, authorization, x-api-key, x-token"
        );
        let cors = Cors::with(|request| request.default_headers.clone());
        let path = PathCors::new(&cors, None, &["x-token"]);
        let headers = applied(cors.headers(&preflight(), &path, None));
        assert_eq!(
            headers[ACCESS_CONTROL_ALLOW_HEADERS],
            "content-type, authorization, x-token"
        );
    }

    #[test]
    fn credentials_with_any_origin_are_dropped_and_a_panic_sends_nothing() {
        let cors = Cors::with(|request| {
            let mut headers = request.default_headers.clone();
            headers.insert(
                ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
            headers
        });
        let path = PathCors::new(&cors, None, &[]);
        let headers = applied(cors.headers(&parts(), &path, None));
        assert_eq!(headers[ACCESS_CONTROL_ALLOW_ORIGIN], "*");
        assert!(!headers.contains_key(ACCESS_CONTROL_ALLOW_CREDENTIALS));

        #[allow(clippy::panic)]
        let panics = Cors::with(|_| panic!("user code"));
        let path = PathCors::new(&panics, None, &[]);
        assert!(applied(panics.headers(&parts(), &path, None)).is_empty());
    }

    #[tokio::test]
    async fn an_asynchronous_function_is_waited_for() {
        let cors = Cors::with_async(|request| {
            let origin = request.request.uri.path().to_owned();
            async move {
                let mut headers = HeaderMap::new();
                headers.insert(
                    ACCESS_CONTROL_ALLOW_ORIGIN,
                    HeaderValue::from_str(&origin).unwrap_or(ALLOW_ORIGIN_ANY),
                );
                headers
            }
        });
        let path = PathCors::new(&cors, None, &[]);
        let mut headers = cors.headers(&parts(), &path, None);
        std::future::poll_fn(|cx| headers.poll_ready(cx)).await;
        let mut response = Response::new(Body::empty());
        headers.apply(&mut response);
        assert_eq!(response.headers()[ACCESS_CONTROL_ALLOW_ORIGIN], "/x");
    }
}
