//! The event streams' [`Broadcaster`] on Redis streams: an event published on any replica
//! reaches every subscriber of its topic on every replica.
//!
//! # Why Redis streams (not pub/sub)
//!
//! A topic is one Redis stream (`XADD`, trimmed to the [`ReplayWindow`]). A stream gives what
//! the broadcaster promises, in Redis itself: one order for all the events of a topic (each
//! entry's id, which becomes the event's `id:`), and the replay window from which a client
//! reconnecting to *another* replica resumes after its `Last-Event-ID`, without a gap. Pub/sub
//! has neither: a message goes to whoever listens at that instant, so a replay window would
//! need a second structure, written in the same call and deduplicated against the live
//! messages on every reconnect.
//!
//! Each replica reads each topic **once**, whatever the number of its subscribers, and many
//! topics per connection: a reader task reads up to [`TOPICS_PER_CONNECTION`] topics with
//! subscribers on a connection of its own (one `XREAD BLOCK` over all their streams, which
//! would hold up a shared connection) and pushes what it reads into the replica's [`Fanout`],
//! from which its local subscribers read. A topic joins a reader once its head is read on the
//! shared connection, waking the reader's `XREAD` (`CLIENT UNBLOCK`); 10,000 topics take 40
//! connections per replica. (On a Redis Cluster the streams of one `XREAD` must share a slot:
//! there each topic has its reader's connection, to its slot's node.) A subscriber resuming after an id the fan-out still
//! holds costs Redis nothing; an older one costs one call (`src/replay.lua`: the entries
//! after its id, and whether some are gone). A publication is one call (`src/publish.lua`:
//! `XADD`, trimmed by count and age on the Redis server's clock).
//!
//! # Ids
//!
//! `<epoch>-<ms>-<seq>`: the stream entry's id behind an *epoch*, a random word stored in
//! Redis (one per topic, beside its stream) when the topic's first event is published. A
//! Redis restarted without persistence has lost its streams and their epochs with them: a
//! client resuming with an id of an old epoch is told so ([`Gap::OutsideWindow`]), never
//! resumed at a position that now means other events.
//!
//! # Failures
//!
//! Every call but the readers' blocking reads has a timeout (default
//! [`DEFAULT_EVENTS_TIMEOUT`], 1 s). A publication that fails is the publisher's error, and is
//! never published later: its script carries a deadline (half the timeout, on the Redis
//! server's clock as the last answer placed it against ours) after which it refuses, so a call
//! left in the socket of a stalled Redis does nothing when Redis wakes; and a token, so that
//! the same call run twice publishes once. (What remains: a publication run in time whose
//! answer is then lost, a connection cut in that instant, is reported failed and published.) A
//! reader whose connection fails ends its topic's subscriptions cleanly (after the events
//! they have), so each client reconnects with its `Last-Event-ID`, to this replica or
//! another; a subscription made while Redis is down fails ([`BroadcastError::Backend`]: the
//! event stream's handler fails, and the client retries after its `retry:` delay). Failures
//! are logged (`tracing`, target `strata_redis`) at most once per 10 s per kind, with the count
//! left out. When Redis is back, the next subscription starts a new reader: nothing needs a
//! restart.
//!
//! # Example
//!
//! ```no_run
//! use std::sync::Arc;
//! use strata_events::{Broadcaster, ReplayWindow};
//! use strata_redis::RedisBroadcaster;
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! // In every replica: the same Redis and prefix.
//! let bus: Arc<dyn Broadcaster> = Arc::new(
//!     RedisBroadcaster::connect("redis://127.0.0.1:6379/")
//!         .await?
//!         .window(ReplayWindow::default()),
//! );
//! # let _ = bus;
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use redis::aio::{ConnectionManager, MultiplexedConnection};
use redis::{
    AsyncConnectionConfig, Client, ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisError,
    Script,
};
use strata_events::broadcast::BoxFuture;
use strata_events::{
    BroadcastError, Broadcaster, BusEvent, Delivery, Fanout, Feed, Gap, Received, ReplayWindow,
    Subscription,
};
use strata_log::LogRateLimit;
use tokio::sync::watch;

use crate::{Connection, Failure, RedisRateLimitStore, cluster_connection};

/// The prefix of the broadcaster's keys by default.
pub const DEFAULT_EVENTS_PREFIX: &str = "strata:ev:";

/// How long a call may take by default before it counts as a failure.
pub const DEFAULT_EVENTS_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a reader's `XREAD` blocks before it looks whether its topic still has
/// subscribers.
const READ_BLOCK: Duration = Duration::from_secs(1);

