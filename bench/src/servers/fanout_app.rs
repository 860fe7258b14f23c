//! The servers of `strata-bench fanout`: `GET /v1/quotes`, a server-sent event stream relaying
//! one topic that a task of the server publishes to at full speed while anyone listens.
//!
//! Every event is `event: quote`, `id: <instance>-1-<n>`, `data: {"seq":n,"symbol":"STRA",
//! "cents":…}` (n counts the published events from 1; `instance` is 8 hex digits drawn at
//! start; 1 is the topic, the first the broadcaster made), the same bytes from both servers.
//!
//! - **Strata**: an endpoint whose handler returns `EventStream::relay` of a `Topic` of a
//!   `MemoryBroadcaster` (a replay window of the last [`WINDOW`] events), which the response
//!   body reads alone; a subscriber that falls behind the window skips what it missed (no gap
//!   event).
//! - **axum**: `Sse` over a `tokio::sync::broadcast` receiver (capacity [`WINDOW`]), each event
//!   built with `Event::event`, `id` and `data`; a lagging receiver skips what it missed.
//!
//! The publisher: while at least one subscriber is connected, publish the next event, as fast
//! as tokio's cooperative budget lets it (`consume_budget`: after 128 events it goes to the back
//! of the run queue, so the subscribers' tasks run between two bursts on the server's one
//! worker; `yield_now` would wait for the driver, about a millisecond here, each event); with
//! none, check again every millisecond. It publishes nothing before the first subscriber, so an
//! idle server uses no CPU.

use std::hash::{BuildHasher, Hasher};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use strata::server::LogColor;
use strata::server::LoggerOptions;
use strata::{Config, Mode, Routing};

use garde::Validate;
use schemars::JsonSchema;
use serde::Serialize;
use strata::Level;
use strata::events::{
    Broadcaster, EventStream, EventStreamOptions, MemoryBroadcaster, ReplayWindow, Topic,
    last_event_id,
};
use strata::prelude::*;

/// The replay window of Strata's broadcaster and the capacity of axum's channel.
pub(crate) const WINDOW: usize = 1024;
/// The path of the stream.
pub(crate) const PATH: &str = "/v1/quotes";

/// An event's data.
#[derive(Debug, Clone, Serialize, Validate, JsonSchema)]
pub(crate) struct Quote {
    // In alphabetical order: Strata writes an event's data through `serde_json::Value`, whose
    // map sorts its keys; axum's channel carries `serde_json::to_string`'s, in field order.
    // So the bytes are the same.
    #[garde(skip)]
    pub(crate) cents: u64,
    #[garde(skip)]
    pub(crate) seq: u64,
    #[garde(skip)]
    pub(crate) symbol: String,
}

impl Quote {
    /// The `seq`th quote.
    pub(crate) fn nth(seq: u64) -> Self {
        Self {
            seq,
            symbol: "STRA".to_owned(),
            cents: 10_000 + seq % 500,
        }
    }

    /// The `seq`th quote's data, as both servers send it.
    pub(crate) fn data(seq: u64) -> String {
        format!(
            r#"{{"cents":{},"seq":{seq},"symbol":"STRA"}}"#,
            10_000 + seq % 500
        )
    }
}

/// Strata's events: one kind, `quote`.
#[derive(Debug, Clone, Serialize, Validate, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Market {
    Quote(#[garde(dive)] Quote),
}

/// How many subscribers are connected: the publisher runs while there is one.
#[derive(Debug, Default)]
pub(crate) struct Subscribers(AtomicUsize);

/// One subscriber, counted while it lives.
pub(crate) struct Subscribed(Arc<Subscribers>);

impl Subscribers {
    pub(crate) fn join(self: &Arc<Self>) -> Subscribed {
        self.0.fetch_add(1, Ordering::Relaxed);
        Subscribed(Arc::clone(self))
    }

