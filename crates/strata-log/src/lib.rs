//! Logging what clients can cause at will without a flood of lines: a server error is
//! logged with its causes ([`server_error`]), except an overload a client caused
//! ([`ErrorKind::Overload`]: a spent body budget, shed load, a full connection share), which is
//! a warning of at most one line per message every 5 s, counting those left out
//! ([`warn_rate_limited`], [`LogRateLimit`]).

use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use strata_core::{ApiError, ErrorKind, Level, Logger};

/// Records `message` about the server error `error`: at error level with its causes
/// ([`Logger::error_with_causes`]); an overload that clients caused ([`ErrorKind::Overload`])
/// at warn level instead, at most one line per message every 5 s, process-wide
/// ([`warn_rate_limited`]): a client can make as many of those as it sends requests.
pub fn server_error(logger: &Logger, message: impl fmt::Display, error: &ApiError) {
    /// One limit for every stage and the server: the log is the process's.
    static CLIENT_OVERLOADS: LogRateLimit = LogRateLimit::new(Duration::from_secs(5));
    if error.kind() == ErrorKind::Overload {
        warn_rate_limited(logger, &CLIENT_OVERLOADS, message, error);
    } else {
        logger.error_with_causes(message, error);
    }
}

/// Records `message` about `error` at warn level if `limit` lets a line of the error's
/// message through now, with its causes (`sources`) and the lines of that message left out
/// since the last one (`suppressed`, when there were any).
///
/// ```
/// use std::time::Duration;
/// use strata_core::Logger;
/// use strata_log::{LogRateLimit, warn_rate_limited};
///
/// static SHED: LogRateLimit = LogRateLimit::new(Duration::from_secs(5));
/// let error = strata_core::http_error!(503, "Overloaded");
/// for _ in 0..1000 {
///     // One line now; the next one, 5 s or more later, says `suppressed=999`.
///     warn_rate_limited(&Logger::tracing(), &SHED, "GET /: 503 Overloaded", &error);
/// }
/// ```
pub fn warn_rate_limited(
    logger: &Logger,
    limit: &LogRateLimit,
    message: impl fmt::Display,
    error: &ApiError,
) {
    log_rate_limited(logger, Level::Warn, limit, message, error);
}

/// [`warn_rate_limited`] at error level: for failures that repeat as often as clients retry
/// (an event stream's handler that cannot reach its broker, once per reconnect), which are
/// errors, but need one line per period, not one per attempt.
///
/// ```
/// use std::time::Duration;
/// use strata_core::Logger;
/// use strata_log::{LogRateLimit, error_rate_limited};
///
/// static BROKER: LogRateLimit = LogRateLimit::new(Duration::from_secs(5));
/// let error = strata_core::http_error!(500, "the broker did not answer");
/// for _ in 0..100 {
///     // One line now; the next one, 5 s or more later, says `suppressed=99`.
///     error_rate_limited(&Logger::tracing(), &BROKER, "subscribe failed", &error);
/// }
/// ```
pub fn error_rate_limited(
    logger: &Logger,
    limit: &LogRateLimit,
    message: impl fmt::Display,
    error: &ApiError,
) {
    log_rate_limited(logger, Level::Error, limit, message, error);
}

fn log_rate_limited(
    logger: &Logger,
    level: Level,
    limit: &LogRateLimit,
    message: impl fmt::Display,
    error: &ApiError,
) {
    let Some(suppressed) = limit.admit(error.message()) else {
        return;
    };
    let causes = error.causes();
    match (suppressed, causes.is_empty()) {
        (0, true) => logger.log(level, message),
        (0, false) => logger.log_with(level, message, &[("sources", &causes)]),
        (_, true) => logger.log_with(level, message, &[("suppressed", &suppressed)]),
        (_, false) => logger.log_with(
            level,
            message,
            &[("sources", &causes), ("suppressed", &suppressed)],
        ),
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
/// use strata_log::LogRateLimit;
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
    use std::fmt::Write as _;
    use std::sync::Arc;
    use strata_core::logger::{LogSink, Record};

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
            let mut line = format!("{:?} {}", record.level, record.message);
            for (key, value) in record.fields {
                let _ = write!(line, " {key}={value}");
            }
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
            warn_rate_limited(&logger, &limit, "POST /a: 503 Budget spent", &full);
        }
        warn_rate_limited(&logger, &limit, "GET /b: 503 Overloaded", &shed);
        assert_eq!(
            lines.take(),
            [
                "Warn POST /a: 503 Budget spent",
                "Warn GET /b: 503 Overloaded sources=queue full",
            ],
            "one line per kind of message"
        );
        NOW_MS.store(5_999, Ordering::Relaxed);
        warn_rate_limited(&logger, &limit, "POST /a: 503 Budget spent", &full);
        assert!(lines.take().is_empty(), "still within the period");
        NOW_MS.store(6_000, Ordering::Relaxed);
        warn_rate_limited(&logger, &limit, "POST /c: 503 Budget spent", &full);
        warn_rate_limited(&logger, &limit, "POST /c: 503 Budget spent", &full);
        assert_eq!(
            lines.take(),
            ["Warn POST /c: 503 Budget spent suppressed=100"],
            "the next period's line counts the 99 + 1 left out"
        );
        NOW_MS.store(60_000, Ordering::Relaxed);
        warn_rate_limited(&logger, &limit, "POST /d: 503 Budget spent", &full);
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
            server_error(&logger, "GET /: 503 Database down", &crash);
        }
        assert_eq!(lines.take(), ["Error GET /: 503 Database down"; 3]);
        // A message no other test uses: the limit is process-wide.
        let full = ApiError::new(
            http::StatusCode::SERVICE_UNAVAILABLE,
            "logger test overload",
        )
        .with_kind(ErrorKind::Overload);
        for _ in 0..3 {
            server_error(&logger, "GET /: 503 logger test overload", &full);
        }
        assert_eq!(lines.take(), ["Warn GET /: 503 logger test overload"]);
    }
}
