//! The middleware ([`Caching`]), its context entry ([`Cache`]) and what they do to the response.

use std::fmt;
use std::future::{Ready, ready};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use http::header::{CACHE_CONTROL, CONTENT_LOCATION, ETAG, LAST_MODIFIED, SET_COOKIE, VARY};
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use strata_core::{ApiError, DeclaredError, Logger, ResponseHeader};
use strata_middleware::{Amend, AmendResponse, Middleware, MiddlewareHandler};

use crate::conditions::{Conditions, Known, Verdict};
use crate::control::CacheControl;
use crate::date::LastModified;
use crate::etag::ETag;

/// The cache middleware of a factory: its policy, its `Vary` list and what errors get; see the
/// [crate docs](crate). [`middleware`](Self::middleware) makes the [`Middleware`] to attach.
#[derive(Clone)]
pub struct Caching {
    config: Arc<Config>,
}

#[derive(Clone)]
struct Config {
    policy: CacheControl,
    /// `policy` for a response with `Set-Cookie` ([`CacheControl::to_private`]), made once.
    private_policy: CacheControl,
    error_policy: Option<CacheControl>,
    /// `error_policy` for an error with `Set-Cookie`.
    private_error_policy: Option<CacheControl>,
    vary: Vec<HeaderName>,
    /// `vary` rendered once (`None` when empty).
    vary_value: Option<HeaderValue>,
}

impl Caching {
    /// Sends `policy` with every response of the endpoints behind it (unless a handler chooses
    /// another for its response), `Cache-Control: no-store` with their errors, and no `Vary`.
    ///
    /// A response that sets a cookie (`Set-Cookie`) gets the policy made private instead
    /// ([`CacheControl::to_private`]): `public` becomes `private` and the directives for
    /// shared caches go, so that no shared cache hands one client's cookie to another.
    pub fn new(policy: CacheControl) -> Self {
        Self {
            config: Arc::new(Config {
                private_policy: policy.to_private(),
                policy,
                error_policy: Some(CacheControl::no_store()),
                private_error_policy: Some(CacheControl::no_store()),
                vary: Vec::new(),
                vary_value: None,
            }),
        }
    }

    /// Adds request headers the responses depend on to `Vary` (each once; rendered now, not
    /// per request). A `Vary` the response already has is kept and completed.
    pub fn vary(mut self, names: impl IntoIterator<Item = HeaderName>) -> Self {
        let config = Arc::make_mut(&mut self.config);
        for name in names {
            if !config.vary.contains(&name) {
                config.vary.push(name);
            }
        }
        let text = config
            .vary
            .iter()
            .map(HeaderName::as_str)
            .collect::<Vec<_>>()
            .join(", ");
        // Header names joined by ", ": always a header value.
        config.vary_value = HeaderValue::from_str(&text).ok().filter(|v| !v.is_empty());
        self
    }

    /// What error responses get for `Cache-Control` (`no-store` unless changed; `None` sends
    /// none). An error is a statement about one request (its input, its credentials, a passing
    /// failure), not about the resource: `no-store` keeps every cache from serving a 400, a
    /// 401 or a 503 to the next client, including caches that would otherwise store some error
    /// statuses heuristically (RFC 9110 §15.1: 404, 405, 410, 414, 501). A stale response
    /// kept under `stale-if-error` is still served in place of a 5xx: that directive is about
    /// the stored success, not the error.
    pub fn error_policy(mut self, policy: Option<CacheControl>) -> Self {
        let config = Arc::make_mut(&mut self.config);
        config.private_error_policy = policy.as_ref().map(CacheControl::to_private);
        config.error_policy = policy;
        self
    }

    /// The policy of the factory's responses.
    pub fn policy(&self) -> &CacheControl {
        &self.config.policy
    }

