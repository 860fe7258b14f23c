//! [`Logger`]: the cheap logging handle given to handlers, middleware and result handlers.

use std::fmt;
use std::sync::Arc;

use crate::ApiError;

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

    /// Records one message with its request id and fields; by default, the message alone.
    fn record(&self, record: &Record<'_>) {
        self.log(record.level, record.message);
    }
}

/// Named values attached to a log record: `&[("user", &user_id)]`.
pub type Fields<'a> = &'a [(&'a str, &'a dyn fmt::Display)];

/// One log record, as a [`LogSink`] receives it.
#[derive(Clone, Copy)]
pub struct Record<'a> {
    /// The level.
    pub level: Level,
    /// The message.
    pub message: fmt::Arguments<'a>,
    /// The id of the request being served, if any.
    pub request_id: Option<&'a str>,
    /// Named values.
    pub fields: Fields<'a>,
}

impl fmt::Debug for Record<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Record")
            .field("level", &self.level)
            .field("message", &self.message)
            .field("request_id", &self.request_id)
            .field(
                "fields",
                &self
                    .fields
                    .iter()
                    .map(|(k, v)| (k, v.to_string()))
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// `message key=value key=value` for loggers that only take text.
struct WithFields<'a, M> {
    message: M,
    fields: Fields<'a>,
}

impl<M: fmt::Display> fmt::Display for WithFields<'_, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.message.fmt(f)?;
        for (key, value) in self.fields {
            write!(f, " {key}={value}")?;
        }
        Ok(())
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
    request_id: Option<RequestIdText>,
}

/// The longest request id kept inline in a [`Logger`]: every generated id, and most given ones.
const INLINE_ID: usize = 38;

/// A request id: inline when short, so that the per-request logger, cloned by every stage that
/// logs, copies a few bytes instead of allocating and counting references.
#[derive(Clone)]
enum RequestIdText {
    Inline { len: u8, bytes: [u8; INLINE_ID] },
    Shared(Arc<str>),
}

impl RequestIdText {
    fn new(id: &str) -> Self {
        match u8::try_from(id.len()) {
            Ok(len) if id.len() <= INLINE_ID => {
                let mut bytes = [0; INLINE_ID];
                bytes[..id.len()].copy_from_slice(id.as_bytes());
                Self::Inline { len, bytes }
            }
            _ => Self::Shared(Arc::from(id)),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            // The bytes were copied from a `&str` whole: always UTF-8.
            Self::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default()
            }
            Self::Shared(id) => id,
        }
    }
}

impl fmt::Debug for Logger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Logger")
            .field("sink", &self.sink.as_ref().map(|_| "custom"))
            .field("request_id", &self.request_id())
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
    pub fn with_request_id(&self, request_id: impl AsRef<str>) -> Self {
        Self {
            sink: self.sink.clone(),
            request_id: Some(RequestIdText::new(request_id.as_ref())),
        }
    }

    /// The request id of this logger's records, if any.
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_ref().map(RequestIdText::as_str)
    }

    /// The request's logger from `extensions`, or the default one.
    pub fn from_extensions(extensions: &http::Extensions) -> Self {
        extensions.get::<Logger>().cloned().unwrap_or_default()
    }

    /// Records `message` at `level`.
    pub fn log(&self, level: Level, message: impl fmt::Display) {
        self.log_with(level, message, &[]);
    }

    /// Records `message` at `level` with named values.
    ///
    /// ```
    /// use strata_core::{Level, Logger};
    ///
    /// let logger = Logger::tracing();
    /// logger.log_with(Level::Info, "order placed", &[("order", &42), ("total", &"9.90")]);
    /// ```
    pub fn log_with(&self, level: Level, message: impl fmt::Display, fields: Fields<'_>) {
        if let Some(sink) = &self.sink {
            let record = Record {
                level,
                message: format_args!("{message}"),
                request_id: self.request_id(),
                fields,
            };
            sink.record(&record);
            return;
        }
        let message = WithFields { message, fields };
        // tracing evaluates the fields only for an enabled level: a filtered-out record costs
        // the level check alone.
        let id = self.request_id.as_ref();
        match (level, id) {
            (Level::Debug, Some(id)) => {
                tracing::debug!(target: "strata", request_id = id.as_str(), "{message}");
            }
            (Level::Info, Some(id)) => {
                tracing::info!(target: "strata", request_id = id.as_str(), "{message}");
            }
            (Level::Warn, Some(id)) => {
                tracing::warn!(target: "strata", request_id = id.as_str(), "{message}");
            }
            (Level::Error, Some(id)) => {
                tracing::error!(target: "strata", request_id = id.as_str(), "{message}");
            }
            (Level::Debug, None) => tracing::debug!(target: "strata", "{message}"),
            (Level::Info, None) => tracing::info!(target: "strata", "{message}"),
            (Level::Warn, None) => tracing::warn!(target: "strata", "{message}"),
            (Level::Error, None) => tracing::error!(target: "strata", "{message}"),
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

    /// Records `message` at error level with what caused `error`, innermost last, in the field
    /// `sources` (left out when the error's message already says it all).
    pub fn error_with_causes(&self, message: impl fmt::Display, error: &ApiError) {
        let causes = error.causes();
        if causes.is_empty() {
            self.error(message);
        } else {
            self.log_with(Level::Error, message, &[("sources", &causes)]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_short_and_long() {
        let logger = Logger::tracing();
        assert_eq!(logger.request_id(), None);
        let short = logger.with_request_id("0a1b2c3d-ff");
        assert_eq!(short.request_id(), Some("0a1b2c3d-ff"));
        assert!(matches!(
            short.request_id,
            Some(RequestIdText::Inline { .. })
        ));
        let long = "x".repeat(INLINE_ID + 1);
        let shared = logger.with_request_id(&long);
        assert_eq!(shared.request_id(), Some(long.as_str()));
        assert!(matches!(shared.request_id, Some(RequestIdText::Shared(_))));
        let edge = "é".repeat(INLINE_ID / 2);
        assert_eq!(
            logger.with_request_id(&edge).clone().request_id(),
            Some(edge.as_str())
        );
        assert!(format!("{short:?}").contains("0a1b2c3d-ff"));
    }
}
