//! The middleware: a [`RateLimit`] builds it, a [`RateLimiter`] runs it.

use std::any::Any;
use std::fmt;
use std::future::{Future, Ready};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use derive_where::derive_where;
use http::header::RETRY_AFTER;
use http::request::Parts;
use http::{HeaderName, HeaderValue, StatusCode};
use strata_core::observe::{Observer, RateLimitOutcome};
use strata_core::{ApiError, DeclaredError, ErrorKind, Logger, ResponseHeader};
use strata_log::LogRateLimit;
use strata_middleware::{Amend, AmendResponse, Middleware, MiddlewareHandler, outcome_headers};

use crate::clock::{Clock, MonotonicClock, micros};
use crate::gcra::{Decision, Gcra};
use crate::key::{KeyExtractor, RateLimitKey};
use crate::quota::Quota;
use crate::store::{MemoryStore, RateLimitStore, StoreError};

/// The `RateLimit` response header (draft-ietf-httpapi-ratelimit-headers-11, section 4).
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
/// The `RateLimit-Policy` response header (draft-ietf-httpapi-ratelimit-headers-11, section 3).
pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");

/// What happens to a request when the store fails to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailPolicy {
    /// The request goes through, unlimited, and the failure is logged (at most one line per
    /// 10 s). The default: a rate limit protects the service from some clients, so an outage
    /// of the shared store should not become an outage of every limited endpoint; the
    /// in-memory store never fails.
    #[default]
    Open,
    /// The request is refused with `503 Service Unavailable` and `Retry-After: 1`: for limits
    /// that guard something costly (a paid upstream, an SMS gateway), where letting everyone
    /// through is worse than serving no one for a while.
    Closed,
}

/// What happens to a request without a key (no client address known: a UNIX socket without
/// a trusted proxy hop, a server of the application's own that does not put a
/// [`ClientAddr`](strata_core::ClientAddr) in the extensions; no such header; a function that
/// returned `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Keyless {
    /// All requests without a key share one budget, the empty key (the default): the limit
    /// is never switched off by a missing key, and a misconfiguration shows as one busy
    /// budget, with a warning logged once, rather than as no limit at all.
    #[default]
    Shared,
    /// Requests without a key are not limited (anonymous clients limited elsewhere).
    Unlimited,
    /// Requests without a key are refused with this status (`401` when the key is a
    /// credential every client must have).
    Reject(StatusCode),
}

/// Builds a rate-limit middleware: a [`Quota`] per key, the key of each request, a store.
///
/// See the [crate docs](crate) for an example.
#[derive_where(Debug)]
pub struct RateLimit<K, S = MemoryStore> {
    quota: Quota,
    #[derive_where(skip)]
    key: K,
    #[derive_where(skip)]
    store: S,
    name: String,
    #[derive_where(skip)]
    clock: Arc<dyn Clock>,
    fail: FailPolicy,
    keyless: Keyless,
    headers: bool,
}

impl<K> RateLimit<K> {
    /// `quota` per key, keyed by `key`, in a [`MemoryStore`] of its own.
    pub fn new(quota: Quota, key: K) -> Self {
        Self {
            quota,
            key,
            store: MemoryStore::new(),
            name: "default".to_owned(),
            clock: Arc::new(MonotonicClock),
            fail: FailPolicy::default(),
            keyless: Keyless::default(),
            headers: false,
        }
    }
}

impl<K, S> RateLimit<K, S> {
    strata_core::setters! {
        /// The policy's name in the `RateLimit` headers (default `default`): tells two limiters
        /// on one endpoint apart. Characters other than printable ASCII are left out.
        #[must_use]
        name(name: &str) => name = name.chars().filter(|c| matches!(c, ' '..='~')).collect();
        /// Reads the time from `clock` (default: [`MonotonicClock`]).
        #[must_use]
        clock(clock: impl Clock) => clock = Arc::new(clock);
        /// What to do when the store fails (default: [`FailPolicy::Open`]).
        #[must_use]
        on_store_error(fail: FailPolicy) => fail = fail;
        /// What to do with a request without a key (default: [`Keyless::Shared`]).
        #[must_use]
        keyless(keyless: Keyless) => keyless = keyless;
        /// Which responses carry `RateLimit` and `RateLimit-Policy` (default
        /// [`HeadersOn::Refusal`]: the 429 only).
        #[must_use]
        headers(on: HeadersOn) => headers = on == HeadersOn::EveryResponse;
    }