    /// The middleware to attach (`factory.add_middleware(caching.middleware())`), documented:
    /// `Cache-Control`, `ETag`, `Last-Modified` and `Vary` on success responses, the 304 and the
    /// 412 among the endpoints' responses.
    pub fn middleware(self) -> Middleware<(), Self> {
        let policy = self.config.policy.to_string();
        let cache_control = ResponseHeader::new(
            "cache-control",
            format!(
                "How caches may keep the response: `{policy}`, unless the endpoint chooses another for it"
            ),
        );
        let etag = ResponseHeader::new(
            "etag",
            "The entity tag of the representation, when the endpoint sets one; send it back in \
             `If-None-Match` to get a 304 while it is current",
        );
        let last_modified = ResponseHeader::new(
            "last-modified",
            "When the representation last changed, when the endpoint says; send it back in \
             `If-Modified-Since` to get a 304 while it is current",
        );
        let vary = self.config.vary_value.as_ref().map(|value| {
            ResponseHeader::new(
                "vary",
                format!(
                    "The request headers the response depends on: `{}`",
                    value.to_str().unwrap_or_default()
                ),
            )
        });
        let mut not_modified = DeclaredError::new(
            StatusCode::NOT_MODIFIED,
            "Not Modified: the representation named by `If-None-Match` (or dated by \
             `If-Modified-Since`) is still current; no body",
        )
        .header(etag.clone())
        .header(cache_control.clone())
        .header(last_modified.clone());
        let mut middleware = Middleware::custom(self)
            .name("cache")
            .success_header(cache_control)
            .success_header(etag)
            .success_header(last_modified);
        if let Some(vary) = vary {
            not_modified = not_modified.header(vary.clone());
            middleware = middleware.success_header(vary);
        }
        middleware.declared_error(not_modified).error_response(
            StatusCode::PRECONDITION_FAILED,
            "Precondition Failed: the representation does not satisfy `If-Match` or \
             `If-Unmodified-Since`",
        )
    }
}

impl fmt::Debug for Caching {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Caching")
            .field("policy", &self.config.policy)
            .field("error_policy", &self.config.error_policy)
            .field("vary", &self.config.vary)
            .finish()
    }
}

impl<C> MiddlewareHandler<(), C> for Caching {
    type Output = Cache;
    type Future = Ready<Result<Cache, ApiError>>;
    type Amends = Cache;

    fn call(&self, (): (), request: &Parts, _ctx: &C, _logger: &Logger) -> Self::Future {
        let conditions = Conditions::of(&request.method, &request.headers);
        ready(Ok(Cache {
            shared: Arc::new(Shared {
                config: Arc::clone(&self.config),
                conditions,
                state: Mutex::default(),
            }),
        }))
    }

    fn amends(output: &Cache) -> Cache {
        Cache {
            shared: Arc::clone(&output.shared),
        }
    }
}

/// The cache of one request, in the context of the endpoints behind [`Caching`]: the handler
/// sets the representation's validators (and may check the request's conditions with them
/// before doing the expensive part) and may choose the response's policy.
///
/// ```
/// # use strata_cache::{Cache, ETag};
/// # fn handler(cache: &Cache) -> Result<(), strata_core::ApiError> {
/// let version = 42; // cheap to know: a counter, an `updated_at` column
/// cache.etag(ETag::strong(format!("v{version}"))?)?; // a 304 now if the client has it
/// // ... the expensive part, only for clients that need it ...
/// # Ok(())
/// # }
/// ```
pub struct Cache {
    shared: Arc<Shared>,
}

struct Shared {
    config: Arc<Config>,
    /// The request's preconditions, for a GET or HEAD that has any.
    conditions: Option<Box<Conditions>>,
    state: Mutex<State>,
}

/// What the handler said.
#[derive(Default)]
struct State {
    etag: Option<ETag>,
    modified: Option<LastModified>,
    policy: Option<CacheControl>,
}

