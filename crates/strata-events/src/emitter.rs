//! [`Emitter`]: what a handler sends events with.

use std::fmt;
use std::future::{Future, poll_fn};
use std::marker::PhantomData;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use derive_where::derive_where;
use garde::Validate;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use strata_decode::Decoder;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::broadcast::{BroadcastError, Gap, Subscription};
use crate::stream::{GapFrame, Message, Relay};

/// Why an event was not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmitError {
    /// The client is gone: stop producing events.
    #[error("the client closed the event stream")]
    Closed,
    /// The event broke its rules (the message names the field); nothing was sent.
    #[error("invalid event: {0}")]
    Invalid(String),
    /// The event is not an enum variant (serde wrote neither `{"name": data}` nor `"name"`).
    #[error("an event must be an enum variant, found {0}")]
    NotAnEvent(String),
    /// The event's id holds a line break (CR or LF) or NUL, which would end the `id:` line of
    /// the stream early or make the client ignore it; nothing was sent.
    #[error("an event id may not hold CR, LF or NUL, found {0:?}")]
    InvalidId(String),
}

// `?` on an emit in a handler makes it a 500 (core's conversion of any error): a closed
// stream has nobody left to tell, a bad event is the server's defect, logged.

/// Sends the events of type `E` to one client. Cheap to clone (a channel sender).
#[derive_where(Clone)]
pub struct Emitter<E> {
    sender: mpsc::Sender<Message>,
    last_event_id: Option<String>,
    /// Cancelled when the server's graceful shutdown begins.
    shutdown: CancellationToken,
    checker: Decoder<E>,
    _events: PhantomData<fn(E)>,
}

impl<E> fmt::Debug for Emitter<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Emitter")
            .field("closed", &self.sender.is_closed())
            .field("shutting_down", &self.shutdown.is_cancelled())
            .field("last_event_id", &self.last_event_id)
            .finish_non_exhaustive()
    }
}

impl<E> Emitter<E> {
    pub(crate) fn new(
        sender: mpsc::Sender<Message>,
        last_event_id: Option<String>,
        shutdown: CancellationToken,
    ) -> Self {
        Self {
            sender,
            last_event_id,
            shutdown,
            checker: Decoder::new(),
            _events: PhantomData,
        }
    }

    /// Whether the stream is to stop: the client is gone, or the server is shutting down
    /// ([`is_shutting_down`](Self::is_shutting_down)).
    pub fn is_closed(&self) -> bool {
        self.sender.is_closed() || self.shutdown.is_cancelled()
    }