    /// Keeps the TATs in `store` instead of a [`MemoryStore`] of 100,000 keys.
    pub fn store<T: RateLimitStore>(self, store: T) -> RateLimit<K, T> {
        RateLimit {
            quota: self.quota,
            key: self.key,
            store,
            name: self.name,
            clock: self.clock,
            fail: self.fail,
            keyless: self.keyless,
            headers: self.headers,
        }
    }
}

impl<K: Send + Sync + 'static, S: RateLimitStore> RateLimit<K, S> {
    /// The middleware, with its 429 (and its headers) declared for API documents, and with
    /// [`HeadersOn::EveryResponse`] the headers it adds to success responses.
    pub fn middleware(self) -> Middleware<(), RateLimiter<K, S>> {
        let quota = self.quota;
        let headers = self.headers;
        let fail = self.fail;
        let keyless = self.keyless;
        let policy = Arc::new(Policy::new(&self.name, quota, fail, headers));
        let limiter = RateLimiter {
            inner: Arc::new(Inner {
                key: self.key,
                store: self.store,
                gcra: quota.gcra(),
                policy,
                clock: self.clock,
                keyless,
                warned: AtomicBool::new(false),
            }),
        };
        let per = describe_window(quota.window());
        let mut middleware = Middleware::custom(limiter)
            .name("rate_limit")
            .declared_error(
                DeclaredError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!(
                        "Too many requests: the client's quota of {} per {per} is spent",
                        quota.count()
                    ),
                )
                .header(retry_after_header())
                .header(ratelimit_header())
                .header(policy_header()),
            );
        if headers {
            middleware = middleware
                .success_header(ratelimit_header())
                .success_header(policy_header());
        }
        if fail == FailPolicy::Closed {
            middleware = middleware.declared_error(
                DeclaredError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "The rate limit cannot be checked now",
                )
                .header(retry_after_header()),
            );
        }
        if let Keyless::Reject(status) = keyless {
            middleware = middleware.declared_error(DeclaredError::new(
                status,
                "The request has no rate-limit key",
            ));
        }
        middleware
    }
}

fn retry_after_header() -> ResponseHeader {
    ResponseHeader::new(
        "retry-after",
        "Seconds to wait before the next request can be granted",
    )
    .schema(schemars::json_schema!({ "type": "integer", "minimum": 1 }))
}

fn ratelimit_header() -> ResponseHeader {
    ResponseHeader::new(
        "ratelimit",
        "The client's available quota (`r`, requests it may send now) and the effective \
         window (`t`, the seconds within which it can use no more than `r`: until one more \
         request is allowed), as draft-ietf-httpapi-ratelimit-headers-11 writes them: \
         `\"default\";r=99;t=1`",
    )
}

fn policy_header() -> ResponseHeader {
    ResponseHeader::new(
        "ratelimit-policy",
        "The quota (`q` requests per `w` seconds), as draft-ietf-httpapi-ratelimit-headers-11 \
         writes it: `\"default\";q=100;w=60`",
    )
}

/// `60 s`, `1.5 s`.
fn describe_window(window: Duration) -> String {
    if window.subsec_nanos() == 0 {
        format!("{} s", window.as_secs())
    } else {
        format!("{} s", window.as_secs_f64())
    }
}

/// Which responses carry the `RateLimit` and `RateLimit-Policy` headers ([`RateLimit::headers`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HeadersOn {
    /// The 429 only (the default).
    #[default]
    Refusal,
    /// Every response, successes and other errors too: a client can slow down before it is
    /// refused. It costs two headers with a value written per response (2–3 % of a plain
    /// request's CPU), which is why it is asked for, as `tower_governor`'s `use_headers()` is.
    EveryResponse,
}

