//! The seam between endpoints and routing: what an endpoint is once built, type-erased.
//!
//! Routing needs an endpoint's methods, the names of its input fields (to check `:param`s), its
//! descriptions, and a service to call, built for the [`PipelineSettings`] routing is given.
//! [`Endpoint`] holds exactly that; the facade's `EndpointsFactory` builds it from typed parts.

use std::any::Any;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use schemars::Schema;
use tower::Service;
use tower::util::BoxCloneSyncService;

use strata_core::{
    Body, DeclaredError, DeclaredOutcome, IncomingBody, MiddlewareInput, OutcomeFn, PositiveFn,
    ResponseDescription, ResponseHeader, SchemaFn, Security,
};

use crate::settings::PipelineSettings;

/// What is known about an endpoint without calling it.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct EndpointMeta {
    /// Declared methods; empty means none declared (the endpoint serves GET).
    pub methods: Vec<Method>,
    /// The [`Operation`](strata_core::Operation) the endpoint implements: routing refuses to
    /// mount it at another method or path.
    pub declared: Option<strata_core::DeclaredRoute>,
    /// Grouping label.
    pub tag: Option<String>,
    /// Short text.
    pub short_description: Option<String>,
    /// Long text.
    pub description: Option<String>,
    /// The operation id chosen for the API description (otherwise derived from method and path).
    pub operation_id: Option<String>,
    /// Whether the endpoint is deprecated.
    pub deprecated: bool,
    /// Left out of generated API descriptions (the description's own route, a docs page).
    pub undocumented: bool,
    /// JSON Schema of the endpoint's input type.
    pub input_schema: Option<Schema>,
    /// JSON Schema of the endpoint's output type.
    pub output_schema: Option<Schema>,
    /// The endpoint's input type for a shared generator, written inline (its properties are
    /// the endpoint's fields; nested named types are referenced).
    pub input: Option<SchemaFn>,
    /// The endpoint's output type for a shared generator (a reference when the type is named).
    pub output: Option<SchemaFn>,
    /// The Rust type name of the input, for messages.
    pub input_type: Option<&'static str>,
    /// The inputs of the endpoint's middleware, in attachment order.
    pub middleware_inputs: Vec<MiddlewareInput>,
    /// Security of the endpoint's middleware, in attachment order.
    pub security: Vec<Security>,
    /// Names of the input fields of the endpoint and its middleware (wire names).
    pub input_fields: Vec<String>,
    /// The input has a [`RawBody`](strata_input::RawBody) field `raw`: the body is read as bytes
    /// of any content type.
    pub raw_body: bool,
    /// The input's [`StreamedFile`](strata_input::StreamedFile) field, when it has one: a
    /// multipart body is read up to its part, which is the form's last.
    pub streamed_file: Option<String>,
    /// Success statuses the handler answers with, when not the result handler's (200).
    pub success_statuses: Vec<StatusCode>,
    /// The media types of the success responses, when the endpoint says them (a file or a
    /// stream of a known type); empty: what the output describes.
    pub success_media_types: Vec<String>,
    /// Error statuses declared by the endpoint and its middleware.
    pub errors: Vec<DeclaredError>,
    /// Headers the endpoint's middleware add to every success response.
    pub success_headers: Vec<ResponseHeader>,
    /// Success responses.
    pub positive: Vec<ResponseDescription>,
    /// The result handler's success responses for any output schema.
    pub positive_fn: Option<PositiveFn>,
    /// Error responses.
    pub negative: Vec<ResponseDescription>,
    /// The declared outcomes of an endpoint whose output is an
    /// [`Outcomes`](strata_core::Outcomes) type (empty for one success): the description lists
    /// each under its status instead of [`positive`](Self::positive).
    pub outcomes: Vec<DeclaredOutcome>,
    /// The result handler's response to each declared outcome.
    pub outcome_fn: Option<OutcomeFn>,
}

impl EndpointMeta {
    /// The methods the endpoint serves: the declared ones, or GET when none are declared.
    pub fn served_methods(&self) -> &[Method] {
        if self.methods.is_empty() {
            std::slice::from_ref(&Method::GET)
        } else {
            &self.methods
        }
    }
}

/// The boxed service of an endpoint, for tests and for mounting into other tower stacks.
pub type EndpointService = BoxCloneSyncService<Request<Body>, Response<Body>, Infallible>;

/// The future of a [`SharedService`] call.
pub type EndpointFuture = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

/// A stack routing can hold and call through a shared reference: implemented for every
/// `Service<Request<Body>, Response = Response<Body>, Error = Infallible>` that
/// is `Clone + Send + Sync + 'static` with a `Send` future (every endpoint's stack is one).
pub trait EndpointStack: Send + Sync + 'static {
    /// Handles `request` on a clone of the stack, once it is ready.
    fn call_shared(&self, request: Request<Body>) -> EndpointFuture;
}

