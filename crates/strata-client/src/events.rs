//! Subscriptions: the typed events of an event-stream operation, reconnecting with
//! `Last-Event-ID` after a dropped connection.

use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher, RandomState};
use std::marker::PhantomData;
use std::mem;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Buf, Bytes};
use futures_core::Stream;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Uri};
use http_body::Body;
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;
use serde::Serialize;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::value::RawValue;
use strata_core::{BoxError, Events, Operation};
use tokio::time::{Instant, Sleep};
use tower::ServiceExt;

use crate::sse::{IdRefused, Parser, RawEvent};
use crate::{
    Client, ClientError, DEFAULT_TIMEOUT, Envelope, Transport, api_error, decode, request,
};

/// How long a subscription waits before its first reconnection, until the server says
/// otherwise (`retry:`).
pub const DEFAULT_RECONNECT_DELAY: Duration = Duration::from_secs(1);

/// The shortest wait before a reconnection, whatever the server's `retry:` (`retry: 0` would
/// make reconnections a busy loop) or the subscription's delay.
pub const MIN_RECONNECT_DELAY: Duration = Duration::from_millis(100);

/// How many reconnections in a row may fail before a subscription gives up.
pub const DEFAULT_MAX_RECONNECTS: u32 = 5;

/// The longest wait before a reconnection, whatever the server's `retry:` or the backoff says.
pub const MAX_RECONNECT_DELAY: Duration = Duration::from_secs(60);

/// How long a connection may say nothing, not even a keep-alive comment, before a subscription
/// drops it and reconnects: three times a Strata server's keep-alive interval (15 s), so a
/// late keep-alive is no reason, and a half-open connection does not hang a subscription.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(45);

/// The longest event id a subscription keeps, in bytes: it sends the id back as
/// `Last-Event-ID` on every reconnection.
pub const MAX_EVENT_ID: usize = crate::sse::MAX_ID;

/// A connection that streamed this long was a good one even without an event (a quiet
/// stream's keep-alives): its drop starts the count of failed reconnections afresh.
const STEADY: Duration = Duration::from_secs(60);

type Connection = Response<UnsyncBoxBody<Bytes, BoxError>>;
type Connecting = Pin<Box<dyn Future<Output = Result<Connection, BoxError>> + Send>>;
type Connect = Box<dyn Fn(Request<crate::Body>) -> Connecting + Send>;
type ReadError = Box<dyn Fn(StatusCode, &HeaderMap, &[u8]) -> ClientError + Send>;

