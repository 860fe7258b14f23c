//! [`EventStream`]: the handler output of an event-stream endpoint, and its body.

use std::any::Any;
use std::borrow::Cow;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use garde::Validate;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, StatusCode};
use http_body::{Body as HttpBody, Frame};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};
use serde_json::{Value, json};
use strata_core::{
    ApiError, Body, BoxError, Logger, Output, PollFrame, ResponseDescription, StreamShutdown,
};
use strata_log::LogRateLimit;
use strata_output::{HandlerOutput, RangeHeaders};
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tokio_util::task::AbortOnDropHandle;

use crate::broadcast::{BroadcastError, Delivery, Gap, Received, Subscription};
use crate::emitter::{EmitError, Emitter, render};

/// How many events wait for a slow client before `emit` waits too.
const QUEUE: usize = 8;

/// The comment sent when nothing else was for the keep-alive interval.
const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// What the handler's task sends to the response body.
#[derive(Debug)]
pub(crate) enum Message {
    /// Bytes of the stream (an event, a `retry:`).
    Frame(Bytes),
    /// The handler failed: the stream ends with this error (boxed: the channel's slots are
    /// as large as its largest message, and there is one channel per client).
    Failed(Box<ApiError>),
    /// The handler relays a subscription: the body reads it until it is over.
    Relay(Box<Relay>),
}

/// Makes the frame of a gap's event (none: nothing is sent), or says why it cannot.
pub(crate) type GapFrame = Box<dyn FnMut(&Gap) -> Result<Option<Bytes>, EmitError> + Send>;

/// A subscription the body relays ([`Emitter::relay`]).
pub(crate) struct Relay {
    pub(crate) subscription: Subscription,
    /// The frame of a gap's event (none: nothing is sent), or why there is none.
    pub(crate) gap_frame: GapFrame,
    /// Told when the relay is over; closed when the handler stopped waiting for it. `None`:
    /// the stream's only source ([`EventStream::relay`]), whose end ends the stream.
    pub(crate) done: Option<oneshot::Sender<Result<(), BroadcastError>>>,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay").finish_non_exhaustive()
    }
}

impl Relay {
    /// The next frame to send: `Ready(Err)` when the relay is over (its result, for the
    /// handler), `Pending` when the subscription has nothing now.
    fn poll_frame(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Bytes, Result<(), BroadcastError>>> {
        loop {
            let delivery = match ready!(Pin::new(&mut self.subscription).poll_next(cx)) {
                None => return Poll::Ready(Err(Ok(()))),
                Some(Err(error)) => return Poll::Ready(Err(Err(error))),
                Some(Ok(delivery)) => delivery,
            };
            match delivery {
                Delivery::Event(Received { id, event }) => {
                    return Poll::Ready(Ok(render(event.name(), Some(&id), event.data())));
                }
                // The application's `on_gap` runs here, in the connection's task: a panic in
                // it ends the relay with an error (the stream then ends cleanly, and the
                // client reconnects), as it did in the handler's task.
                Delivery::Gap(gap) => {
                    match catch_unwind(AssertUnwindSafe(|| (self.gap_frame)(&gap))) {
                        Ok(Ok(Some(frame))) => return Poll::Ready(Ok(frame)),
                        Ok(Ok(None)) => {}
                        Ok(Err(error)) => return Poll::Ready(Err(Err(error.into()))),
                        Err(payload) => {
                            let message = format!(
                                "the relay's gap handler panicked: {}",
                                strata_core::panic_message(&*payload)
                            );
                            return Poll::Ready(Err(Err(BroadcastError::Backend(message.into()))));
                        }
                    }
                }
            }
        }
    }

    /// Tells the handler the relay is over; the failure, when no handler waits for it.
    fn finish(self, result: Result<(), BroadcastError>) -> Option<BroadcastError> {
        match self.done {
            // The handler may have stopped waiting: then nobody is to be told.
            Some(done) => {
                let _ = done.send(result);
                None
            }
            None => result.err(),
        }
    }
}

/// A type whose values are events: enums that serde writes as `{"name": data}` or `"name"`,
/// checked by garde and described by their JSON Schema.
pub trait Event: Serialize + Validate<Context: Default> + JsonSchema + Send + 'static {}

impl<E> Event for E where E: Serialize + Validate<Context: Default> + JsonSchema + Send + 'static {}

/// Options of an event stream.
///
/// ```
/// use std::time::Duration;
/// use strata_events::EventStreamOptions;
///
/// let options = EventStreamOptions::default().keep_alive(Some(Duration::from_secs(5)));
/// assert_eq!(options.shutdown_grace, Duration::from_secs(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventStreamOptions {
    /// A comment is sent when nothing else was for this long, from the moment the headers are
    /// sent (proxies close idle connections); `None`: no keep-alives. Default 15 s; at least
    /// 10 ms.
    pub keep_alive: Option<Duration>,
    /// At the server's graceful shutdown the emitter is told ([`Emitter::shutdown`]); what the
    /// handler emits within this grace is still sent, and the stream ends when the handler
    /// returns or the grace is over, whichever comes first. Default 1 s (keep it below the
    /// server's `shutdown_timeout`, which cuts whatever is left).
    pub shutdown_grace: Duration,
}

