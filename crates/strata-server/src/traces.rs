//! Traces with OpenTelemetry (the `otel` feature): a server span for each request the router
//! answers, a child of the caller's span when the request carries W3C Trace Context
//! (`traceparent`, `tracestate`), exported over OTLP/HTTP.
//!
//! The spans are made with the OpenTelemetry API directly, not through `tracing`: the server
//! installs a `tracing` subscriber only when the application has none, and a span that needed
//! a layer in the application's subscriber would vanish silently without it. The request's
//! context is current while the router and the handler run (`Context::current()`), so the
//! application's own spans and the Rust client's `traceparent` follow it.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http::{Method, Request, StatusCode, header};
use opentelemetry::global::BoxedTracer;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{
    Span as _, SpanContext, SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_http::HeaderExtractor;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider};
use strata_core::Logger;
use strata_core::trace::StageTracer;
use strata_routing::Router;

use crate::error::ServerError;

/// The instrumentation scope of the server's spans.
const SCOPE: &str = "strata";
/// The W3C Trace Context header of a caller's span.
const TRACEPARENT: &str = "traceparent";

/// What the OTLP exporter may take for one export before giving up on it.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Traces of requests (spec-free; the `otel` feature): `create_config().tracing(..)`.
///
/// Each request the router answers gets a server span named after its method and route
/// template (`GET /v1/books/:id`; a path no route has gets the method alone, so names stay
/// few whatever clients send), with the HTTP semantic conventions' attributes
/// (`http.request.method`, `http.route`, `http.response.status_code`, `url.path`,
/// `url.scheme`, `server.address`, `server.port`, `network.protocol.version`,
/// `user_agent.original`) and the request's id (`strata.request_id`). A request carrying W3C
/// Trace Context (`traceparent`, `tracestate`) gets a span in the caller's trace, a child of
/// the caller's span. The span ends when the response's head is ready (a streamed body may
/// still be flowing); a 5xx sets its status to error. The health probes and the metrics'
/// exposition get none.
///
/// Each middleware runs in a child span named `middleware` (its name in
/// `strata.middleware.name`), and the handler in one named `handler` (the facade's `otel`
/// feature), each current while it runs: spans the handler makes with the OpenTelemetry API
/// are its children, and a call it makes with the Rust client (with its `otel` feature) gets a
/// client span, whose `traceparent` makes the service called put its span in the same trace.
/// (The request's context is current while the router runs.) With
/// `LogFormat::Json`, a sampled request's log line carries `trace_id` and `span_id`.
///
/// A clone shares the exporter: the server flushes it when it has shut down; a test or a
/// program that stops otherwise calls [`force_flush`](Self::force_flush). The exporter is
/// shut down when the last clone is dropped.
///
/// ```
/// use strata_server::{Config, Tracing};
///
/// let tracing = Tracing::otlp("http://localhost:4318")
///     .service_name("books")
///     .sample_ratio(0.1);
/// let config = Config::builder().tracing(tracing).build();
/// # drop(config);
/// ```
#[derive(Clone)]
pub struct Tracing {
    endpoint: Arc<str>,
    sample_ratio: f64,
    service_name: Option<Arc<str>>,
    /// Built at the first server (or `attach_routing`) using it, shared by the clones.
    provider: Arc<OnceLock<SdkTracerProvider>>,
}

impl fmt::Debug for Tracing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracing")
            .field("endpoint", &self.endpoint)
            .field("sample_ratio", &self.sample_ratio)
            .field("service_name", &self.service_name)
            .field("started", &self.provider.get().is_some())
            .finish()
    }
}

impl Tracing {
    /// Spans exported over OTLP/HTTP (protobuf) to the collector at `endpoint`, its base URL
    /// as `OTEL_EXPORTER_OTLP_ENDPOINT` has it (`http://localhost:4318`; `https://` is not
    /// supported yet, the server refuses to start with it): they are posted to
    /// `{endpoint}/v1/traces`, in batches, from a thread of the exporter's own. Every trace is
    /// sampled ([`sample_ratio`](Self::sample_ratio) to sample fewer). The service is named by
    /// `OTEL_SERVICE_NAME` when it is set ([`service_name`](Self::service_name) to name it
    /// here).
    pub fn otlp(endpoint: impl Into<String>) -> Self {
        let mut endpoint = endpoint.into();
        while endpoint.ends_with('/') {
            endpoint.pop();
        }
        Self {
            endpoint: endpoint.into(),
            sample_ratio: 1.0,
            service_name: None,
            provider: Arc::new(OnceLock::new()),
        }
    }

