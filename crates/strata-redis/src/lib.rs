//! Strata on Redis: what replicas behind a load balancer share. A [`RateLimitStore`], so that
//! a client gets its quota once across all of them, not once per replica; and the event
//! streams' [`RedisBroadcaster`] ([`events`]), so that an event published on one replica
//! reaches the subscribers of every replica, and a client resumes on any replica.
//!
//! [`RedisRateLimitStore`] keeps each key's theoretical arrival time (TAT) in Redis (or Valkey)
//! and runs the limiter's GCRA there, in one Lua script per request: **one round trip**
//! (`EVALSHA`; the script is sent again, once, after a Redis restart emptied its script
//! cache), atomic per key (Redis runs a script alone: two replicas never both spend a
//! client's last request).
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use strata::prelude::*;
//! use strata_ratelimit::{FailPolicy, Key, Quota, RateLimit};
//! use strata_redis::RedisRateLimitStore;
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! // In every replica: the same Redis, the same prefix, the same quota.
//! let store = RedisRateLimitStore::connect("redis://127.0.0.1:6379/")
//!     .await?
//!     .prefix("shop:rl:per-minute:")
//!     .timeout(Duration::from_millis(50));
//! let limited = default_endpoints_factory().add_middleware(
//!     RateLimit::new(Quota::per_minute(100), Key::client_addr())
//!         .store(store)
//!         // A Redis outage lets requests through (the default), logged once per 10 s.
//!         .on_store_error(FailPolicy::Open)
//!         .middleware(),
//! );
//! # let _ = limited;
//! # Ok(())
//! # }
//! ```
//!
//! # The clock: the Redis server's
//!
//! TATs are compared with "now", and replicas sharing a store must agree on it: their wall
//! clocks differ by whatever NTP left (milliseconds, or seconds on a machine that drifted), and
//! a replica whose clock is ahead would grant requests early to every client. The script reads
//! the Redis server's `TIME` instead: one clock for all replicas, whatever theirs say, and the
//! limiter's own [`Clock`](strata_ratelimit::Clock) is then not used. (Redis replicates the
//! script's effect, the `SET`, not the script, so a replica of Redis does not read its own
//! clock.) [`TimeSource::Caller`] uses the limiter's clock instead, for tests that move time by
//! hand (`ManualClock`), or a Redis whose clock is not to be trusted; every limiter sharing
//! the store must then use one clock (`SystemClock`).
//!
//! # The script
//!
//! `src/gcra.lua`: the arithmetic of [`Gcra::decide`] in whole microseconds (exact in Lua's
//! doubles: see [`Gcra`]), the new TAT stored with `SET key tat PX ttl` where the TTL is the
//! time until the TAT is past, when the client owes nothing and its key may go, and a second
//! more (keeping a past TAT changes no decision): Redis holds only the clients that spent
//! something recently. A denied request changes nothing. The
//! script answers the TAT it found and the time it read; the budget in the `RateLimit`
//! headers is computed from those two by [`Gcra::decide`] itself, so the two sides cannot
//! disagree on a number (the crate's tests run both over thousands of inputs and compare).
//!
//! # Failures
//!
//! Every call has a timeout (default [`DEFAULT_TIMEOUT`], 50 ms): an unreachable, slow or
//! restarting Redis becomes a [`StoreError`] within it, and the limiter's
//! [`FailPolicy`](strata_ratelimit::FailPolicy) decides (open by default: the requests go
//! through unlimited; closed: 503 with `Retry-After: 1`). The limiter logs store failures at
//! most once per 10 s, with the count of those left out, not once per request.
//!
//! Only the first call finds out: a call that times out or cannot reach Redis marks it down,
//! and while it is down every call fails at once (no round trip, no timeout waited), so the
//! failure policy decides without making each request wait 50 ms. One probe (`PING`) runs in
//! the background, at once and then backing off from 100 ms to 1 s apart, and the store asks
//! Redis again from the first answer on. The [`ConnectionManager`] reconnects meanwhile, and
//! limiting resumes when Redis is back, without restarting anything. A Redis restarted without
//! persistence has forgotten the TATs: every client starts again with a full burst.
//!
//! # Keys
//!
//! `prefix` (default [`DEFAULT_PREFIX`], `strata:rl:`) then `a:` and the address for a client
//! address (`strata:rl:a:192.0.2.1`, `strata:rl:a:2001:db8::` for an IPv6 prefix), `t:` and
//! the hex SHA-256 of the text for any other key (a user id, a header's value): a fixed
//! length whatever the text, no byte Redis tooling would trip on, and no credential (an API
//! key used as the key) stored in clear. [`RedisRateLimitStore::redis_key`] tells which key a
//! client has. A store serves one limiter: two limiters on one Redis (per minute and per day)
//! need two prefixes.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Weak};
use std::time::Duration;