/// What every request's state and headers share: the policy's name and header value.
pub(crate) struct Policy {
    /// The name as a structured-field string, quotes included: `"default"`.
    item: String,
    limit: u32,
    /// `RateLimit-Policy`'s value.
    header: HeaderValue,
    fail: FailPolicy,
    /// Whether responses other than the 429 carry the headers.
    on_every_response: bool,
}

// Shown by its name: the rest follows from the limiter's settings.
impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.item, f)
    }
}

impl Policy {
    fn new(name: &str, quota: Quota, fail: FailPolicy, on_every_response: bool) -> Self {
        let mut item = String::with_capacity(name.len() + 2);
        item.push('"');
        for c in name.chars() {
            // A structured-field string escapes `"` and `\` (RFC 9651, section 3.3.3).
            if matches!(c, '"' | '\\') {
                item.push('\\');
            }
            item.push(c);
        }
        item.push('"');
        let (q, w) = policy_numbers(quota);
        let text = format!("{item};q={q};w={w}");
        Self {
            header: HeaderValue::try_from(text).unwrap_or_else(|_| HeaderValue::from_static("")),
            item,
            limit: quota.count(),
            fail,
            on_every_response,
        }
    }

    /// `RateLimit`'s value: `"default";r=5;t=12`, the available quota (section 4.1.1) and the
    /// effective window (section 4.1.2). Under GCRA the `r` requests are there now and the
    /// next one comes back `reset` later: that is the longest window within which the client
    /// can use no more than `r`, and so `t` (rounded up: a client keeping to `r` within `t` is
    /// never refused; rounded down, `t=0` would say the window is over). Written once into a buffer of its exact
    /// length, which the header value then owns: one allocation per response (`format!`
    /// grew a `String`, and a value of unused capacity costs `Bytes` a second block). The
    /// digits are `itoa`'s (two at a time; a digit per division cost twice as much).
    fn ratelimit(&self, remaining: u32, seconds: u64) -> HeaderValue {
        let (mut r, mut t) = (itoa::Buffer::new(), itoa::Buffer::new());
        let (r, t) = (r.format(remaining), t.format(seconds));
        let mut text = Vec::with_capacity(self.item.len() + 6 + r.len() + t.len());
        text.extend_from_slice(self.item.as_bytes());
        text.extend_from_slice(b";r=");
        text.extend_from_slice(r.as_bytes());
        text.extend_from_slice(b";t=");
        text.extend_from_slice(t.as_bytes());
        HeaderValue::try_from(text).unwrap_or_else(|_| HeaderValue::from_static(""))
    }
}

/// The largest integer a structured field holds (RFC 9651, section 3.3.1: 15 digits).
const SF_INTEGER_MAX: u64 = 999_999_999_999_999;

/// `RateLimit-Policy`'s `q` and `w` for `quota`. `w` is whole seconds, more than zero
/// (draft-ietf-httpapi-ratelimit-headers-11, section 3.1.3: "Sub-second precision is not
/// supported"), and both are structured-field integers: a window that is not whole seconds is
/// written as the same rate over the shortest whole number of its windows that is (5 per 1.5 s
/// as `q=10;w=3`, 1 per 250 ms as `q=4;w=1`); when even that does not fit 15 digits, as `count`
/// per the window rounded up to a whole second and capped at 15 digits, a rate no faster than
/// the one enforced (a client keeping to it is never refused).
fn policy_numbers(quota: Quota) -> (u64, u64) {
    const NANOS: u128 = 1_000_000_000;
    let count = u128::from(quota.count());
    let window = quota.window().as_nanos();
    // The fewest windows that make whole seconds: 10^9 / gcd(window, 10^9).
    let (mut a, mut b) = (window, NANOS);
    while b != 0 {
        (a, b) = (b, a % b);
    }
    let windows = NANOS / a;
    let exact = (count * windows, window / a);
    let fits = |n: u128| u64::try_from(n).ok().filter(|&n| n <= SF_INTEGER_MAX);
    if let (Some(q), Some(w)) = (fits(exact.0), fits(exact.1)) {
        return (q, w);
    }
    let seconds = window.div_ceil(NANOS).max(1);
    (
        u64::from(quota.count()),
        fits(seconds).unwrap_or(SF_INTEGER_MAX),
    )
}

