//! Events published to a topic and relayed to its subscribers: the seam between event streams
//! and whatever carries events between tasks and replicas.
//!
//! A [`Broadcaster`] publishes an event to a topic and subscribes to a topic from a
//! `Last-Event-ID`. It is object-safe (`Arc<dyn Broadcaster>`: pick the backend at startup)
//! and asynchronous (boxed futures and streams: a network backend, Redis pub/sub or Redis
//! streams, fits as well as the in-memory [`MemoryBroadcaster`], the default).
//!
//! What every implementation promises:
//!
//! - **Order.** A subscriber receives the events of one publisher in the order they were
//!   published (the memory broadcaster orders all the events of a topic).
//! - **Ids.** [`Broadcaster::publish`] gives each event an id, unique in its topic and in the
//!   order of delivery, which the relay sends as the event's `id:`; a reconnecting client
//!   sends it back as `Last-Event-ID`.
//! - **Replay window.** Subscribing after an id delivers exactly the events published after
//!   it, while they are within the broadcaster's bounded replay window (last N events or T
//!   seconds per topic, [`ReplayWindow`]). When they are not, or the id is unknown (another
//!   topic's, or from before a restart), the subscription starts with
//!   [`Delivery::Gap`]`(`[`Gap::OutsideWindow`]`)` and then delivers the whole window that is
//!   left and the live events: the client learns that it may have missed some.
//! - **Bounded memory.** A slow subscriber never grows memory without bound: it falls behind
//!   the window and gets [`Gap::Lagged`] with the count it missed, then goes on from the
//!   oldest event kept. (The memory broadcaster keeps one window per topic, shared by its
//!   subscribers, each of which holds only its place in it.)
//! - **Errors.** A backend that fails reports it: [`BroadcastError::Backend`] from `publish`
//!   or `subscribe`, or as an item of the subscription, after which the subscription may go on
//!   (a backend that reconnects) or end. The relay ends the event stream cleanly on it, so the
//!   client reconnects with its `Last-Event-ID` (to another replica, perhaps).
//!
//! A [`Topic`] is the typed handle: it checks events with their garde rules when published,
//! and an event-stream handler relays it with [`Emitter::relay`](crate::Emitter::relay),
//! turning a gap into one of its own events (so the gap is a documented event of the stream).
//!
//! ```
//! use std::sync::Arc;
//! use garde::Validate;
//! use schemars::JsonSchema;
//! use serde::Serialize;
//! use strata_events::{Broadcaster, Delivery, Gap, MemoryBroadcaster, ReplayWindow, Topic};
//!
//! #[derive(Serialize, Validate, JsonSchema)]
//! #[serde(rename_all = "camelCase")]
//! #[garde(allow_unvalidated)]
//! enum Price {
//!     Quote { cents: u64 },
//!     /// The client missed quotes: it reloads them.
//!     Reload,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let bus: Arc<dyn Broadcaster> = Arc::new(MemoryBroadcaster::new(ReplayWindow::last(2)));
//! let prices = Topic::<Price>::new(bus, "prices");
//! let first = prices.publish(&Price::Quote { cents: 100 }).await.unwrap();
//! let second = prices.publish(&Price::Quote { cents: 101 }).await.unwrap();
//! prices.publish(&Price::Quote { cents: 102 }).await.unwrap();
//! prices.publish(&Price::Quote { cents: 103 }).await.unwrap();
//!
//! // Resumed after the second: exactly the two after it (the window holds them).
//! let mut resumed = prices.subscribe(Some(&second)).await.unwrap();
//! let Some(Ok(Delivery::Event(third))) = resumed.next().await else { panic!() };
//! assert_eq!(third.event.data(), r#"{"cents":102}"#);
//! let Some(Ok(Delivery::Event(fourth))) = resumed.next().await else { panic!() };
//! assert_eq!(fourth.event.data(), r#"{"cents":103}"#);
//!
//! // Resumed after the first: the second has left the window of two, so a gap, then what
//! // is left.
//! let mut late = prices.subscribe(Some(&first)).await.unwrap();
//! let Some(Ok(Delivery::Gap(Gap::OutsideWindow { .. }))) = late.next().await else { panic!() };
//! let Some(Ok(Delivery::Event(kept))) = late.next().await else { panic!() };
//! assert_eq!(kept, third);
//! # }
//! ```
//!
//! An event stream relaying a topic: the handler given to [`EventStream::start`] here is what
//! the facade's `event_stream` runs (the handler owns a clone of the `Topic`; any other
//! handler publishes to it).
//!
//! ```
//! # use std::sync::Arc;
//! # use garde::Validate;
//! # use schemars::JsonSchema;
//! # use serde::Serialize;
//! use http_body_util::BodyExt;
//! use strata_events::{Broadcaster, EventStream, EventStreamOptions, MemoryBroadcaster, Topic};
//! use strata_output::{HandlerOutput, RangeHeaders};
//! # #[derive(Serialize, Validate, JsonSchema)]
//! # #[serde(rename_all = "camelCase")]
//! # #[garde(allow_unvalidated)]
//! # enum Price { Quote { cents: u64 }, Reload }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let bus: Arc<dyn Broadcaster> = Arc::new(MemoryBroadcaster::default());
//! let prices = Topic::<Price>::new(bus, "prices");
//! let id = prices.publish(&Price::Quote { cents: 100 }).await.unwrap();
//!
//! // A client reconnecting with an id this broadcaster never gave (another replica's, with
//! // memory broadcasters): it is told to reload, then gets what the window holds.
//! let relayed = prices.clone();
//! let last_event_id = Some("5f3e0c1a-7".to_owned());
//! let stream = EventStream::start(EventStreamOptions::default(), last_event_id, |emitter| {
//!     async move {
//!         // Until the client leaves or the server shuts down.
//!         emitter.relay(&relayed, |_gap| Some(Price::Reload)).await?;
//!         Ok(())
//!     }
//! });
//! let mut output = stream.into_streamed(&RangeHeaders::default()).unwrap();
//! let mut body = output.take_stream().unwrap();
//! let mut frames = Vec::new();
//! while frames.len() < 3 {
//!     let frame = body.frame().await.unwrap().unwrap().into_data().unwrap();
//!     frames.push(String::from_utf8(frame.to_vec()).unwrap());
//! }
//! assert_eq!(frames[0], ""); // the head goes at once
//! assert_eq!(frames[1], "event: reload\ndata: null\n\n");
//! assert_eq!(frames[2], format!("event: quote\nid: {id}\ndata: {{\"cents\":100}}\n\n"));
//! # }
//! ```

use std::collections::VecDeque;
use std::collections::hash_map::RandomState;
use std::fmt;
use std::future::poll_fn;
use std::hash::{BuildHasher, Hasher};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use derive_where::derive_where;
use futures_core::Stream;
use hashlink::LinkedHashMap;
use strata_core::BoxError;
use strata_decode::Decoder;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::ReusableBoxFuture;