impl Cache {
    /// Sets the `ETag` of the response, the tag of the representation the request gets, and
    /// evaluates the request's preconditions with it (RFC 9110 §13.2.2, GET and HEAD only):
    /// `Err` when the client's copy is current ([`ApiError::not_modified`]: the 304, sent with
    /// the response's cache headers and without a body) or when `If-Match` fails (412). With
    /// `?` early in a handler, the rest of it and the output check are skipped. Return the
    /// error as it is: the output stage turns the "not modified" into the 304 response, so
    /// every middleware sees a success with status 304, never an error.
    pub fn etag(&self, tag: ETag) -> Result<(), ApiError> {
        let mut state = self.lock();
        state.etag = Some(tag);
        self.check(&mut state)
    }

    /// Sets the `Last-Modified` of the response (whole seconds; a time in the future is
    /// sent as now, RFC 9110 §8.8.2.1) and evaluates the request's preconditions with it, as
    /// [`etag`](Self::etag) does (`If-Modified-Since` counts only without `If-None-Match`).
    pub fn last_modified(&self, time: SystemTime) -> Result<(), ApiError> {
        let mut state = self.lock();
        state.modified = Some(LastModified::new(time, SystemTime::now()));
        self.check(&mut state)
    }

    /// Chooses the `Cache-Control` of this request's success response, instead of the
    /// middleware's policy.
    pub fn set_policy(&self, policy: CacheControl) {
        self.lock().policy = Some(policy);
    }

    /// The policy the success response will get.
    pub fn policy(&self) -> CacheControl {
        let state = self.lock();
        state
            .policy
            .as_ref()
            .unwrap_or(&self.shared.config.policy)
            .clone()
    }

    /// Whether the request is a GET or HEAD with preconditions (`If-None-Match`,
    /// `If-Modified-Since`, `If-Match`, `If-Unmodified-Since`): whether setting validators
    /// early can spare work.
    pub fn is_conditional(&self) -> bool {
        self.shared.conditions.is_some()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A handler that panicked while holding it left nothing half-written that matters.
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn check(&self, state: &mut State) -> Result<(), ApiError> {
        let Some(conditions) = &self.shared.conditions else {
            return Ok(());
        };
        let modified = state.modified.as_ref().map(|m| m.seconds);
        match conditions.evaluate(state.etag.as_ref(), modified, Known::SoFar) {
            Verdict::Proceed => Ok(()),
            Verdict::NotModified => Err(ApiError::not_modified()),
            Verdict::PreconditionFailed => Err(precondition_failed()),
        }
    }
}

impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("Cache")
            .field("etag", &state.etag)
            .field("last_modified", &state.modified.as_ref().map(|m| &m.value))
            .field("policy", &state.policy)
            .field("conditional", &self.shared.conditions.is_some())
            .finish()
    }
}

fn precondition_failed() -> ApiError {
    ApiError::new(StatusCode::PRECONDITION_FAILED, "Precondition Failed")
}

impl AmendResponse for Cache {
    fn amend<R: Amend>(self, outcome: &mut Result<R, ApiError>) {
        let state = std::mem::take(&mut *self.lock());
        let shared = &*self.shared;
        let config = &*shared.config;
        let response = match outcome {
            // A "not modified" still an error: a stack without Strata's output stage, which
            // turns it into the 304 response before any middleware sees it.
            Err(error) if error.is_not_modified() => {
                let headers = error.take_headers().unwrap_or_default();
                *outcome = Ok(R::not_modified(not_modified(headers, config, state)));
                return;
            }
            Err(error) => {
                error_headers(error.headers_mut(), config);
                return;
            }
            // The handler's early "not modified", a response since the output stage: the
            // 304's headers, with what the middleware after this one added.
            Ok(response) if response.status() == StatusCode::NOT_MODIFIED => {
                let headers = std::mem::take(response.headers_mut());
                *response.headers_mut() = not_modified(headers, config, state);
                return;
            }
            Ok(response) => response,
        };
        let validated = state.etag.is_some() || state.modified.is_some();
        if let (true, true, Some(conditions)) = (
            validated,
            response.status().is_success(),
            &shared.conditions,
        ) {
            let modified = state.modified.as_ref().map(|m| m.seconds);
            match conditions.evaluate(state.etag.as_ref(), modified, Known::All) {
                Verdict::Proceed => {}
                Verdict::NotModified => {
                    let headers = std::mem::take(response.headers_mut());
                    *outcome = Ok(R::not_modified(not_modified(headers, config, state)));
                    return;
                }
                Verdict::PreconditionFailed => {
                    let mut headers = std::mem::take(response.headers_mut());
                    strip(&mut headers, &[CACHE_CONTROL, ETAG, LAST_MODIFIED]);
                    let mut error = precondition_failed();
                    *error.headers_mut() = headers;
                    error_headers(error.headers_mut(), config);
                    *outcome = Err(error);
                    return;
                }
            }
        }
        let headers = response.headers_mut();
        if !headers.contains_key(CACHE_CONTROL) {
            headers.insert(CACHE_CONTROL, policy_value(headers, &state, config));
        }
        // The state is this response's: its values move into the headers (a clone of a value
        // that owns its bytes would allocate to share them).
        if let Some(tag) = state.etag {
            headers.insert(ETAG, tag.into_header_value());
        }
        if let Some(modified) = state.modified {
            headers.insert(LAST_MODIFIED, modified.value);
        }
        merge_vary(headers, config);
    }
}

