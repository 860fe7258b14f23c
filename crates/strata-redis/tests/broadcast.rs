//! The Redis broadcaster with two "replicas" (two broadcasters, each with its own connections)
//! on one real redis-server: events published on one reach the subscribers of the other in
//! order, a subscriber resumes on the other replica without a gap, a resume from outside the
//! window or from before a Redis restart is told so, and a Redis restart ends the
//! subscriptions cleanly and is recovered from without new broadcasters.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod support;

use std::sync::Arc;
use std::time::Duration;

use strata_events::{Broadcaster, BusEvent, Delivery, Gap, Received, ReplayWindow, Subscription};
use strata_redis::RedisBroadcaster;
use support::RedisServer;

async fn replica(server: &RedisServer, window: ReplayWindow) -> Arc<dyn Broadcaster> {
    Arc::new(
        RedisBroadcaster::connect(&server.url())
            .await
            .unwrap()
            .window(window)
            .timeout(Duration::from_millis(500)),
    )
}

fn count(n: usize) -> BusEvent {
    BusEvent::from_parts("count", &n.to_string()).unwrap()
}

/// The next `n` deliveries: events as (id, data), gaps as `gap`.
async fn next(subscription: &mut Subscription, n: usize) -> Vec<(String, String)> {
    let mut seen = Vec::with_capacity(n);
    while seen.len() < n {
        let delivery = tokio::time::timeout(Duration::from_secs(5), subscription.next())
            .await
            .unwrap_or_else(|_| panic!("nothing within 5 s after {seen:?}"));
        match delivery {
            Some(Ok(Delivery::Event(Received { id, event }))) => {
                seen.push((id.to_string(), event.data().to_owned()));
            }
            Some(Ok(Delivery::Gap(Gap::OutsideWindow { .. }))) => {
                seen.push(("gap".to_owned(), String::new()));
            }
            other => panic!("{other:?} after {seen:?}"),
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_cross_replicas_in_order_and_resume_on_another() {
    let Some(server) = RedisServer::start("events_cross_replicas_in_order_and_resume_on_another")
    else {
        return;
    };
    let a = replica(&server, ReplayWindow::last(100)).await;
    let b = replica(&server, ReplayWindow::last(100)).await;
    // 20 subscribers on b, 20 on a, reading as the events come.
    let mut subscribers = Vec::new();
    for i in 0..40 {
        let on = if i % 2 == 0 { &b } else { &a };
        let mut subscription = on.subscribe("feed", None).await.unwrap();
        subscribers.push(tokio::spawn(
            async move { next(&mut subscription, 200).await },
        ));
    }
    let mut ids = Vec::new();
    for n in 0..200 {
        ids.push(a.publish("feed", count(n)).await.unwrap().to_string());
    }
    let expected: Vec<(String, String)> = ids
        .iter()
        .enumerate()
        .map(|(n, id)| (id.clone(), n.to_string()))
        .collect();
    for subscriber in subscribers {
        assert_eq!(subscriber.await.unwrap(), expected);
    }

    // A client of a resumes on b after the 180th: the 20 after it, from Redis (b's fan-out
    // has them too, from its reader), then live ones.
    let mut resumed = b.subscribe("feed", Some(&ids[179])).await.unwrap();
    assert_eq!(next(&mut resumed, 20).await, expected[180..]);
    let live = b.publish("feed", count(200)).await.unwrap().to_string();
    assert_eq!(
        next(&mut resumed, 1).await,
        [(live.clone(), "200".to_owned())]
    );

    // A topic nobody on c reads yet: c's first subscriber resumes from Redis.
    let c = replica(&server, ReplayWindow::last(100)).await;
    let mut fresh = c.subscribe("feed", Some(&ids[189])).await.unwrap();
    let mut tail: Vec<_> = expected[190..].to_vec();
    tail.push((live, "200".to_owned()));
    assert_eq!(next(&mut fresh, 11).await, tail);

    // Outside the window of 100 (the 100th is gone): a gap, then the 100 kept.
    let mut late = c.subscribe("feed", Some(&ids[99])).await.unwrap();
    let kept = next(&mut late, 101).await;
    assert_eq!(kept[0].0, "gap");
    assert_eq!(kept[1].1, "101");
    assert_eq!(kept[100].1, "200");
    // Not an id of ours: a gap too.
    let mut unknown = c.subscribe("feed", Some("whatever")).await.unwrap();
    assert_eq!(next(&mut unknown, 1).await[0].0, "gap");

    // Redis keeps the window, not more.
    let length: usize = server.query(redis::cmd("XLEN").arg("strata:ev:{t:feed}"));
    assert_eq!(length, 100);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_restart_ends_streams_cleanly_and_is_recovered_from() {
    let Some(mut server) =
        RedisServer::start("a_redis_restart_ends_streams_cleanly_and_is_recovered_from")
    else {
        return;
    };
    let a = replica(&server, ReplayWindow::default()).await;
    let b = replica(&server, ReplayWindow::default()).await;
    let mut subscription = b.subscribe("feed", None).await.unwrap();
    let before = a.publish("feed", count(1)).await.unwrap().to_string();
    assert_eq!(next(&mut subscription, 1).await[0].1, "1");

    server.stop();
    // The reader's connection fails: the subscription ends cleanly.
    let ended = tokio::time::timeout(Duration::from_secs(5), subscription.next())
        .await
        .unwrap();
    assert!(ended.is_none(), "{ended:?}");
    // Meanwhile publishing and subscribing fail, within the timeout.
    assert!(a.publish("feed", count(2)).await.is_err());
    assert!(b.subscribe("feed", Some(&before)).await.is_err());

    server.restart();
    // Back without restarting anything (the connection manager reconnects within ~1 s): asked
    // every 100 ms, 10 s at most.
    let mut resumed = None;
    for _ in 0..100 {
        if let Ok(subscription) = b.subscribe("feed", Some(&before)).await {
            resumed = Some(subscription);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut resumed = resumed.expect("subscribed again within 10 s");
    let mut published = None;
    for _ in 0..100 {
        if let Ok(id) = a.publish("feed", count(3)).await {
            published = Some(id.to_string());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let published = published.expect("published again within 10 s");
    // The restarted Redis lost the stream (no persistence): the resumed client is told, then
    // gets what is new.
    let deliveries = next(&mut resumed, 2).await;
    assert_eq!(deliveries[0].0, "gap");
    assert_eq!(deliveries[1], (published.clone(), "3".to_owned()));
    // A new epoch: the ids of before and after differ in it.
    assert_ne!(before.split('-').next(), published.split('-').next());
}
