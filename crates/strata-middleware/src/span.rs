//! The span of a middleware's run under a traced request (the `otel` feature): a child of the
//! request's span, current while the middleware runs, ended when it has decided, before the
//! rest of the chain is called (so the next stages' spans are its siblings, not its
//! children). Without the feature it is nothing, and each call below compiles to nothing.

use strata_core::ApiError;

/// A middleware's span, or nothing (no `otel` feature, or an untraced request).
#[derive(Debug)]
pub(crate) struct Span {
    #[cfg(feature = "otel")]
    span: Option<strata_core::trace::StageSpan>,
}

impl Span {
    /// Starts the span of the middleware `name`, under a traced request.
    #[cfg(feature = "otel")]
    pub(crate) fn start(name: &'static str) -> Self {
        let span = strata_core::trace::StageSpan::start("middleware", || {
            vec![opentelemetry::KeyValue::new("strata.middleware.name", name)]
        });
        Self { span }
    }

    /// Without the `otel` feature: nothing.
    #[cfg(not(feature = "otel"))]
    #[inline]
    pub(crate) fn start(_name: &'static str) -> Self {
        Self {}
    }

    /// Runs `f` with the span current.
    #[inline]
    #[cfg_attr(not(feature = "otel"), allow(clippy::unused_self))]
    pub(crate) fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        #[cfg(feature = "otel")]
        if let Some(span) = &self.span {
            return span.in_scope(f);
        }
        f()
    }

    /// Ends the span: the middleware is done, with `error` if it refused.
    #[inline]
    #[cfg_attr(not(feature = "otel"), allow(clippy::unused_self))]
    pub(crate) fn end(self, error: Option<&ApiError>) {
        #[cfg(feature = "otel")]
        if let Some(span) = self.span {
            span.end(error);
        }
        #[cfg(not(feature = "otel"))]
        let _ = error;
    }
}