pub mod events;

pub use events::RedisBroadcaster;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Client, Cmd, Pipeline, RedisError, RedisFuture, Script, Value};
use sha2::{Digest, Sha256};
use strata_ratelimit::{Decision, Gcra, RateLimitKey, RateLimitStore, StoreError};

/// The `redis` crate this store is built on, to configure a [`ConnectionManager`] of one's own
/// ([`RedisRateLimitStore::new`]) with the same version.
pub use redis;

/// The prefix of every key by default.
pub const DEFAULT_PREFIX: &str = "strata:rl:";

/// How long a call may take by default before it counts as a failure.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(50);

/// The GCRA step, loaded once per Redis server (`EVALSHA`, with `SCRIPT LOAD` when the server
/// does not know it).
static GCRA_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("gcra.lua")));

/// Whose clock says "now" for the GCRA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeSource {
    /// The Redis server's `TIME` (the default): one clock for every replica.
    #[default]
    Server,
    /// The limiter's [`Clock`](strata_ratelimit::Clock), given to the store with each call: for
    /// tests, or a Redis whose clock is not to be trusted. Every limiter sharing the store
    /// must then use one clock whose values are below 2^53 µs (the wall clock is). Keys still
    /// expire on Redis's time, a second after their TAT: a clock slower than the wall clock
    /// (a test's `ManualClock` held still) sees debts older than that forgotten.
    Caller,
}

/// The rate limiter's store in Redis: see the [crate docs](crate).
///
/// Cheap to clone (the connection manager multiplexes one connection); clones share it.
#[derive(Clone)]
pub struct RedisRateLimitStore {
    connection: Connection,
    health: Arc<Health>,
    prefix: Arc<[u8]>,
    timeout: Duration,
    time: TimeSource,
}

impl RedisRateLimitStore {
    /// Connects to the Redis at `url` (`redis://host:port/db`, `redis://:password@host/`,
    /// `redis+unix:///path`), with [`manager_config`](Self::manager_config): fails when Redis
    /// cannot be reached now, so that a misconfiguration shows at start.
    pub async fn connect(url: &str) -> Result<Self, RedisError> {
        let client = Client::open(url)?;
        let manager = ConnectionManager::new_with_config(client, Self::manager_config()).await?;
        Ok(Self::new(manager))
    }

    /// Connects to the Redis Cluster one of whose nodes is at one of `nodes`
    /// (`redis://127.0.0.1:7000/`, ...): fails when none can be reached now. Each key is one
    /// slot (the GCRA script reads and writes one key), so the store spreads over the
    /// cluster's nodes as its keys do.
    pub async fn connect_cluster<'a>(
        nodes: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, RedisError> {
        let connection = cluster_connection(nodes).await?;
        Ok(Self::with_connection(Connection::Cluster(connection)))
    }

    /// A store for the Redis at `url`, connecting on its first call: a replica starts while
    /// Redis is down (its requests meanwhile get the limiter's failure policy). Fails only on
    /// a malformed URL.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (the manager starts a task).
    pub fn connect_lazy(url: &str) -> Result<Self, RedisError> {
        let client = Client::open(url)?;
        let manager = ConnectionManager::new_lazy_with_config(client, Self::manager_config())?;
        Ok(Self::new(manager))
    }

