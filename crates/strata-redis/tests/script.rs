//! The Lua script against `Gcra::decide`, on a real redis-server: the same inputs (a stored
//! TAT or none, now, a quota) give the same decision, the same stored TAT and an expiry a
//! second after that TAT.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod support;

use std::borrow::Cow;
use std::time::Duration;

use strata_ratelimit::{Gcra, Quota, RateLimitKey, RateLimitStore};
use strata_redis::{RedisRateLimitStore, TimeSource};
use support::RedisServer;

/// A small deterministic generator (xorshift64*), so that a failing case can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// In `0..=max`.
    fn upto(&mut self, max: u64) -> u64 {
        if max == u64::MAX {
            self.next()
        } else {
            self.next() % (max + 1)
        }
    }
}

/// A quota as an application would write one: up to a day's window, bursts below and above
/// the count; now and then the smallest GCRA there is.
fn quota(rng: &mut Rng) -> Gcra {
    if rng.upto(20) == 0 {
        return Gcra {
            interval: 1,
            capacity: 1 + rng.upto(3),
        };
    }
    let count = u32::try_from(1 + rng.upto(1_000)).unwrap();
    let window = match rng.upto(5) {
        0 => Duration::from_millis(1 + rng.upto(999)),
        1 => Duration::from_secs(1),
        2 => Duration::from_secs(60),
        3 => Duration::from_secs(3600),
        4 => Duration::from_secs(86_400),
        _ => Duration::from_micros(1 + rng.upto(10_000_000_000)),
    };
    let burst = u32::try_from(1 + rng.upto(2 * u64::from(count))).unwrap();
    Quota::new(count, window).with_burst(burst).gcra()
}

/// A TAT around `now` that exercises the comparisons: none, long past, just past, now, the
/// edges of the capacity, beyond it.
fn stored(rng: &mut Rng, gcra: Gcra, now: u64) -> Option<u64> {
    let Gcra { interval, capacity } = gcra;
    let tat = match rng.upto(9) {
        0 | 1 => return None,
        2 => now.saturating_sub(rng.upto(2 * capacity)),
        3 => now.saturating_sub(1),
        4 => now,
        5 => now + capacity.saturating_sub(interval),
        6 => now + capacity.saturating_sub(interval) + 1,
        7 => now + capacity,
        8 => now + capacity + rng.upto(interval),
        _ => now + rng.upto(capacity),
    };
    Some(tat)
}

fn now(rng: &mut Rng) -> u64 {
    match rng.upto(2) {
        // Near the start of a monotonic clock.
        0 => rng.upto(1_000_000_000),
        // Wall-clock microseconds, 2024 to 2033.
        _ => 1_700_000_000_000_000 + rng.upto(300_000_000_000_000),
    }
}

#[tokio::test]
async fn the_script_decides_and_stores_as_gcra_decide() {
    let Some(server) = RedisServer::start("the_script_decides_and_stores_as_gcra_decide") else {
        return;
    };
    let store = RedisRateLimitStore::connect(&server.url())
        .await
        .unwrap()
        // Exactness, not speed: a loaded machine's slow answer is no failure here.
        .timeout(Duration::from_secs(2))
        .time_source(TimeSource::Caller);
    let client = redis::Client::open(server.url()).unwrap();
    let mut direct = client.get_multiplexed_async_connection().await.unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut granted, mut denied) = (0, 0);
    for case in 0..3_000 {
        let gcra = quota(&mut rng);
        let now = now(&mut rng);
        let stored = stored(&mut rng, gcra, now);
        let text = format!("case-{case}");
        let key = RateLimitKey::Text(Cow::Borrowed(text.as_bytes()));
        let redis_key = store.redis_key(&key);
        if let Some(tat) = stored {
            let () = redis::cmd("SET")
                .arg(&redis_key)
                .arg(tat)
                .query_async(&mut direct)
                .await
                .unwrap();
        }

        let got = store.check(&key, gcra, now).await.unwrap();
        let (want, new_tat) = gcra.decide(stored, now);
        let context = format!("case {case}: {gcra:?}, stored {stored:?}, now {now}");
        assert_eq!(got, want, "{context}");

        let after: Option<u64> = redis::cmd("GET")
            .arg(&redis_key)
            .query_async(&mut direct)
            .await
            .unwrap();
        assert_eq!(after, new_tat.or(stored), "{context}");
        let ttl: i64 = redis::cmd("PTTL")
            .arg(&redis_key)
            .query_async(&mut direct)
            .await
            .unwrap();
        if let Some(tat) = new_tat {
            // Until the TAT is past, rounded up to the millisecond, and a second (less the
            // moment since).
            let until = i64::try_from((tat - now).div_ceil(1_000)).unwrap() + 1_000;
            assert!(
                ttl <= until && ttl >= until - 1_000,
                "{context}: PTTL {ttl}"
            );
            granted += 1;
        } else {
            // Denied: untouched (the test's SET has no expiry).
            assert_eq!(ttl, -1, "{context}");
            denied += 1;
        }
    }
    // Both sides of the comparison were exercised.
    assert!(
        granted > 1_000 && denied > 500,
        "{granted} granted, {denied} denied"
    );
}