/// Topics one connection reads at most (one `XREAD BLOCK` over their streams): 10,000 topics
/// with subscribers take 40 connections per replica, not 10,000.
pub const TOPICS_PER_CONNECTION: usize = 256;

/// Entries a reader takes per `XREAD` (per stream).
const READ_COUNT: usize = 512;

static PUBLISH_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("publish.lua")));
static HEAD_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("head.lua")));
static REPLAY_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("replay.lua")));

/// Failures logged at most once per 10 s per kind: a Redis that is down fails every call.
static FAILURES: LogRateLimit = LogRateLimit::new(Duration::from_secs(10));

/// The event streams' broadcaster on Redis streams: see the [module docs](self).
pub struct RedisBroadcaster {
    nodes: Nodes,
    connection: Connection,
    prefix: String,
    timeout: Duration,
    shared: Arc<Shared>,
}

/// What the readers share with the broadcaster.
struct Shared {
    fanout: Fanout,
    readers: Mutex<Readers>,
    /// The Redis server's clock minus ours, in ms: publications' deadlines are set on the
    /// server's clock.
    clock: ClockOffset,
}

/// Where readers connect: the one Redis, or the nodes of a cluster (a reader follows `MOVED`
/// to the node holding its topic's slot).
#[derive(Clone)]
enum Nodes {
    Single(Client),
    Cluster(Arc<[ConnectionInfo]>),
}

#[derive(Default)]
struct Readers {
    map: HashMap<Arc<str>, Slot>,
    next_generation: u64,
    /// The groups reading topics, each on a connection of its own.
    groups: Vec<Arc<Group>>,
}

/// A topic's reader: how many subscriptions need it, and how it is doing.
struct Slot {
    generation: u64,
    interest: usize,
    state: watch::Receiver<ReaderState>,
    /// The topic's epoch as its reader last saw it (`None`: Redis had none).
    epoch: Option<Arc<str>>,
}

#[derive(Debug, Clone)]
enum ReaderState {
    Starting,
    Reading,
    Failed(Arc<str>),
}

impl fmt::Debug for RedisBroadcaster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBroadcaster")
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .field("window", &self.shared.fanout.window())
            .finish_non_exhaustive()
    }
}

impl RedisBroadcaster {
    /// Connects to the Redis at `url` (as [`RedisRateLimitStore::connect`]): fails when Redis
    /// cannot be reached now, so that a misconfiguration shows at start.
    pub async fn connect(url: &str) -> Result<Self, RedisError> {
        let client = Client::open(url)?;
        let manager = ConnectionManager::new_with_config(
            client.clone(),
            RedisRateLimitStore::manager_config(),
        )
        .await?;
        Ok(Self::new(client, manager))
    }

    /// Connects to the Redis Cluster one of whose nodes is at one of `nodes`
    /// (`redis://127.0.0.1:7000/`, ...): fails when none can be reached now. A topic's keys
    /// share its hash tag (`strata:ev:{t:prices}`), so that each topic lives on one node and
    /// its scripts touch one slot; its reader connects to that node.
    pub async fn connect_cluster<'a>(
        nodes: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, RedisError> {
        let nodes: Vec<&str> = nodes.into_iter().collect();
        let infos = nodes
            .iter()
            .map(|node| node.into_connection_info())
            .collect::<Result<Vec<_>, _>>()?;
        let connection = cluster_connection(nodes).await?;
        Ok(Self::with(
            Nodes::Cluster(infos.into()),
            Connection::Cluster(connection),
        ))
    }

    /// A broadcaster for the Redis at `url`, connecting on its first call: a replica starts
    /// while Redis is down. Fails only on a malformed URL.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (the manager starts a task).
    pub fn connect_lazy(url: &str) -> Result<Self, RedisError> {
        let client = Client::open(url)?;
        let manager = ConnectionManager::new_lazy_with_config(
            client.clone(),
            RedisRateLimitStore::manager_config(),
        )?;
        Ok(Self::new(client, manager))
    }

    /// A broadcaster publishing through `connection` (the application's own manager) and
    /// reading through connections `client` opens, one per [`TOPICS_PER_CONNECTION`] topics
    /// with subscribers.
    pub fn new(client: Client, connection: ConnectionManager) -> Self {
        Self::with(Nodes::Single(client), Connection::Single(connection))
    }

    fn with(nodes: Nodes, connection: Connection) -> Self {
        Self {
            nodes,
            connection,
            prefix: DEFAULT_EVENTS_PREFIX.to_owned(),
            timeout: DEFAULT_EVENTS_TIMEOUT,
            shared: Arc::new(Shared::new(ReplayWindow::default())),
        }
    }

