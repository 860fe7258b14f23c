//! [`Logger`]: the cheap logging handle given to handlers, middleware and result handlers.

use std::fmt;
use std::sync::Arc;

/// Severity of a log record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Details for debugging.
    Debug,
    /// Normal operation.
    Info,
    /// Something unexpected that was handled.
    Warn,
    /// A failure.
    Error,
}

/// Where a [`Logger`] sends records when it does not use `tracing`: a test's capture, or an
/// application's own logger.
pub trait LogSink: Send + Sync + 'static {
    /// Records one message.
    fn log(&self, level: Level, message: fmt::Arguments<'_>);
}

/// A cheap, cloneable logging handle.
///
/// By default it emits `tracing` events (target `strata`); [`Logger::with_sink`] sends records to
/// a [`LogSink`] instead. Stages take the request's logger from the request extensions when one
/// was inserted there (a per-request logger carrying a request id, or a test's capturing logger),
/// otherwise they use the default.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use strata_core::logger::{Level, LogSink, Logger};
///
/// #[derive(Default)]
/// struct Capture(Mutex<Vec<(Level, String)>>);
/// impl LogSink for Capture {
///     fn log(&self, level: Level, message: std::fmt::Arguments<'_>) {
///         self.0.lock().unwrap().push((level, message.to_string()));
///     }
/// }
///
/// let capture = Arc::new(Capture::default());
/// let logger = Logger::with_sink(capture.clone());
/// logger.info(format_args!("served {}", 3));
/// assert_eq!(capture.0.lock().unwrap()[0], (Level::Info, "served 3".to_owned()));
/// ```
#[derive(Clone, Default)]
pub struct Logger {
    sink: Option<Arc<dyn LogSink>>,
}

impl fmt::Debug for Logger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Logger")
            .field("sink", &self.sink.as_ref().map(|_| "custom"))
            .finish()
    }
}

impl Logger {
    /// A logger emitting `tracing` events.
    pub fn tracing() -> Self {
        Self { sink: None }
    }

    /// A logger sending records to `sink`.
    pub fn with_sink(sink: Arc<dyn LogSink>) -> Self {
        Self { sink: Some(sink) }
    }

    /// The request's logger from `extensions`, or the default one.
    pub fn from_extensions(extensions: &http::Extensions) -> Self {
        extensions.get::<Logger>().cloned().unwrap_or_default()
    }

    /// Records `message` at `level`.
    pub fn log(&self, level: Level, message: impl fmt::Display) {
        match &self.sink {
            Some(sink) => sink.log(level, format_args!("{message}")),
            None => match level {
                Level::Debug => tracing::debug!(target: "strata", "{message}"),
                Level::Info => tracing::info!(target: "strata", "{message}"),
                Level::Warn => tracing::warn!(target: "strata", "{message}"),
                Level::Error => tracing::error!(target: "strata", "{message}"),
            },
        }
    }

    /// Records at debug level.
    pub fn debug(&self, message: impl fmt::Display) {
        self.log(Level::Debug, message);
    }

    /// Records at info level.
    pub fn info(&self, message: impl fmt::Display) {
        self.log(Level::Info, message);
    }

    /// Records at warn level.
    pub fn warn(&self, message: impl fmt::Display) {
        self.log(Level::Warn, message);
    }

    /// Records at error level.
    pub fn error(&self, message: impl fmt::Display) {
        self.log(Level::Error, message);
    }
}
