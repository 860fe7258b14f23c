//! Running an endpoint or a middleware on a described request.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use derive_where::derive_where;
use garde::Validate;
use http::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use http::{Extensions, HeaderMap, Method, Request, Response};
use http_body_util::BodyExt;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use strata_core::{
    ApiError, Body, DefaultResultHandler, HCons, HNil, Logger, Mode, Output, PathParams,
};
use strata_endpoint::{Endpoint, PipelineSettings};
use strata_format::FormatLayer;
use strata_input::Staged;
use strata_middleware::{Middleware, MiddlewareHandler, MiddlewareService};
use strata_upload::{MultipartForm, UploadLimits, UploadedFile};
use tower::ServiceExt;
use tower_layer::Layer;
use tower_service::Service;

use crate::mocks::{LoggerMock, ResponseMock};

/// A request to test with (the spec's `requestProps`).
#[derive(Debug, Clone)]
pub struct TestRequest {
    method: Method,
    path: String,
    query: Vec<(String, String)>,
    body: Option<Value>,
    files: Vec<(String, UploadedFile)>,
    params: Vec<(String, String)>,
    headers: HeaderMap,
    extensions: Extensions,
}

impl TestRequest {
    /// A request with `method` to `/`.
    pub fn new(method: Method) -> Self {
        Self {
            method,
            path: "/".to_owned(),
            query: Vec::new(),
            body: None,
            files: Vec::new(),
            params: Vec::new(),
            headers: HeaderMap::new(),
            extensions: Extensions::new(),
        }
    }

    /// A GET request.
    pub fn get() -> Self {
        Self::new(Method::GET)
    }

    /// A POST request.
    pub fn post() -> Self {
        Self::new(Method::POST)
    }

    /// A PUT request.
    pub fn put() -> Self {
        Self::new(Method::PUT)
    }

    /// A PATCH request.
    pub fn patch() -> Self {
        Self::new(Method::PATCH)
    }

    /// A DELETE request.
    pub fn delete() -> Self {
        Self::new(Method::DELETE)
    }

    /// Sets the path (default `/`).
    #[must_use]
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Adds a query parameter (repeat a key for a list).
    #[must_use]
    pub fn query(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.query.push((key.into(), value.into()));
        self
    }

    /// Sets the body, already parsed: it is sent as JSON.
    #[must_use]
    pub fn body(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }

    /// Adds an uploaded file under the field `name` (repeat a name for several files).
    ///
    /// A request with files is sent as `multipart/form-data`: the body's top-level fields become
    /// text parts (strings as they are, lists as repeated parts, other values as JSON text), as a
    /// browser's form would send them; the body must then be an object (anything else is a
    /// mistake in the test and panics), and the multipart `Content-Type` replaces any given.
    /// Uploads are turned on with the default [`UploadLimits`] unless the test's config sets
    /// its own.
    #[must_use]
    pub fn file(mut self, name: impl Into<String>, file: UploadedFile) -> Self {
        self.files.push((name.into(), file));
        self
    }

    /// Adds a path parameter, as routing would find it.
    #[must_use]
    pub fn param(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.params.push((name.into(), value.into()));
        self
    }

    /// Adds a header.
    #[must_use]
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }

    /// Adds an extension, for anything else a request carries.
    #[must_use]
    pub fn extension<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }
}

/// The pipeline settings of tests: the defaults in development mode; override what a test
/// needs ([`TestArgs::config`]).
///
/// CORS and the other router settings are routing's business: an endpoint tested alone sends
/// no CORS headers; test them with `oneshot` on a `Router`.
pub fn test_config() -> PipelineSettings {
    // Development: a test wants to read why a request failed.
    PipelineSettings::default().mode(Mode::Development)
}

/// Everything a test run takes besides the endpoint or middleware (the spec's `requestProps`,
/// `responseOptions`, `configProps`, `loggerProps`).
#[derive(Debug, Clone)]
pub struct TestArgs {
    request: TestRequest,
    config: PipelineSettings,
    request_id: Option<String>,
}

impl Default for TestArgs {
    fn default() -> Self {
        Self::new(TestRequest::get())
    }
}

impl TestArgs {
    /// `request` with the test configuration.
    pub fn new(request: TestRequest) -> Self {
        Self {
            request,
            config: test_config(),
            request_id: None,
        }
    }

    /// Overrides the pipeline settings: `args.config(|c| c.mode = Mode::Production)`.
    /// Overrides accumulate.
    #[must_use]
    pub fn config(mut self, overrides: impl FnOnce(&mut PipelineSettings)) -> Self {
        overrides(&mut self.config);
        self
    }

    /// Gives the request's logger a request id.
    #[must_use]
    pub fn request_id(mut self, id: impl Into<String>) -> Self {
        self.request_id = Some(id.into());
        self
    }

    /// Adds a response-side value (the spec's `responseOptions`, e.g. `locals`): Rust handlers
    /// read such per-request values from the request extensions, so it goes there.
    #[must_use]
    pub fn local<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.request.extensions.insert(value);
        self
    }
}