    strata_core::setters! {
        /// The replay window per topic (default: the last 1,024 events, none older than 5
        /// minutes), kept in Redis and in each replica's fan-out. Every replica must use the
        /// same.
        #[must_use]
        window(window: ReplayWindow) => shared = Arc::new(Shared::new(window));
        /// The prefix of its keys (default `strata:ev:`): the topic `t` is the stream
        /// `strata:ev:{t:t}`, its epoch `strata:ev:{t:t}:e` (one hash tag: one slot of a
        /// cluster).
        #[must_use]
        prefix(prefix: impl Into<String>) => prefix = prefix.into();
        /// How long a call may take before it is a failure (default 1 s).
        #[must_use]
        timeout(timeout: Duration) => timeout = timeout;
    }

    /// The topic's stream: `{t:` and the topic `}` as its hash tag, never empty (an empty
    /// `{}` is no tag). A topic with a `}` has a tag that stops there, the same for each of
    /// its keys: they still share a slot.
    fn stream_key(&self, topic: &str) -> String {
        format!("{}{{t:{topic}}}", self.prefix)
    }

    /// The topic's epoch, in its stream's slot.
    fn epoch_key(&self, topic: &str) -> String {
        format!("{}{{t:{topic}}}:e", self.prefix)
    }

    /// A publication's token, in its stream's slot, kept until its deadline has passed: the
    /// same call run twice (a client library's retry) publishes once.
    fn token_key(&self, topic: &str, token: &str) -> String {
        format!("{}{{t:{topic}}}:p:{token}", self.prefix)
    }

    /// Registers a subscription's need of `topic`'s reader, starting the reader when there is
    /// none; the reader's state to wait on.
    fn interest(&self, topic: &str) -> (Interest, watch::Receiver<ReaderState>) {
        let mut readers = self
            .shared
            .readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = readers.map.get_mut(topic) {
            slot.interest += 1;
            let interest = Interest {
                shared: Arc::clone(&self.shared),
                topic: topic.into(),
                generation: slot.generation,
            };
            return (interest, slot.state.clone());
        }
        readers.next_generation += 1;
        let generation = readers.next_generation;
        let (state, watched) = watch::channel(ReaderState::Starting);
        let topic: Arc<str> = topic.into();
        readers.map.insert(
            Arc::clone(&topic),
            Slot {
                generation,
                interest: 1,
                state: watched.clone(),
                epoch: None,
            },
        );
        // A group with room, or a new one.
        let capacity = match self.nodes {
            Nodes::Single(_) => TOPICS_PER_CONNECTION,
            Nodes::Cluster(_) => 1,
        };
        let room = readers.groups.iter().find(|group| {
            let mut members = group.members.lock().unwrap_or_else(PoisonError::into_inner);
            let room = !members.closed && members.assigned < capacity;
            if room {
                members.assigned += 1;
            }
            room
        });
        let group = if let Some(group) = room {
            Arc::clone(group)
        } else {
            let group = Arc::new(Group::new());
            group
                .members
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .assigned = 1;
            readers.groups.push(Arc::clone(&group));
            tokio::spawn(Arc::clone(&group).run(
                Arc::clone(&self.shared),
                self.nodes.clone(),
                self.timeout,
            ));
            group
        };
        let join = Join {
            shared: Arc::clone(&self.shared),
            connection: self.connection.clone(),
            group,
            topic: Arc::clone(&topic),
            key: self.stream_key(&topic),
            epoch_key: self.epoch_key(&topic),
            timeout: self.timeout,
            generation,
            wake: capacity > 1,
        };
        tokio::spawn(join.run(state));
        let interest = Interest {
            shared: Arc::clone(&self.shared),
            topic,
            generation,
        };
        (interest, watched)
    }

    /// Subscribes once the topic's reader reads.
    async fn subscribe_now(
        &self,
        topic: &str,
        last_event_id: Option<&str>,
    ) -> Result<Subscription, BroadcastError> {
        let (interest, mut state) = self.interest(topic);
        let started = tokio::time::timeout(
            self.timeout * 2,
            state.wait_for(|state| !matches!(state, ReaderState::Starting)),
        )
        .await
        .map(|state| state.map(|state| state.clone()));
        match started {
            Ok(Ok(ReaderState::Reading)) => {}
            Ok(Ok(ReaderState::Failed(error))) => {
                return Err(BroadcastError::backend(error.to_string()));
            }
            _ => return Err(failed("subscribe", &Failure::Timeout(self.timeout * 2))),
        }
        let fanout = &self.shared.fanout;
        let (after, preface) = match last_event_id {
            None => (None, Vec::new()),
            Some(id) => match parse_event_id(id) {
                Some((epoch, position))
                    if self.shared.epoch_is(topic, epoch) && fanout.covers(topic, position) =>
                {
                    (Some(position), Vec::new())
                }
                _ => {
                    let (head, preface) = self.replay(topic, id).await?;
                    (Some(head), preface)
                }
            },
        };
        // The reader may have stopped since (Redis failed): the client tries again.
        let subscription = fanout
            .subscribe_fed(topic, after, preface)
            .ok_or_else(|| BroadcastError::backend("the Redis broadcaster's reader stopped"))?;
        Ok(Subscription::new(Held {
            subscription,
            _interest: interest,
        }))
    }