impl EventStreamOptions {
    strata_core::setters! {
        /// Sets [`keep_alive`](Self::keep_alive).
        keep_alive(every: Option<Duration>) => keep_alive = every;
        /// Sets [`shutdown_grace`](Self::shutdown_grace).
        shutdown_grace(grace: Duration) => shutdown_grace = grace;
    }
}

impl Default for EventStreamOptions {
    fn default() -> Self {
        Self {
            keep_alive: Some(Duration::from_secs(15)),
            shutdown_grace: Duration::from_secs(1),
        }
    }
}

/// An event stream of `E`s, fed by a handler running as its own task
/// ([`EventStream::start`]), or relaying a topic by itself ([`EventStream::relay`]): the
/// output of an event-stream endpoint.
pub struct EventStream<E> {
    /// The handler's task and what it sends; `None` for a relayed topic alone.
    handler: Option<HandlerTask>,
    /// The topic relayed by itself.
    relay: Option<Relay>,
    /// Cancelled when the server's graceful shutdown begins.
    shutdown: CancellationToken,
    options: EventStreamOptions,
    logger: Option<Logger>,
    _events: PhantomData<fn() -> E>,
}

impl<E> std::fmt::Debug for EventStream<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<E: Event> EventStream<E> {
    /// Runs `handler` with an [`Emitter`] as a task of the current tokio runtime; the stream
    /// carries what it emits. `last_event_id` is the request's `Last-Event-ID`.
    pub fn start<F, Fut>(
        options: EventStreamOptions,
        last_event_id: Option<String>,
        handler: F,
    ) -> Self
    where
        F: FnOnce(Emitter<E>) -> Fut,
        Fut: Future<Output = Result<(), ApiError>> + Send + 'static,
    {
        let (sender, receiver) = mpsc::channel(QUEUE);
        let shutdown = CancellationToken::new();
        let emitter = Emitter::new(sender.clone(), last_event_id, shutdown.clone());
        let running = CatchUnwind(Box::pin(handler(emitter)));
        let task = tokio::spawn(async move {
            let failure = match running.await {
                Ok(Ok(())) => return,
                Ok(Err(error)) => error,
                Err(payload) => panic_error(&*payload),
            };
            // Nobody may listen any more: then there is no one to tell.
            let _ = sender.send(Message::Failed(Box::new(failure))).await;
        });
        Self {
            handler: Some(HandlerTask {
                receiver,
                _task: AbortOnDropHandle::new(task),
            }),
            relay: None,
            shutdown,
            options,
            logger: None,
            _events: PhantomData,
        }
    }