/// What [`test_endpoint`] returns.
#[derive(Debug, Clone)]
pub struct TestOutcome {
    /// The response.
    pub response: ResponseMock,
    /// The logs.
    pub logger: LoggerMock,
}

/// What [`test_middleware`] returns.
#[derive(Debug, Clone)]
pub struct MiddlewareOutcome<O> {
    /// What the middleware added to the context; `None` when it denied.
    pub output: Option<O>,
    /// The error response when it denied; nothing sent (`is_end_called() == false`) when it
    /// granted.
    pub response: ResponseMock,
    /// The logs.
    pub logger: LoggerMock,
}

fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// The http request for `request`, with the logger mock in its extensions.
///
/// Panics on a path that is not a valid request target: a mistake in the test itself.
fn build(request: TestRequest, request_id: Option<String>, logger: &LoggerMock) -> Request<Body> {
    let mut uri = request.path;
    let mut separator = if uri.contains('?') { '&' } else { '?' };
    for (key, value) in &request.query {
        uri.push(separator);
        separator = '&';
        uri.push_str(&encode(key));
        uri.push('=');
        uri.push_str(&encode(value));
    }
    let is_multipart = !request.files.is_empty();
    let (body, content_type) = if is_multipart {
        let form = multipart(request.body.as_ref(), request.files);
        let content_type = HeaderValue::try_from(form.content_type()).ok();
        (Body::from(form.into_bytes()), content_type)
    } else {
        match &request.body {
            Some(value) => (
                Body::from(serde_json::to_vec(value).unwrap_or_default()),
                Some(HeaderValue::from_static("application/json")),
            ),
            None => (Body::empty(), None),
        }
    };
    let mut built = Request::new(body);
    *built.method_mut() = request.method;
    *built.uri_mut() = uri.parse().unwrap_or_else(|error| {
        panic!("TestRequest: {uri:?} is not a valid request target: {error}")
    });
    *built.headers_mut() = request.headers;
    if let Some(content_type) = content_type
        && (is_multipart || !built.headers().contains_key(CONTENT_TYPE))
    {
        // A multipart body is unreadable without its own boundary: its type always wins.
        built.headers_mut().insert(CONTENT_TYPE, content_type);
    }
    built.extensions_mut().extend(request.extensions);
    if !request.params.is_empty() {
        built
            .extensions_mut()
            .insert(request.params.into_iter().collect::<PathParams>());
    }
    let mut test_logger = Logger::with_sink(Arc::new(logger.clone()));
    if let Some(id) = request_id {
        test_logger = test_logger.with_request_id(id);
    }
    built.extensions_mut().insert(test_logger);
    built
}

/// The multipart form a browser would send for `body`'s fields and `files`.
fn multipart(body: Option<&Value>, files: Vec<(String, UploadedFile)>) -> MultipartForm {
    let mut form = MultipartForm::new();
    if let Some(body) = body
        && !body.is_object()
    {
        panic!(
            "TestRequest: with files, the body must be a JSON object of form fields, not {body}"
        );
    }
    if let Some(Value::Object(fields)) = body {
        for (name, value) in fields {
            let values = match value {
                Value::Array(items) => items.iter().collect(),
                one => vec![one],
            };
            for value in values {
                form = match value {
                    Value::String(text) => form.text(name.clone(), text.clone()),
                    other => form.text(name.clone(), other.to_string()),
                };
            }
        }
    }
    for (name, file) in files {
        form = form.file(name, file);
    }
    form
}

/// The test's settings; a request with files turns uploads on unless the test configured them.
fn config_for(args: &TestArgs) -> PipelineSettings {
    let mut config = args.config.clone();
    if !args.request.files.is_empty() && config.uploads.is_none() {
        config.uploads = Some(UploadLimits::new());
    }
    config
}

async fn mock(response: Response<Body>) -> ResponseMock {
    let (parts, body) = response.into_parts();
    let body = body
        .collect()
        .await
        .map(http_body_util::Collected::to_bytes)
        .unwrap_or_default();
    ResponseMock {
        status: parts.status,
        headers: parts.headers,
        body,
        ended: true,
    }
}

