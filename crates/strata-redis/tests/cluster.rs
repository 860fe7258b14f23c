//! The broadcaster and the rate-limit store on a real three-node Redis Cluster (Debian's
//! redis-server in cluster mode, joined by `redis-cli --cluster create`): every script touches
//! one slot (a topic's keys share its hash tag), so none fails with `CROSSSLOT`, and the
//! topics and clients spread over the nodes.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod support;

use std::time::Duration;

use strata_events::{Broadcaster, BusEvent, Delivery, Received, Subscription};
use strata_ratelimit::{Quota, RateLimitKey, RateLimitStore};
use strata_redis::{RedisBroadcaster, RedisRateLimitStore};
use support::RedisCluster;

const TOPICS: usize = 12;

async fn broadcaster(cluster: &RedisCluster) -> RedisBroadcaster {
    let urls = cluster.urls();
    RedisBroadcaster::connect_cluster(urls.iter().map(String::as_str))
        .await
        .unwrap()
        .timeout(Duration::from_secs(1))
}

async fn next(subscription: &mut Subscription, n: usize) -> Vec<String> {
    let mut seen = Vec::new();
    while seen.len() < n {
        let delivery = tokio::time::timeout(Duration::from_secs(5), subscription.next())
            .await
            .unwrap_or_else(|_| panic!("nothing within 5 s after {seen:?}"));
        match delivery {
            Some(Ok(Delivery::Event(Received { event, .. }))) => {
                seen.push(event.data().to_owned());
            }
            other => panic!("{other:?} after {seen:?}"),
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_and_limits_work_on_a_three_node_cluster() {
    let Some(cluster) = RedisCluster::start("events_and_limits_work_on_a_three_node_cluster")
    else {
        return;
    };
    let a = broadcaster(&cluster).await;
    let b = broadcaster(&cluster).await;
    let topics: Vec<String> = (0..TOPICS).map(|n| format!("topic-{n}")).collect();
    let mut subscriptions = Vec::new();
    for topic in &topics {
        subscriptions.push(b.subscribe(topic, None).await.unwrap());
    }
    let mut first_ids = Vec::new();
    for topic in &topics {
        for n in 0..3 {
            let event = BusEvent::from_parts("count", &format!("{topic}:{n}")).unwrap();
            let id = a.publish(topic, event).await.unwrap();
            if n == 0 {
                first_ids.push(id.to_string());
            }
        }
    }
    for (topic, subscription) in topics.iter().zip(&mut subscriptions) {
        let expected: Vec<String> = (0..3).map(|n| format!("{topic}:{n}")).collect();
        assert_eq!(next(subscription, 3).await, expected);
    }
    // A replica that never read these topics resumes from Redis (the replay script).
    let c = broadcaster(&cluster).await;
    for (topic, first) in topics.iter().zip(&first_ids) {
        let mut resumed = c.subscribe(topic, Some(first)).await.unwrap();
        let expected: Vec<String> = (1..3).map(|n| format!("{topic}:{n}")).collect();
        assert_eq!(next(&mut resumed, 2).await, expected);
    }
    // The topics live on more than one node.
    let holding = cluster
        .nodes
        .iter()
        .filter(|node| node.dbsize() > 0)
        .count();
    assert!(holding >= 2, "all the topics on {holding} node");

    // The store: each client gets its quota of 3, then is refused, wherever its key lives.
    let urls = cluster.urls();
    let store = RedisRateLimitStore::connect_cluster(urls.iter().map(String::as_str))
        .await
        .unwrap()
        .prefix("limits:")
        .timeout(Duration::from_secs(1));
    let gcra = Quota::per_minute(3).gcra();
    for client in 0..TOPICS {
        let key = RateLimitKey::Addr([192, 0, 2, u8::try_from(client).unwrap()].into());
        let mut granted = 0;
        for _ in 0..4 {
            if store.check(&key, gcra, 0).await.unwrap().allowed {
                granted += 1;
            }
        }
        assert_eq!(granted, 3, "client {client}");
    }
}