impl<S> EndpointStack for S
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    fn call_shared(&self, request: Request<Body>) -> EndpointFuture {
        // Cloning the stack itself copies a few `Arc`s; boxing it (what cloning a
        // `BoxCloneSyncService` does) would allocate on every request.
        let mut service = self.clone();
        let mut cx = Context::from_waker(Waker::noop());
        match service.poll_ready(&mut cx) {
            Poll::Ready(Ok(())) => Box::pin(service.call(request)),
            Poll::Ready(Err(never)) => match never {},
            // Not ready at once (no Strata stage does this): wait for it properly.
            Poll::Pending => Box::pin(tower::ServiceExt::oneshot(service, request)),
        }
    }
}

/// An endpoint's service as routing holds it: called through a shared reference, with no
/// per-request allocation but its future's.
///
/// It is also a tower service (always ready), so it can be stacked like any other.
#[derive(Clone)]
pub struct SharedService(Arc<dyn EndpointStack>);

impl fmt::Debug for SharedService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedService").finish_non_exhaustive()
    }
}

impl SharedService {
    /// Shares `service`; each call works on a clone of it.
    pub fn new(service: impl EndpointStack) -> Self {
        Self(Arc::new(service))
    }

    /// Handles `request`.
    pub fn call_shared(&self, request: Request<Body>) -> EndpointFuture {
        self.0.call_shared(request)
    }
}

impl Service<Request<Body>> for SharedService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = EndpointFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> EndpointFuture {
        self.0.call_shared(request)
    }
}

type BuildFn = dyn Fn(&PipelineSettings) -> SharedService + Send + Sync;

/// The identity of an [`Endpoint`] and its clones ([`Endpoint::id`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EndpointId(usize);

/// A built endpoint: its metadata and a way to make its service for the pipeline's settings.
///
/// Routing calls [`Endpoint::shared_service`] once per endpoint at startup; [`Endpoint::service`]
/// is the same service for the default settings (built once), accepting any request body, for
/// tests and for mounting into other tower stacks.
#[derive(Clone)]
pub struct Endpoint {
    meta: Arc<EndpointMeta>,
    build: Arc<BuildFn>,
    default_service: Arc<OnceLock<EndpointService>>,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// An endpoint from its metadata and a service builder.
    pub fn from_parts(
        meta: EndpointMeta,
        build: impl Fn(&PipelineSettings) -> EndpointService + Send + Sync + 'static,
    ) -> Self {
        Self::from_shared(meta, move |settings: &PipelineSettings| {
            SharedService::new(build(settings))
        })
    }

    /// An endpoint from its metadata and a builder of its shared service (what routing calls;
    /// cheaper per request than a boxed service).
    pub fn from_shared(
        meta: EndpointMeta,
        build: impl Fn(&PipelineSettings) -> SharedService + Send + Sync + 'static,
    ) -> Self {
        Self {
            meta: Arc::new(meta),
            build: Arc::new(build),
            default_service: Arc::default(),
        }
    }

    /// The metadata.
    pub fn meta(&self) -> &EndpointMeta {
        &self.meta
    }

    /// Tells endpoints apart: the same for an endpoint and its clones (which build the same
    /// services), different for endpoints built separately while both exist (it is an
    /// address: an id of a dropped endpoint may come back). Routing builds one service for an
    /// endpoint mounted at many paths.
    pub fn id(&self) -> EndpointId {
        EndpointId(Arc::as_ptr(&self.build).cast::<()>() as usize)
    }

    /// The methods served (declared, or GET).
    pub fn methods(&self) -> &[Method] {
        self.meta.served_methods()
    }

    /// Builds the boxed service for the pipeline settings of `config` (a [`PipelineSettings`], a
    /// `RoutingSettings` or a server's configuration).
    pub fn boxed_service(&self, config: &impl AsRef<PipelineSettings>) -> EndpointService {
        BoxCloneSyncService::new((self.build)(config.as_ref()))
    }

    /// Builds the shared service for the pipeline settings of `config` (routing calls this once
    /// per endpoint).
    pub fn shared_service(&self, config: &impl AsRef<PipelineSettings>) -> SharedService {
        (self.build)(config.as_ref())
    }

    /// The service for the default configuration, accepting any request body. It is built on
    /// the first call and cloned afterwards.
    pub fn service(&self) -> AnyBody<EndpointService> {
        let service = self
            .default_service
            .get_or_init(|| self.boxed_service(&PipelineSettings::default()));
        AnyBody::new(service.clone())
    }

    /// The service for the pipeline settings of `config`, accepting any request body.
    pub fn service_with(&self, config: &impl AsRef<PipelineSettings>) -> AnyBody<EndpointService> {
        AnyBody::new(self.boxed_service(config))
    }
}