use crate::emitter::{EmitError, Emitter, gap_frames, name_and_data};
use crate::stream::{Event, EventStream, EventStreamOptions, Relay};

/// A boxed future of a [`Broadcaster`] (a network call).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// An event as a broadcaster carries it: its name and its data as JSON text, checked when
/// published ([`Topic::publish`]). Cheap to clone (shared text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BusEvent {
    name: Arc<str>,
    data: Arc<str>,
}

impl BusEvent {
    /// The event `event` (an enum variant, as for [`Emitter::emit`]), unchecked: a
    /// [`Topic`] checks its garde rules first.
    ///
    /// # Errors
    /// [`EmitError::NotAnEvent`] when serde does not write an enum variant.
    pub fn encode<E: serde::Serialize>(event: &E) -> Result<Self, EmitError> {
        let (name, data) = name_and_data(event)?;
        Ok(Self {
            name: name.into(),
            data: data.into(),
        })
    }

    /// An event received by a backend, as it was published: `name` and `data` (compact JSON)
    /// as [`BusEvent::name`] and [`BusEvent::data`] gave them.
    ///
    /// # Errors
    /// [`EmitError::NotAnEvent`] when `name` is empty or `data` has a line break (it would
    /// not fit its `event:` and `data:` lines).
    pub fn from_parts(name: &str, data: &str) -> Result<Self, EmitError> {
        if name.is_empty() || name.contains(['\n', '\r', '\0']) {
            return Err(EmitError::NotAnEvent(format!("the name {name:?}")));
        }
        if data.contains(['\n', '\r']) {
            return Err(EmitError::NotAnEvent(
                "data with a line break (not compact JSON)".to_owned(),
            ));
        }
        Ok(Self {
            name: name.into(),
            data: data.into(),
        })
    }

    /// The event's name (its `event:` line).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The event's data, compact JSON (its `data:` line).
    pub fn data(&self) -> &str {
        &self.data
    }
}

/// An event delivered to a subscriber, with the id its broadcaster gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The id: the event's `id:`, and the `Last-Event-ID` to resume after it.
    pub id: Arc<str>,
    /// The event.
    pub event: BusEvent,
}

/// Events a subscriber cannot have: it is told so, once, where they would have been.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Gap {
    /// The `Last-Event-ID` is older than the replay window, or unknown to the broadcaster (of
    /// another topic, or from before the broadcaster restarted): events may be missing. What
    /// the window still holds follows, then the live events.
    OutsideWindow {
        /// The id the subscriber asked to resume after.
        last_event_id: String,
    },
    /// The subscriber read too slowly and fell behind the window: `missed` events are lost
    /// to it. It goes on from the oldest event kept.
    Lagged {
        /// How many events it missed (when the backend knows; 0 otherwise).
        missed: u64,
    },
}

/// What a subscription yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// The next event.
    Event(Received),
    /// Events the subscriber cannot have.
    Gap(Gap),
}

/// Why a broadcaster could not publish or deliver.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BroadcastError {
    /// The event was refused before it was published (its garde rules, or not an event).
    #[error("event not published: {0}")]
    Event(#[from] EmitError),
    /// The backend failed: a connection lost, a timeout.
    #[error("event broadcaster failed: {0}")]
    Backend(#[source] BoxError),
}

impl BroadcastError {
    /// A failure of the backend.
    pub fn backend(error: impl Into<BoxError>) -> Self {
        Self::Backend(error.into())
    }
}

/// The events of one topic for one subscriber: a stream of [`Delivery`] (or errors), ended
/// when the backend ends it. Dropping it unsubscribes.
pub struct Subscription(Pin<Box<dyn Stream<Item = Result<Delivery, BroadcastError>> + Send>>);

impl Subscription {
    /// A subscription reading `stream` (what a backend returns from
    /// [`Broadcaster::subscribe`]).
    pub fn new(
        stream: impl Stream<Item = Result<Delivery, BroadcastError>> + Send + 'static,
    ) -> Self {
        Self(Box::pin(stream))
    }

    /// The next delivery; `None` when the subscription has ended.
    pub async fn next(&mut self) -> Option<Result<Delivery, BroadcastError>> {
        poll_fn(|cx| self.0.as_mut().poll_next(cx)).await
    }
}

impl Stream for Subscription {
    type Item = Result<Delivery, BroadcastError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.as_mut().poll_next(cx)
    }
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Subscription")
    }
}

/// Publishes events to topics and subscribes to them; see the [module docs](self) for what an
/// implementation promises (order per publisher, ids, a bounded replay window with a gap
/// outside it, bounded memory for slow subscribers, errors reported).
pub trait Broadcaster: Send + Sync + 'static {
    /// Publishes `event` to `topic`; resolves to its id once it is accepted (every
    /// subscription made after that point, and every live one, gets it).
    fn publish<'a>(
        &'a self,
        topic: &'a str,
        event: BusEvent,
    ) -> BoxFuture<'a, Result<Arc<str>, BroadcastError>>;

    /// Subscribes to `topic`: the events after `last_event_id` within the replay window (a
    /// [`Gap::OutsideWindow`] first when it is not in it), then the live ones; without one,
    /// the live ones only.
    fn subscribe<'a>(
        &'a self,
        topic: &'a str,
        last_event_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Subscription, BroadcastError>>;
}

/// A topic of events `E` on a broadcaster: what handlers publish to and event streams relay.
/// Cheap to clone.
#[derive_where(Clone, Debug)]
pub struct Topic<E> {
    #[derive_where(skip)]
    broadcaster: Arc<dyn Broadcaster>,
    name: Arc<str>,
    checker: Decoder<E>,
    _events: PhantomData<fn(E)>,
}

impl<E: Event> Topic<E> {
    /// The topic `name` of `broadcaster`.
    pub fn new(broadcaster: Arc<dyn Broadcaster>, name: impl Into<Arc<str>>) -> Self {
        Self {
            broadcaster,
            name: name.into(),
            checker: Decoder::new(),
            _events: PhantomData,
        }
    }

    /// The topic's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Checks `event` with its garde rules and publishes it; resolves to its id.
    ///
    /// # Errors
    /// [`BroadcastError::Event`] when the event breaks its rules (nothing is published),
    /// [`BroadcastError::Backend`] when the broadcaster fails.
    pub async fn publish(&self, event: &E) -> Result<Arc<str>, BroadcastError> {
        self.checker
            .check(event, Some("event"))
            .map_err(EmitError::Invalid)?;
        let event = BusEvent::encode(event)?;
        self.broadcaster.publish(&self.name, event).await
    }

    /// Subscribes to the topic after `last_event_id` ([`Broadcaster::subscribe`]).
    ///
    /// # Errors
    /// [`BroadcastError::Backend`] when the broadcaster fails.
    pub async fn subscribe(
        &self,
        last_event_id: Option<&str>,
    ) -> Result<Subscription, BroadcastError> {
        self.broadcaster.subscribe(&self.name, last_event_id).await
    }
}

