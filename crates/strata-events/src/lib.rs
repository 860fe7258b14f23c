//! Server-sent events for Strata endpoints (express-zod-api's `EventStreamFactory`).
//!
//! The events are an enum: each variant is an event, named as serde names it (so
//! `#[serde(rename_all = "camelCase")]` applies), carrying its data (a unit variant carries
//! `null`). The handler gets an [`Emitter`]: [`Emitter::emit`] checks the event with its garde
//! rules and sends `event: <name>\ndata: <JSON>\n\n`; [`Emitter::is_closed`] and
//! [`Emitter::closed`] tell when to stop (the client is gone or the server is shutting down);
//! [`Emitter::last_event_id`] gives the `Last-Event-ID` a reconnecting client sends.
//!
//! The response is `text/event-stream` with `cache-control: no-cache`. Its head goes at once,
//! before the first event, so a proxy sees the stream open and the client's `EventSource`
//! fires `open`; a comment (`: keep-alive`) goes out whenever nothing else did for the
//! keep-alive interval (15 s by default), from the start, so a proxy's idle timeout does not
//! cut a stream whose first event is late. The status is then sent: an error the handler
//! returns (or a panic) ends the stream cleanly (the events sent are whole) and is logged.
//! Refuse a request before streaming in a middleware of the endpoint, which still answers
//! 401 and the like. When the client disconnects, the handler's task is dropped at its next
//! `.await`.
//!
//! **Graceful shutdown.** When the server's graceful shutdown begins, every emitter is told
//! ([`Emitter::shutdown`], [`Emitter::is_shutting_down`]; [`Emitter::closed`] resolves too).
//! What the handler emits within the stream's grace (`EventStreamOptions::shutdown_grace`,
//! 1 s) is still sent; the stream ends cleanly when the handler returns or the grace is over,
//! so a rolling restart does not wait for its `shutdown_timeout`, and clients reconnect (to
//! another replica) with their `Last-Event-ID`.
//!
//! **Topics.** To send events published elsewhere (another request, another task, with a
//! shared backend another replica) the handler relays a [`Topic`] of a [`Broadcaster`]:
//! [`Emitter::relay`] resumes after the client's `Last-Event-ID` within the broadcaster's
//! replay window and tells the handler of a gap when it cannot; see [`broadcast`]
//! (the seam for a shared backend: the in-memory [`MemoryBroadcaster`] is the default).
//!
//! Build one with the facade's `EndpointBuilder::event_stream`, or with [`EventStream::start`]
//! inside any handler.
//!
//! ```
//! use garde::Validate;
//! use schemars::JsonSchema;
//! use serde::Serialize;
//! use strata_events::{EventStream, EventStreamOptions};
//!
//! #[derive(Serialize, Validate, JsonSchema)]
//! #[serde(rename_all = "camelCase")]
//! #[garde(allow_unvalidated)]
//! enum Clock {
//!     Tick { seconds: u64 },
//!     Done,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let stream = EventStream::start(EventStreamOptions::default(), None, |emitter| async move {
//!     for seconds in 0..3 {
//!         emitter.emit(Clock::Tick { seconds }).await?;
//!     }
//!     emitter.emit(Clock::Done).await?;
//!     Ok(())
//! });
//! # let _ = stream;
//! # }
//! ```

pub mod broadcast;
mod emitter;
mod stream;

pub use broadcast::{
    BroadcastError, Broadcaster, BusEvent, Delivery, Fanout, Feed, Gap, MemoryBroadcaster,
    Received, ReplayWindow, Retained, Subscription, Topic, TopicLimits,
};
pub use emitter::{EmitError, Emitter};
pub use stream::{Event, EventFrames, EventStream, EventStreamOptions, last_event_id};
