//! [`EndpointsFactory`] and [`EndpointBuilder`]: typed endpoints from a handler, middleware and a
//! result handler.

use std::marker::PhantomData;

use derive_where::derive_where;
use garde::Validate;
use http::{Method, StatusCode};
use schemars::{JsonSchema, Schema};
use serde::de::DeserializeOwned;
use strata_core::{
    DeclaredError, DefaultResultHandler, HCons, HNil, MiddlewareInput, OutcomeFn, Output,
    PositiveFn, ResponseDescription, ResponseHeader, ResultHandler, Security,
};
use strata_endpoint::{Endpoint, EndpointMeta, PipelineSettings, SharedService};
use strata_format::FormatLayer;
use strata_handler::{
    Handler, HandlerFunction, HandlerFunctionWithoutInput, HandlerService, handler_fn,
    handler_without_input,
};
use strata_middleware::{
    Chain, Middleware, MiddlewareChain, MiddlewareHandler, NoMiddleware, StagedService, State,
};
use strata_output::{HandlerOutput, OutputLayer, OutputService};
use strata_validate::{ValidateLayer, ValidateService};
use tower::util::Either;
use tower_layer::Layer;

/// Builds endpoints that share a result handler and a list of middleware.
///
/// `C` is the context the middleware build (a cons list, newest first, usually written
/// `Ctx![Oldest, Newest]`); `L` their [`MiddlewareChain`], written
/// `impl MiddlewareChain<C>` when a function returns a factory; `R` the result handler. [`add_middleware`](Self::add_middleware) returns a new factory; the original is
/// unchanged.
// No bounds on `C` (the marker names the context type); Debug leaves the middleware out.
#[derive_where(Clone; L, R)]
#[derive_where(Debug; R)]
pub struct EndpointsFactory<C = HNil, L = NoMiddleware, R = DefaultResultHandler> {
    result_handler: R,
    #[derive_where(skip)]
    layers: L,
    security: Vec<Security>,
    middleware_fields: Vec<String>,
    middleware_inputs: Vec<MiddlewareInput>,
    errors: Vec<DeclaredError>,
    success_headers: Vec<ResponseHeader>,
    _ctx: PhantomData<fn() -> C>,
}

/// A factory with the [`DefaultResultHandler`] and no middleware.
pub fn default_endpoints_factory() -> EndpointsFactory {
    EndpointsFactory::new(DefaultResultHandler)
}

/// The factory that `default_endpoints_factory().with_state(state)` returns, named for
/// functions that take or return it: `fn book_endpoints(books: &StateFactory<Library>)`.
///
/// ```
/// use strata::default_endpoints_factory;
/// use strata::endpoint::StateFactory;
///
/// #[derive(Clone)]
/// struct Library;
///
/// fn books() -> StateFactory<Library> {
///     default_endpoints_factory().with_state(Library)
/// }
/// # let _ = books();
/// ```
pub type StateFactory<T> = EndpointsFactory<HCons<T, HNil>, Chain<(), State<T>, NoMiddleware>>;

impl<R: ResultHandler> EndpointsFactory<HNil, NoMiddleware, R> {
    /// A factory formatting every response with `result_handler`.
    pub fn new(result_handler: R) -> Self {
        Self {
            result_handler,
            layers: NoMiddleware,
            security: Vec::new(),
            middleware_fields: Vec::new(),
            middleware_inputs: Vec::new(),
            errors: Vec::new(),
            success_headers: Vec::new(),
            _ctx: PhantomData,
        }
    }
}

fn property_names(schema: &Schema) -> impl Iterator<Item = String> + '_ {
    schema
        .as_object()
        .and_then(|o| o.get("properties"))
        .and_then(|p| p.as_object())
        .into_iter()
        .flat_map(|p| p.keys().cloned())
}

fn schema_of<T: JsonSchema>() -> Schema {
    schemars::SchemaGenerator::default().into_root_schema_for::<T>()
}

/// Whether a root schema admits nothing (`false`, which a root schema writes as
/// `{"not": {}}` beside `$schema`): the output of a handler that only fails.
#[allow(clippy::redundant_closure_for_method_calls)] // the path needs serde_json, not a dependency
fn is_never(schema: &Schema) -> bool {
    schema.as_bool() == Some(false)
        || schema
            .get("not")
            .and_then(|not| not.as_object())
            .is_some_and(|not| not.is_empty())
}

