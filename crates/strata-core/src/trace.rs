//! Spans of the stages that take time (the `otel` feature): a traced server puts a
//! [`StageTracer`] in each request's OpenTelemetry context, and a stage wrapped in [`InSpan`]
//! (or holding a [`StageSpan`]) gets a span of its own, a child of the request's, current while
//! the stage runs. Without a traced request (no tracer in the current context) a stage pays for
//! one look-up.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, ready};

use opentelemetry::global::BoxedTracer;
use opentelemetry::trace::{Span as _, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};
use pin_project_lite::pin_project;

use crate::ApiError;

/// The tracer of a request's stage spans, a value of its OpenTelemetry context.
#[derive(Clone)]
pub struct StageTracer(Arc<BoxedTracer>);

impl StageTracer {
    /// The stages of requests traced by `tracer` get their spans from it.
    pub fn new(tracer: BoxedTracer) -> Self {
        Self(Arc::new(tracer))
    }

    /// The tracer (the Rust client's spans of calls come from it).
    pub fn tracer(&self) -> &BoxedTracer {
        &self.0
    }
}

impl fmt::Debug for StageTracer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StageTracer")
    }
}

/// A stage's span, a child of the traced request's: current while the stage runs (within
/// [`in_scope`](Self::in_scope)), ended by [`end`](Self::end) with the stage's outcome.
pub struct StageSpan {
    context: Context,
}

impl StageSpan {
    /// A span named `stage` started now, when the current context is a sampled request's;
    /// `attributes` is called only for a span that records. An unsampled request's stages get
    /// none: the server's sampler follows the parent's decision, so their spans would be
    /// dropped anyway, and the stage runs in the request's context (a `traceparent` sent from
    /// it says "not sampled" all the same).
    pub fn start(stage: &'static str, attributes: impl FnOnce() -> Vec<KeyValue>) -> Option<Self> {
        // Looked at in place: an untraced request clones no context.
        Context::map_current(|current| {
            let tracer = current.get::<StageTracer>()?;
            if !current.span().span_context().is_sampled() {
                return None;
            }
            let mut span = tracer.0.start_with_context(stage, current);
            if span.is_recording() {
                span.set_attributes(attributes());
            }
            Some(Self {
                context: current.with_span(span),
            })
        })
    }

    /// Runs `f` with the stage's span current: spans started within are its children.
    pub fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        let _current = self.context.clone().attach();
        f()
    }

    /// Ends the span: the stage is done, with `error` if it failed (a server error, 5xx,
    /// marks the span).
    pub fn end(self, error: Option<&ApiError>) {
        let span = self.context.span();
        if let Some(error) = error
            && error.status().is_server_error()
        {
            span.set_attribute(KeyValue::new(
                "error.type",
                error.status().as_str().to_owned(),
            ));
            span.set_status(Status::error(""));
        }
        span.end();
    }
}

impl fmt::Debug for StageSpan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StageSpan")
            .field("span", &self.context.span().span_context())
            .finish()
    }
}

pin_project! {
    /// A stage's future in a span named after the stage: started when the future is made
    /// (under a traced request), ended when it is done; a server error (5xx) marks it.
    pub struct InSpan<F> {
        #[pin]
        inner: F,
        span: Option<StageSpan>,
    }
}

impl<F> InSpan<F> {
    /// `inner` in a span named `stage`, when the current context is a traced request's.
    pub fn start(stage: &'static str, inner: F) -> Self {
        Self {
            inner,
            span: StageSpan::start(stage, Vec::new),
        }
    }
}

impl<F, T> Future for InSpan<F>
where
    F: Future<Output = Result<T, ApiError>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<F::Output> {
        let this = self.project();
        let Some(span) = this.span.as_ref() else {
            return this.inner.poll(cx);
        };
        let output = ready!(span.in_scope(|| this.inner.poll(cx)));
        if let Some(span) = this.span.take() {
            span.end(output.as_ref().err());
        }
        Poll::Ready(output)
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::noop::NoopTracer;
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};

    use super::*;

    /// A request's context: its span (sampled or not) and the tracer of its stages.
    fn request(flags: TraceFlags) -> Context {
        let span = SpanContext::new(
            TraceId::from(0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736),
            SpanId::from(0x00f0_67aa_0ba9_02b7),
            flags,
            false,
            TraceState::default(),
        );
        Context::new()
            .with_remote_span_context(span)
            .with_value(StageTracer::new(BoxedTracer::new(Box::new(
                NoopTracer::new(),
            ))))
    }

    #[test]
    fn stages_get_spans_under_sampled_requests_only() {
        let started = |context: Context| {
            let _current = context.attach();
            StageSpan::start("middleware", Vec::new).is_some()
        };
        assert!(started(request(TraceFlags::SAMPLED)));
        assert!(!started(request(TraceFlags::NOT_SAMPLED)));
        // No tracer in the context: an untraced request.
        assert!(!started(Context::new()));
    }
}
