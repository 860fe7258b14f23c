//! A typed Rust client for a Strata API: it calls the very [`Operation`]s the server
//! implements, with their own input and output types, over any `tower::Service`.
//!
//! A crate (or module) shared by the server and its clients declares each operation once: a
//! `const` [`Operation`] of its method, path, input and output. The server implements it
//! (`EndpointBuilder::implement`) and routing refuses to mount it anywhere else; a client calls
//! it with [`Client::call`]. A changed input or output type breaks both sides at compile time,
//! with nothing generated: no build script, no OpenAPI round trip.
//!
//! An event-stream operation (`Operation<I, Events<E>>`, implemented with
//! `EndpointBuilder::implement_events`) is subscribed to with [`Client::subscribe`]: a
//! [`Subscription`], a `Stream` of typed events that reconnects with `Last-Event-ID` after a
//! dropped connection and ends when the server ends the stream.
//!
//! [`Client`] runs over any service of `http::Request<Body>` (a [`Transport`]): the
//! `Router` itself (no socket, as in tests), or a network client such as hyper-util's pooled
//! one, with any tower layers around it (timeouts, retries, concurrency limits, tracing).
//! `Client::http("http://127.0.0.1:3000")?` builds the usual one, an `HttpClient` over
//! hyper-util's pool (feature `hyper-client`, on by default). A function generic over clients
//! writes one bound, `T: Transport`, for `&Client<T>`.
//!
//! Awaiting a call gives the output; [`Call::response`] gives it with the response's status
//! and headers (a [`Response`]: a 201's `Location`). Each call has a timeout, the client's
//! ([`DEFAULT_TIMEOUT`] unless set with [`Client::timeout`]) or its own ([`Call::timeout`]);
//! `no_timeout()` says there is none. A [`Call`], [`Pages`] and a [`Subscription`] own a clone
//! of the client (a cheap one: the service's clone and a shared reference to the settings), so
//! each can be moved to another task (`tokio::spawn`).
//!
//! An input is placed where the server reads it by default: path parameters substituted and
//! percent-encoded; for GET, HEAD and DELETE the other fields in the query string (lists as
//! repeated keys, `null` left out); for POST, PUT, PATCH and QUERY a JSON body; an input with
//! `UploadedFile` fields as a `multipart/form-data` form, one with `raw: RawBody` as that body
//! (other fields in the query string). The response is
//! read by an [`Envelope`], the client's counterpart of the server's result handler
//! ([`DefaultEnvelope`] reads the default one). What goes wrong is a [`ClientError`]: the
//! server's error (status, message, body), a transport error, a body that is not the output
//! (with the path where), an input that cannot be sent, a timeout.
//!
//! A paginated operation (the offset or cursor inputs and pages of `strata-paginate`) is
//! followed with [`Client::pages`]: a `Stream` of its pages, one request per page taken, until
//! there are no more; [`Pages::items`] flattens it into the items.
//!
//! # Example
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use strata::prelude::*;
//! use strata::{Operation, Router, Routing};
//! use strata_client::Client;
//!
//! #[derive(Serialize, Deserialize, garde::Validate, schemars::JsonSchema)]
//! pub struct Greeting {
//!     #[garde(length(min = 1))]
//!     name: String,
//! }
//!
//! #[derive(Debug, Serialize, Deserialize, garde::Validate, schemars::JsonSchema)]
//! #[garde(allow_unvalidated)]
//! pub struct Greeted {
//!     text: String,
//! }
//!
//! // Shared by the server and its clients.
//! pub const GREET: Operation<Greeting, Greeted> = Operation::get("/v1/greet/:name");
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The server implements it...
//! let greet = default_endpoints_factory().endpoint().implement(&GREET, async |input: Greeting| {
//!     Ok(Greeted { text: format!("Hello, {}", input.name) })
//! });
//! let routing = Routing::new().operation(greet);
//! let config = create_config().cors(Cors::Disabled).build();
//! let router = strata::Router::new(&routing, &config)?;
//!
//! // ...and a client calls it, here over the router in memory.
//! let client = Client::new(router);
//! let greeted = client.call(&GREET, Greeting { name: "Ada".into() }).await?;
//! assert_eq!(greeted.text, "Hello, Ada");
//! let refused = client.call(&GREET, Greeting { name: String::new() }).await.unwrap_err();
//! assert_eq!(refused.status(), Some(http::StatusCode::NOT_FOUND)); // an empty path segment
//! # Ok(())
//! # }
//! ```