impl<C, L: Clone, R: ResultHandler> EndpointsFactory<C, L, R> {
    /// A factory whose endpoints run `middleware` after the ones already attached; what it
    /// returns joins the context.
    #[allow(clippy::type_complexity)] // the type is the documentation: context and chain grow
    pub fn add_middleware<I, H>(
        &self,
        middleware: Middleware<I, H>,
    ) -> EndpointsFactory<HCons<H::Output, C>, Chain<I, H, L>, R>
    where
        H: MiddlewareHandler<I, C>,
        I: JsonSchema,
    {
        let mut security = self.security.clone();
        security.extend(middleware.security_description().cloned());
        let mut middleware_fields = self.middleware_fields.clone();
        middleware_fields.extend(property_names(&middleware.input_schema()));
        let mut middleware_inputs = self.middleware_inputs.clone();
        middleware_inputs.push(middleware.input_description());
        let mut errors = self.errors.clone();
        errors.extend(middleware.declared_errors().iter().cloned());
        let mut success_headers = self.success_headers.clone();
        success_headers.extend(middleware.success_headers().iter().cloned());
        EndpointsFactory {
            result_handler: self.result_handler.clone(),
            layers: Chain::new(self.layers.clone(), middleware),
            security,
            middleware_fields,
            middleware_inputs,
            errors,
            success_headers,
            _ctx: PhantomData,
        }
    }

    /// A factory whose handlers (and later middleware) find `state` in their context, a clone
    /// per request: a handler takes it as a parameter `store: Store`. Keep it cheap to clone
    /// (an `Arc`, a pool handle); it is typed like any context entry, moved into the handler.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::prelude::*;
    /// # #[derive(serde::Serialize, garde::Validate, schemars::JsonSchema)]
    /// # #[garde(allow_unvalidated)]
    /// # struct Count { count: usize }
    ///
    /// #[derive(Clone, Default)]
    /// struct Store(Arc<std::sync::Mutex<Vec<String>>>);
    ///
    /// let factory = default_endpoints_factory().with_state(Store::default());
    /// let count = factory.get().handler_without_input(async |store: Store| {
    ///     Ok(Count { count: store.0.lock().map(|v| v.len()).unwrap_or(0) })
    /// });
    /// # let _ = count;
    /// ```
    #[allow(clippy::type_complexity)] // the type is the documentation: context and chain grow
    pub fn with_state<T>(
        &self,
        state: T,
    ) -> EndpointsFactory<HCons<T, C>, Chain<(), State<T>, L>, R>
    where
        T: Clone + Send + Sync + 'static,
    {
        self.add_middleware(Middleware::state(state))
    }

    /// Starts an endpoint without a declared method (it serves GET).
    pub fn endpoint(&self) -> EndpointBuilder<C, L, R> {
        EndpointBuilder {
            factory: self.clone(),
            meta: EndpointMeta::default(),
        }
    }

    /// Starts a GET endpoint.
    pub fn get(&self) -> EndpointBuilder<C, L, R> {
        self.endpoint().method(Method::GET)
    }

    /// Starts a POST endpoint.
    pub fn post(&self) -> EndpointBuilder<C, L, R> {
        self.endpoint().method(Method::POST)
    }

    /// Starts a PUT endpoint.
    pub fn put(&self) -> EndpointBuilder<C, L, R> {
        self.endpoint().method(Method::PUT)
    }

    /// Starts a PATCH endpoint.
    pub fn patch(&self) -> EndpointBuilder<C, L, R> {
        self.endpoint().method(Method::PATCH)
    }

    /// Starts a DELETE endpoint.
    pub fn delete(&self) -> EndpointBuilder<C, L, R> {
        self.endpoint().method(Method::DELETE)
    }

    /// Starts a QUERY endpoint: a safe method whose input is read from the query string, the
    /// body and the path (in that order, later ones winning), for searches too large or too
    /// structured for a URL.
    pub fn query(&self) -> EndpointBuilder<C, L, R> {
        self.endpoint().method(strata_core::query_method())
    }

    /// The result handler.
    pub fn result_handler(&self) -> &R {
        &self.result_handler
    }

