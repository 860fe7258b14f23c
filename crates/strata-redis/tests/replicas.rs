//! Two replicas (two `RateLimit` middleware, each with its own store and connection) sharing
//! one real redis-server: a client gets its quota once across both, and each rate-limited
//! request costs Redis one command.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use http::StatusCode;
use strata_ratelimit::{FailPolicy, Quota};
use strata_redis::RedisRateLimitStore;
use support::RedisServer;
use support::app::{Logs, Replica, get, replica};

const CLIENT: [u8; 4] = [192, 0, 2, 1];

async fn replicas(server: &RedisServer, quota: Quota) -> (Replica, Replica) {
    let a = RedisRateLimitStore::connect(&server.url()).await.unwrap();
    let b = RedisRateLimitStore::connect(&server.url()).await.unwrap();
    (
        replica(a, quota, FailPolicy::Open),
        replica(b, quota, FailPolicy::Open),
    )
}

/// The calls of each command since `CONFIG RESETSTAT`, from `INFO commandstats` (which is not
/// counted while it runs).
fn command_calls(server: &RedisServer) -> Vec<(String, u64)> {
    let info: String = server.query(redis::cmd("INFO").arg("commandstats"));
    info.lines()
        .filter_map(|line| {
            let (name, stats) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = stats.strip_prefix("calls=")?.split(',').next()?;
            Some((name.to_owned(), calls.parse().ok()?))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_grant_the_quota_once_in_one_round_trip_each() {
    let Some(server) =
        RedisServer::start("two_replicas_grant_the_quota_once_in_one_round_trip_each")
    else {
        return;
    };
    let (a, b) = replicas(&server, Quota::per_minute(100)).await;
    let logs = Arc::new(Logs::default());
    // The script is loaded once per Redis (EVALSHA, NOSCRIPT, SCRIPT LOAD, EVALSHA): not
    // counted.
    get(&a, [198, 51, 100, 1], &logs).await;
    let () = server.query(redis::cmd("CONFIG").arg("RESETSTAT"));

    // 300 requests of one client at once, alternating between the replicas.
    let tasks: Vec<_> = (0..300)
        .map(|i| {
            let replica = if i % 2 == 0 { a.clone() } else { b.clone() };
            let logs = Arc::clone(&logs);
            tokio::spawn(async move { get(&replica, CLIENT, &logs).await })
        })
        .collect();
    let mut statuses = Vec::new();
    for task in tasks {
        let answer = task.await.unwrap();
        assert!(answer.checked, "every answer came from Redis");
        statuses.push(answer.status);
    }
    let ok = statuses.iter().filter(|&&s| s == StatusCode::OK).count();
    let limited = statuses
        .iter()
        .filter(|&&s| s == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!((ok, limited), (100, 200), "{statuses:?}");

    // Each request was one command from the replicas, EVALSHA, and nothing else reached
    // Redis but this test's own; INFO counts the script's commands too (one TIME and one GET
    // per request, one SET per granted request).
    let mut calls = command_calls(&server);
    calls.sort();
    let want = [
        ("config|resetstat", 1),
        ("evalsha", 300),
        ("get", 300),
        ("set", 100),
        ("time", 300),
    ];
    let want: Vec<(String, u64)> = want.iter().map(|(n, c)| ((*n).to_owned(), *c)).collect();
    assert_eq!(calls, want);
    eprintln!("Redis round trips per rate-limited request: 1 (300 EVALSHA for 300 requests)");

    // Another client has a budget of its own, on either replica.
    assert_eq!(get(&b, [192, 0, 2, 2], &logs).await.status, StatusCode::OK);
    assert_eq!(
        get(&a, CLIENT, &logs).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert!(logs.lines().is_empty(), "{:?}", logs.lines());
}

#[tokio::test]
async fn a_spent_budget_comes_back_at_the_rate_on_every_replica() {
    let Some(server) = RedisServer::start("a_spent_budget_comes_back_at_the_rate_on_every_replica")
    else {
        return;
    };
    // Two per second: one request every 500 ms after the burst of two.
    let (a, b) = replicas(&server, Quota::per_second(2)).await;
    let logs = Arc::new(Logs::default());
    // Before the first request: the budget comes back counted from it, so what a request
    // made later than that gets is bounded by the time since this, however slow the machine.
    let first = Instant::now();
    assert_eq!(get(&a, CLIENT, &logs).await.status, StatusCode::OK);
    assert_eq!(get(&b, CLIENT, &logs).await.status, StatusCode::OK);
    let third = get(&a, CLIENT, &logs).await;
    // Refused, unless the machine took half a second for the three (the next request's
    // budget was back by then).
    let slow = first.elapsed() >= Duration::from_millis(500);
    assert!(
        third.status == StatusCode::TOO_MANY_REQUESTS || slow,
        "a third request {:?} after the first was granted",
        first.elapsed()
    );
    if third.status == StatusCode::TOO_MANY_REQUESTS {
        assert_eq!(third.retry_after.as_deref(), Some("1"));
    }
    // The wait is the test: a request every 500 ms comes back, on either replica.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(get(&b, CLIENT, &logs).await.status, StatusCode::OK);
    // And only one: the next is refused until a second after the first request (when the
    // third was refused).
    let next = get(&a, CLIENT, &logs).await;
    assert!(
        next.status == StatusCode::TOO_MANY_REQUESTS
            || slow
            || first.elapsed() >= Duration::from_secs(1),
        "granted {:?} after the first request",
        first.elapsed()
    );
}
