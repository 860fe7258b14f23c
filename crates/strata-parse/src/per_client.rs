//! Counts kept per client address: the body budget's shares, the server's connections per
//! client.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::atomic::AtomicUsize;

use strata_core::ClientAddr;

/// How many counters share the client addresses.
const COUNTERS: usize = 1024;

/// A count per client address, kept in 1,024 counters picked by a hash keyed at random: fixed
/// in size and lock-free, where a map of addresses would need a lock and grow with the
/// addresses an attacker can use. Addresses that share a counter share a count; which do
/// cannot be planned. An IPv4 address counts as itself, an IPv6 address by its /64 (the least
/// one host is usually given).
///
/// ```
/// use std::sync::atomic::Ordering;
/// use strata_core::ClientAddr;
/// use strata_parse::PerClient;
///
/// let counts = PerClient::new();
/// let client = ClientAddr([192, 0, 2, 1].into());
/// counts.counter(client).fetch_add(1, Ordering::Relaxed);
/// assert_eq!(counts.counter(client).load(Ordering::Relaxed), 1);
/// let same_host = ClientAddr("2001:db8::1".parse().unwrap());
/// let same_64 = ClientAddr("2001:db8::2".parse().unwrap());
/// assert_eq!(counts.slot(same_host), counts.slot(same_64));
/// ```
pub struct PerClient {
    counters: Box<[AtomicUsize; COUNTERS]>,
    hasher: RandomState,
}

impl std::fmt::Debug for PerClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerClient").finish_non_exhaustive()
    }
}

impl Default for PerClient {
    fn default() -> Self {
        Self::new()
    }
}

impl PerClient {
    /// Every count at zero, with a hash key of its own.
    pub fn new() -> Self {
        Self {
            counters: Box::new([const { AtomicUsize::new(0) }; COUNTERS]),
            hasher: RandomState::new(),
        }
    }

    /// The counter of `client`'s slot.
    pub fn counter(&self, client: ClientAddr) -> &AtomicUsize {
        &self.counters[self.slot(client)]
    }

    /// The counter in `slot` (a [`slot`](Self::slot) of this value).
    pub fn counter_in(&self, slot: usize) -> &AtomicUsize {
        &self.counters[slot % COUNTERS]
    }

    /// Which counter `client` is counted in.
    pub fn slot(&self, client: ClientAddr) -> usize {
        let key = match client.0.to_canonical() {
            IpAddr::V4(v4) => (false, u64::from(v4.to_bits())),
            IpAddr::V6(v6) => (true, u64::try_from(v6.to_bits() >> 64).unwrap_or_default()),
        };
        // The remainder is below the counter count: it fits.
        usize::try_from(self.hasher.hash_one(key) % COUNTERS as u64).unwrap_or_default()
    }
}