    /// What a subscriber resuming after `id` is owed from Redis (a gap first when some is
    /// gone), and the position of the stream's latest entry, after which the fan-out goes on.
    async fn replay(&self, topic: &str, id: &str) -> Result<(u128, Vec<Delivery>), BroadcastError> {
        // The entry id as the client has it ("" when it is not one of ours: a gap).
        let (epoch, entry) = match id.split_once('-') {
            Some((epoch, entry)) if parse_entry_id(entry).is_some() => (epoch, entry),
            _ => ("", ""),
        };
        let mut call = REPLAY_SCRIPT.key(self.stream_key(topic));
        call.key(self.epoch_key(topic))
            .arg(epoch)
            .arg(entry)
            .arg(self.shared.fanout.window().events.max(1));
        let mut connection = self.connection.clone();
        let answer = tokio::time::timeout(self.timeout, call.invoke_async(&mut connection)).await;
        let (epoch, gap, head, entries): (String, i64, String, Vec<Entry>) = match answer {
            Ok(Ok(answer)) => answer,
            Ok(Err(error)) => return Err(failed("replay", &Failure::Redis(error))),
            Err(_) => return Err(failed("replay", &Failure::Timeout(self.timeout))),
        };
        self.shared.saw_epoch(topic, &epoch);
        let mut preface = Vec::with_capacity(entries.len() + 1);
        if gap == 1 {
            preface.push(Delivery::Gap(Gap::OutsideWindow {
                last_event_id: id.to_owned(),
            }));
        }
        for entry in entries {
            let (_, received) = received(entry).map_err(|error| failed("replay", &error))?;
            preface.push(Delivery::Event(received));
        }
        let head = parse_entry_id(&head)
            .ok_or_else(|| failed("replay", &Failure::Malformed(head.clone())))?;
        Ok((position(head), preface))
    }
}

impl Broadcaster for RedisBroadcaster {
    fn publish<'a>(
        &'a self,
        topic: &'a str,
        event: BusEvent,
    ) -> BoxFuture<'a, Result<Arc<str>, BroadcastError>> {
        Box::pin(async move {
            let window = self.shared.fanout.window();
            let max_age = window.max_age.map_or(0, |age| age.as_millis().max(1));
            // The script refuses to run after half the timeout on the server's clock (as far
            // as we know it): a call that reports a failure here never publishes later, when
            // a stalled Redis wakes up; the other half covers the answer's way back and an
            // error in the clock estimate.
            let half = i64::try_from(self.timeout.as_millis() / 2).unwrap_or(i64::MAX);
            let deadline = unix_ms()
                .saturating_add(half)
                .saturating_add(self.shared.clock.estimate());
            let token = format!("{}{}", random_word(), random_word());
            let mut call = PUBLISH_SCRIPT.key(self.stream_key(topic));
            call.key(self.epoch_key(topic))
                .key(self.token_key(topic, &token))
                .arg(window.events.max(1))
                .arg(u64::try_from(max_age).unwrap_or(u64::MAX))
                // The epoch Redis takes when it has none (after a restart: a new one).
                .arg(random_word())
                .arg(event.name())
                .arg(event.data())
                .arg(deadline);
            let mut connection = self.connection.clone();
            let answer =
                tokio::time::timeout(self.timeout, call.invoke_async(&mut connection)).await;
            let (epoch, entry, now): (String, String, i64) = match answer {
                Ok(Ok(answer)) => answer,
                Ok(Err(error)) if error.code() == Some("STRATA_LATE") => {
                    return Err(failed("publish", &Failure::Late));
                }
                Ok(Err(error)) => return Err(failed("publish", &Failure::Redis(error))),
                Err(_) => return Err(failed("publish", &Failure::Timeout(self.timeout))),
            };
            self.shared.clock.sample(now.saturating_sub(unix_ms()));
            Ok(format!("{epoch}-{entry}").into())
        })
    }

    fn subscribe<'a>(
        &'a self,
        topic: &'a str,
        last_event_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Subscription, BroadcastError>> {
        Box::pin(self.subscribe_now(topic, last_event_id))
    }
}