impl<S, E> Client<S, E> {
    /// Subscribes to the event-stream operation `operation` with `input`: a [`Stream`] of its
    /// events, each read as `T` (the server's event enum).
    ///
    /// The request (sent when the stream is first polled) is the operation's, its input placed
    /// as for [`call`](Self::call) (for a GET, in the query string), with the client's headers,
    /// the subscription's own ([`Subscription::header`]) and `Accept: text/event-stream`.
    ///
    /// - An event is the enum variant its `event:` names, with its `data:` as the variant's
    ///   content (a unit variant: `null`, or no data); one that does not read as `T` is a
    ///   [`ClientError::Decode`] (its path starts with the event's name) and the stream goes
    ///   on.
    /// - When the server ends the stream, the stream ends.
    /// - When the connection drops (a transport error, a body that breaks off, or nothing
    ///   for the [`idle_timeout`](Subscription::idle_timeout), [`DEFAULT_IDLE_TIMEOUT`] by
    ///   default), the subscription waits and connects again, sending `Last-Event-ID` with the
    ///   id of the last event it got. The wait backs off: the server's last `retry:` (or
    ///   [`reconnect_delay`](Subscription::reconnect_delay)), at least
    ///   [`MIN_RECONNECT_DELAY`], doubled for each failed reconnection in a row, at most
    ///   [`MAX_RECONNECT_DELAY`]; plus up to half of it again at random, so that the
    ///   subscribers of a restarted server do not all come back at once. A reconnection fails
    ///   unless its connection delivers an event or streams for a minute; after
    ///   [`max_reconnects`](Subscription::max_reconnects) failed ones in a row the last error
    ///   is the stream's last item.
    /// - An error response (the input's 400, a 401) is a [`ClientError::Api`] read by the
    ///   client's envelope, and the end: so is a success that is not `text/event-stream`
    ///   ([`ClientError::Decode`]), an event larger than
    ///   [`max_event_size`](Subscription::max_event_size) ([`ClientError::TooLarge`]), and an
    ///   input that cannot be sent ([`ClientError::Input`]). A 204 ends the stream. The error's
    ///   body is read within the client's timeout ([`DEFAULT_TIMEOUT`] when the client has
    ///   none) and up to its `max_response_body`: a body that drips or never ends is a
    ///   [`ClientError::Timeout`].
    /// - An event whose `id:` is longer than [`MAX_EVENT_ID`] bytes, or cannot be a header, is
    ///   a [`ClientError::Decode`] in its place and the stream goes on; the id is not kept
    ///   (the last good one is sent back).
    ///
    /// The client's timeout is not the stream's: a stream has no end to wait for. The idle
    /// timeout drops a connection that goes silent (a Strata server sends its head at once and
    /// a keep-alive comment every 15 s); keep it longer than the server's keep-alive
    /// interval.
    ///
    /// # Example
    ///
    /// ```
    /// use futures_util::StreamExt;
    /// use serde::{Deserialize, Serialize};
    /// use strata::events::Emitter;
    /// use strata::prelude::*;
    /// use strata::{Events, Operation, Router, Routing};
    /// use strata_client::Client;
    ///
    /// #[derive(Serialize, Deserialize, garde::Validate, schemars::JsonSchema)]
    /// pub struct CountdownInput {
    ///     #[garde(range(min = 1, max = 10))]
    ///     from: u32,
    /// }
    ///
    /// #[derive(Debug, PartialEq, Serialize, Deserialize, garde::Validate, schemars::JsonSchema)]
    /// #[serde(rename_all = "camelCase")]
    /// #[garde(allow_unvalidated)]
    /// pub enum Countdown {
    ///     Tick { left: u32 },
    ///     Liftoff,
    /// }
    ///
    /// // Shared by the server and its clients.
    /// pub const COUNTDOWN: Operation<CountdownInput, Events<Countdown>> =
    ///     Operation::get("/countdown");
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // The server implements it...
    /// let countdown = default_endpoints_factory().endpoint().implement_events(
    ///     &COUNTDOWN,
    ///     async |input: CountdownInput, emitter: Emitter<Countdown>| {
    ///         for left in (1..=input.from).rev() {
    ///             emitter.emit_with_id(Countdown::Tick { left }, &left.to_string()).await?;
    ///         }
    ///         emitter.emit(Countdown::Liftoff).await?;
    ///         Ok(())
    ///     },
    /// );
    /// let routing = Routing::new().operation(countdown);
    /// let router = strata::Router::new(&routing, &create_config().cors(Cors::Disabled).build())?;
    ///
    /// // ...and a client subscribes, here over the router in memory.
    /// let client = Client::new(router);
    /// let mut events = client.subscribe(&COUNTDOWN, CountdownInput { from: 2 });
    /// let mut seen = Vec::new();
    /// while let Some(event) = events.next().await {
    ///     seen.push(event?);
    /// }
    /// assert_eq!(
    ///     seen,
    ///     [Countdown::Tick { left: 2 }, Countdown::Tick { left: 1 }, Countdown::Liftoff]
    /// );
    /// assert_eq!(events.last_event_id(), Some("1"));
    ///
    /// // A bad input: the server's 400, then the end.
    /// let mut refused = client.subscribe(&COUNTDOWN, CountdownInput { from: 0 });
    /// let error = refused.next().await.unwrap().unwrap_err();
    /// assert_eq!(error.status(), Some(http::StatusCode::BAD_REQUEST));
    /// assert!(refused.next().await.is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub fn subscribe<I, T>(&self, operation: &Operation<I, Events<T>>, input: I) -> Subscription<T>
    where
        S: Transport,
        E: Envelope,
        I: Serialize,
        T: DeserializeOwned,
    {
        let service = self.inner.clone();
        let connect: Connect = Box::new(move |request| {
            let service = service.clone();
            Box::pin(async move {
                let response = service.oneshot(request).await.map_err(Into::into)?;
                Ok(response.map(|body| {
                    body.map_frame(|frame| {
                        frame.map_data(|mut data| data.copy_to_bytes(data.remaining()))
                    })
                    .map_err(Into::into)
                    .boxed_unsync()
                }))
            })
        });
        let settings = &*self.settings;
        let envelope = settings.envelope.clone();
        let read_error: ReadError = Box::new(move |status, headers, body| {
            match envelope.read::<IgnoredAny>(status, headers, body) {
                Err(error) => error,
                // An envelope that takes an error status for a success: the body's error.
                Ok(IgnoredAny) => api_error(status, body),
            }
        });
        let method = operation.method();
        let (target, state) = match target(
            &method,
            operation.path(),
            &settings.base_url,
            &input,
            &settings.input_sources,
        ) {
            Ok(target) => (target, State::Start),
            Err(error) => (Target::default(), State::Failed(error)),
        };
        Subscription {
            connect,
            read_error,
            method,
            target,
            headers: settings.headers.clone(),
            parser: Parser::new(settings.max_response_body),
            state,
            deadline: None,
            deadline_after: Duration::ZERO,
            settings: Settings {
                reconnect_delay: DEFAULT_RECONNECT_DELAY,
                max_reconnects: DEFAULT_MAX_RECONNECTS,
                idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
                max_error_body: settings.max_response_body,
                error_timeout: settings.timeout.unwrap_or(DEFAULT_TIMEOUT),
            },
            failures: 0,
            streaming_since: None,
            jitter: RandomState::new(),
            reconnections: 0,
            events: PhantomData,
        }
    }
}

