//! The generic cell rate algorithm (GCRA), in a few lines of integer arithmetic.
//!
//! One number per key, its *theoretical arrival time* (TAT): when the client's debt would be
//! paid off if every request it was granted cost `interval`. A request is granted when paying
//! one more `interval` keeps the debt within `capacity` (`burst × interval`) of now. No
//! counters, no windows to reset: the TAT says it all, and a TAT in the past means the client
//! owes nothing, so its entry can be forgotten.
//!
//! Times are whole microseconds (`u64`). A shared store runs this very formula in a script
//! (Redis' Lua, whose numbers are doubles): microseconds since the Unix epoch (about 2^51)
//! stay within the 2^53 integers a double holds exactly, where nanoseconds would not.

/// The GCRA parameters of a [`Quota`](crate::Quota), in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gcra {
    /// What one request costs: `window / count` (the emission interval).
    pub interval: u64,
    /// How far ahead of now the TAT may run: `burst × interval`.
    pub capacity: u64,
}

/// The verdict on one request, and the client's budget after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request is granted.
    pub allowed: bool,
    /// Requests the client may still send at once.
    pub remaining: u32,
    /// Microseconds until the budget grows by one request: when denied, how long to wait.
    pub reset: u64,
    /// Microseconds until the whole burst is available again.
    pub replenished: u64,
}

impl Gcra {
    /// The decision for a request at `now` from a client whose stored TAT is `tat` (`None`
    /// when there is none), and the TAT to store: `None` when the request is denied, which
    /// changes nothing.
    ///
    /// ```
    /// use strata_ratelimit::{Gcra, Quota};
    ///
    /// let gcra = Quota::per_second(2).gcra(); // 500 ms per request, two at once
    /// let (first, tat) = gcra.decide(None, 0);
    /// assert!(first.allowed && first.remaining == 1);
    /// let (second, tat) = gcra.decide(tat, 0);
    /// assert!(second.allowed && second.remaining == 0);
    /// let (third, unchanged) = gcra.decide(tat, 0);
    /// assert!(!third.allowed && unchanged.is_none());
    /// assert_eq!(third.reset, 500_000, "one more request in 500 ms");
    /// ```
    pub fn decide(&self, tat: Option<u64>, now: u64) -> (Decision, Option<u64>) {
        // A TAT in the past is a client that owes nothing: as good as a new one.
        let tat = tat.map_or(now, |tat| tat.max(now));
        let new_tat = tat.saturating_add(self.interval);
        let debt = new_tat - now;
        if debt > self.capacity {
            let decision = Decision {
                allowed: false,
                remaining: 0,
                reset: debt - self.capacity,
                replenished: tat - now,
            };
            return (decision, None);
        }
        let room = self.capacity - debt;
        let decision = Decision {
            allowed: true,
            remaining: u32::try_from(room / self.interval).unwrap_or(u32::MAX),
            // `room` grows by one request when it reaches the next multiple of `interval`.
            reset: self.interval - room % self.interval,
            replenished: debt,
        };
        (decision, Some(new_tat))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::Quota;

    const SECOND: u64 = 1_000_000;

    /// Runs `gcra` over requests at the given times (µs), the TAT kept as a store would.
    fn run(gcra: Gcra, times: &[u64]) -> Vec<Decision> {
        let mut tat = None;
        times
            .iter()
            .map(|&now| {
                let (decision, new_tat) = gcra.decide(tat, now);
                tat = new_tat.or(tat);
                decision
            })
            .collect()
    }

    #[test]
    fn a_burst_then_one_per_interval() {
        // 100 per minute: 600 ms per request, 100 at once.
        let gcra = Quota::per_minute(100).gcra();
        assert_eq!(
            gcra,
            Gcra {
                interval: 600_000,
                capacity: 60 * SECOND
            }
        );
        let decisions = run(gcra, &[0; 101]);
        assert!(decisions[..100].iter().all(|d| d.allowed));
        assert_eq!(decisions[0].remaining, 99);
        assert_eq!(decisions[99].remaining, 0);
        assert_eq!(decisions[99].replenished, 60 * SECOND);
        let denied = decisions[100];
        assert!(!denied.allowed);
        assert_eq!(denied.reset, 600_000, "the next request in one interval");
        assert_eq!(denied.replenished, 60 * SECOND);
    }

    #[test]
    fn the_budget_comes_back_at_the_rate() {
        let gcra = Quota::per_second(2).gcra();
        let mut tat = None;
        for _ in 0..2 {
            tat = gcra.decide(tat, 0).1;
        }
        // 499 ms later: still nothing.
        assert!(!gcra.decide(tat, 499_999).0.allowed);
        assert_eq!(gcra.decide(tat, 499_999).0.reset, 1);
        // 500 ms later: one, and then nothing again.
        let (granted, after) = gcra.decide(tat, 500_000);
        assert!(granted.allowed);
        assert_eq!(granted.remaining, 0);
        assert_eq!(granted.reset, 500_000);
        assert!(!gcra.decide(after, 500_000).0.allowed);
        // A second of quiet: the whole burst again.
        let (later, _) = gcra.decide(after, 2 * SECOND);
        assert_eq!(later.remaining, 1);
    }

    #[test]
    fn partial_recovery_reports_the_time_to_the_next_request() {
        let gcra = Quota::new(10, Duration::from_secs(10)).gcra();
        let mut tat = None;
        for _ in 0..10 {
            tat = gcra.decide(tat, 0).1;
        }
        // 2.5 s later two requests came back (one is used now), and half of the next.
        let (decision, _) = gcra.decide(tat, 2_500_000);
        assert!(decision.allowed);
        assert_eq!(decision.remaining, 1);
        assert_eq!(decision.reset, 500_000);
        assert_eq!(decision.replenished, 8_500_000);
    }

    #[test]
    fn a_smaller_burst_spreads_the_requests() {
        let gcra = Quota::per_second(10).with_burst(1).gcra();
        let decisions = run(gcra, &[0, 0, 100_000, 150_000, 200_000]);
        let allowed: Vec<bool> = decisions.iter().map(|d| d.allowed).collect();
        assert_eq!(allowed, [true, false, true, false, true]);
        assert_eq!(decisions[3].reset, 50_000);
    }

    #[test]
    fn over_any_span_at_most_burst_plus_rate() {
        // A client sending every 10 ms for 3 s against 5 per second: 5 + 3 × 5 at most.
        let gcra = Quota::per_second(5).gcra();
        let times: Vec<u64> = (0..300).map(|i| i * 10_000).collect();
        let granted = run(gcra, &times).iter().filter(|d| d.allowed).count();
        // The last request is at 2.99 s: 14 intervals of 200 ms after the burst, and the one
        // due at 2.8 s + 200 ms is not yet.
        assert_eq!(granted, 5 + 14);
    }

    #[test]
    fn a_tat_in_the_past_is_a_new_client() {
        let gcra = Quota::per_minute(3).gcra();
        assert_eq!(
            gcra.decide(Some(5), 1_000_000),
            gcra.decide(None, 1_000_000)
        );
    }

    #[test]
    fn extreme_values_do_not_overflow() {
        let gcra = Quota::new(u32::MAX, Duration::from_nanos(1)).gcra();
        assert_eq!(gcra.interval, 1);
        // Saturating, not panicking, at the end of time.
        let _ = gcra.decide(Some(u64::MAX), u64::MAX);
        let slow = Quota::new(1, Duration::MAX).gcra();
        let (first, tat) = slow.decide(None, 0);
        assert!(first.allowed);
        assert!(!slow.decide(tat, 1).0.allowed);
        let _ = slow.decide(tat, u64::MAX);
    }
}