#[tokio::test]
async fn a_sequence_of_requests_matches_the_memory_store() {
    let Some(server) = RedisServer::start("a_sequence_of_requests_matches_the_memory_store") else {
        return;
    };
    let store = RedisRateLimitStore::connect(&server.url())
        .await
        .unwrap()
        // Exactness, not speed: a loaded machine's slow answer is no failure here.
        .timeout(Duration::from_secs(2))
        .time_source(TimeSource::Caller);
    let memory = strata_ratelimit::MemoryStore::new();
    let mut rng = Rng(42);
    for round in 0..20 {
        let gcra = quota(&mut rng);
        let text = format!("sequence-{round}");
        let key = RateLimitKey::Text(Cow::Borrowed(text.as_bytes()));
        let mut now = 1_700_000_000_000_000 + rng.upto(1_000_000_000);
        for step in 0..100 {
            // Bursts at one instant, and gaps of up to two intervals.
            if rng.upto(3) != 0 {
                now += rng.upto(2 * gcra.interval);
            }
            let got = store.check(&key, gcra, now).await.unwrap();
            let want = memory.check(&key, gcra, now).await.unwrap();
            assert_eq!(got, want, "round {round}, step {step}: {gcra:?}, now {now}");
        }
    }
}

#[tokio::test]
async fn the_server_clock_decides_by_default() {
    let Some(server) = RedisServer::start("the_server_clock_decides_by_default") else {
        return;
    };
    let store = RedisRateLimitStore::connect(&server.url())
        .await
        .unwrap()
        .timeout(Duration::from_secs(2));
    let gcra = Quota::per_minute(3).gcra();
    let key = RateLimitKey::Addr([192, 0, 2, 7].into());
    // The limiter's time is ignored: 0 here, which would be 1970 on the wall clock.
    let decisions = [
        store.check(&key, gcra, 0).await.unwrap(),
        store.check(&key, gcra, 0).await.unwrap(),
        store.check(&key, gcra, 0).await.unwrap(),
        store.check(&key, gcra, 0).await.unwrap(),
    ];
    let allowed: Vec<bool> = decisions.iter().map(|d| d.allowed).collect();
    assert_eq!(allowed, [true, true, true, false]);
    assert_eq!(decisions[2].remaining, 0);
    // The next request in one interval (20 s), less the moments the calls took.
    assert!(
        decisions[3].reset > 19_000_000 && decisions[3].reset <= 20_000_000,
        "{:?}",
        decisions[3]
    );

    // The TAT is the server's now plus three intervals; the key lives until then.
    let (seconds, micros): (u64, u64) = server.query(&redis::cmd("TIME"));
    let server_now = seconds * 1_000_000 + micros;
    let tat: u64 = server.query(redis::cmd("GET").arg("strata:rl:a:192.0.2.7"));
    let ahead = tat - server_now;
    assert!(
        ahead > 59_000_000 && ahead <= 60_000_000,
        "{ahead} µs ahead"
    );
    let ttl: u64 = server.query(redis::cmd("PTTL").arg("strata:rl:a:192.0.2.7"));
    assert!(ttl > 60_000 && ttl <= 61_000, "PTTL {ttl}");
}

#[tokio::test]
async fn times_beyond_the_exact_range_of_doubles_are_refused() {
    let Some(server) = RedisServer::start("times_beyond_the_exact_range_of_doubles_are_refused")
    else {
        return;
    };
    let store = RedisRateLimitStore::connect(&server.url())
        .await
        .unwrap()
        // Exactness, not speed: a loaded machine's slow answer is no failure here.
        .timeout(Duration::from_secs(2))
        .time_source(TimeSource::Caller);
    let key = RateLimitKey::Addr([192, 0, 2, 8].into());
    let gcra = Quota::per_second(1).gcra();
    let error = store.check(&key, gcra, 1 << 53).await.unwrap_err();
    assert!(error.to_string().contains("2^53"), "{error}");
    // A quota of centuries, on the server's clock.
    let ages = Gcra {
        interval: 1 << 52,
        capacity: 1 << 52,
    };
    let server_clock = store.clone().time_source(TimeSource::Server);
    assert!(server_clock.check(&key, ages, 0).await.is_err());
    // Nothing was stored.
    let exists: bool = server.query(redis::cmd("EXISTS").arg("strata:rl:a:192.0.2.8"));
    assert!(!exists);
}
