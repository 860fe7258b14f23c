use std::any::Any;
use std::future::{Future, Ready};

use derive_where::derive_where;
use http::request::Parts;
use http::{HeaderMap, StatusCode};
use schemars::JsonSchema;
use strata_core::{
    ApiError, DeclaredError, Logger, MiddlewareInput, RequestInfo, ResponseHeader, Security,
};
use strata_decode::Decoder;
use strata_input::Input;
use strata_input::cookies::RequestCookies;

use crate::amend::AmendResponse;

/// The function of a middleware, for a context type `C`.
///
/// Implemented by [`Stateless`] (any context) and [`WithContext`] (one context type).
pub trait MiddlewareHandler<I, C>: Clone + Send + Sync + 'static {
    /// What the middleware adds to the context.
    type Output: Send + 'static;
    /// The future of one call.
    type Future: Future<Output = Result<Self::Output, ApiError>> + Send + 'static;
    /// What the middleware keeps of its output to amend the response with once the rest of
    /// the chain answered (see [`AmendResponse`]); `()` for a middleware that does not.
    type Amends: AmendResponse;

    /// Runs the middleware.
    fn call(&self, input: I, request: &Parts, ctx: &C, logger: &Logger) -> Self::Future;

    /// Runs the middleware, with its outcome at once when that needs no waiting: `Ok` with
    /// the outcome, or `Err` with the future to poll. The middleware stage calls this: given
    /// an outcome, it calls the rest of the chain at once, and its future skips the state
    /// that waits for the middleware's (a few hundred instructions per request: the request's
    /// parts and context moved in and out again).
    ///
    /// The default calls [`call`](Self::call) and takes the outcome out of a future that is
    /// [`std::future::Ready`] (a test of its type, decided at compile time). A middleware
    /// whose future is of another type but often done when made (a rate limiter on a memory
    /// store) may override it.
    ///
    /// # Errors
    ///
    /// `Err` holds the future when the outcome is not known yet.
    fn call_now(
        &self,
        input: I,
        request: &Parts,
        ctx: &C,
        logger: &Logger,
    ) -> Result<Result<Self::Output, ApiError>, Self::Future> {
        ready_outcome(self.call(input, request, ctx, logger))
    }

    /// What it keeps of `output`, taken before the output joins the context.
    fn amends(output: &Self::Output) -> Self::Amends;
}

/// The outcome of `future` if it is a [`std::future::Ready`], or the future.
fn ready_outcome<O: 'static, F: 'static>(future: F) -> Result<Result<O, ApiError>, F> {
    let mut slot = Some(future);
    let ready = (&mut slot as &mut dyn Any)
        .downcast_mut::<Option<Ready<Result<O, ApiError>>>>()
        .and_then(Option::take);
    match (ready, slot) {
        (Some(ready), _) => Ok(ready.into_inner()),
        (None, Some(future)) => Err(future),
        // Taken only when it was a `Ready`.
        (None, None) => Ok(Err(ApiError::internal("middleware future lost"))),
    }
}

/// A middleware function of `(input, request parts, logger)` that ignores the context, so it
/// can be attached to any factory.
#[derive(Clone, Copy)]
pub struct Stateless<F>(F);

/// A middleware function of `(input, request parts, context, logger)`.
#[derive(Clone, Copy)]
pub struct WithContext<F>(F);

/// A middleware function that decides at once (see [`Middleware::sync`]).
#[derive(Clone, Copy)]
pub struct Immediate<F>(F);

impl<F, I, C, O> MiddlewareHandler<I, C> for Immediate<F>
where
    F: Fn(I, &Parts, &Logger) -> Result<O, ApiError> + Clone + Send + Sync + 'static,
    O: Send + 'static,
{
    type Output = O;
    type Future = Ready<Result<O, ApiError>>;
    type Amends = ();

    // A `Ready` future: `call_now` takes its outcome out at once.
    fn call(&self, input: I, request: &Parts, _ctx: &C, logger: &Logger) -> Self::Future {
        std::future::ready((self.0)(input, request, logger))
    }

    fn amends(_output: &O) {}
}

/// A middleware function of `(input, owned request, logger)`: see [`Middleware::owned`].
#[derive(Clone, Copy)]
pub struct Owned<F>(F);