    /// The stream of `relay` alone ([`EventStream::relay`]).
    pub(crate) fn relayed(options: EventStreamOptions, relay: Relay) -> Self {
        Self {
            handler: None,
            relay: Some(relay),
            shutdown: CancellationToken::new(),
            options,
            logger: None,
            _events: PhantomData,
        }
    }

    /// Logs a failure of the handler (or of a relay alone) with `logger` (the stream then ends
    /// cleanly: what was emitted is whole).
    #[must_use]
    pub fn logger(mut self, logger: Logger) -> Self {
        self.logger = Some(logger);
        self
    }
}

fn panic_error(payload: &(dyn Any + Send)) -> ApiError {
    ApiError::internal(format!(
        "Panic in the event stream: {}",
        strata_core::panic_message(payload)
    ))
}

/// A future that turns a panic while polling `F` into an `Err` with the panic's payload.
struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match catch_unwind(AssertUnwindSafe(|| self.0.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

/// The `Last-Event-ID` of a request with `headers`: the id of the last event a reconnecting
/// client received (any UTF-8: ids are the application's own text).
///
/// ```
/// use http::HeaderMap;
///
/// let mut headers = HeaderMap::new();
/// assert_eq!(strata_events::last_event_id(&headers), None);
/// headers.insert("last-event-id", "41".parse().unwrap());
/// assert_eq!(strata_events::last_event_id(&headers), Some("41"));
/// ```
pub fn last_event_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("last-event-id")
        .and_then(|value| std::str::from_utf8(value.as_bytes()).ok())
}

/// A handler running as its own task, and what it sends.
struct HandlerTask {
    receiver: mpsc::Receiver<Message>,
    // Dropped with the stream or its body: nobody listens.
    _task: AbortOnDropHandle<()>,
}

/// The response body: an empty first piece (the format stage then sends the head at once),
/// events as the handler emits them and relays deliver them, keep-alives between them from
/// the start; at shutdown, what the handler emits within the grace. Dropping it (the client
/// is gone) stops the handler's task.
struct EventBody {
    /// `None` for a relay alone: the stream ends with it.
    handler: Option<HandlerTask>,
    keep_alive: Option<Duration>,
    /// Armed when the head goes, reset by every piece.
    idle: Option<Pin<Box<Sleep>>>,
    /// The head has gone (the empty first piece).
    opened: bool,
    /// Resolves when the server's graceful shutdown begins; `None` once it has.
    shutdown: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    shutdown_grace: Duration,
    /// Armed at shutdown: the stream ends when it fires.
    ending: Option<Pin<Box<Sleep>>>,
    logger: Option<Logger>,
    /// The subscriptions the handler relays ([`Emitter::relay`]), read here.
    relays: Vec<Relay>,
    /// The source to poll first: 0 the handler's channel, then the relays.
    turn: usize,
}

/// The shortest keep-alive interval: a smaller one would make the stream a busy loop.
const MIN_KEEP_ALIVE: Duration = Duration::from_millis(10);

impl EventBody {
    fn rearm(&mut self) {
        let Some(every) = self.keep_alive else { return };
        // An interval beyond what the clock can count means none.
        let Some(deadline) = Instant::now().checked_add(every.max(MIN_KEEP_ALIVE)) else {
            return;
        };
        match &mut self.idle {
            Some(idle) => idle.as_mut().reset(deadline),
            None => self.idle = Some(Box::pin(tokio::time::sleep_until(deadline))),
        }
    }

    /// Ends the stream now (cleanly: the final chunk).
    fn end(&mut self) -> PollFrame {
        self.idle = None;
        self.ending = None;
        if let Some(handler) = &mut self.handler {
            handler.receiver.close();
        }
        // Their handlers learn that the client is gone.
        self.relays.clear();
        Poll::Ready(None)
    }

    /// What the handler sent.
    fn poll_handler(&mut self, cx: &mut Context<'_>) -> Source {
        let Some(handler) = &mut self.handler else {
            return Source::Pending;
        };
        match handler.receiver.poll_recv(cx) {
            Poll::Ready(Some(Message::Frame(frame))) => Source::Frame(frame),
            // The head is gone: every event sent is whole, so end cleanly (the client's
            // EventSource reconnects, with `Last-Event-ID`) and say why.
            Poll::Ready(Some(Message::Failed(error))) => {
                if let Some(logger) = &self.logger {
                    // Each client reconnects and fails again while the cause lasts (a broker
                    // that does not answer): one line per message every 5 s, with a count.
                    static HANDLER_FAILURES: LogRateLimit =
                        LogRateLimit::new(std::time::Duration::from_secs(5));
                    strata_log::error_rate_limited(
                        logger,
                        &HANDLER_FAILURES,
                        format_args!("The event stream's handler failed: {}", error.message()),
                        &error,
                    );
                }
                Source::End
            }
            Poll::Ready(Some(Message::Relay(relay))) => {
                if self.shutdown.is_some() {
                    self.relays.push(*relay);
                } else {
                    // The server is shutting down: a relay stops there.
                    self.finish_relay(*relay, Ok(()));
                }
                Source::Changed
            }
            Poll::Ready(None) => Source::End,
            Poll::Pending => Source::Pending,
        }
    }

    /// The next frame of the `index`th relay.
    fn poll_relay(&mut self, index: usize, cx: &mut Context<'_>) -> Source {
        let relay = &mut self.relays[index];
        // The handler stopped waiting for it (dropped the relay's future).
        if let Some(done) = &mut relay.done
            && done.poll_closed(cx).is_ready()
        {
            self.relays.swap_remove(index);
            return Source::Changed;
        }
        match relay.poll_frame(cx) {
            Poll::Ready(Ok(frame)) => Source::Frame(frame),
            Poll::Ready(Err(result)) => {
                let relay = self.relays.swap_remove(index);
                self.finish_relay(relay, result);
                Source::Changed
            }
            Poll::Pending => Source::Pending,
        }
    }

    /// Ends `relay` with `result`: its handler is told, or the failure of a relay alone is
    /// logged.
    fn finish_relay(&self, relay: Relay, result: Result<(), BroadcastError>) {
        if let Some(error) = relay.finish(result)
            && let Some(logger) = &self.logger
        {
            // As a handler's failure: once per message every 5 s, however many reconnect.
            static RELAY_FAILURES: LogRateLimit =
                LogRateLimit::new(std::time::Duration::from_secs(5));
            let error = ApiError::internal(error.to_string());
            strata_log::error_rate_limited(
                logger,
                &RELAY_FAILURES,
                format_args!("The event stream's relay failed: {}", error.message()),
                &error,
            );
        }
    }
}

/// What a source of frames gave the body.
enum Source {
    Frame(Bytes),
    /// The stream ends.
    End,
    /// The set of relays changed: look again.
    Changed,
    Pending,
}

impl HttpBody for EventBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> PollFrame {
        if !self.opened {
            // The head goes now, whatever the handler does: a proxy sees bytes, the client's
            // `EventSource` opens, keep-alives count from here.
            self.opened = true;
            self.rearm();
            return Poll::Ready(Some(Ok(Frame::data(Bytes::new()))));
        }
        if let Some(shutdown) = &mut self.shutdown
            && shutdown.as_mut().poll(cx).is_ready()
        {
            self.shutdown = None;
            // A relay stops when the shutdown begins; its handler may still emit a last event.
            for relay in std::mem::take(&mut self.relays) {
                self.finish_relay(relay, Ok(()));
            }
            // A grace beyond what the clock can count ends at the server's cut.
            if let Some(deadline) = Instant::now().checked_add(self.shutdown_grace) {
                self.ending = Some(Box::pin(tokio::time::sleep_until(deadline)));
            }
        }
        // The handler's channel and the relays in turn, from the one after the last that gave
        // a frame: a busy relay does not starve the rest.
        'scan: loop {
            let sources = 1 + self.relays.len();
            for step in 0..sources {
                let source = (self.turn + step) % sources;
                let polled = if source == 0 {
                    self.poll_handler(cx)
                } else {
                    self.poll_relay(source - 1, cx)
                };
                match polled {
                    Source::Frame(frame) => {
                        self.turn = source + 1;
                        self.rearm();
                        return Poll::Ready(Some(Ok(Frame::data(frame))));
                    }
                    Source::End => return self.end(),
                    Source::Changed => continue 'scan,
                    Source::Pending => {}
                }
            }
            break;
        }
        // A relay alone has ended (or stopped at the shutdown): so does the stream.
        if self.handler.is_none() && self.relays.is_empty() {
            return self.end();
        }
        if let Some(ending) = &mut self.ending
            && ending.as_mut().poll(cx).is_ready()
        {
            return self.end();
        }
        let quiet = match &mut self.idle {
            Some(idle) => idle.as_mut().poll(cx).is_ready(),
            None => false,
        };
        if quiet {
            self.rearm();
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(KEEP_ALIVE)))));
        }
        Poll::Pending
    }
}