    /// Resolves when the stream is to stop: the client is gone, or the server is shutting
    /// down (a cancellation signal for `tokio::select!`). After a shutdown, what the handler
    /// emits within the stream's grace (`EventStreamOptions::shutdown_grace`) is still sent:
    /// a last event, a `retry:`.
    pub async fn closed(&self) {
        let mut gone = pin!(self.sender.closed());
        let mut shutdown = pin!(self.shutdown.cancelled());
        poll_fn(|cx| {
            if gone.as_mut().poll(cx).is_ready() || shutdown.as_mut().poll(cx).is_ready() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
    }

    /// Whether the server's graceful shutdown has begun: the stream ends when the handler
    /// returns or its grace is over; the client reconnects (to another replica).
    pub fn is_shutting_down(&self) -> bool {
        self.shutdown.is_cancelled()
    }

    /// Resolves when the server's graceful shutdown begins (never on a stream no server
    /// sends).
    pub async fn shutdown(&self) {
        self.shutdown.cancelled().await;
    }

    /// The `Last-Event-ID` header of the request: the id of the last event a reconnecting
    /// client received.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// Asks the client to wait `after` before reconnecting (`retry:`), from now on.
    ///
    /// # Errors
    /// [`EmitError::Closed`] when the client is gone.
    pub async fn retry(&self, after: Duration) -> Result<(), EmitError> {
        let frame = format!("retry: {}\n\n", after.as_millis());
        self.send(Bytes::from(frame)).await
    }

    pub(crate) async fn send(&self, frame: Bytes) -> Result<(), EmitError> {
        self.sender
            .send(Message::Frame(frame))
            .await
            .map_err(|_| EmitError::Closed)
    }
}

impl<E> Emitter<E>
where
    E: Serialize + Validate + JsonSchema,
    E::Context: Default,
{
    /// Checks `event` and sends it; waits while the client is slower than the events (at most
    /// a few events are queued).
    ///
    /// # Errors
    /// [`EmitError::Closed`] when the client is gone, [`EmitError::Invalid`] when the event
    /// breaks its rules.
    pub async fn emit(&self, event: E) -> Result<(), EmitError> {
        self.send(self.frame(&event, None)?).await
    }

    /// [`emit`](Self::emit) with an `id:` the client sends back as `Last-Event-ID` when it
    /// reconnects.
    ///
    /// # Errors
    /// As [`emit`](Self::emit), and [`EmitError::InvalidId`] when `id` holds CR, LF or NUL
    /// (the stream's format cannot carry them; they are refused rather than dropped, so that
    /// the id a client sends back is the one the handler chose).
    pub async fn emit_with_id(&self, event: E, id: &str) -> Result<(), EmitError> {
        if id.contains(['\n', '\r', '\0']) {
            return Err(EmitError::InvalidId(id.to_owned()));
        }
        self.send(self.frame(&event, Some(id))?).await
    }

    fn frame(&self, event: &E, id: Option<&str>) -> Result<Bytes, EmitError> {
        if self.sender.is_closed() {
            return Err(EmitError::Closed);
        }
        checked_frame(&self.checker, event, id)
    }
}

impl<E> Emitter<E>
where
    E: Serialize + Validate + JsonSchema + 'static,
    E::Context: Default,
{
    /// Hands `subscription` to the response body, which relays it itself (no task, no channel
    /// per event), each gap as `on_gap` makes it; resolves when the relay is over: the
    /// subscription ended or failed, the client left, the server shuts down. Dropping the
    /// future stops the relay.
    pub(crate) async fn hand_off(
        &self,
        subscription: Subscription,
        on_gap: impl FnMut(&Gap) -> Option<E> + Send + 'static,
    ) -> Result<(), BroadcastError> {
        let (done, finished) = oneshot::channel();
        let relay = Relay {
            subscription,
            gap_frame: gap_frames(self.checker.clone(), on_gap),
            done: Some(done),
        };
        // Either wait ends at the shutdown, as the relay does: a client that stopped reading
        // (a full channel, a body not polled) does not hold the handler until the server's
        // cut. The body, polled again, drops the relay at the shutdown too.
        let mut shutdown = pin!(self.shutdown.cancelled());
        let mut send = pin!(self.sender.send(Message::Relay(Box::new(relay))));
        let handed = poll_fn(|cx| {
            if shutdown.as_mut().poll(cx).is_ready() {
                return Poll::Ready(None);
            }
            send.as_mut().poll(cx).map(Some)
        })
        .await;
        match handed {
            // The server shuts down; or the client is gone.
            None | Some(Err(_)) => return Ok(()),
            Some(Ok(())) => {}
        }
        let mut finished = pin!(finished);
        poll_fn(|cx| {
            if shutdown.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Ok(()));
            }
            // Its sender dropped: the client is gone.
            finished
                .as_mut()
                .poll(cx)
                .map(|told| told.unwrap_or(Ok(())))
        })
        .await
    }
}

/// The frames of the events `on_gap` makes of gaps, checked by `checker`.
pub(crate) fn gap_frames<E>(
    checker: Decoder<E>,
    mut on_gap: impl FnMut(&Gap) -> Option<E> + Send + 'static,
) -> GapFrame
where
    E: Serialize + Validate + JsonSchema + 'static,
    E::Context: Default,
{
    Box::new(move |gap| {
        on_gap(gap)
            .map(|event| checked_frame(&checker, &event, None))
            .transpose()
    })
}

/// `event`, checked by `checker`, as a frame with `id`.
fn checked_frame<E>(checker: &Decoder<E>, event: &E, id: Option<&str>) -> Result<Bytes, EmitError>
where
    E: Serialize + Validate + JsonSchema,
    E::Context: Default,
{
    checker
        .check(event, Some("event"))
        .map_err(EmitError::Invalid)?;
    let (name, data) = name_and_data(event)?;
    Ok(render(&name, id, &data))
}

/// The frame of the event `name` with `data` (compact JSON) and `id` (checked by the caller:
/// no CR, LF or NUL).
pub(crate) fn render(name: &str, id: Option<&str>, data: &str) -> Bytes {
    let mut frame = String::with_capacity(name.len() + data.len() + 24);
    frame.push_str("event: ");
    frame.push_str(name);
    frame.push('\n');
    if let Some(id) = id {
        frame.push_str("id: ");
        debug_assert!(!id.contains(['\n', '\r', '\0']), "an unchecked event id");
        frame.push_str(id);
        frame.push('\n');
    }
    // Compact JSON has no line breaks: one `data:` line.
    frame.push_str("data: ");
    frame.push_str(data);
    frame.push_str("\n\n");
    Bytes::from(frame)
}