mod body;
mod download;
mod envelope;
mod error;
mod events;
mod fields;
#[cfg(feature = "hyper-client")]
mod http_client;
mod pages;
mod request;
mod response;
mod sse;
mod trace_context;

use std::borrow::Borrow;
use std::fmt;
use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderName, HeaderValue, Request};
use serde::Serialize;
use strata_core::{BoxError, StreamedOutput};
use tower::{Service, ServiceExt};

pub use body::Body;
pub(crate) use download::read_limited;
pub use download::{Deadlined, Download};
pub use envelope::{DefaultEnvelope, Envelope, api_error, decode, without_body};
pub use error::ClientError;
pub use events::{
    DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_RECONNECTS, DEFAULT_RECONNECT_DELAY, MAX_EVENT_ID,
    MAX_RECONNECT_DELAY, MIN_RECONNECT_DELAY, Subscription,
};
#[cfg(feature = "hyper-client")]
pub use http_client::{HTTP_POOL_IDLE_TIMEOUT, HttpClient, HttpPool, InvalidBaseUrl};
pub use pages::{Items, Pages, Paginated};
pub use response::Response;
pub use strata_core::{Events, FromResponse, Operation, Outcomes};

/// What a [`Client`] sends its requests with: a `tower::Service` of `http::Request<Body>` ([`Body`]: bytes, or a stream for files read as they are sent)
/// (a `Router`, a network client such as hyper-util's pooled one, `HttpPool`), with
/// everything a call, a download, pages and a subscription need of it, named once. Every such
/// service is one (a blanket impl): write `T: Transport` in a function generic over clients.
///
/// It asks for:
///
/// - `Service<Request<Body>, Response = http::Response<Self::Body>>`, its `Error` into
///   a [`BoxError`] and its `Future: Send`;
/// - `Clone` (each request goes to a clone, as `tower::ServiceExt::oneshot` sends it);
/// - `Send + Sync + 'static`, so that a call, a page stream or a subscription can move to
///   another task (`tokio::spawn`) and a future that holds a `&Client` is `Send`;
/// - a response body that is `Send + 'static`, of [`Bytes`] (what hyper and a `Router` give,
///   and what a [`Download`] reads), its `Error` into a [`BoxError`].
///
/// The price: a service that is `Send` but not `Sync` (`tower`'s `BoxCloneService`) is no
/// transport (box it as `BoxCloneSyncService` instead, or put it behind a `Buffer`), nor is
/// one whose body's chunks are not `Bytes` (map its body first).
///
/// ```
/// use strata_client::{Client, ClientError, Operation, Transport};
///
/// pub const PING: Operation<(), String> = Operation::get("/ping");
///
/// /// Any client: the router in memory, or hyper-util's pool over the network.
/// async fn ping_twice<T: Transport>(client: &Client<T>) -> Result<[String; 2], ClientError> {
///     let here = client.call(&PING, ()).await?;
///     // A call owns what it needs: it can run on another task.
///     let there = tokio::spawn(client.call(&PING, ()).send());
///     Ok([here, there.await.expect("the task ran")?])
/// }
/// ```
pub trait Transport:
    Service<
        Request<Body>,
        Response = http::Response<Self::Body>,
        Error: Into<BoxError>,
        Future: Send,
    > + Clone
    + Send
    + Sync
    + 'static
{
    /// The body of its responses.
    type Body: http_body::Body<Data = Bytes, Error: Into<BoxError>> + Send + 'static;
}

impl<S, B> Transport for S
where
    S: Service<Request<Body>, Response = http::Response<B>> + Clone + Send + Sync + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send,
    B: http_body::Body<Data = Bytes, Error: Into<BoxError>> + Send + 'static,
{
    type Body = B;
}

/// The timeout of a call unless the client or the call sets another.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest response body read unless the client sets another: 64 MiB.
pub const DEFAULT_MAX_RESPONSE_BODY: usize = 64 * 1024 * 1024;

