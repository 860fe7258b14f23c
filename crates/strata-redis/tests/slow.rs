//! A Redis that does not answer (paused with SIGSTOP: connections open, nothing read): the
//! first call gives up at the store's timeout, the next ones at once, and the failure policy
//! decides; when Redis goes on, the same connection serves again.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use http::StatusCode;
use strata_ratelimit::{FailPolicy, Quota};
use strata_redis::RedisRateLimitStore;
use support::RedisServer;
use support::app::{Logs, get, replica};

#[tokio::test]
async fn a_silent_redis_times_out_at_the_configured_timeout() {
    let Some(server) = RedisServer::start("a_silent_redis_times_out_at_the_configured_timeout")
    else {
        return;
    };
    let store = RedisRateLimitStore::connect(&server.url())
        .await
        .unwrap()
        .timeout(Duration::from_millis(100));
    let open = replica(store.clone(), Quota::per_minute(5), FailPolicy::Open);
    let closed = replica(
        store.prefix("closed:"),
        Quota::per_minute(5),
        FailPolicy::Closed,
    );
    let logs = Arc::new(Logs::default());
    assert!(get(&open, [192, 0, 2, 1], &logs).await.checked);

    server.pause();
    let mut slowest = Duration::ZERO;
    for _ in 0..5 {
        let started = Instant::now();
        let answer = get(&open, [192, 0, 2, 1], &logs).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert!(!answer.checked);
        let answer = get(&closed, [192, 0, 2, 1], &logs).await;
        assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
        slowest = slowest.max(started.elapsed());
    }
    // The first call waited its 100 ms: never sooner, measured from before it, however slow
    // the machine (that it gave up at this timeout, not at a later one, the store's log line
    // says); the next ones were decided at once, Redis being known down (tests/down.rs).
    assert!(slowest >= Duration::from_millis(100), "{slowest:?}");
    // One line about the store, one about the 503s: not one per request.
    let lines = logs.lines();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].contains("Redis did not answer within 100 ms"),
        "{lines:?}"
    );

    server.resume();
    // The probe finds Redis back (asked every 50 ms, 10 s at most); the call that timed out
    // reached Redis late, and was recorded then: another client.
    for _ in 0..200 {
        let answer = get(&open, [192, 0, 2, 9], &logs).await;
        assert_eq!(answer.status, StatusCode::OK);
        if answer.checked {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("Redis not used again within 10 s of SIGCONT");
}
