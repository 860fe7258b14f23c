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
//! [`Client`] runs over any service of `http::Request<Full<Bytes>>`: the `Router` itself (no
//! socket, as in tests), or a network client such as hyper-util's pooled one, with any tower
//! layers around it (timeouts, retries, concurrency limits, tracing).
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

mod download;
mod envelope;
mod error;
mod events;
mod pages;
mod request;
mod sse;

use std::borrow::Borrow;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderName, HeaderValue, Request, Response};
use http_body_util::Full;
use serde::Serialize;
use strata_core::{BoxError, StreamedOutput};
use tower::{Service, ServiceExt};

pub(crate) use download::read_limited;
pub use download::{Deadlined, Download};
pub use envelope::{DefaultEnvelope, Envelope, api_error, decode, without_body};
pub use error::ClientError;
pub use events::{
    DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_RECONNECTS, DEFAULT_RECONNECT_DELAY, MAX_EVENT_ID,
    MAX_RECONNECT_DELAY, MIN_RECONNECT_DELAY, Subscription,
};
pub use pages::{Items, Pages, Paginated};
pub use strata_core::{Events, FromResponse, Operation, Outcomes};

/// What a [`Client`] sends its requests with: a `tower::Service` of `http::Request<Full<Bytes>>`
/// whose responses' bodies it reads (a `Router`, a network client). Every such service is one:
/// the bound to write, in a function generic over clients, instead of the service's and its
/// body's.
pub trait Transport:
    Service<Request<Full<Bytes>>, Response = Response<Self::Body>, Error: Into<BoxError>> + Clone
{
    /// The body of its responses.
    type Body: http_body::Body<Error: Into<BoxError>>;
}

impl<S, B> Transport for S
where
    S: Service<Request<Full<Bytes>>, Response = Response<B>> + Clone,
    S::Error: Into<BoxError>,
    B: http_body::Body<Error: Into<BoxError>>,
{
    type Body = B;
}

/// The timeout of a call unless the client or the call sets another.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest response body read unless the client sets another: 64 MiB.
pub const DEFAULT_MAX_RESPONSE_BODY: usize = 64 * 1024 * 1024;

/// A typed client of a Strata API over the service `S` (a `Router`, or a network client), reading
/// responses with the envelope `E`.
#[derive(Debug, Clone)]
pub struct Client<S, E = DefaultEnvelope> {
    inner: S,
    base_url: String,
    headers: HeaderMap,
    timeout: Option<Duration>,
    max_response_body: usize,
    input_sources: strata_input::InputSources,
    envelope: E,
}

impl<S> Client<S> {
    /// A client sending requests to `service`, reading the default result handler's envelope.
    pub fn new(service: S) -> Self {
        Self {
            inner: service,
            base_url: String::new(),
            headers: HeaderMap::new(),
            timeout: Some(DEFAULT_TIMEOUT),
            max_response_body: DEFAULT_MAX_RESPONSE_BODY,
            input_sources: strata_input::InputSources::default(),
            envelope: DefaultEnvelope,
        }
    }
}

impl<S, E> Client<S, E> {
    strata_core::inner_service_accessors!();

    /// Where the API is (`https://api.example.com`, or with a prefix): requests go to this URL
    /// followed by the operation's path. Without one (a `Router` in memory) requests carry only
    /// the path.
    #[must_use]
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        let mut url = url.into();
        while url.ends_with('/') {
            url.pop();
        }
        self.base_url = url;
        self
    }

    /// A header sent with every call (credentials, say); a call's own headers win.
    #[must_use]
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.insert(name, value);
        self
    }

    strata_core::setters! {
        /// The timeout of each call, from sending the request to reading the whole response
        /// (default [`DEFAULT_TIMEOUT`]; `None`: no timeout); a call may set its own.
        #[must_use]
        timeout(timeout: Option<Duration>) => timeout = timeout;
        /// The largest response body read (default [`DEFAULT_MAX_RESPONSE_BODY`]); a larger one is
        /// [`ClientError::TooLarge`].
        #[must_use]
        max_response_body(bytes: usize) => max_response_body = bytes;
        /// Places inputs as a server with these input sources reads them (its configuration's
        /// `input_sources`, when it changes the defaults): a method whose sources have a body gets
        /// the fields as a body, any other the query string.
        #[must_use]
        input_sources(sources: strata_input::InputSources) => input_sources = sources;
    }

    /// Reads responses with `envelope`, the counterpart of the server's result handler.
    pub fn envelope<E2: Envelope>(self, envelope: E2) -> Client<S, E2> {
        Client {
            inner: self.inner,
            base_url: self.base_url,
            headers: self.headers,
            timeout: self.timeout,
            max_response_body: self.max_response_body,
            input_sources: self.input_sources,
            envelope,
        }
    }

    /// A call of `operation` with `input` (the input, or a reference to it: a caller that keeps
    /// its input need not clone it): await it for the output, or set its headers and timeout
    /// first (`client.call(&OP, input).header(name, value).await`).
    pub fn call<I, O, In>(&self, operation: &Operation<I, O>, input: In) -> Call<'_, S, E, I, O, In>
    where
        In: Borrow<I>,
    {
        Call {
            client: self,
            operation: *operation,
            input,
            headers: HeaderMap::new(),
            timeout: self.timeout,
        }
    }

    /// The pages of the paginated `operation` from `input` (the first page's, say
    /// `OffsetInput::first(filters)` or `CursorInput::first(filters)`): a
    /// [`Stream`](futures_core::Stream) of pages that asks for each page when the one before
    /// has been taken, following offsets or cursors ([`Paginated`]) until there are no more;
    /// [`Pages::items`] flattens it into the items. It ends after the last page, or after
    /// yielding the first error. Every request carries the client's headers and the stream's
    /// own ([`Pages::header`]) and has its own timeout.
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
    pub fn pages<I, O>(&self, operation: &Operation<I, O>, input: I) -> Pages<'_, S, E, I, O>
    where
        I: Paginated<O>,
    {
        Pages::new(self, *operation, input)
    }
}