impl Shared {
    fn new(window: ReplayWindow) -> Self {
        Self {
            fanout: Fanout::new(window),
            readers: Mutex::default(),
            clock: ClockOffset::default(),
        }
    }

    /// Whether `epoch` is `topic`'s as its reader last saw it.
    fn epoch_is(&self, topic: &str, epoch: &str) -> bool {
        let readers = self.readers.lock().unwrap_or_else(PoisonError::into_inner);
        readers
            .map
            .get(topic)
            .is_some_and(|slot| slot.epoch.as_deref() == Some(epoch))
    }

    /// Notes `topic`'s epoch as Redis answered it ('' when it has none).
    fn saw_epoch(&self, topic: &str, epoch: &str) {
        let mut readers = self.readers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = readers.map.get_mut(topic)
            && slot.epoch.as_deref() != Some(epoch)
        {
            slot.epoch = (!epoch.is_empty()).then(|| epoch.into());
        }
    }

    /// Removes the reader `generation` of `topic` when no subscription needs it: whether it
    /// was removed (the reader stops).
    fn release_if_idle(&self, topic: &str, generation: u64) -> bool {
        let mut readers = self.readers.lock().unwrap_or_else(PoisonError::into_inner);
        match readers.map.get(topic) {
            Some(slot) if slot.generation == generation && slot.interest > 0 => false,
            Some(slot) if slot.generation == generation => {
                readers.map.remove(topic);
                true
            }
            // Replaced or removed already.
            _ => true,
        }
    }

    /// Removes the reader `generation` of `topic` (it failed).
    fn remove(&self, topic: &str, generation: u64) {
        let mut readers = self.readers.lock().unwrap_or_else(PoisonError::into_inner);
        if readers
            .map
            .get(topic)
            .is_some_and(|slot| slot.generation == generation)
        {
            readers.map.remove(topic);
        }
    }
}

/// A subscription's need of its topic's reader; released when the subscription is dropped.
struct Interest {
    shared: Arc<Shared>,
    topic: Arc<str>,
    generation: u64,
}

impl Drop for Interest {
    fn drop(&mut self) {
        let mut readers = self
            .shared
            .readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = readers.map.get_mut(&*self.topic)
            && slot.generation == self.generation
        {
            slot.interest = slot.interest.saturating_sub(1);
        }
    }
}

/// A fan-out subscription holding its reader.
struct Held {
    subscription: Subscription,
    _interest: Interest,
}

impl Stream for Held {
    type Item = Result<Delivery, BroadcastError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.subscription).poll_next(cx)
    }
}

/// Readers of many topics on one connection: one `XREAD BLOCK` over the streams of all its
/// topics (up to [`TOPICS_PER_CONNECTION`]; one on a cluster, where the streams of one
/// `XREAD` must share a slot). Topics join after their head was read on the shared
/// connection; a topic joining a group that is blocked wakes it (`CLIENT UNBLOCK`), and
/// topics no subscription needs leave after a read.
struct Group {
    members: Mutex<Members>,
    /// Its connection's `CLIENT ID`, once connected.
    client_id: std::sync::OnceLock<i64>,
    /// Told when the first topic joins (the group connects then).
    joined: tokio::sync::Notify,
}

#[derive(Default)]
struct Members {
    /// By stream key.
    topics: HashMap<String, Member>,
    /// Topics joining or reading: the group's load.
    assigned: usize,
    /// The group's task has ended: nothing joins any more.
    closed: bool,
}

/// A topic read by a group.
struct Member {
    topic: Arc<str>,
    generation: u64,
    last: (u64, u64),
    feed: EndOnDrop,
    state: watch::Sender<ReaderState>,
}

/// A feed that ends when its reader stops, however it stops.
struct EndOnDrop(Feed);

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// How a topic joins a group.
struct Join {
    shared: Arc<Shared>,
    connection: Connection,
    group: Arc<Group>,
    topic: Arc<str>,
    key: String,
    epoch_key: String,
    timeout: Duration,
    generation: u64,
    /// Whether a `CLIENT UNBLOCK` sent on `connection` reaches the group's server (not on a
    /// cluster, whose groups hold one topic each: nothing to wake).
    wake: bool,
}