/// A typed client of a Strata API over the service `S` (a `Router`, or a network client), reading
/// responses with the envelope `E`.
///
/// A clone is cheap: a clone of the service (hyper-util's pool: a few reference counts) and of
/// a reference count to the settings, shared by the clones. A [`Call`], [`Pages`] and a
/// [`Subscription`] each own a clone, so each can be moved to another task.
pub struct Client<S, E = DefaultEnvelope> {
    inner: S,
    settings: Arc<Settings<E>>,
}

/// What a client's clones share: everything but the service (set once, read by every call).
#[derive(Debug, Clone)]
struct Settings<E> {
    base_url: String,
    headers: HeaderMap,
    timeout: Option<Duration>,
    max_response_body: usize,
    input_sources: strata_input::InputSources,
    envelope: E,
}

impl<S: Clone, E> Clone for Client<S, E> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            settings: Arc::clone(&self.settings),
        }
    }
}

impl<S: fmt::Debug, E: fmt::Debug> fmt::Debug for Client<S, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let settings = &*self.settings;
        f.debug_struct("Client")
            .field("inner", &self.inner)
            .field("base_url", &settings.base_url)
            .field("headers", &settings.headers)
            .field("timeout", &settings.timeout)
            .field("max_response_body", &settings.max_response_body)
            .field("input_sources", &settings.input_sources)
            .field("envelope", &settings.envelope)
            .finish()
    }
}

impl<S> Client<S> {
    /// A client sending requests to `service`, reading the default result handler's envelope.
    pub fn new(service: S) -> Self {
        Self {
            inner: service,
            settings: Arc::new(Settings {
                base_url: String::new(),
                headers: HeaderMap::new(),
                timeout: Some(DEFAULT_TIMEOUT),
                max_response_body: DEFAULT_MAX_RESPONSE_BODY,
                input_sources: strata_input::InputSources::default(),
                envelope: DefaultEnvelope,
            }),
        }
    }
}

impl<S, E> Client<S, E> {
    strata_core::inner_service_accessors!();
}

impl<S, E: Clone> Client<S, E> {
    /// The settings, to change (copied first when a clone shares them).
    fn settings(&mut self) -> &mut Settings<E> {
        Arc::make_mut(&mut self.settings)
    }

    /// Where the API is (`https://api.example.com`, or with a prefix): requests go to this URL
    /// followed by the operation's path. Without one (a `Router` in memory) requests carry only
    /// the path. (`Client::http` checks the URL; this takes it as it is.)
    #[must_use]
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        let mut url = url.into();
        while url.ends_with('/') {
            url.pop();
        }
        self.settings().base_url = url;
        self
    }

    /// A header sent with every call (credentials, say); a call's own headers win.
    #[must_use]
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.settings().headers.insert(name, value);
        self
    }

    /// The timeout of each call, from sending the request to reading the whole response
    /// (default [`DEFAULT_TIMEOUT`]); a call may set its own. [`no_timeout`](Self::no_timeout)
    /// for none.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.settings().timeout = Some(timeout);
        self
    }

    /// No timeout for calls: each waits as long as the service takes (a call may still set
    /// its own). An error response's body, for a download or a subscription, is still read
    /// within [`DEFAULT_TIMEOUT`].
    #[must_use]
    pub fn no_timeout(mut self) -> Self {
        self.settings().timeout = None;
        self
    }

    /// The largest response body read (default [`DEFAULT_MAX_RESPONSE_BODY`]); a larger one is
    /// [`ClientError::TooLarge`].
    #[must_use]
    pub fn max_response_body(mut self, bytes: usize) -> Self {
        self.settings().max_response_body = bytes;
        self
    }

    /// Places inputs as a server with these input sources reads them (its configuration's
    /// `input_sources`, when it changes the defaults): a method whose sources have a body gets
    /// the fields as a body, any other the query string.
    #[must_use]
    pub fn input_sources(mut self, sources: strata_input::InputSources) -> Self {
        self.settings().input_sources = sources;
        self
    }

    /// Reads responses with `envelope`, the counterpart of the server's result handler.
    pub fn envelope<E2: Envelope>(self, envelope: E2) -> Client<S, E2> {
        let settings = Arc::unwrap_or_clone(self.settings);
        Client {
            inner: self.inner,
            settings: Arc::new(Settings {
                base_url: settings.base_url,
                headers: settings.headers,
                timeout: settings.timeout,
                max_response_body: settings.max_response_body,
                input_sources: settings.input_sources,
                envelope,
            }),
        }
    }
}