    /// Security of the attached middleware, in attachment order.
    pub fn security(&self) -> &[Security] {
        &self.security
    }
}

/// Declares one endpoint: methods, descriptions, and finally the handler, which builds it.
#[derive_where(Debug; R)]
pub struct EndpointBuilder<C, L, R> {
    factory: EndpointsFactory<C, L, R>,
    meta: EndpointMeta,
}

/// The endpoint's own stages inside the middleware: validate, output check, handler.
type Core<H, I, O> =
    ValidateService<OutputService<HandlerService<H>, <O as HandlerOutput>::Body>, I>;

impl<C, L, R> EndpointBuilder<C, L, R> {
    /// Adds a method (GET, POST, PUT, PATCH, DELETE, QUERY). Declaring several serves them all.
    #[must_use]
    pub fn method(mut self, method: Method) -> Self {
        push_new(&mut self.meta.methods, method);
        self
    }

    /// Adds several methods.
    #[must_use]
    pub fn methods(self, methods: impl IntoIterator<Item = Method>) -> Self {
        methods.into_iter().fold(self, Self::method)
    }

    strata_core::setters! {
        /// Sets the grouping tag.
        #[must_use]
        tag(tag: impl Into<String>) => meta.tag = Some(tag.into());
        /// Sets the short description.
        #[must_use]
        short_description(text: impl Into<String>) => meta.short_description = Some(text.into());
        /// Sets the long description.
        #[must_use]
        description(text: impl Into<String>) => meta.description = Some(text.into());
        /// Chooses the operation id of the API description (by default it is derived from the
        /// method and path, like `getV1UsersId`). An endpoint serving several methods gets the
        /// method appended (`bookPost`, `bookPut`); the HEAD operation of a GET gets `head`
        /// prepended (`headListBooks`). Two operations with one id are a documentation error.
        #[must_use]
        operation_id(id: impl Into<String>) => meta.operation_id = Some(id.into());
    }

    /// Marks the endpoint deprecated in the API description.
    #[must_use]
    pub fn deprecated(mut self) -> Self {
        self.meta.deprecated = true;
        self
    }

    /// Declares a success status the handler answers with (through
    /// [`Reply`](strata_output::Reply)), for the API description: the first call replaces the
    /// default 200, further calls add statuses.
    #[must_use]
    pub fn success_status(mut self, status: StatusCode) -> Self {
        push_new(&mut self.meta.success_statuses, status);
        self
    }

    /// Declares the media type of the success responses (repeatable), for the API description
    /// and the generated client: what a [`FileResponse`](strata_output::FileResponse) or a
    /// [`StreamResponse`](strata_output::StreamResponse) sends (`text/csv`, `image/png`)
    /// instead of `application/octet-stream`.
    #[must_use]
    pub fn success_media_type(mut self, media_type: impl Into<String>) -> Self {
        push_new(&mut self.meta.success_media_types, media_type.into());
        self
    }

    /// Declares an error status the handler may answer with (for example 404 for an unknown
    /// id), for the API description.
    #[must_use]
    pub fn error_response(self, status: StatusCode, description: impl Into<String>) -> Self {
        self.declared_error(DeclaredError::new(status, description))
    }

    /// Declares an error response with headers (see [`error_response`](Self::error_response)).
    #[must_use]
    pub fn declared_error(mut self, error: DeclaredError) -> Self {
        self.meta.errors.push(error);
        self
    }
}