impl Join {
    /// Reads the topic's head (on the shared connection), starts its feed there and hands it
    /// to the group, which reads what follows; the topic's reader fails when Redis does.
    async fn run(self, state: watch::Sender<ReaderState>) {
        let mut call = HEAD_SCRIPT.key(&self.key);
        call.key(&self.epoch_key);
        let mut connection = self.connection.clone();
        let answer: Result<Result<(String, String), _>, _> =
            tokio::time::timeout(self.timeout, call.invoke_async(&mut connection)).await;
        let head = match answer {
            Ok(Ok((epoch, head))) => {
                self.shared.saw_epoch(&self.topic, &epoch);
                parse_entry_id(&head).ok_or(Failure::Malformed(head))
            }
            Ok(Err(error)) => Err(Failure::Redis(error)),
            Err(_) => Err(Failure::Timeout(self.timeout)),
        };
        let last = match head {
            Ok(last) => last,
            Err(error) => {
                self.group.leave();
                self.shared.remove(&self.topic, self.generation);
                state.send_replace(ReaderState::Failed(
                    failed("read", &error).to_string().into(),
                ));
                return;
            }
        };
        let feed = EndOnDrop(self.shared.fanout.feed(&self.topic, position(last)));
        {
            let mut members = self
                .group
                .members
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if members.closed {
                drop(members);
                self.shared.remove(&self.topic, self.generation);
                state.send_replace(ReaderState::Failed(
                    "the Redis broadcaster's reader stopped".into(),
                ));
                return;
            }
            state.send_replace(ReaderState::Reading);
            members.topics.insert(
                self.key,
                Member {
                    topic: self.topic,
                    generation: self.generation,
                    last,
                    feed,
                    state,
                },
            );
        }
        self.group.joined.notify_one();
        // The group may be blocked in an XREAD without this topic: it wakes, and reads again
        // with it. (Were the wake to come just before that XREAD, the topic waits one block,
        // 1 s, missing nothing: the group reads after `last`.)
        if self.wake
            && let Some(&id) = self.group.client_id.get()
        {
            let unblock = redis::cmd("CLIENT").arg("UNBLOCK").arg(id).clone();
            let _ = tokio::time::timeout(self.timeout, unblock.query_async::<i64>(&mut connection))
                .await;
        }
    }
}

impl Group {
    fn new() -> Self {
        Self {
            members: Mutex::default(),
            client_id: std::sync::OnceLock::new(),
            joined: tokio::sync::Notify::new(),
        }
    }

    /// A joining topic that failed leaves.
    fn leave(&self) {
        let mut members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
        members.assigned = members.assigned.saturating_sub(1);
    }

    /// Reads its topics until none is left (`Ok`) or Redis fails: every topic's reader then
    /// fails (its subscriptions end, and their clients reconnect).
    async fn run(self: Arc<Self>, shared: Arc<Shared>, nodes: Nodes, timeout: Duration) {
        let outcome = self.read(&shared, &nodes, timeout).await;
        let members = {
            let mut readers = shared
                .readers
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            readers.groups.retain(|group| !Arc::ptr_eq(group, &self));
            let mut members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
            members.closed = true;
            std::mem::take(&mut members.topics)
        };
        if let Err(error) = outcome {
            let message: Arc<str> = failed("read", &error).to_string().into();
            for member in members.into_values() {
                shared.remove(&member.topic, member.generation);
                member
                    .state
                    .send_replace(ReaderState::Failed(Arc::clone(&message)));
            }
        }
    }