/// The headers of a 304 (RFC 9110 §15.4.5): those a 200 would have had for caches
/// (`Cache-Control`, `ETag`, `Vary`, `Content-Location`; `Last-Modified` only without an
/// `ETag`, the one case where it still guides caches), and what other middleware added (a
/// cookie, a rate limit's state); no representation metadata (`Content-*`).
fn not_modified(headers: HeaderMap, config: &Config, state: State) -> HeaderMap {
    let mut headers = headers;
    strip(&mut headers, &[]);
    if !headers.contains_key(CACHE_CONTROL) {
        let value = policy_value(&headers, &state, config);
        headers.insert(CACHE_CONTROL, value);
    }
    // Known when the handler set the tag through the context (no lookup then). The state is
    // this response's: its values move into the headers (a clone of a value that owns its
    // bytes would allocate to share them).
    let tagged = match state.etag {
        Some(tag) => {
            headers.insert(ETAG, tag.into_header_value());
            true
        }
        None => headers.contains_key(ETAG),
    };
    if tagged {
        headers.remove(LAST_MODIFIED);
    } else if let Some(modified) = state.modified {
        headers.insert(LAST_MODIFIED, modified.value);
    }
    merge_vary(&mut headers, config);
    headers
}

/// Removes the `Content-*` headers but `Content-Location` (they describe a body), and `also`.
fn strip(headers: &mut HeaderMap, also: &[HeaderName]) {
    let gone: Vec<HeaderName> = headers
        .keys()
        .filter(|name| {
            (name.as_str().starts_with("content-") && **name != CONTENT_LOCATION)
                || also.contains(name)
        })
        .cloned()
        .collect();
    for name in gone {
        headers.remove(name);
    }
}

/// The `Cache-Control` of a success or a 304: the handler's policy or the middleware's, made
/// private when the response sets a cookie (a shared cache would hand it to other clients).
fn policy_value(headers: &HeaderMap, state: &State, config: &Config) -> HeaderValue {
    let cookie = headers.contains_key(SET_COOKIE);
    match &state.policy {
        Some(policy) if cookie && policy.is_shared() => policy.to_private().header_value().clone(),
        Some(policy) => policy.header_value().clone(),
        None if cookie => config.private_policy.header_value().clone(),
        None => config.policy.header_value().clone(),
    }
}

fn error_headers(headers: &mut HeaderMap, config: &Config) {
    let policy = if headers.contains_key(SET_COOKIE) {
        &config.private_error_policy
    } else {
        &config.error_policy
    };
    if let Some(policy) = policy
        && !headers.contains_key(CACHE_CONTROL)
    {
        headers.insert(CACHE_CONTROL, policy.header_value().clone());
    }
    merge_vary(headers, config);
}

