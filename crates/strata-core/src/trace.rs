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
    /// A span named `stage` started now, when the current context is a traced request's;
    /// `attributes` is called only for a span that records (a sampled request's).
    pub fn start(stage: &'static str, attributes: impl FnOnce() -> Vec<KeyValue>) -> Option<Self> {
        // Looked at in place: an untraced request clones no context.
        Context::map_current(|current| {
            current.get::<StageTracer>().map(|tracer| {
                let mut span = tracer.0.start_with_context(stage, current);
                if span.is_recording() {
                    span.set_attributes(attributes());
                }
                Self {
                    context: current.with_span(span),
                }
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