impl<S: Clone, E> Client<S, E> {
    /// A call of `operation` with `input` (the input, or a reference to it: a caller that keeps
    /// its input need not clone it): await it for the output, or set its headers and timeout
    /// first (`client.call(&OP, input).header(name, value).await`), or ask for the status and
    /// headers too ([`Call::response`]).
    ///
    /// The request is written here, from the input (a reference is not kept), and the call
    /// owns a clone of the client: it can be sent from another task
    /// (`tokio::spawn(client.call(&OP, input).send())`). An input that cannot be sent is the
    /// call's [`ClientError::Input`] when awaited.
    pub fn call<I, O, In>(&self, operation: &Operation<I, O>, input: In) -> Call<S, E, O>
    where
        I: Serialize,
        In: Borrow<I>,
    {
        Call {
            request: self.request(operation, &HeaderMap::new(), input.borrow()),
            timeout: self.settings.timeout,
            client: self.clone(),
            output: PhantomData,
        }
    }

    /// The pages of the paginated `operation` from `input` (the first page's, say
    /// `OffsetInput::first(filters)` or `CursorInput::first(filters)`): a
    /// [`Stream`](futures_core::Stream) of pages that asks for each page when the one before
    /// has been taken, following offsets or cursors ([`Paginated`]) until there are no more;
    /// [`Pages::items`] flattens it into the items. It ends after the last page, or after
    /// yielding the first error. Every request carries the client's headers and the stream's
    /// own ([`Pages::header`]) and has its own timeout. The stream owns a clone of the client:
    /// it can be moved to another task.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use strata::paginate::{OffsetInput, OffsetPage, pagination};
    /// use strata::prelude::*;
    /// use strata::{Operation, Router, Routing};
    /// use strata_client::Client;
    ///
    /// pagination! { pub Numbers: offset { items_name: "numbers", max_limit: 10, default_limit: 3 } }
    ///
    /// #[derive(Serialize, Deserialize, garde::Validate, schemars::JsonSchema)]
    /// pub struct Parity {
    ///     #[garde(skip)]
    ///     odd: bool,
    /// }
    ///
    /// #[derive(Debug, Serialize, Deserialize, garde::Validate, schemars::JsonSchema)]
    /// #[garde(allow_unvalidated)]
    /// pub struct Number {
    ///     n: u32,
    /// }
    ///
    /// // Shared by the server and its clients.
    /// pub const NUMBERS: Operation<OffsetInput<Numbers, Parity>, OffsetPage<Numbers, Number>> =
    ///     Operation::get("/numbers");
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let numbers = default_endpoints_factory().endpoint().implement(
    ///     &NUMBERS,
    ///     async |input: OffsetInput<Numbers, Parity>| {
    ///         let all: Vec<u32> = (1..=10).filter(|n| (n % 2 == 1) == input.filters.odd).collect();
    ///         let page = all.iter().skip(input.offset as usize).take(input.limit as usize);
    ///         let page = page.map(|&n| Number { n }).collect();
    ///         Ok(OffsetPage::new(page, all.len() as u64, &input))
    ///     },
    /// );
    /// let router = strata::Router::new(
    ///     &Routing::new().operation(numbers),
    ///     &create_config().cors(Cors::Disabled).build(),
    /// )?;
    /// let client = Client::new(router);
    ///
    /// // Page by page (3, then 2 odd numbers)...
    /// let mut pages = client.pages(&NUMBERS, OffsetInput::first(Parity { odd: true }));
    /// let mut sizes = Vec::new();
    /// while let Some(page) = pages.next().await {
    ///     sizes.push(page?.items.len());
    /// }
    /// assert_eq!(sizes, [3, 2]);
    ///
    /// // ...or item by item, pages of 2.
    /// let first = OffsetInput::first(Parity { odd: false }).with_limit(2);
    /// let mut items = client.pages(&NUMBERS, first).items();
    /// let mut even = Vec::new();
    /// while let Some(number) = items.next().await {
    ///     even.push(number?.n);
    /// }
    /// assert_eq!(even, [2, 4, 6, 8, 10]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn pages<I, O>(&self, operation: &Operation<I, O>, input: I) -> Pages<S, E, I, O>
    where
        I: Paginated<O>,
    {
        Pages::new(self.clone(), *operation, input)
    }
}

/// One call of an operation, sent when awaited (or with [`Call::send`]; [`Call::response`] for
/// the status and headers too, [`Call::download`] for a file or a stream).
///
/// It owns its request and a clone of the client: it may outlive the client it came from and
/// be sent from another task.
#[must_use = "a call is sent when awaited"]
pub struct Call<S, E, O> {
    client: Client<S, E>,
    /// The request, or why the input cannot be sent (told when awaited).
    request: Result<Request<Body>, ClientError>,
    timeout: Option<Duration>,
    output: PhantomData<fn() -> O>,
}

impl<S: fmt::Debug, E: fmt::Debug, O> fmt::Debug for Call<S, E, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Call")
            .field("client", &self.client)
            .field("request", &self.request)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl<S, E, O> Call<S, E, O> {
    /// A header of this call (it wins over the client's).
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        if let Ok(request) = &mut self.request {
            request.headers_mut().insert(name, value);
        }
        self
    }

