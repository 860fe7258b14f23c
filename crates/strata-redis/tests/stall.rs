//! A Redis stalled (SIGSTOP) under a publisher: each publication made meanwhile either reports
//! a failure and is never delivered, or succeeds and is delivered once; none is applied when
//! Redis wakes (SIGCONT) with the calls still in its sockets.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod support;

use std::time::Duration;

use strata_events::{Broadcaster, BusEvent, Delivery, Received};
use strata_redis::RedisBroadcaster;
use support::RedisServer;

fn count(n: usize) -> BusEvent {
    BusEvent::from_parts("count", &n.to_string()).unwrap()
}

/// Publishes `n` until it succeeds (Redis is back), asking every 50 ms for at most 10 s.
async fn publish_until_ok(bus: &RedisBroadcaster, n: usize) -> String {
    for _ in 0..200 {
        if let Ok(id) = bus.publish("stall", count(n)).await {
            return id.to_string();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no publication succeeded within 10 s of SIGCONT");
}

/// What a client resuming after `after` gets, up to the event whose data is `last`.
async fn delivered(bus: &RedisBroadcaster, after: &str, last: &str) -> Vec<String> {
    let mut subscription = bus.subscribe("stall", Some(after)).await.unwrap();
    let mut seen = Vec::new();
    loop {
        let delivery = tokio::time::timeout(Duration::from_secs(5), subscription.next())
            .await
            .unwrap_or_else(|_| panic!("nothing within 5 s after {seen:?}"));
        match delivery {
            Some(Ok(Delivery::Event(Received { event, .. }))) => {
                seen.push(event.data().to_owned());
                if event.data() == last {
                    return seen;
                }
            }
            other => panic!("{other:?} after {seen:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publication_during_a_stall_happens_once_or_reports_failure() {
    let Some(server) =
        RedisServer::start("a_publication_during_a_stall_happens_once_or_reports_failure")
    else {
        return;
    };
    let bus = RedisBroadcaster::connect(&server.url())
        .await
        .unwrap()
        .timeout(Duration::from_millis(200));
    let first = bus.publish("stall", count(0)).await.unwrap().to_string();

    server.pause();
    // Each call is written to the stalled server's socket and given up after 200 ms.
    let mut succeeded = Vec::new();
    for n in 1..=5 {
        if bus.publish("stall", count(n)).await.is_ok() {
            succeeded.push(n.to_string());
        }
    }
    assert!(
        succeeded.is_empty(),
        "a stalled Redis answered {succeeded:?}"
    );
    server.resume();

    // Published after the stalled calls were read (they were in the socket before SIGCONT).
    let marker = publish_until_ok(&bus, 6).await;
    assert!(marker > first);
    // Only what succeeded, once: none of the five the publisher was told failed.
    assert_eq!(delivered(&bus, &first, "6").await, ["6"]);
}

/// The publication script itself: run twice with one token it publishes once (the same
/// answer); run after its deadline it refuses and changes nothing.
#[test]
fn the_publication_script_cannot_apply_twice_nor_late() {
    let Some(server) = RedisServer::start("the_publication_script_cannot_apply_twice_nor_late")
    else {
        return;
    };
    let script = redis::Script::new(include_str!("../src/publish.lua"));
    let client = redis::Client::open(server.url()).unwrap();
    let mut connection = client.get_connection().unwrap();
    let now: (String, String) = redis::cmd("TIME").query(&mut connection).unwrap();
    let now_ms = now.0.parse::<i64>().unwrap() * 1000 + now.1.parse::<i64>().unwrap() / 1000;
    let run = |connection: &mut redis::Connection, token: &str, deadline: i64| {
        script
            .key("s:{t:x}")
            .key("s:{t:x}:e")
            .key(format!("s:{{t:x}}:p:{token}"))
            .arg(10)
            .arg(0)
            .arg("epoch1")
            .arg("count")
            .arg("1")
            .arg(deadline)
            .invoke::<(String, String, i64)>(connection)
    };
    let once = run(&mut connection, "a", now_ms + 60_000).unwrap();
    let again = run(&mut connection, "a", now_ms + 60_000).unwrap();
    assert_eq!((&once.0, &once.1), (&again.0, &again.1));
    let length: usize = server.query(redis::cmd("XLEN").arg("s:{t:x}"));
    assert_eq!(length, 1);
    // The token is kept about until the deadline, not forever.
    let ttl: i64 = server.query(redis::cmd("PTTL").arg("s:{t:x}:p:a"));
    assert!(ttl > 0 && ttl <= 61_000, "{ttl}");

    let late = run(&mut connection, "b", now_ms - 1).unwrap_err();
    assert_eq!(late.code(), Some("STRATA_LATE"), "{late}");
    let length: usize = server.query(redis::cmd("XLEN").arg("s:{t:x}"));
    assert_eq!(length, 1);
}
