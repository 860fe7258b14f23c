//! Redis stopped under two replicas: the failure policy decides (open: every request goes
//! through, unchecked; closed: 503 with `Retry-After: 1`), the failure is logged once for the
//! whole outage, and when Redis is back on its port the same replicas limit again.
//!
//! One test in this file: the log limits (once per 10 s, once per 5 s) are per process.

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
const QUOTA: u32 = 5;

/// Two replicas under `fail`, with their own prefix (two limiters on one Redis).
async fn replicas(server: &RedisServer, fail: FailPolicy) -> [Replica; 2] {
    let prefix = format!("test:{fail:?}:");
    let mut replicas = Vec::new();
    for _ in 0..2 {
        let store = RedisRateLimitStore::connect(&server.url())
            .await
            .unwrap()
            .prefix(&prefix);
        replicas.push(replica(store, Quota::per_minute(QUOTA), fail));
    }
    replicas.try_into().ok().unwrap()
}

/// Requests of `client` alternating between the replicas until one is refused: the
/// successes.
async fn spend(replicas: &[Replica; 2], client: [u8; 4], logs: &Arc<Logs>) -> u32 {
    let mut granted = 0;
    for i in 0..100 {
        let answer = get(&replicas[i % 2], client, logs).await;
        assert!(answer.checked);
        match answer.status {
            StatusCode::OK => granted += 1,
            StatusCode::TOO_MANY_REQUESTS => return granted,
            status => panic!("{status}"),
        }
    }
    panic!("never limited");
}

/// Waits until a request of a client never seen is checked by Redis again on both replicas
/// (asking every 50 ms, at most 15 s, then panics); returns how long that took.
async fn until_checked(replicas: &[Replica; 2], logs: &Arc<Logs>) -> Duration {
    let start = Instant::now();
    let checked = tokio::time::timeout(Duration::from_secs(15), async {
        let mut probe = 0_u8;
        for replica in replicas {
            loop {
                probe = probe.wrapping_add(1);
                if get(replica, [198, 51, 100, probe], logs).await.checked {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    })
    .await;
    assert!(checked.is_ok(), "Redis not used again after 15 s");
    start.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_applies_the_policy_and_limiting_resumes_when_it_is_back() {
    let Some(mut server) =
        RedisServer::start("redis_down_applies_the_policy_and_limiting_resumes_when_it_is_back")
    else {
        return;
    };
    let open = replicas(&server, FailPolicy::Open).await;
    let closed = replicas(&server, FailPolicy::Closed).await;
    let logs = Arc::new(Logs::default());
    assert_eq!(spend(&open, CLIENT, &logs).await, QUOTA);
    assert_eq!(spend(&closed, CLIENT, &logs).await, QUOTA);
    assert!(logs.lines().is_empty());

    server.stop();
    let down = Instant::now();
    for i in 0..20 {
        // Open: through, unchecked (no RateLimit header), although the client's budget is
        // spent. (Each within the store's timeout, 50 ms: the guard is for a request that
        // would wait for Redis to come back.)
        let answer =
            tokio::time::timeout(Duration::from_secs(10), get(&open[i % 2], CLIENT, &logs))
                .await
                .expect("a request waited for Redis");
        assert_eq!(answer.status, StatusCode::OK, "request {i}");
        assert!(!answer.checked);
        // Closed: refused, come back in a second.
        let answer =
            tokio::time::timeout(Duration::from_secs(10), get(&closed[i % 2], CLIENT, &logs))
                .await
                .expect("a request waited for Redis");
        assert_eq!(
            answer.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "request {i}"
        );
        assert_eq!(answer.retry_after.as_deref(), Some("1"));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // 40 failed checks: the limiter's line about the store (at most one per 10 s) first, and
    // the format stage's about the 503s (an overload's, at most one per 5 s), not one per
    // request. (In a second or so; a machine slow enough to take 5 s and more gets as many
    // lines more as the limits allow.)
    let (lines, outage) = (
        logs.lines(),
        usize::try_from(down.elapsed().as_secs()).unwrap(),
    );
    let store = lines
        .iter()
        .filter(|line| line.contains("rate-limit store failed: Redis"))
        .count();
    let refusals = lines
        .iter()
        .filter(|line| line.contains("503 The rate limit cannot be checked now"))
        .count();
    assert!(
        lines[0].contains("rate-limit store failed: Redis"),
        "{lines:?}"
    );
    assert_eq!(store + refusals, lines.len(), "{lines:?}");
    assert!((1..=1 + outage / 10).contains(&store), "{lines:?}");
    assert!((1..=1 + outage / 5).contains(&refusals), "{lines:?}");

    // Back on the same port, empty (no persistence): the same replicas limit again, from a
    // full budget.
    server.restart();
    let waited = until_checked(&open, &logs).await;
    until_checked(&closed, &logs).await;
    eprintln!("limiting resumed {waited:?} after Redis restarted");
    assert_eq!(spend(&open, CLIENT, &logs).await, QUOTA);
    assert_eq!(spend(&closed, CLIENT, &logs).await, QUOTA);
}
