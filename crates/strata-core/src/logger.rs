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

    /// Records one message of the request `request_id`; by default, the message alone.
    fn log_request(&self, level: Level, request_id: Option<&str>, message: fmt::Arguments<'_>) {
        let _ = request_id;
        self.log(level, message);
    }
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
    request_id: Option<Arc<str>>,
}

impl fmt::Debug for Logger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Logger")
            .field("sink", &self.sink.as_ref().map(|_| "custom"))
            .field("request_id", &self.request_id)
            .finish()
    }
}

impl Logger {
    /// A logger emitting `tracing` events.
    pub fn tracing() -> Self {
        Self::default()
    }

    /// A logger sending records to `sink`.
    pub fn with_sink(sink: Arc<dyn LogSink>) -> Self {
        Self {
            sink: Some(sink),
            request_id: None,
        }
    }

    /// A child logger whose records carry `request_id`.
    #[must_use]
    pub fn with_request_id(&self, request_id: impl Into<Arc<str>>) -> Self {
        Self {
            sink: self.sink.clone(),
            request_id: Some(request_id.into()),
        }
    }

    /// The request id of this logger's records, if any.
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }

    /// The request's logger from `extensions`, or the default one.
    pub fn from_extensions(extensions: &http::Extensions) -> Self {
        extensions.get::<Logger>().cloned().unwrap_or_default()
    }

    /// Records `message` at `level`.
    pub fn log(&self, level: Level, message: impl fmt::Display) {
        let id = self.request_id.as_deref();
        match &self.sink {
            Some(sink) => sink.log_request(level, id, format_args!("{message}")),
            None => match (level, id) {
                (Level::Debug, Some(id)) => {
                    tracing::debug!(target: "strata", request_id = id, "{message}");
                }
                (Level::Info, Some(id)) => {
                    tracing::info!(target: "strata", request_id = id, "{message}");
                }
                (Level::Warn, Some(id)) => {
                    tracing::warn!(target: "strata", request_id = id, "{message}");
                }
                (Level::Error, Some(id)) => {
                    tracing::error!(target: "strata", request_id = id, "{message}");
                }
                (Level::Debug, None) => tracing::debug!(target: "strata", "{message}"),
                (Level::Info, None) => tracing::info!(target: "strata", "{message}"),
                (Level::Warn, None) => tracing::warn!(target: "strata", "{message}"),
                (Level::Error, None) => tracing::error!(target: "strata", "{message}"),
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
