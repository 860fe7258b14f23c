//! A budget for request bodies held in memory across all requests.
//!
//! Each request may buffer up to the body limit (or the multipart limit); many slow or stalled
//! requests together could hold far more than the machine has. The budget caps the sum, counted
//! as bodies arrive: a body reserves its bytes chunk by chunk (never what its `Content-Length`
//! promises, which costs a client nothing to declare), and a chunk that does not fit ends the
//! request with a 503, `Retry-After: 1` and a closed connection. What a body reserved is given
//! back when its request is answered. One client address may hold at most a share of the
//! budget (a quarter by default), so that one host cannot take all of it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use http::header::RETRY_AFTER;
use http::{HeaderValue, StatusCode};

use strata_core::{ApiError, ClientAddr, ErrorKind};

use crate::PerClient;
use crate::per_client::ClientKey;

/// The default budget's ceiling: 256 MiB ([`default_body_budget`]).
pub const DEFAULT_BODY_BUDGET: usize = 256 * 1024 * 1024;

/// The budget a default configuration gets: [`DEFAULT_BODY_BUDGET`], or a sixteenth of the
/// memory this process may use ([`memory_limit`](crate::memory_limit)) where that is less
/// (a container of 1 GiB: 64 MiB), at least 1 MiB.
pub fn default_body_budget() -> usize {
    budget_for_memory(crate::memory_limit())
}

fn budget_for_memory(memory: Option<u64>) -> usize {
    const AT_LEAST: usize = 1024 * 1024;
    memory
        .map(|bytes| usize::try_from(bytes / 16).unwrap_or(usize::MAX))
        .map_or(DEFAULT_BODY_BUDGET, |share| share.min(DEFAULT_BODY_BUDGET))
        .max(AT_LEAST)
}

/// Bytes of request bodies the server may hold at once, and the most one client address may
/// hold of them. A handle: its clones share one count, so every endpoint built from one
/// pipeline configuration (and every [`ParseLayer`] given a clone) draws from the same budget.
///
/// [`ParseLayer`]: crate::ParseLayer
///
/// A body's [`BodyReservation`] grows as its bytes arrive. Requests that carry a [`ClientAddr`]
/// in their extensions (the server puts one in every request with a body that came over TCP)
/// also count against their address's share: a quarter of the budget unless
/// [`per_client`](Self::per_client) says otherwise, so that many connections from one host
/// cannot take the whole budget from everyone else. The share never refuses the only body an
/// address is sending: that one is bounded by the body limit. IPv6 addresses are counted by
/// their /64 prefix (what one host is usually given). Requests without a `ClientAddr` (a UNIX
/// socket, a test calling the service) count against the whole budget only.
///
/// **Behind a reverse proxy** every request has the proxy's address: give that address the whole
/// budget, `BodyBudget::new(bytes).per_client(bytes)` (in a facade configuration,
/// `config.pipeline.body_budget = Some(..)` after `build()`); the proxy is where a per-client
/// limit then belongs.
///
/// ```
/// use strata_core::ClientAddr;
/// use strata_parse::BodyBudget;
///
/// let budget = BodyBudget::new(100).per_client(50);
/// let shared = budget.clone();
/// let (one, other) = (ClientAddr([192, 0, 2, 1].into()), ClientAddr([192, 0, 2, 2].into()));
///
/// // Two bodies from one address, reserved as their bytes arrive.
/// let mut first = budget.reservation(Some(one));
/// let mut second = budget.reservation(Some(one));
/// first.try_grow(30).unwrap();
/// second.try_grow(20).unwrap();
/// assert!(second.try_grow(1).is_err(), "the address holds its share");
/// // Another address still fits, up to the whole budget.
/// let mut third = shared.reservation(Some(other));
/// third.try_grow(50).unwrap();
/// assert_eq!(shared.used(), 100, "the clone sees the same count");
/// drop((first, second, third));
/// assert_eq!(shared.used(), 0);
/// ```
#[derive(Debug, Clone)]
pub struct BodyBudget(Arc<Count>);

struct Count {
    capacity: usize,
    used: AtomicUsize,
    /// The most one client address may hold.
    per_client: AtomicUsize,
    /// Bytes held per client address, each address counted on its own.
    clients: PerClient,
}

impl std::fmt::Debug for Count {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Count")
            .field("capacity", &self.capacity)
            .field("used", &self.used)
            .field("per_client", &self.per_client)
            .finish_non_exhaustive()
    }
}