/// The event's name and its data as JSON, from serde's writing of an enum variant.
pub(crate) fn name_and_data<E: Serialize>(event: &E) -> Result<(String, String), EmitError> {
    let value = serde_json::to_value(event).map_err(|e| EmitError::NotAnEvent(e.to_string()))?;
    match value {
        Value::String(name) if is_event_name(&name) => Ok((name, "null".to_owned())),
        Value::Object(map) if map.len() == 1 => {
            let Some((name, data)) = map.into_iter().next() else {
                return Err(EmitError::NotAnEvent("an empty object".to_owned()));
            };
            if !is_event_name(&name) {
                return Err(EmitError::NotAnEvent(format!("the name {name:?}")));
            }
            Ok((name, data.to_string()))
        }
        other => Err(EmitError::NotAnEvent(other.to_string())),
    }
}

/// A name that fits one `event:` line.
fn is_event_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['\n', '\r', '\0'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Validate, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    enum Feed {
        Message {
            #[garde(length(min = 1))]
            text: String,
        },
        Count(#[garde(range(max = 10))] u32),
        Done,
    }

    #[tokio::test]
    async fn frames_name_the_event_and_carry_its_data_on_one_line() {
        let (sender, mut receiver) = mpsc::channel(8);
        let emitter = Emitter::<Feed>::new(sender, Some("7".into()), CancellationToken::new());
        assert_eq!(emitter.last_event_id(), Some("7"));
        emitter
            .emit(Feed::Message {
                text: "two\nlines".into(),
            })
            .await
            .unwrap();
        emitter.emit_with_id(Feed::Count(3), "89").await.unwrap();
        emitter.emit(Feed::Done).await.unwrap();
        emitter.retry(Duration::from_secs(2)).await.unwrap();
        let mut frames = Vec::new();
        while let Ok(Message::Frame(frame)) = receiver.try_recv() {
            frames.push(String::from_utf8(frame.to_vec()).unwrap());
        }
        assert_eq!(
            frames,
            [
                "event: message\ndata: {\"text\":\"two\\nlines\"}\n\n",
                "event: count\nid: 89\ndata: 3\n\n",
                "event: done\ndata: null\n\n",
                "retry: 2000\n\n",
            ]
        );
    }

    #[tokio::test]
    async fn an_id_with_a_line_break_or_nul_is_refused_and_nothing_is_sent() {
        let (sender, mut receiver) = mpsc::channel(8);
        let emitter = Emitter::<Feed>::new(sender, None, CancellationToken::new());
        for id in ["8\n9", "8\r9", "8\09", "\r\n"] {
            assert_eq!(
                emitter.emit_with_id(Feed::Count(3), id).await,
                Err(EmitError::InvalidId(id.to_owned())),
                "{id:?}"
            );
        }
        assert!(receiver.try_recv().is_err(), "nothing was sent");
        emitter.emit_with_id(Feed::Count(3), "8 9").await.unwrap();
        let Ok(Message::Frame(frame)) = receiver.try_recv() else {
            panic!("the valid id's frame")
        };
        assert_eq!(&frame[..], b"event: count\nid: 8 9\ndata: 3\n\n");
    }

    #[tokio::test]
    async fn a_bad_event_is_refused_and_a_gone_client_closes() {
        let (sender, receiver) = mpsc::channel(8);
        let emitter = Emitter::<Feed>::new(sender, None, CancellationToken::new());
        let refused = emitter.emit(Feed::Count(11)).await.unwrap_err();
        assert_eq!(
            refused,
            EmitError::Invalid("event[0]: greater than 10".into()),
            "{refused}"
        );
        assert!(matches!(
            emitter
                .emit(Feed::Message {
                    text: String::new()
                })
                .await,
            Err(EmitError::Invalid(_))
        ));
        drop(receiver);
        assert!(emitter.is_closed());
        emitter.closed().await;
        assert_eq!(emitter.emit(Feed::Done).await, Err(EmitError::Closed));
    }

    #[tokio::test]
    async fn a_shutdown_closes_the_emitter_but_what_it_emits_still_goes() {
        let (sender, mut receiver) = mpsc::channel(8);
        let shutdown = CancellationToken::new();
        let emitter = Emitter::<Feed>::new(sender, None, shutdown.clone());
        assert!(!emitter.is_closed() && !emitter.is_shutting_down());
        shutdown.cancel();
        emitter.closed().await;
        emitter.shutdown().await;
        assert!(emitter.is_closed() && emitter.is_shutting_down());
        // A last word within the grace.
        emitter.emit(Feed::Done).await.unwrap();
        assert!(matches!(receiver.try_recv(), Ok(Message::Frame(_))));
    }

    #[test]
    fn only_enum_variants_are_events() {
        #[derive(Serialize)]
        struct NotAnEnum {
            a: u8,
            b: u8,
        }
        assert!(matches!(
            name_and_data(&NotAnEnum { a: 1, b: 2 }),
            Err(EmitError::NotAnEvent(_))
        ));
        assert!(matches!(name_and_data(&5), Err(EmitError::NotAnEvent(_))));
    }
}