/// The [`MiddlewareHandler`]s of async functions: `Wrapper: Fn(I, what it takes) => call`.
/// They differ only in what the function takes and how it is called.
macro_rules! async_function_handlers {
    ($(
        $wrapper:ident: Fn(I, $($param:ty),*)
            => |$f:ident, $input:ident, $request:ident, $ctx:ident, $logger:ident| $call:expr;
    )*) => {$(
        impl<F, Fut, I, C, O> MiddlewareHandler<I, C> for $wrapper<F>
        where
            F: Fn(I, $($param),*) -> Fut + Clone + Send + Sync + 'static,
            Fut: Future<Output = Result<O, ApiError>> + Send + 'static,
            O: Send + 'static,
        {
            type Output = O;
            type Future = Fut;
            type Amends = ();

            fn call(&self, $input: I, $request: &Parts, $ctx: &C, $logger: &Logger) -> Fut {
                let $f = &self.0;
                $call
            }

            fn amends(_output: &O) {}
        }
    )*};
}

async_function_handlers! {
    Stateless: Fn(I, &Parts, &Logger)
        => |f, input, request, _ctx, logger| f(input, request, logger);
    WithContext: Fn(I, &Parts, &C, &Logger)
        => |f, input, request, ctx, logger| f(input, request, ctx, logger);
    Owned: Fn(I, RequestInfo, Logger) => |f, input, request, _ctx, logger| {
        let request = RequestInfo {
            method: request.method.clone(),
            uri: request.uri.clone(),
            headers: request.headers.clone(),
        };
        f(input, request, logger.clone())
    };
}

/// A middleware that always grants a clone of one value: the application's shared state (a
/// store, a client pool), put in the context for every handler; see [`Middleware::state`].
#[derive(Clone)]
pub struct State<T>(T);

impl<T, C> MiddlewareHandler<(), C> for State<T>
where
    T: Clone + Send + Sync + 'static,
{
    type Output = T;
    type Future = std::future::Ready<Result<T, ApiError>>;
    type Amends = ();

    fn call(&self, (): (), _request: &Parts, _ctx: &C, _logger: &Logger) -> Self::Future {
        std::future::ready(Ok(self.0.clone()))
    }

    fn amends(_output: &T) {}
}

impl<T> Middleware<(), State<T>> {
    /// A middleware that puts a clone of `value` in the context of every request: shared
    /// state (keep it cheap to clone, an `Arc` or a pool handle). It reads no input and never
    /// denies.
    pub fn state(value: T) -> Self {
        Self::custom(State(value))
    }
}

/// A middleware: an input type `I`, a function `H`, and an optional security description.
///
/// Use `()` as the input type when the middleware reads no input.
// Bounds on `H` alone for Clone, none for Debug (a function is not `Debug`; the decoder
// names the input type).
#[derive_where(Clone; H)]
#[derive_where(Debug)]
pub struct Middleware<I, H> {
    #[derive_where(skip)]
    pub(crate) handler: H,
    pub(crate) decoder: Decoder<I>,
    security: Option<Security>,
    /// The security's credentials, flattened once (checked on every request).
    #[derive_where(skip)]
    credentials: Box<[Credential]>,
    errors: Vec<DeclaredError>,
    success_headers: Vec<ResponseHeader>,
    name: Option<&'static str>,
}

/// One credential of a middleware's [`Security`], as the stage looks for it.
#[derive(Debug, Clone)]
enum Credential {
    /// A request header (its name in lower case).
    Header(String),
    /// A cookie.
    Cookie(String),
    /// A field of the merged input.
    Input(String),
}

impl<I, F> Middleware<I, Owned<F>> {
    /// A middleware from a function of `(input, request, logger)` that owns its copy of the
    /// request (method, URI, headers) and logger, so its `async move` block can read them:
    ///
    /// ```
    /// use strata_core::{ApiError, Logger, RequestInfo, http_error};
    /// use strata_middleware::Middleware;
    ///
    /// struct User(String);
    ///
    /// let auth = Middleware::owned(|(): (), request: RequestInfo, logger: Logger| async move {
    ///     logger.debug("checking the token");
    ///     match request.headers.get("token") {
    ///         Some(token) if token == "456" => Ok(User("Jane".into())),
    ///         _ => Err(http_error!(401, "Invalid token")),
    ///     }
    /// });
    /// # let _ = auth;
    /// ```
    ///
    /// It costs a copy of the headers per request; [`Middleware::new`] borrows them instead, and
    /// then its async part can only use what was copied out before it (a borrowed `request`
    /// inside `async move` is the compiler's "lifetime may not live long enough": use this).
    pub fn owned<Fut, O>(f: F) -> Self
    where
        F: Fn(I, RequestInfo, Logger) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ApiError>> + Send + 'static,
    {
        Self::custom(Owned(f))
    }
}