    /// This call's timeout, instead of the client's.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// No timeout for this call, whatever the client's: it waits as long as the service takes.
    pub fn no_timeout(mut self) -> Self {
        self.timeout = None;
        self
    }
}

impl<S: Transport, E: Envelope, O> Call<S, E, O> {
    /// Sends the call and reads its output: what awaiting the call does.
    pub fn send(self) -> impl Future<Output = Result<O, ClientError>> + Send + 'static
    where
        O: FromResponse + Send + 'static,
    {
        self.respond(|_, output| output)
    }

    /// Sends the call and reads its output with the response's status and headers (a 201's
    /// `Location`, say): a [`Response`]. Awaiting the call gives the output alone; this costs
    /// nothing more (the head is read either way).
    pub fn response(self) -> impl Future<Output = Result<Response<O>, ClientError>> + Send + 'static
    where
        O: FromResponse + Send + 'static,
    {
        self.respond(|parts, output| Response::new(http::Response::from_parts(parts, output)))
    }

    /// The call sent, its output read and given to `finish` with the response's head.
    fn respond<R>(
        self,
        finish: fn(http::response::Parts, O) -> R,
    ) -> impl Future<Output = Result<R, ClientError>> + Send + 'static
    where
        O: FromResponse + Send + 'static,
        R: Send + 'static,
    {
        let Call {
            client,
            request,
            timeout,
            ..
        } = self;
        client.respond(request, timeout, finish)
    }

    /// Sends the call of an operation whose output is a file or a stream and returns the
    /// response to read as bytes ([`Download`]); an error status is the server's error, read
    /// by the envelope (up to `max_response_body`). The timeout covers the wait for the
    /// response's head and, for an error, the reading of its body (without a timeout, an
    /// error's body is still read within [`DEFAULT_TIMEOUT`]: a server that drips it cannot
    /// hold the call); a success's body may take as long as it keeps coming, each piece within
    /// the timeout of asking for it ([`Download`]).
    pub async fn download(self) -> Result<Download<S::Body>, ClientError>
    where
        O: StreamedOutput,
    {
        let Client { inner, settings } = self.client;
        let mut request = self.request?;
        let span = trace_context::ClientSpan::take(&mut request);
        let timeout = self.timeout;
        let exchange = async {
            let response = inner
                .oneshot(request)
                .await
                .map_err(|error| ClientError::Transport(error.into()));
            span.end(response.as_ref().ok().map(http::Response::status));
            let response = response?;
            let (parts, body) = response.into_parts();
            if parts.status.is_success() {
                return Ok(Download::new(parts.status, parts.headers, body, timeout));
            }
            let read = read_limited(body, settings.max_response_body);
            let bytes = match timeout {
                Some(_) => read.await?,
                None => within(Some(DEFAULT_TIMEOUT), read).await?,
            };
            Err(settings
                .envelope
                .read::<serde::de::IgnoredAny>(parts.status, &parts.headers, &bytes)
                .err()
                .unwrap_or_else(|| api_error(parts.status, &bytes)))
        };
        within(timeout, exchange).await
    }
}