/// Where a subscription's requests go, and their body.
#[derive(Debug, Default)]
struct Target {
    uri: Uri,
    /// The body and its content type.
    body: Option<(HeaderValue, Bytes)>,
    /// Fields sent as headers.
    headers: HeaderMap,
}

fn target<I: Serialize>(
    method: &Method,
    path: &str,
    base_url: &str,
    input: &I,
    sources: &strata_input::InputSources,
) -> Result<Target, ClientError> {
    let placed = request::place(method, base_url, path, input, sources)?;
    let uri = placed
        .uri
        .parse()
        .map_err(|error: http::uri::InvalidUri| ClientError::Input(error.to_string()))?;
    let body = placed
        .body
        .map(|(content_type, body)| {
            // Sent again on each reconnection: held in memory.
            let bytes = body.into_bytes().ok_or_else(|| {
                ClientError::Input(
                    "a subscription sends its input again on each reconnection: its files must \
                     be held in memory, not streamed or on disk"
                        .to_owned(),
                )
            })?;
            HeaderValue::try_from(content_type)
                .map(|content_type| (content_type, bytes))
                .map_err(|error| ClientError::Input(format!("the body's media type: {error}")))
        })
        .transpose()?;
    let mut headers = HeaderMap::new();
    request::insert_headers(&mut headers, placed.headers)?;
    Ok(Target { uri, body, headers })
}

#[derive(Debug, Clone, Copy)]
struct Settings {
    reconnect_delay: Duration,
    max_reconnects: u32,
    idle_timeout: Option<Duration>,
    max_error_body: usize,
    /// The time an error response's body is read within.
    error_timeout: Duration,
}