    /// A store on a connection manager of the application's own (shared with its other uses
    /// of Redis, or configured otherwise: TLS, credentials).
    pub fn new(connection: ConnectionManager) -> Self {
        Self::with_connection(Connection::Single(connection))
    }

    fn with_connection(connection: Connection) -> Self {
        Self {
            connection,
            health: Arc::new(Health {
                down: AtomicBool::new(false),
            }),
            prefix: Arc::from(DEFAULT_PREFIX.as_bytes()),
            timeout: DEFAULT_TIMEOUT,
            time: TimeSource::Server,
        }
    }

    /// The connection manager's configuration [`connect`](Self::connect) uses: each
    /// connection attempt gives up after 1 s, and reconnection attempts (started by the first
    /// call that finds the connection broken) back off from 100 ms to at most 1 s apart, so
    /// that a Redis that comes back is found again within about a second.
    pub fn manager_config() -> ConnectionManagerConfig {
        ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(1)))
            .set_max_delay(Duration::from_secs(1))
    }

    strata_core::setters! {
        /// The prefix of every key (default `strata:rl:`). Limiters sharing one Redis each need
        /// their own; replicas of one limiter, the same.
        #[must_use]
        prefix(prefix: impl AsRef<[u8]>) => prefix = Arc::from(prefix.as_ref());
        /// How long a call may take before it is a [`StoreError`] (default 50 ms). A request
        /// limited by this store waits at most this long for Redis.
        #[must_use]
        timeout(timeout: Duration) => timeout = timeout;
        /// Whose clock the GCRA reads (default: [`TimeSource::Server`]).
        #[must_use]
        time_source(time: TimeSource) => time = time;
    }

    /// The Redis key holding `key`'s TAT: `strata:rl:a:192.0.2.1`, or `strata:rl:t:` and the hex
    /// SHA-256 of a text key.
    pub fn redis_key(&self, key: &RateLimitKey<'_>) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.prefix.len() + 2 + 64);
        out.extend_from_slice(&self.prefix);
        match key {
            RateLimitKey::Addr(addr) => {
                out.extend_from_slice(b"a:");
                out.extend_from_slice(addr.to_string().as_bytes());
            }
            RateLimitKey::Text(text) => {
                out.extend_from_slice(b"t:");
                for byte in Sha256::digest(text) {
                    out.extend_from_slice(&hex(byte));
                }
            }
        }
        out
    }
}

impl fmt::Debug for RedisRateLimitStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisRateLimitStore")
            .field("prefix", &String::from_utf8_lossy(&self.prefix))
            .field("timeout", &self.timeout)
            .field("time", &self.time)
            .finish_non_exhaustive()
    }
}

impl RateLimitStore for RedisRateLimitStore {
    type Future = Pin<Box<dyn Future<Output = Result<Decision, StoreError>> + Send>>;

    fn check(&self, key: &RateLimitKey<'_>, gcra: Gcra, now: u64) -> Self::Future {
        if self.health.down.load(Ordering::Acquire) {
            // Known down: decided at once (the limiter's failure policy), while the probe
            // finds when Redis is back.
            return Box::pin(std::future::ready(Err(StoreError::new(Failure::Down))));
        }
        let redis_key = self.redis_key(key);
        let mut connection = self.connection.clone();
        let health = Arc::clone(&self.health);
        let timeout = self.timeout;
        let now = match self.time {
            TimeSource::Server => String::new(),
            TimeSource::Caller => now.to_string(),
        };
        Box::pin(async move {
            let mut call = GCRA_SCRIPT.key(redis_key);
            call.arg(gcra.interval).arg(gcra.capacity).arg(now);
            let answer = tokio::time::timeout(timeout, call.invoke_async(&mut connection)).await;
            let (granted, before, now): (i64, i64, i64) = match answer {
                Ok(Ok(answer)) => answer,
                Ok(Err(error)) => {
                    if unreachable(&error) {
                        health.mark_down(connection, timeout);
                    }
                    return Err(StoreError::new(Failure::Redis(error)));
                }
                Err(_) => {
                    health.mark_down(connection, timeout);
                    return Err(StoreError::new(Failure::Timeout(timeout)));
                }
            };
            decision(gcra, granted, before, now)
        })
    }