/// Converts any body into a [`Body`], without boxing when it already is one or is a
/// `String` or `Bytes`.
pub fn into_request_body<B>(body: B) -> Body
where
    B: IncomingBody,
{
    // Most requests (GET, DELETE) have no body: nothing to keep, nothing to box.
    if body.is_end_stream() {
        return Body::empty();
    }
    let mut slot = Some(body);
    let any: &mut dyn Any = &mut slot;
    // These checks compare type ids known at compile time; the optimizer removes the losers.
    if let Some(body) = any.downcast_mut::<Option<Body>>().and_then(Option::take) {
        return body;
    }
    if let Some(body) = any.downcast_mut::<Option<String>>().and_then(Option::take) {
        return Body::from(body);
    }
    if let Some(body) = any.downcast_mut::<Option<Bytes>>().and_then(Option::take) {
        return Body::from(body);
    }
    match slot {
        Some(body) => Body::new(body),
        None => Body::empty(),
    }
}

/// A service that accepts `Request<B>` for any body `B` and gives its inner service a
/// `Request<Body>`.
#[derive(Debug, Clone)]
pub struct AnyBody<S> {
    inner: S,
}

impl<S> AnyBody<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        Self { inner }
    }

    strata_core::inner_service_accessors!();
}

impl<S, B> Service<Request<B>> for AnyBody<S>
where
    S: Service<Request<Body>>,
    B: IncomingBody,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        self.inner.call(request.map(into_request_body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ready only on every other poll, like a service with a busy resource.
    #[derive(Clone, Default)]
    struct Hesitant {
        polled: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl Service<Request<Body>> for Hesitant {
        type Response = Response<Body>;
        type Error = Infallible;
        type Future = std::future::Ready<Result<Response<Body>, Infallible>>;

        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            let n = self
                .polled
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if n.is_multiple_of(2) {
                cx.waker().wake_by_ref();
                Poll::Pending
            } else {
                Poll::Ready(Ok(()))
            }
        }

        fn call(&mut self, request: Request<Body>) -> Self::Future {
            std::future::ready(Ok(Response::new(Body::from(request.uri().to_string()))))
        }
    }

    #[tokio::test]
    async fn a_shared_service_is_called_through_a_reference_and_waits_for_readiness() {
        use http_body_util::BodyExt;
        let shared = SharedService::new(Hesitant::default());
        let (a, b) = (
            shared.call_shared(Request::new(Body::empty())),
            shared.call_shared(Request::get("/b").body(Body::empty()).unwrap()),
        );
        let (a, b) = (a.await.unwrap(), b.await.unwrap());
        assert_eq!(a.into_body().collect().await.unwrap().to_bytes(), "/");
        assert_eq!(b.into_body().collect().await.unwrap().to_bytes(), "/b");
        // A boxed service and a tower service from the same shared one.
        let mut boxed = EndpointService::new(shared);
        let response = tower::ServiceExt::ready(&mut boxed)
            .await
            .unwrap()
            .call(Request::get("/c").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(
            response.into_body().collect().await.unwrap().to_bytes(),
            "/c"
        );
    }

    #[test]
    fn clones_share_an_id() {
        let build = |_: &PipelineSettings| {
            BoxCloneSyncService::new(tower::service_fn(|_: Request<Body>| async {
                Ok::<_, Infallible>(Response::new(Body::empty()))
            }))
        };
        let one = Endpoint::from_parts(EndpointMeta::default(), build);
        let other = Endpoint::from_parts(EndpointMeta::default(), build);
        assert_eq!(one.id(), one.clone().id());
        assert_ne!(one.id(), other.id());
    }

    #[test]
    fn undeclared_methods_serve_get() {
        let meta = EndpointMeta::default();
        assert_eq!(meta.served_methods(), [Method::GET]);
        let meta = EndpointMeta {
            methods: vec![Method::POST],
            ..EndpointMeta::default()
        };
        assert_eq!(meta.served_methods(), [Method::POST]);
    }

    #[test]
    fn the_default_service_is_built_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};

        let builds = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&builds);
        let endpoint = Endpoint::from_parts(
            EndpointMeta::default(),
            move |_settings: &PipelineSettings| {
                counted.fetch_add(1, Ordering::SeqCst);
                BoxCloneSyncService::new(tower::service_fn(|_: Request<Body>| async {
                    Ok::<_, Infallible>(Response::new(Body::empty()))
                }))
            },
        );
        let _first = endpoint.service();
        let _second = endpoint.clone().service();
        assert_eq!(builds.load(Ordering::SeqCst), 1);
        let _other = endpoint.boxed_service(&PipelineSettings::default());
        assert_eq!(
            builds.load(Ordering::SeqCst),
            2,
            "routing builds its own per settings"
        );
    }

    #[test]
    fn known_bodies_are_not_boxed() {
        use http_body::Body as _;
        assert_eq!(
            into_request_body(String::from("ab")).size_hint().exact(),
            Some(2)
        );
        assert_eq!(
            into_request_body(Body::from("abc")).size_hint().exact(),
            Some(3)
        );
    }
}