/// One call of an operation, sent when awaited (or with [`Call::send`]).
#[derive(Debug)]
#[must_use = "a call is sent when awaited"]
pub struct Call<'c, S, E, I, O, In = I> {
    client: &'c Client<S, E>,
    operation: Operation<I, O>,
    input: In,
    headers: HeaderMap,
    timeout: Option<Duration>,
}

impl<S, E, I, O, In> Call<'_, S, E, I, O, In> {
    /// A header of this call (it wins over the client's).
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.insert(name, value);
        self
    }

    strata_core::setters! {
        /// This call's timeout (`None`: none).
        timeout(timeout: Option<Duration>) => timeout = timeout;
    }
}

impl<S, E, I, O, In> Call<'_, S, E, I, O, In>
where
    S: Transport,
    E: Envelope,
    I: Serialize,
    In: Borrow<I>,
{
    /// Sends the call and reads its output.
    pub async fn send(self) -> Result<O, ClientError>
    where
        O: FromResponse,
    {
        let request = self
            .client
            .request(&self.operation, &self.headers, self.input.borrow())?;
        self.client.respond(request, self.timeout).await
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
        let client = self.client;
        let request = client.request(&self.operation, &self.headers, self.input.borrow())?;
        let timeout = self.timeout;
        let exchange = async {
            let response = client
                .inner
                .clone()
                .oneshot(request)
                .await
                .map_err(|error| ClientError::Transport(error.into()))?;
            let (parts, body) = response.into_parts();
            if parts.status.is_success() {
                return Ok(Download::new(parts.status, parts.headers, body, timeout));
            }
            let read = read_limited(body, client.max_response_body);
            let bytes = match timeout {
                Some(_) => read.await?,
                None => tokio::time::timeout(DEFAULT_TIMEOUT, read)
                    .await
                    .map_err(|_| ClientError::Timeout(DEFAULT_TIMEOUT))??,
            };
            Err(client
                .envelope
                .read::<serde::de::IgnoredAny>(parts.status, &parts.headers, &bytes)
                .err()
                .unwrap_or_else(|| api_error(parts.status, &bytes)))
        };
        match timeout {
            Some(after) => tokio::time::timeout(after, exchange)
                .await
                .map_err(|_| ClientError::Timeout(after))?,
            None => exchange.await,
        }
    }
}

impl<S: Transport, E: Envelope> Client<S, E> {
    /// Sends `request` and reads the output `O` from its response, within `timeout`.
    async fn respond<O: FromResponse>(
        &self,
        request: Request<Full<Bytes>>,
        timeout: Option<Duration>,
    ) -> Result<O, ClientError> {
        let exchange = async {
            let response = self
                .inner
                .clone()
                .oneshot(request)
                .await
                .map_err(|error| ClientError::Transport(error.into()))?;
            let (parts, body) = response.into_parts();
            let bytes = read_limited(body, self.max_response_body).await?;
            let reader = envelope::EnvelopeReader(&self.envelope);
            O::from_response(&reader, parts.status, &parts.headers, &bytes)
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
    ) -> Result<Request<Full<Bytes>>, ClientError> {
        let method = operation.method();
        let placed = request::place(&method, operation.path(), input, &self.input_sources)?;
        let uri = format!("{}{}", self.base_url, placed.path_and_query);
        let (content_type, body) = placed.body.unwrap_or_default();
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .body(Full::new(body))
            .map_err(|error| ClientError::Input(error.to_string()))?;
        let sent = request.headers_mut();
        request::insert_headers(sent, placed.headers)?;
        // (Most calls add no header: no copy then.)
        if !self.headers.is_empty() {
            sent.extend(self.headers.clone());
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

impl<'c, S, E, I, O, In> IntoFuture for Call<'c, S, E, I, O, In>
where
    S: Transport<Future: Send, Body: Send + 'c> + Send + Sync + 'c,
    <S::Body as http_body::Body>::Data: Send,
    E: Envelope,
    I: Serialize + 'c,
    O: FromResponse + Send + 'c,
    In: Borrow<I> + Send + 'c,
{
    type Output = Result<O, ClientError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<O, ClientError>> + Send + 'c>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.send())
    }
}