/// Where a subscription is.
enum State {
    /// Not connected yet.
    Start,
    /// Waiting to reconnect.
    Waiting(Pin<Box<Sleep>>),
    /// The request is out.
    Connecting(Connecting),
    /// Reading the events.
    Streaming(UnsyncBoxBody<Bytes, BoxError>),
    /// Reading an error response's body.
    Refused {
        status: StatusCode,
        headers: HeaderMap,
        body: UnsyncBoxBody<Bytes, BoxError>,
        read: Vec<u8>,
    },
    /// This error is the last item (after the events already read).
    Failed(ClientError),
    /// The end.
    Done,
}

/// The typed events of an event-stream operation, from [`Client::subscribe`]: a
/// [`Stream`] of `Result<T, ClientError>`.
///
/// Its settings apply from the next connection on; set them before polling it.
#[must_use = "a subscription connects when polled"]
pub struct Subscription<T> {
    connect: Connect,
    read_error: ReadError,
    method: Method,
    target: Target,
    headers: HeaderMap,
    parser: Parser,
    state: State,
    /// Fires when the connection said nothing for the idle timeout, or an error's body took
    /// too long.
    deadline: Option<Pin<Box<Sleep>>>,
    /// What the deadline counts (the timeout it reports).
    deadline_after: Duration,
    settings: Settings,
    /// Reconnections in a row that got nothing.
    failures: u32,
    /// When the current connection started streaming.
    streaming_since: Option<Instant>,
    /// The keys of the random part of the waits (the process's random hash keys: no generator
    /// needed for a spread).
    jitter: RandomState,
    /// Reconnections so far, each drawing its own random part.
    reconnections: u64,
    events: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for Subscription<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            State::Start => "start",
            State::Waiting(_) => "waiting to reconnect",
            State::Connecting(_) => "connecting",
            State::Streaming(_) => "streaming",
            State::Refused { .. } => "reading an error",
            State::Failed(_) | State::Done => "done",
        };
        f.debug_struct("Subscription")
            .field("method", &self.method)
            .field("uri", &self.target.uri)
            .field("state", &state)
            .field("last_event_id", &self.last_event_id())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl<T> Subscription<T> {
    /// A header sent with every connection of this subscription (it wins over the client's).
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.insert(name, value);
        self
    }

    /// Resumes after the event `id` (an id [`last_event_id`](Self::last_event_id) gave
    /// before): the first connection sends it as `Last-Event-ID`.
    pub fn resume_from(mut self, id: impl Into<String>) -> Self {
        self.parser.resume_from(id.into());
        self
    }

    strata_core::setters! {
        /// The wait before the first reconnection until the server sends `retry:`, doubled for
        /// each failed one in a row (default [`DEFAULT_RECONNECT_DELAY`]; at least
        /// [`MIN_RECONNECT_DELAY`], at most [`MAX_RECONNECT_DELAY`]; plus up to half again at
        /// random).
        reconnect_delay(delay: Duration) => settings.reconnect_delay = delay;
        /// How many failed reconnections in a row (no response, an error, a connection that
        /// drops before an event and within a minute) the subscription makes before it gives
        /// up (default [`DEFAULT_MAX_RECONNECTS`]; 0: it never reconnects).
        max_reconnects(reconnects: u32) => settings.max_reconnects = reconnects;
        /// Reconnects when a connection says nothing, not even a keep-alive comment, for this
        /// long, from the request on (default [`DEFAULT_IDLE_TIMEOUT`];
        /// [`no_idle_timeout`](Self::no_idle_timeout) for none). Keep it longer than the
        /// server's keep-alive interval (a Strata server's: 15 s by default).
        idle_timeout(timeout: Duration) => settings.idle_timeout = Some(timeout);
        /// No idle timeout: a connection is waited on as long as it stays open, however
        /// silent (a half-open connection then holds the subscription).
        no_idle_timeout() => settings.idle_timeout = None;
    }

    /// The largest event read, in bytes, its lines, name and id together (default: the
    /// client's `max_response_body`); a larger one is [`ClientError::TooLarge`], and the end.
    pub fn max_event_size(mut self, bytes: usize) -> Self {
        self.parser.set_max(bytes);
        self
    }

    /// The id of the last event received (`id:`), sent as `Last-Event-ID` when reconnecting;
    /// keep it to resume a later subscription with [`resume_from`](Self::resume_from).
    pub fn last_event_id(&self) -> Option<&str> {
        Some(self.parser.last_id()).filter(|id| !id.is_empty())
    }

    /// The request of the next connection.
    fn request(&self) -> Result<Request<crate::Body>, ClientError> {
        let body = self.target.body.as_ref();
        let mut request = Request::new(crate::Body::from(
            body.map(|(_, bytes)| bytes.clone()).unwrap_or_default(),
        ));
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.target.uri.clone();
        crate::trace_context::inject_current(&mut request);
        let headers = request.headers_mut();
        headers.extend(self.target.headers.clone());
        headers.extend(self.headers.clone());
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some((content_type, _)) = body {
            headers.insert(CONTENT_TYPE, content_type.clone());
        }
        if let Some(id) = self.last_event_id() {
            // Only an id given to `resume_from` can be this long: the stream's are refused.
            if id.len() > MAX_EVENT_ID {
                return Err(ClientError::Input(format!(
                    "the last event id is {} bytes, more than MAX_EVENT_ID ({MAX_EVENT_ID})",
                    id.len()
                )));
            }
            let id = HeaderValue::from_str(id).map_err(|_| {
                ClientError::Input(format!("the last event id {id:?} cannot be a header"))
            })?;
            headers.insert("last-event-id", id);
        }
        Ok(request)
    }

    /// Sends the request of the next connection.
    fn connect(&mut self) {
        self.state = match self.request() {
            Ok(request) => {
                self.arm(self.settings.idle_timeout);
                State::Connecting((self.connect)(request))
            }
            Err(error) => State::Failed(error),
        };
    }

    /// Starts (or restarts) the deadline, `after` from now (`None`: no deadline).
    fn arm(&mut self, after: Option<Duration>) {
        let deadline = after.and_then(|after| Instant::now().checked_add(after));
        match (deadline, &mut self.deadline) {
            (None, _) => self.deadline = None,
            (Some(deadline), Some(sleep)) => sleep.as_mut().reset(deadline),
            (Some(deadline), None) => {
                self.deadline = Some(Box::pin(tokio::time::sleep_until(deadline)));
            }
        }
        self.deadline_after = after.unwrap_or_default();
    }

    /// Whether the deadline passed (an error to drop the connection with).
    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> Option<ClientError> {
        let deadline = self.deadline.as_mut()?;
        if deadline.as_mut().poll(cx).is_pending() {
            return None;
        }
        self.deadline = None;
        Some(ClientError::Timeout(self.deadline_after))
    }

    /// The connection dropped with `error`: reconnect after a while, or give up.
    fn dropped(&mut self, error: ClientError) {
        self.deadline = None;
        if self
            .streaming_since
            .take()
            .is_some_and(|since| since.elapsed() >= STEADY)
        {
            self.failures = 0;
        }
        self.failures = self.failures.saturating_add(1);
        if self.failures > self.settings.max_reconnects {
            self.state = State::Failed(error);
            return;
        }
        self.parser.reconnected();
        let wait = self.backoff();
        self.state = State::Waiting(Box::pin(tokio::time::sleep(wait)));
    }

    /// The wait before the next reconnection: the delay (the server's `retry:` or the
    /// subscription's), at least [`MIN_RECONNECT_DELAY`], doubled for each failure in a row
    /// but the first, at most [`MAX_RECONNECT_DELAY`]; plus up to half of it again at random.
    fn backoff(&mut self) -> Duration {
        let base = self.settings.reconnect_delay.max(MIN_RECONNECT_DELAY);
        let doubled = base
            .saturating_mul(1 << self.failures.saturating_sub(1).min(16))
            .min(MAX_RECONNECT_DELAY);
        self.reconnections = self.reconnections.wrapping_add(1);
        let half = u64::try_from((doubled / 2).as_nanos()).unwrap_or(u64::MAX);
        let random = self.jitter.hash_one(self.reconnections) % half.saturating_add(1);
        doubled
            .saturating_add(Duration::from_nanos(random))
            .min(MAX_RECONNECT_DELAY)
    }

    /// Takes a `retry:` the stream sent as the reconnection delay.
    fn take_retry(&mut self) {
        if let Some(retry) = self.parser.take_retry() {
            self.settings.reconnect_delay = retry.clamp(MIN_RECONNECT_DELAY, MAX_RECONNECT_DELAY);
        }
    }

    /// The response to a request.
    fn connected(&mut self, response: Connection) {
        let (parts, body) = response.into_parts();
        let status = parts.status;
        if !status.is_success() {
            // The body of an error is short and read whole: it gets a deadline of its own,
            // however the server drips it.
            self.arm(Some(self.settings.error_timeout));
            self.state = State::Refused {
                status,
                headers: parts.headers,
                body,
                read: Vec::new(),
            };
            return;
        }
        if status == StatusCode::NO_CONTENT {
            self.state = State::Done;
            return;
        }
        let media_type = parts
            .headers
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("");
        let essence = media_type.split(';').next().unwrap_or("").trim();
        self.state = if essence.eq_ignore_ascii_case("text/event-stream") {
            self.streaming_since = Some(Instant::now());
            State::Streaming(body)
        } else {
            State::Failed(ClientError::Decode {
                status,
                path: String::new(),
                message: format!("the response is {media_type:?}, not text/event-stream"),
            })
        };
    }

    /// Moves on from the current state; `Ready` when there is something to look at.
    fn advance(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.state {
            State::Start => self.connect(),
            State::Waiting(sleep) => {
                ready!(sleep.as_mut().poll(cx));
                self.connect();
            }
            State::Connecting(connecting) => match connecting.as_mut().poll(cx) {
                Poll::Ready(Ok(response)) => self.connected(response),
                Poll::Ready(Err(error)) => self.dropped(ClientError::Transport(error)),
                Poll::Pending => {
                    let Some(timeout) = self.poll_deadline(cx) else {
                        return Poll::Pending;
                    };
                    self.dropped(timeout);
                }
            },
            State::Streaming(_) => return self.poll_streaming(cx),
            State::Refused { .. } => return self.poll_refused(cx),
            State::Failed(_) | State::Done => {}
        }
        Poll::Ready(())
    }

    fn poll_streaming(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let State::Streaming(body) = &mut self.state else {
            return Poll::Ready(());
        };
        match Pin::new(body).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let Ok(data) = frame.into_data() else {
                    // Trailers: nothing for the events.
                    return Poll::Ready(());
                };
                if data.is_empty() {
                    return Poll::Ready(());
                }
                self.arm(self.settings.idle_timeout);
                if self.parser.feed(&data).is_err() {
                    self.state = State::Failed(ClientError::TooLarge {
                        limit: self.parser.max(),
                    });
                }
                // Bytes alone are no success: a server that sends `retry: 0` and drops the
                // connection would be reconnected to without end.
                if self.parser.has_events() {
                    self.failures = 0;
                }
                self.take_retry();
            }
            Poll::Ready(Some(Err(error))) => self.dropped(ClientError::Transport(error)),
            // The server ended the stream: an event it broke off in is not one.
            Poll::Ready(None) => self.state = State::Done,
            Poll::Pending => {
                let Some(timeout) = self.poll_deadline(cx) else {
                    return Poll::Pending;
                };
                self.dropped(timeout);
            }
        }
        Poll::Ready(())
    }

    fn poll_refused(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let limit = self.settings.max_error_body;
        let State::Refused { body, read, .. } = &mut self.state else {
            return Poll::Ready(());
        };
        let failure = match Pin::new(body).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                Ok(data) if read.len() + data.len() > limit => ClientError::TooLarge { limit },
                Ok(data) => {
                    read.extend_from_slice(&data);
                    return Poll::Ready(());
                }
                Err(_) => return Poll::Ready(()),
            },
            Poll::Ready(Some(Err(error))) => ClientError::Transport(error),
            Poll::Ready(None) => {
                let State::Refused {
                    status,
                    headers,
                    read,
                    ..
                } = mem::replace(&mut self.state, State::Done)
                else {
                    return Poll::Ready(());
                };
                (self.read_error)(status, &headers, &read)
            }
            Poll::Pending => match self.poll_deadline(cx) {
                Some(timeout) => timeout,
                None => return Poll::Pending,
            },
        };
        self.deadline = None;
        self.state = State::Failed(failure);
        Poll::Ready(())
    }
}

