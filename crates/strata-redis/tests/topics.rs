//! Many topics, few connections: a replica reads up to 256 topics on one connection (one
//! `XREAD BLOCK` over their streams), so 1,000 topics with subscribers take a handful of
//! Redis connections, not 1,000; and each of them still gets its events.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod support;

use std::time::Duration;

use strata_events::{Broadcaster, BusEvent, Delivery, Received};
use strata_redis::RedisBroadcaster;
use support::RedisServer;

const TOPICS: usize = 1_000;

/// The server's client connections (`CLIENT LIST`, one line each), this query's included.
fn connections(server: &RedisServer) -> usize {
    let list: String = server.query(redis::cmd("CLIENT").arg("LIST"));
    list.lines().count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_topics_take_a_few_connections() {
    let Some(server) = RedisServer::start("a_thousand_topics_take_a_few_connections") else {
        return;
    };
    let before = connections(&server);
    let replica = RedisBroadcaster::connect(&server.url()).await.unwrap();
    let publisher = RedisBroadcaster::connect(&server.url()).await.unwrap();
    let mut subscriptions = Vec::new();
    for n in 0..TOPICS {
        subscriptions.push(replica.subscribe(&format!("t{n}"), None).await.unwrap());
    }
    // Every topic gets its own event, published after all subscribed.
    for n in 0..TOPICS {
        let event = BusEvent::from_parts("n", &n.to_string()).unwrap();
        publisher.publish(&format!("t{n}"), event).await.unwrap();
    }
    for (n, subscription) in subscriptions.iter_mut().enumerate() {
        let delivery = tokio::time::timeout(Duration::from_secs(10), subscription.next())
            .await
            .unwrap_or_else(|_| panic!("topic {n}: nothing within 10 s"));
        match delivery {
            Some(Ok(Delivery::Event(Received { event, .. }))) => {
                assert_eq!(event.data(), n.to_string());
            }
            other => panic!("topic {n}: {other:?}"),
        }
    }
    // The two broadcasters' shared connections and ceil(1000 / 256) = 4 readers.
    let used = connections(&server) - before;
    assert!(used <= 6, "{used} connections for {TOPICS} topics");
    // A topic subscribed to now is read at once (it joins a group blocked in XREAD).
    let mut late = replica.subscribe("late", None).await.unwrap();
    let event = BusEvent::from_parts("n", "late").unwrap();
    publisher.publish("late", event).await.unwrap();
    let delivery = tokio::time::timeout(Duration::from_secs(10), late.next())
        .await
        .unwrap();
    assert!(
        matches!(delivery, Some(Ok(Delivery::Event(_)))),
        "{delivery:?}"
    );
    // Joining topics woke their reader rather than waiting out its block.
    let stats: String = server.query(redis::cmd("INFO").arg("commandstats"));
    assert!(stats.contains("cmdstat_client|unblock:calls="), "{stats}");
}
