//! W3C Trace Context on requests (the `otel` feature): a request written while an OpenTelemetry
//! span is current (a handler of a traced Strata server, or the application's own span) carries
//! `traceparent` and `tracestate`, so that the service called puts its span in the same trace.
//! Under a traced Strata request, a call also gets a client span of its own (named after the
//! operation, `GET /v1/books/:id`), which the service called sees as its parent.

use http::{Request, StatusCode};

use crate::Body;

/// A call's client span, ended when the response's head arrives (nothing without the `otel`
/// feature, or outside a traced request).
#[derive(Default)]
pub(crate) struct ClientSpan {
    #[cfg(feature = "otel")]
    context: Option<opentelemetry::Context>,
}

/// The client span a request carries until it is sent, in its extensions.
#[cfg(feature = "otel")]
#[derive(Clone)]
struct Carried(opentelemetry::Context);

/// Starts the client span of `request` (of the operation at `template`) under a traced
/// request, and writes `traceparent` (and `tracestate`) for it, or for the current span.
#[cfg(feature = "otel")]
pub(crate) fn start(request: &mut Request<Body>, template: &'static str) {
    use opentelemetry::trace::{SpanKind, TraceContextExt as _, Tracer as _};
    use opentelemetry::{Context, KeyValue};
    use strata_core::trace::StageTracer;

    Context::map_current(|current| {
        let Some(tracer) = current.get::<StageTracer>() else {
            inject(current, request);
            return;
        };
        let mut attributes = vec![
            KeyValue::new("http.request.method", request.method().as_str().to_owned()),
            KeyValue::new("url.full", request.uri().to_string()),
            KeyValue::new("url.template", template),
        ];
        if let Some(host) = request.uri().host() {
            attributes.push(KeyValue::new("server.address", host.to_owned()));
        }
        if let Some(port) = request.uri().port_u16() {
            attributes.push(KeyValue::new("server.port", i64::from(port)));
        }
        let tracer = tracer.tracer();
        let span = tracer
            .span_builder(format!("{} {template}", request.method()))
            .with_kind(SpanKind::Client)
            .with_attributes(attributes)
            .start_with_context(tracer, current);
        let context = current.with_span(span);
        inject(&context, request);
        request.extensions_mut().insert(Carried(context));
    });
}

/// Without the `otel` feature: nothing.
#[cfg(not(feature = "otel"))]
pub(crate) fn start(_: &mut Request<Body>, _: &'static str) {}

/// Writes `context`'s `traceparent` (and `tracestate`) into the request; nothing without a
/// valid span.
#[cfg(feature = "otel")]
fn inject<B>(context: &opentelemetry::Context, request: &mut Request<B>) {
    use opentelemetry::propagation::TextMapPropagator as _;
    opentelemetry_sdk::propagation::TraceContextPropagator::new().inject_context(
        context,
        &mut opentelemetry_http::HeaderInjector(request.headers_mut()),
    );
}

/// Writes the current context's `traceparent` into a request that gets no span of its own (an
/// event stream's connections).
#[cfg(feature = "otel")]
pub(crate) fn inject_current<B>(request: &mut Request<B>) {
    opentelemetry::Context::map_current(|current| inject(current, request));
}

/// Without the `otel` feature: nothing.
#[cfg(not(feature = "otel"))]
pub(crate) fn inject_current<B>(_: &mut Request<B>) {}

impl ClientSpan {
    /// The span `request` carries, taken out before it is sent.
    pub(crate) fn take<B>(request: &mut Request<B>) -> Self {
        #[cfg(feature = "otel")]
        {
            Self {
                context: request
                    .extensions_mut()
                    .remove::<Carried>()
                    .map(|carried| carried.0),
            }
        }
        #[cfg(not(feature = "otel"))]
        {
            let _ = request;
            Self {}
        }
    }

    /// Ends the span: the response's head came with `status`, or the exchange failed.
    #[cfg_attr(not(feature = "otel"), allow(clippy::unused_self))]
    pub(crate) fn end(self, status: Option<StatusCode>) {
        #[cfg(feature = "otel")]
        if let Some(context) = self.context {
            use opentelemetry::KeyValue;
            use opentelemetry::trace::{Status, TraceContextExt as _};
            let span = context.span();
            if let Some(status) = status {
                span.set_attribute(KeyValue::new(
                    "http.response.status_code",
                    i64::from(status.as_u16()),
                ));
                // A client span's 4xx is an error too (the conventions say so).
                if status.is_client_error() || status.is_server_error() {
                    span.set_attribute(KeyValue::new("error.type", status.as_str().to_owned()));
                    span.set_status(Status::error(""));
                }
            } else {
                span.set_attribute(KeyValue::new("error.type", "transport"));
                span.set_status(Status::error(""));
            }
            span.end();
        }
        #[cfg(not(feature = "otel"))]
        let _ = status;
    }
}

#[cfg(all(test, feature = "otel"))]
mod tests {
    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState,
    };

    use super::*;

    #[test]
    fn the_current_span_is_written() {
        let mut request = Request::new(Body::empty());
        start(&mut request, "/x");
        assert!(
            request.headers().is_empty(),
            "no current span, nothing written"
        );
        let span = SpanContext::new(
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap_or(TraceId::INVALID),
            SpanId::from_hex("00f067aa0ba902b7").unwrap_or(SpanId::INVALID),
            TraceFlags::SAMPLED,
            true,
            TraceState::from_key_value([("vendor", "x")]).unwrap_or_default(),
        );
        let _current = opentelemetry::Context::new()
            .with_remote_span_context(span)
            .attach();
        start(&mut request, "/x");
        assert_eq!(
            request.headers()["traceparent"],
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        assert_eq!(request.headers()["tracestate"], "vendor=x");
        assert!(
            ClientSpan::take(&mut request).context.is_none(),
            "no span of its own outside a traced Strata request"
        );
    }
}