impl<C, L, R> EndpointBuilder<C, L, R>
where
    R: ResultHandler,
    C: Send + 'static,
    L: MiddlewareChain<C>,
{
    /// Builds the endpoint with an async handler: its first parameter is the input, and it
    /// takes whatever else it uses by type, in any order: the [`Logger`](strata_core::Logger), the request
    /// [`Parts`](http::request::Parts), and entries of the context (state from
    /// [`with_state`](EndpointsFactory::with_state), what middleware provided), each moved in,
    /// never cloned.
    ///
    /// The input type `I` is read from the merged input and validated; the output `O` is
    /// checked and serialized. Return `Ok(output)`, a [`Reply`](strata_output::Reply) for a
    /// success status other than 200 or for response headers, or an
    /// [`ApiError`](strata_core::ApiError) alone from a
    /// handler that only fails.
    ///
    /// ```
    /// use strata::prelude::*;
    ///
    /// #[strata::model(input)]
    /// struct Greet {
    ///     #[garde(length(min = 1))]
    ///     name: String,
    /// }
    /// #[strata::model(output)]
    /// struct Greeting {
    ///     text: String,
    /// }
    /// #[derive(Clone)]
    /// struct Salutation(&'static str);
    ///
    /// let factory = default_endpoints_factory().with_state(Salutation("Hello"));
    /// let greet = factory.post().handler(async |input: Greet, salutation: Salutation, logger: Logger| {
    ///     logger.debug("greeting");
    ///     Ok(Greeting { text: format!("{}, {}", salutation.0, input.name) })
    /// });
    /// let gone = factory.get().handler_without_input(async || http_error!(410, "Gone for good"));
    /// # let _ = (greet, gone);
    /// ```
    pub fn handler<F, I, M>(self, f: F) -> Endpoint
    where
        F: HandlerFunction<I, C, M>,
        M: 'static,
        I: InputType,
        F::Output: OutputType,
    {
        self.build_with(handler_fn(f))
    }

    /// Builds the endpoint that implements `operation`, declared once and shared with its
    /// clients: the operation's method, and an async handler (as in
    /// [`handler`](Self::handler)) that takes the operation's input type and returns its
    /// output type, or a [`Reply`](strata_output::Reply) of it (another type does not
    /// compile). Routing refuses to mount it anywhere but where the operation says
    /// ([`RoutingError::NotAsDeclared`](strata_routing::RoutingError::NotAsDeclared));
    /// [`Routing::operation`](strata_routing::Routing::operation) mounts it there.
    ///
    /// ```
    /// use strata::prelude::*;
    /// use strata::{Operation, Routing};
    /// # #[strata::model(input)]
    /// # pub struct BookId { #[garde(skip)] id: u32 }
    /// # #[strata::model]
    /// # pub struct Book { id: u32 }
    ///
    /// // In a crate the server and its clients share:
    /// pub const GET_BOOK: Operation<BookId, Book> = Operation::get("/v1/books/:id");
    ///
    /// let get_book = default_endpoints_factory()
    ///     .endpoint()
    ///     .implement(&GET_BOOK, async |input: BookId| Ok(Book { id: input.id }));
    /// let routing = Routing::new().operation(get_book);
    /// # let _ = routing;
    /// ```
    pub fn implement<F, I, M, O>(
        mut self,
        operation: &strata_core::Operation<I, O>,
        f: F,
    ) -> Endpoint
    where
        F: HandlerFunction<I, C, M>,
        M: 'static,
        I: InputType,
        F::Output: Returns<O>,
    {
        self.meta.methods = vec![operation.method()];
        self.meta.declared = Some(operation.declared_route());
        self.handler(f)
    }

    /// Builds an endpoint that reads no input (any input is ignored), with an async handler
    /// that takes, by type, only what it uses, as in [`handler`](Self::handler): the
    /// [`Logger`](strata_core::Logger), the request [`Parts`](http::request::Parts), context entries; or nothing.
    ///
    /// ```
    /// use strata::prelude::*;
    /// # #[strata::model]
    /// # struct Status { up: bool }
    ///
    /// let health = default_endpoints_factory()
    ///     .get()
    ///     .handler_without_input(async || Ok(Status { up: true }));
    /// # let _ = health;
    /// ```
    pub fn handler_without_input<F, M>(self, f: F) -> Endpoint
    where
        F: HandlerFunctionWithoutInput<C, M>,
        M: 'static,
        F::Output: OutputType,
    {
        self.build_with(handler_without_input(f))
    }

    /// Builds an event-stream endpoint (server-sent events of the enum `E`): `f` takes the
    /// input first, then by type what it uses, as in [`handler`](Self::handler), and the
    /// [`Emitter`](strata_events::Emitter) of its events; it runs as its own task until it
    /// returns or the client disconnects. See [`strata_events`] (feature `events`).
    #[cfg(feature = "events")]
    pub fn event_stream<E: strata_events::Event, F, I: InputType, M: 'static>(
        self,
        f: F,
    ) -> Endpoint
    where
        F: HandlerFunction<I, HCons<strata_events::Emitter<E>, C>, M, Output = ()>,
    {
        self.event_stream_with(strata_events::EventStreamOptions::default(), f)
    }

    /// [`event_stream`](Self::event_stream) with options (the keep-alive interval).
    #[cfg(feature = "events")]
    pub fn event_stream_with<E: strata_events::Event, F, I: InputType, M: 'static>(
        self,
        options: strata_events::EventStreamOptions,
        f: F,
    ) -> Endpoint
    where
        F: HandlerFunction<I, HCons<strata_events::Emitter<E>, C>, M, Output = ()>,
    {
        self.events_endpoint(options, move |input, arguments| f.call(input, arguments))
    }

    /// An event-stream endpoint that reads no input (any input is ignored): `f` takes, by
    /// type, only what it uses, as in [`handler_without_input`](Self::handler_without_input),
    /// and the [`Emitter`](strata_events::Emitter) of its events.
    ///
    /// ```
    /// use strata::events::Emitter;
    /// use strata::prelude::*;
    /// # #[strata::model(output)]
    /// # #[serde(rename_all = "camelCase")]
    /// # enum Tick { Tick { n: u32 } }
    ///
    /// let ticks = default_endpoints_factory().get().event_stream_without_input(
    ///     async |emitter: Emitter<Tick>| {
    ///         for n in 1..=3 {
    ///             emitter.emit(Tick::Tick { n }).await?;
    ///         }
    ///         Ok(())
    ///     },
    /// );
    /// # let _ = ticks;
    /// ```
    #[cfg(feature = "events")]
    pub fn event_stream_without_input<E: strata_events::Event, F, M: 'static>(
        self,
        f: F,
    ) -> Endpoint
    where
        F: HandlerFunctionWithoutInput<HCons<strata_events::Emitter<E>, C>, M, Output = ()>,
    {
        self.events_endpoint(
            strata_events::EventStreamOptions::default(),
            move |(): (), arguments| f.call(arguments),
        )
    }

    /// The event-stream endpoint calling `call` with the input and the handler's arguments
    /// (the emitter in front of the context).
    #[cfg(feature = "events")]
    fn events_endpoint<E, I, G, Fut>(
        self,
        options: strata_events::EventStreamOptions,
        call: G,
    ) -> Endpoint
    where
        E: strata_events::Event,
        G: Fn(I, strata_handler::Arguments<HCons<strata_events::Emitter<E>, C>>) -> Fut
            + Clone
            + Send
            + Sync
            + 'static,
        Fut: std::future::Future<Output = Result<(), strata_core::ApiError>> + Send + 'static,
        I: InputType,
    {
        self.build_with(strata_handler::handler_with_request(
            move |input: I, ctx: C, logger: strata_core::Logger, request: http::request::Parts| {
                let call = call.clone();
                let last_event_id =
                    strata_events::last_event_id(&request.headers).map(str::to_owned);
                async move {
                    let stream_logger = logger.clone();
                    let stream =
                        strata_events::EventStream::start(options, last_event_id, move |emitter| {
                            let ctx = HCons {
                                head: emitter,
                                tail: ctx,
                            };
                            call(input, strata_handler::arguments(logger, request, ctx))
                        });
                    Ok(stream.logger(stream_logger))
                }
            },
        ))
    }

    /// Builds the event-stream endpoint that implements `operation`, an operation whose output
    /// is [`Events<E>`](strata_core::Events) (declared once, shared with its clients, who
    /// subscribe to it): the operation's method, and `f` as for
    /// [`event_stream`](Self::event_stream), taking the operation's input and an
    /// [`Emitter`](strata_events::Emitter) of its events (another type does not compile).
    /// Routing refuses to mount it anywhere but where the operation says;
    /// [`Routing::operation`](strata_routing::Routing::operation) mounts it there.
    ///
    /// ```
    /// use strata::events::Emitter;
    /// use strata::prelude::*;
    /// use strata::{Events, Operation, Routing};
    /// # #[derive(serde::Deserialize, garde::Validate, schemars::JsonSchema)]
    /// # pub struct CountdownInput { #[garde(range(min = 1))] from: u32 }
    /// #[derive(serde::Serialize, garde::Validate, schemars::JsonSchema)]
    /// #[serde(rename_all = "camelCase")]
    /// #[garde(allow_unvalidated)]
    /// pub enum Countdown {
    ///     Tick { left: u32 },
    ///     Liftoff,
    /// }
    ///
    /// // In a crate the server and its clients share:
    /// pub const COUNTDOWN: Operation<CountdownInput, Events<Countdown>> =
    ///     Operation::get("/countdown");
    ///
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
    /// # let _ = routing;
    /// ```
    #[cfg(feature = "events")]
    pub fn implement_events<E: strata_events::Event, F, I: InputType, M: 'static>(
        self,
        operation: &strata_core::Operation<I, strata_core::Events<E>>,
        f: F,
    ) -> Endpoint
    where
        F: HandlerFunction<I, HCons<strata_events::Emitter<E>, C>, M, Output = ()>,
    {
        self.implement_events_with(operation, strata_events::EventStreamOptions::default(), f)
    }

    /// [`implement_events`](Self::implement_events) with options (the keep-alive interval).
    #[cfg(feature = "events")]
    pub fn implement_events_with<E: strata_events::Event, F, I: InputType, M: 'static>(
        mut self,
        operation: &strata_core::Operation<I, strata_core::Events<E>>,
        options: strata_events::EventStreamOptions,
        f: F,
    ) -> Endpoint
    where
        F: HandlerFunction<I, HCons<strata_events::Emitter<E>, C>, M, Output = ()>,
    {
        self.meta.methods = vec![operation.method()];
        self.meta.declared = Some(operation.declared_route());
        self.event_stream_with(options, f)
    }

    /// Builds the endpoint with any [`Handler`].
    pub fn build_with<H, I, O>(self, handler: H) -> Endpoint
    where
        H: Handler<I, C, Output = O>,
        I: InputType,
        O: OutputType,
        Core<H, I, O>: StagedService<C, Response = Output>,
    {
        let EndpointBuilder { factory, mut meta } = self;
        let input_schema = schema_of::<I>();
        let output_schema = schema_of::<O::Body>();
        let mut fields: Vec<String> = property_names(&input_schema).collect();
        for field in &factory.middleware_fields {
            if !fields.contains(field) {
                fields.push(field.clone());
            }
        }
        meta.input_fields = fields;
        meta.raw_body = strata_input::raw::reads_raw_body(input_schema.as_value());
        let raw_body = meta.raw_body;
        let streamed_file = streamed_field::<I>(&input_schema);
        meta.streamed_file = streamed_file.as_ref().map(|field| field.name.clone());
        // A streamed output (a file, a stream) describes its own media type, not an envelope;
        // the endpoint may name it.
        if let Some(outcomes) = O::outcomes() {
            // Each declared outcome under its status, as the result handler answers it.
            let mut generator = schemars::SchemaGenerator::default();
            meta.positive = outcomes
                .iter()
                .flat_map(|outcome| {
                    let body = outcome.body.map(|body| body(&mut generator));
                    let handler = &factory.result_handler;
                    outcome
                        .statuses
                        .iter()
                        .filter(|status| status.is_success())
                        .map(move |status| handler.outcome(*status, body.as_ref()))
                        .collect::<Vec<_>>()
                })
                .collect();
            let describer = factory.result_handler.clone();
            meta.outcome_fn = Some(OutcomeFn::new(move |status, body| {
                describer.outcome(status, body)
            }));
            meta.outcomes = outcomes;
        } else if let Some(described) = O::describe(&output_schema) {
            let media_types = meta.success_media_types.clone();
            let name = move |mut described: Vec<ResponseDescription>| {
                if !media_types.is_empty() {
                    for description in &mut described {
                        description.mime_types.clone_from(&media_types);
                    }
                }
                described
            };
            meta.positive = name(described);
            meta.positive_fn = Some(PositiveFn::new(move |output| {
                name(O::describe(output).unwrap_or_default())
            }));
        } else if is_never(&output_schema) {
            // A handler that only fails (its output is `Never`): no success to describe.
            meta.positive = Vec::new();
            meta.positive_fn = Some(PositiveFn::new(|_| Vec::new()));
        } else {
            meta.positive = factory.result_handler.positive(&output_schema);
            let describer = factory.result_handler.clone();
            meta.positive_fn = Some(PositiveFn::new(move |output| describer.positive(output)));
        }
        meta.negative = factory.result_handler.negative();
        meta.input_schema = Some(input_schema);
        meta.output_schema = Some(output_schema);
        meta.input = Some(I::json_schema);
        meta.output = Some(schemars::SchemaGenerator::subschema_for::<O::Body>);
        meta.input_type = Some(std::any::type_name::<I>());
        meta.middleware_inputs = factory.middleware_inputs;
        // The middleware's errors first: they happen before the handler's.
        let mut errors = factory.errors;
        errors.append(&mut meta.errors);
        meta.errors = errors;
        meta.security = factory.security;
        meta.success_headers = factory.success_headers;

        let layers = factory.layers;
        // Without middleware, nothing reads the input between the parse and validate stages:
        // a JSON body is checked as it is read into `I`, in one pass (unless the application
        // adds layers after the body).
        let no_middleware = layers.is_empty();
        let result_handler = factory.result_handler;
        // Decoders share their lazily built name maps across every service built from this
        // endpoint.
        let validate = ValidateLayer::<I>::new();
        let output = OutputLayer::<O::Body>::new();
        let handler = HandlerService::new(handler);
        Endpoint::from_shared(meta, move |settings: &PipelineSettings| -> SharedService {
            let core = validate.layer(output.layer(handler.clone()));
            let work = settings.combine_layer().layer(layers.wrap(core));
            // The application's layers after the body, when it has some.
            let work = match &settings.after_body {
                Some(after_body) => Either::Left(after_body.wrap(work)),
                None => Either::Right(work),
            };
            let service = FormatLayer::new(result_handler.clone())
                .mode(settings.mode)
                .layer(
                    settings
                        .parse_layer()
                        .raw_body(raw_body)
                        .streamed_file(streamed_file.clone())
                        .defer_json_check(no_middleware && settings.after_body.is_none())
                        .layer(work),
                );
            SharedService::new(service)
        })
    }
}