/// The body schema of an event stream of `E`: one of `{event, data, id?, retry?}` per event,
/// each field as an `EventSource` receives it: `data` is JSON text (`contentMediaType`) whose
/// value the event's type describes (`contentSchema`), as OpenAPI 3.2 advises for
/// `text/event-stream`.
#[derive(Debug, Clone, Copy, Default)]
pub struct EventFrames<E>(PhantomData<fn() -> E>);

impl<E> Serialize for EventFrames<E> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_unit()
    }
}

impl<E> Validate for EventFrames<E> {
    type Context = ();

    fn validate_into(&self, (): &(), _: &mut dyn FnMut() -> garde::Path, _: &mut garde::Report) {}
}

impl<E: JsonSchema> JsonSchema for EventFrames<E> {
    fn schema_name() -> Cow<'static, str> {
        format!("EventFrames_{}", E::schema_name()).into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let events = E::json_schema(generator);
        let frames: Vec<Value> = event_schemas(events.as_value())
            .into_iter()
            .map(|(name, data)| {
                json!({
                    "type": "object",
                    "properties": {
                        "event": { "const": name },
                        "data": {
                            "type": "string",
                            "contentMediaType": "application/json",
                            "contentSchema": data,
                        },
                        "id": { "type": "string" },
                        "retry": { "type": "integer", "minimum": 0 },
                    },
                    "required": ["event", "data"],
                })
            })
            .collect();
        let mut schema = Schema::default();
        schema.insert("oneOf".to_owned(), Value::Array(frames));
        schema
    }
}