impl<T: DeserializeOwned> Stream for Subscription<T> {
    type Item = Result<T, ClientError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(event) = this.parser.next_event() {
                return Poll::Ready(Some(match event {
                    Ok(event) => read_event(&event),
                    Err(refused) => Err(id_refused(refused)),
                }));
            }
            match mem::replace(&mut this.state, State::Done) {
                State::Done => return Poll::Ready(None),
                State::Failed(error) => return Poll::Ready(Some(Err(error))),
                state => this.state = state,
            }
            ready!(this.advance(cx));
        }
    }
}

/// An event whose id was refused, as the error in its place.
fn id_refused(refused: IdRefused) -> ClientError {
    ClientError::Decode {
        status: StatusCode::OK,
        path: refused.name,
        message: format!(
            "the event's id cannot be sent back as Last-Event-ID ({}; at most MAX_EVENT_ID, \
             {MAX_EVENT_ID} bytes, of header text)",
            refused.reason
        ),
    }
}

/// An event as `T`: the variant its name says, its data the variant's content. What does not
/// read says where, from the event's name on.
pub(crate) fn read_event<T: DeserializeOwned>(event: &RawEvent) -> Result<T, ClientError> {
    read_event_as(event).map_err(|mut error| {
        if let ClientError::Decode { path, .. } = &mut error
            && path.is_empty()
        {
            path.clone_from(&event.name);
        }
        error
    })
}