impl BodyBudget {
    /// A budget of `capacity` bytes, of which one client address may hold a quarter.
    pub fn new(capacity: usize) -> Self {
        Self(Arc::new(Count {
            capacity,
            used: AtomicUsize::new(0),
            per_client: AtomicUsize::new(capacity / 4),
            clients: PerClient::new(),
        }))
    }

    /// Sets the most bytes one client address may hold (default: a quarter of the capacity),
    /// for this budget and all its clones. At least the capacity turns the share off: behind a
    /// reverse proxy, where every request has the proxy's address, `per_client(capacity)`.
    #[must_use]
    pub fn per_client(self, bytes: usize) -> Self {
        self.0.per_client.store(bytes, Ordering::Relaxed);
        self
    }

    /// The capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.0.capacity
    }

    /// The most bytes one client address may hold.
    pub fn client_share(&self) -> usize {
        self.0.per_client.load(Ordering::Relaxed)
    }

    /// The bytes reserved now.
    pub fn used(&self) -> usize {
        self.0.used.load(Ordering::Relaxed)
    }

    /// The bytes reserved now by `client` (IPv6: by its /64).
    pub fn used_by(&self, client: ClientAddr) -> usize {
        self.0.clients.get(client.into())
    }

    /// An empty reservation for a body from `client` (`None`: unknown, counted against the
    /// whole budget only), to grow as the body's bytes arrive.
    pub fn reservation(&self, client: Option<ClientAddr>) -> BodyReservation {
        // No counter to keep when the share cannot refuse anything.
        let client = client
            .filter(|_| self.client_share() < self.capacity())
            .map(ClientKey::from);
        BodyReservation {
            budget: self.clone(),
            client,
            bytes: 0,
        }
    }

    /// Reserves `bytes` at once, against the whole budget only, until the reservation is
    /// dropped; `None` when they do not fit.
    pub fn try_reserve(&self, bytes: usize) -> Option<BodyReservation> {
        let mut reservation = self.reservation(None);
        reservation.try_grow(bytes).ok()?;
        Some(reservation)
    }

    /// The error of a body that does not fit the budget: a 503 with `Retry-After: 1` of kind
    /// [`ErrorKind::Overload`], whose response closes the connection (the rest of the body is
    /// not read).
    pub fn exhausted() -> ApiError {
        OverBudget::Total.error()
    }
}

/// Why a [`BodyReservation`] could not grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OverBudget {
    /// The whole budget is held.
    Total,
    /// The client's address holds its share.
    ClientShare,
}

impl OverBudget {
    /// The 503 a request gets for it: `Retry-After: 1`, kind [`ErrorKind::Overload`] (logged as
    /// a rate-limited warning), and a response that closes the connection, since the rest of the
    /// body is not read.
    pub fn error(self) -> ApiError {
        let message = match self {
            Self::Total => "The server holds too many request bodies right now; retry shortly",
            Self::ClientShare => {
                "The server holds too many request bodies from this address right now; retry \
                 shortly"
            }
        };
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message)
            .with_kind(ErrorKind::Overload)
            .with_header(RETRY_AFTER, HeaderValue::from_static("1"))
            .with_connection_close()
    }
}

/// A share of a [`BodyBudget`], grown as a body arrives and given back when dropped.
#[derive(Debug)]
pub struct BodyReservation {
    budget: BodyBudget,
    /// The client's address, when the share applies.
    client: Option<ClientKey>,
    bytes: usize,
}

impl BodyReservation {
    /// The bytes reserved.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Reserves `bytes` more: from the client's share (unless this reservation is all the
    /// address holds), then from the whole budget. Nothing is reserved when either refuses.
    pub fn try_grow(&mut self, bytes: usize) -> Result<(), OverBudget> {
        if bytes == 0 {
            return Ok(());
        }
        let count = &*self.budget.0;
        if let Some(client) = self.client {
            let share = count.per_client.load(Ordering::Relaxed);
            let mine = self.bytes;
            let fits = count.clients.try_add(client, bytes, |held, wanted| {
                wanted <= share || held == mine
            });
            if !fits {
                return Err(OverBudget::ClientShare);
            }
        }
        if add_within(&count.used, bytes, |_, wanted| wanted <= count.capacity).is_err() {
            if let Some(client) = self.client {
                count.clients.subtract(client, bytes);
            }
            return Err(OverBudget::Total);
        }
        self.bytes += bytes;
        Ok(())
    }
}

