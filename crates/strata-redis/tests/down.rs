//! A rate-limit store whose Redis is down decides at once: only the first call finds out
//! (it times out, or cannot connect), the next ones fail without asking Redis (the limiter's
//! failure policy decides without waiting), and one probe in the background finds when Redis
//! is back, after which the store counts again.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod support;

use std::time::Duration;

use strata_ratelimit::{Gcra, Quota, RateLimitKey, RateLimitStore};
use strata_redis::RedisRateLimitStore;
use support::RedisServer;

fn client(n: u8) -> RateLimitKey<'static> {
    RateLimitKey::Addr([192, 0, 2, n].into())
}

/// Asks every 50 ms, at most 10 s, until a call is answered: Redis is used again.
async fn until_answered(store: &RedisRateLimitStore, gcra: Gcra) {
    for _ in 0..200 {
        if store.check(&client(200), gcra, 0).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the store did not use Redis again within 10 s");
}

/// The next `n` calls fail as "known down", none of them asking Redis.
async fn decided_at_once(store: &RedisRateLimitStore, gcra: Gcra, n: usize) {
    for i in 0..n {
        let error = store.check(&client(3), gcra, 0).await.unwrap_err();
        assert!(
            error.to_string().contains("Redis is down (not asked"),
            "call {i}: {error}"
        );
    }
}

/// The store counts: a new client's quota of 2, then a refusal.
async fn counts(store: &RedisRateLimitStore, gcra: Gcra, n: u8) {
    let mut granted = Vec::new();
    for _ in 0..3 {
        granted.push(store.check(&client(n), gcra, 0).await.unwrap().allowed);
    }
    assert_eq!(granted, [true, true, false]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_known_down_decides_at_once_and_counts_again_when_redis_is_back() {
    let Some(mut server) = RedisServer::start(
        "a_store_known_down_decides_at_once_and_counts_again_when_redis_is_back",
    ) else {
        return;
    };
    let store = RedisRateLimitStore::connect(&server.url())
        .await
        .unwrap()
        // Long enough that a loaded machine's answer is no failure.
        .timeout(Duration::from_millis(250));
    let gcra = Quota::per_minute(2).gcra();
    counts(&store, gcra, 1).await;

    // Stalled: the first call waits its 250 ms, the next 100 do not wait at all.
    server.pause();
    let first = store.check(&client(2), gcra, 0).await.unwrap_err();
    assert!(first.to_string().contains("within 250 ms"), "{first}");
    decided_at_once(&store, gcra, 100).await;
    server.resume();
    until_answered(&store, gcra).await;
    counts(&store, gcra, 10).await;

    // Killed: the same, and the store counts again once redis-server is back on its port.
    server.stop();
    assert!(store.check(&client(4), gcra, 0).await.is_err());
    decided_at_once(&store, gcra, 100).await;
    server.restart();
    until_answered(&store, gcra).await;
    counts(&store, gcra, 20).await;
}

/// The figure: requests through a replica (the limiter failing open) with redis-server
/// killed, one at a time: how many per second. By hand:
/// `cargo test -p strata-redis --test down -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a figure, run by hand"]
async fn requests_per_second_with_redis_killed() {
    use std::sync::Arc;

    use strata_ratelimit::FailPolicy;
    use support::app::{Logs, get, replica};

    let Some(mut server) = RedisServer::start("requests_per_second_with_redis_killed") else {
        return;
    };
    let store = RedisRateLimitStore::connect(&server.url()).await.unwrap();
    let app = replica(store, Quota::per_minute(1_000_000), FailPolicy::Open);
    let logs = Arc::new(Logs::default());
    assert!(get(&app, [192, 0, 2, 1], &logs).await.checked);
    server.stop();
    let started = std::time::Instant::now();
    let requests = 1_000;
    for n in 0..requests {
        let answer = get(&app, [192, 0, 2, u8::try_from(n % 200).unwrap()], &logs).await;
        assert!(!answer.checked);
    }
    let elapsed = started.elapsed();
    println!(
        "Redis killed: {requests} requests in {elapsed:?}: {:.0} requests/s, one at a time",
        f64::from(requests) / elapsed.as_secs_f64()
    );
}