impl<E: Event> Emitter<E> {
    /// Relays `topic` to the client: subscribes after the client's `Last-Event-ID`, sends
    /// each event with its id, and a gap as the event `on_gap` makes of it (none: nothing is
    /// sent), until the client leaves or the server shuts down (`Ok`), or the subscription
    /// ends (`Ok`) or fails (the error; returned from the handler it ends the stream cleanly
    /// and is logged, and the client reconnects with its `Last-Event-ID`).
    ///
    /// The response body reads the subscription itself, as the client takes the events: an
    /// event costs no wake-up of the handler's task, which waits until the relay is over.
    /// What the handler emits meanwhile (from another future joined with this one) goes
    /// between the relayed events; dropping this future stops the relay.
    ///
    /// # Errors
    /// The broadcaster's [`BroadcastError::Backend`]; [`BroadcastError::Event`] when the gap's
    /// event breaks its rules.
    pub async fn relay(
        &self,
        topic: &Topic<E>,
        on_gap: impl FnMut(&Gap) -> Option<E> + Send + 'static,
    ) -> Result<(), BroadcastError> {
        let subscription = topic.subscribe(self.last_event_id()).await?;
        self.hand_off(subscription, on_gap).await
    }
}

impl<E: Event> EventStream<E> {
    /// An event stream relaying `topic` to the client, read by the response body itself: no
    /// task and no channel, for an endpoint that does nothing else (a handler started with
    /// [`EventStream::start`] that calls [`Emitter::relay`] does the same, and can emit its own
    /// events besides). It subscribes after `last_event_id` (the request's `Last-Event-ID`:
    /// [`last_event_id`](crate::last_event_id)), sends each event with its id and a gap as the
    /// event `on_gap` makes of it (none: nothing is sent), and ends cleanly when the
    /// subscription ends or fails (the failure logged with the stream's
    /// [`logger`](Self::logger); the client reconnects with its `Last-Event-ID`), or when the
    /// server's graceful shutdown begins.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata_events::{EventStream, EventStreamOptions, MemoryBroadcaster, ReplayWindow, Topic};
    /// # #[derive(serde::Serialize, garde::Validate, schemars::JsonSchema)]
    /// # #[serde(rename_all = "camelCase")]
    /// # #[garde(allow_unvalidated)]
    /// # enum Price { Quote { cents: u64 }, Reload }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let prices = Topic::<Price>::new(
    ///     Arc::new(MemoryBroadcaster::new(ReplayWindow::default())),
    ///     "prices",
    /// );
    /// // In a handler: `last_event_id(&request.headers)` of its request `Parts`.
    /// let stream = EventStream::relay(EventStreamOptions::default(), &prices, None, |_gap| {
    ///     Some(Price::Reload)
    /// })
    /// .await
    /// .unwrap();
    /// # let _ = stream;
    /// # }
    /// ```
    ///
    /// # Errors
    /// The broadcaster's [`BroadcastError::Backend`] when it cannot subscribe.
    pub async fn relay(
        options: EventStreamOptions,
        topic: &Topic<E>,
        last_event_id: Option<&str>,
        on_gap: impl FnMut(&Gap) -> Option<E> + Send + 'static,
    ) -> Result<Self, BroadcastError> {
        let subscription = topic.subscribe(last_event_id).await?;
        Ok(Self::relayed(
            options,
            Relay {
                subscription,
                gap_frame: gap_frames(topic.checker.clone(), on_gap),
                done: None,
            },
        ))
    }
}

/// The replay window of a [`MemoryBroadcaster`], per topic: the last `events` events, none
/// older than `max_age`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayWindow {
    /// The most events kept per topic (at least 1). Default 1,024.
    pub events: usize,
    /// Events older than this are dropped; `None`: kept however old. Default 5 minutes.
    pub max_age: Option<Duration>,
}

impl ReplayWindow {
    /// The last `events` events, however old.
    pub fn last(events: usize) -> Self {
        Self {
            events,
            max_age: None,
        }
    }
}

impl Default for ReplayWindow {
    fn default() -> Self {
        Self {
            events: 1024,
            max_age: Some(Duration::from_secs(300)),
        }
    }
}

/// How many topics a [`MemoryBroadcaster`] (a [`Fanout`]) keeps, and how long it keeps one
/// that nobody uses. With the [`ReplayWindow`] they bound its memory: at most `max_topics`
/// topics of at most `events` events each.
///
/// - **Idle topics expire.** A topic without subscribers (and without a feed) to which
///   nothing was published or subscribed for `idle` is forgotten with its replay window,
///   whatever the window's `max_age` (a [`ReplayWindow::last`] keeps events however old,
///   but not a topic nobody uses). Topics are checked when the broadcaster is used (a
///   publish, a subscribe), from the least recently used, a few at a time: no task runs for
///   it.
/// - **Past `max_topics`,** making a new topic forgets the least recently used topic that no
///   subscriber (or feed) holds, with its replay window. A client resuming from one of its
///   events later is told of the gap ([`Gap::OutsideWindow`]), then gets the live events.
///   Topics that subscribers hold are never forgotten: when they alone fill the bound, new
///   topics are made beyond it, so the count can exceed `max_topics` by the topics that live
///   subscriptions hold (bounded by the server's connections), and by an eighth as many again
///   while the checks move past them (eight per publish or subscribe: no call walks every
///   topic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicLimits {
    /// The most topics kept (at least 1). Default 10,000: with the default window of 1,024
    /// events per topic, at most about ten million events (and their text) across topics.
    pub max_topics: usize,
    /// A topic without subscribers unused for this long is forgotten. Default 5 minutes (the
    /// default window's `max_age`: by then the default window holds nothing).
    pub idle: Duration,
}

impl Default for TopicLimits {
    fn default() -> Self {
        Self {
            max_topics: 10_000,
            idle: Duration::from_secs(300),
        }
    }
}

/// What a [`Fanout`] (a [`MemoryBroadcaster`]) holds now: its topics and the events in their
/// replay windows ([`MemoryBroadcaster::retained`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retained {
    /// Topics kept.
    pub topics: usize,
    /// Events kept across their replay windows.
    pub events: usize,
}

/// The in-memory [`Broadcaster`]: topics within one process (one replica), on a [`Fanout`].
/// Each topic keeps its replay window in a ring shared by its subscribers; a subscriber holds
/// its place in it and is woken when an event is published, so a slow one costs no memory (it
/// falls behind the window: [`Gap::Lagged`]). Ids are `<instance>-<topic>-<n>`, `n` counting
/// the topic's events from 1, `topic` numbering the topics the broadcaster made (a topic
/// forgotten and made again is another), and `instance` drawn at random when the broadcaster
/// is made, so an id of another topic, of a topic forgotten since, from another process or an
/// earlier run is unknown ([`Gap::OutsideWindow`]), never mistaken for another event. Topics
/// without subscribers whose window has emptied (by age), or that
/// nobody used for a while, are forgotten, and at most 10,000 topics are kept: see
/// [`TopicLimits`] ([`MemoryBroadcaster::topic_limits`]) and [`MemoryBroadcaster::retained`].
pub struct MemoryBroadcaster {
    instance: String,
    fanout: Fanout,
}