/// The events of an externally tagged enum's schema: each name with its data's schema.
pub(crate) fn event_schemas(schema: &Value) -> Vec<(String, Value)> {
    let mut events = Vec::new();
    let mut visit = |member: &Value| {
        for name in unit_names(member) {
            events.push((name, json!({ "type": "null" })));
        }
        if let Some(properties) = member.get("properties").and_then(Value::as_object)
            && properties.len() == 1
            && let Some((name, data)) = properties.iter().next()
        {
            events.push((name.clone(), data.clone()));
        }
    };
    visit(schema);
    for key in ["oneOf", "anyOf"] {
        for member in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            visit(member);
        }
    }
    events
}

/// The names a unit-variant schema allows (`{"type": "string", "enum": [..]}` or `const`).
fn unit_names(schema: &Value) -> Vec<String> {
    let names = schema
        .get("enum")
        .and_then(Value::as_array)
        .cloned()
        .or_else(|| schema.get("const").map(|c| vec![c.clone()]))
        .unwrap_or_default();
    names
        .into_iter()
        .filter_map(|name| name.as_str().map(str::to_owned))
        .collect()
}

impl<E: Event> HandlerOutput for EventStream<E> {
    type Body = EventFrames<E>;

    fn into_parts(self) -> (StatusCode, HeaderMap, EventFrames<E>) {
        (StatusCode::OK, HeaderMap::new(), EventFrames(PhantomData))
    }