    fn count(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

impl Drop for Subscribed {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Publishes event 1, 2, … with `publish` while anyone is subscribed, yielding after each.
async fn publisher<F, Fut>(subscribers: Arc<Subscribers>, mut publish: F)
where
    F: FnMut(u64) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut seq = 0;
    loop {
        if subscribers.count() == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
            continue;
        }
        seq += 1;
        publish(seq).await;
        tokio::task::coop::consume_budget().await;
    }
}

// --- Strata ---

/// Strata's routing (`GET /v1/quotes`) and its publisher, to be spawned on the server's
/// runtime.
pub(crate) fn strata_routing() -> (Routing, impl Future<Output = ()> + Send + 'static) {
    let bus: Arc<dyn Broadcaster> = Arc::new(MemoryBroadcaster::new(ReplayWindow::last(WINDOW)));
    let topic = Topic::<Market>::new(bus, "quotes");
    let subscribers = Arc::new(Subscribers::default());
    let relayed = topic.clone();
    let counted = Arc::clone(&subscribers);
    let quotes = default_endpoints_factory().get().handler_without_input(
        move |request: http::request::Parts| {
            let topic = relayed.clone();
            let subscribed = counted.join();
            async move {
                let last = last_event_id(&request.headers);
                let stream = EventStream::relay(EventStreamOptions::default(), &topic, last, {
                    // Counted while the body relays: the gap closure lives as long.
                    move |_gap| {
                        let _ = &subscribed;
                        None
                    }
                })
                .await?;
                Ok(stream)
            }
        },
    );
    let publishing = publisher(subscribers, move |seq| {
        let topic = topic.clone();
        async move {
            // The only error is a quote breaking its rules, which it has none of.
            let _ = topic.publish(&Market::Quote(Quote::nth(seq))).await;
        }
    });
    (routing! { "v1" => { "quotes" => quotes } }, publishing)
}

/// Strata's configuration: production, no CORS, the logger at `warn`; every connection may
/// come from one address (all subscribers are on 127.0.0.1, and the default share of one
/// address is a quarter of the cap).
pub(crate) fn strata_config(addr: SocketAddr) -> Config {
    let mut config = create_config()
        .cors(Cors::Disabled)
        .mode(Mode::Production)
        .logger(LoggerOptions::new(Level::Warn).color(LogColor::Never))
        .listen(addr)
        .build();
    config.server.limits.max_connections_per_client = Some(1 << 20);
    config
}

// --- axum ---

/// What axum's publisher sends on the channel: the event's id and data, written once.
#[derive(Debug)]
pub(crate) struct Published {
    id: String,
    data: String,
}

/// 8 hex digits drawn at random, as Strata's memory broadcaster draws its instance.
fn instance() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    format!("{:08x}", hasher.finish() & 0xffff_ffff)
}

/// Aborts its task when dropped.
pub(crate) struct AbortOnDrop(pub(crate) tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[derive(Clone)]
struct AxumState {
    sender: tokio::sync::broadcast::Sender<Arc<Published>>,
    subscribers: Arc<Subscribers>,
}

async fn axum_quotes(
    axum::extract::State(state): axum::extract::State<AxumState>,
) -> axum::response::sse::Sse<
    impl futures_util::Stream<Item = Result<axum::response::sse::Event, std::convert::Infallible>>,
> {
    use tokio::sync::broadcast::error::RecvError;
    let receiver = state.sender.subscribe();
    let subscribed = state.subscribers.join();
    let stream = futures_util::stream::unfold(
        (receiver, subscribed),
        |(mut receiver, subscribed)| async move {
            loop {
                match receiver.recv().await {
                    Ok(published) => {
                        let event = axum::response::sse::Event::default()
                            .event("quote")
                            .id(&published.id)
                            .data(&published.data);
                        return Some((Ok(event), (receiver, subscribed)));
                    }
                    Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return None,
                }
            }
        },
    );
    axum::response::sse::Sse::new(stream)
}

/// Binds `addr`, serves axum's `GET /v1/quotes` on it and spawns its publisher. Call from a
/// tokio runtime.
pub(crate) async fn spawn_axum(
    addr: SocketAddr,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    use axum::serve::ListenerExt;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let listener = listener.tap_io(|stream| {
        let _ = stream.set_nodelay(true);
    });
    let (sender, _) = tokio::sync::broadcast::channel(WINDOW);
    let state = AxumState {
        sender: sender.clone(),
        subscribers: Arc::new(Subscribers::default()),
    };
    let instance = instance();
    let publishing = publisher(Arc::clone(&state.subscribers), move |seq| {
        let published = serde_json::to_string(&Quote::nth(seq)).map(|data| Published {
            // As Strata's memory broadcaster writes it: instance, topic, number.
            id: format!("{instance}-1-{seq}"),
            data,
        });
        if let Ok(published) = published {
            // An error only says nobody listens now.
            let _ = sender.send(Arc::new(published));
        }
        std::future::ready(())
    });
    let app = axum::Router::new()
        .route(PATH, axum::routing::get(axum_quotes))
        .with_state(state)
        .into_make_service();
    let task = tokio::spawn(async move {
        // Stopped with the server's task (`abort` drops this future).
        let _publishing = AbortOnDrop(tokio::spawn(publishing));
        let _ = axum::serve(listener, app).await;
    });
    Ok((addr, task))
}
