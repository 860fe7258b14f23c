//! [`EventStream`]: the handler output of an event-stream endpoint, and its body.

use std::any::Any;
use std::borrow::Cow;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use garde::Validate;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, StatusCode};
use http_body::{Body, Frame};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};
use serde_json::{Value, json};
use strata_core::{
    ApiError, BoxError, Logger, Output, PollFrame, ResponseBody, ResponseDescription, StreamFailure,
};
use strata_output::{HandlerOutput, RangeHeaders};
use tokio::sync::mpsc;
use tokio::time::{Instant, Sleep};
use tokio_util::task::AbortOnDropHandle;

use crate::emitter::Emitter;

/// How many events wait for a slow client before `emit` waits too.
const QUEUE: usize = 8;

/// The comment sent when nothing else was for the keep-alive interval.
const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// What the handler's task sends to the response body.
#[derive(Debug)]
pub(crate) enum Message {
    /// Bytes of the stream (an event, a `retry:`).
    Frame(Bytes),
    /// The handler failed: the stream ends with this error.
    Failed(ApiError),
}

/// The types that can be events: enums that serde writes as `{"name": data}` or `"name"`,
/// checked by garde and described by their JSON Schema.
pub trait Events: Serialize + Validate<Context: Default> + JsonSchema + Send + 'static {}

impl<E> Events for E where E: Serialize + Validate<Context: Default> + JsonSchema + Send + 'static {}

/// Options of an event stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventStreamOptions {
    /// A comment is sent when no event was for this long, once the stream started (proxies
    /// close idle connections); `None`: no keep-alives. Default 15 s; at least 10 ms.
    pub keep_alive: Option<Duration>,
}

impl Default for EventStreamOptions {
    fn default() -> Self {
        Self {
            keep_alive: Some(Duration::from_secs(15)),
        }
    }
}

/// An event stream of `E`s, fed by a handler running as its own task: the output of an
/// event-stream endpoint.
pub struct EventStream<E> {
    receiver: mpsc::Receiver<Message>,
    /// Stops the handler's task when the stream (or its body) is dropped: nobody listens.
    task: AbortOnDropHandle<()>,
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

impl<E: Events> EventStream<E> {
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
        let emitter = Emitter::new(sender.clone(), last_event_id);
        let running = CatchUnwind(Box::pin(handler(emitter)));
        let task = tokio::spawn(async move {
            let failure = match running.await {
                Ok(Ok(())) => return,
                Ok(Err(error)) => error,
                Err(payload) => panic_error(&*payload),
            };
            // Nobody may listen any more: then there is no one to tell.
            let _ = sender.send(Message::Failed(failure)).await;
        });
        Self {
            receiver,
            task: AbortOnDropHandle::new(task),
            options,
            logger: None,
            _events: PhantomData,
        }
    }

    /// Logs a failure of the handler after the first event with `logger` (the stream then
    /// ends cleanly: what was emitted is whole).
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

/// The response body: events as the handler emits them, keep-alives between them; dropping it
/// (the client is gone) stops the handler's task.
struct EventBody {
    receiver: mpsc::Receiver<Message>,
    // Dropped with the body: the client is gone.
    _task: AbortOnDropHandle<()>,
    keep_alive: Option<Duration>,
    /// Armed once the first event went out.
    idle: Option<Pin<Box<Sleep>>>,
    started: bool,
    logger: Option<Logger>,
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
}

impl Body for EventBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> PollFrame {
        match self.receiver.poll_recv(cx) {
            Poll::Ready(Some(Message::Frame(frame))) => {
                self.started = true;
                self.rearm();
                return Poll::Ready(Some(Ok(Frame::data(frame))));
            }
            // Before the first event: the format stage answers with the error itself.
            Poll::Ready(Some(Message::Failed(error))) if !self.started => {
                return Poll::Ready(Some(Err(Box::new(StreamFailure(error)))));
            }
            // After it: every event sent is whole, so end cleanly (the client's EventSource
            // reconnects, with `Last-Event-ID`) and say why.
            Poll::Ready(Some(Message::Failed(error))) => {
                if let Some(logger) = &self.logger {
                    logger.error_with_causes(
                        format_args!(
                            "The event stream ended after its first event: {}",
                            error.message()
                        ),
                        &error,
                    );
                }
                self.idle = None;
                self.receiver.close();
                return Poll::Ready(None);
            }
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => {}
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

impl<E: Events> HandlerOutput for EventStream<E> {
    type Body = EventFrames<E>;

    fn into_parts(self) -> (StatusCode, HeaderMap, EventFrames<E>) {
        (StatusCode::OK, HeaderMap::new(), EventFrames(PhantomData))
    }

    fn into_streamed(self, _: &RangeHeaders) -> Result<Output, Self> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        let body = EventBody {
            receiver: self.receiver,
            _task: self.task,
            keep_alive: self.options.keep_alive,
            idle: None,
            started: false,
            logger: self.logger,
        };
        Ok(Output::streamed(
            StatusCode::OK,
            headers,
            ResponseBody::stream(body),
        ))
    }

    fn describe(body: &Schema) -> Option<Vec<ResponseDescription>> {
        Some(vec![
            ResponseDescription::new(StatusCode::OK, body.clone())
                .mime_type("text/event-stream")
                .description("A stream of events"),
        ])
    }
}
