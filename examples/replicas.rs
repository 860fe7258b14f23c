//! One replica of an API that scales out: run several behind a load balancer, all on one
//! Redis, and a client gets its rate limit once across them, and an event published on any
//! replica reaches the subscribers of every replica.
//!
//! ```sh
//! redis-server --port 6379 --save '' &
//! PORT=8101 REPLICA=r1 cargo run --example replicas --features redis &
//! PORT=8102 REPLICA=r2 cargo run --example replicas --features redis &
//! curl -N localhost:8102/v1/messages &                     # a subscriber on r2
//! curl -d '{"text":"hi"}' -H 'content-type: application/json' localhost:8101/v1/messages
//! ```
//!
//! The environment: `PORT` (default 8101), `REDIS_URL` (default `redis://127.0.0.1:6379/`),
//! `REPLICA` (its name in the answers, default `replica-<port>`), `RATE` (requests per hour per
//! client, default 100), `DRAIN_MS` (below). Routes:
//!
//! - `GET /metrics`: the replica's metrics in Prometheus's format, for Prometheus to scrape
//!   (`strata::Metrics`): requests by route template, method and status, their durations,
//!   refusals by reason (a `429` of the rate limit is `too_many_requests`). The probes and the
//!   exposition are not counted, and not rate-limited.
//! - `GET /health/ready`: the load balancer's check: 200 while the replica serves, 503 from the
//!   moment its shutdown starts; it keeps serving for `DRAIN_MS` (default 1,000) more, so the
//!   balancer stops sending it requests before it stops accepting them (`strata::Health`).
//!   `GET /health/live`: 200 while the process serves.
//! - `GET /v1/hello`: which replica answered; `RATE` requests per hour per client address, the
//!   budget in Redis. Behind a proxy on 127.0.0.0/8 (haproxy with `option forwardfor`), the
//!   client is the address in `X-Forwarded-For`. Redis down: the requests go through (the
//!   limiter's default policy, fail open, logged once per 10 s).
//! - `POST /v1/messages` `{"text": ".."}`: publishes the message to every replica's
//!   subscribers; its event id.
//! - `GET /v1/messages`: the messages as server-sent events, resumed after `Last-Event-ID`
//!   from Redis's replay window (the last 1,024 events of 5 minutes), on any replica; a client
//!   that missed events gets `reload`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use strata::Routing;
use strata::events::Emitter;
use strata::server::LogColor;
use strata::server::LoggerOptions;

use strata::events::{Broadcaster, Topic};
use strata::prelude::*;
use strata::ratelimit::{HeadersOn, Key, Quota, RateLimit, TrustedProxies};
use strata::redis::{RedisBroadcaster, RedisRateLimitStore};
use strata::{Config, Health, Level, Metrics, Server};

/// The events of `GET /v1/messages`.
#[strata::model(output)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Message {
    /// A message, published on some replica.
    Posted {
        #[garde(length(chars, min = 1, max = 1000))]
        text: String,
    },
    /// The client missed messages (outside the replay window): it reloads.
    Reload,
}

#[strata::model(input)]
struct Post {
    /// The message.
    #[garde(length(chars, min = 1, max = 1000))]
    text: String,
}

#[strata::model(output)]
struct Published {
    /// The event's id (its `id:` in the stream).
    id: String,
}

#[strata::model(output)]
struct Hello {
    /// The replica that answered.
    replica: String,
}

/// A replica's routing on the Redis at `redis_url`: `name` in its answers, `per_hour` requests
/// per hour per client. Connects to Redis lazily: a replica starts while Redis is down.
pub(crate) fn replica_routing(
    redis_url: &str,
    name: &str,
    per_hour: u32,
) -> Result<Routing, Box<dyn std::error::Error>> {
    let bus: Arc<dyn Broadcaster> = Arc::new(RedisBroadcaster::connect_lazy(redis_url)?);
    let messages = Topic::<Message>::new(bus, "messages");
    let client = Key::client_addr().trust(TrustedProxies::networks(["127.0.0.0/8"])?);
    let limited = default_endpoints_factory().add_middleware(
        RateLimit::new(Quota::per_hour(per_hour), client)
            .store(RedisRateLimitStore::connect_lazy(redis_url)?)
            // Every answer shows the client's budget (and a test reads it to tell that Redis
            // answered).
            .headers(HeadersOn::EveryResponse)
            .middleware(),
    );
    let name = name.to_owned();
    let hello = limited
        .get()
        .short_description("Says which replica answered")
        .handler_without_input(move || {
            let replica = name.clone();
            async move { Ok(Hello { replica }) }
        });
    let publisher = messages.clone();
    let post = default_endpoints_factory()
        .post()
        .short_description("Publishes a message to every replica's subscribers")
        .handler(move |input: Post| {
            let messages = publisher.clone();
            async move {
                let id = messages
                    .publish(&Message::Posted { text: input.text })
                    .await
                    .map_err(|error| ApiError::internal(error.to_string()))?;
                Ok(Published { id: id.to_string() })
            }
        });
    let subscribe = default_endpoints_factory()
        .get()
        .short_description("The messages as they are published, on any replica")
        .event_stream_without_input(move |emitter: Emitter<Message>| {
            let messages = messages.clone();
            async move {
                emitter
                    .relay(&messages, |_gap| Some(Message::Reload))
                    .await?;
                Ok(())
            }
        });
    Ok(routing! {
        "v1" => {
            "hello" => hello,
            "messages" => { "get" => subscribe, "post" => post },
        }
    })
}

/// The configuration of a replica on `127.0.0.1:port`, with its health probes (readiness 503
/// and `drain` more of serving once its shutdown starts) and its metrics at `/metrics`.
pub(crate) fn replica_config(port: u16, drain: Duration) -> Config {
    create_config()
        .cors(Cors::Disabled)
        .listen(SocketAddr::from(([127, 0, 0, 1], port)))
        .logger(LoggerOptions::new(Level::Warn).color(LogColor::Never))
        .health(Health::new().drain_delay(drain))
        .metrics(Metrics::new())
        .build()
}

/// A replica serving on `127.0.0.1:port` (0: any free port), draining for `drain` when shut
/// down.
pub(crate) async fn start_replica(
    port: u16,
    redis_url: &str,
    name: &str,
    per_hour: u32,
    drain: Duration,
) -> Result<Server, Box<dyn std::error::Error>> {
    let routing = replica_routing(redis_url, name, per_hour)?;
    Ok(create_server(&replica_config(port, drain), &routing).await?)
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> Result<T, String> {
    match std::env::var(name) {
        Ok(text) => text
            .parse()
            .map_err(|_| format!("{name}={text:?} is not valid")),
        Err(_) => Ok(default),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = env_or("PORT", 8101_u16)?;
    let redis_url = env_or("REDIS_URL", "redis://127.0.0.1:6379/".to_owned())?;
    let name = env_or("REPLICA", format!("replica-{port}"))?;
    let per_hour = env_or("RATE", 100_u32)?;
    let drain = Duration::from_millis(env_or("DRAIN_MS", 1_000_u64)?);
    start_replica(port, &redis_url, &name, per_hour, drain)
        .await?
        .run()
        .await;
    Ok(())
}