    /// Samples this share of the traces that start here (0 to 1; default 1: all), by trace
    /// id; a request whose caller sent `traceparent` follows the caller's decision. A ratio
    /// outside 0..=1 stops the server from starting, the error naming it.
    ///
    /// At 0, a request without `traceparent` is served as without tracing, at no cost: no
    /// span, not even an unsampled one, so the Rust client's calls made while serving it
    /// send no `traceparent` (the next service decides for itself).
    #[must_use]
    pub fn sample_ratio(mut self, ratio: f64) -> Self {
        self.sample_ratio = ratio;
        self.provider = Arc::new(OnceLock::new());
        self
    }

    /// The service's name in its spans (the resource's `service.name`).
    #[must_use]
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into().into());
        self.provider = Arc::new(OnceLock::new());
        self
    }

    /// Exports every span ended so far, waiting for the collector's answer (it blocks: from
    /// async code, call it in `tokio::task::spawn_blocking`). Nothing to do before a server
    /// used the configuration.
    pub fn force_flush(&self) -> OTelSdkResult {
        self.provider
            .get()
            .map_or(Ok(()), SdkTracerProvider::force_flush)
    }

    /// The tracer of the requests' spans, the exporter started at the first call.
    pub(crate) fn tracer(&self) -> Result<SdkTracer, ServerError> {
        if let Some(provider) = self.provider.get() {
            return Ok(provider.tracer(SCOPE));
        }
        let provider = self.build()?;
        // Another server may have started it meanwhile: the first one wins, this one is
        // dropped (shutting its exporter down, unused).
        Ok(self.provider.get_or_init(|| provider).tracer(SCOPE))
    }

    fn build(&self) -> Result<SdkTracerProvider, ServerError> {
        let ratio = self.sample_ratio;
        if !(0.0..=1.0).contains(&ratio) {
            return Err(ServerError::Config(format!(
                "tracing: sample_ratio must be between 0 and 1, got {ratio}"
            )));
        }
        let endpoint = format!("{}/v1/traces", self.endpoint);
        let uri = endpoint.parse::<http::Uri>();
        // The exporter's client is built without TLS (no https:// collectors yet): refused
        // here rather than failing at every export.
        if !uri.is_ok_and(|uri| uri.scheme_str() == Some("http") && uri.host().is_some()) {
            return Err(ServerError::Config(format!(
                "tracing: the OTLP endpoint must be an http:// URL (https:// is not supported \
                 yet), got `{}`",
                self.endpoint
            )));
        }
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(endpoint)
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|error| ServerError::Config(format!("tracing: the OTLP exporter: {error}")))?;
        let mut resource = Resource::builder();
        if let Some(name) = &self.service_name {
            resource = resource.with_service_name(name.to_string());
        }
        Ok(SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
                ratio,
            ))))
            .with_resource(resource.build())
            .build())
    }
}

/// What the router stack needs to trace requests: the tracer and the router naming routes.
#[derive(Clone, Debug)]
pub(crate) struct Traced {
    tracer: SdkTracer,
    /// The same tracer, for the stages' spans (the handler's), put in each request's context.
    stages: StageTracer,
    router: Router,
    /// Whether a trace that starts here may be sampled (a ratio above 0).
    roots_sampled: bool,
}

impl Traced {
    pub(crate) fn new(tracing: &Tracing, router: Router) -> Result<Self, ServerError> {
        let tracer = tracing.tracer()?;
        Ok(Self {
            stages: StageTracer::new(BoxedTracer::new(Box::new(tracer.clone()))),
            tracer,
            router,
            roots_sampled: tracing.sample_ratio > 0.0,
        })
    }

    /// The server span of `request`, started now, in the caller's trace when it sent one;
    /// none for a trace that would start here unsampled at a ratio of 0 (its span, ids,
    /// name and contexts cost a request about a third of a hello's CPU).
    pub(crate) fn begin<B>(&self, request: &Request<B>) -> Option<RequestSpan> {
        if !self.roots_sampled && !request.headers().contains_key(TRACEPARENT) {
            return None;
        }
        let parent = TraceContextPropagator::new().extract(&HeaderExtractor(request.headers()));
        let method = method_name(request.method());
        let route = self
            .router
            .route_template(request.method(), request.uri().path());
        let name: Cow<'static, str> = match route {
            Some(route) => format!("{method} {route}").into(),
            None => method.into(),
        };
        let mut span = self
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .start_with_context(&self.tracer, &parent);
        // Our sampler reads no attributes: an unsampled request is spared writing them.
        if span.is_recording() {
            span.set_attributes(attributes(request, method, route));
        }
        Some(RequestSpan {
            context: parent.with_span(span).with_value(self.stages.clone()),
        })
    }
}

