//! The policy: how many requests per window, and how many at once.

use std::time::Duration;

use crate::gcra::Gcra;

/// `count` requests per `window`, of which up to `burst` may come at once.
///
/// A client that has been quiet may send `burst` requests at once (by default `count`, the
/// whole quota); after that one request every `window / count`. Over any span of time `t` a
/// client gets at most `burst + t × count / window` requests through: the quota is a rate,
/// not a fixed window that resets on the minute, so no client can double it by sending one
/// quota just before a boundary and another just after.
///
/// ```
/// use std::time::Duration;
/// use strata_ratelimit::Quota;
///
/// let quota = Quota::per_minute(100);
/// assert_eq!((quota.count(), quota.window(), quota.burst()), (100, Duration::from_secs(60), 100));
/// // 10 per second, never more than 2 at once.
/// let smooth = Quota::new(10, Duration::from_secs(1)).with_burst(2);
/// assert_eq!(smooth.burst(), 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    count: u32,
    window: Duration,
    burst: u32,
}

impl Quota {
    /// `count` requests per `window`, all of them allowed at once.
    ///
    /// # Panics
    ///
    /// If `count` is zero or `window` is zero: a quota that allows nothing, or everything, is
    /// a configuration mistake, refused when the application is built.
    pub const fn new(count: u32, window: Duration) -> Self {
        assert!(count > 0, "a rate-limit quota allows at least one request");
        assert!(!window.is_zero(), "a rate-limit window is longer than zero");
        Self {
            count,
            window,
            burst: count,
        }
    }

    /// `count` requests per second.
    ///
    /// # Panics
    ///
    /// If `count` is zero.
    pub const fn per_second(count: u32) -> Self {
        Self::new(count, Duration::from_secs(1))
    }

    /// `count` requests per minute.
    ///
    /// # Panics
    ///
    /// If `count` is zero.
    pub const fn per_minute(count: u32) -> Self {
        Self::new(count, Duration::from_secs(60))
    }

    /// `count` requests per hour.
    ///
    /// # Panics
    ///
    /// If `count` is zero.
    pub const fn per_hour(count: u32) -> Self {
        Self::new(count, Duration::from_secs(3600))
    }

    /// `count` requests per day.
    ///
    /// # Panics
    ///
    /// If `count` is zero.
    pub const fn per_day(count: u32) -> Self {
        Self::new(count, Duration::from_secs(86_400))
    }

    /// At most `burst` requests at once (default: the whole `count`). Lower smooths the
    /// traffic; higher lets a quiet client save up more than one window's quota.
    ///
    /// # Panics
    ///
    /// If `burst` is zero.
    #[must_use]
    pub const fn with_burst(mut self, burst: u32) -> Self {
        assert!(burst > 0, "a rate-limit burst allows at least one request");
        self.burst = burst;
        self
    }

    /// Requests per window.
    pub const fn count(&self) -> u32 {
        self.count
    }

    /// The window.
    pub const fn window(&self) -> Duration {
        self.window
    }

    /// Requests allowed at once.
    pub const fn burst(&self) -> u32 {
        self.burst
    }

    /// The quota as GCRA parameters, in microseconds.
    ///
    /// Both are at least 1 µs (a faster rate is no limit worth keeping) and at most 2^53 µs
    /// (285 years): TATs then stay exact as Lua's doubles in a shared store, and no sum of
    /// them saturates a `u64`, which would make a request free.
    pub fn gcra(&self) -> Gcra {
        const MAX_SPAN: u64 = 1 << 53;
        let window = u64::try_from(self.window.as_micros()).unwrap_or(u64::MAX);
        let interval = (window / u64::from(self.count)).clamp(1, MAX_SPAN);
        Gcra {
            interval,
            capacity: interval.saturating_mul(u64::from(self.burst)).min(MAX_SPAN),
        }
    }
}