/// Adds the middleware's `Vary` names to the response's: the pre-rendered value when it has
/// none (the usual case, no formatting), else one line with the names it lacks appended (a
/// `Vary: *` already says everything and stays).
fn merge_vary(headers: &mut HeaderMap, config: &Config) {
    let Some(ours) = &config.vary_value else {
        return;
    };
    if !headers.contains_key(VARY) {
        headers.insert(VARY, ours.clone());
        return;
    }
    let mut names: Vec<&str> = Vec::new();
    for line in headers.get_all(VARY) {
        // A value that is not text is not ours to rewrite.
        let Ok(text) = line.to_str() else { return };
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if name == "*" {
                return;
            }
            if !names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
                names.push(name);
            }
        }
    }
    let before = names.len();
    for name in &config.vary {
        if !names.iter().any(|n| n.eq_ignore_ascii_case(name.as_str())) {
            names.push(name.as_str());
        }
    }
    if names.len() == before {
        return;
    }
    if let Ok(value) = HeaderValue::from_str(&names.join(", ")) {
        headers.insert(VARY, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vary: &[&str]) -> Config {
        let caching = Caching::new(CacheControl::no_cache()).vary(
            vary.iter()
                .map(|n| HeaderName::from_bytes(n.as_bytes()).unwrap()),
        );
        (*caching.config).clone()
    }

    fn vary_of(existing: &[&str], ours: &[&str]) -> Vec<String> {
        let mut headers = HeaderMap::new();
        for line in existing {
            headers.append(VARY, HeaderValue::from_str(line).unwrap());
        }
        merge_vary(&mut headers, &config(ours));
        headers
            .get_all(VARY)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn vary_is_merged_with_the_response_s_own() {
        assert_eq!(
            vary_of(&[], &["accept-language", "origin"]),
            ["accept-language, origin"]
        );
        assert_eq!(
            vary_of(&["Origin, accept-encoding"], &["accept-language", "origin"]),
            ["Origin, accept-encoding, accept-language"]
        );
        assert_eq!(
            vary_of(&["origin", "accept-encoding"], &["accept-language"]),
            ["origin, accept-encoding, accept-language"]
        );
        assert_eq!(vary_of(&["*"], &["accept-language"]), ["*"]);
        assert_eq!(
            vary_of(&["accept-language"], &["accept-language"]),
            ["accept-language"]
        );
        assert_eq!(vary_of(&["origin"], &[]), ["origin"]);
        // Each name once, as given.
        let twice = config(&["origin", "origin"]);
        assert_eq!(twice.vary_value.unwrap(), "origin");
    }

    #[test]
    fn a_304_keeps_what_guides_caches_and_drops_what_describes_a_body() {
        let config = config(&["accept-language"]);
        let mut headers = HeaderMap::new();
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        headers.insert("content-length", HeaderValue::from_static("12"));
        headers.insert("content-location", HeaderValue::from_static("/v1/things/1"));
        headers.insert("set-cookie", HeaderValue::from_static("a=1"));
        headers.insert(
            LAST_MODIFIED,
            HeaderValue::from_static("Sun, 06 Nov 1994 08:49:37 GMT"),
        );
        let state = State {
            etag: Some(ETag::weak("1").unwrap()),
            ..State::default()
        };
        let headers = not_modified(headers, &config, state);
        assert_eq!(headers["etag"], "W/\"1\"");
        // It sets a cookie: the policy made private.
        assert_eq!(headers["cache-control"], "no-cache, private");
        assert_eq!(headers["vary"], "accept-language");
        assert_eq!(headers["content-location"], "/v1/things/1");
        assert_eq!(headers["set-cookie"], "a=1");
        for gone in ["content-type", "content-length", "last-modified"] {
            assert!(!headers.contains_key(gone), "{gone}");
        }
        // Without an ETag, Last-Modified is what a cache has to go by.
        let state = State {
            modified: Some(LastModified::new(SystemTime::UNIX_EPOCH, SystemTime::now())),
            ..State::default()
        };
        let headers = not_modified(HeaderMap::new(), &config, state);
        assert_eq!(headers["last-modified"], "Thu, 01 Jan 1970 00:00:00 GMT");
    }
}