impl fmt::Debug for MemoryBroadcaster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryBroadcaster")
            .field("window", &self.fanout.window)
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

impl Default for MemoryBroadcaster {
    fn default() -> Self {
        Self::new(ReplayWindow::default())
    }
}

impl MemoryBroadcaster {
    /// A broadcaster keeping `window` per topic.
    pub fn new(window: ReplayWindow) -> Self {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        Self {
            instance: format!("{:08x}", hasher.finish() & 0xffff_ffff),
            fanout: Fanout::new(window),
        }
    }

    /// Keeps topics within `limits` instead of the default ([`TopicLimits::default`]: 10,000
    /// topics, idle ones forgotten after 5 minutes).
    #[must_use]
    pub fn topic_limits(mut self, limits: TopicLimits) -> Self {
        self.fanout = self.fanout.topic_limits(limits);
        self
    }

    /// What it holds now: topics and events ([`Fanout::retained`]).
    pub fn retained(&self) -> Retained {
        self.fanout.retained()
    }

    /// The topic and the event number of `id`, when it is one of this broadcaster's.
    fn number(&self, id: &str) -> Option<(u64, u64)> {
        let (topic, number) = id
            .strip_prefix(self.instance.as_str())?
            .strip_prefix('-')?
            .split_once('-')?;
        Some((topic.parse().ok()?, number.parse().ok()?))
    }
}

impl Broadcaster for MemoryBroadcaster {
    fn publish<'a>(
        &'a self,
        topic: &'a str,
        event: BusEvent,
    ) -> BoxFuture<'a, Result<Arc<str>, BroadcastError>> {
        // The topic's positions are its event numbers.
        let state = self.fanout.topic(topic);
        let id = state.append(
            self.fanout.window,
            |ring| {
                let number = ring.latest + 1;
                (
                    u128::from(number),
                    format!("{}-{}-{number}", self.instance, ring.made).into(),
                )
            },
            event,
        );
        Box::pin(std::future::ready(Ok(id)))
    }

    fn subscribe<'a>(
        &'a self,
        topic: &'a str,
        last_event_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Subscription, BroadcastError>> {
        let subscription = self
            .fanout
            .subscribe_with(topic, |ring| match last_event_id {
                None => (None, Vec::new()),
                Some(id) => match self.number(id) {
                    // Of this topic as it is now, and every event after it is kept.
                    Some((made, number))
                        if made == ring.made
                            && u128::from(number) <= ring.latest_position
                            && u128::from(number) >= ring.floor =>
                    {
                        (Some(u128::from(number)), Vec::new())
                    }
                    _ => (
                        Some(ring.floor),
                        vec![Delivery::Gap(Gap::OutsideWindow {
                            last_event_id: id.to_owned(),
                        })],
                    ),
                },
            });
        Box::pin(std::future::ready(Ok(subscription)))
    }
}

/// One process's share of the topics: each topic's replay window in a ring, and its local
/// subscribers, each holding only its place in the ring. The [`MemoryBroadcaster`] is one;
/// a network broadcaster (Redis) keeps one too, fed by one reader per topic ([`Fanout::feed`]),
/// so that a replica reads each event from the network once however many of its clients
/// subscribe.
///
/// Events have *positions*: numbers increasing within a topic (the memory broadcaster's event
/// numbers; a Redis stream's entry ids), which say where a subscriber resumes. A topic's ring
/// holds every event after its *floor* (the position it was fed from, or of the newest event
/// the window has dropped): a subscriber resuming at or after the floor misses nothing.
///
/// It keeps topics within [`TopicLimits`] (10,000 topics by default, idle ones forgotten
/// after 5 minutes); a topic that a [`Feed`] or a subscription holds is never forgotten.
pub struct Fanout {
    window: ReplayWindow,
    limits: TopicLimits,
    topics: Mutex<Topics>,
}

impl fmt::Debug for Fanout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fanout")
            .field("window", &self.window)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// The topics, least recently used first.
#[derive(Default)]
struct Topics {
    map: LinkedHashMap<Arc<str>, Kept>,
    /// Topics made so far.
    made: u64,
}

struct Kept {
    state: Arc<TopicState>,
    /// When it was last published to or subscribed to (or found held by a subscriber).
    used: Instant,
}

/// Held topics moved past at the front of the list per call: enough for the ones behind them
/// to be reached within a few calls, without a walk over every topic on every call (which,
/// with more held topics than the bound, every publish would do).
const ROTATIONS: usize = 8;

impl Topics {
    /// Forgets topics from the least recently used, while there are more than `keep`, or while
    /// the least recently used one is idle: unused for `limits.idle`, or with nothing left to
    /// replay, or with its feed ended. A topic a subscription or a feed holds is never
    /// forgotten; met at the front, it is moved to the back as used now.
    fn expire(&mut self, window: ReplayWindow, limits: TopicLimits, now: Instant, keep: usize) {
        let mut rotations = 0;
        loop {
            let over = self.map.len() > keep;
            let Some((name, kept)) = self.map.front() else {
                return;
            };
            // The map's own reference alone: nobody subscribes to it or feeds it.
            let held = Arc::strong_count(&kept.state) > 1;
            if held {
                if rotations == ROTATIONS {
                    return;
                }
                rotations += 1;
                let name = Arc::clone(name);
                if let Some(kept) = self.map.to_back(&name) {
                    kept.used = now;
                }
                continue;
            }
            let forget = over || now.duration_since(kept.used) >= limits.idle || {
                let mut ring = kept.state.ring();
                ring.trim(window, now);
                ring.ended || ring.events.is_empty()
            };
            if !forget {
                return;
            }
            self.map.pop_front();
        }
    }
}

struct TopicState {
    ring: Mutex<Ring>,
    /// The number of the latest event: subscribers wait on its changes.
    latest: watch::Sender<u64>,
}

#[derive(Default)]
struct Ring {
    events: VecDeque<Stored>,
    /// The number of the latest event (0: none yet); numbers are consecutive from 1.
    latest: u64,
    /// The position of the latest event (or the floor, before any).
    latest_position: u128,
    /// Every event after this position is in the ring.
    floor: u128,
    /// Fed by [`Fanout::feed`] (not by appending ids of its own).
    fed: bool,
    /// Its feed has ended: subscribers end after what they have.
    ended: bool,
    /// Which of the fan-out's topics it is: they are numbered as they are made, so a topic
    /// forgotten and made again under the same name is told apart (its ids are others).
    made: u64,
}

struct Stored {
    number: u64,
    position: u128,
    at: Instant,
    received: Received,
}

impl Ring {
    /// Drops what is outside `window` at `now`.
    fn trim(&mut self, window: ReplayWindow, now: Instant) {
        while self.events.len() > window.events.max(1) {
            self.drop_oldest();
        }
        if let Some(max_age) = window.max_age {
            while self
                .events
                .front()
                .is_some_and(|oldest| now.duration_since(oldest.at) > max_age)
            {
                self.drop_oldest();
            }
        }
    }

