//! [`Logger`]: the cheap logging handle given to handlers, middleware and result handlers.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::{ApiError, ErrorKind};

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

    /// Records `message` about the server error `error`: at error level with its causes
    /// ([`error_with_causes`](Self::error_with_causes)); an overload that clients caused
    /// ([`ErrorKind::Overload`]) at warn level instead, at most one line per message every 5 s,
    /// process-wide ([`warn_rate_limited`](Self::warn_rate_limited)): a client can make as
    /// many of those as it sends requests.
    pub fn server_error(&self, message: impl fmt::Display, error: &ApiError) {
        /// One limit for every stage and the server: the log is the process's.
        static CLIENT_OVERLOADS: LogRateLimit = LogRateLimit::new(Duration::from_secs(5));
        if error.kind() == ErrorKind::Overload {
            self.warn_rate_limited(&CLIENT_OVERLOADS, message, error);
        } else {
            self.error_with_causes(message, error);
        }
    }

    /// Records `message` about `error` at warn level if `limit` lets a line of the error's
    /// message through now, with its causes (`sources`) and the lines of that message left out
    /// since the last one (`suppressed`, when there were any).
    ///
    /// ```
    /// use std::time::Duration;
    /// use strata_core::logger::{LogRateLimit, Logger};
    ///
    /// static SHED: LogRateLimit = LogRateLimit::new(Duration::from_secs(5));
    /// let error = strata_core::http_error!(503, "Overloaded");
    /// for _ in 0..1000 {
    ///     // One line now; the next one, 5 s or more later, says `suppressed=999`.
    ///     Logger::tracing().warn_rate_limited(&SHED, "GET /: 503 Overloaded", &error);
    /// }
    /// ```
    pub fn warn_rate_limited(
        &self,
        limit: &LogRateLimit,
        message: impl fmt::Display,
        error: &ApiError,
    ) {
        let Some(suppressed) = limit.admit(error.message()) else {
            return;
        };
        let causes = error.causes();
        match (suppressed, causes.is_empty()) {
            (0, true) => self.warn(message),
            (0, false) => self.log_with(Level::Warn, message, &[("sources", &causes)]),
            (_, true) => self.log_with(Level::Warn, message, &[("suppressed", &suppressed)]),
            (_, false) => self.log_with(
                Level::Warn,
                message,
                &[("sources", &causes), ("suppressed", &suppressed)],
            ),
        }
    }
}

/// How many slots a [`LogRateLimit`] has: kinds of message that share one share its limit.
const RATE_LIMIT_SLOTS: usize = 16;

/// At most one log line per period for each kind of message, the next one counting those left
/// out: for what clients can cause at will (a spent body budget, shed load), so that a flood of
/// requests does not become a flood of log lines.
///
/// Lock-free and fixed in size: a kind of message (its key) is counted in one of 16 slots,
/// chosen by a hash of the key; two kinds in one slot share its limit. A `const fn`, so that a
/// limit can be a `static` shared by every request.
///
/// ```
/// use std::time::Duration;
/// use strata_core::logger::LogRateLimit;
///
/// let limit = LogRateLimit::new(Duration::from_secs(60));
/// assert_eq!(limit.admit("disk full"), Some(0), "the first line goes through");
/// assert_eq!(limit.admit("disk full"), None);
/// assert_eq!(limit.admit("disk full"), None);
/// assert_eq!(limit.admit("queue full"), Some(0), "another kind has its own limit");
/// // A minute later, `admit("disk full")` is `Some(2)`: two lines were left out.
/// ```
pub struct LogRateLimit {
    period_ms: u64,
    slots: [RateLimitSlot; RATE_LIMIT_SLOTS],
    /// Milliseconds on a monotonic clock (replaced in tests).
    clock: fn() -> u64,
}

struct RateLimitSlot {
    /// When the next line may go through, on `clock`.
    next_at: AtomicU64,
    /// Lines left out since the last one that went through.
    left_out: AtomicU64,
}

impl LogRateLimit {
    /// At most one line per `period` for each kind of message.
    pub const fn new(period: Duration) -> Self {
        Self::with_clock(period, monotonic_ms)
    }

    const fn with_clock(period: Duration, clock: fn() -> u64) -> Self {
        Self {
            // Milliseconds, saturating (`From` is not `const`: a lossless `as`).
            period_ms: period
                .as_secs()
                .saturating_mul(1000)
                .saturating_add(period.subsec_millis() as u64),
            slots: [const {
                RateLimitSlot {
                    next_at: AtomicU64::new(0),
                    left_out: AtomicU64::new(0),
                }
            }; RATE_LIMIT_SLOTS],
            clock,
        }
    }