/// Runs `endpoint` on the request of `args` (spec `testEndpoint`).
///
/// ```
/// use garde::Validate;
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
/// use serde_json::json;
/// use strata::Level;
/// use strata::prelude::*;
/// use strata_testing::{TestArgs, TestRequest, test_endpoint};
///
/// #[derive(Deserialize, Validate, JsonSchema)]
/// struct Rename {
///     #[garde(skip)]
///     id: u32,
///     #[garde(length(chars, min = 1))]
///     name: String,
/// }
///
/// #[derive(Serialize, Validate, JsonSchema)]
/// struct Renamed {
///     #[garde(skip)]
///     id: u32,
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let rename = default_endpoints_factory().patch().handler(async |input: Rename, logger: Logger| {
///     logger.log_with(Level::Info, "renamed", &[("id", &input.id)]);
///     Ok(Renamed { id: input.id })
/// });
/// let request = TestRequest::patch().param("id", "7").body(json!({"name": "Ada"}));
/// let outcome = test_endpoint(&rename, TestArgs::new(request).request_id("t-1")).await;
/// assert_eq!(outcome.response.json_data().unwrap()["data"]["id"], 7);
/// let info = &outcome.logger.logs().info[0];
/// assert_eq!((info.message.as_str(), info.request_id.as_deref()), ("renamed", Some("t-1")));
/// # }
/// ```
pub async fn test_endpoint(endpoint: &Endpoint, args: TestArgs) -> TestOutcome {
    let logger = LoggerMock::default();
    let config = config_for(&args);
    let service = endpoint.service_with(&config);
    let request = build(args.request, args.request_id, &logger);
    let response = match service.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    TestOutcome {
        response: mock(response).await,
        logger,
    }
}

/// Hands the test's context to the middleware.
#[derive_where(Clone; S)]
struct InjectContext<S, C> {
    inner: S,
    ctx: Arc<Mutex<Option<C>>>,
}

impl<S, C> Service<Request<Staged<HNil>>> for InjectContext<S, C>
where
    S: Service<Request<Staged<C>>, Error = ApiError>,
{
    type Response = S::Response;
    type Error = ApiError;
    type Future = strata_core::future::ShortCircuit<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ApiError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Staged<HNil>>) -> Self::Future {
        let taken = self
            .ctx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(ctx) = taken else {
            return strata_core::future::ShortCircuit::error(ApiError::internal(
                "the test context was used twice",
            ));
        };
        let request = request.map(|staged| Staged {
            input: staged.input,
            ctx,
        });
        strata_core::future::ShortCircuit::inner(self.inner.call(request))
    }
}

/// Keeps what the middleware added to the context.
#[derive_where(Clone)]
struct CaptureOutput<O> {
    slot: Arc<Mutex<Option<O>>>,
}

impl<O, C> Service<Request<Staged<HCons<O, C>>>> for CaptureOutput<O> {
    type Response = Output;
    type Error = ApiError;
    type Future = std::future::Ready<Result<Output, ApiError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ApiError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Staged<HCons<O, C>>>) -> Self::Future {
        let HCons { head, .. } = request.into_body().ctx;
        *self.slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(head);
        std::future::ready(Output::new(&()).map_err(ApiError::from))
    }
}

/// Runs `middleware` on the request of `args`, with `ctx` as the context earlier middleware
/// provided (spec `testMiddleware`).
///
/// ```
/// use http::header::{AUTHORIZATION, HeaderValue};
/// use strata::core::HNil;
/// use strata::prelude::*;
/// use strata_testing::{TestArgs, TestRequest, test_middleware};
///
/// #[derive(Debug, PartialEq)]
/// struct Token(String);
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let bearer = || {
///     Middleware::new(|(): (), request, _logger| {
///         let token = request.headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()).map(str::to_owned);
///         async move {
///             match token.as_deref().and_then(|t| t.strip_prefix("Bearer ")) {
///                 Some(token) => Ok(Token(token.to_owned())),
///                 None => Err(http_error!(401, "A bearer token is required")),
///             }
///         }
///     })
/// };
///
/// let request = TestRequest::get().header(AUTHORIZATION, HeaderValue::from_static("Bearer abc"));
/// let granted = test_middleware(bearer(), TestArgs::new(request), HNil).await;
/// assert_eq!(granted.output, Some(Token("abc".into())));
/// assert!(!granted.response.is_end_called());
///
/// let denied = test_middleware(bearer(), TestArgs::default(), HNil).await;
/// assert_eq!(denied.output, None);
/// assert_eq!(denied.response.status_code(), 401);
/// assert_eq!(denied.response.json_data().unwrap()["error"]["message"], "A bearer token is required");
/// # }
/// ```
pub async fn test_middleware<I, H, C>(
    middleware: Middleware<I, H>,
    args: TestArgs,
    ctx: C,
) -> MiddlewareOutcome<H::Output>
where
    H: MiddlewareHandler<I, C>,
    I: DeserializeOwned + JsonSchema + Validate + 'static,
    I::Context: Default,
    C: Send + 'static,
{
    let logger = LoggerMock::default();
    let slot = Arc::new(Mutex::new(None));
    let core = MiddlewareService::new(
        CaptureOutput {
            slot: Arc::clone(&slot),
        },
        middleware,
    );
    let injected = InjectContext {
        inner: core,
        ctx: Arc::new(Mutex::new(Some(ctx))),
    };
    let config = config_for(&args);
    let parse = config.parse_layer();
    let service = FormatLayer::new(DefaultResultHandler)
        .mode(config.mode)
        .layer(parse.layer(config.combine_layer().layer(injected)));
    let request = build(args.request, args.request_id, &logger);
    let response = match service.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    let output = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
    let response = if output.is_some() {
        // The middleware granted: it sent nothing.
        ResponseMock {
            status: response.status(),
            headers: HeaderMap::new(),
            body: bytes::Bytes::new(),
            ended: false,
        }
    } else {
        mock(response).await
    };
    MiddlewareOutcome {
        output,
        response,
        logger,
    }
}