    fn drop_oldest(&mut self) {
        if let Some(oldest) = self.events.pop_front() {
            self.floor = oldest.position;
        }
    }

    /// The number of the oldest event kept (one past the latest when none is).
    fn oldest(&self) -> u64 {
        self.events
            .front()
            .map_or(self.latest + 1, |oldest| oldest.number)
    }

    /// The number of the last event at or before `position` (the one before the oldest kept
    /// when none is).
    fn number_at(&self, position: u128) -> u64 {
        let after = self
            .events
            .iter()
            .rev()
            .find(|stored| stored.position <= position);
        after.map_or(self.oldest() - 1, |stored| stored.number)
    }
}

impl TopicState {
    fn new(floor: u128, made: u64) -> Self {
        Self {
            ring: Mutex::new(Ring {
                floor,
                latest_position: floor,
                made,
                ..Ring::default()
            }),
            latest: watch::Sender::new(0),
        }
    }

    fn ring(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends the event `make` gives (its position, after the latest, and its id); its id.
    fn append(
        &self,
        window: ReplayWindow,
        make: impl FnOnce(&Ring) -> (u128, Arc<str>),
        event: BusEvent,
    ) -> Arc<str> {
        let (number, id) = {
            let mut ring = self.ring();
            let (position, id) = make(&ring);
            ring.latest += 1;
            ring.latest_position = position;
            let number = ring.latest;
            let now = Instant::now();
            ring.events.push_back(Stored {
                number,
                position,
                at: now,
                received: Received {
                    id: Arc::clone(&id),
                    event,
                },
            });
            ring.trim(window, now);
            (number, id)
        };
        // After the ring has it: a subscriber woken finds it there.
        self.latest.send_replace(number);
        id
    }
}

impl Fanout {
    /// A fan-out keeping `window` per topic, within the default [`TopicLimits`].
    pub fn new(window: ReplayWindow) -> Self {
        Self {
            window,
            limits: TopicLimits::default(),
            topics: Mutex::default(),
        }
    }

    /// Keeps topics within `limits` instead of the default.
    #[must_use]
    pub fn topic_limits(mut self, limits: TopicLimits) -> Self {
        self.limits = TopicLimits {
            max_topics: limits.max_topics.max(1),
            ..limits
        };
        self
    }

    /// What it holds now: its topics, and the events in their replay windows (what the
    /// windows' `max_age` has not dropped yet).
    pub fn retained(&self) -> Retained {
        let topics = self.lock();
        let events = topics
            .map
            .values()
            .map(|kept| kept.state.ring().events.len())
            .sum();
        Retained {
            topics: topics.map.len(),
            events,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Topics> {
        self.topics.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The replay window it keeps per topic.
    pub fn window(&self) -> ReplayWindow {
        self.window
    }

    /// The topic's state, made when it has none (or its feed ended); either way it becomes
    /// the most recently used, and the least recently used idle ones are forgotten.
    fn topic(&self, name: &str) -> Arc<TopicState> {
        let now = Instant::now();
        let mut topics = self.lock();
        if let Some(kept) = topics.map.to_back(name)
            && !kept.state.ring().ended
        {
            kept.used = now;
            let state = Arc::clone(&kept.state);
            // Held by `state` now: not forgotten by its own expiry.
            topics.expire(self.window, self.limits, now, self.limits.max_topics);
            return state;
        }
        // Room for the new one.
        topics.expire(
            self.window,
            self.limits,
            now,
            self.limits.max_topics.saturating_sub(1),
        );
        topics.made += 1;
        let state = Arc::new(TopicState::new(0, topics.made));
        topics.map.insert(
            name.into(),
            Kept {
                state: Arc::clone(&state),
                used: now,
            },
        );
        state
    }

    /// Starts feeding `topic` from `floor`: its ring starts empty, holding every event pushed
    /// after `floor` from now on. Subscriptions of an earlier feed of the topic end.
    pub fn feed(&self, topic: &str, floor: u128) -> Feed {
        let now = Instant::now();
        let mut topics = self.lock();
        topics.made += 1;
        let state = Arc::new(TopicState::new(floor, topics.made));
        state.ring().fed = true;
        let kept = Kept {
            state: Arc::clone(&state),
            used: now,
        };
        if let Some(earlier) = topics.map.insert(topic.into(), kept) {
            end(&earlier.state);
        }
        topics.expire(self.window, self.limits, now, self.limits.max_topics);
        Feed {
            window: self.window,
            state,
        }
    }

    /// Whether a subscriber resuming after `position` would miss nothing from `topic`'s ring:
    /// the topic is fed and `position` is at or after its floor.
    pub fn covers(&self, topic: &str, position: u128) -> bool {
        let topics = self.lock();
        topics.map.get(topic).is_some_and(|kept| {
            let ring = kept.state.ring();
            !ring.ended && position >= ring.floor
        })
    }

    /// Subscribes to `topic`: `preface` first, then the ring's events after `after` (`None`:
    /// those pushed from now on), skipping any at or before it. A position before the floor
    /// starts with [`Gap::Lagged`] (how many were missed unknown: 0) and the oldest event
    /// kept.
    pub fn subscribe(
        &self,
        topic: &str,
        after: Option<u128>,
        preface: Vec<Delivery>,
    ) -> Subscription {
        self.subscribe_with(topic, |_| (after, preface))
    }

    /// [`Fanout::subscribe`] to a topic that is fed ([`Fanout::feed`]) and whose feed has not
    /// ended; `None` when it is not (its reader stopped: the caller starts another).
    pub fn subscribe_fed(
        &self,
        topic: &str,
        after: Option<u128>,
        preface: Vec<Delivery>,
    ) -> Option<Subscription> {
        let state = {
            let topics = self.lock();
            let state = &topics.map.get(topic)?.state;
            let ring = state.ring();
            if ring.ended || !ring.fed {
                return None;
            }
            drop(ring);
            Arc::clone(state)
        };
        Some(self.subscribe_to(state, |_| (after, preface)))
    }

    /// [`Fanout::subscribe`] after `decide` has seen the topic's ring (under its lock).
    fn subscribe_with(
        &self,
        topic: &str,
        decide: impl FnOnce(&Ring) -> (Option<u128>, Vec<Delivery>),
    ) -> Subscription {
        self.subscribe_to(self.topic(topic), decide)
    }

    fn subscribe_to(
        &self,
        state: Arc<TopicState>,
        decide: impl FnOnce(&Ring) -> (Option<u128>, Vec<Delivery>),
    ) -> Subscription {
        // Before the ring is read: an event pushed from here on wakes it.
        let changes = state.latest.subscribe();
        let (after, skip_through, pending) = {
            let mut ring = state.ring();
            ring.trim(self.window, Instant::now());
            let (after, preface) = decide(&ring);
            let mut pending = VecDeque::from(preface);
            match after {
                None => (ring.latest, 0, pending),
                Some(position) if position < ring.floor => {
                    pending.push_back(Delivery::Gap(Gap::Lagged { missed: 0 }));
                    (ring.oldest() - 1, 0, pending)
                }
                Some(position) => (ring.number_at(position), position, pending),
            }
        };
        Subscription::new(FanoutSubscription {
            topic: state,
            window: self.window,
            after,
            skip_through,
            pending,
            changed: ReusableBoxFuture::new(changed(changes)),
        })
    }
}

/// Ends `state`'s subscriptions (after what they have) and its feed.
fn end(state: &TopicState) {
    state.ring().ended = true;
    state.latest.send_modify(|_| {});
}

/// The handle that feeds a topic of a [`Fanout`] ([`Fanout::feed`]): what a network
/// broadcaster's reader pushes the events it reads into. The topic stays while it is held.
pub struct Feed {
    window: ReplayWindow,
    state: Arc<TopicState>,
}

impl fmt::Debug for Feed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Feed").finish_non_exhaustive()
    }
}

impl Feed {
    /// Pushes `received` at `position` to the topic's subscribers; ignored (`false`) unless
    /// `position` is after the latest pushed (a reader reading an event twice), or when the
    /// feed has ended.
    pub fn push(&self, position: u128, received: Received) -> bool {
        {
            let ring = self.state.ring();
            if ring.ended || position <= ring.latest_position {
                return false;
            }
        }
        // One reader pushes to a feed: nothing else moves the latest position in between.
        let Received { id, event } = received;
        self.state.append(self.window, |_| (position, id), event);
        true
    }

