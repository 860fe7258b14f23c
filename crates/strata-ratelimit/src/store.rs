//! Where the TATs are kept: the [`RateLimitStore`] trait and its in-memory default.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::fmt;
use std::future::{Future, Ready, ready};
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};

use strata_core::BoxError;

use crate::gcra::{Decision, Gcra};
use crate::key::RateLimitKey;

/// Where a limiter keeps each key's theoretical arrival time (TAT), and where the GCRA runs.
///
/// `check` reads the key's TAT, decides with [`Gcra::decide`] and stores the new TAT, as one
/// atomic step (concurrent requests of one key must not both spend its last request): under
/// a lock in memory, in one script in a shared store (Redis' `EVALSHA`, the same arithmetic in
/// Lua, with the key's expiry set at its TAT). It is asynchronous, so that a store may be a
/// network call: the in-memory store answers at once (`std::future::Ready`), a networked one
/// returns its call's future (boxed, for instance). A failed call is a [`StoreError`], which
/// the limiter's [`FailPolicy`](crate::FailPolicy) turns into a pass or a 503.
///
/// `now` is in microseconds on the limiter's [`Clock`](crate::Clock); a store shared between
/// processes needs one clock for all of them (the wall clock, or the store server's own
/// time, in which case it ignores `now`). A store serves one limiter: two limiters (a
/// per-minute and a per-day quota) need two stores, or one that prefixes their keys.
pub trait RateLimitStore: Send + Sync + 'static {
    /// The future of one check.
    type Future: Future<Output = Result<Decision, StoreError>> + Send + Unpin + 'static;

    /// Decides on one request of `key` at `now` under `gcra`, and records it when granted.
    fn check(&self, key: &RateLimitKey<'_>, gcra: Gcra, now: u64) -> Self::Future;

    /// What kind of store this is, as the server's metrics label its decisions and failures
    /// (`memory`, `redis`; default `custom`).
    fn kind(&self) -> &'static str {
        "custom"
    }
}

/// A store that could not answer (a connection lost, a timeout).
#[derive(Debug, thiserror::Error)]
#[error("rate-limit store failed: {0}")]
pub struct StoreError(#[source] BoxError);

impl StoreError {
    /// Wraps the store's own error.
    pub fn new(error: impl Into<BoxError>) -> Self {
        Self(error.into())
    }
}

/// How many keys a [`MemoryStore`] keeps by default.
pub const DEFAULT_CAPACITY: usize = 100_000;

/// The most shards a [`MemoryStore`] has: enough that requests on all cores rarely wait for
/// one another's lock.
const MAX_SHARDS: usize = 64;

/// The in-memory store (the default): the TATs of at most `capacity` keys, in shards under
/// their own locks.
///
/// **Memory is bounded.** An entry is about 50 bytes whatever its key: addresses are kept as
/// they are, text keys (user ids, header values of any length) as a 128-bit digest keyed at
/// random per store (two keyed SipHash-1-3 runs), so a million distinct clients, or keys of
/// 60 KiB, cost no more than `capacity` entries. Two text keys share an entry only by a
/// collision of 128 random bits, which nobody can aim at without the store's secret keys.
///
/// **Keys expire** when their TAT is in the past: such a client owes nothing, and forgetting
/// it changes no decision. They are swept from a shard when it is full.
///
/// **Eviction.** A new key in a full shard first sweeps the shard's expired keys; if that
/// frees less than a quarter of it, the keys with the earliest TATs are dropped until it is
/// three quarters full. Those are the clients with the most budget left, who lose least by
/// being forgotten (they start again with a full burst), while the clients being held back
/// keep their debt: a flood of new keys, which each owe one request, cannot wipe out the debt
/// of a client that spent its burst. The work is one pass over the shard per quarter of a
/// shard of new keys: constant per request on average.
///
/// The capacity is shared out among the shards (at most 64, each of 16 keys or more; the
/// capacity rounded down to a multiple of their number): the bound holds exactly, and one
/// shard may be full before the others.
///
/// ```
/// use std::borrow::Cow;
/// use strata_ratelimit::{MemoryStore, Quota, RateLimitKey, RateLimitStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let store = MemoryStore::with_capacity(1_000);
/// let gcra = Quota::per_second(1).gcra();
/// let key = RateLimitKey::Text(Cow::Borrowed(b"user-1"));
/// assert!(store.check(&key, gcra, 0).await.unwrap().allowed);
/// assert!(!store.check(&key, gcra, 0).await.unwrap().allowed);
/// assert_eq!(store.len(), 1);
/// # }
/// ```
pub struct MemoryStore {
    shards: Box<[Mutex<ShardMap>]>,
    per_shard: usize,
    /// Hashes a key once (keyed at random per store): the hash picks its shard and places it
    /// in the shard's map.
    hashing: RandomState,
    /// The two halves of text keys' digests.
    digest: (RandomState, RandomState),
}

/// A key as the memory store keeps it: fixed in size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Slot {
    V4(u32),
    V6(u128),
    Text(u128),
}

