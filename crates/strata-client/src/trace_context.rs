//! W3C Trace Context on requests (the `otel` feature): a request written while an OpenTelemetry
//! span is current (a handler of a traced Strata server, or the application's own span) carries
//! `traceparent` and `tracestate`, so that the service called puts its span in the same trace.

use http::HeaderMap;

/// Writes the current context's `traceparent` (and `tracestate`, when it has one) into
/// `headers`; nothing without a valid current span.
#[cfg(feature = "otel")]
pub(crate) fn inject(headers: &mut HeaderMap) {
    use opentelemetry::propagation::TextMapPropagator as _;
    opentelemetry_sdk::propagation::TraceContextPropagator::new().inject_context(
        &opentelemetry::Context::current(),
        &mut opentelemetry_http::HeaderInjector(headers),
    );
}

/// Without the `otel` feature: nothing.
#[cfg(not(feature = "otel"))]
pub(crate) fn inject(_: &mut HeaderMap) {}

#[cfg(all(test, feature = "otel"))]
mod tests {
    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState,
    };

    use super::*;

    #[test]
    fn the_current_span_is_written() {
        let mut headers = HeaderMap::new();
        inject(&mut headers);
        assert!(headers.is_empty(), "no current span, nothing written");
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
        inject(&mut headers);
        assert_eq!(
            headers["traceparent"],
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        assert_eq!(headers["tracestate"], "vendor=x");
    }
}