    /// The position of the latest event pushed (the floor before any).
    pub fn latest(&self) -> u128 {
        self.state.ring().latest_position
    }

    /// Ends the feed: its subscriptions end after the events they have (the clients
    /// reconnect), and the topic is fed afresh by the next [`Fanout::feed`].
    pub fn end(&self) {
        end(&self.state);
    }
}

/// Deliveries a subscriber copies out of the ring at once.
const BATCH: usize = 16;

/// Waits for the next event number; gives the receiver back (and whether the topic lives).
async fn changed(mut changes: watch::Receiver<u64>) -> (watch::Receiver<u64>, bool) {
    let open = changes.changed().await.is_ok();
    (changes, open)
}

/// A subscriber's place in its topic's ring.
struct FanoutSubscription {
    topic: Arc<TopicState>,
    window: ReplayWindow,
    /// The number of the last event delivered (or skipped).
    after: u64,
    /// Events at or before this position are not delivered (the subscriber has them).
    skip_through: u128,
    /// Copied out of the ring, not yet delivered (at most [`BATCH`] and a gap).
    pending: VecDeque<Delivery>,
    changed: ReusableBoxFuture<'static, (watch::Receiver<u64>, bool)>,
}

impl FanoutSubscription {
    /// Copies the next events out of the ring: whether it moved on (events, a gap, or
    /// events skipped), and whether the feed has ended.
    fn refill(&mut self) -> (bool, bool) {
        let before = self.after;
        let mut ring = self.topic.ring();
        ring.trim(self.window, Instant::now());
        let oldest = ring.oldest();
        if self.after + 1 < oldest {
            self.pending.push_back(Delivery::Gap(Gap::Lagged {
                missed: oldest - 1 - self.after,
            }));
            self.after = oldest - 1;
        }
        // The ring's numbers are consecutive from `oldest`.
        let start = usize::try_from(self.after + 1 - oldest).unwrap_or(usize::MAX);
        for stored in ring
            .events
            .range(start.min(ring.events.len())..)
            .take(BATCH)
        {
            if stored.position > self.skip_through {
                self.pending
                    .push_back(Delivery::Event(stored.received.clone()));
            }
            self.after = stored.number;
        }
        (!self.pending.is_empty() || self.after != before, ring.ended)
    }
}

impl Stream for FanoutSubscription {
    type Item = Result<Delivery, BroadcastError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(delivery) = self.pending.pop_front() {
                return Poll::Ready(Some(Ok(delivery)));
            }
            let (moved, ended) = self.refill();
            if moved {
                continue;
            }
            if ended {
                return Poll::Ready(None);
            }
            // Nothing new since the ring was read: wait for a publication (one made since the
            // last wait's end is seen at once, the receiver's version being older).
            let (changes, open) = std::task::ready!(self.changed.poll(cx));
            if !open {
                return Poll::Ready(None);
            }
            self.changed.set(changed(changes));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use garde::Validate;
    use schemars::JsonSchema;
    use serde::Serialize;

    #[derive(Debug, Serialize, Validate, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    enum Feed {
        Count(#[garde(range(max = 1_000_000))] u32),
        Reload,
    }

    fn topic(window: ReplayWindow) -> Topic<Feed> {
        Topic::new(Arc::new(MemoryBroadcaster::new(window)), "feed")
    }