/// A slot with its keyed hash, computed once per request. Two `SipHash` runs (one for the shard,
/// one for the shard's map) cost ~370 instructions per request; the map takes this one as it
/// is ([`PassThrough`]). Bits 32 to 37 pick the shard, and the map uses the low bits (its
/// bucket) and the top seven (its tags), so keys of one shard still spread over its map.
#[derive(Debug, Clone, Copy)]
struct Hashed {
    hash: u64,
    slot: Slot,
}

impl PartialEq for Hashed {
    fn eq(&self, other: &Self) -> bool {
        self.slot == other.slot
    }
}

impl Eq for Hashed {}

impl Hash for Hashed {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// The hasher of a shard's map: the key's hash is already a keyed `SipHash`, given through
/// `write_u64`. (`write` folds bytes in, for completeness: a `Hashed` never calls it.)
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, hash: u64) {
        self.0 = hash;
    }
}

/// One shard: the TATs of its keys.
type ShardMap = HashMap<Hashed, u64, BuildHasherDefault<PassThrough>>;

impl MemoryStore {
    /// A store of at most [`DEFAULT_CAPACITY`] (100,000) keys: about 6 MiB when full.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }

    /// A store of at most `capacity` keys (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        // A power of two, each shard holding at least 16 keys (where fewer would make the
        // eviction rule a coin toss), at most 64.
        let shards = MAX_SHARDS.min(1 << (capacity / 16).max(1).ilog2());
        let per_shard = capacity / shards;
        Self {
            shards: (0..shards)
                .map(|_| {
                    Mutex::new(ShardMap::with_capacity_and_hasher(
                        per_shard.min(1024),
                        BuildHasherDefault::default(),
                    ))
                })
                .collect(),
            per_shard,
            hashing: RandomState::new(),
            digest: (RandomState::new(), RandomState::new()),
        }
    }

    /// The most keys it keeps.
    pub fn capacity(&self) -> usize {
        self.per_shard * self.shards.len()
    }

    /// The keys it keeps now, expired ones not yet swept included.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|shard| lock(shard).len()).sum()
    }

    /// Whether it keeps no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets every key whose TAT is at or before `now` (µs on the limiter's clock). Never
    /// needed for the bound; for an application that wants the memory back after a flood.
    pub fn purge_expired(&self, now: u64) {
        for shard in &self.shards {
            lock(shard).retain(|_, tat| *tat > now);
        }
    }

    fn slot(&self, key: &RateLimitKey<'_>) -> Slot {
        match key {
            RateLimitKey::Addr(IpAddr::V4(v4)) => Slot::V4(v4.to_bits()),
            RateLimitKey::Addr(IpAddr::V6(v6)) => Slot::V6(v6.to_bits()),
            RateLimitKey::Text(text) => {
                let high = self.digest.0.hash_one(&**text);
                let low = self.digest.1.hash_one(&**text);
                Slot::Text((u128::from(high) << 64) | u128::from(low))
            }
        }
    }

    fn hashed(&self, key: &RateLimitKey<'_>) -> Hashed {
        let slot = self.slot(key);
        Hashed {
            hash: self.hashing.hash_one(slot),
            slot,
        }
    }

    /// The shard of a hash: bits 32 and up (the shard count is a power of two, at most 64),
    /// which the shard's map does not use to place keys.
    fn shard_of(&self, hashed: &Hashed) -> usize {
        // Below the shard count: it fits.
        usize::try_from((hashed.hash >> 32) % self.shards.len() as u64).unwrap_or_default()
    }

    fn decide(&self, key: &RateLimitKey<'_>, gcra: Gcra, now: u64) -> Decision {
        let slot = self.hashed(key);
        let mut shard = lock(&self.shards[self.shard_of(&slot)]);
        // A known key is updated in place: one lookup, not a lookup and an insert.
        if let Some(stored) = shard.get_mut(&slot) {
            let (decision, tat) = gcra.decide(Some(*stored), now);
            if let Some(tat) = tat {
                *stored = tat;
            }
            return decision;
        }
        let (decision, tat) = gcra.decide(None, now);
        if let Some(tat) = tat {
            if shard.len() >= self.per_shard {
                make_room(&mut shard, self.per_shard, now);
            }
            shard.insert(slot, tat);
        }
        decision
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryStore")
            .field("capacity", &self.capacity())
            .field("shards", &self.shards.len())
            .finish_non_exhaustive()
    }
}

