//! Counts kept per client address: the body budget's shares, the server's connections per
//! client.

use std::collections::HashMap;
use std::collections::hash_map::{Entry, RandomState};
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};

use strata_core::ClientAddr;

/// How many locks the addresses are spread over: enough that two connections or bodies rarely
/// wait for each other.
const SHARDS: usize = 64;

/// An address as it is counted: an IPv4 address as itself, an IPv6 address by its /64 (the
/// least one host is usually given).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientKey {
    v6: bool,
    bits: u64,
}

impl From<ClientAddr> for ClientKey {
    fn from(client: ClientAddr) -> Self {
        match client.0.to_canonical() {
            IpAddr::V4(v4) => Self {
                v6: false,
                bits: u64::from(v4.to_bits()),
            },
            IpAddr::V6(v6) => Self {
                v6: true,
                // The upper half of a `u128`: it fits.
                bits: u64::try_from(v6.to_bits() >> 64).unwrap_or_default(),
            },
        }
    }
}

/// A count per client address, exact: each address has its own count, and an address is kept
/// only while its count is above zero, so memory follows what is counted (connections open,
/// bytes of bodies held), which the server bounds, and not the addresses an attacker can use.
/// The addresses are spread over 64 locks picked by a hash keyed at random, held for one map
/// operation each.
///
/// ```
/// use strata_core::ClientAddr;
/// use strata_parse::PerClient;
///
/// let counts = PerClient::new();
/// let client = ClientAddr([192, 0, 2, 1].into());
/// // Adds 1 if the count stays within 2.
/// assert!(counts.try_add(client.into(), 1, |_, wanted| wanted <= 2));
/// assert!(counts.try_add(client.into(), 1, |_, wanted| wanted <= 2));
/// assert!(!counts.try_add(client.into(), 1, |_, wanted| wanted <= 2));
/// assert_eq!(counts.get(client.into()), 2);
/// // One IPv6 host's /64 is one count.
/// let one = ClientAddr("2001:db8::1".parse().unwrap());
/// let same_64 = ClientAddr("2001:db8::2".parse().unwrap());
/// counts.try_add(one.into(), 5, |_, _| true);
/// assert_eq!(counts.get(same_64.into()), 5);
/// counts.subtract(client.into(), 2);
/// counts.subtract(one.into(), 5);
/// assert_eq!(counts.addresses(), 0, "nothing is kept for a count of zero");
/// ```
pub struct PerClient {
    shards: Box<[Mutex<HashMap<ClientKey, usize>>]>,
    hasher: RandomState,
}

impl std::fmt::Debug for PerClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerClient")
            .field("addresses", &self.addresses())
            .finish_non_exhaustive()
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
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            hasher: RandomState::new(),
        }
    }

    /// Adds `amount` to `client`'s count if `fits(held, held + amount)`, where `held` is its
    /// count now; whether it did. A sum past `usize::MAX` never fits.
    pub fn try_add(
        &self,
        client: ClientKey,
        amount: usize,
        fits: impl FnOnce(usize, usize) -> bool,
    ) -> bool {
        let mut shard = self.shard(client);
        let held = shard.get(&client).copied().unwrap_or(0);
        match held.checked_add(amount) {
            Some(wanted) if fits(held, wanted) => {
                if wanted > 0 {
                    shard.insert(client, wanted);
                }
                true
            }
            _ => false,
        }
    }

    /// Takes `amount` from `client`'s count (what an earlier [`try_add`](Self::try_add) added);
    /// an address whose count reaches zero is forgotten.
    pub fn subtract(&self, client: ClientKey, amount: usize) {
        let mut shard = self.shard(client);
        if let Entry::Occupied(mut count) = shard.entry(client) {
            let left = count.get().saturating_sub(amount);
            if left == 0 {
                count.remove();
            } else {
                *count.get_mut() = left;
            }
        }
    }

    /// `client`'s count now.
    pub fn get(&self, client: ClientKey) -> usize {
        self.shard(client).get(&client).copied().unwrap_or(0)
    }

    /// How many addresses have a count above zero (what the counts take in memory).
    pub fn addresses(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| shard.lock().unwrap_or_else(PoisonError::into_inner).len())
            .sum()
    }

    fn shard(&self, client: ClientKey) -> std::sync::MutexGuard<'_, HashMap<ClientKey, usize>> {
        // The remainder is below the shard count: it fits.
        let index =
            usize::try_from(self.hasher.hash_one(client) % SHARDS as u64).unwrap_or_default();
        // A count is whole after every operation: a panic elsewhere leaves nothing half done.
        self.shards[index]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(n: u32) -> ClientKey {
        ClientAddr(std::net::Ipv4Addr::from(0x0a00_0000 + n).into()).into()
    }

    /// The hashed slots this replaced put about a hundred of these addresses in each count.
    #[test]
    fn a_hundred_thousand_addresses_each_have_their_own_count() {
        let counts = PerClient::new();
        let share = 3;
        for n in 0..100_000 {
            for _ in 0..share - 1 {
                assert!(counts.try_add(address(n), 1, |_, wanted| wanted <= share));
            }
        }
        assert_eq!(counts.addresses(), 100_000);
        // Every address under its share gets one more; none gets past it.
        for n in 0..100_000 {
            assert!(
                counts.try_add(address(n), 1, |_, wanted| wanted <= share),
                "address {n} refused under its share"
            );
            assert!(!counts.try_add(address(n), 1, |_, wanted| wanted <= share));
        }
        for n in 0..100_000 {
            counts.subtract(address(n), share);
        }
        assert_eq!(counts.addresses(), 0, "memory follows what is counted");
    }

    #[test]
    fn an_overflowing_sum_never_fits_and_subtracting_stops_at_zero() {
        let counts = PerClient::new();
        assert!(counts.try_add(address(1), usize::MAX, |_, _| true));
        assert!(!counts.try_add(address(1), 1, |_, _| true));
        counts.subtract(address(1), usize::MAX);
        counts.subtract(address(1), 1);
        assert_eq!(counts.get(address(1)), 0);
        assert!(counts.try_add(address(1), 0, |_, _| true));
        assert_eq!(counts.addresses(), 0, "a count of zero is not kept");
    }

    #[test]
    fn ipv4_mapped_ipv6_counts_as_ipv4_and_ipv6_by_its_64() {
        let v4 = ClientKey::from(ClientAddr([192, 0, 2, 1].into()));
        let mapped = ClientKey::from(ClientAddr("::ffff:192.0.2.1".parse().unwrap()));
        assert_eq!(v4, mapped);
        let a = ClientKey::from(ClientAddr("2001:db8:0:1::1".parse().unwrap()));
        let b = ClientKey::from(ClientAddr("2001:db8:0:1:ffff::9".parse().unwrap()));
        let c = ClientKey::from(ClientAddr("2001:db8:0:2::1".parse().unwrap()));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