fn read_event_as<T: DeserializeOwned>(event: &RawEvent) -> Result<T, ClientError> {
    let data = event.data.trim();
    let name = serde_json::Value::String(event.name.clone()).to_string();
    if data.is_empty() || data == "null" {
        // A unit variant, as serde writes one: its name.
        if let Ok(unit) = serde_json::from_str(&name) {
            return Ok(unit);
        }
        return decode(StatusCode::OK, format!("{{{name}:null}}").as_bytes());
    }
    let data: &RawValue = serde_json::from_str(data).map_err(|error| ClientError::Decode {
        status: StatusCode::OK,
        path: event.name.clone(),
        message: format!("the event's data is not JSON: {error}"),
    })?;
    decode(
        StatusCode::OK,
        format!("{{{name}:{}}}", data.get()).as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "camelCase")]
    enum Feed {
        Message { text: String },
        Count(u32),
        Maybe(Option<u32>),
        Done,
    }

    fn read(name: &str, data: &str) -> Result<Feed, ClientError> {
        read_event(&RawEvent {
            name: name.to_owned(),
            data: data.to_owned(),
        })
    }

    /// A subscription is `Send`: it is moved to a task of its own (on a multi-thread runtime,
    /// whichever worker runs it), which reads the events of an in-memory server whose first
    /// connection breaks off after an event, waits the server's `retry:` and connects again
    /// with `Last-Event-ID`, as it would on the caller's own task.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_subscription_can_be_sent_to_a_task() {
        use std::sync::{Arc, Mutex};

        use futures_util::StreamExt;
        use http_body::Frame;
        use http_body_util::StreamBody;

        const FEED: Operation<(), Events<Feed>> = Operation::get("/feed");
        let asked = Arc::new(Mutex::new(Vec::new()));
        let server = tower::service_fn({
            let asked = Arc::clone(&asked);
            move |request: Request<crate::Body>| {
                let last_event_id = request
                    .headers()
                    .get("last-event-id")
                    .map(|id| id.to_str().unwrap().to_owned());
                let first = {
                    let mut asked = asked.lock().unwrap();
                    asked.push(last_event_id);
                    asked.len() == 1
                };
                let pieces: Vec<Result<Frame<Bytes>, BoxError>> = if first {
                    vec![
                        Ok(Frame::data(Bytes::from_static(
                            b"retry: 1\nid: 1\nevent: count\ndata: 1\n\n",
                        ))),
                        Err("the connection broke off".into()),
                    ]
                } else {
                    vec![Ok(Frame::data(Bytes::from_static(
                        b"id: 2\nevent: count\ndata: 2\n\nevent: done\ndata: null\n\n",
                    )))]
                };
                let response = Response::builder()
                    .header(CONTENT_TYPE, "text/event-stream")
                    .body(StreamBody::new(futures_util::stream::iter(pieces)))
                    .unwrap();
                async move { Ok::<_, BoxError>(response) }
            }
        });
        let subscription = Client::new(server).subscribe(&FEED, ());
        // `tokio::spawn` takes only a `Send` future: this one owns the subscription.
        let task = tokio::spawn(async move {
            let mut subscription = subscription;
            let mut events = Vec::new();
            while let Some(event) = subscription.next().await {
                events.push(event.unwrap());
            }
            (events, subscription.last_event_id().map(str::to_owned))
        });
        let (events, last_event_id) = tokio::time::timeout(Duration::from_secs(60), task)
            .await
            .expect("the subscription's task never ended")
            .unwrap();
        assert_eq!(events, [Feed::Count(1), Feed::Count(2), Feed::Done]);
        assert_eq!(last_event_id.as_deref(), Some("2"));
        assert_eq!(*asked.lock().unwrap(), [None, Some("1".to_owned())]);
    }

    #[test]
    fn events_read_as_the_variant_they_name() {
        assert_eq!(
            read("message", r#"{"text":"two\nlines"}"#).unwrap(),
            Feed::Message {
                text: "two\nlines".into()
            }
        );
        assert_eq!(read("count", "3").unwrap(), Feed::Count(3));
        // A unit variant: `null` as the server writes it, or no data at all.
        assert_eq!(read("done", "null").unwrap(), Feed::Done);
        assert_eq!(read("done", "").unwrap(), Feed::Done);
        // `null` for a variant that is not a unit one is its content.
        assert_eq!(read("maybe", "null").unwrap(), Feed::Maybe(None));
        assert_eq!(read("maybe", " 4\n").unwrap(), Feed::Maybe(Some(4)));
        // Names are JSON-escaped, not spliced.
        assert!(read("count\":1,\"x", "2").is_err());
    }

    #[test]
    fn what_does_not_read_says_where() {
        let wrong = read("message", r#"{"text":5}"#).unwrap_err();
        assert!(
            matches!(&wrong, ClientError::Decode { path, .. } if path == "message.text"),
            "{wrong:?}"
        );
        for unknown in [read("gone", "1"), read("gone", "null")] {
            let unknown = unknown.unwrap_err();
            assert!(
                matches!(&unknown, ClientError::Decode { path, message, .. }
                    if path == "gone" && message.contains("unknown variant `gone`")),
                "{unknown:?}"
            );
        }
        let not_json = read("count", "3, 4").unwrap_err();
        assert!(
            matches!(&not_json, ClientError::Decode { path, message, .. }
                if path == "count" && message.contains("not JSON")),
            "{not_json:?}"
        );
        assert!(read("count", "null").is_err());
    }
}