/// The input's [`StreamedFile`](strata_input::StreamedFile) field, and the fields that must
/// arrive before it (the other required ones).
///
/// # Panics
///
/// When the input has more than one: a body has one last part.
fn streamed_field<I>(input_schema: &Schema) -> Option<strata_parse::StreamedField> {
    let mut names = strata_input::stream::streamed_fields(input_schema.as_value());
    assert!(
        names.len() <= 1,
        "the input {} has {} StreamedFile fields ({}): a multipart body has one last part, \
         declare one StreamedFile (and UploadedFile for the others)",
        std::any::type_name::<I>(),
        names.len(),
        names.join(", ")
    );
    let name = names.pop()?;
    let required = input_schema
        .get("required")
        .and_then(|required| required.as_array())
        .into_iter()
        .flatten()
        .filter_map(|field| field.as_str())
        .filter(|field| *field != name)
        .map(str::to_owned)
        .collect();
    Some(strata_parse::StreamedField { name, required })
}

/// What an endpoint's input type is: read from the merged input (serde), checked by its rules
/// (garde, with a default context) and described (its JSON Schema). Every type deriving
/// `Deserialize`, `Validate` and `JsonSchema` is one.
pub trait InputType:
    DeserializeOwned + Validate<Context: Default> + JsonSchema + Send + 'static
{
}

impl<T> InputType for T where
    T: DeserializeOwned + Validate<Context: Default> + JsonSchema + Send + 'static
{
}

/// What an endpoint's handler returns: a [`HandlerOutput`] whose body's rules take a default
/// context (a type deriving `Serialize`, `Validate` and `JsonSchema`, a `Reply` of one, a
/// file, a stream).
pub trait OutputType: HandlerOutput<Body: Validate<Context: Default>> {}

impl<T> OutputType for T where T: HandlerOutput<Body: Validate<Context: Default>> {}

/// What a handler implementing an [`Operation`](strata_core::Operation) with output `O` may
/// return: `O` itself, or a [`Reply`](strata_output::Reply) of it (another success status,
/// response headers): the client reads `O` either way.
pub trait Returns<O>: OutputType {}

impl<O: OutputType> Returns<O> for O {}

impl<O> Returns<O> for strata_output::Reply<O> where strata_output::Reply<O>: OutputType {}

/// Adds `item` unless it is there already (declarations are idempotent).
fn push_new<T: PartialEq>(items: &mut Vec<T>, item: T) {
    if !items.contains(&item) {
        items.push(item);
    }
}