    async fn read(&self, shared: &Shared, nodes: &Nodes, timeout: Duration) -> Result<(), Failure> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(READ_BLOCK + timeout));
        // Connected once a topic has joined (on a cluster, to the node of its slot).
        let first = loop {
            let joined = self.joined.notified();
            if let Some(key) = self.any_key() {
                break key;
            }
            if tokio::time::timeout(timeout * 2, joined).await.is_err()
                && self.close_if_idle(shared)
            {
                return Ok(());
            }
        };
        let mut connection = match nodes {
            Nodes::Single(client) => client
                .get_multiplexed_async_connection_with_config(&config)
                .await
                .map_err(Failure::Redis)?,
            Nodes::Cluster(nodes) => cluster_node(nodes, &config, &first).await?,
        };
        let id: i64 = redis::cmd("CLIENT")
            .arg("ID")
            .query_async(&mut connection)
            .await
            .map_err(Failure::Redis)?;
        let _ = self.client_id.set(id);
        let block = u64::try_from(READ_BLOCK.as_millis()).unwrap_or(1000);
        loop {
            let mut command = redis::cmd("XREAD");
            command
                .arg("COUNT")
                .arg(READ_COUNT)
                .arg("BLOCK")
                .arg(block)
                .arg("STREAMS");
            let positions: Vec<String> = {
                let members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
                for key in members.topics.keys() {
                    command.arg(key);
                }
                members
                    .topics
                    .values()
                    .map(|member| format!("{}-{}", member.last.0, member.last.1))
                    .collect()
            };
            if positions.is_empty() {
                if self.close_if_idle(shared) {
                    return Ok(());
                }
                // A topic is joining: its wake may come before this XREAD; wait for it.
                let _ = tokio::time::timeout(timeout, self.joined.notified()).await;
                continue;
            }
            command.arg(&positions);
            let reply: Option<Vec<(String, Vec<Entry>)>> = command
                .query_async(&mut connection)
                .await
                .map_err(Failure::Redis)?;
            let mut read = std::collections::HashSet::new();
            {
                let mut members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
                for (key, entries) in reply.into_iter().flatten() {
                    let Some(member) = members.topics.get_mut(&key) else {
                        continue;
                    };
                    for entry in entries {
                        let (id, received) = received(entry)?;
                        member.last = id;
                        member.feed.0.push(position(id), received);
                        read.insert(key.clone());
                    }
                }
            }
            self.release_idle(shared, &read);
        }
    }

    /// Any of its topics' stream key.
    fn any_key(&self) -> Option<String> {
        let members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
        members.topics.keys().next().cloned()
    }

    /// Topics that read nothing and that no subscription needs leave.
    fn release_idle(&self, shared: &Shared, read: &std::collections::HashSet<String>) {
        let idle: Vec<(String, Arc<str>, u64)> = {
            let members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
            members
                .topics
                .iter()
                .filter(|(key, _)| !read.contains(*key))
                .map(|(key, member)| (key.clone(), Arc::clone(&member.topic), member.generation))
                .collect()
        };
        // The readers' lock before the members' (the order `interest` takes them in).
        let released: Vec<(String, u64)> = idle
            .into_iter()
            .filter(|(_, topic, generation)| shared.release_if_idle(topic, *generation))
            .map(|(key, _, generation)| (key, generation))
            .collect();
        if released.is_empty() {
            return;
        }
        let mut members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
        for (key, generation) in released {
            // Not a newer reader of the same topic that joined meanwhile.
            if members
                .topics
                .get(&key)
                .is_some_and(|member| member.generation == generation)
            {
                members.topics.remove(&key);
                members.assigned = members.assigned.saturating_sub(1);
            }
        }
    }

    /// Closes the group when nothing is assigned to it: whether it did (its task ends).
    fn close_if_idle(&self, shared: &Shared) -> bool {
        let mut readers = shared
            .readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
        if members.assigned > 0 {
            return false;
        }
        members.closed = true;
        drop(members);
        readers
            .groups
            .retain(|group| !std::ptr::eq(Arc::as_ptr(group), self));
        true
    }
}

/// A connection to the cluster node holding `key`'s slot, found by following `MOVED` from
/// the first node that answers.
async fn cluster_node(
    nodes: &[ConnectionInfo],
    config: &AsyncConnectionConfig,
    key: &str,
) -> Result<MultiplexedConnection, Failure> {
    let mut last = None;
    for node in nodes {
        let mut node = node.clone();
        // A slot's owner answers; a node that is not redirects once (twice while the
        // cluster moves the slot).
        for _ in 0..3 {
            let connection = match Client::open(node.clone()) {
                Ok(client) => {
                    client
                        .get_multiplexed_async_connection_with_config(config)
                        .await
                }
                Err(error) => Err(error),
            };
            let mut connection = match connection {
                Ok(connection) => connection,
                Err(error) => {
                    last = Some(error);
                    break;
                }
            };
            let exists = redis::cmd("EXISTS").arg(key).clone();
            match exists.query_async::<i64>(&mut connection).await {
                Ok(_) => return Ok(connection),
                Err(error) => {
                    let Some((host, port)) = error.redirect_node() else {
                        return Err(Failure::Redis(error));
                    };
                    node = node.set_addr(ConnectionAddr::Tcp(host.to_owned(), port));
                    last = Some(error);
                }
            }
        }
    }
    Err(last.map_or_else(
        || Failure::Malformed("no cluster node given".to_owned()),
        Failure::Redis,
    ))
}

/// The Redis server's clock minus ours. Each answer gives a value from below (its time when
/// the script ran, against ours when the answer arrived: less the way back, which a loaded
/// replica makes long); the estimate is the largest of the last 30 to 60 s, so that a slow
/// answer does not shorten the next deadlines, and a clock that was stepped back is followed
/// within a minute.
#[derive(Default)]
struct ClockOffset {
    window: Mutex<OffsetWindow>,
}

#[derive(Default)]
struct OffsetWindow {
    started: Option<std::time::Instant>,
    current: Option<i64>,
    previous: Option<i64>,
}

impl ClockOffset {
    const WINDOW: Duration = Duration::from_secs(30);

    fn sample(&self, offset: i64) {
        let mut window = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        let now = std::time::Instant::now();
        if window
            .started
            .is_none_or(|started| now.duration_since(started) >= Self::WINDOW)
        {
            window.previous = window.current.take();
            window.started = Some(now);
        }
        window.current = Some(window.current.map_or(offset, |best| best.max(offset)));
    }