impl RateLimitStore for MemoryStore {
    type Future = Ready<Result<Decision, StoreError>>;

    fn check(&self, key: &RateLimitKey<'_>, gcra: Gcra, now: u64) -> Self::Future {
        ready(Ok(self.decide(key, gcra, now)))
    }

    fn kind(&self) -> &'static str {
        "memory"
    }
}

impl<S: RateLimitStore> RateLimitStore for std::sync::Arc<S> {
    type Future = S::Future;

    fn check(&self, key: &RateLimitKey<'_>, gcra: Gcra, now: u64) -> Self::Future {
        (**self).check(key, gcra, now)
    }

    fn kind(&self) -> &'static str {
        (**self).kind()
    }
}

/// A poisoned shard is still a map of numbers, each written whole: keep using it.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Frees room in a full shard: expired keys first, then the earliest TATs down to three
/// quarters of `per_shard`.
fn make_room(shard: &mut ShardMap, per_shard: usize, now: u64) {
    shard.retain(|_, tat| *tat > now);
    let target = per_shard - per_shard / 4;
    if shard.len() < target.max(1) {
        return;
    }
    let excess = shard.len() - target.min(shard.len().saturating_sub(1));
    let mut tats: Vec<u64> = shard.values().copied().collect();
    let (_, &mut threshold, _) = tats.select_nth_unstable(excess - 1);
    // Everything below the threshold goes, and as many at it as the count needs.
    let mut at_threshold = excess - tats.iter().filter(|&&tat| tat < threshold).count();
    shard.retain(|_, tat| {
        if *tat < threshold {
            false
        } else if *tat == threshold && at_threshold > 0 {
            at_threshold -= 1;
            false
        } else {
            true
        }
    });
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::net::Ipv4Addr;
    use std::sync::Arc;

    use super::*;
    use crate::Quota;

    fn text(key: &str) -> RateLimitKey<'_> {
        RateLimitKey::Text(Cow::Borrowed(key.as_bytes()))
    }

    #[test]
    fn a_million_distinct_clients_stay_within_the_capacity() {
        let store = MemoryStore::with_capacity(10_000);
        assert_eq!(store.capacity(), 10_000 / 64 * 64);
        let gcra = Quota::per_minute(10).gcra();
        // All at one instant, so none expires: only eviction bounds the store.
        for i in 0..1_000_000_u32 {
            let key = RateLimitKey::Addr(IpAddr::V4(Ipv4Addr::from_bits(i)));
            assert!(store.decide(&key, gcra, 1).allowed);
        }
        let len = store.len();
        assert!(len <= store.capacity(), "{len} keys");
        assert!(len >= store.capacity() / 2, "{len} keys");
    }

    #[test]
    fn expired_keys_go_first_and_held_back_clients_keep_their_debt() {
        let store = MemoryStore::with_capacity(4);
        assert_eq!(store.shards.len(), 1);
        let gcra = Quota::per_second(2).gcra();
        // A client that spends its burst: TAT one second ahead.
        let heavy = text("heavy");
        assert!(store.decide(&heavy, gcra, 0).allowed);
        assert!(store.decide(&heavy, gcra, 0).allowed);
        assert!(!store.decide(&heavy, gcra, 0).allowed);
        // A flood of new keys, each owing one request.
        for i in 0..10_000 {
            let key = format!("flood-{i}");
            assert!(store.decide(&text(&key), gcra, 1).allowed);
        }
        assert!(store.len() <= 4);
        // The held-back client is still held back.
        assert!(!store.decide(&heavy, gcra, 2).allowed);
        // Everything expires: a later key sweeps its shard.
        store.purge_expired(10_000_000);
        assert!(store.is_empty());
    }

    /// A shard's key for the address `i`, hashed as a store would.
    fn v4(i: u32) -> Hashed {
        let slot = Slot::V4(i);
        Hashed {
            hash: RandomState::new().hash_one(slot),
            slot,
        }
    }

    #[test]
    fn keys_spread_over_the_shards_and_their_maps() {
        let store = MemoryStore::with_capacity(1_000_000);
        assert_eq!(store.shards.len(), 64);
        let gcra = Quota::per_minute(10).gcra();
        // Consecutive addresses, as a subnet's clients: 100 per shard on average.
        for i in 0..6_400_u32 {
            let key = RateLimitKey::Addr(IpAddr::V4(Ipv4Addr::from_bits(i)));
            assert!(store.decide(&key, gcra, 1).allowed);
        }
        let sizes: Vec<usize> = store.shards.iter().map(|shard| lock(shard).len()).collect();
        assert_eq!(sizes.iter().sum::<usize>(), 6_400);
        // Binomial(6400, 1/64): a standard deviation of 10; beyond 100 ± 60 for one shard of
        // 64 happens once in ~10^7 stores, while a bad split (shard bits the map also uses,
        // or none at all) puts every key in a few shards.
        assert!(sizes.iter().all(|&n| (40..=160).contains(&n)), "{sizes:?}");
        // Within a shard, the map's bucket bits (the low ones) vary too: ~80 distinct values
        // of 256 expected for 100 keys.
        let shard = lock(&store.shards[0]);
        let buckets: std::collections::HashSet<u64> =
            shard.keys().map(|key| key.hash & 0xff).collect();
        assert!(
            buckets.len() > shard.len() / 2,
            "{} of {}",
            buckets.len(),
            shard.len()
        );
        // And each key is found again, in place.
        drop(shard);
        for i in 0..6_400_u32 {
            let key = RateLimitKey::Addr(IpAddr::V4(Ipv4Addr::from_bits(i)));
            let hashed = store.hashed(&key);
            assert!(lock(&store.shards[store.shard_of(&hashed)]).contains_key(&hashed));
        }
    }

    #[test]
    fn eviction_keeps_three_quarters() {
        let mut shard = ShardMap::default();
        for i in 0..100_u32 {
            shard.insert(v4(i), 1_000 + u64::from(i % 10));
        }
        make_room(&mut shard, 100, 0);
        assert_eq!(shard.len(), 75);
        // The earliest TATs went.
        assert!(shard.values().all(|&tat| tat >= 1_002));
        // Expired ones are enough: nothing else goes.
        let mut shard: ShardMap = (0..8_u32).map(|i| (v4(i), u64::from(i))).collect();
        make_room(&mut shard, 8, 3);
        assert_eq!(shard.len(), 4);
        // A shard of one.
        let mut shard: ShardMap = [(v4(1), 10)].into_iter().collect();
        make_room(&mut shard, 1, 0);
        assert!(shard.is_empty());
    }

    #[test]
    fn text_keys_are_digests_of_their_whole_text() {
        let store = MemoryStore::with_capacity(100);
        let long_a = format!("{}a", "k".repeat(60_000));
        let long_b = format!("{}b", "k".repeat(60_000));
        assert_ne!(store.slot(&text(&long_a)), store.slot(&text(&long_b)));
        assert_eq!(store.slot(&text(&long_a)), store.slot(&text(&long_a)));
        // Another store, other secret keys.
        let other = MemoryStore::with_capacity(100);
        assert_ne!(store.slot(&text(&long_a)), other.slot(&text(&long_a)));
    }

    #[test]
    fn concurrent_requests_of_one_key_spend_the_burst_exactly() {
        let store = Arc::new(MemoryStore::new());
        let gcra = Quota::per_minute(100).gcra();
        let granted: usize = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    let store = &store;
                    scope.spawn(move || {
                        (0..50)
                            .filter(|_| store.decide(&text("one"), gcra, 0).allowed)
                            .count()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(granted, 100);
    }

    #[test]
    fn small_capacities_hold_exactly() {
        for capacity in [0, 1, 2, 3, 5, 63, 64, 65, 1000] {
            let store = MemoryStore::with_capacity(capacity);
            assert!(store.capacity() <= capacity.max(1), "{capacity}");
            assert!(store.capacity() >= 1);
            let gcra = Quota::per_second(1).gcra();
            for i in 0..5_000_u32 {
                let key = RateLimitKey::Addr(IpAddr::V4(Ipv4Addr::from_bits(i)));
                store.decide(&key, gcra, 0);
            }
            assert!(store.len() <= store.capacity(), "{capacity}");
        }
    }

    #[test]
    fn errors_say_what_failed() {
        let error = StoreError::new("connection refused");
        assert_eq!(
            error.to_string(),
            "rate-limit store failed: connection refused"
        );
        assert!(std::error::Error::source(&error).is_some());
    }
}