impl<I, F> Middleware<I, Stateless<F>> {
    /// A middleware from a function of `(input, request parts, logger)`. The parts are
    /// borrowed: copy what the `async` part needs before it (or use [`Middleware::owned`]);
    /// reading `request` inside `async move` does not compile ("lifetime may not live long
    /// enough").
    pub fn new<Fut, O>(f: F) -> Self
    where
        F: Fn(I, &Parts, &Logger) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ApiError>> + Send + 'static,
    {
        Self::custom(Stateless(f))
    }
}

impl<I, F> Middleware<I, Immediate<F>> {
    /// A middleware from a function of `(input, request parts, logger)` that decides at once,
    /// without awaiting anything: a check of a header, a lookup in memory. It returns the
    /// outcome itself, and the stage goes on in the same call, with no future of its own to
    /// wait for: about 400 instructions per request fewer than [`Middleware::new`] with an
    /// `async` block doing the same work (BENCHMARKS.md, auth-param).
    ///
    /// ```
    /// use strata_core::{ApiError, http_error};
    /// use strata_middleware::Middleware;
    ///
    /// struct User {
    ///     name: String,
    /// }
    ///
    /// let auth = Middleware::sync(|(): (), request, _logger| {
    ///     match request.headers.get("token").map(|token| token.as_bytes()) {
    ///         Some(b"secret") => Ok(User { name: "Ann".into() }),
    ///         _ => Err(http_error!(401, "Invalid token")),
    ///     }
    /// });
    /// # let _ = auth;
    /// ```
    pub fn sync<O>(f: F) -> Self
    where
        F: Fn(I, &Parts, &Logger) -> Result<O, ApiError> + Clone + Send + Sync + 'static,
        O: Send + 'static,
    {
        Self::custom(Immediate(f))
    }
}

impl<I, F> Middleware<I, WithContext<F>> {
    /// A middleware from a function of `(input, request parts, context, logger)`, for middleware
    /// that read what earlier middleware provided.
    pub fn with_context<C, Fut, O>(f: F) -> Self
    where
        F: Fn(I, &Parts, &C, &Logger) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ApiError>> + Send + 'static,
    {
        Self::custom(WithContext(f))
    }
}

impl<I, H> Middleware<I, H> {
    /// A middleware from a [`MiddlewareHandler`] of its own (one that amends the response, or
    /// keeps configuration of its own), where [`Middleware::new`] and the like take closures.
    pub fn custom(handler: H) -> Self {
        Self {
            handler,
            decoder: Decoder::new(),
            security: None,
            credentials: Box::default(),
            errors: Vec::new(),
            success_headers: Vec::new(),
            name: None,
        }
    }

    /// Names the middleware (`"auth"`): the name its span carries under a traced request (the
    /// `otel` feature; `strata.middleware.name` on a span named `middleware`). A `'static`
    /// string: one name per middleware, not per request, so traces stay few in names.
    #[must_use]
    pub fn name(mut self, name: &'static str) -> Self {
        self.name = Some(name);
        self
    }

    /// The name given by [`name`](Self::name), or else the type of what the middleware adds
    /// to the context (`books::auth::User`).
    #[cfg_attr(not(feature = "otel"), allow(dead_code))] // the span's attribute
    pub(crate) fn name_or_output_type<C>(&self) -> &'static str
    where
        H: MiddlewareHandler<I, C>,
    {
        self.name.unwrap_or_else(std::any::type_name::<H::Output>)
    }

    /// Describes how the middleware authenticates, for API descriptions, and names the
    /// credentials it needs: a request lacking one of them (the header of a
    /// [`Security::header`] absent, the input field of a [`Security::input`] absent from the
    /// merged input) is answered 401 before the middleware's input is read, and the middleware
    /// is not called. A credential that is present but malformed is the middleware's input to
    /// judge: a 400 when it fails the input's rules, or whatever the middleware answers.
    #[must_use]
    pub fn security(mut self, security: Security) -> Self {
        self.credentials = security
            .leaves()
            .into_iter()
            .filter_map(|leaf| match leaf {
                Security::Header { name, .. } => Some(Credential::Header(name.clone())),
                Security::Cookie { name, .. } => Some(Credential::Cookie(name.clone())),
                Security::Input { name, .. } => Some(Credential::Input(name.clone())),
                // `leaves` flattens combinations.
                _ => None,
            })
            .collect();
        self.security = Some(security);
        self
    }