    /// The estimate (0 before any answer).
    fn estimate(&self) -> i64 {
        let window = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        window.current.max(window.previous).unwrap_or(0)
    }
}

/// Milliseconds since the Unix epoch on this machine's clock.
fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

/// A stream entry as Redis answers it: its id and its fields and values.
type Entry = (String, Vec<String>);

/// The event of a stream entry (fields `e`, `n`, `d`), with its entry id.
fn received((id, fields): Entry) -> Result<((u64, u64), Received), Failure> {
    let entry = parse_entry_id(&id).ok_or_else(|| Failure::Malformed(id.clone()))?;
    let (mut epoch, mut name, mut data) = (None, None, None);
    for pair in fields.chunks_exact(2) {
        match pair[0].as_str() {
            "e" => epoch = Some(&pair[1]),
            "n" => name = Some(&pair[1]),
            "d" => data = Some(&pair[1]),
            _ => {}
        }
    }
    let (Some(epoch), Some(name), Some(data)) = (epoch, name, data) else {
        return Err(Failure::Malformed(format!(
            "the entry {id} lacks e, n or d"
        )));
    };
    let event = BusEvent::from_parts(name, data)
        .map_err(|error| Failure::Malformed(format!("the entry {id}: {error}")))?;
    Ok((
        entry,
        Received {
            id: format!("{epoch}-{id}").into(),
            event,
        },
    ))
}

/// A stream entry id `<ms>-<seq>`.
fn parse_entry_id(id: &str) -> Option<(u64, u64)> {
    let (ms, seq) = id.split_once('-')?;
    Some((ms.parse().ok()?, seq.parse().ok()?))
}

/// An event id `<epoch>-<ms>-<seq>`: the epoch and the entry's position.
fn parse_event_id(id: &str) -> Option<(&str, u128)> {
    let (epoch, entry) = id.split_once('-')?;
    Some((epoch, position(parse_entry_id(entry)?)))
}

/// An entry id as a fan-out position (in the same order).
fn position((ms, seq): (u64, u64)) -> u128 {
    (u128::from(ms) << 64) | u128::from(seq)
}

/// Eight hex digits, drawn from the standard library's random hasher keys and the time.
fn random_word() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    format!("{:08x}", hasher.finish() & 0xffff_ffff)
}

/// The error of a failed `call`, logged at most once per 10 s per call.
fn failed(call: &'static str, failure: &Failure) -> BroadcastError {
    let message = format!("the Redis broadcaster's {call} failed: {failure}");
    if let Some(left_out) = FAILURES.admit(call) {
        tracing::warn!(
            target: "strata_redis",
            left_out,
            "{message} ({left_out} more like it since the last one logged)"
        );
    }
    BroadcastError::backend(message)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn ids_keep_the_streams_order() {
        assert_eq!(
            parse_entry_id("1700000000000-3"),
            Some((1_700_000_000_000, 3))
        );
        assert_eq!(parse_entry_id("17-x"), None);
        let (epoch, first) = parse_event_id("0a1b2c3d-1700000000000-3").unwrap();
        assert_eq!(epoch, "0a1b2c3d");
        let (_, second) = parse_event_id("0a1b2c3d-1700000000000-4").unwrap();
        let (_, third) = parse_event_id("0a1b2c3d-1700000000001-0").unwrap();
        assert!(first < second && second < third);
        assert_eq!(parse_event_id("nonsense"), None);
        assert_eq!(parse_event_id("0a1b2c3d-17"), None);
        assert_eq!(random_word().len(), 8);
    }

    #[test]
    fn a_slow_answer_does_not_shorten_the_deadlines() {
        let clock = ClockOffset::default();
        assert_eq!(clock.estimate(), 0);
        clock.sample(-5);
        // An answer that took 300 ms to come back under load.
        clock.sample(-305);
        assert_eq!(clock.estimate(), -5);
        clock.sample(40);
        assert_eq!(clock.estimate(), 40);
    }

    #[test]
    fn entries_become_events() {
        let entry = (
            "5-1".to_owned(),
            ["e", "ab12cd34", "n", "count", "d", "7"]
                .map(str::to_owned)
                .to_vec(),
        );
        let ((ms, seq), received) = received(entry).unwrap();
        assert_eq!((ms, seq), (5, 1));
        assert_eq!(&*received.id, "ab12cd34-5-1");
        assert_eq!(received.event.name(), "count");
        assert_eq!(received.event.data(), "7");
        let foreign = ("5-2".to_owned(), vec!["x".to_owned(), "1".to_owned()]);
        assert!(super::received(foreign).is_err());
    }
}
