//! The default `tracing` subscriber: installed only when the configuration asks for it
//! (`create_config().logger(..)`) and the application has none, coloured only unless asked not
//! to, on a terminal, and never with `NO_COLOR` set (<https://no-color.org>); or JSON lines,
//! with a line for each request ([`RequestLine`]).

use std::ffi::OsStr;
use std::io::IsTerminal;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use http::{Method, Request, StatusCode};
use strata_core::{Level, Logger};
use strata_routing::Router;
use tracing::Subscriber;
use tracing_subscriber::fmt::MakeWriter;

use crate::config::{LogColor, LogFormat, LoggerOptions};
use crate::metrics::UNMATCHED_ROUTE;

fn tracing_level(level: Level) -> tracing::Level {
    match level {
        Level::Debug => tracing::Level::DEBUG,
        Level::Info => tracing::Level::INFO,
        Level::Warn => tracing::Level::WARN,
        Level::Error => tracing::Level::ERROR,
    }
}

/// Installs a `fmt` subscriber writing to standard output with `options`; returns `false` (and
/// changes nothing) when a global subscriber is already set, so an application's own setup
/// always wins. Colours are used only when `options.color` allows them, standard output is a
/// terminal and `NO_COLOR` is unset or empty: a log file or a pipe never gets escape codes.
pub fn install_default_subscriber(options: &LoggerOptions) -> bool {
    let color = use_color(
        options.color == LogColor::Auto,
        std::env::var_os("NO_COLOR").as_deref(),
        std::io::stdout().is_terminal(),
    );
    tracing::subscriber::set_global_default(subscriber(*options, color, std::io::stdout)).is_ok()
}

/// The subscriber of `options`, writing with `writer`, coloured (text only) when `color`.
pub(crate) fn subscriber<W>(
    options: LoggerOptions,
    color: bool,
    writer: W,
) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_max_level(tracing_level(options.level))
        .with_writer(writer);
    match options.format {
        LogFormat::Json => Box::new(
            builder
                .json()
                // The record's fields at the top level, next to `message`: what log shippers
                // index without a mapping.
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false)
                .finish(),
        ),
        LogFormat::Text => Box::new(builder.with_ansi(color).finish()),
    }
}

/// A request's line, begun when the router gets the request and written when its response
/// head is ready (`LogFormat::Json`).
pub(crate) struct RequestLine {
    request_id: Option<Box<str>>,
    route: Arc<str>,
    method: Method,
    start: Instant,
}

impl RequestLine {
    /// The line of `request`, its route named by `router`.
    pub(crate) fn begin<B>(router: &Router, request: &Request<B>) -> Self {
        let route = router
            .route_template(request.method(), request.uri().path())
            .map_or_else(unmatched, Arc::clone);
        Self {
            request_id: Logger::from_extensions(request.extensions())
                .request_id()
                .map(Box::from),
            route,
            method: request.method().clone(),
            start: Instant::now(),
        }
    }

    /// Writes the line: the request was answered with `status`; `trace` is its span's trace
    /// and span ids, when it is traced and sampled.
    #[allow(clippy::needless_pass_by_value)] // the ids end here
    pub(crate) fn end(self, status: StatusCode, trace: Option<(String, String)>) {
        let duration_ms = self.start.elapsed().as_secs_f64() * 1000.0;
        let (route, method, status) = (&*self.route, self.method.as_str(), status.as_u16());
        // The id comes from the request's logger, there whenever the server runs the router;
        // an absent field (`None`) is left out of the line.
        let request_id = self.request_id.as_deref();
        let (trace_id, span_id) = match &trace {
            Some((trace_id, span_id)) => (Some(trace_id.as_str()), Some(span_id.as_str())),
            None => (None, None),
        };
        tracing::info!(
            target: "strata::request",
            request_id,
            trace_id,
            span_id,
            route,
            method,
            status,
            duration_ms,
            "request"
        );
    }
}

/// The `route` of unknown paths, shared.
fn unmatched() -> Arc<str> {
    static UNMATCHED: OnceLock<Arc<str>> = OnceLock::new();
    Arc::clone(UNMATCHED.get_or_init(|| UNMATCHED_ROUTE.into()))
}

/// Whether to colour: asked for, on a terminal, and no non-empty `NO_COLOR`.
fn use_color(requested: bool, no_color: Option<&OsStr>, terminal: bool) -> bool {
    requested && terminal && no_color.is_none_or(OsStr::is_empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_needs_a_request_a_terminal_and_no_no_color() {
        let set = Some(OsStr::new("1"));
        assert!(use_color(true, None, true));
        assert!(
            use_color(true, Some(OsStr::new("")), true),
            "an empty NO_COLOR is unset"
        );
        assert!(!use_color(true, set, true));
        assert!(!use_color(true, None, false), "a file or a pipe");
        assert!(!use_color(false, None, true));
    }

    #[test]
    fn the_applications_subscriber_wins() {
        // This test binary installs its global subscriber once, here: it plays the application.
        let application = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::ERROR)
            .finish();
        tracing::subscriber::set_global_default(application).expect("first global subscriber");
        let options = LoggerOptions::new(Level::Debug).color(LogColor::Never);
        assert!(
            !install_default_subscriber(&options),
            "must not replace the application's"
        );
        assert!(
            !tracing::enabled!(tracing::Level::DEBUG),
            "the application's level still rules"
        );
    }
}
