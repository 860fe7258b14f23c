//! What bounds the cost of logging in and registering (issue 49): each Argon2 check allocates
//! 19 MiB and takes tens of milliseconds, so without bounds 600 failed logins, 50 at a time,
//! took the process from 12 MB to 9.6 GB.
//!
//! - [`Hashing`]: at most a few checks at once (2 per core by default), on the blocking pool;
//!   the rest wait their turn up to a bound, then get `503` with `Retry-After`.
//! - Per address: login and registration together, 30 per minute by default (the project's
//!   rate-limit middleware, keyed by the client's address).
//! - Per account: login and registration of one email, 10 per minute by default
//!   ([`AccountLimit`], the rate limiter's store and algorithm keyed by the email, which is
//!   in the body and so out of the middleware's reach).
//!
//! Both rate limits keep their budgets in this process's memory, or in Redis
//! ([`Limits::redis`]) so that replicas behind one load balancer share them: a client then
//! gets its 10 (or 30) per minute once, not once per replica. Behind a proxy, the client's
//! address is the one the proxy says ([`Limits::trust`]).

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use argon2::Block;
use strata::core::ErrorKind;
use strata::http::header::RETRY_AFTER;
use strata::http::{HeaderValue, StatusCode};
use strata::prelude::*;
use strata::ratelimit::{
    ClientAddrKey, Clock, Decision, Gcra, Key, MemoryStore, MonotonicClock, Quota, RATELIMIT,
    RATELIMIT_POLICY, RateLimitKey, RateLimitStore, StoreError, TrustedProxies,
};
use strata::redis::RedisRateLimitStore;
use tokio::sync::Semaphore;

/// The limits of an [`App`](crate::App): [`Limits::default`] is what the server runs with.
///
/// ```
/// use std::time::Duration;
/// use strata::ratelimit::Quota;
/// use strata_realworld::limits::Limits;
///
/// let limits = Limits::default()
///     .hashing(4, Duration::from_secs(5))
///     .per_email(Quota::per_minute(10))
///     .per_address(Quota::per_minute(30));
/// assert_eq!(limits.hashes().bound(), 4);
/// ```
#[derive(Clone)]
pub struct Limits {
    hashing: Hashing,
    per_email: AccountLimit,
    per_address: Quota,
    address_store: LimitStore,
    proxies: TrustedProxies,
    clock: Arc<dyn Clock>,
}

/// Where a rate limit keeps its budgets: this process's memory, or a Redis that replicas
/// share. Cheap to clone (clones share the store).
#[derive(Clone)]
pub enum LimitStore {
    /// This process's memory (100,000 keys at most).
    Memory(Arc<MemoryStore>),
    /// Redis, on its own clock (`TIME`): one clock for every replica.
    Redis(RedisRateLimitStore),
}

impl LimitStore {
    fn memory() -> Self {
        Self::Memory(Arc::new(MemoryStore::new()))
    }
}

impl fmt::Debug for LimitStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Memory(_) => "LimitStore::Memory",
            Self::Redis(_) => "LimitStore::Redis",
        })
    }
}

impl RateLimitStore for LimitStore {
    type Future = Pin<Box<dyn Future<Output = Result<Decision, StoreError>> + Send>>;

    fn check(&self, key: &RateLimitKey<'_>, gcra: Gcra, now: u64) -> Self::Future {
        match self {
            Self::Memory(store) => Box::pin(store.check(key, gcra, now)),
            Self::Redis(store) => Box::pin(store.check(key, gcra, now)),
        }
    }
}

impl fmt::Debug for Limits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limits")
            .field("hashing", &self.hashing)
            .field("per_email", &self.per_email)
            .field("per_address", &self.per_address)
            .field("address_store", &self.address_store)
            .finish_non_exhaustive()
    }
}

/// The limits' clock, shared by the per-email limit and the per-address middleware (which
/// takes a [`Clock`] of its own).
pub(crate) struct SharedClock(pub(crate) Arc<dyn Clock>);

impl Clock for SharedClock {
    fn now(&self) -> Duration {
        self.0.now()
    }
}

impl Default for Limits {
    /// 2 hashes per core at once (waiting up to 5 s), 10 logins and registrations per minute
    /// per email, 30 per minute per address.
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        Self {
            hashing: Hashing::new(2 * cores, Duration::from_secs(5)),
            per_email: AccountLimit::new(
                Quota::per_minute(10),
                Arc::new(MonotonicClock),
                LimitStore::memory(),
            ),
            per_address: Quota::per_minute(30),
            address_store: LimitStore::memory(),
            proxies: TrustedProxies::none(),
            clock: Arc::new(MonotonicClock),
        }
    }
}