/// Whole seconds, rounded up (`Retry-After` and `t` are integers; rounding down would ask
/// the client back too early).
fn seconds_up(micros: u64) -> u64 {
    micros.div_ceil(1_000_000)
}

/// The client's budget after this request, in the context for handlers (a parameter
/// `budget: RateLimitState`) and later middleware (`let budget: &RateLimitState = ctx.get();`).
#[derive(Clone, Debug)]
pub struct RateLimitState {
    /// Requests per window (the quota's count).
    pub limit: u32,
    /// Requests the client may still send at once.
    pub remaining: u32,
    /// How long until `remaining` grows by one: the effective window of the `RateLimit`
    /// header's `t` (draft-ietf-httpapi-ratelimit-headers-11, section 4.1.2: the time within
    /// which the client can use no more than `remaining`), before rounding up to seconds.
    pub reset: Duration,
    /// How long until the whole burst is available again.
    pub replenished: Duration,
    /// Whether the store decided: `false` when the request went through unchecked (a failed
    /// store under [`FailPolicy::Open`], or a request without a key under
    /// [`Keyless::Unlimited`]); the numbers are then the quota's, and no `RateLimit` header
    /// is sent.
    pub checked: bool,
    policy: Arc<Policy>,
}

impl RateLimitState {
    fn checked(decision: &Decision, policy: Arc<Policy>) -> Self {
        Self {
            limit: policy.limit,
            remaining: decision.remaining,
            reset: Duration::from_micros(decision.reset),
            replenished: Duration::from_micros(decision.replenished),
            checked: true,
            policy,
        }
    }

    fn unchecked(policy: Arc<Policy>) -> Self {
        Self {
            limit: policy.limit,
            remaining: policy.limit,
            reset: Duration::ZERO,
            replenished: Duration::ZERO,
            checked: false,
            policy,
        }
    }

    /// The `RateLimit` header's value for this state: `"default";r=99;t=1`.
    pub fn header_value(&self) -> HeaderValue {
        let micros = u64::try_from(self.reset.as_micros()).unwrap_or(u64::MAX);
        self.policy.ratelimit(self.remaining, seconds_up(micros))
    }
}

/// What the limiter adds to the responses it lets through with
/// [`HeadersOn::EveryResponse`]: `RateLimit-Policy`, and `RateLimit` when the store decided. Appended, so that two limiters on one endpoint each
/// add their item (a structured-field list may be split over several lines).
pub struct RateLimitHeaders(RateLimitState);

impl AmendResponse for RateLimitHeaders {
    fn amend<R: Amend>(self, outcome: &mut Result<R, ApiError>) {
        let headers = outcome_headers(outcome);
        headers.append(RATELIMIT_POLICY, self.0.policy.header.clone());
        if self.0.checked {
            headers.append(RATELIMIT, self.0.header_value());
        }
    }
}

/// The rate-limit middleware's function (a [`MiddlewareHandler`]): made by
/// [`RateLimit::middleware`].
#[derive_where(Clone)]
pub struct RateLimiter<K, S> {
    inner: Arc<Inner<K, S>>,
}

struct Inner<K, S> {
    key: K,
    store: S,
    gcra: Gcra,
    policy: Arc<Policy>,
    clock: Arc<dyn Clock>,
    keyless: Keyless,
    /// Whether the first request without a key was logged.
    warned: AtomicBool,
}

impl<K, S> fmt::Debug for RateLimiter<K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimiter")
            .field("policy", &self.inner.policy)
            .field("gcra", &self.inner.gcra)
            .finish_non_exhaustive()
    }
}