    async fn counts(subscription: &mut Subscription, n: usize) -> Vec<(Arc<str>, String)> {
        let mut seen = Vec::with_capacity(n);
        while seen.len() < n {
            match subscription.next().await {
                Some(Ok(Delivery::Event(Received { id, event }))) => {
                    seen.push((id, event.data().to_owned()));
                }
                other => panic!("{other:?} after {}", seen.len()),
            }
        }
        seen
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn three_hundred_subscribers_each_get_a_thousand_events_in_order() {
        let feed = topic(ReplayWindow::default());
        let mut subscribers = Vec::new();
        for _ in 0..300 {
            let mut subscription = feed.subscribe(None).await.unwrap();
            subscribers.push(tokio::spawn(async move {
                counts(&mut subscription, 1000).await
            }));
        }
        let source = feed.clone();
        let published = tokio::spawn(async move {
            let mut ids = Vec::new();
            for n in 0..1000 {
                ids.push(source.publish(&Feed::Count(n)).await.unwrap());
                if n % 100 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            ids
        })
        .await
        .unwrap();
        let expected: Vec<(Arc<str>, String)> = published
            .into_iter()
            .zip(0..1000)
            .map(|(id, n)| (id, n.to_string()))
            .collect();
        for subscriber in subscribers {
            assert_eq!(subscriber.await.unwrap(), expected);
        }
    }

    #[tokio::test]
    async fn resuming_inside_the_window_gets_exactly_the_missing_events() {
        let feed = topic(ReplayWindow::last(10));
        let mut ids = Vec::new();
        for n in 0..20 {
            ids.push(feed.publish(&Feed::Count(n)).await.unwrap());
        }
        // After the 15th (n = 14): 15 to 19, then the live ones.
        let mut resumed = feed.subscribe(Some(&ids[14])).await.unwrap();
        let missing = counts(&mut resumed, 5).await;
        assert_eq!(
            missing,
            (15..20)
                .map(|n| (Arc::clone(&ids[n]), n.to_string()))
                .collect::<Vec<_>>()
        );
        let live = feed.publish(&Feed::Count(20)).await.unwrap();
        assert_eq!(
            counts(&mut resumed, 1).await,
            [(Arc::clone(&live), "20".to_owned())]
        );
        // After the latest: the next.
        let mut caught_up = feed.subscribe(Some(&live)).await.unwrap();
        let next = feed.publish(&Feed::Reload).await.unwrap();
        assert_eq!(counts(&mut caught_up, 1).await, [(next, "null".to_owned())]);
        // The window holds n = 12 to 20 and the reload: after n = 11, nothing is missing.
        let mut edge = feed.subscribe(Some(&ids[11])).await.unwrap();
        assert_eq!(counts(&mut edge, 1).await[0].1, "12");
    }

    #[tokio::test]
    async fn outside_the_window_a_gap_then_what_is_left() {
        let feed = topic(ReplayWindow::last(10));
        let mut ids = Vec::new();
        for n in 0..20 {
            ids.push(feed.publish(&Feed::Count(n)).await.unwrap());
        }
        for stale in [ids[5].to_string(), "nonsense".to_owned(), "0-3".to_owned()] {
            let mut late = feed.subscribe(Some(&stale)).await.unwrap();
            assert_eq!(
                late.next().await.unwrap().unwrap(),
                Delivery::Gap(Gap::OutsideWindow {
                    last_event_id: stale.clone()
                })
            );
            let kept = counts(&mut late, 10).await;
            assert_eq!(kept[0].1, "10", "{stale}");
            assert_eq!(kept[9].1, "19");
        }
        // An id of another broadcaster (another replica's memory, an earlier run).
        let other = topic(ReplayWindow::last(10));
        let theirs = other.publish(&Feed::Reload).await.unwrap();
        let mut late = feed.subscribe(Some(&theirs)).await.unwrap();
        assert!(matches!(
            late.next().await,
            Some(Ok(Delivery::Gap(Gap::OutsideWindow { .. })))
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn the_window_is_bounded_in_time_too() {
        let feed = topic(ReplayWindow {
            events: 100,
            max_age: Some(Duration::from_secs(60)),
        });
        let old = feed.publish(&Feed::Count(1)).await.unwrap();
        feed.publish(&Feed::Count(2)).await.unwrap();
        tokio::time::advance(Duration::from_secs(61)).await;
        let recent = feed.publish(&Feed::Count(3)).await.unwrap();
        let mut late = feed.subscribe(Some(&old)).await.unwrap();
        assert!(matches!(
            late.next().await,
            Some(Ok(Delivery::Gap(Gap::OutsideWindow { .. })))
        ));
        assert_eq!(counts(&mut late, 1).await[0].0, recent);
    }

    #[tokio::test]
    async fn a_slow_subscriber_is_told_what_it_missed_and_holds_no_memory() {
        let feed = topic(ReplayWindow::last(8));
        let mut slow = feed.subscribe(None).await.unwrap();
        for n in 0..30 {
            feed.publish(&Feed::Count(n)).await.unwrap();
        }
        assert_eq!(
            slow.next().await.unwrap().unwrap(),
            Delivery::Gap(Gap::Lagged { missed: 22 })
        );
        let kept = counts(&mut slow, 8).await;
        assert_eq!(kept[0].1, "22");
        assert_eq!(kept[7].1, "29");
    }

    #[tokio::test]
    async fn a_bad_event_is_not_published() {
        let feed = topic(ReplayWindow::default());
        let refused = feed.publish(&Feed::Count(2_000_000)).await.unwrap_err();
        assert!(
            matches!(refused, BroadcastError::Event(EmitError::Invalid(_))),
            "{refused}"
        );
        assert!(BusEvent::from_parts("a", "1\n2").is_err());
        assert!(BusEvent::from_parts("", "1").is_err());
        assert_eq!(BusEvent::from_parts("count", "1").unwrap().name(), "count");
    }

    #[tokio::test(start_paused = true)]
    async fn forgotten_topics_are_swept() {
        let bus = MemoryBroadcaster::new(ReplayWindow {
            events: 4,
            max_age: Some(Duration::from_secs(1)),
        });
        let _listened = bus.subscribe("topic-0", None).await.unwrap();
        for n in 0..1000 {
            let event = BusEvent::from_parts("count", "1").unwrap();
            bus.publish(&format!("topic-{n}"), event).await.unwrap();
            tokio::time::advance(Duration::from_millis(100)).await;
        }
        // The one listened to, and those of the last second (whose event the window keeps).
        let topics = bus.fanout.lock();
        assert!(topics.map.len() <= 12, "{} topics kept", topics.map.len());
        assert!(topics.map.contains_key("topic-0"));
    }

    fn one_event() -> BusEvent {
        BusEvent::from_parts("count", "1").unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_hundred_thousand_topics_stay_within_the_bound() {
        // Events kept however old: before the bound, every topic stayed with its events.
        let bus = MemoryBroadcaster::new(ReplayWindow::last(1024)).topic_limits(TopicLimits {
            max_topics: 1000,
            idle: Duration::from_secs(3600),
        });
        let mut listened = bus.subscribe("listened", None).await.unwrap();
        let mut first_ids = Vec::new();
        for n in 0..100_000 {
            let topic = format!("topic-{n}");
            first_ids.push(bus.publish(&topic, one_event()).await.unwrap());
            bus.publish(&topic, one_event()).await.unwrap();
            if n % 997 == 0 {
                let retained = bus.retained();
                assert!(retained.topics <= 1000, "{retained:?} after {n}");
                assert!(retained.events <= 2 * 1000, "{retained:?} after {n}");
            }
        }
        assert_eq!(
            bus.retained(),
            Retained {
                topics: 1000,
                events: 2 * 999
            }
        );
        // The topic a subscriber holds was never forgotten, however old.
        let id = bus.publish("listened", one_event()).await.unwrap();
        let Some(Ok(Delivery::Event(received))) = listened.next().await else {
            panic!()
        };
        assert_eq!(received.id, id);
        // The most recent topics replay in full; a forgotten one is a gap.
        let mut recent = bus
            .subscribe("topic-99999", Some(&first_ids[99_999]))
            .await
            .unwrap();
        assert!(matches!(recent.next().await, Some(Ok(Delivery::Event(_)))));
        let mut forgotten = bus.subscribe("topic-5", Some(&first_ids[5])).await.unwrap();
        assert!(matches!(
            forgotten.next().await,
            Some(Ok(Delivery::Gap(Gap::OutsideWindow { .. })))
        ));
    }

    #[tokio::test]
    async fn topics_that_subscribers_hold_stay_past_the_bound_and_the_rest_go() {
        let bus = MemoryBroadcaster::new(ReplayWindow::last(8)).topic_limits(TopicLimits {
            max_topics: 10,
            idle: Duration::from_secs(60),
        });
        let mut held = Vec::new();
        for n in 0..40 {
            held.push(bus.subscribe(&format!("held-{n}"), None).await.unwrap());
        }
        for n in 0..1000 {
            bus.publish(&format!("topic-{n}"), one_event())
                .await
                .unwrap();
            let topics = bus.retained().topics;
            assert!(topics <= 10 + 40 + 40 / 8 + 1, "{topics} topics after {n}");
        }
        // Every held topic still delivers.
        for (n, subscription) in held.iter_mut().enumerate() {
            let id = bus
                .publish(&format!("held-{n}"), one_event())
                .await
                .unwrap();
            let Some(Ok(Delivery::Event(received))) = subscription.next().await else {
                panic!()
            };
            assert_eq!(received.id, id);
        }
        // Unsubscribed, they go like the others.
        drop(held);
        for n in 0..100 {
            bus.publish(&format!("later-{n}"), one_event())
                .await
                .unwrap();
        }
        assert_eq!(bus.retained().topics, 10);
    }

    #[tokio::test]
    async fn an_id_of_another_topic_or_of_a_topic_forgotten_since_is_a_gap() {
        let bus = MemoryBroadcaster::new(ReplayWindow::last(100)).topic_limits(TopicLimits {
            max_topics: 1,
            idle: Duration::from_secs(60),
        });
        let mut old_ids = Vec::new();
        for _ in 0..5 {
            old_ids.push(bus.publish("a", one_event()).await.unwrap());
        }
        // The bound of one topic forgets `a`; made again, it has as many events as before.
        bus.publish("b", one_event()).await.unwrap();
        let b_id = bus.publish("b", one_event()).await.unwrap();
        let mut new_ids = Vec::new();
        for _ in 0..5 {
            new_ids.push(bus.publish("a", one_event()).await.unwrap());
        }
        assert_ne!(old_ids, new_ids);
        // The old `a`'s third event, or `b`'s second: not this `a`'s, so a gap, then all of it.
        for stale in [&old_ids[2], &b_id] {
            let mut resumed = bus.subscribe("a", Some(stale)).await.unwrap();
            assert!(
                matches!(
                    resumed.next().await,
                    Some(Ok(Delivery::Gap(Gap::OutsideWindow { .. })))
                ),
                "{stale}"
            );
            let Some(Ok(Delivery::Event(first))) = resumed.next().await else {
                panic!()
            };
            assert_eq!(first.id, new_ids[0]);
        }
        // Its own: exactly what follows.
        let mut resumed = bus.subscribe("a", Some(&new_ids[2])).await.unwrap();
        let Some(Ok(Delivery::Event(next))) = resumed.next().await else {
            panic!()
        };
        assert_eq!(next.id, new_ids[3]);
    }

    #[tokio::test(start_paused = true)]
    async fn idle_topics_expire_and_held_ones_stay() {
        let bus = MemoryBroadcaster::new(ReplayWindow::last(1024)).topic_limits(TopicLimits {
            max_topics: 100,
            idle: Duration::from_secs(60),
        });
        let old = bus.publish("old", one_event()).await.unwrap();
        let _held = bus.subscribe("held", None).await.unwrap();
        bus.publish("held", one_event()).await.unwrap();
        tokio::time::advance(Duration::from_secs(59)).await;
        bus.publish("recent", one_event()).await.unwrap();
        assert_eq!(bus.retained().topics, 3, "none idle for a minute yet");
        tokio::time::advance(Duration::from_secs(2)).await;
        // Used next: the one idle for a minute goes, the one a subscriber holds stays.
        bus.publish("new", one_event()).await.unwrap();
        assert_eq!(
            bus.retained(),
            Retained {
                topics: 3,
                events: 3
            }
        );
        let mut late = bus.subscribe("old", Some(&old)).await.unwrap();
        assert!(matches!(
            late.next().await,
            Some(Ok(Delivery::Gap(Gap::OutsideWindow { .. })))
        ));
    }

    fn received(id: &str, data: &str) -> Received {
        Received {
            id: id.into(),
            event: BusEvent::from_parts("count", data).unwrap(),
        }
    }

    async fn ids(subscription: &mut Subscription, n: usize) -> Vec<String> {
        let mut seen = Vec::new();
        while seen.len() < n {
            match subscription.next().await {
                Some(Ok(Delivery::Event(event))) => seen.push(event.id.to_string()),
                Some(Ok(Delivery::Gap(gap))) => seen.push(format!("{gap:?}")),
                other => panic!("{other:?} after {seen:?}"),
            }
        }
        seen
    }

    #[tokio::test]
    async fn a_fed_topic_resumes_by_position_and_skips_what_the_subscriber_has() {
        let fanout = Fanout::new(ReplayWindow::last(3));
        let feed = fanout.feed("t", 100);
        assert!(!fanout.covers("t", 99));
        assert!(fanout.covers("t", 100));
        let mut live = fanout.subscribe("t", None, Vec::new());
        assert!(feed.push(110, received("a", "1")));
        assert!(!feed.push(110, received("a", "1")), "read twice");
        assert!(feed.push(120, received("b", "2")));
        assert_eq!(ids(&mut live, 2).await, ["a", "b"]);
        // Resumed after 110: b. After 115 (an event this replica has not read yet, say):
        // also b. A preface (from the network) first, then the ring after its last event.
        let mut resumed = fanout.subscribe("t", Some(110), Vec::new());
        let mut ahead = fanout.subscribe("t", Some(125), Vec::new());
        let mut prefaced =
            fanout.subscribe("t", Some(110), vec![Delivery::Event(received("a", "1"))]);
        assert!(feed.push(130, received("c", "3")));
        assert!(feed.push(140, received("d", "4")));
        assert_eq!(ids(&mut live, 2).await, ["c", "d"]);
        assert_eq!(ids(&mut resumed, 3).await, ["b", "c", "d"]);
        assert_eq!(ids(&mut ahead, 2).await, ["c", "d"]);
        assert_eq!(ids(&mut prefaced, 4).await, ["a", "b", "c", "d"]);
        assert_eq!(feed.latest(), 140);
        // The window of 3 dropped a (110): resuming after 100 would miss it.
        assert!(!fanout.covers("t", 100));
        assert!(fanout.covers("t", 110));
        let mut late = fanout.subscribe("t", Some(100), Vec::new());
        assert_eq!(
            ids(&mut late, 4).await,
            ["Lagged { missed: 0 }", "b", "c", "d"]
        );
        // Ending the feed ends its subscriptions after what they have; a new feed starts
        // afresh.
        assert!(feed.push(150, received("e", "5")));
        feed.end();
        assert!(!feed.push(160, received("f", "6")));
        assert_eq!(ids(&mut live, 1).await, ["e"]);
        assert!(live.next().await.is_none());
        assert!(!fanout.covers("t", 150));
        let again = fanout.feed("t", 150);
        assert!(fanout.covers("t", 150));
        let mut fresh = fanout.subscribe("t", Some(150), Vec::new());
        assert!(again.push(170, received("g", "7")));
        assert_eq!(ids(&mut fresh, 1).await, ["g"]);
        // An earlier feed's subscriptions end when the topic is fed again.
        let _third = fanout.feed("t", 170);
        assert!(fresh.next().await.is_none());
    }
}