/// `future`'s result, or [`ClientError::Timeout`] when it takes longer than `timeout`.
async fn within<T>(
    timeout: Option<Duration>,
    future: impl Future<Output = Result<T, ClientError>>,
) -> Result<T, ClientError> {
    match timeout {
        Some(after) => tokio::time::timeout(after, future)
            .await
            .map_err(|_| ClientError::Timeout(after))?,
        None => future.await,
    }
}

impl<S: Transport, E: Envelope> Client<S, E> {
    /// Sends `request` and reads the output `O` from its response, within `timeout`, and gives
    /// `finish` of the response's head and the output: the one place a response is read
    /// (calls and pages). One async fn, not one awaiting another: each layer of nested futures
    /// keeps its own copy of what it moved on, and a call's boxed future grew by 3 KiB with
    /// three of them (~1,900 instructions a call on hello, `bench/scripts/profile-client.sh`).
    async fn respond<O: FromResponse, R>(
        self,
        request: Result<Request<Body>, ClientError>,
        timeout: Option<Duration>,
        finish: fn(http::response::Parts, O) -> R,
    ) -> Result<R, ClientError> {
        let Self { inner, settings } = self;
        let mut request = request?;
        let span = trace_context::ClientSpan::take(&mut request);
        let exchange = async {
            let response = inner
                .oneshot(request)
                .await
                .map_err(|error| ClientError::Transport(error.into()));
            span.end(response.as_ref().ok().map(http::Response::status));
            let response = response?;
            let (parts, body) = response.into_parts();
            let bytes = read_limited(body, settings.max_response_body).await?;
            let reader = envelope::EnvelopeReader(&settings.envelope);
            let output = O::from_response(&reader, parts.status, &parts.headers, &bytes)?;
            Ok(finish(parts, output))
        };
        match timeout {
            Some(after) => tokio::time::timeout(after, exchange)
                .await
                .map_err(|_| ClientError::Timeout(after))?,
            None => exchange.await,
        }
    }
}

impl<S, E> Client<S, E> {
    /// The HTTP request of `operation` with `input`: the client's headers, then `headers` (a
    /// call's own, which win).
    fn request<I: Serialize, O>(
        &self,
        operation: &Operation<I, O>,
        headers: &HeaderMap,
        input: &I,
    ) -> Result<Request<Body>, ClientError> {
        let settings = &*self.settings;
        let method = operation.method();
        let placed = request::place(
            &method,
            &settings.base_url,
            operation.path(),
            input,
            &settings.input_sources,
        )?;
        let (content_type, body) = placed.body.unwrap_or_default();
        let mut request = Request::builder()
            .method(method)
            .uri(placed.uri)
            .body(body)
            .map_err(|error| ClientError::Input(error.to_string()))?;
        // First: a header the application sets wins.
        trace_context::start(&mut request, operation.path());
        let sent = request.headers_mut();
        request::insert_headers(sent, placed.headers)?;
        // (Most calls add no header: no copy then.)
        if !settings.headers.is_empty() {
            sent.extend(settings.headers.clone());
        }
        if !headers.is_empty() {
            sent.extend(headers.clone());
        }
        if content_type == request::JSON {
            sent.insert(CONTENT_TYPE, HeaderValue::from_static(request::JSON));
        } else if !content_type.is_empty() {
            let content_type = HeaderValue::try_from(content_type)
                .map_err(|error| ClientError::Input(format!("the body's media type: {error}")))?;
            sent.insert(CONTENT_TYPE, content_type);
        }
        Ok(request)
    }
}

impl<S, E, O> IntoFuture for Call<S, E, O>
where
    S: Transport,
    E: Envelope,
    O: FromResponse + Send + 'static,
{
    type Output = Result<O, ClientError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<O, ClientError>> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.send())
    }
}