impl<K, S, C> MiddlewareHandler<(), C> for RateLimiter<K, S>
where
    K: KeyExtractor<C>,
    S: RateLimitStore,
{
    type Output = RateLimitState;
    type Future = RateLimitFuture<S::Future>;
    type Amends = Option<RateLimitHeaders>;

    fn call(&self, (): (), request: &Parts, ctx: &C, logger: &Logger) -> Self::Future {
        let inner = &*self.inner;
        let policy = Arc::clone(&inner.policy);
        let key = match inner.key.key(request, ctx) {
            Some(key) => key,
            None => match inner.keyless {
                Keyless::Shared => {
                    if !inner.warned.swap(true, Ordering::Relaxed) {
                        logger.warn(format!(
                            "rate limit {}: a request without a key (no client address?) \
                             spends the budget shared by all such requests",
                            policy.item
                        ));
                    }
                    RateLimitKey::KEYLESS
                }
                Keyless::Unlimited => {
                    return RateLimitFuture::done(Ok(RateLimitState::unchecked(policy)));
                }
                Keyless::Reject(status) => {
                    let error = ApiError::new(status, "The request has no rate-limit key");
                    return RateLimitFuture::done(Err(error));
                }
            },
        };
        let checking = inner.store.check(&key, inner.gcra, micros(&*inner.clock));
        // The server's metrics, when it keeps them, count the decision.
        let observer = request
            .extensions
            .get::<Observer>()
            .map(|observer| (observer.clone(), inner.store.kind()));
        // A store that answers at once (the memory store's `Ready`; the type test is decided
        // at compile time): the outcome now, without keeping the logger and the policy in the
        // future until it is polled (~100 instructions per request).
        let mut checking = Some(checking);
        if let Some(answer) = (&mut checking as &mut dyn Any)
            .downcast_mut::<Option<Ready<Result<Decision, StoreError>>>>()
            .and_then(Option::take)
        {
            return RateLimitFuture::done(decide(
                answer.into_inner(),
                policy,
                logger,
                observer.as_ref(),
            ));
        }
        let Some(checking) = checking else {
            return RateLimitFuture::done(Err(ApiError::internal("rate-limit check lost")));
        };
        RateLimitFuture(State::Checking {
            checking,
            policy,
            logger: logger.clone(),
            observer,
        })
    }

    /// The outcome at once when the store answered at once (the memory store): the
    /// middleware stage then skips a state of its future.
    fn call_now(
        &self,
        input: (),
        request: &Parts,
        ctx: &C,
        logger: &Logger,
    ) -> Result<Result<RateLimitState, ApiError>, Self::Future> {
        match self.call(input, request, ctx, logger) {
            RateLimitFuture(State::Done(Some(outcome))) => Ok(outcome),
            pending => Err(pending),
        }
    }

    fn amends(output: &RateLimitState) -> Option<RateLimitHeaders> {
        output
            .policy
            .on_every_response
            .then(|| RateLimitHeaders(output.clone()))
    }
}

/// The future of one rate-limit check: the store's answer as a state or a 429.
pub struct RateLimitFuture<F>(State<F>);

enum State<F> {
    Checking {
        checking: F,
        policy: Arc<Policy>,
        logger: Logger,
        observer: Option<(Observer, &'static str)>,
    },
    Done(Option<Result<RateLimitState, ApiError>>),
}

impl<F> RateLimitFuture<F> {
    fn done(outcome: Result<RateLimitState, ApiError>) -> Self {
        Self(State::Done(Some(outcome)))
    }
}

/// Store failures logged at most once per 10 s: a store that is down fails every request.
static STORE_FAILURES: LogRateLimit = LogRateLimit::new(Duration::from_secs(10));

impl<F> Future for RateLimitFuture<F>
where
    F: Future<Output = Result<Decision, StoreError>> + Unpin,
{
    type Output = Result<RateLimitState, ApiError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match &mut this.0 {
            State::Checking { checking, .. } => {
                let answer = ready!(Pin::new(checking).poll(cx));
                // The policy and the logger moved out, not cloned.
                let State::Checking {
                    policy,
                    logger,
                    observer,
                    ..
                } = std::mem::replace(&mut this.0, State::Done(None))
                else {
                    return Poll::Ready(Err(ApiError::internal("rate-limit state lost")));
                };
                Poll::Ready(decide(answer, policy, &logger, observer.as_ref()))
            }
            State::Done(outcome) => Poll::Ready(
                outcome
                    .take()
                    .unwrap_or_else(|| Err(ApiError::internal("polled after completion"))),
            ),
        }
    }
}