impl Limits {
    /// At most `concurrent` password hashes at once (at least one); a request waits for its
    /// turn up to `wait`, then gets `503 Service Unavailable` with `Retry-After: 1`.
    #[must_use]
    pub fn hashing(mut self, concurrent: usize, wait: Duration) -> Self {
        self.hashing = Hashing::new(concurrent, wait);
        self
    }

    /// Logins and registrations per email (default 10 per minute).
    #[must_use]
    pub fn per_email(mut self, quota: Quota) -> Self {
        self.per_email = AccountLimit::new(
            quota,
            Arc::clone(&self.clock),
            self.per_email.0.store.clone(),
        );
        self
    }

    /// Keeps both rate limits' budgets in the Redis of `store` (default: this process's
    /// memory), shared by every replica given the same Redis. Its `TIME` is the limits'
    /// clock then, whatever [`clock`](Self::clock) says.
    #[must_use]
    pub fn redis(mut self, store: RedisRateLimitStore) -> Self {
        let store = LimitStore::Redis(store);
        self.per_email = AccountLimit::new(
            self.per_email.0.quota,
            Arc::clone(&self.clock),
            store.clone(),
        );
        self.address_store = store;
        self
    }

    /// Reads the client's address of the per-address limit from the `Forwarded` or
    /// `X-Forwarded-For` header of a request from one of `proxies` (default: nobody's; the
    /// client is the peer).
    #[must_use]
    pub fn trust(mut self, proxies: TrustedProxies) -> Self {
        self.proxies = proxies;
        self
    }

    /// Logins and registrations per client address, the two together (default 30 per
    /// minute).
    #[must_use]
    pub fn per_address(mut self, quota: Quota) -> Self {
        self.per_address = quota;
        self
    }

    /// Reads the time of both rate limits from `clock` (default: [`MonotonicClock`]); a
    /// [`ManualClock`](strata::ratelimit::ManualClock) makes tests independent of how long
    /// they take.
    #[must_use]
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self.per_email = AccountLimit::new(
            self.per_email.0.quota,
            Arc::clone(&self.clock),
            self.per_email.0.store.clone(),
        );
        self
    }

    /// The clock of the rate limits.
    pub(crate) fn shared_clock(&self) -> SharedClock {
        SharedClock(Arc::clone(&self.clock))
    }

    /// The bound on password hashes, and what it has seen.
    pub fn hashes(&self) -> &Hashing {
        &self.hashing
    }

    /// The per-email limit.
    pub fn accounts(&self) -> &AccountLimit {
        &self.per_email
    }

    /// The per-address quota.
    pub fn address_quota(&self) -> Quota {
        self.per_address
    }

    /// The per-address limit's key: the client's address, behind the trusted proxies.
    pub fn address_key(&self) -> ClientAddrKey {
        Key::client_addr().trust(self.proxies.clone())
    }

    /// The per-address limit's store.
    pub fn address_store(&self) -> LimitStore {
        self.address_store.clone()
    }
}

/// At most `bound` password hashes at once, each on the blocking pool. Cheap to clone (the
/// clones share the bound).
#[derive(Clone)]
pub struct Hashing(Arc<HashingInner>);

struct HashingInner {
    permits: Arc<Semaphore>,
    bound: usize,
    wait: Duration,
    /// The hashes' memory (19 MiB each), one per hash that ran at once, kept for the next:
    /// allocating it per hash let the allocator keep a freed one per thread that had hashed,
    /// and the process grew well past `bound` hashes' worth.
    memory: Mutex<Vec<Vec<Block>>>,
    /// Hashes running now.
    running: AtomicUsize,
    /// The most that ever ran at once.
    peak: AtomicUsize,
}

impl fmt::Debug for Hashing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hashing")
            .field("bound", &self.0.bound)
            .field("wait", &self.0.wait)
            .field("running", &self.running())
            .finish_non_exhaustive()
    }
}

impl Hashing {
    fn new(bound: usize, wait: Duration) -> Self {
        let bound = bound.max(1);
        Self(Arc::new(HashingInner {
            permits: Arc::new(Semaphore::new(bound)),
            bound,
            wait,
            memory: Mutex::new(Vec::new()),
            running: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }))
    }

    /// How many hashes may run at once.
    pub fn bound(&self) -> usize {
        self.0.bound
    }

    /// How many run now.
    pub fn running(&self) -> usize {
        self.0.running.load(Ordering::SeqCst)
    }