    fn into_streamed(self, _: &RangeHeaders) -> Result<Output, Self> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        let token = self.shutdown;
        let body = EventBody {
            handler: self.handler,
            keep_alive: self.options.keep_alive,
            idle: None,
            opened: false,
            shutdown: Some(Box::pin(token.clone().cancelled_owned())),
            shutdown_grace: self.options.shutdown_grace,
            ending: None,
            logger: self.logger,
            relays: self.relay.into_iter().collect(),
            turn: 0,
        };
        let mut output = Output::streamed(StatusCode::OK, headers, Body::new(body));
        // The server tells the stream when its graceful shutdown begins.
        output
            .extensions_mut()
            .insert(StreamShutdown::new(move || token.cancel()));
        Ok(output)
    }

    fn describe(body: &Schema) -> Option<Vec<ResponseDescription>> {
        Some(vec![
            ResponseDescription::new(StatusCode::OK, body.clone())
                .mime_type("text/event-stream")
                .description("A stream of events"),
        ])
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use http_body_util::BodyExt;
    use strata_core::Body;
    use tokio::sync::oneshot;

    use super::*;
    use crate::broadcast::{MemoryBroadcaster, ReplayWindow, Topic};

    #[derive(Serialize, Validate, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    #[garde(allow_unvalidated)]
    enum Feed {
        Count(u32),
        Done,
    }

    fn topic() -> Topic<Feed> {
        Topic::new(
            Arc::new(MemoryBroadcaster::new(ReplayWindow::last(16))),
            "feed",
        )
    }

    /// The stream's body (past its empty first piece) and its shutdown trigger.
    async fn open(stream: EventStream<Feed>) -> (Body, StreamShutdown) {
        let mut output = stream
            .into_streamed(&RangeHeaders::default())
            .unwrap_or_else(|_| panic!("an event stream streams"));
        let shutdown = output.extensions_mut().remove::<StreamShutdown>().unwrap();
        let mut body = output.take_stream().unwrap();
        assert_eq!(next(&mut body).await.as_deref(), Some(""));
        (body, shutdown)
    }

    /// The next data frame, as text; `None` at the end.
    async fn next(body: &mut Body) -> Option<String> {
        let frame = tokio::time::timeout(Duration::from_secs(5), body.frame())
            .await
            .expect("a frame within 5 s")?;
        let data = frame.unwrap().into_data().unwrap();
        Some(String::from_utf8(data.to_vec()).unwrap())
    }

    fn data(frame: &str) -> &str {
        frame.rsplit("data: ").next().unwrap().trim_end()
    }

    #[tokio::test]
    async fn the_body_relays_and_what_the_handler_emits_meanwhile_goes_between() {
        let feed = topic();
        let relayed = feed.clone();
        let (go, emit_now) = oneshot::channel::<()>();
        let stream = EventStream::start(
            EventStreamOptions::default(),
            None,
            move |emitter| async move {
                let relay = emitter.relay(&relayed, |_gap| None);
                let aside = async {
                    emit_now.await.unwrap();
                    emitter.emit(Feed::Done).await
                };
                let (relayed, aside) = tokio::join!(relay, aside);
                relayed.unwrap();
                aside.unwrap();
                Ok(())
            },
        );
        let (mut body, _shutdown) = open(stream).await;
        // The relay has subscribed once the handler has run: give it the turn.
        tokio::task::yield_now().await;
        feed.publish(&Feed::Count(1)).await.unwrap();
        assert_eq!(data(&next(&mut body).await.unwrap()), "1");
        go.send(()).unwrap();
        assert_eq!(
            next(&mut body).await.unwrap(),
            "event: done\ndata: null\n\n"
        );
        feed.publish(&Feed::Count(2)).await.unwrap();
        assert_eq!(data(&next(&mut body).await.unwrap()), "2");
    }

    #[tokio::test]
    async fn dropping_the_relay_stops_it_and_the_handler_goes_on() {
        let feed = topic();
        let relayed = feed.clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let stream = EventStream::start(
            EventStreamOptions::default(),
            None,
            move |emitter| async move {
                tokio::select! {
                    relayed = emitter.relay(&relayed, |_gap| None) => relayed.unwrap(),
                    _ = stopped => {}
                }
                emitter.emit(Feed::Done).await.unwrap();
                Ok(())
            },
        );
        let (mut body, _shutdown) = open(stream).await;
        tokio::task::yield_now().await;
        feed.publish(&Feed::Count(1)).await.unwrap();
        assert_eq!(data(&next(&mut body).await.unwrap()), "1");
        stop.send(()).unwrap();
        tokio::task::yield_now().await;
        feed.publish(&Feed::Count(2)).await.unwrap();
        assert_eq!(
            next(&mut body).await.unwrap(),
            "event: done\ndata: null\n\n"
        );
        // The handler returned: the stream ends, without the event published after the stop.
        assert_eq!(next(&mut body).await, None);
    }

    #[tokio::test]
    async fn a_relay_alone_streams_the_topic_and_ends_at_shutdown() {
        let feed = topic();
        let earlier = feed.publish(&Feed::Count(1)).await.unwrap();
        feed.publish(&Feed::Count(2)).await.unwrap();
        let stream = EventStream::relay(
            EventStreamOptions::default(),
            &feed,
            Some(&earlier),
            |_gap| None,
        )
        .await
        .unwrap();
        let (mut body, shutdown) = open(stream).await;
        // After the client's last event: the next, then the live ones.
        assert_eq!(data(&next(&mut body).await.unwrap()), "2");
        feed.publish(&Feed::Count(3)).await.unwrap();
        let third = next(&mut body).await.unwrap();
        assert!(third.starts_with("event: count\nid: "), "{third}");
        assert_eq!(data(&third), "3");
        shutdown.begin();
        assert_eq!(next(&mut body).await, None);
    }

    /// A broadcaster whose subscriptions deliver one event, then fail.
    struct Failing;

    struct OneThenFailure(Option<Delivery>);

    impl Stream for OneThenFailure {
        type Item = Result<Delivery, BroadcastError>;

        fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            Poll::Ready(Some(match self.0.take() {
                Some(delivery) => Ok(delivery),
                None => Err(BroadcastError::Backend("the connection was reset".into())),
            }))
        }
    }

    impl crate::Broadcaster for Failing {
        fn publish<'a>(
            &'a self,
            _: &'a str,
            _: crate::BusEvent,
        ) -> crate::broadcast::BoxFuture<'a, Result<Arc<str>, BroadcastError>> {
            Box::pin(std::future::ready(Err(BroadcastError::Backend(
                "read-only".into(),
            ))))
        }

        fn subscribe<'a>(
            &'a self,
            _: &'a str,
            _: Option<&'a str>,
        ) -> crate::broadcast::BoxFuture<'a, Result<Subscription, BroadcastError>> {
            let event = crate::BusEvent::from_parts("count", "7").unwrap();
            let delivery = Delivery::Event(Received {
                id: "x-1".into(),
                event,
            });
            Box::pin(std::future::ready(Ok(Subscription::new(OneThenFailure(
                Some(delivery),
            )))))
        }
    }

    #[derive(Default)]
    struct Capture(std::sync::Mutex<Vec<String>>);

    impl strata_core::logger::LogSink for Capture {
        fn log(&self, _: strata_core::logger::Level, message: std::fmt::Arguments<'_>) {
            self.0.lock().unwrap().push(message.to_string());
        }
    }

    /// While a broker does not answer, every client's reconnect fails the same way: one line
    /// per message every 5 s, not one per reconnect.
    #[tokio::test]
    async fn a_handler_failing_on_every_reconnect_is_logged_once_per_period() {
        const MESSAGE: &str = "the broker did not answer (a test of the log's limit)";
        let capture = Arc::new(Capture::default());
        for _ in 0..50 {
            let stream = EventStream::start(
                EventStreamOptions::default(),
                None,
                |emitter: Emitter<Feed>| async move {
                    emitter.emit(Feed::Count(1)).await.unwrap();
                    Err(ApiError::internal(MESSAGE))
                },
            )
            .logger(Logger::with_sink(capture.clone()));
            let (mut body, _shutdown) = open(stream).await;
            while next(&mut body).await.is_some() {}
        }
        let logged = capture.0.lock().unwrap();
        let lines = logged.iter().filter(|line| line.contains(MESSAGE)).count();
        assert_eq!(lines, 1, "{logged:?}");
    }

    #[tokio::test]
    async fn a_relay_alone_ends_when_its_subscription_fails_and_logs_why() {
        let feed = Topic::<Feed>::new(Arc::new(Failing), "feed");
        let capture = Arc::new(Capture::default());
        let stream = EventStream::relay(EventStreamOptions::default(), &feed, None, |_gap| None)
            .await
            .unwrap()
            .logger(Logger::with_sink(capture.clone()));
        let (mut body, _shutdown) = open(stream).await;
        assert_eq!(
            next(&mut body).await.unwrap(),
            "event: count\nid: x-1\ndata: 7\n\n"
        );
        // Ended cleanly: what was sent is whole, and the client reconnects.
        assert_eq!(next(&mut body).await, None);
        let logged = capture.0.lock().unwrap();
        assert!(
            logged
                .iter()
                .any(|line| line.contains("relay failed") && line.contains("reset")),
            "{logged:?}"
        );
    }

    #[tokio::test]
    async fn a_panicking_gap_handler_ends_the_relay_with_an_error_not_the_connection() {
        // A window of one: a subscriber resuming after an event that left it is told of a gap.
        let feed = Topic::<Feed>::new(
            Arc::new(MemoryBroadcaster::new(ReplayWindow::last(1))),
            "feed",
        );
        let first = feed.publish(&Feed::Count(1)).await.unwrap();
        feed.publish(&Feed::Count(2)).await.unwrap();
        feed.publish(&Feed::Count(3)).await.unwrap();
        let relayed = feed.clone();
        let (told, outcome) = oneshot::channel();
        let stream = EventStream::start(EventStreamOptions::default(), Some(first.to_string()), {
            move |emitter: Emitter<Feed>| async move {
                let result = emitter
                    .relay(&relayed, |_gap| -> Option<Feed> {
                        panic!("no gap expected")
                    })
                    .await;
                let _ = told.send(result.map_err(|error| error.to_string()));
                emitter.emit(Feed::Done).await.unwrap();
                Ok(())
            }
        });
        let (mut body, _shutdown) = open(stream).await;
        // The body reads the relay (and runs `on_gap`): the relay ends with the panic as its
        // error, and the handler goes on.
        assert_eq!(
            next(&mut body).await.unwrap(),
            "event: done\ndata: null\n\n"
        );
        let error = outcome.await.unwrap().unwrap_err();
        assert!(error.contains("no gap expected"), "{error}");
        assert_eq!(next(&mut body).await, None);
    }

    #[tokio::test]
    async fn at_shutdown_the_relay_returns_and_a_last_word_still_goes() {
        let feed = topic();
        let relayed = feed.clone();
        let stream = EventStream::start(
            EventStreamOptions::default(),
            None,
            move |emitter| async move {
                emitter.relay(&relayed, |_gap| None).await.unwrap();
                emitter.emit(Feed::Done).await.unwrap();
                Ok(())
            },
        );
        let (mut body, shutdown) = open(stream).await;
        tokio::task::yield_now().await;
        feed.publish(&Feed::Count(1)).await.unwrap();
        assert_eq!(data(&next(&mut body).await.unwrap()), "1");
        shutdown.begin();
        assert_eq!(
            next(&mut body).await.unwrap(),
            "event: done\ndata: null\n\n"
        );
        assert_eq!(next(&mut body).await, None);
    }
}