/// The conventions' attributes of `request` (`method` as they name it, `route` its template).
fn attributes<B>(
    request: &Request<B>,
    method: &'static str,
    route: Option<&Arc<str>>,
) -> Vec<KeyValue> {
    let mut attributes = Vec::with_capacity(10);
    attributes.push(KeyValue::new("http.request.method", method));
    if method == OTHER_METHOD {
        attributes.push(KeyValue::new(
            "http.request.method_original",
            request.method().as_str().to_owned(),
        ));
    }
    if let Some(route) = route {
        attributes.push(KeyValue::new("http.route", route.to_string()));
    }
    attributes.push(KeyValue::new("url.path", request.uri().path().to_owned()));
    if let Some(scheme) = request.uri().scheme_str() {
        attributes.push(KeyValue::new("url.scheme", scheme.to_owned()));
    }
    // HTTP/2 has the authority in the URI, HTTP/1.1 in `Host`.
    let authority = request.uri().authority().cloned().or_else(|| {
        request
            .headers()
            .get(header::HOST)
            .and_then(|host| http::uri::Authority::try_from(host.as_bytes()).ok())
    });
    if let Some(authority) = authority {
        attributes.push(KeyValue::new("server.address", authority.host().to_owned()));
        if let Some(port) = authority.port_u16() {
            attributes.push(KeyValue::new("server.port", i64::from(port)));
        }
    }
    if let Some(version) = protocol_version(request.version()) {
        attributes.push(KeyValue::new("network.protocol.version", version));
    }
    if let Some(agent) = request
        .headers()
        .get(header::USER_AGENT)
        .and_then(|agent| agent.to_str().ok())
    {
        attributes.push(KeyValue::new("user_agent.original", agent.to_owned()));
    }
    if let Some(id) = Logger::from_extensions(request.extensions()).request_id() {
        attributes.push(KeyValue::new("strata.request_id", id.to_owned()));
    }
    attributes
}

/// A request's span, ended with its status.
pub(crate) struct RequestSpan {
    context: Context,
}

impl RequestSpan {
    /// The context whose span is the request's: current while the request is served.
    pub(crate) fn context(&self) -> &Context {
        &self.context
    }

    /// The span's trace and span ids, when it is sampled (what a log line carries).
    pub(crate) fn sampled_ids(&self) -> Option<(String, String)> {
        let span = self.context.span();
        let context: &SpanContext = span.span_context();
        context.is_sampled().then(|| {
            (
                context.trace_id().to_string(),
                context.span_id().to_string(),
            )
        })
    }

    /// Ends the span: the request was answered with `status`.
    pub(crate) fn end(self, status: StatusCode) {
        let span = self.context.span();
        span.set_attribute(KeyValue::new(
            "http.response.status_code",
            i64::from(status.as_u16()),
        ));
        // A server's 4xx is the client's error, not the span's (the conventions say so).
        if status.is_server_error() {
            span.set_attribute(KeyValue::new("error.type", status.as_str().to_owned()));
            span.set_status(Status::error(""));
        }
        span.end();
    }
}

/// What the conventions name a method outside their list.
const OTHER_METHOD: &str = "_OTHER";

/// The method's name as the conventions have it: the nine they know, `_OTHER` for the rest (so
/// a client's made-up methods cannot multiply span names).
fn method_name(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => OTHER_METHOD,
    }
}

fn protocol_version(version: http::Version) -> Option<&'static str> {
    match version {
        http::Version::HTTP_10 => Some("1.0"),
        http::Version::HTTP_11 => Some("1.1"),
        http::Version::HTTP_2 => Some("2"),
        http::Version::HTTP_3 => Some("3"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_settings_are_named() {
        let error = |tracing: Tracing| tracing.tracer().err().map(|e| e.to_string());
        assert_eq!(
            error(Tracing::otlp("http://127.0.0.1:4318").sample_ratio(1.5)).as_deref(),
            Some(
                "invalid server configuration: tracing: sample_ratio must be between 0 and 1, got 1.5"
            )
        );
        assert_eq!(
            error(Tracing::otlp("http://127.0.0.1:4318").sample_ratio(f64::NAN)).as_deref(),
            Some(
                "invalid server configuration: tracing: sample_ratio must be between 0 and 1, got NaN"
            )
        );
        assert_eq!(
            error(Tracing::otlp("collector:4318")).as_deref(),
            Some(
                "invalid server configuration: tracing: the OTLP endpoint must be an http:// URL \
                 (https:// is not supported yet), got `collector:4318`"
            )
        );
    }

    #[test]
    fn unknown_methods_are_other() {
        assert_eq!(method_name(&Method::GET), "GET");
        let made_up = Method::from_bytes(b"BREW").unwrap_or_default();
        assert_eq!(method_name(&made_up), "_OTHER");
    }
}