    /// The most that ever ran at once: never more than [`bound`](Self::bound).
    pub fn peak(&self) -> usize {
        self.0.peak.load(Ordering::SeqCst)
    }

    /// Runs `hash` on the blocking pool, with memory of its own to hash in, once a place is
    /// free, waiting up to the bound's `wait`; a 503 (`Retry-After: 1`) when none frees in
    /// time.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        what: &'static str,
        hash: impl FnOnce(&mut Vec<Block>) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let permit = tokio::time::timeout(self.0.wait, Arc::clone(&self.0.permits).acquire_owned())
            .await
            .map_err(|_| busy())?
            .map_err(|e| ApiError::internal(format!("{what}: {e}")))?;
        let inner = Arc::clone(&self.0);
        // The permit goes with the hash, not with the request: a client that hangs up frees
        // its place when its hash ends, not before (the hash runs on regardless).
        tokio::task::spawn_blocking(move || {
            let now = inner.running.fetch_add(1, Ordering::SeqCst) + 1;
            inner.peak.fetch_max(now, Ordering::SeqCst);
            // At most `bound` buffers: one is taken per permit, and given back before it.
            let mut memory = lock(&inner.memory).pop().unwrap_or_default();
            let outcome = hash(&mut memory);
            lock(&inner.memory).push(memory);
            inner.running.fetch_sub(1, Ordering::SeqCst);
            drop(permit);
            outcome
        })
        .await
        .map_err(|e| ApiError::internal(format!("{what}: {e}")))?
    }
}

/// A poisoned lock still holds whole buffers: keep using it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The 503 of a request that waited too long for its hash: an overload clients cause, which
/// the framework logs as a rate-limited warning rather than an error per request.
fn busy() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "Too many password checks at once, retry in 1 s",
    )
    .with_kind(ErrorKind::Overload)
    .with_header(RETRY_AFTER, HeaderValue::from(1_u32))
}

/// Logins and registrations per email: the rate limiter's algorithm and store (this process's
/// memory, 100,000 keys at most, or Redis), keyed by the email as written, lowercased. A spent budget is a 429
/// with `Retry-After`, `RateLimit` and `RateLimit-Policy` (policy `"email"`), as the
/// middleware answers. Cheap to clone (the clones share the store).
#[derive(Clone)]
pub struct AccountLimit(Arc<AccountInner>);

struct AccountInner {
    quota: Quota,
    clock: Arc<dyn Clock>,
    store: LimitStore,
    gcra: Gcra,
    policy: HeaderValue,
}

impl fmt::Debug for AccountLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccountLimit")
            .field("policy", &self.0.policy)
            .finish_non_exhaustive()
    }
}

impl AccountLimit {
    fn new(quota: Quota, clock: Arc<dyn Clock>, store: LimitStore) -> Self {
        let policy = format!(
            "\"email\";q={};w={}",
            quota.count(),
            quota.window().as_secs().max(1)
        );
        Self(Arc::new(AccountInner {
            quota,
            clock,
            store,
            gcra: quota.gcra(),
            policy: HeaderValue::try_from(policy).unwrap_or(HeaderValue::from_static("")),
        }))
    }

    /// Attempts per email.
    pub fn quota(&self) -> Quota {
        self.0.quota
    }

    /// Spends one attempt of `email`'s budget: `Err` with the 429 when it is spent.
    pub(crate) async fn check(&self, email: &str) -> Result<(), ApiError> {
        let key = RateLimitKey::Text(Cow::Owned(email.trim().to_lowercase().into_bytes()));
        let now = u64::try_from(self.0.clock.now().as_micros()).unwrap_or(u64::MAX);
        let decision = self
            .0
            .store
            .check(&key, self.0.gcra, now)
            .await
            .map_err(|e| ApiError::internal(format!("the per-email limit: {e}")))?;
        if decision.allowed {
            return Ok(());
        }
        // Whole seconds, rounded up: rounding down would ask the client back too early.
        let seconds = decision.reset.div_ceil(1_000_000).max(1);
        let ratelimit = HeaderValue::try_from(format!("\"email\";r=0;t={seconds}"))
            .unwrap_or(HeaderValue::from_static(""));
        Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            format!("Too many attempts for this email, retry in {seconds} s"),
        )
        .with_header(RETRY_AFTER, HeaderValue::from(seconds))
        .with_header(RATELIMIT, ratelimit)
        .with_header(RATELIMIT_POLICY, self.0.policy.clone()))
    }
}
