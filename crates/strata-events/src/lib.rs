//! Server-sent events for Strata endpoints (express-zod-api's `EventStreamFactory`).
//!
//! The events are an enum: each variant is an event, named as serde names it (so
//! `#[serde(rename_all = "camelCase")]` applies), carrying its data (a unit variant carries
//! `null`). The handler gets an [`Emitter`]: [`Emitter::emit`] checks the event with its garde
//! rules and sends `event: <name>\ndata: <JSON>\n\n`; [`Emitter::is_closed`] and
//! [`Emitter::closed`] tell when the client is gone; [`Emitter::last_event_id`] gives the
//! `Last-Event-ID` a reconnecting client sends.
//!
//! The response is `text/event-stream` with `cache-control: no-cache`. Its headers go with the
//! first event, so an error the handler returns before emitting is an ordinary error response
//! (a 401 stays a 401); after it, an error or a panic ends the stream cleanly (the events sent
//! are whole) and is logged. Until the first event nothing is sent, not even headers. Once
//! events flow, a comment (`: keep-alive`) goes out when nothing else did for the keep-alive
//! interval (15 s by default). When the client disconnects, the handler's task is dropped at
//! its next `.await`.
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

mod emitter;
mod stream;

pub use emitter::{EmitError, Emitter};
pub use stream::{EventFrames, EventStream, EventStreamOptions, Events};