    /// Whether a line of the kind `key` may be written now: `Some` with how many lines of its
    /// kind were left out since the last one written; `None` (and it is counted as left out)
    /// when one was written less than a period ago.
    pub fn admit(&self, key: &str) -> Option<u64> {
        let slot = &self.slots[slot_of(key)];
        let now = (self.clock)();
        let next_at = slot.next_at.load(Ordering::Relaxed);
        // Of lines racing for one slot, the one that moves `next_at` goes through.
        if now < next_at
            || slot
                .next_at
                .compare_exchange(
                    next_at,
                    now.saturating_add(self.period_ms),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_err()
        {
            slot.left_out.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Some(slot.left_out.swap(0, Ordering::AcqRel))
    }
}

impl fmt::Debug for LogRateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogRateLimit")
            .field("period_ms", &self.period_ms)
            .finish_non_exhaustive()
    }
}

/// The slot of a key: FNV-1a over its bytes (keys are short messages).
fn slot_of(key: &str) -> usize {
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    // The remainder is below the slot count: it fits.
    #[allow(clippy::cast_possible_truncation)]
    let slot = (hash % RATE_LIMIT_SLOTS as u64) as usize;
    slot
}

/// Milliseconds since the first call, on the monotonic clock.
fn monotonic_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    let elapsed = START.get_or_init(Instant::now).elapsed().as_millis();
    u64::try_from(elapsed).unwrap_or(u64::MAX)
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

    /// Every record as `Level message key=value…`.
    #[derive(Default)]
    struct Lines(std::sync::Mutex<Vec<String>>);

    impl LogSink for Lines {
        fn log(&self, level: Level, message: fmt::Arguments<'_>) {
            self.record(&Record {
                level,
                message,
                request_id: None,
                fields: &[],
            });
        }

        fn record(&self, record: &Record<'_>) {
            let line = WithFields {
                message: record.message,
                fields: record.fields,
            };
            let line = format!("{:?} {line}", record.level);
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(line);
        }
    }

    impl Lines {
        fn take(&self) -> Vec<String> {
            std::mem::take(
                &mut *self
                    .0
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            )
        }
    }

    /// The clock of [`overloads_are_one_warn_line_per_period_then_a_summary`].
    static NOW_MS: AtomicU64 = AtomicU64::new(0);

    fn test_clock() -> u64 {
        NOW_MS.load(Ordering::Relaxed)
    }

    #[test]
    fn overloads_are_one_warn_line_per_period_then_a_summary() {
        let limit = LogRateLimit::with_clock(Duration::from_secs(5), test_clock);
        let lines = Arc::new(Lines::default());
        let logger = Logger::with_sink(lines.clone());
        let full = ApiError::new(http::StatusCode::SERVICE_UNAVAILABLE, "Budget spent")
            .with_kind(ErrorKind::Overload);
        let shed = ApiError::new(http::StatusCode::SERVICE_UNAVAILABLE, "Overloaded")
            .with_kind(ErrorKind::Overload)
            .with_source(std::io::Error::other("queue full"));
        NOW_MS.store(1_000, Ordering::Relaxed);
        for _ in 0..100 {
            logger.warn_rate_limited(&limit, "POST /a: 503 Budget spent", &full);
        }
        logger.warn_rate_limited(&limit, "GET /b: 503 Overloaded", &shed);
        assert_eq!(
            lines.take(),
            [
                "Warn POST /a: 503 Budget spent",
                "Warn GET /b: 503 Overloaded sources=queue full",
            ],
            "one line per kind of message"
        );
        NOW_MS.store(5_999, Ordering::Relaxed);
        logger.warn_rate_limited(&limit, "POST /a: 503 Budget spent", &full);
        assert!(lines.take().is_empty(), "still within the period");
        NOW_MS.store(6_000, Ordering::Relaxed);
        logger.warn_rate_limited(&limit, "POST /c: 503 Budget spent", &full);
        logger.warn_rate_limited(&limit, "POST /c: 503 Budget spent", &full);
        assert_eq!(
            lines.take(),
            ["Warn POST /c: 503 Budget spent suppressed=100"],
            "the next period's line counts the 99 + 1 left out"
        );
        NOW_MS.store(60_000, Ordering::Relaxed);
        logger.warn_rate_limited(&limit, "POST /d: 503 Budget spent", &full);
        assert_eq!(
            lines.take(),
            ["Warn POST /d: 503 Budget spent suppressed=1"]
        );
    }

    #[test]
    fn only_overloads_are_rate_limited_warnings() {
        let lines = Arc::new(Lines::default());
        let logger = Logger::with_sink(lines.clone());
        let crash = ApiError::new(http::StatusCode::SERVICE_UNAVAILABLE, "Database down");
        for _ in 0..3 {
            logger.server_error("GET /: 503 Database down", &crash);
        }
        assert_eq!(lines.take(), ["Error GET /: 503 Database down"; 3]);
        // A message no other test uses: the limit is process-wide.
        let full = ApiError::new(
            http::StatusCode::SERVICE_UNAVAILABLE,
            "logger test overload",
        )
        .with_kind(ErrorKind::Overload);
        for _ in 0..3 {
            logger.server_error("GET /: 503 logger test overload", &full);
        }
        assert_eq!(lines.take(), ["Warn GET /: 503 logger test overload"]);
    }
}