    fn kind(&self) -> &'static str {
        "redis"
    }
}

/// Whether the store's Redis is known to be down, shared by a store's clones.
struct Health {
    /// Set by a call that timed out or could not reach Redis; cleared by the probe.
    down: AtomicBool,
}

/// The first probe's delay after a failure (none: a blip is over at once), then the next
/// ones' from this, doubling up to [`PROBE_MAX_DELAY`].
const PROBE_MIN_DELAY: Duration = Duration::from_millis(100);
const PROBE_MAX_DELAY: Duration = Duration::from_secs(1);

impl Health {
    /// Marks Redis down and, unless it already was, starts the one probe: a `PING` at once,
    /// then backing off from 100 ms to 1 s apart, until one is answered within `timeout`
    /// (Redis is up again) or the store is dropped.
    fn mark_down(self: &Arc<Self>, mut connection: Connection, timeout: Duration) {
        if self.down.swap(true, Ordering::AcqRel) {
            return;
        }
        let health: Weak<Self> = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut delay = Duration::ZERO;
            loop {
                tokio::time::sleep(delay).await;
                let Some(health) = health.upgrade() else {
                    return;
                };
                let ping = redis::cmd("PING");
                let answer = ping.query_async::<String>(&mut connection);
                if let Ok(Ok(_)) = tokio::time::timeout(timeout, answer).await {
                    health.down.store(false, Ordering::Release);
                    return;
                }
                delay = (delay * 2).clamp(PROBE_MIN_DELAY, PROBE_MAX_DELAY);
            }
        });
    }
}

/// Whether `error` says Redis could not be reached (not that it refused this call).
fn unreachable(error: &RedisError) -> bool {
    error.is_io_error()
        || error.is_connection_refusal()
        || error.is_connection_dropped()
        || error.is_unrecoverable_error()
        || error.is_timeout()
}

/// The budget of the script's answer: [`Gcra::decide`] on the TAT it found (`-1`: none) and
/// the time it read, which must grant what the script granted.
fn decision(gcra: Gcra, granted: i64, before: i64, now: i64) -> Result<Decision, StoreError> {
    let now = u64::try_from(now).map_err(|_| StoreError::new(Failure::Disagree))?;
    let (decision, _) = gcra.decide(u64::try_from(before).ok(), now);
    if decision.allowed == (granted == 1) {
        Ok(decision)
    } else {
        Err(StoreError::new(Failure::Disagree))
    }
}

/// A connection to one Redis (its manager reconnects) or to a Redis Cluster (which follows its
/// slots and reconnects to its nodes).
#[derive(Clone)]
enum Connection {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(connection) => connection.req_packed_command(cmd),
            Self::Cluster(connection) => connection.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(connection) => connection.req_packed_commands(pipeline, offset, count),
            Self::Cluster(connection) => connection.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(connection) => connection.get_db(),
            Self::Cluster(connection) => connection.get_db(),
        }
    }
}

/// A connection to the cluster one of whose nodes is at one of `nodes`, with the connection
/// timeout of [`RedisRateLimitStore::manager_config`].
async fn cluster_connection<'a>(
    nodes: impl IntoIterator<Item = &'a str>,
) -> Result<ClusterConnection, RedisError> {
    ClusterClient::builder(nodes)
        .connection_timeout(Duration::from_secs(1))
        .build()?
        .get_async_connection()
        .await
}