    /// The 401 for the credentials of its security this request lacks, if it lacks any.
    ///
    /// No `WWW-Authenticate` goes with it. RFC 9110 asks a 401 for a challenge, a scheme the
    /// client answers in `Authorization`; every credential a [`Security`] names is an API key
    /// (OpenAPI's `apiKey`: a header of the API's choosing, or an input field, documented as a
    /// query parameter), for which HTTP registers no scheme, so there is no challenge a client
    /// could answer: an invented one (`ApiKey ...`) would be understood by none. Were
    /// `Security` to gain HTTP schemes sent in `Authorization` (`bearer`, `basic`), theirs would
    /// go here (`Bearer`, `Basic realm="..."`).
    pub(crate) fn missing_credentials(
        &self,
        headers: &HeaderMap,
        input: &Input,
    ) -> Option<ApiError> {
        if self.credentials.is_empty() {
            return None;
        }
        let missing: Vec<String> = self
            .credentials
            .iter()
            .filter_map(|credential| match credential {
                Credential::Header(name) => {
                    (!headers.contains_key(name.as_str())).then(|| format!("{name} (header)"))
                }
                Credential::Input(name) => (!has_field(input, name)).then(|| name.clone()),
                // A header beyond the cookie limits holds no cookie the middleware could read.
                Credential::Cookie(name) => (!RequestCookies::parse(headers)
                    .is_ok_and(|cookies| cookies.contains(name)))
                .then(|| format!("{name} (cookie)")),
            })
            .collect();
        if missing.is_empty() {
            return None;
        }
        let noun = if missing.len() == 1 {
            "credential"
        } else {
            "credentials"
        };
        Some(ApiError::new(
            StatusCode::UNAUTHORIZED,
            format!("Missing {noun}: {}", missing.join(", ")),
        ))
    }

    /// The security description.
    pub fn security_description(&self) -> Option<&Security> {
        self.security.as_ref()
    }

    /// Declares an error status the middleware may answer with (for example 401 when it
    /// denies), for generated API descriptions; every endpoint behind it lists the status.
    #[must_use]
    pub fn error_response(self, status: StatusCode, description: impl Into<String>) -> Self {
        self.declared_error(DeclaredError::new(status, description))
    }

    /// Declares an error response with headers (see [`error_response`](Self::error_response)).
    #[must_use]
    pub fn declared_error(mut self, error: DeclaredError) -> Self {
        self.errors.push(error);
        self
    }

    /// The declared error responses.
    pub fn declared_errors(&self) -> &[DeclaredError] {
        &self.errors
    }

    /// Declares a header the middleware adds to every success response of the endpoints
    /// behind it (`Cache-Control`, `RateLimit`), for generated API descriptions.
    #[must_use]
    pub fn success_header(mut self, header: ResponseHeader) -> Self {
        self.success_headers.push(header);
        self
    }

    /// The headers declared for success responses.
    pub fn success_headers(&self) -> &[ResponseHeader] {
        &self.success_headers
    }

    /// The function.
    pub fn handler(&self) -> &H {
        &self.handler
    }
}

/// Whether the merged input has the field `name`. A plain query (the input of most GETs) is
/// asked in place: its entries are not built for it.
fn has_field(input: &Input, name: &str) -> bool {
    match input.as_plain_query() {
        Some(query) => query.pairs().any(|(key, _)| key == name),
        None => input.get(name).is_some(),
    }
}

impl<I: JsonSchema, H> Middleware<I, H> {
    /// The JSON Schema of the middleware's input type.
    pub fn input_schema(&self) -> schemars::Schema {
        schemars::SchemaGenerator::default().into_root_schema_for::<I>()
    }

    /// The input type for a generator shared by a whole API description.
    pub fn input_description(&self) -> MiddlewareInput {
        MiddlewareInput {
            type_name: std::any::type_name::<I>(),
            schema: I::json_schema,
        }
    }
}