impl BodyReservation {
    /// Gives back `bytes` of the reservation (at most what it holds): bytes the body no longer
    /// holds in memory (an upload's file written to disk).
    pub fn shrink(&mut self, bytes: usize) {
        let bytes = bytes.min(self.bytes);
        if bytes == 0 {
            return;
        }
        let count = &*self.budget.0;
        count.used.fetch_sub(bytes, Ordering::AcqRel);
        if let Some(client) = self.client {
            count.clients.subtract(client, bytes);
        }
        self.bytes -= bytes;
    }
}

/// Adds `bytes` to `counter` if `fits(held, held + bytes)`; a compare-and-swap loop, so that
/// racing reservations never go over together.
fn add_within(
    counter: &AtomicUsize,
    bytes: usize,
    fits: impl Fn(usize, usize) -> bool,
) -> Result<(), ()> {
    let mut held = counter.load(Ordering::Relaxed);
    loop {
        let wanted = held.checked_add(bytes).ok_or(())?;
        if !fits(held, wanted) {
            return Err(());
        }
        match counter.compare_exchange_weak(held, wanted, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return Ok(()),
            Err(now) => held = now,
        }
    }
}

impl Drop for BodyReservation {
    fn drop(&mut self) {
        if self.bytes == 0 {
            return;
        }
        let count = &*self.budget.0;
        count.used.fetch_sub(self.bytes, Ordering::AcqRel);
        if let Some(client) = self.client {
            count.clients.subtract(client, self.bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(last: u8) -> ClientAddr {
        ClientAddr([192, 0, 2, last].into())
    }

    /// Two addresses.
    fn two_clients(_: &BodyBudget) -> (ClientAddr, ClientAddr) {
        (client(1), client(2))
    }

    #[test]
    fn the_default_budget_is_at_most_a_sixteenth_of_memory() {
        const GIB: u64 = 1024 * 1024 * 1024;
        assert_eq!(budget_for_memory(Some(24 * GIB)), DEFAULT_BODY_BUDGET);
        assert_eq!(budget_for_memory(Some(GIB)), 64 * 1024 * 1024);
        assert_eq!(budget_for_memory(Some(8 * 1024 * 1024)), 1024 * 1024);
        assert_eq!(budget_for_memory(None), DEFAULT_BODY_BUDGET);
    }

    #[test]
    fn reservations_fit_the_capacity_and_are_given_back() {
        let budget = BodyBudget::new(100);
        let a = budget.try_reserve(60).unwrap();
        assert!(budget.try_reserve(41).is_none());
        let b = budget.try_reserve(40).unwrap();
        assert_eq!(budget.used(), 100);
        drop(a);
        assert_eq!(budget.used(), 40);
        assert!(budget.try_reserve(usize::MAX).is_none());
        drop(b);
        assert_eq!(budget.used(), 0);
        let error = BodyBudget::exhausted();
        assert_eq!(error.status(), 503);
        assert_eq!(error.kind(), ErrorKind::Overload);
        let headers = error.headers().unwrap();
        assert_eq!(headers["retry-after"], "1");
        assert_eq!(headers["connection"], "close");
    }

    #[test]
    fn a_reservation_grows_with_what_arrives() {
        let budget = BodyBudget::new(1000);
        let mut body = budget.reservation(Some(client(1)));
        assert_eq!(
            (body.bytes(), budget.used()),
            (0, 0),
            "nothing before a byte"
        );
        for arrived in 1..=10 {
            body.try_grow(10).unwrap();
            assert_eq!(body.bytes(), arrived * 10);
            assert_eq!(budget.used(), arrived * 10);
            assert_eq!(budget.used_by(client(1)), arrived * 10);
        }
        assert_eq!(body.try_grow(0), Ok(()));
        drop(body);
        assert_eq!((budget.used(), budget.used_by(client(1))), (0, 0));
    }

    #[test]
    fn a_chunk_that_does_not_fit_reserves_nothing() {
        let budget = BodyBudget::new(100).per_client(100);
        let mut other = budget.reservation(None);
        other.try_grow(95).unwrap();
        let mut body = budget.reservation(Some(client(1)));
        body.try_grow(5).unwrap();
        assert_eq!(body.try_grow(1), Err(OverBudget::Total));
        assert_eq!(body.bytes(), 5);
        assert_eq!(budget.used(), 100);
        drop(other);
        body.try_grow(1).unwrap();
        assert_eq!(budget.used(), 6);
    }

    #[test]
    fn one_address_holds_at_most_its_share_and_gives_it_back() {
        let budget = BodyBudget::new(1000);
        assert_eq!(budget.client_share(), 250, "a quarter by default");
        let (one, other) = two_clients(&budget);
        let mut first = budget.reservation(Some(one));
        let mut second = budget.reservation(Some(one));
        first.try_grow(200).unwrap();
        second.try_grow(50).unwrap();
        assert_eq!(second.try_grow(1), Err(OverBudget::ClientShare));
        assert_eq!(budget.used_by(one), 250);
        let error = OverBudget::ClientShare.error();
        assert_eq!(
            (error.status().as_u16(), error.kind()),
            (503, ErrorKind::Overload)
        );
        // Another address still fits, and the whole budget is far from spent.
        let mut elsewhere = budget.reservation(Some(other));
        elsewhere.try_grow(250).unwrap();
        assert_eq!(budget.used(), 500);
        // What one body gives back, the address may use again.
        drop(first);
        assert_eq!(budget.used_by(one), 50);
        second.try_grow(200).unwrap();
        drop(second);
        drop(elsewhere);
        assert_eq!(
            (budget.used(), budget.used_by(one), budget.used_by(other)),
            (0, 0, 0)
        );
    }

    #[test]
    fn the_only_body_of_an_address_is_not_refused_by_the_share() {
        let budget = BodyBudget::new(1000);
        let one = client(1);
        let mut upload = budget.reservation(Some(one));
        upload.try_grow(600).unwrap();
        let mut another = budget.reservation(Some(one));
        assert_eq!(another.try_grow(1), Err(OverBudget::ClientShare));
        upload.try_grow(400).unwrap();
        assert_eq!(upload.try_grow(1), Err(OverBudget::Total));
    }

    #[test]
    fn without_an_address_or_with_the_whole_budget_as_the_share_only_the_total_counts() {
        let budget = BodyBudget::new(100);
        let mut unknown = budget.reservation(None);
        unknown.try_grow(100).unwrap();
        drop(unknown);
        let budget = BodyBudget::new(100).per_client(100);
        let (mut a, mut b) = (
            budget.reservation(Some(client(1))),
            budget.reservation(Some(client(1))),
        );
        a.try_grow(60).unwrap();
        b.try_grow(40).unwrap();
        assert_eq!(budget.used_by(client(1)), 0, "no counter kept");
    }

    #[test]
    fn ipv6_addresses_count_by_their_64_bit_prefix() {
        let budget = BodyBudget::new(1000);
        let address = |text: &str| ClientAddr(text.parse().unwrap());
        let mut a = budget.reservation(Some(address("2001:db8:1:2::1")));
        let mut b = budget.reservation(Some(address("2001:db8:1:2:ffff::9")));
        a.try_grow(200).unwrap();
        assert_eq!(b.try_grow(51), Err(OverBudget::ClientShare));
        // An IPv4 address mapped into IPv6 is the IPv4 address.
        let mapped = address("::ffff:192.0.2.1");
        let mut v4 = budget.reservation(Some(client(1)));
        v4.try_grow(7).unwrap();
        assert_eq!(budget.used_by(mapped), 7);
    }

    /// Counted in 1,024 hashed slots, as before, about a hundred of these addresses shared
    /// each share, and most bodies were refused.
    #[test]
    fn a_hundred_thousand_addresses_under_their_share_are_never_refused() {
        let addresses = 100_000_u32;
        let budget = BodyBudget::new(usize::MAX / 2).per_client(10);
        let address = |n: u32| Some(ClientAddr(std::net::Ipv4Addr::from(0x0a00_0000 + n).into()));
        // Two bodies from each address (two, since one body alone is never refused).
        let mut bodies = Vec::with_capacity(2 * addresses as usize);
        for n in 0..addresses {
            for _ in 0..2 {
                let mut body = budget.reservation(address(n));
                assert_eq!(
                    body.try_grow(5),
                    Ok(()),
                    "address {n} refused under its share"
                );
                bodies.push(body);
            }
        }
        assert_eq!(budget.used(), 10 * addresses as usize);
        // And each is refused past its share.
        let mut third = budget.reservation(address(0));
        third.try_grow(1).unwrap_err();
        drop(bodies);
        assert_eq!(budget.used(), 0);
        assert_eq!(
            budget.0.clients.addresses(),
            0,
            "memory follows the bodies held"
        );
    }
}