/// Why a call failed (the store's or the broadcaster's).
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("Redis did not answer within {} ms", .0.as_millis())]
    Timeout(Duration),
    /// A call failed to reach Redis and no probe has reached it since: not asked.
    #[error("Redis is down (not asked; a probe in the background finds when it is back)")]
    Down,
    #[error("Redis: {0}")]
    Redis(#[source] RedisError),
    /// The publication reached Redis after its deadline: refused, nothing published.
    #[error("Redis ran the publication after its deadline (a stalled Redis?): not published")]
    Late,
    /// Never seen: the script granted what `Gcra::decide` denies, or the reverse, or read a
    /// time before the Unix epoch.
    #[error("the Redis script's answer is not the GCRA's")]
    Disagree,
    /// An answer not of the broadcaster's making (another program's entries under its keys).
    #[error("unexpected answer from Redis: {0}")]
    Malformed(String),
}

/// A byte as two lowercase hex digits.
fn hex(byte: u8) -> [u8; 2] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    [
        DIGITS[usize::from(byte >> 4)],
        DIGITS[usize::from(byte & 0xf)],
    ]
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::borrow::Cow;

    use strata_ratelimit::Quota;

    use super::*;

    /// Keys need a store, and a store a connection manager, and that a runtime: the lazy
    /// manager connects to nothing until a call.
    fn store() -> RedisRateLimitStore {
        RedisRateLimitStore::connect_lazy("redis://127.0.0.1:1/").unwrap()
    }

    #[tokio::test]
    async fn addresses_are_readable_and_text_is_hashed() {
        let store = store();
        let v4 = RateLimitKey::Addr([192, 0, 2, 1].into());
        assert_eq!(store.redis_key(&v4), b"strata:rl:a:192.0.2.1");
        let v6 = RateLimitKey::Addr("2001:db8::".parse().unwrap());
        assert_eq!(store.redis_key(&v6), b"strata:rl:a:2001:db8::");
        // SHA-256("abc"), FIPS 180-2's example.
        let text = RateLimitKey::Text(Cow::Borrowed(b"abc"));
        assert_eq!(
            String::from_utf8(store.redis_key(&text)).unwrap(),
            "strata:rl:t:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // Text that looks like an address is still text; any bytes, any length.
        let looks_like = RateLimitKey::Text(Cow::Borrowed(b"192.0.2.1"));
        assert_ne!(store.redis_key(&looks_like), store.redis_key(&v4));
        let long = RateLimitKey::Text(Cow::Owned(vec![0xff; 60_000]));
        assert_eq!(store.redis_key(&long).len(), "strata:rl:t:".len() + 64);
        assert_eq!(
            store.redis_key(&RateLimitKey::KEYLESS),
            store.redis_key(&RateLimitKey::Text(Cow::Borrowed(b"")))
        );
        let other = store.prefix("app:per-day:");
        assert_eq!(other.redis_key(&v4), b"app:per-day:a:192.0.2.1");
    }

    #[test]
    fn the_budget_comes_from_gcra_decide() {
        let gcra = Quota::per_second(2).gcra();
        let (first, _) = gcra.decide(None, 1_000);
        assert_eq!(decision(gcra, 1, -1, 1_000).unwrap(), first);
        let (full, _) = gcra.decide(Some(1_001_000), 1_000);
        assert!(!full.allowed);
        assert_eq!(decision(gcra, 0, 1_001_000, 1_000).unwrap(), full);
        // An answer the GCRA would not give is a failure, not a guess.
        assert!(decision(gcra, 1, 1_001_000, 1_000).is_err());
        assert!(decision(gcra, 1, -1, -5).is_err());
    }

    #[test]
    fn failures_say_what_failed() {
        let timeout = StoreError::new(Failure::Timeout(DEFAULT_TIMEOUT));
        assert_eq!(
            timeout.to_string(),
            "rate-limit store failed: Redis did not answer within 50 ms"
        );
        assert_eq!(hex(0x0f), *b"0f");
        assert_eq!(hex(0xa0), *b"a0");
    }
}
