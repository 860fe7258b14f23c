//! Where the limiter reads the time: injectable, so that tests move it instead of sleeping.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// A source of time for a limiter: the time since an origin of the clock's choosing, never
/// going back.
///
/// The limiter reads it once per request and gives it to the store; TATs are kept on this
/// clock, so every limiter sharing a store must use one clock (a store shared between
/// processes wants [`SystemClock`], or reads its own server's time).
pub trait Clock: Send + Sync + 'static {
    /// The time now.
    fn now(&self) -> Duration;
}

/// The process's monotonic clock, from the first time any limiter read it (the default): immune
/// to wall-clock jumps, meaningful within one process only.
#[derive(Debug, Clone, Copy, Default)]
pub struct MonotonicClock;

impl Clock for MonotonicClock {
    fn now(&self) -> Duration {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        ORIGIN.get_or_init(Instant::now).elapsed()
    }
}

/// The wall clock, since the Unix epoch: one time for several processes sharing a store. It
/// may jump; a jump back makes limits stricter for a while, one forward forgives debts.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
    }
}

/// A clock that moves only when told, for tests: clones share the time.
///
/// ```
/// use std::time::Duration;
/// use strata_ratelimit::{Clock, ManualClock};
///
/// let clock = ManualClock::new();
/// let shared = clock.clone();
/// clock.advance(Duration::from_millis(1500));
/// assert_eq!(shared.now(), Duration::from_millis(1500));
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    /// A clock at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the time forward by `by` (whole microseconds).
    pub fn advance(&self, by: Duration) {
        let micros = u64::try_from(by.as_micros()).unwrap_or(u64::MAX);
        let _ = self
            .0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(micros))
            });
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        Duration::from_micros(self.0.load(Ordering::SeqCst))
    }
}

/// `clock`'s time in whole microseconds, as the GCRA counts.
pub(crate) fn micros(clock: &dyn Clock) -> u64 {
    u64::try_from(clock.now().as_micros()).unwrap_or(u64::MAX)
}