/// The outcome of the store's answer: the state of an allowed request, a 429, or the store's
/// failure as the fail policy says; told to the server's metrics, when it keeps them.
fn decide(
    answer: Result<Decision, StoreError>,
    policy: Arc<Policy>,
    logger: &Logger,
    observer: Option<&(Observer, &'static str)>,
) -> Result<RateLimitState, ApiError> {
    let (outcome, told) = match answer {
        Ok(decision) if decision.allowed => (
            Ok(RateLimitState::checked(&decision, policy)),
            RateLimitOutcome::Allowed,
        ),
        Ok(decision) => (
            Err(too_many_requests(&decision, &policy)),
            RateLimitOutcome::Limited,
        ),
        Err(error) => {
            let outcome = store_failed(&error, policy, logger);
            let told = if outcome.is_ok() {
                RateLimitOutcome::StoreFailedOpen
            } else {
                RateLimitOutcome::StoreFailedClosed
            };
            (outcome, told)
        }
    };
    if let Some((observer, store)) = observer {
        observer.rate_limit(told, store);
    }
    outcome
}

/// The 429 of a denied request: when to come back, and the budget.
fn too_many_requests(decision: &Decision, policy: &Policy) -> ApiError {
    let seconds = seconds_up(decision.reset).max(1);
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        format!("Too many requests, retry in {seconds} s"),
    )
    .with_header(RETRY_AFTER, HeaderValue::from(seconds))
    // On a 429, `t` is the wait: Retry-After ends no earlier than the effective window
    // (draft-ietf-httpapi-ratelimit-headers-11, section 6).
    .with_header(RATELIMIT, policy.ratelimit(0, seconds))
    .with_header(RATELIMIT_POLICY, policy.header.clone())
}

fn store_failed(
    error: &StoreError,
    policy: Arc<Policy>,
    logger: &Logger,
) -> Result<RateLimitState, ApiError> {
    let api_error = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "The rate limit cannot be checked now",
    )
    .with_source(error.to_string());
    let message = format!("rate limit {}: {error}", policy.item);
    strata_log::warn_rate_limited(logger, &STORE_FAILURES, message, &api_error);
    match policy.fail {
        FailPolicy::Open => Ok(RateLimitState::unchecked(policy)),
        // An overload's kind: the format stage logs it at warn level, one line per 5 s,
        // instead of an error line for each request of the outage (logged above already).
        FailPolicy::Closed => Err(api_error
            .with_kind(ErrorKind::Overload)
            .with_header(RETRY_AFTER, HeaderValue::from(1_u32))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_headers_are_structured_fields() {
        let policy = Policy::new(
            "per \"min\" \\",
            Quota::per_minute(100),
            FailPolicy::Open,
            true,
        );
        assert_eq!(policy.header, r#""per \"min\" \\";q=100;w=60"#);
        assert_eq!(policy.ratelimit(7, 3), r#""per \"min\" \\";r=7;t=3"#);
        assert_eq!(policy.ratelimit(0, 0), r#""per \"min\" \\";r=0;t=0"#);
        assert_eq!(
            policy.ratelimit(u32::MAX, u64::MAX),
            format!(r#""per \"min\" \\";r={};t={}"#, u32::MAX, u64::MAX).as_str()
        );
        let odd = Policy::new(
            "x",
            Quota::new(5, Duration::from_millis(1500)),
            FailPolicy::Open,
            true,
        );
        assert_eq!(odd.header, r#""x";q=10;w=3"#);
        assert_eq!(describe_window(Duration::from_millis(1500)), "1.5 s");
    }

    #[test]
    fn names_keep_printable_ascii_only() {
        let limit = RateLimit::new(Quota::per_minute(1), crate::Key::client_addr())
            .name("per-\u{e9}minute\n\u{7f}");
        assert_eq!(limit.name, "per-minute");
    }

    #[test]
    fn seconds_round_up() {
        assert_eq!(seconds_up(0), 0);
        assert_eq!(seconds_up(1), 1);
        assert_eq!(seconds_up(1_000_000), 1);
        assert_eq!(seconds_up(1_000_001), 2);
        assert_eq!(seconds_up(u64::MAX), u64::MAX / 1_000_000 + 1);
    }
}
